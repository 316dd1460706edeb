/*  sl_msg.c - the one codec of the sluice wire protocol (see PROTOCOL.md).

    Table driven: s_fields lists every body field once (wire key, type,
    offset in sl_msg_t), sorted by key so decoding finds a key by binary
    search. Encoding writes only present fields; absent and zero decode to
    the same value, so omitting them loses nothing.
*/
#include "sl_msg.h"

#include <math.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "../common/sl_alloc.h"
#include "../common/sl_version.h"

typedef enum {
    F_U8, F_U32, F_U64, F_I32, F_I64, F_F64, F_STR, F_BIN, F_SID, F_USAGE
} s_ftype_t;

//  When a field is written: always (envelope), when not zero, when >= 0.
typedef enum { P_NONZERO, P_ALWAYS, P_NONNEG } s_presence_t;

typedef struct {
    const char *key;
    size_t keylen;
    s_ftype_t type;
    size_t offset;
    s_presence_t presence;
} s_field_t;

#define FIELD(k, t, member) { k, sizeof (k) - 1, t, offsetof (sl_msg_t, member), P_NONZERO }
#define FIELD_P(k, t, member, p) { k, sizeof (k) - 1, t, offsetof (sl_msg_t, member), p }

//  Sorted by key (strcmp order); tests/unit/test_sl_msg.c checks it.
static const s_field_t s_fields [] = {
    FIELD ("act",   F_U8,    action),
    FIELD ("auth",  F_STR,   auth),
    FIELD ("bk",    F_U8,    block),
    FIELD ("body",  F_BIN,   body),
    FIELD ("cd",    F_U8,    client_dialect),
    FIELD ("chk",   F_U8,    check),
    FIELD ("cid",   F_STR,   call_id),
    FIELD ("code",  F_STR,   code),
    FIELD ("cr",    F_U32,   credit),
    FIELD ("ct",    F_STR,   content_type),
    FIELD_P ("ep",  F_U32,   epoch, P_ALWAYS),
    FIELD ("f",     F_U32,   flags),
    FIELD ("fin",   F_U8,    finish),
    FIELD ("finr",  F_STR,   finish_raw),
    FIELD ("hdrs",  F_BIN,   headers),
    FIELD_P ("i",   F_I32,   index, P_NONNEG),
    FIELD ("id",    F_STR,   id),
    FIELD ("inc",   F_U64,   incarnation),
    FIELD ("inst",  F_STR,   instance),
    FIELD ("jm",    F_STR,   judge_model),
    FIELD ("k",     F_U8,    kind),
    FIELD ("lat",   F_U32,   latency_us),
    FIELD ("lu",    F_STR,   last_user),
    FIELD ("model", F_STR,   model),
    FIELD ("msg",   F_STR,   message),
    FIELD ("name",  F_STR,   name),
    FIELD ("p",     F_F64,   probability),
    FIELD ("prov",  F_STR,   provider),
    FIELD ("rt",    F_STR,   reply_to),
    FIELD ("rule",  F_STR,   rule),
    FIELD_P ("seq", F_U64,   seq, P_ALWAYS),
    FIELD ("sid",   F_SID,   sid),
    FIELD ("sig",   F_STR,   sig),
    FIELD ("st",    F_I32,   status),
    FIELD ("stops", F_STR,   stop_seq),
    FIELD_P ("t",   F_U8,    type, P_ALWAYS),
    FIELD ("text",  F_STR,   text),
    FIELD ("tools", F_BIN,   tools),
    FIELD ("ts",    F_I64,   ts),
    FIELD ("u",     F_USAGE, usage),
    FIELD ("ud",    F_U8,    upstream_dialect),
    FIELD_P ("v",   F_U32,   version, P_ALWAYS),
    FIELD ("why",   F_STR,   reason),
};
#define S_FIELD_COUNT (sizeof s_fields / sizeof s_fields [0])

//  Usage sub-keys, in the order of sl_usage_t.
static const char *s_usage_keys [] = { "in", "out", "tot", "cr", "cw", "rsn" };
#define S_USAGE_COUNT 6

struct _sl_codec_t {
    msgpack_unpacked unpacked;          //  last decoded message's object tree
    const char *error;                  //  why the last decode failed
};

//  --------------------------------------------------------------------------
//  Names

static const char *s_type_names [] = {
    "?", "hb", "req", "ack", "cancel", "start", "delta", "block", "verdict",
    "frame", "error", "end"
};
static const char *s_dialect_names [] = {
    "none", "openai", "anthropic", "responses", "gemini"
};
static const char *s_delta_names [] = {
    "?", "message", "text", "thinking", "signature", "redacted", "refusal",
    "tool_call", "server_tool_use", "server_tool_result", "citation",
    "block_stop", "finish", "usage", "done"
};
static const char *s_block_event_names [] = {
    "?", "message", "block_start", "block_delta", "block_end", "finish", "keepalive"
};
static const char *s_block_kind_names [] = {
    "none", "text", "thinking", "redacted_thinking", "tool_call", "refusal",
    "server_tool_use", "server_tool_result", "citation"
};
static const char *s_finish_names [] = {
    "none", "stop", "length", "tool_calls", "content_filter", "refusal", "error", "pause"
};
static const char *s_action_names [] = {
    "none", "allow", "block", "drop", "rewrite", "terminate"
};
static const char *s_check_names [] = {
    "ran", "timeout", "error", "default"
};

#define S_NAME(table, value) \
    ((value) >= 0 && (size_t) (value) < sizeof table / sizeof table [0] ? table [value] : "?")

const char *sl_msg_type_name (int v)    { return S_NAME (s_type_names, v); }
const char *sl_dialect_name (int v)     { return S_NAME (s_dialect_names, v); }
const char *sl_delta_kind_name (int v)  { return S_NAME (s_delta_names, v); }
const char *sl_block_event_name (int v) { return S_NAME (s_block_event_names, v); }
const char *sl_block_kind_name (int v)  { return S_NAME (s_block_kind_names, v); }
const char *sl_finish_name (int v)      { return S_NAME (s_finish_names, v); }
const char *sl_action_name (int v)      { return S_NAME (s_action_names, v); }
const char *sl_check_name (int v)       { return S_NAME (s_check_names, v); }

static int
s_parse (const char **table, int count, const char *name)
{
    for (int i = 1; name && i < count; i++)
        if (strcmp (table [i], name) == 0)
            return i;
    return 0;
}

int
sl_dialect_parse (const char *name)
{
    return s_parse (s_dialect_names, SL_DIALECT_MAX, name);
}

int
sl_action_parse (const char *name)
{
    return s_parse (s_action_names, SL_ACT_MAX, name);
}

//  --------------------------------------------------------------------------
//  Stream ids

void
sl_sid_new (uint8_t sid [SL_SID_SIZE])
{
    size_t got = 0;
    while (got < SL_SID_SIZE) {
        ssize_t n = getrandom (sid + got, SL_SID_SIZE - got, 0);
        if (n > 0)
            got += (size_t) n;
    }
}

void
sl_sid_hex (const uint8_t sid [SL_SID_SIZE], char out [SL_SID_HEX_SIZE])
{
    static const char hex [] = "0123456789abcdef";
    for (int i = 0; i < SL_SID_SIZE; i++) {
        out [2 * i] = hex [sid [i] >> 4];
        out [2 * i + 1] = hex [sid [i] & 15];
    }
    out [2 * SL_SID_SIZE] = 0;
}

int
sl_sid_parse (const char *hex, uint8_t sid [SL_SID_SIZE])
{
    if (!hex || strlen (hex) != 2 * SL_SID_SIZE)
        return -1;
    for (int i = 0; i < 2 * SL_SID_SIZE; i++) {
        char c = hex [i];
        int v = c >= '0' && c <= '9' ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (v < 0)
            return -1;
        if (i % 2 == 0)
            sid [i / 2] = (uint8_t) (v << 4);
        else
            sid [i / 2] |= (uint8_t) v;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Encoding

void
sl_msg_init (sl_msg_t *self, sl_msg_type_t type)
{
    memset (self, 0, sizeof *self);
    self->version = SL_PROTO_VERSION;
    self->type = (uint8_t) type;
    self->index = -1;
    self->probability = NAN;
    self->usage = (sl_usage_t) { -1, -1, -1, -1, -1, -1 };
}

void
sl_msg_set_stream (sl_msg_t *self, const sl_msg_t *from)
{
    memcpy (self->sid, from->sid, SL_SID_SIZE);
    self->epoch = from->epoch;
}

static int
s_write (void *data, const char *buf, size_t len)
{
    sl_buf_append ((sl_buf_t *) data, buf, len);
    return 0;
}

//  Whether a field is present and must be written. Envelope fields are
//  always written; "i" is absent at -1; numbers are absent at zero.
static bool
s_present (const sl_msg_t *m, const s_field_t *f)
{
    const char *p = (const char *) m + f->offset;
    if (f->presence == P_ALWAYS)
        return true;
    switch (f->type) {
        case F_U8:    return *(const uint8_t *) p != 0;
        case F_U32:   return *(const uint32_t *) p != 0;
        case F_U64:   return *(const uint64_t *) p != 0;
        case F_I32:
            if (f->presence == P_NONNEG)
                return *(const int32_t *) p >= 0;
            return *(const int32_t *) p != 0;
        case F_I64:   return *(const int64_t *) p != 0;
        case F_F64:   return !isnan (*(const double *) p);
        case F_STR:
        case F_BIN:   return ((const sl_str_t *) p)->ptr != NULL;
        case F_SID:   return m->type != SL_MSG_HB;
        case F_USAGE: return m->has_usage;
    }
    return false;
}

static void
s_pack_field (msgpack_packer *pk, const sl_msg_t *m, const s_field_t *f)
{
    const char *p = (const char *) m + f->offset;
    msgpack_pack_str_with_body (pk, f->key, f->keylen);
    switch (f->type) {
        case F_U8:  msgpack_pack_uint8 (pk, *(const uint8_t *) p); break;
        case F_U32: msgpack_pack_uint32 (pk, *(const uint32_t *) p); break;
        case F_U64: msgpack_pack_uint64 (pk, *(const uint64_t *) p); break;
        case F_I32: msgpack_pack_int32 (pk, *(const int32_t *) p); break;
        case F_I64: msgpack_pack_int64 (pk, *(const int64_t *) p); break;
        case F_F64: msgpack_pack_double (pk, *(const double *) p); break;
        case F_STR: {
            const sl_str_t *s = (const sl_str_t *) p;
            msgpack_pack_str_with_body (pk, s->ptr, s->len);
            break;
        }
        case F_BIN: {
            const sl_str_t *s = (const sl_str_t *) p;
            msgpack_pack_bin_with_body (pk, s->ptr, s->len);
            break;
        }
        case F_SID:
            msgpack_pack_bin_with_body (pk, m->sid, SL_SID_SIZE);
            break;
        case F_USAGE: {
            const int64_t *u = &m->usage.input;
            uint32_t n = 0;
            for (int i = 0; i < S_USAGE_COUNT; i++)
                n += u [i] >= 0;
            msgpack_pack_map (pk, n);
            for (int i = 0; i < S_USAGE_COUNT; i++)
                if (u [i] >= 0) {
                    msgpack_pack_str_with_body (pk, s_usage_keys [i], strlen (s_usage_keys [i]));
                    msgpack_pack_int64 (pk, u [i]);
                }
            break;
        }
    }
}

void
sl_msg_encode (const sl_msg_t *self, sl_buf_t *out)
{
    msgpack_packer pk;
    msgpack_packer_init (&pk, out, s_write);
    uint32_t count = 0;
    for (size_t i = 0; i < S_FIELD_COUNT; i++)
        count += s_present (self, &s_fields [i]);
    msgpack_pack_map (&pk, count);
    for (size_t i = 0; i < S_FIELD_COUNT; i++)
        if (s_present (self, &s_fields [i]))
            s_pack_field (&pk, self, &s_fields [i]);
}

sl_msg_t *
sl_msg_dup (const sl_msg_t *self)
{
    size_t bytes = 0;
    for (size_t i = 0; i < S_FIELD_COUNT; i++)
        if (s_fields [i].type == F_STR || s_fields [i].type == F_BIN) {
            const sl_str_t *s = (const sl_str_t *) ((const char *) self + s_fields [i].offset);
            if (s->ptr)
                bytes += s->len + 1;
        }
    sl_msg_t *copy = sl_xmalloc (sizeof *copy + bytes);
    *copy = *self;
    char *store = (char *) (copy + 1);
    for (size_t i = 0; i < S_FIELD_COUNT; i++)
        if (s_fields [i].type == F_STR || s_fields [i].type == F_BIN) {
            sl_str_t *s = (sl_str_t *) ((char *) copy + s_fields [i].offset);
            if (s->ptr) {
                if (s->len)
                    memcpy (store, s->ptr, s->len);
                store [s->len] = 0;
                s->ptr = store;
                store += s->len + 1;
            }
        }
    return copy;
}

//  --------------------------------------------------------------------------
//  Decoding

sl_codec_t *
sl_codec_new (void)
{
    sl_codec_t *self = sl_xcalloc (1, sizeof *self);
    msgpack_unpacked_init (&self->unpacked);
    self->error = "";
    return self;
}

void
sl_codec_destroy (sl_codec_t **self_p)
{
    if (self_p && *self_p) {
        msgpack_unpacked_destroy (&(*self_p)->unpacked);
        free (*self_p);
        *self_p = NULL;
    }
}

const char *
sl_codec_error (sl_codec_t *self)
{
    return self->error;
}

static const s_field_t *
s_find_field (const char *key, size_t len)
{
    if (len == 0)
        return NULL;                    //  msgpack-c gives an empty key no pointer
    size_t lo = 0, hi = S_FIELD_COUNT;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const char *k = s_fields [mid].key;
        size_t klen = s_fields [mid].keylen;
        int cmp = memcmp (key, k, len < klen ? len : klen);
        if (cmp == 0)
            cmp = len < klen ? -1 : len > klen ? 1 : 0;
        if (cmp == 0)
            return &s_fields [mid];
        if (cmp < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

//  Read an integer object into *out; false if it is not an integer or does
//  not fit [lo, hi].
static bool
s_get_int (const msgpack_object *o, int64_t lo, uint64_t hi, int64_t *out)
{
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
        if (o->via.u64 > hi)
            return false;
        *out = (int64_t) o->via.u64;
        return true;
    }
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
        if (o->via.i64 < lo)
            return false;
        *out = o->via.i64;
        return true;
    }
    return false;
}

static int
s_decode_usage (sl_msg_t *m, const msgpack_object *o)
{
    if (o->type != MSGPACK_OBJECT_MAP)
        return -2;
    m->has_usage = true;
    int64_t *u = &m->usage.input;
    for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object_kv *kv = &o->via.map.ptr [i];
        if (kv->key.type != MSGPACK_OBJECT_STR)
            return -2;
        for (int j = 0; j < S_USAGE_COUNT; j++)
            if (kv->key.via.str.size == strlen (s_usage_keys [j])
            &&  memcmp (kv->key.via.str.ptr, s_usage_keys [j], kv->key.via.str.size) == 0) {
                int64_t v;
                if (!s_get_int (&kv->val, -1, INT64_MAX, &v))
                    return -2;
                u [j] = v;
            }
    }
    return 0;
}

static int
s_decode_field (sl_msg_t *m, const s_field_t *f, const msgpack_object *o)
{
    char *p = (char *) m + f->offset;
    int64_t v;
    switch (f->type) {
        case F_U8:
            if (!s_get_int (o, 0, UINT8_MAX, &v)) return -2;
            *(uint8_t *) p = (uint8_t) v;
            return 0;
        case F_U32:
            if (!s_get_int (o, 0, UINT32_MAX, &v)) return -2;
            *(uint32_t *) p = (uint32_t) v;
            return 0;
        case F_U64:
            if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER) return -2;
            *(uint64_t *) p = o->via.u64;
            return 0;
        case F_I32:
            if (!s_get_int (o, INT32_MIN, INT32_MAX, &v)) return -2;
            *(int32_t *) p = (int32_t) v;
            return 0;
        case F_I64:
            if (!s_get_int (o, INT64_MIN, INT64_MAX, &v)) return -2;
            *(int64_t *) p = v;
            return 0;
        case F_F64:
            if (o->type == MSGPACK_OBJECT_FLOAT64 || o->type == MSGPACK_OBJECT_FLOAT32)
                *(double *) p = o->via.f64;
            else
            if (s_get_int (o, INT64_MIN, INT64_MAX, &v))
                *(double *) p = (double) v;
            else
                return -2;
            return 0;
        case F_STR:
            if (o->type != MSGPACK_OBJECT_STR) return -2;
            *(sl_str_t *) p = sl_str_n (o->via.str.size ? o->via.str.ptr : "", o->via.str.size);
            return 0;
        case F_BIN:
            if (o->type != MSGPACK_OBJECT_BIN) return -2;
            *(sl_str_t *) p = sl_str_n (o->via.bin.size ? o->via.bin.ptr : "", o->via.bin.size);
            return 0;
        case F_SID:
            if (o->type != MSGPACK_OBJECT_BIN || o->via.bin.size != SL_SID_SIZE) return -2;
            memcpy (m->sid, o->via.bin.ptr, SL_SID_SIZE);
            return 0;
        case F_USAGE:
            return s_decode_usage (m, o);
    }
    return -2;
}

//  Walk one msgpack value at data [*offset, size) checking that every
//  declared length fits in the bytes that are really there, and set *end
//  past it. msgpack-c allocates what a container header declares before it
//  looks at the input, so a five-byte message could ask it for gigabytes;
//  every element takes at least one byte, so a count above the bytes left
//  is a lie. 0 ok, -1 truncated or invalid.
static int
s_check_span (const uint8_t *data, size_t size, size_t offset, size_t *end)
{
    size_t items = 1;                   //  values still to read
    size_t p = offset;
    while (items > 0) {
        if (p >= size)
            return -1;
        uint8_t b = data [p++];
        items--;
        size_t skip = 0;                //  payload bytes after the header
        size_t add = 0;                 //  items a container adds
        size_t len_bytes = 0;           //  big-endian length field size
        if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3)
            ;
        else
        if ((b & 0xf0) == 0x80)
            add = 2 * (size_t) (b & 0x0f);
        else
        if ((b & 0xf0) == 0x90)
            add = b & 0x0f;
        else
        if ((b & 0xe0) == 0xa0)
            skip = b & 0x1f;
        else
        switch (b) {
            case 0xc4: case 0xd9: len_bytes = 1; break;     //  bin8, str8
            case 0xc5: case 0xda: len_bytes = 2; break;     //  bin16, str16
            case 0xc6: case 0xdb: len_bytes = 4; break;     //  bin32, str32
            case 0xc7: len_bytes = 1; skip = 1; break;      //  ext8 (+type)
            case 0xc8: len_bytes = 2; skip = 1; break;
            case 0xc9: len_bytes = 4; skip = 1; break;
            case 0xca: skip = 4; break;
            case 0xcb: skip = 8; break;
            case 0xcc: case 0xd0: skip = 1; break;
            case 0xcd: case 0xd1: skip = 2; break;
            case 0xce: case 0xd2: skip = 4; break;
            case 0xcf: case 0xd3: skip = 8; break;
            case 0xd4: skip = 2; break;
            case 0xd5: skip = 3; break;
            case 0xd6: skip = 5; break;
            case 0xd7: skip = 9; break;
            case 0xd8: skip = 17; break;
            case 0xdc: case 0xde: len_bytes = 2; break;     //  array16, map16
            case 0xdd: case 0xdf: len_bytes = 4; break;     //  array32, map32
            default: return -1;                             //  0xc1: never used
        }
        if (len_bytes) {
            if (size - p < len_bytes)
                return -1;
            size_t n = 0;
            for (size_t i = 0; i < len_bytes; i++)
                n = (n << 8) | data [p + i];
            p += len_bytes;
            if (b == 0xdc || b == 0xdd)
                add = n;
            else
            if (b == 0xde || b == 0xdf)
                add = 2 * n;
            else
                skip += n;
        }
        if (skip > size - p)
            return -1;
        p += skip;
        items += add;
        if (items > size - p)
            return -1;                  //  more values declared than bytes left
    }
    *end = p;
    return 0;
}

static int
s_fail (sl_codec_t *self, size_t size, size_t *offset, const char *why)
{
    self->error = why;
    *offset = size;
    return -2;
}

int
sl_codec_decode (sl_codec_t *self, const void *data, size_t size,
                 size_t *offset, sl_msg_t *msg)
{
    if (*offset >= size)
        return -1;
    size_t start = *offset;
    size_t end;
    if (s_check_span (data, size, start, &end))
        return s_fail (self, size, offset, "truncated or invalid msgpack");
    if (end - start > SL_MSG_MAX_SIZE)
        return s_fail (self, size, offset, "oversized message");
    msgpack_unpack_return rc = msgpack_unpack_next (&self->unpacked,
                                                    (const char *) data, end, offset);
    if (rc == MSGPACK_UNPACK_CONTINUE)
        return s_fail (self, size, offset, "truncated message");
    if (rc != MSGPACK_UNPACK_SUCCESS && rc != MSGPACK_UNPACK_EXTRA_BYTES)
        return s_fail (self, size, offset, "not msgpack");
    if (*offset - start > SL_MSG_MAX_SIZE)
        return s_fail (self, size, offset, "oversized message");

    const msgpack_object *root = &self->unpacked.data;
    if (root->type != MSGPACK_OBJECT_MAP)
        return s_fail (self, size, offset, "message is not a map");

    sl_msg_init (msg, 0);
    msg->version = 0;
    bool seen_sid = false, seen_ep = false, seen_seq = false;
    for (uint32_t i = 0; i < root->via.map.size; i++) {
        const msgpack_object_kv *kv = &root->via.map.ptr [i];
        if (kv->key.type != MSGPACK_OBJECT_STR)
            return s_fail (self, size, offset, "field name is not a string");
        const s_field_t *f = s_find_field (kv->key.via.str.ptr, kv->key.via.str.size);
        if (!f)
            continue;                   //  unknown fields are ignored
        if (s_decode_field (msg, f, &kv->val))
            return s_fail (self, size, offset, "wrong type for a field");
        if (f->type == F_SID)
            seen_sid = true;
        else
        if (f->offset == offsetof (sl_msg_t, epoch))
            seen_ep = true;
        else
        if (f->offset == offsetof (sl_msg_t, seq))
            seen_seq = true;
    }
    if (msg->version != SL_PROTO_VERSION)
        return s_fail (self, size, offset, "unsupported protocol version");
    if (msg->type == 0 || msg->type >= SL_MSG_TYPE_MAX)
        return s_fail (self, size, offset, "unknown message type");
    if (msg->type != SL_MSG_HB && !(seen_sid && seen_ep && seen_seq))
        return s_fail (self, size, offset, "envelope incomplete");
    if (msg->type == SL_MSG_DELTA && (msg->kind == 0 || msg->kind >= SL_D_MAX))
        return s_fail (self, size, offset, "unknown delta kind");
    if (msg->type == SL_MSG_BLOCK && (msg->kind == 0 || msg->kind >= SL_B_MAX))
        return s_fail (self, size, offset, "unknown block event");
    if (msg->block >= SL_BK_MAX || msg->finish >= SL_FIN_MAX
    ||  msg->action >= SL_ACT_MAX || msg->check >= SL_CHK_MAX
    ||  msg->client_dialect >= SL_DIALECT_MAX || msg->upstream_dialect >= SL_DIALECT_MAX)
        return s_fail (self, size, offset, "enum value out of range");
    self->error = "";
    return 0;
}
