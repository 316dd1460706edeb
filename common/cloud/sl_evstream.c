/*  sl_evstream.c - AWS's binary event stream: the incremental decoder and
    the encoder (see sl_evstream.h for the framing). */
#include "common/cloud/sl_evstream.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CRC_CLMUL 1                     //  carry-less multiplication, when the CPU has it
#endif

#define CRC32_POLY 0xEDB88320u          //  gzip's CRC32, reflected
#define NAME_MAX_LEN 255                //  a header name's length is one byte
#define VALUE_MAX_LEN 65535             //  a bytes or string value's length is two
#define UUID_LEN 16
#define HEADERS_CACHE 256               //  a headers block up to this size is remembered

struct _sl_evstream_t {
    size_t max;                         //  the largest message accepted
    sl_buf_t held;                      //  the start of a message not yet whole
    sl_evstream_header_t *headers;      //  the headers of the message being reported
    size_t headers_cap;
    const char *error;                  //  why decoding stopped, "" while it goes on
    //  The last headers block read, when small: a stream's messages mostly
    //  carry the same headers, byte for byte (Bedrock's chunk events), and
    //  the same bytes need no second reading. The header table and these
    //  names point into the copy.
    bool cached;
    uint8_t cache [HEADERS_CACHE];
    size_t cached_len;
    sl_evstream_msg_t cached_msg;
    size_t cached_count;
};

//  The CRC tables, made on first use (the process is single-threaded):
//  slicing by eight, table k the CRC of a byte followed by k zero bytes,
//  so eight bytes cost eight lookups and no loop-carried byte chain. They
//  serve a CPU without carry-less multiplication, and the few bytes left
//  over where it has it.
#define CRC_SLICES 8
#define CRC_BLOCK 16                    //  bytes folded at a time by carry-less multiplication
static uint32_t s_crc_table [CRC_SLICES][256];
static bool s_crc_ready;
static bool s_crc_clmul;                //  the CPU has PCLMULQDQ

static void
s_crc_init (void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? CRC32_POLY ^ (c >> 1) : c >> 1;
        s_crc_table [0][n] = c;
    }
    for (int k = 1; k < CRC_SLICES; k++)
        for (uint32_t n = 0; n < 256; n++) {
            uint32_t c = s_crc_table [k - 1][n];
            s_crc_table [k][n] = (c >> 8) ^ s_crc_table [0][c & 0xff];
        }
#ifdef CRC_CLMUL
    s_crc_clmul = __builtin_cpu_supports ("pclmul");
#endif
    s_crc_ready = true;
}

//  Eight bytes into the CRC register, by the tables. Bytes are read one
//  by one: the same on either byte order.
static inline uint32_t
s_crc_slice (uint32_t crc, const uint8_t *p)
{
    crc ^= (uint32_t) p [0] | (uint32_t) p [1] << 8 | (uint32_t) p [2] << 16 | (uint32_t) p [3] << 24;
    return s_crc_table [7][crc & 0xff] ^ s_crc_table [6][(crc >> 8) & 0xff]
         ^ s_crc_table [5][(crc >> 16) & 0xff] ^ s_crc_table [4][crc >> 24]
         ^ s_crc_table [3][p [4]] ^ s_crc_table [2][p [5]]
         ^ s_crc_table [1][p [6]] ^ s_crc_table [0][p [7]];
}

#ifdef CRC_CLMUL
//  The CRC over blocks of 16 bytes by carry-less multiplication (Intel's
//  "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ", bit-
//  reflected): each block folds into the next with x^160 and x^96 modulo
//  the polynomial, the last 128 bits come down to 64 and then 32, and a
//  Barrett reduction leaves the remainder. About a third of an instruction
//  a byte where the table takes four (the CRC over every message was most
//  of the event stream's decode cost). crc is the running register (not
//  inverted).
#define CLMUL_X160 0x1751997d0ull       //  x^(128+32) mod P, reflected, shifted left by one
#define CLMUL_X96 0x0ccaa009eull        //  x^(128-32) mod P, the same
#define CLMUL_X64 0x163cd6124ull        //  x^64 mod P, the same
#define CLMUL_POLY 0x1db710641ull       //  P, reflected
#define CLMUL_MU 0x1f7011641ull         //  x^64 / P, reflected: Barrett's constant

__attribute__ ((target ("pclmul")))
static uint32_t
s_crc_fold (uint32_t crc, const uint8_t *p, size_t blocks)
{
    const __m128i fold = _mm_set_epi64x ((long long) CLMUL_X96, (long long) CLMUL_X160);
    const __m128i low32 = _mm_set_epi32 (0, 0, 0, -1);
    __m128i x = _mm_xor_si128 (_mm_loadu_si128 ((const __m128i *) p), _mm_cvtsi32_si128 ((int) crc));
    for (size_t i = 1; i < blocks; i++) {
        p += CRC_BLOCK;
        __m128i low = _mm_clmulepi64_si128 (x, fold, 0x00);
        __m128i high = _mm_clmulepi64_si128 (x, fold, 0x11);
        x = _mm_xor_si128 (_mm_xor_si128 (low, high), _mm_loadu_si128 ((const __m128i *) p));
    }
    //  128 bits to 64, then to 64 with 32 zero bits appended.
    x = _mm_xor_si128 (_mm_srli_si128 (x, 8), _mm_clmulepi64_si128 (x, fold, 0x10));
    __m128i t = _mm_clmulepi64_si128 (_mm_and_si128 (x, low32), _mm_set_epi64x (0, (long long) CLMUL_X64), 0x00);
    x = _mm_xor_si128 (_mm_srli_si128 (x, 4), t);
    //  Barrett: the remainder of the 64 bits left.
    const __m128i barrett = _mm_set_epi64x ((long long) CLMUL_MU, (long long) CLMUL_POLY);
    t = _mm_clmulepi64_si128 (_mm_and_si128 (x, low32), barrett, 0x10);
    t = _mm_clmulepi64_si128 (_mm_and_si128 (t, low32), barrett, 0x00);
    x = _mm_xor_si128 (x, t);
    return (uint32_t) _mm_cvtsi128_si32 (_mm_srli_si128 (x, 4));
}
#endif

int
sl_evstream_crc32_clmul (int on)
{
    if (!s_crc_ready)
        s_crc_init ();
    bool has = false;
#ifdef CRC_CLMUL
    has = __builtin_cpu_supports ("pclmul");
#endif
    if (on && !has)
        return -1;
    s_crc_clmul = on != 0;
    return 0;
}

uint32_t
sl_evstream_crc32 (uint32_t crc, const void *data, size_t size)
{
    if (!s_crc_ready)
        s_crc_init ();
    const uint8_t *p = data;
    crc = ~crc;
#ifdef CRC_CLMUL
    if (s_crc_clmul && size >= CRC_BLOCK) {
        size_t blocks = size / CRC_BLOCK;
        crc = s_crc_fold (crc, p, blocks);
        p += blocks * CRC_BLOCK;
        size -= blocks * CRC_BLOCK;
    }
#endif
    for (; size >= CRC_SLICES; size -= CRC_SLICES, p += CRC_SLICES)
        crc = s_crc_slice (crc, p);
    for (; size > 0; size--, p++)
        crc = s_crc_table [0][(crc ^ *p) & 0xff] ^ (crc >> 8);
    return ~crc;
}

static uint32_t
s_get32 (const uint8_t *p)
{
    return (uint32_t) p [0] << 24 | (uint32_t) p [1] << 16 | (uint32_t) p [2] << 8 | p [3];
}

static uint64_t
s_get64 (const uint8_t *p)
{
    return (uint64_t) s_get32 (p) << 32 | s_get32 (p + 4);
}

static void
s_put32 (uint8_t *p, uint32_t v)
{
    p [0] = (uint8_t) (v >> 24);
    p [1] = (uint8_t) (v >> 16);
    p [2] = (uint8_t) (v >> 8);
    p [3] = (uint8_t) v;
}

sl_evstream_t *
sl_evstream_new (size_t max_message)
{
    sl_evstream_t *self = sl_xcalloc (1, sizeof *self);
    self->max = max_message ? max_message : SL_EVSTREAM_DEFAULT_MAX;
    if (self->max < SL_EVSTREAM_MIN_MESSAGE)
        self->max = SL_EVSTREAM_MIN_MESSAGE;
    self->error = "";
    return self;
}

void
sl_evstream_destroy (sl_evstream_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_evstream_t *self = *self_p;
    sl_buf_free (&self->held);
    free (self->headers);
    free (self);
    *self_p = NULL;
}

void
sl_evstream_reset (sl_evstream_t *self)
{
    sl_buf_reset (&self->held);
    self->error = "";
    self->cached = false;
}

const char *
sl_evstream_error (sl_evstream_t *self)
{
    return self->error;
}

size_t
sl_evstream_pending (sl_evstream_t *self)
{
    return self->held.len;
}

//  Check a prelude (12 bytes); the message's total length, or 0 with the
//  error set.
static uint32_t
s_check_prelude (sl_evstream_t *self, const uint8_t *p)
{
    uint32_t total = s_get32 (p);
    uint32_t headers = s_get32 (p + 4);
    if (!s_crc_ready)
        s_crc_init ();
    if (~s_crc_slice (~0u, p) != s_get32 (p + 8))     //  its first eight bytes: one step of the tables
        self->error = "event stream: the prelude's CRC does not match";
    else
    if (total < SL_EVSTREAM_MIN_MESSAGE)
        self->error = "event stream: a message shorter than its prelude and CRC";
    else
    if (total > self->max)
        self->error = "event stream: a message over the size limit";
    else
    if (headers > SL_EVSTREAM_MAX_HEADERS)
        self->error = "event stream: headers over the size limit";
    else
    if (headers > total - SL_EVSTREAM_MIN_MESSAGE)
        self->error = "event stream: headers longer than the message";
    else
        return total;
    return 0;
}

//  Room for one more header in the table.
static sl_evstream_header_t *
s_next_header (sl_evstream_t *self, size_t count)
{
    if (count == self->headers_cap) {
        self->headers_cap = self->headers_cap ? self->headers_cap * 2 : 8;
        self->headers = sl_xrealloc (self->headers, self->headers_cap * sizeof *self->headers);
    }
    return &self->headers [count];
}

//  Read one header's value of type at p (avail bytes left); its length,
//  or -1 when it runs past the block or the type is unknown.
static long
s_read_value (sl_evstream_header_t *h, const uint8_t *p, size_t avail)
{
    static const size_t fixed [SL_EVH_TYPES] = {
        [SL_EVH_TRUE] = 0, [SL_EVH_FALSE] = 0, [SL_EVH_BYTE] = 1, [SL_EVH_SHORT] = 2,
        [SL_EVH_INT] = 4, [SL_EVH_LONG] = 8, [SL_EVH_BYTES] = 2, [SL_EVH_STRING] = 2,
        [SL_EVH_TIMESTAMP] = 8, [SL_EVH_UUID] = UUID_LEN
    };
    if (h->type >= SL_EVH_TYPES || avail < fixed [h->type])
        return -1;
    h->i = 0;
    h->bytes = SL_STR_NULL;
    switch (h->type) {
        case SL_EVH_TRUE:
            h->i = 1;
            return 0;
        case SL_EVH_FALSE:
            return 0;
        case SL_EVH_BYTE:
            h->i = (int8_t) p [0];
            return 1;
        case SL_EVH_SHORT:
            h->i = (int16_t) ((uint16_t) p [0] << 8 | p [1]);
            return 2;
        case SL_EVH_INT:
            h->i = (int32_t) s_get32 (p);
            return 4;
        case SL_EVH_LONG:
        case SL_EVH_TIMESTAMP:
            h->i = (int64_t) s_get64 (p);
            return 8;
        case SL_EVH_UUID:
            h->bytes = sl_str_n (p, UUID_LEN);
            return UUID_LEN;
        case SL_EVH_BYTES:
        case SL_EVH_STRING: {
            size_t len = (size_t) p [0] << 8 | p [1];
            if (avail - 2 < len)
                return -1;
            h->bytes = sl_str_n (p + 2, len);
            return (long) (2 + len);
        }
        default:
            return -1;
    }
}

//  Where a string header that names what the message is goes, by its
//  name's length first (every name shares the leading ':'); NULL for any
//  other header.
static sl_str_t *
s_slot (sl_evstream_msg_t *msg, const sl_str_t name)
{
#define IS(lit) (memcmp (name.ptr, lit, sizeof lit - 1) == 0)
    switch (name.len) {
        case sizeof ":event-type" - 1:          //  and ":error-code"
            return IS (":event-type") ? &msg->event_type : IS (":error-code") ? &msg->error_code : NULL;
        case sizeof ":message-type" - 1:        //  and ":content-type"
            return IS (":message-type") ? &msg->message_type : IS (":content-type") ? &msg->content_type : NULL;
        case sizeof ":error-message" - 1:
            return IS (":error-message") ? &msg->error_message : NULL;
        case sizeof ":exception-type" - 1:
            return IS (":exception-type") ? &msg->exception_type : NULL;
        default:
            return NULL;
    }
#undef IS
}

static void
s_name_it (sl_evstream_msg_t *msg, const sl_evstream_header_t *h)
{
    if (h->type != SL_EVH_STRING)
        return;
    sl_str_t *slot = s_slot (msg, h->name);
    if (slot && !sl_str_present (*slot))
        *slot = h->bytes;               //  the first one counts
}

//  Read the headers block of len bytes at h into the header table and
//  the names msg has; their count at *count. 0, or -1 with the error set.
static int
s_read_headers (sl_evstream_t *self, const uint8_t *h, size_t len, sl_evstream_msg_t *msg, size_t *count)
{
    const uint8_t *end = h + len;
    *count = 0;
    while (h < end) {
        size_t name_len = h [0];
        if (name_len == 0) {
            self->error = "event stream: a header with an empty name";
            return -1;
        }
        //  The name and the type byte.
        if ((size_t) (end - h) < 1 + name_len + 1) {
            self->error = "event stream: a header runs past the headers";
            return -1;
        }
        sl_evstream_header_t *header = s_next_header (self, *count);
        header->name = sl_str_n (h + 1, name_len);
        header->type = (sl_evh_type_t) h [1 + name_len];
        h += 1 + name_len + 1;
        if (header->type >= SL_EVH_TYPES) {
            self->error = "event stream: a header of an unknown type";
            return -1;
        }
        long used = s_read_value (header, h, (size_t) (end - h));
        if (used < 0) {
            self->error = "event stream: a header's value runs past the headers";
            return -1;
        }
        h += used;
        s_name_it (msg, header);
        (*count)++;
    }
    return 0;
}

//  Decode one whole message (total bytes at p, its prelude checked) and
//  report it. 0, -1 (error set) or the callback's value.
static int
s_decode (sl_evstream_t *self, const uint8_t *p, uint32_t total, sl_evstream_msg_fn *fn, void *arg)
{
    //  The message's CRC covers the prelude too; the prelude's own CRC,
    //  checked, is the CRC of its first eight bytes: go on from there.
    if (sl_evstream_crc32 (s_get32 (p + 8), p + 8, total - SL_EVSTREAM_PRELUDE) != s_get32 (p + total - 4)) {
        self->error = "event stream: the message's CRC does not match";
        return -1;
    }
    uint32_t headers_len = s_get32 (p + 4);
    const uint8_t *h = p + SL_EVSTREAM_PRELUDE;
    sl_evstream_msg_t msg;
    size_t count;
    if (self->cached && headers_len == self->cached_len && memcmp (h, self->cache, headers_len) == 0) {
        //  The same bytes as the last block read: the same headers (read
        //  from the copy, which stays as long as the table does).
        msg = self->cached_msg;
        count = self->cached_count;
    }
    else {
        self->cached = false;
        const uint8_t *block = h;
        if (headers_len <= sizeof self->cache)
            block = memcpy (self->cache, h, headers_len);
        memset (&msg, 0, sizeof msg);
        if (s_read_headers (self, block, headers_len, &msg, &count))
            return -1;
        if (block == self->cache) {
            self->cached = true;
            self->cached_len = headers_len;
            self->cached_msg = msg;
            self->cached_count = count;
        }
    }
    msg.payload = sl_str_n (h + headers_len, total - SL_EVSTREAM_PRELUDE - headers_len - 4);
    msg.headers = self->headers;
    msg.header_count = count;
    return fn (arg, &msg);
}

int
sl_evstream_feed (sl_evstream_t *self, const void *data, size_t size,
                  sl_evstream_msg_fn *fn, void *arg)
{
    if (*self->error)
        return -1;
    const uint8_t *p = data;
    while (size > 0) {
        //  A message begun in an earlier read: complete it in the buffer.
        if (self->held.len > 0 || size < SL_EVSTREAM_PRELUDE) {
            size_t take;
            if (self->held.len < SL_EVSTREAM_PRELUDE) {
                take = SL_EVSTREAM_PRELUDE - self->held.len;
                take = take < size ? take : size;
                sl_buf_append (&self->held, p, take);
                p += take;
                size -= take;
                if (self->held.len < SL_EVSTREAM_PRELUDE)
                    return 0;
            }
            uint32_t total = s_check_prelude (self, (const uint8_t *) self->held.data);
            if (!total)
                return -1;
            take = total - self->held.len;
            take = take < size ? take : size;
            sl_buf_append (&self->held, p, take);
            p += take;
            size -= take;
            if (self->held.len < total)
                return 0;
            int rc = s_decode (self, (const uint8_t *) self->held.data, total, fn, arg);
            sl_buf_reset (&self->held);
            if (rc)
                return rc;
            continue;
        }
        //  Whole messages straight from the caller's bytes, uncopied.
        uint32_t total = s_check_prelude (self, p);
        if (!total)
            return -1;
        if (total > size) {
            sl_buf_append (&self->held, p, size);
            return 0;
        }
        int rc = s_decode (self, p, total, fn, arg);
        if (rc)
            return rc;
        p += total;
        size -= total;
    }
    return 0;
}

int
sl_evstream_finish (sl_evstream_t *self)
{
    if (*self->error)
        return -1;
    if (self->held.len > 0) {
        self->error = "event stream: the stream ended inside a message";
        return -1;
    }
    return 0;
}

//  The bytes one header takes on the wire; 0 when it cannot be framed.
static size_t
s_header_size (const sl_evstream_header_t *h)
{
    if (!h->name.ptr || h->name.len == 0 || h->name.len > NAME_MAX_LEN)
        return 0;
    size_t size = 1 + h->name.len + 1;
    switch (h->type) {
        case SL_EVH_TRUE:
        case SL_EVH_FALSE:
            return size;
        case SL_EVH_BYTE:
            return size + 1;
        case SL_EVH_SHORT:
            return size + 2;
        case SL_EVH_INT:
            return size + 4;
        case SL_EVH_LONG:
        case SL_EVH_TIMESTAMP:
            return size + 8;
        case SL_EVH_UUID:
            return h->bytes.len == UUID_LEN && h->bytes.ptr ? size + UUID_LEN : 0;
        case SL_EVH_BYTES:
        case SL_EVH_STRING:
            return h->bytes.len <= VALUE_MAX_LEN ? size + 2 + h->bytes.len : 0;
        default:
            return 0;
    }
}

static uint8_t *
s_put_header (uint8_t *w, const sl_evstream_header_t *h)
{
    *w++ = (uint8_t) h->name.len;
    memcpy (w, h->name.ptr, h->name.len);
    w += h->name.len;
    *w++ = (uint8_t) h->type;
    uint64_t v = (uint64_t) h->i;
    switch (h->type) {
        case SL_EVH_BYTE:
            *w++ = (uint8_t) v;
            break;
        case SL_EVH_SHORT:
            *w++ = (uint8_t) (v >> 8);
            *w++ = (uint8_t) v;
            break;
        case SL_EVH_INT:
            s_put32 (w, (uint32_t) v);
            w += 4;
            break;
        case SL_EVH_LONG:
        case SL_EVH_TIMESTAMP:
            s_put32 (w, (uint32_t) (v >> 32));
            s_put32 (w + 4, (uint32_t) v);
            w += 8;
            break;
        case SL_EVH_UUID:
            memcpy (w, h->bytes.ptr, UUID_LEN);
            w += UUID_LEN;
            break;
        case SL_EVH_BYTES:
        case SL_EVH_STRING:
            *w++ = (uint8_t) (h->bytes.len >> 8);
            *w++ = (uint8_t) h->bytes.len;
            if (h->bytes.len)
                memcpy (w, h->bytes.ptr, h->bytes.len);
            w += h->bytes.len;
            break;
        default:
            break;
    }
    return w;
}

int
sl_evstream_encode (sl_buf_t *out, const sl_evstream_header_t *headers, size_t count,
                    sl_str_t payload)
{
    size_t headers_len = 0;
    for (size_t i = 0; i < count; i++) {
        size_t one = s_header_size (&headers [i]);
        if (!one)
            return -1;
        headers_len += one;
        if (headers_len > SL_EVSTREAM_MAX_HEADERS)
            return -1;
    }
    if (payload.len > SL_EVSTREAM_DEFAULT_MAX)
        return -1;
    size_t total = SL_EVSTREAM_MIN_MESSAGE + headers_len + payload.len;
    if (total > SL_EVSTREAM_DEFAULT_MAX)
        return -1;
    uint8_t *start = (uint8_t *) sl_buf_reserve (out, total), *w = start;
    s_put32 (w, (uint32_t) total);
    s_put32 (w + 4, (uint32_t) headers_len);
    s_put32 (w + 8, sl_evstream_crc32 (0, w, 8));
    w += SL_EVSTREAM_PRELUDE;
    for (size_t i = 0; i < count; i++)
        w = s_put_header (w, &headers [i]);
    if (payload.len)
        memcpy (w, payload.ptr, payload.len);
    w += payload.len;
    s_put32 (w, sl_evstream_crc32 (0, start, total - 4));
    out->len += total;
    return 0;
}

static int
s_encode_typed (sl_buf_t *out, const char *type_header, const char *type,
                const char *message_type, sl_str_t payload)
{
    sl_evstream_header_t headers [] = {
        { .name = sl_str (type_header), .type = SL_EVH_STRING, .bytes = sl_str (type) },
        { .name = SL_STR_LIT (":content-type"), .type = SL_EVH_STRING,
          .bytes = SL_STR_LIT ("application/json") },
        { .name = SL_STR_LIT (":message-type"), .type = SL_EVH_STRING, .bytes = sl_str (message_type) },
    };
    if (!type)
        return -1;
    return sl_evstream_encode (out, headers, sizeof headers / sizeof headers [0], payload);
}

int
sl_evstream_encode_event (sl_buf_t *out, const char *event_type, sl_str_t payload)
{
    return s_encode_typed (out, ":event-type", event_type, "event", payload);
}

int
sl_evstream_encode_exception (sl_buf_t *out, const char *exception_type, sl_str_t payload)
{
    return s_encode_typed (out, ":exception-type", exception_type, "exception", payload);
}
