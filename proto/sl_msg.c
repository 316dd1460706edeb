/*  sl_msg.c - the one codec of the sluice wire protocol (see PROTOCOL.md).

    Table driven: s_fields lists every field once (wire key, type, offset
    in sl_msg_t), from SL_MSG_FIELDS; s_specs says which of them each type
    carries, from SL_FIELDS_<TYPE> (both in sl_msg.h). Encoding writes only
    present fields; absent and zero decode to the same value, so omitting
    them loses nothing. Decoding refuses a message whose fields do not fit
    its type, and encoding asserts that ours do.

    The codec reads and writes msgpack itself. It runs four times per
    chunk on the data path, and msgpack-c's unpacker both allocates an
    object tree per message and allocates whatever a container header
    declares before looking at the input (five bytes can ask for 137 GB).
    Here the writer fills a buffer reserved once per message and the reader
    is a bounds-checked walk that allocates nothing; tests check the wire
    bytes against msgpack-c, which stays the reference.
*/
#include "proto/sl_msg.h"

#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_hex.h"
#include "common/base/sl_log.h"
#include "common/base/sl_version.h"

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

//  Every field of the wire (SL_MSG_FIELDS), in the order they are written;
//  s_fields [SL_FIELD_x] is field x. Lookups use a sorted copy.
static const s_field_t s_fields [] = {
#define S_FIELD(key, wire, member, when) \
    { #key, sizeof #key - 1, F_##wire, offsetof (sl_msg_t, member), P_##when },
    SL_MSG_FIELDS (S_FIELD)
#undef S_FIELD
};
#define S_FIELD_COUNT (sizeof s_fields / sizeof s_fields [0])
_Static_assert (S_FIELD_COUNT == SL_FIELD_COUNT, "one entry for every field");

//  Usage sub-keys, in the order of sl_usage_t.
static const char *s_usage_keys [] = { "in", "out", "tot", "cr", "cw", "rsn" };
#define S_USAGE_COUNT 6
_Static_assert (sizeof s_usage_keys / sizeof s_usage_keys [0] == S_USAGE_COUNT
                && sizeof (sl_usage_t) == S_USAGE_COUNT * sizeof (int64_t), "a key for every usage figure");

//  --------------------------------------------------------------------------
//  Which fields each type carries (SL_FIELDS_<TYPE> in sl_msg.h), as bit
//  sets over the field list, made at compile time.

#define S_WORDS 2
_Static_assert (SL_FIELD_COUNT <= 64 * S_WORDS, "a bit for every field: widen S_WORDS");

typedef struct {
    uint64_t may [S_WORDS];             //  every body field the type carries
    uint64_t must [S_WORDS];            //  of those, the ones it always carries
} s_spec_t;

#define S_BIT(key, w) \
    | ((int) SL_FIELD_##key / 64 == (w) ? UINT64_C (1) << ((int) SL_FIELD_##key % 64) : 0)
#define S_W0(key) S_BIT (key, 0)
#define S_W1(key) S_BIT (key, 1)
#define S_NONE(key)
#define S_SPEC(TYPE, name) [SL_MSG_##TYPE] = { \
    .may =  { 0 SL_FIELDS_##TYPE (S_W0, S_W0),   0 SL_FIELDS_##TYPE (S_W1, S_W1) }, \
    .must = { 0 SL_FIELDS_##TYPE (S_W0, S_NONE), 0 SL_FIELDS_##TYPE (S_W1, S_NONE) } },

//  A type named twice is an error of the build (-Woverride-init); the
//  count makes sure none is missing.
static const s_spec_t s_specs [SL_MSG_TYPE_MAX] = {
    SL_MSG_TYPES (S_SPEC)
};
#define S_ONE(TYPE, name) + 1
_Static_assert (0 SL_MSG_TYPES (S_ONE) == SL_MSG_TYPE_MAX - 1, "a field table for every type");

//  The envelope is every message's: no type lists it.
#define S_ENVELOPE(W) (0 W (v) W (t) W (sid) W (ep) W (seq))
static const uint64_t s_envelope [S_WORDS] = { S_ENVELOPE (S_W0), S_ENVELOPE (S_W1) };
#define S_NO_ENVELOPE(TYPE, name) \
    _Static_assert (((0 SL_FIELDS_##TYPE (S_W0, S_W0)) & S_ENVELOPE (S_W0)) == 0 \
                 && ((0 SL_FIELDS_##TYPE (S_W1, S_W1)) & S_ENVELOPE (S_W1)) == 0, \
                    "the envelope is no type's own: " #name);
SL_MSG_TYPES (S_NO_ENVELOPE)

bool
sl_msg_carries (int type, sl_msg_field_t field)
{
    if (type <= 0 || type >= SL_MSG_TYPE_MAX || field < 0 || field >= SL_FIELD_COUNT)
        return false;
    return (s_specs [type].may [field / 64] >> (field % 64)) & 1;
}

bool
sl_msg_requires (int type, sl_msg_field_t field)
{
    if (type <= 0 || type >= SL_MSG_TYPE_MAX || field < 0 || field >= SL_FIELD_COUNT)
        return false;
    return (s_specs [type].must [field / 64] >> (field % 64)) & 1;
}

//  A key packed into an integer (length in the top byte), for lookups
//  without memcmp.
typedef struct {
    uint64_t packed;
    const s_field_t *field;
} s_key_t;

#define S_WHY_SIZE 96                   //  a reason naming a field and a type

struct _sl_codec_t {
    s_key_t keys [S_FIELD_COUNT];       //  sorted by packed value
    const char *error;                  //  why the last decode failed
    char why [S_WHY_SIZE];              //  its text, when it names a field
};

//  --------------------------------------------------------------------------
//  Names

#define S_TYPE_NAME(TYPE, name) [SL_MSG_##TYPE] = #name,
static const char *s_type_names [] = { "?", SL_MSG_TYPES (S_TYPE_NAME) };
_Static_assert (sizeof s_type_names / sizeof s_type_names [0] == SL_MSG_TYPE_MAX, "a name for every type");
static const char *s_delta_names [] = {
    "?", "message", "text", "thinking", "signature", "redacted", "refusal",
    "tool_call", "server_tool_use", "server_tool_result", "citation",
    "block_stop", "finish", "usage", "done"
};
_Static_assert (sizeof s_delta_names / sizeof s_delta_names [0] == SL_D_MAX, "a name for every delta kind");
static const char *s_block_event_names [] = {
    "?", "message", "block_start", "block_delta", "block_end", "finish", "keepalive"
};
_Static_assert (sizeof s_block_event_names / sizeof s_block_event_names [0] == SL_B_MAX, "a name for every block event");
static const char *s_block_kind_names [] = {
    "none", "text", "thinking", "redacted_thinking", "tool_call", "refusal",
    "server_tool_use", "server_tool_result", "citation"
};
_Static_assert (sizeof s_block_kind_names / sizeof s_block_kind_names [0] == SL_BK_MAX, "a name for every block kind");
static const char *s_finish_names [] = {
    "none", "stop", "length", "tool_calls", "content_filter", "refusal", "error", "pause"
};
_Static_assert (sizeof s_finish_names / sizeof s_finish_names [0] == SL_FIN_MAX, "a name for every finish");
static const char *s_action_names [] = {
    "none", "allow", "block", "drop", "rewrite", "terminate", "redact", "block_result", "withhold"
};
_Static_assert (sizeof s_action_names / sizeof s_action_names [0] == SL_ACT_MAX, "a name for every action");
static const char *s_check_names [] = {
    "ran", "timeout", "error", "default", "approved", "denied", "approved_earlier",
    "would_ask"
};
_Static_assert (sizeof s_check_names / sizeof s_check_names [0] == SL_CHK_MAX, "a name for every check");
static const char *s_cut_names [] = {
    "none", "length", "filter", "error", "eof", "size", "invalid"
};
_Static_assert (sizeof s_cut_names / sizeof s_cut_names [0] == SL_CUT_MAX, "a name for every cut");

static const char *s_mode_names [] = { "enforce", "shadow" };
_Static_assert (sizeof s_mode_names / sizeof s_mode_names [0] == SL_MODE_MAX, "a name for every mode");

#define S_NAME(table, value) \
    ((value) >= 0 && (size_t) (value) < sizeof table / sizeof table [0] ? table [value] : "?")

const char *sl_msg_type_name (int v)    { return S_NAME (s_type_names, v); }
const char *sl_delta_kind_name (int v)  { return S_NAME (s_delta_names, v); }
const char *sl_block_event_name (int v) { return S_NAME (s_block_event_names, v); }
const char *sl_block_kind_name (int v)  { return S_NAME (s_block_kind_names, v); }
const char *sl_finish_name (int v)      { return S_NAME (s_finish_names, v); }
const char *sl_action_name (int v)      { return S_NAME (s_action_names, v); }
const char *sl_check_name (int v)       { return S_NAME (s_check_names, v); }
const char *sl_cut_name (int v)         { return S_NAME (s_cut_names, v); }
const char *sl_mode_name (int v)        { return S_NAME (s_mode_names, v); }

static int
s_parse (const char **table, int count, const char *name)
{
    for (int i = 1; name && i < count; i++)
        if (strcmp (table [i], name) == 0)
            return i;
    return 0;
}

int
sl_action_parse (const char *name)
{
    return s_parse (s_action_names, SL_ACT_MAX, name);
}

int
sl_cut_parse (sl_str_t name)
{
    for (int i = 1; name.ptr && i < SL_CUT_MAX; i++)
        if (sl_str_eq (name, s_cut_names [i]))
            return i;
    return 0;
}

sl_cut_t
sl_cut_for_error (sl_str_t code)
{
    if (sl_str_eq (code, "stream_too_large") || sl_str_eq (code, "upstream_event_too_large"))
        return SL_CUT_SIZE;
    if (sl_str_eq (code, "upstream_incomplete") || sl_str_eq (code, "upstream_connection_lost"))
        return SL_CUT_EOF;
    return SL_CUT_ERROR;
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
    sl_hex_write (out, sid, SL_SID_SIZE);
    out [2 * SL_SID_SIZE] = 0;
}

int
sl_sid_parse (const char *hex, uint8_t sid [SL_SID_SIZE])
{
    if (!hex || strlen (hex) != 2 * SL_SID_SIZE)
        return -1;
    return sl_hex_read (hex, SL_SID_SIZE, sid, false);
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

bool
sl_msg_numbered (const sl_msg_t *self)
{
    if (self->type == SL_MSG_BLOCK && self->kind == SL_B_KEEPALIVE)
        return false;
    if (self->type == SL_MSG_FRAME && (self->flags & SL_F_KEEPALIVE))
        return false;
    return true;
}

//  --------------------------------------------------------------------------
//  Writing msgpack. The encoder writes straight into a buffer reserved
//  once per message: no callback per item, no second pass to count fields
//  (the map header is a map16 whose count is patched at the end).

static inline uint8_t *
s_be16 (uint8_t *w, uint32_t v)
{
    w [0] = (uint8_t) (v >> 8);
    w [1] = (uint8_t) v;
    return w + 2;
}

static inline uint8_t *
s_be32 (uint8_t *w, uint32_t v)
{
    w [0] = (uint8_t) (v >> 24);
    w [1] = (uint8_t) (v >> 16);
    w [2] = (uint8_t) (v >> 8);
    w [3] = (uint8_t) v;
    return w + 4;
}

static inline uint8_t *
s_be64 (uint8_t *w, uint64_t v)
{
    w = s_be32 (w, (uint32_t) (v >> 32));
    return s_be32 (w, (uint32_t) v);
}

static inline uint8_t *
s_put_uint (uint8_t *w, uint64_t v)
{
    if (v < 128)
        *w++ = (uint8_t) v;
    else
    if (v < 256) {
        *w++ = 0xcc;
        *w++ = (uint8_t) v;
    }
    else
    if (v < 65536) {
        *w++ = 0xcd;
        w = s_be16 (w, (uint32_t) v);
    }
    else
    if (v <= 0xffffffffu) {
        *w++ = 0xce;
        w = s_be32 (w, (uint32_t) v);
    }
    else {
        *w++ = 0xcf;
        w = s_be64 (w, v);
    }
    return w;
}

static inline uint8_t *
s_put_int (uint8_t *w, int64_t v)
{
    if (v >= 0)
        return s_put_uint (w, (uint64_t) v);
    if (v >= -32)
        *w++ = (uint8_t) (0xe0 | (v + 32));
    else
    if (v >= -128) {
        *w++ = 0xd0;
        *w++ = (uint8_t) (int8_t) v;
    }
    else
    if (v >= -32768) {
        *w++ = 0xd1;
        w = s_be16 (w, (uint32_t) (uint16_t) (int16_t) v);
    }
    else
    if (v >= INT32_MIN) {
        *w++ = 0xd2;
        w = s_be32 (w, (uint32_t) (int32_t) v);
    }
    else {
        *w++ = 0xd3;
        w = s_be64 (w, (uint64_t) v);
    }
    return w;
}

static inline uint8_t *
s_put_raw (uint8_t *w, const char *p, size_t n, bool binary)
{
    if (binary) {
        if (n < 256) {
            *w++ = 0xc4;
            *w++ = (uint8_t) n;
        }
        else
        if (n < 65536) {
            *w++ = 0xc5;
            w = s_be16 (w, (uint32_t) n);
        }
        else {
            *w++ = 0xc6;
            w = s_be32 (w, (uint32_t) n);
        }
    }
    else
    if (n < 32)
        *w++ = (uint8_t) (0xa0 | n);
    else
    if (n < 256) {
        *w++ = 0xd9;
        *w++ = (uint8_t) n;
    }
    else
    if (n < 65536) {
        *w++ = 0xda;
        w = s_be16 (w, (uint32_t) n);
    }
    else {
        *w++ = 0xdb;
        w = s_be32 (w, (uint32_t) n);
    }
    if (n)
        memcpy (w, p, n);
    return w + n;
}

//  Whether a field is present and must be written. Envelope fields are
//  always written; "i" is absent at -1; numbers are absent at zero.
static inline bool
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

//  "an error", "a start": for the reasons below.
static const char *
s_article (int type)
{
    const char *name = sl_msg_type_name (type);
    return name [0] && strchr ("aeiou", name [0]) ? "an" : "a";
}

//  The first field that makes a message misfit its type's table: one of
//  has that the type does not carry (*stray true), or one the type must
//  carry that m lacks (*stray false). NULL when the message fits. The
//  type must be known.
static const s_field_t *
s_misfit (const sl_msg_t *m, const uint64_t has [S_WORDS], bool *stray)
{
    const s_spec_t *spec = &s_specs [m->type];
    for (int w = 0; w < S_WORDS; w++) {
        uint64_t extra = has [w] & ~spec->may [w] & ~s_envelope [w];
        if (extra) {
            *stray = true;
            return &s_fields [64 * w + __builtin_ctzll (extra)];
        }
    }
    //  A required field counts by its value, as the encoder writes it: a
    //  zero on the wire is no field, and would not be sent on.
    for (int w = 0; w < S_WORDS; w++)
        for (uint64_t must = spec->must [w]; must; must &= must - 1) {
            const s_field_t *f = &s_fields [64 * w + __builtin_ctzll (must)];
            if (!s_present (m, f)) {
                *stray = false;
                return f;
            }
        }
    return NULL;
}

static uint8_t *
s_put_field (uint8_t *w, const sl_msg_t *m, const s_field_t *f)
{
    const char *p = (const char *) m + f->offset;
    w = s_put_raw (w, f->key, f->keylen, false);
    switch (f->type) {
        case F_U8:  return s_put_uint (w, *(const uint8_t *) p);
        case F_U32: return s_put_uint (w, *(const uint32_t *) p);
        case F_U64: return s_put_uint (w, *(const uint64_t *) p);
        case F_I32: return s_put_int (w, *(const int32_t *) p);
        case F_I64: return s_put_int (w, *(const int64_t *) p);
        case F_F64: {
            uint64_t bits;
            memcpy (&bits, p, sizeof bits);
            *w++ = 0xcb;
            return s_be64 (w, bits);
        }
        case F_STR:
        case F_BIN: {
            const sl_str_t *s = (const sl_str_t *) p;
            return s_put_raw (w, s->ptr, s->len, f->type == F_BIN);
        }
        case F_SID:
            return s_put_raw (w, (const char *) m->sid, SL_SID_SIZE, true);
        case F_USAGE: {
            const int64_t *u = &m->usage.input;
            uint8_t *header = w++;
            uint8_t n = 0;
            for (int i = 0; i < S_USAGE_COUNT; i++)
                if (u [i] >= 0) {
                    w = s_put_raw (w, s_usage_keys [i], strlen (s_usage_keys [i]), false);
                    w = s_put_int (w, u [i]);
                    n++;
                }
            *header = (uint8_t) (0x80 | n);
            return w;
        }
    }
    return w;
}

//  Bytes a field can take at most, besides its string payload.
#define S_FIELD_OVERHEAD 16
#define S_USAGE_MAX (1 + S_USAGE_COUNT * (4 + 9))

void
sl_msg_encode (const sl_msg_t *self, sl_buf_t *out)
{
    size_t bound = 3 + S_FIELD_COUNT * S_FIELD_OVERHEAD + S_USAGE_MAX;
    for (size_t i = 0; i < S_FIELD_COUNT; i++)
        if (s_fields [i].type == F_STR || s_fields [i].type == F_BIN)
            bound += ((const sl_str_t *) ((const char *) self + s_fields [i].offset))->len;
    uint8_t *start = (uint8_t *) sl_buf_reserve (out, bound);
    uint8_t *w = start + 3;             //  map16 header, count patched below
    uint32_t count = 0;
    uint64_t has [S_WORDS] = { 0 };
    for (size_t i = 0; i < S_FIELD_COUNT; i++)
        if (s_present (self, &s_fields [i])) {
            w = s_put_field (w, self, &s_fields [i]);
            has [i / 64] |= UINT64_C (1) << (i % 64);
            count++;
        }
    //  We never send what a receiver refuses: a message that does not fit
    //  its type's table is a bug here, not input.
    bool known = self->type > 0 && self->type < SL_MSG_TYPE_MAX;
    assert (known && "a message of a type we have");
    bool stray = false;
    const s_field_t *misfit = known ? s_misfit (self, has, &stray) : NULL;
    if (misfit)
        sl_log_error ("message_misfit", stray ? "%s %s does not carry %s" : "%s %s must carry %s",
                      s_article (self->type), sl_msg_type_name (self->type), misfit->key);
    assert (!misfit && "a message its type's table refuses (SL_FIELDS_<TYPE>)");
    start [0] = 0xde;
    s_be16 (start + 1, count);
    out->len += (size_t) (w - start);
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

static inline uint64_t
s_pack_key (const char *key, size_t len)
{
    uint64_t v = (uint64_t) len << 56;
    for (size_t i = 0; i < len; i++)
        v |= (uint64_t) (uint8_t) key [i] << (8 * i);
    return v;
}

static int
s_key_cmp (const void *a, const void *b)
{
    uint64_t x = ((const s_key_t *) a)->packed, y = ((const s_key_t *) b)->packed;
    return x < y ? -1 : x > y;
}

sl_codec_t *
sl_codec_new (void)
{
    sl_codec_t *self = sl_xcalloc (1, sizeof *self);
    for (size_t i = 0; i < S_FIELD_COUNT; i++) {
        self->keys [i].packed = s_pack_key (s_fields [i].key, s_fields [i].keylen);
        self->keys [i].field = &s_fields [i];
    }
    qsort (self->keys, S_FIELD_COUNT, sizeof (s_key_t), s_key_cmp);
    self->error = "";
    return self;
}

void
sl_codec_destroy (sl_codec_t **self_p)
{
    if (self_p && *self_p) {
        free (*self_p);
        *self_p = NULL;
    }
}

const char *
sl_codec_error (sl_codec_t *self)
{
    return self->error;
}

//  Keys longer than 7 bytes are no field of ours.
static inline const s_field_t *
s_find_field (sl_codec_t *self, const uint8_t *key, size_t len)
{
    if (len == 0 || len > 7)
        return NULL;
    uint64_t packed = s_pack_key ((const char *) key, len);
    size_t lo = 0, hi = S_FIELD_COUNT;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        uint64_t k = self->keys [mid].packed;
        if (k == packed)
            return self->keys [mid].field;
        if (k < packed)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

//  --------------------------------------------------------------------------
//  Reading msgpack. Every read checks the bytes left first; a length that
//  does not fit is malformed. Nothing is allocated: strings are slices of
//  the frame.

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} s_reader_t;

static inline uint64_t
s_get_be (const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = (v << 8) | p [i];
    return v;
}

//  An integer of any msgpack width; false if the value is not an integer.
static inline bool
s_read_int (s_reader_t *r, bool *negative, uint64_t *magnitude_or_bits)
{
    if (r->p >= r->end)
        return false;
    uint8_t b = *r->p;
    size_t n = 0;
    bool is_signed = false;
    if (b <= 0x7f) {
        r->p++;
        *negative = false;
        *magnitude_or_bits = b;
        return true;
    }
    if (b >= 0xe0) {
        r->p++;
        *negative = true;
        *magnitude_or_bits = (uint64_t) (int64_t) (int8_t) b;
        return true;
    }
    switch (b) {
        case 0xcc: n = 1; break;
        case 0xcd: n = 2; break;
        case 0xce: n = 4; break;
        case 0xcf: n = 8; break;
        case 0xd0: n = 1; is_signed = true; break;
        case 0xd1: n = 2; is_signed = true; break;
        case 0xd2: n = 4; is_signed = true; break;
        case 0xd3: n = 8; is_signed = true; break;
        default: return false;
    }
    if ((size_t) (r->end - r->p) < n + 1)
        return false;
    uint64_t v = s_get_be (r->p + 1, n);
    r->p += n + 1;
    if (is_signed) {
        //  Sign-extend from n bytes.
        int shift = 64 - 8 * (int) n;
        int64_t sv = (int64_t) (v << shift) >> shift;
        *negative = sv < 0;
        *magnitude_or_bits = (uint64_t) sv;
    }
    else {
        *negative = false;
        *magnitude_or_bits = v;
    }
    return true;
}

//  A signed value in [lo, hi]; false when not an integer or out of range.
static inline bool
s_read_ranged (s_reader_t *r, int64_t lo, uint64_t hi, int64_t *out)
{
    bool negative;
    uint64_t v;
    if (!s_read_int (r, &negative, &v))
        return false;
    if (negative) {
        if ((int64_t) v < lo)
            return false;
        *out = (int64_t) v;
    }
    else {
        if (v > hi)
            return false;
        *out = (int64_t) v;
    }
    return true;
}

//  A str (binary false) or bin (binary true) header and payload.
static inline bool
s_read_raw (s_reader_t *r, bool binary, const uint8_t **ptr, size_t *len)
{
    if (r->p >= r->end)
        return false;
    uint8_t b = *r->p;
    size_t header = 1, n;
    if (!binary && (b & 0xe0) == 0xa0)
        n = b & 0x1f;
    else {
        size_t width;
        if (binary)
            width = b == 0xc4 ? 1 : b == 0xc5 ? 2 : b == 0xc6 ? 4 : 0;
        else
            width = b == 0xd9 ? 1 : b == 0xda ? 2 : b == 0xdb ? 4 : 0;
        if (width == 0 || (size_t) (r->end - r->p) < 1 + width)
            return false;
        n = (size_t) s_get_be (r->p + 1, width);
        header = 1 + width;
    }
    if ((size_t) (r->end - r->p) - header < n)
        return false;
    *ptr = r->p + header;
    *len = n;
    r->p += header + n;
    return true;
}

//  A map header; false when the value is not a map or declares more
//  entries than the bytes left could hold.
static inline bool
s_read_map (s_reader_t *r, size_t *count)
{
    if (r->p >= r->end)
        return false;
    uint8_t b = *r->p;
    size_t n, header = 1;
    if ((b & 0xf0) == 0x80)
        n = b & 0x0f;
    else
    if (b == 0xde || b == 0xdf) {
        size_t width = b == 0xde ? 2 : 4;
        if ((size_t) (r->end - r->p) < 1 + width)
            return false;
        n = (size_t) s_get_be (r->p + 1, width);
        header = 1 + width;
    }
    else
        return false;
    r->p += header;
    if (n > (size_t) (r->end - r->p) / 2)
        return false;
    *count = n;
    return true;
}

//  Skip one value of any type. Every element takes at least one byte, so a
//  container declaring more values than bytes left is malformed (msgpack
//  readers that allocate first can be made to ask for gigabytes).
static bool
s_skip_value (s_reader_t *r)
{
    size_t items = 1;
    const uint8_t *p = r->p;
    while (items > 0) {
        if (p >= r->end)
            return false;
        uint8_t b = *p++;
        items--;
        size_t skip = 0, add = 0, len_bytes = 0;
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
            case 0xc4: case 0xd9: len_bytes = 1; break;
            case 0xc5: case 0xda: len_bytes = 2; break;
            case 0xc6: case 0xdb: len_bytes = 4; break;
            case 0xc7: len_bytes = 1; skip = 1; break;
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
            case 0xdc: case 0xde: len_bytes = 2; break;
            case 0xdd: case 0xdf: len_bytes = 4; break;
            default: return false;      //  0xc1 is never used
        }
        if (len_bytes) {
            if ((size_t) (r->end - p) < len_bytes)
                return false;
            size_t n = (size_t) s_get_be (p, len_bytes);
            p += len_bytes;
            if (b == 0xdc || b == 0xdd)
                add = n;
            else
            if (b == 0xde || b == 0xdf)
                add = 2 * n;
            else
                skip += n;
        }
        if (skip > (size_t) (r->end - p))
            return false;
        p += skip;
        items += add;
        if (items > (size_t) (r->end - p))
            return false;
    }
    r->p = p;
    return true;
}

static bool
s_read_usage (s_reader_t *r, sl_msg_t *m)
{
    size_t n;
    if (!s_read_map (r, &n))
        return false;
    m->has_usage = true;
    int64_t *u = &m->usage.input;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *key;
        size_t klen;
        if (!s_read_raw (r, false, &key, &klen))
            return false;
        int slot = -1;
        for (int j = 0; j < S_USAGE_COUNT; j++)
            if (klen == strlen (s_usage_keys [j]) && memcmp (key, s_usage_keys [j], klen) == 0)
                slot = j;
        if (slot < 0) {
            if (!s_skip_value (r))
                return false;
            continue;
        }
        int64_t v;
        if (!s_read_ranged (r, -1, INT64_MAX, &v))
            return false;
        u [slot] = v;
    }
    return true;
}

static bool
s_read_field (s_reader_t *r, sl_msg_t *m, const s_field_t *f)
{
    char *p = (char *) m + f->offset;
    int64_t v;
    switch (f->type) {
        case F_U8:
            if (!s_read_ranged (r, 0, UINT8_MAX, &v)) return false;
            *(uint8_t *) p = (uint8_t) v;
            return true;
        case F_U32:
            if (!s_read_ranged (r, 0, UINT32_MAX, &v)) return false;
            *(uint32_t *) p = (uint32_t) v;
            return true;
        case F_U64: {
            bool negative;
            uint64_t u;
            if (!s_read_int (r, &negative, &u) || negative) return false;
            *(uint64_t *) p = u;
            return true;
        }
        case F_I32:
            if (!s_read_ranged (r, INT32_MIN, INT32_MAX, &v)) return false;
            *(int32_t *) p = (int32_t) v;
            return true;
        case F_I64:
            if (!s_read_ranged (r, INT64_MIN, INT64_MAX, &v)) return false;
            *(int64_t *) p = v;
            return true;
        case F_F64: {
            if (r->p < r->end && (*r->p == 0xcb || *r->p == 0xca)) {
                size_t n = *r->p == 0xcb ? 8 : 4;
                if ((size_t) (r->end - r->p) < n + 1)
                    return false;
                uint64_t bits = s_get_be (r->p + 1, n);
                if (n == 8)
                    memcpy (p, &bits, 8);
                else {
                    uint32_t b32 = (uint32_t) bits;
                    float fl;
                    memcpy (&fl, &b32, 4);
                    *(double *) p = fl;
                }
                r->p += n + 1;
                return true;
            }
            if (!s_read_ranged (r, INT64_MIN, INT64_MAX, &v)) return false;
            *(double *) p = (double) v;
            return true;
        }
        case F_STR:
        case F_BIN: {
            const uint8_t *ptr;
            size_t len;
            if (!s_read_raw (r, f->type == F_BIN, &ptr, &len)) return false;
            *(sl_str_t *) p = sl_str_n (len ? (const char *) ptr : "", len);
            return true;
        }
        case F_SID: {
            const uint8_t *ptr;
            size_t len;
            if (!s_read_raw (r, true, &ptr, &len) || len != SL_SID_SIZE) return false;
            memcpy (m->sid, ptr, SL_SID_SIZE);
            return true;
        }
        case F_USAGE:
            return s_read_usage (r, m);
    }
    return false;
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
    const uint8_t *base = data;
    s_reader_t r = { base + *offset, base + size };
    if (size - *offset > SL_MSG_MAX_SIZE)
        r.end = base + *offset + SL_MSG_MAX_SIZE;
    size_t count;
    if (r.p < r.end && ((*r.p & 0xf0) != 0x80 && *r.p != 0xde && *r.p != 0xdf))
        return s_fail (self, size, offset, "message is not a map");
    if (!s_read_map (&r, &count))
        return s_fail (self, size, offset, "truncated or invalid msgpack");

    sl_msg_init (msg, 0);
    msg->version = 0;
    bool seen_sid = false, seen_ep = false, seen_seq = false;
    uint64_t seen [S_WORDS] = { 0 };    //  the fields on the wire
    for (size_t i = 0; i < count; i++) {
        const uint8_t *key;
        size_t klen;
        if (!s_read_raw (&r, false, &key, &klen)) {
            if (r.p < r.end && (*r.p & 0xe0) != 0xa0 && *r.p != 0xd9 && *r.p != 0xda && *r.p != 0xdb)
                return s_fail (self, size, offset, "field name is not a string");
            return s_fail (self, size, offset, "truncated or invalid msgpack");
        }
        const s_field_t *f = s_find_field (self, key, klen);
        if (!f) {
            if (!s_skip_value (&r))     //  unknown fields are ignored
                return s_fail (self, size, offset, "truncated or invalid msgpack");
            continue;
        }
        if (!s_read_field (&r, msg, f))
            return s_fail (self, size, offset, r.p >= r.end ? "truncated or invalid msgpack"
                                                           : "wrong type for a field");
        size_t id = (size_t) (f - s_fields);
        seen [id / 64] |= UINT64_C (1) << (id % 64);
        if (f->type == F_SID)
            seen_sid = true;
        else
        if (f->offset == offsetof (sl_msg_t, epoch))
            seen_ep = true;
        else
        if (f->offset == offsetof (sl_msg_t, seq))
            seen_seq = true;
    }
    if (r.p - (base + *offset) > (ptrdiff_t) SL_MSG_MAX_SIZE)
        return s_fail (self, size, offset, "oversized message");
    *offset = (size_t) (r.p - base);
    if (msg->version != SL_PROTO_VERSION)
        return s_fail (self, size, offset, "unsupported protocol version");
    if (msg->type == 0 || msg->type >= SL_MSG_TYPE_MAX)
        return s_fail (self, size, offset, "unknown message type");
    if (msg->type != SL_MSG_HB && !(seen_sid && seen_ep && seen_seq))
        return s_fail (self, size, offset, "envelope incomplete");
    bool stray;
    const s_field_t *misfit = s_misfit (msg, seen, &stray);
    if (misfit) {
        snprintf (self->why, sizeof self->why, stray ? "%s %s does not carry %s" : "%s %s must carry %s",
                  s_article (msg->type), sl_msg_type_name (msg->type), misfit->key);
        return s_fail (self, size, offset, self->why);
    }
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
