/*  misfit.h - a message its type's table refuses (SL_FIELDS_<TYPE>), for
    the tests of what receives one. sl_msg_encode asserts rather than write
    it, so a fitting message is encoded and a field is added to its bytes:
    the encoder opens every message with a map16 header, whose count is
    raised by one, and a map's fields may come in any order. */
#ifndef MISFIT_H
#define MISFIT_H

#include <criterion/criterion.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "proto/sl_msg.h"

//  Append the encoding of msg to out, with a string field key: text that
//  msg's type does not carry (auth, for any type but req).
static inline void
misfit_encode (const sl_msg_t *msg, const char *key, const char *text, sl_buf_t *out)
{
    size_t at = out->len;
    sl_msg_encode (msg, out);
    uint8_t *head = (uint8_t *) out->data + at;
    cr_assert_eq (head [0], 0xde, "the encoder opens with a map16 header");
    unsigned count = ((unsigned) head [1] << 8 | head [2]) + 1;
    head [1] = (uint8_t) (count >> 8);
    head [2] = (uint8_t) count;
    size_t klen = strlen (key), tlen = strlen (text);
    cr_assert (klen < 32 && tlen < 32, "fixstr only");
    uint8_t k = (uint8_t) (0xa0 | klen), t = (uint8_t) (0xa0 | tlen);
    sl_buf_append (out, &k, 1);
    sl_buf_append (out, key, klen);
    sl_buf_append (out, &t, 1);
    sl_buf_append (out, text, tlen);
}

#endif
