/*  Fuzz target: AWS's event stream decoder (common/cloud/sl_evstream)
    must survive any bytes, give the same messages whether the bytes come
    in one read or split at any point, and every message it accepts must
    be what the encoder writes from its headers and payload, byte for byte
    (so the decoder reads nothing the framing does not say). The CRC is
    the same by carry-less multiplication and by the tables alone. The
    first input byte picks the split and the size limit. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/cloud/sl_evstream.h"

//  Each message re-encoded: the concatenation must equal the bytes fed.
static int
s_collect (void *arg, const sl_evstream_msg_t *msg)
{
    sl_buf_t *out = arg;
    if (sl_evstream_encode (out, msg->headers, msg->header_count, msg->payload))
        __builtin_trap ();              //  accepted, so it can be framed
    return 0;
}

static int
s_decode (const uint8_t *data, size_t size, size_t max, size_t step, sl_buf_t *out)
{
    sl_evstream_t *d = sl_evstream_new (max);
    int rc = 0;
    for (size_t at = 0; at < size && rc == 0; at += step)
        rc = sl_evstream_feed (d, data + at, size - at < step ? size - at : step, s_collect, out);
    if (rc == 0)
        rc = sl_evstream_finish (d);
    if (rc && !*sl_evstream_error (d))
        __builtin_trap ();              //  every failure says why
    sl_evstream_destroy (&d);
    return rc;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = 1 + data [0] % 13;
    size_t max = data [0] & 0x80 ? 256 : 0;     //  a tight limit, or the default
    data++;
    size--;
    sl_buf_t whole = { 0 }, split = { 0 };
    int a = s_decode (data, size, max, size ? size : 1, &whole);
    int b = s_decode (data, size, max, step, &split);
    if (a != b)
        __builtin_trap ();
    //  What was accepted is the stream's prefix, unchanged.
    if (whole.len > size || (whole.len && memcmp (whole.data, data, whole.len)))
        __builtin_trap ();
    if (whole.len != split.len || (whole.len && memcmp (whole.data, split.data, whole.len)))
        __builtin_trap ();
    if (a == 0 && whole.len != size)
        __builtin_trap ();
    sl_buf_free (&whole);
    sl_buf_free (&split);
    if (sl_evstream_crc32_clmul (1) == 0) {
        uint32_t fast = sl_evstream_crc32 (0, data, size);
        sl_evstream_crc32_clmul (0);
        if (sl_evstream_crc32 (0, data, size) != fast)
            __builtin_trap ();
        sl_evstream_crc32_clmul (1);
    }
    return 0;
}
