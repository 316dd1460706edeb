/*  sl_trace.c - W3C trace context and derived span ids (see sl_trace.h). */
#include "common/otel/sl_trace.h"

#include <string.h>
#include <time.h>

#include "common/base/sl_hex.h"

#define S_VERSION_LEN 2
#define S_TRACE_HEX (2 * SL_TRACE_ID_SIZE)
#define S_SPAN_HEX (2 * SL_SPAN_ID_SIZE)
#define S_FLAGS_HEX 2
#define S_INVALID_VERSION 0xff
#define S_KEY_MAX 256                   //  a simple key: a letter and up to 255 more
#define S_TENANT_MAX 241                //  a multi-tenant key's tenant id
#define S_SYSTEM_MAX 14                 //  and its system id
#define S_VALUE_MAX 256
#define S_MIX_GOLDEN 0x9e3779b97f4a7c15ull

static bool
s_zero (const uint8_t *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (bytes [i])
            return false;
    return true;
}

int
sl_trace_parse (sl_str_t header, bool root_ok, sl_trace_ctx_t *out)
{
    const char *p = header.ptr;
    if (!p || header.len < SL_TRACEPARENT_LEN)
        return -1;
    uint8_t version;
    //  Hex in lower case only: upper case is malformed, as W3C says.
    if (sl_hex_read (p, 1, &version, true) || version == S_INVALID_VERSION)
        return -1;
    //  Version 00 has exactly these fields; a later one may add more
    //  after a '-', and is read by the fields 00 has.
    if (version == 0 && header.len != SL_TRACEPARENT_LEN)
        return -1;
    if (header.len > SL_TRACEPARENT_LEN && p [SL_TRACEPARENT_LEN] != '-')
        return -1;
    const char *trace = p + S_VERSION_LEN + 1;
    const char *parent = trace + S_TRACE_HEX + 1;
    const char *flags = parent + S_SPAN_HEX + 1;
    if (p [S_VERSION_LEN] != '-' || trace [S_TRACE_HEX] != '-' || parent [S_SPAN_HEX] != '-')
        return -1;
    sl_trace_ctx_t ctx;
    if (sl_hex_read (trace, SL_TRACE_ID_SIZE, ctx.trace, true)
    ||  sl_hex_read (parent, SL_SPAN_ID_SIZE, ctx.parent, true)
    ||  sl_hex_read (flags, 1, &ctx.flags, true))
        return -1;
    if (s_zero (ctx.trace, SL_TRACE_ID_SIZE) || (!root_ok && s_zero (ctx.parent, SL_SPAN_ID_SIZE)))
        return -1;
    *out = ctx;
    return 0;
}

void
sl_trace_begin (const uint8_t sid [SL_TRACE_ID_SIZE], sl_trace_ctx_t *out)
{
    memset (out, 0, sizeof *out);
    memcpy (out->trace, sid, SL_TRACE_ID_SIZE);
    out->flags = SL_TRACE_SAMPLED;
}

bool
sl_trace_is_root (const sl_trace_ctx_t *self)
{
    return s_zero (self->parent, SL_SPAN_ID_SIZE);
}

static void
s_format (const uint8_t *trace, const uint8_t *span, uint8_t flags, char out [SL_TRACEPARENT_SIZE])
{
    char *p = out;
    *p++ = '0'; *p++ = '0'; *p++ = '-';
    sl_hex_write (p, trace, SL_TRACE_ID_SIZE);
    p += S_TRACE_HEX;
    *p++ = '-';
    sl_hex_write (p, span, SL_SPAN_ID_SIZE);
    p += S_SPAN_HEX;
    *p++ = '-';
    sl_hex_write (p, &flags, 1);
    p += S_FLAGS_HEX;
    *p = 0;
}

void
sl_trace_format (const sl_trace_ctx_t *self, char out [SL_TRACEPARENT_SIZE])
{
    s_format (self->trace, self->parent, self->flags, out);
}

void
sl_trace_child (const sl_trace_ctx_t *self, const uint8_t sid [SL_TRACE_ID_SIZE], char out [SL_TRACEPARENT_SIZE])
{
    uint8_t span [SL_SPAN_ID_SIZE];
    sl_trace_stream_span (sid, span);
    s_format (self->trace, span, self->flags, out);
}

void
sl_trace_accept (const char *traceparent, const char *tracestate, const uint8_t sid [SL_TRACE_ID_SIZE],
                 bool tracing, sl_trace_in_t *out)
{
    memset (out, 0, sizeof *out);
    sl_trace_ctx_t ctx;
    bool client = false;
    if (traceparent) {
        client = sl_trace_parse (sl_str (traceparent), false, &ctx) == 0;
        out->bad_parent = !client;
    }
    if (!client && !tracing)
        return;
    if (!client)
        sl_trace_begin (sid, &ctx);
    out->has_trace = true;
    sl_trace_format (&ctx, out->tc);
    //  A tracestate belongs to the traceparent it came with: never to a
    //  trace sluice began.
    if (client && tracestate) {
        out->keep_state = sl_trace_state_valid (sl_str (tracestate));
        out->bad_state = !out->keep_state;
    }
}

//  --------------------------------------------------------------------------
//  tracestate (W3C Trace Context, "tracestate Header Field Values")

static bool
s_lcalpha (char c)
{
    return c >= 'a' && c <= 'z';
}

static bool
s_keychar (char c)
{
    return s_lcalpha (c) || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '*' || c == '/';
}

//  A key: simple-key, or tenant-id "@" system-id.
static bool
s_key_valid (const char *k, size_t len)
{
    const char *at = memchr (k, '@', len);
    if (!at) {
        if (len == 0 || len > S_KEY_MAX || !s_lcalpha (k [0]))
            return false;
        for (size_t i = 1; i < len; i++)
            if (!s_keychar (k [i]))
                return false;
        return true;
    }
    size_t tenant = (size_t) (at - k), system = len - tenant - 1;
    if (tenant == 0 || tenant > S_TENANT_MAX || system == 0 || system > S_SYSTEM_MAX)
        return false;
    if (!s_lcalpha (k [0]) && !(k [0] >= '0' && k [0] <= '9'))
        return false;
    for (size_t i = 1; i < tenant; i++)
        if (!s_keychar (k [i]))
            return false;
    if (!s_lcalpha (at [1]))
        return false;
    for (size_t i = 2; i <= system; i++)
        if (!s_keychar (at [i]))
            return false;
    return true;
}

//  A value: printable ASCII but ',' and '=', blanks inside but not last.
static bool
s_value_valid (const char *v, size_t len)
{
    if (len == 0 || len > S_VALUE_MAX || v [len - 1] == ' ')
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char) v [i];
        if (c < 0x20 || c > 0x7e || c == ',' || c == '=')
            return false;
    }
    return true;
}

bool
sl_trace_state_valid (sl_str_t tracestate)
{
    if (!tracestate.ptr || tracestate.len > SL_TRACESTATE_MAX)
        return false;
    struct { const char *ptr; size_t len; } keys [SL_TRACESTATE_MEMBERS_MAX];
    size_t members = 0;
    const char *p = tracestate.ptr, *end = p + tracestate.len;
    while (p <= end) {
        const char *comma = memchr (p, ',', (size_t) (end - p));
        const char *stop = comma ? comma : end;
        const char *a = p, *b = stop;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b [-1] == ' ' || b [-1] == '\t'))
            b--;
        if (a < b) {                    //  an empty member is allowed and skipped
            const char *eq = memchr (a, '=', (size_t) (b - a));
            if (!eq || members == SL_TRACESTATE_MEMBERS_MAX)
                return false;
            size_t klen = (size_t) (eq - a);
            if (!s_key_valid (a, klen) || !s_value_valid (eq + 1, (size_t) (b - eq - 1)))
                return false;
            for (size_t i = 0; i < members; i++)
                if (keys [i].len == klen && memcmp (keys [i].ptr, a, klen) == 0)
                    return false;
            keys [members].ptr = a;
            keys [members].len = klen;
            members++;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    return true;
}

//  --------------------------------------------------------------------------
//  Span ids

//  SplitMix64's finalizer: every input bit reaches every output bit.
static uint64_t
s_mix (uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

static uint64_t
s_load (const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = v << 8 | p [i];
    return v;
}

static void
s_store (uint64_t v, uint8_t *p)
{
    for (int i = 7; i >= 0; i--) {
        p [i] = (uint8_t) v;
        v >>= 8;
    }
}

void
sl_trace_stream_span (const uint8_t sid [SL_TRACE_ID_SIZE], uint8_t out [SL_SPAN_ID_SIZE])
{
    uint64_t v = s_load (sid);
    if (!v)
        v = s_load (sid + SL_SPAN_ID_SIZE);
    if (!v)
        v = 1;                          //  an all-zero stream id: still a valid span id
    s_store (v, out);
}

void
sl_trace_verdict_span (const uint8_t sid [SL_TRACE_ID_SIZE], uint64_t n, uint8_t out [SL_SPAN_ID_SIZE])
{
    uint8_t stream [SL_SPAN_ID_SIZE];
    sl_trace_stream_span (sid, stream);
    uint64_t own = s_load (stream);
    uint64_t v = s_mix (s_load (sid) ^ s_mix (s_load (sid + SL_SPAN_ID_SIZE) ^ (n + 1) * S_MIX_GOLDEN));
    if (v == 0 || v == own)
        v = own + 1 ? own + 1 : 2;
    s_store (v, out);
}

int64_t
sl_trace_now_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_REALTIME, &ts);
    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}
