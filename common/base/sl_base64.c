/*  sl_base64.c - base64 to bytes, a table lookup per character. */
#include "common/base/sl_base64.h"

#define X 0xFF                          //  not a base64 character

//  Each character's six bits; X for any other.
static const uint8_t s_value [256] = {
      X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
      X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
      X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,  62,   X,   X,   X,  63,
     52,  53,  54,  55,  56,  57,  58,  59,  60,  61,   X,   X,   X,   X,   X,   X,
      X,   0,   1,   2,   3,   4,   5,   6,   7,   8,   9,  10,  11,  12,  13,  14,
     15,  16,  17,  18,  19,  20,  21,  22,  23,  24,  25,   X,   X,   X,   X,   X,
      X,  26,  27,  28,  29,  30,  31,  32,  33,  34,  35,  36,  37,  38,  39,  40,
     41,  42,  43,  44,  45,  46,  47,  48,  49,  50,  51,   X,   X,   X,   X,   X,
      X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
      X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
      X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
      X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
      X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
      X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
      X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
      X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,   X,
};

#undef X

//  Four characters' 24 bits, or a value with bit 31 set when one of them
//  is not base64.
static uint32_t
s_quad (const uint8_t *p)
{
    uint32_t a = s_value [p [0]], b = s_value [p [1]], c = s_value [p [2]], d = s_value [p [3]];
    if ((a | b | c | d) & 0x80)
        return 0x80000000u;
    return a << 18 | b << 12 | c << 6 | d;
}

int
sl_base64_decode (const char *in, size_t len, uint8_t *out, size_t *out_len)
{
    *out_len = 0;
    if (len % 4)
        return -1;
    if (len == 0)
        return 0;
    const uint8_t *p = (const uint8_t *) in;
    uint8_t *w = out;
    //  Every quad but the last has no padding.
    for (size_t at = 0; at + 4 < len; at += 4, p += 4) {
        uint32_t v = s_quad (p);
        if (v & 0x80000000u)
            return -1;
        w [0] = (uint8_t) (v >> 16);
        w [1] = (uint8_t) (v >> 8);
        w [2] = (uint8_t) v;
        w += 3;
    }
    //  The last: "xxxx", "xxx=" or "xx==", the bits past the bytes zero.
    uint8_t last [4] = { p [0], p [1], p [2], p [3] };
    size_t pad = last [3] == '=' ? last [2] == '=' ? 2 : 1 : 0;
    for (size_t k = 4 - pad; k < 4; k++)
        last [k] = 'A';
    uint32_t v = s_quad (last);
    if (v & 0x80000000u || (pad == 2 && (v & 0xFFFF)) || (pad == 1 && (v & 0xFF)))
        return -1;
    w [0] = (uint8_t) (v >> 16);
    if (pad < 2)
        w [1] = (uint8_t) (v >> 8);
    if (pad < 1)
        w [2] = (uint8_t) v;
    w += 3 - pad;
    *out_len = (size_t) (w - out);
    return 0;
}
