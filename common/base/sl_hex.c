/*  sl_hex.c - bytes as hex digits and back (sl_hex.h). */
#include "common/base/sl_hex.h"

void
sl_hex_write (char *out, const uint8_t *bytes, size_t n)
{
    static const char digits [] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out [2 * i] = digits [bytes [i] >> 4];
        out [2 * i + 1] = digits [bytes [i] & 0x0f];
    }
}

int
sl_hex_digit (int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

int
sl_hex_read (const char *in, size_t n, uint8_t *out, bool lower_only)
{
    for (size_t i = 0; i < 2 * n; i++) {
        int v = sl_hex_digit ((unsigned char) in [i]);
        if (v < 0 || (lower_only && in [i] >= 'A' && in [i] <= 'F'))
            return -1;
        if (i % 2 == 0)
            out [i / 2] = (uint8_t) (v << 4);
        else
            out [i / 2] |= (uint8_t) v;
    }
    return 0;
}
