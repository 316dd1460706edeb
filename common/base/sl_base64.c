/*  sl_base64.c - base64 to bytes: thirty-two characters a step where the
    CPU has AVX2, sixteen where it has SSSE3, a table lookup per character
    otherwise (and for the last quad, which may be padded). */
#include "common/base/sl_base64.h"

#include <stdbool.h>
#include <string.h>

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
#define SIMD_BYTES 12
#define LAST_QUAD 4                     //  left to the scalar code: it may be padded

//  Sixteen characters at a time (Wojciech Mula's vector decoding): the
//  high and low nibble of each character index two bit sets whose
//  intersection is empty exactly for the 64 characters of the alphabet;
//  the high nibble (and '/', its only odd one) picks what to add to a
//  character to make its six bits; two multiply-adds pack the sixes into
//  bytes and a shuffle orders them. The twelve bytes of the characters
//  at p, written at w; -1 when one of them is outside the alphabet.
__attribute__ ((target ("ssse3"), always_inline))
static inline int
s_block (const uint8_t *p, uint8_t *w)
{
    //  Bit 0x10: never valid (a high nibble of 0, 1, 8 to 15); 0x01: of
    //  0x20-0x2F all but '+' and '/'; 0x02: 0x3A-0x3F; 0x04: '@' and '`';
    //  0x08: 0x5B-0x5F and 0x7B-0x7F.
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
    __m128i c = _mm_loadu_si128 ((const __m128i *) p);
    __m128i high = _mm_and_si128 (_mm_srli_epi32 (c, 4), nibble);
    __m128i low = _mm_and_si128 (c, nibble);
    __m128i bad = _mm_and_si128 (_mm_shuffle_epi8 (by_low, low), _mm_shuffle_epi8 (by_high, high));
    if (_mm_movemask_epi8 (_mm_cmpeq_epi8 (bad, _mm_setzero_si128 ())) != 0xFFFF)
        return -1;
    __m128i add = _mm_shuffle_epi8 (shift, _mm_add_epi8 (_mm_cmpeq_epi8 (c, slash), high));
    __m128i v = _mm_madd_epi16 (_mm_maddubs_epi16 (_mm_add_epi8 (c, add), pairs), quads);
    v = _mm_shuffle_epi8 (v, order);
    //  Exactly twelve bytes: out has no room past the decoded bytes.
    _mm_storel_epi64 ((__m128i *) w, v);
    uint32_t rest = (uint32_t) _mm_cvtsi128_si32 (_mm_srli_si128 (v, 8));
    memcpy (w + 8, &rest, sizeof rest);
    return 0;
}

//  The same, thirty-two characters at a time (AVX2: each 128-bit lane as
//  above), 24 bytes out.
#define WIDE_BLOCK 32
#define WIDE_BYTES 24

__attribute__ ((target ("avx2"), always_inline))
static inline int
s_wide_block (const uint8_t *p, uint8_t *w)
{
    const __m256i by_low = _mm256_setr_epi8 (0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                                             0x11, 0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B, 0x1A,
                                             0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                                             0x11, 0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B, 0x1A);
    const __m256i by_high = _mm256_setr_epi8 (0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08,
                                              0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
                                              0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08,
                                              0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10);
    const __m256i shift = _mm256_setr_epi8 (0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0,
                                            0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m256i nibble = _mm256_set1_epi8 (0x0F), slash = _mm256_set1_epi8 ('/');
    const __m256i pairs = _mm256_set1_epi32 (0x01400140);
    const __m256i quads = _mm256_set1_epi32 (0x00011000);
    const __m256i order = _mm256_setr_epi8 (2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1,
                                            2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
    const __m256i lanes = _mm256_setr_epi32 (0, 1, 2, 4, 5, 6, 7, 7);      //  the 24 bytes together
    __m256i c = _mm256_loadu_si256 ((const __m256i *) p);
    __m256i high = _mm256_and_si256 (_mm256_srli_epi32 (c, 4), nibble);
    __m256i low = _mm256_and_si256 (c, nibble);
    __m256i bad = _mm256_and_si256 (_mm256_shuffle_epi8 (by_low, low), _mm256_shuffle_epi8 (by_high, high));
    if (!_mm256_testz_si256 (bad, bad))
        return -1;
    __m256i add = _mm256_shuffle_epi8 (shift, _mm256_add_epi8 (_mm256_cmpeq_epi8 (c, slash), high));
    __m256i v = _mm256_madd_epi16 (_mm256_maddubs_epi16 (_mm256_add_epi8 (c, add), pairs), quads);
    v = _mm256_permutevar8x32_epi32 (_mm256_shuffle_epi8 (v, order), lanes);
    _mm_storeu_si128 ((__m128i *) w, _mm256_castsi256_si128 (v));
    _mm_storel_epi64 ((__m128i *) (w + 16), _mm256_extracti128_si256 (v, 1));
    return 0;
}

//  Every character but the last quad from *in on, by blocks: the last
//  block overlaps the one before it when the count is not a multiple of
//  sixteen (the same characters decode to the same bytes). 0, or -1 at a
//  character outside the alphabet (the scalar loop would refuse it too).
//  The body is the same for both instruction sets; each is compiled for
//  its own.
#define DECODE_BLOCKS(wide)                                                         \
    if (end - in < SIMD_BLOCK + LAST_QUAD)                                          \
        return 0;                                                                   \
    const uint8_t *at = in;                                                         \
    uint8_t *to = out;                                                              \
    if (wide)                                                                       \
        for (; end - at >= WIDE_BLOCK + LAST_QUAD; at += WIDE_BLOCK, to += WIDE_BYTES) \
            if (s_wide_block (at, to))                                              \
                return -1;                                                          \
    for (; end - at >= SIMD_BLOCK + LAST_QUAD; at += SIMD_BLOCK, to += SIMD_BYTES)  \
        if (s_block (at, to))                                                       \
            return -1;                                                              \
    if (end - at > LAST_QUAD) {                                                     \
        at = end - LAST_QUAD - SIMD_BLOCK;                                          \
        to = out + (size_t) (at - in) / 4 * 3;                                      \
        if (s_block (at, to))                                                       \
            return -1;                                                              \
        at += SIMD_BLOCK;                                                           \
        to += SIMD_BYTES;                                                           \
    }                                                                               \
    *p = at;                                                                        \
    *w = to;                                                                        \
    return 0;

__attribute__ ((target ("ssse3")))
static int
s_decode_simd (const uint8_t *in, const uint8_t *end, uint8_t *out, const uint8_t **p, uint8_t **w)
{
    DECODE_BLOCKS (false)
}

__attribute__ ((target ("avx2")))
static int
s_decode_wide (const uint8_t *in, const uint8_t *end, uint8_t *out, const uint8_t **p, uint8_t **w)
{
    DECODE_BLOCKS (true)
}
#undef DECODE_BLOCKS
#endif

static sl_base64_code_t s_code = SL_BASE64_BEST;    //  BEST until first asked

int
sl_base64_use (sl_base64_code_t code)
{
    sl_base64_code_t best = SL_BASE64_SCALAR;
#ifdef BASE64_SIMD
    best = __builtin_cpu_supports ("avx2") ? SL_BASE64_AVX2
         : __builtin_cpu_supports ("ssse3") ? SL_BASE64_SSSE3 : SL_BASE64_SCALAR;
#endif
    if (code == SL_BASE64_BEST)
        code = best;
    if (code > best)
        return -1;
    s_code = code;
    return 0;
}

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
    if (s_code == SL_BASE64_BEST)
        sl_base64_use (SL_BASE64_BEST);
    if (s_code == SL_BASE64_AVX2 ? s_decode_wide (p, end, out, &p, &w)
      : s_code == SL_BASE64_SSSE3 ? s_decode_simd (p, end, out, &p, &w) : 0)
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
