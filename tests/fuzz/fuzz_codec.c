/*  Fuzz target: the protocol codec must survive any bytes (proto/sl_msg).
    Whatever it takes is a message of its type's table: encoded again
    (which asserts that it fits: we never send what we refuse), it decodes
    to the same type, and encodes to the same bytes once more. Seeds: one
    message of each type with every field it may carry (seeds/codec). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto/sl_msg.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    static sl_codec_t *codec, *second;
    if (!codec) {
        codec = sl_codec_new ();
        second = sl_codec_new ();
    }
    size_t offset = 0;
    sl_msg_t msg;
    sl_buf_t again = { 0 }, third = { 0 };
    while (sl_codec_decode (codec, data, size, &offset, &msg) == 0) {
        sl_buf_reset (&again);
        sl_msg_encode (&msg, &again);
        size_t off2 = 0;
        sl_msg_t copy;
        if (sl_codec_decode (second, again.data, again.len, &off2, &copy) != 0 || copy.type != msg.type
        ||  off2 != again.len)
            __builtin_trap ();
        sl_buf_reset (&third);
        sl_msg_encode (&copy, &third);
        if (third.len != again.len || memcmp (third.data, again.data, again.len) != 0)
            __builtin_trap ();
    }
    sl_buf_free (&again);
    sl_buf_free (&third);
    return 0;
}
