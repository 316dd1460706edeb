/*  Fuzz target: the SSE parser (common/http/sl_sse) must survive any
    bytes, and must give the same events whether the bytes come in one read
    or split at any point. The first input byte picks the split and the
    size limit, so the limits are exercised too. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/http/sl_sse.h"

static int
s_collect (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    sl_buf_t *out = arg;
    //  Three slices, length-prefixed so nothing can be confused.
    sl_buf_printf (out, "%zu:", type.len);
    sl_buf_append_str (out, type);
    sl_buf_printf (out, "%zu:", data.len);
    sl_buf_append_str (out, data);
    sl_buf_printf (out, "%zu:", id.len);
    sl_buf_append_str (out, id);
    return 0;
}

static int
s_parse (const uint8_t *data, size_t size, size_t max, size_t step, sl_buf_t *out)
{
    sl_sse_t *sse = sl_sse_new (max);
    int rc = 0;
    for (size_t at = 0; at < size && rc == 0; at += step)
        rc = sl_sse_feed (sse, (const char *) data + at, size - at < step ? size - at : step,
                          s_collect, out);
    if (rc == 0)
        rc = sl_sse_finish (sse, s_collect, out);
    sl_sse_destroy (&sse);
    return rc;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = 1 + data [0] % 7;
    size_t max = data [0] & 0x80 ? 64 : 0;   //  a tight limit, or the default
    data++;
    size--;
    sl_buf_t whole = { 0 }, split = { 0 };
    int a = s_parse (data, size, max, size ? size : 1, &whole);
    int b = s_parse (data, size, max, step, &split);
    //  Over a limit, splitting may change how much was dispatched before
    //  the error; otherwise the events must be identical.
    if (a == 0 && b == 0
    &&  (whole.len != split.len || (whole.len && memcmp (whole.data, split.data, whole.len))))
        __builtin_trap ();
    if ((a == 0) != (b == 0))
        __builtin_trap ();
    sl_buf_free (&whole);
    sl_buf_free (&split);
    return 0;
}
