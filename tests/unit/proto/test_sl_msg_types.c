/*  Unit tests: proto/sl_msg, each type's fields (SL_FIELDS_<TYPE>). For
    every message type: a message with every field the type may carry goes
    through the codec whole; a field the type does not carry, added to a
    message that is otherwise fine, makes it malformed, and so does each
    field it must carry, left out. Malformed input is built with msgpack-c,
    since our encoder refuses to write it (it asserts, tested too). */
#include <criterion/criterion.h>
#include <math.h>
#include <msgpack.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>

#include "proto/sl_msg.h"

//  Every field as the codec lists it: key, wire type, place in sl_msg_t.
typedef enum { W_U8, W_U32, W_U64, W_I32, W_I64, W_F64, W_STR, W_BIN, W_SID, W_USAGE } s_wire_t;

typedef struct {
    const char *key;
    s_wire_t wire;
    size_t offset;
} s_field_t;

static const s_field_t s_fields [SL_FIELD_COUNT] = {
#define S_FIELD(key, wire, member, when) [SL_FIELD_##key] = { #key, W_##wire, offsetof (sl_msg_t, member) },
    SL_MSG_FIELDS (S_FIELD)
#undef S_FIELD
};

static bool
s_envelope (int f)
{
    return f == SL_FIELD_v || f == SL_FIELD_t || f == SL_FIELD_sid || f == SL_FIELD_ep || f == SL_FIELD_seq;
}

//  A sample value per field, valid wherever the field is (1 is a known
//  value of every enumeration, and a delta kind, a block event, a rack
//  kind), and told apart from the other fields'.
static const sl_usage_t s_usage = { 1, 2, 3, -1, 0, 7 };

static uint64_t s_uint (int f) { return s_fields [f].wire == W_U8 ? 1 : 1000 + (uint64_t) f; }
static int64_t s_int (int f)   { return s_fields [f].wire == W_I32 ? 300 + f : -(70000 + (int64_t) f); }

//  Strings carry their key; bytes a NUL too (binary-safe).
static sl_str_t
s_text (int f, char *buf, size_t size)
{
    int n = snprintf (buf, size, "%c%s", s_fields [f].wire == W_BIN ? 0 : 'x', s_fields [f].key);
    return sl_str_n (buf, (size_t) n);
}

static char s_store [SL_FIELD_COUNT][16];

static void
s_set (sl_msg_t *m, int f)
{
    char *p = (char *) m + s_fields [f].offset;
    switch (s_fields [f].wire) {
        case W_U8:  *(uint8_t *) p = (uint8_t) s_uint (f); break;
        case W_U32: *(uint32_t *) p = (uint32_t) s_uint (f); break;
        case W_U64: *(uint64_t *) p = s_uint (f); break;
        case W_I32: *(int32_t *) p = (int32_t) s_int (f); break;
        case W_I64: *(int64_t *) p = s_int (f); break;
        case W_F64: *(double *) p = 0.875; break;
        case W_STR:
        case W_BIN: *(sl_str_t *) p = s_text (f, s_store [f], sizeof s_store [f]); break;
        case W_USAGE:
            m->has_usage = true;
            m->usage = s_usage;
            break;
        case W_SID: break;
    }
}

static void
s_pack_value (msgpack_packer *pk, int f)
{
    char buf [16];
    sl_str_t s;
    switch (s_fields [f].wire) {
        case W_U8:
        case W_U32:
        case W_U64: msgpack_pack_uint64 (pk, s_uint (f)); break;
        case W_I32:
        case W_I64: msgpack_pack_int64 (pk, s_int (f)); break;
        case W_F64: msgpack_pack_double (pk, 0.875); break;
        case W_STR:
            s = s_text (f, buf, sizeof buf);
            msgpack_pack_str_with_body (pk, s.ptr, s.len);
            break;
        case W_BIN:
        case W_SID:
            s = s_text (f, buf, sizeof buf);
            msgpack_pack_bin_with_body (pk, s.ptr, s.len);
            break;
        case W_USAGE:
            msgpack_pack_map (pk, 1);
            msgpack_pack_str_with_body (pk, "in", 2);
            msgpack_pack_int64 (pk, 1);
            break;
    }
}

//  A message of the type with its envelope and the fields of which.
static sl_msg_t
s_message (int type, bool (*which) (int type, sl_msg_field_t f))
{
    sl_msg_t m;
    sl_msg_init (&m, type);
    for (int i = 0; i < SL_SID_SIZE; i++)
        m.sid [i] = (uint8_t) (i * 17 + 3);
    m.epoch = 2;
    m.seq = 41;
    for (int f = 0; f < SL_FIELD_COUNT; f++)
        if (which (type, f))
            s_set (&m, f);
    return m;
}

//  The codec's reasons say "an error", "a start".
static const char *
s_article (const char *name)
{
    return name [0] && strchr ("aeiou", name [0]) ? "an" : "a";
}

static int
s_decode (const void *data, size_t size, sl_msg_t *out, char *why, size_t why_size)
{
    sl_codec_t *codec = sl_codec_new ();
    size_t offset = 0;
    int rc = sl_codec_decode (codec, data, size, &offset, out);
    snprintf (why, why_size, "%s", sl_codec_error (codec));
    if (rc == 0)
        cr_expect_eq (offset, size, "the whole message read");
    sl_codec_destroy (&codec);
    return rc;
}

//  The same value in a field of both messages, by the field's wire type.
static bool
s_same (const sl_msg_t *a, const sl_msg_t *b, int f)
{
    const char *p = (const char *) a + s_fields [f].offset, *q = (const char *) b + s_fields [f].offset;
    switch (s_fields [f].wire) {
        case W_U8:  return *(const uint8_t *) p == *(const uint8_t *) q;
        case W_U32: return *(const uint32_t *) p == *(const uint32_t *) q;
        case W_U64: return *(const uint64_t *) p == *(const uint64_t *) q;
        case W_I32: return *(const int32_t *) p == *(const int32_t *) q;
        case W_I64: return *(const int64_t *) p == *(const int64_t *) q;
        case W_F64: {
            double x = *(const double *) p, y = *(const double *) q;
            return (isnan (x) && isnan (y)) || x == y;
        }
        case W_STR:
        case W_BIN: {
            const sl_str_t *x = (const sl_str_t *) p, *y = (const sl_str_t *) q;
            return !x->ptr == !y->ptr && sl_str_eq_str (*x, *y);
        }
        case W_SID:   return memcmp (p, q, SL_SID_SIZE) == 0;
        case W_USAGE: return a->has_usage == b->has_usage && memcmp (&a->usage, &b->usage, sizeof a->usage) == 0;
    }
    return false;
}

//  The encoding of a message, with one more field written after it: the
//  map16 our encoder writes gets its count raised by one.
static void
s_encode_plus (const sl_msg_t *m, int extra, msgpack_sbuffer *sb)
{
    sl_buf_t buf = { 0 };
    sl_msg_encode (m, &buf);
    cr_assert_eq ((uint8_t) buf.data [0], 0xde, "a map16");
    uint16_t count = (uint16_t) (((uint8_t) buf.data [1] << 8 | (uint8_t) buf.data [2]) + 1);
    buf.data [1] = (char) (count >> 8);
    buf.data [2] = (char) count;
    msgpack_sbuffer_write (sb, buf.data, buf.len);
    msgpack_packer pk;
    msgpack_packer_init (&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_str_with_body (&pk, s_fields [extra].key, strlen (s_fields [extra].key));
    s_pack_value (&pk, extra);
    sl_buf_free (&buf);
}

//  A message packed by msgpack-c: the envelope and the type's required
//  fields but one (-1: all of them).
static void
s_pack_required (int type, int without, msgpack_sbuffer *sb)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, sb, msgpack_sbuffer_write);
    size_t n = 5;
    for (int f = 0; f < SL_FIELD_COUNT; f++)
        n += sl_msg_requires (type, f) && f != without;
    msgpack_pack_map (&pk, n);
    msgpack_pack_str_with_body (&pk, "v", 1);
    msgpack_pack_uint8 (&pk, 1);
    msgpack_pack_str_with_body (&pk, "t", 1);
    msgpack_pack_uint8 (&pk, (uint8_t) type);
    msgpack_pack_str_with_body (&pk, "sid", 3);
    msgpack_pack_bin_with_body (&pk, "0123456789abcdef", SL_SID_SIZE);
    msgpack_pack_str_with_body (&pk, "ep", 2);
    msgpack_pack_uint8 (&pk, 0);
    msgpack_pack_str_with_body (&pk, "seq", 3);
    msgpack_pack_uint8 (&pk, 0);
    for (int f = 0; f < SL_FIELD_COUNT; f++)
        if (sl_msg_requires (type, f) && f != without) {
            msgpack_pack_str_with_body (&pk, s_fields [f].key, strlen (s_fields [f].key));
            s_pack_value (&pk, f);
        }
}

static void
s_check_type (int type)
{
    const char *name = sl_msg_type_name (type);
    char why [128];
    sl_msg_t out;

    //  Every field it may carry, through the codec and back, and nothing
    //  else set: each field of the list compares.
    sl_msg_t full = s_message (type, sl_msg_carries);
    sl_buf_t buf = { 0 };
    sl_msg_encode (&full, &buf);
    cr_assert_eq (s_decode (buf.data, buf.len, &out, why, sizeof why), 0, "a whole %s: %s", name, why);
    for (int f = 0; f < SL_FIELD_COUNT; f++)
        if (f != SL_FIELD_sid || type != SL_MSG_HB)
            cr_expect (s_same (&full, &out, f), "a %s's %s comes back as it went", name, s_fields [f].key);
    sl_buf_free (&buf);

    //  With only what it must carry, it is a message too.
    sl_msg_t least = s_message (type, sl_msg_requires);
    sl_buf_t minimal = { 0 };
    sl_msg_encode (&least, &minimal);
    cr_expect_eq (s_decode (minimal.data, minimal.len, &out, why, sizeof why), 0, "a least %s: %s", name, why);
    sl_buf_free (&minimal);

    //  Each field added to it: one it may carry is taken, any other is
    //  refused, and the reason names it.
    for (int f = 0; f < SL_FIELD_COUNT; f++) {
        if (s_envelope (f) || sl_msg_requires (type, f))
            continue;
        msgpack_sbuffer sb;
        msgpack_sbuffer_init (&sb);
        s_encode_plus (&least, f, &sb);
        int rc = s_decode (sb.data, sb.size, &out, why, sizeof why);
        if (sl_msg_carries (type, f))
            cr_expect_eq (rc, 0, "a %s with %s is taken: %s", name, s_fields [f].key, why);
        else {
            char expected [64];
            snprintf (expected, sizeof expected, "%s %s does not carry %s", s_article (name), name, s_fields [f].key);
            cr_expect_eq (rc, -2, "a %s with %s is refused", name, s_fields [f].key);
            cr_expect_str_eq (why, expected);
        }
        msgpack_sbuffer_destroy (&sb);
    }

    //  What it must carry, packed by msgpack-c: all of it is a message;
    //  without any one of it, it is not.
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    s_pack_required (type, -1, &sb);
    cr_expect_eq (s_decode (sb.data, sb.size, &out, why, sizeof why), 0, "a %s as msgpack-c packs it: %s",
                  name, why);
    msgpack_sbuffer_destroy (&sb);
    for (int f = 0; f < SL_FIELD_COUNT; f++) {
        if (!sl_msg_requires (type, f))
            continue;
        msgpack_sbuffer_init (&sb);
        s_pack_required (type, f, &sb);
        char expected [64];
        snprintf (expected, sizeof expected, "%s %s must carry %s", s_article (name), name, s_fields [f].key);
        cr_expect_eq (s_decode (sb.data, sb.size, &out, why, sizeof why), -2, "a %s without %s is refused",
                      name, s_fields [f].key);
        cr_expect_str_eq (why, expected);
        msgpack_sbuffer_destroy (&sb);
    }
}

//  One test per type, made from the list of types: a new type has one.
#define S_TYPE_TEST(TYPE, name) \
    Test (sl_msg_types, name) { s_check_type (SL_MSG_##TYPE); }
SL_MSG_TYPES (S_TYPE_TEST)

Test (sl_msg_types, a_zero_is_no_required_field)
{
    //  An hb whose inc is written as 0: the encoder would not write it,
    //  so it is missing, whatever the key says.
    msgpack_sbuffer sb;
    msgpack_sbuffer_init (&sb);
    msgpack_packer pk;
    msgpack_packer_init (&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_map (&pk, 6);
    msgpack_pack_str_with_body (&pk, "v", 1);
    msgpack_pack_uint8 (&pk, 1);
    msgpack_pack_str_with_body (&pk, "t", 1);
    msgpack_pack_uint8 (&pk, SL_MSG_HB);
    msgpack_pack_str_with_body (&pk, "ep", 2);
    msgpack_pack_uint8 (&pk, 0);
    msgpack_pack_str_with_body (&pk, "seq", 3);
    msgpack_pack_uint8 (&pk, 0);
    msgpack_pack_str_with_body (&pk, "inst", 4);
    msgpack_pack_str_with_body (&pk, "judge-1", 7);
    msgpack_pack_str_with_body (&pk, "inc", 3);
    msgpack_pack_uint8 (&pk, 0);
    char why [128];
    sl_msg_t out;
    cr_expect_eq (s_decode (sb.data, sb.size, &out, why, sizeof why), -2);
    cr_expect_str_eq (why, "a hb must carry inc");
    msgpack_sbuffer_destroy (&sb);
}

Test (sl_msg_types, request_only_fields_are_the_requests)
{
    //  Credentials, the client's own headers and an inline answer stop at
    //  the ingest: no other type may carry them on.
    const int only [] = { SL_FIELD_auth, SL_FIELD_fwd, SL_FIELD_inl };
    for (size_t i = 0; i < sizeof only / sizeof only [0]; i++)
        for (int type = 1; type < SL_MSG_TYPE_MAX; type++)
            cr_expect_eq (sl_msg_carries (type, only [i]), type == SL_MSG_REQ, "%s in a %s",
                          s_fields [only [i]].key, sl_msg_type_name (type));
}

Test (sl_msg_types, the_envelope_and_unknown_types_carry_nothing)
{
    for (int type = 0; type <= SL_MSG_TYPE_MAX; type++)
        for (int f = 0; f < SL_FIELD_COUNT; f++)
            if (type == 0 || type == SL_MSG_TYPE_MAX || s_envelope (f))
                cr_expect (!sl_msg_carries (type, f) && !sl_msg_requires (type, f));
    cr_expect (!sl_msg_carries (SL_MSG_REQ, SL_FIELD_COUNT));
    cr_expect (!sl_msg_carries (SL_MSG_REQ, -1));
}

//  Our own side never sends what the other refuses: encoding a message
//  that does not fit its type is a bug, and aborts.
Test (sl_msg_types, encoding_a_field_of_another_type_aborts, .signal = SIGABRT)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_START);
    m.auth = sl_str ("Authorization: Bearer sk-1");
    sl_buf_t buf = { 0 };
    sl_msg_encode (&m, &buf);
    sl_buf_free (&buf);
}

Test (sl_msg_types, encoding_without_a_required_field_aborts, .signal = SIGABRT)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_ERROR);
    m.message = sl_str ("no code");
    sl_buf_t buf = { 0 };
    sl_msg_encode (&m, &buf);
    sl_buf_free (&buf);
}
