/*  sl_base64.c - base64 to bytes: sixteen characters a step where the
    CPU has SSSE3, a table lookup per character otherwise. */
#include "common/base/sl_base64.h"

#include <stdbool.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define BASE64_SIMD 1
#endif

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

#ifdef BASE64_SIMD
#define SIMD_BLOCK 16                   //  characters a step, 12 bytes out
#define SIMD_SLACK 8                    //  characters left after a step: its 16-byte store stays in bounds

//  Sixteen characters at a time (Wojciech Mula's vector decoding): the
//  high and low nibble of each character index two bit sets whose
//  intersection is empty exactly for the 64 characters of the alphabet;
//  the high nibble (and '/', its only odd one) picks what to add to a
//  character to make its six bits; two multiply-adds pack the sixes into
//  bytes and a shuffle orders them. Decodes from *in while at least
//  SIMD_BLOCK + SIMD_SLACK characters remain before end; 0, or -1 at a
//  block with a character outside the alphabet (the scalar loop would
//  refuse it too: padding is only in the last four, never reached here).
__attribute__ ((target ("ssse3")))
static int
s_decode_simd (const uint8_t **in, const uint8_t *end, uint8_t **out)
{
    //  Bit 0x10: never valid (a high nibble of 0, 1, 8 to 15); 0x01: of
    //  "+/" only 0x2B, 0x2F; 0x02: digits 0x30-0x39; 0x04: letters
    //  0x41-0x4F and 0x61-0x6F; 0x08: 0x50-0x5A and 0x70-0x7A.
    const __m128i by_low = _mm_setr_epi8 (0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                                          0x11, 0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B, 0x1A);
    const __m128i by_high = _mm_setr_epi8 (0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08,
                                           0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10);
    //  Added by high nibble: '+' (+19) and '/' (+16, one index lower),
    //  digits (+4), 'A'-'Z' (-65), 'a'-'z' (-71).
    const __m128i shift = _mm_setr_epi8 (0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m128i nibble = _mm_set1_epi8 (0x0F), slash = _mm_set1_epi8 ('/');
    const __m128i pairs = _mm_set1_epi32 (0x01400140);      //  a << 6 | b
    const __m128i quads = _mm_set1_epi32 (0x00011000);      //  ab << 12 | cd
    const __m128i order = _mm_setr_epi8 (2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    const uint8_t *p = *in;
    uint8_t *w = *out;
    for (; end - p >= SIMD_BLOCK + SIMD_SLACK; p += SIMD_BLOCK, w += 12) {
        __m128i c = _mm_loadu_si128 ((const __m128i *) p);
        __m128i high = _mm_and_si128 (_mm_srli_epi32 (c, 4), nibble);
        __m128i low = _mm_and_si128 (c, nibble);
        __m128i bad = _mm_and_si128 (_mm_shuffle_epi8 (by_low, low), _mm_shuffle_epi8 (by_high, high));
        if (_mm_movemask_epi8 (_mm_cmpeq_epi8 (bad, _mm_setzero_si128 ())) != 0xFFFF)
            return -1;
        __m128i add = _mm_shuffle_epi8 (shift, _mm_add_epi8 (_mm_cmpeq_epi8 (c, slash), high));
        __m128i v = _mm_madd_epi16 (_mm_maddubs_epi16 (_mm_add_epi8 (c, add), pairs), quads);
        //  Twelve bytes and four zeros: the next step, or the last quad's
        //  bytes after it (at least four), overwrite them.
        _mm_storeu_si128 ((__m128i *) w, _mm_shuffle_epi8 (v, order));
    }
    *in = p;
    *out = w;
    return 0;
}
#endif

int
sl_base64_decode (const char *in, size_t len, uint8_t *out, size_t *out_len)
{
    *out_len = 0;
    if (len % 4)
        return -1;
    if (len == 0)
        return 0;
    const uint8_t *p = (const uint8_t *) in, *end = p + len;
    uint8_t *w = out;
#ifdef BASE64_SIMD
    static int simd = -1;
    if (simd < 0)
        simd = __builtin_cpu_supports ("ssse3") ? 1 : 0;
    if (simd && s_decode_simd (&p, end, &w))
        return -1;
#endif
    //  Every quad but the last has no padding.
    for (; end - p > 4; p += 4) {
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
