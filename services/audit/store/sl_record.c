/*  sl_record.c - text and latencies as the audit store keeps them (see sl_record.h). */
#include "services/audit/store/sl_record.h"

#include <math.h>
#include <string.h>

#include "common/base/sl_utf8.h"

int
sl_record_latency_bucket (int64_t latency_us)
{
    if (latency_us <= 1)
        return 0;
    return (int) ceil (4.0 * log2 ((double) latency_us));
}

double
sl_record_bucket_bound (int bucket)
{
    return pow (2.0, bucket / 4.0);
}

void
sl_record_clean (sl_buf_t *buf, sl_str_t in, size_t max, sl_str_t *out, bool *cut)
{
    if (cut)
        *cut = false;
    *out = in;
    if (!in.ptr)
        return;
    sl_buf_reset (buf);
    sl_str_t s = in;
    if (!sl_utf8_valid (in.ptr, in.len) || memchr (in.ptr, 0, in.len)) {
        sl_utf8_repair (buf, in.ptr, in.len);
        //  NUL is well-formed UTF-8, but not text PostgreSQL keeps.
        sl_buf_t clean = { 0 };
        for (size_t i = 0; i < buf->len; i++) {
            if (buf->data [i])
                sl_buf_putc (&clean, buf->data [i]);
            else
                sl_buf_puts (&clean, SL_UTF8_REPLACEMENT);
        }
        sl_buf_reset (buf);
        sl_buf_append_str (buf, sl_buf_str (&clean));
        sl_buf_free (&clean);
        s = sl_buf_str (buf);
    }
    if (s.len > max) {
        size_t n = max;
        while (n > 0 && ((unsigned char) s.ptr [n] & 0xC0) == 0x80)
            n--;
        s.len = n;
        if (cut)
            *cut = true;
    }
    *out = s;
}
