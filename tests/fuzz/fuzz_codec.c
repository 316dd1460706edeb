/*  Fuzz target: the protocol codec must survive any bytes (proto/sl_msg). */
#include <stddef.h>
#include <stdint.h>

#include "proto/sl_msg.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    static sl_codec_t *codec;
    if (!codec)
        codec = sl_codec_new ();
    size_t offset = 0;
    sl_msg_t msg;
    sl_buf_t again = { 0 };
    //  Whatever decodes must encode and decode again to the same type.
    while (sl_codec_decode (codec, data, size, &offset, &msg) == 0) {
        sl_buf_reset (&again);
        sl_msg_encode (&msg, &again);
        sl_codec_t *second = sl_codec_new ();
        size_t off2 = 0;
        sl_msg_t copy;
        if (sl_codec_decode (second, again.data, again.len, &off2, &copy) != 0 || copy.type != msg.type)
            __builtin_trap ();
        sl_codec_destroy (&second);
    }
    sl_buf_free (&again);
    return 0;
}
