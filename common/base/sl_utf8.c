/*  sl_utf8.c - UTF-8 checking and repair (see sl_utf8.h).

    Text is mostly ASCII: runs of it are skipped eight bytes at a time, and
    only a byte with its high bit set (or, in JSON, a backslash) is looked
    at closely.
*/
#include "common/base/sl_utf8.h"

#include <stdint.h>
#include <string.h>

#define S_ONES 0x0101010101010101ull
#define S_HIGHS 0x8080808080808080ull

//  Does the word at p hold a byte that is not plain ASCII, or (json) a
//  backslash?
static inline bool
s_word_special (const char *p, bool json)
{
    uint64_t v;
    memcpy (&v, p, sizeof v);
    if (v & S_HIGHS)
        return true;
    if (!json)
        return false;
    uint64_t x = v ^ (S_ONES * (uint64_t) '\\');
    return ((x - S_ONES) & ~x & S_HIGHS) != 0;
}

//  Where, from i, the next byte worth a look is: skips ASCII (and, for
//  json, stops at a backslash).
static inline size_t
s_skip_plain (const char *s, size_t n, size_t i, bool json)
{
    while (i + 8 <= n && !s_word_special (s + i, json))
        i += 8;
    while (i < n && (unsigned char) s [i] < 0x80 && !(json && s [i] == '\\'))
        i++;
    return i;
}

size_t
sl_utf8_seq (const char *s, size_t n, size_t *skip)
{
    const unsigned char *p = (const unsigned char *) s;
    unsigned char c = p [0];
    if (c < 0x80)
        return 1;
    //  Table 3-7 of the Unicode standard: the continuation bytes after
    //  these leads, the first one within [lo, hi].
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        need = 1;
    else
    if (c == 0xE0) {
        need = 2;
        lo = 0xA0;                      //  no overlong forms
    }
    else
    if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
        need = 2;
    else
    if (c == 0xED) {
        need = 2;
        hi = 0x9F;                      //  no surrogates
    }
    else
    if (c == 0xF0) {
        need = 3;
        lo = 0x90;                      //  no overlong forms
    }
    else
    if (c >= 0xF1 && c <= 0xF3)
        need = 3;
    else
    if (c == 0xF4) {
        need = 3;
        hi = 0x8F;                      //  nothing above U+10FFFF
    }
    else {
        *skip = 1;                      //  80..C1, F5..FF never start one
        return 0;
    }
    size_t i = 1;
    for (; i <= need && i < n; i++) {
        if (p [i] < lo || p [i] > hi)
            break;
        lo = 0x80;
        hi = 0xBF;
    }
    if (i == need + 1)
        return i;
    *skip = i;                          //  the lead and the continuations that fit
    return 0;
}

bool
sl_utf8_valid (const char *s, size_t n)
{
    size_t i = 0, skip;
    while ((i = s_skip_plain (s, n, i, false)) < n) {
        size_t len = sl_utf8_seq (s + i, n - i, &skip);
        if (!len)
            return false;
        i += len;
    }
    return true;
}

void
sl_utf8_repair (sl_buf_t *out, const char *s, size_t n)
{
    if (n == 0)
        return;
    size_t i = 0, run = 0, skip;
    while ((i = s_skip_plain (s, n, i, false)) < n) {
        size_t len = sl_utf8_seq (s + i, n - i, &skip);
        if (len) {
            i += len;
            continue;
        }
        sl_buf_append (out, s + run, i - run);
        sl_buf_append (out, SL_UTF8_REPLACEMENT, sizeof SL_UTF8_REPLACEMENT - 1);
        i += skip;
        run = i;
    }
    sl_buf_append (out, s + run, n - run);
}

//  The value of the four hex digits at p, or -1.
static int
s_hex4 (const char *p)
{
    int v = 0;
    for (int k = 0; k < 4; k++) {
        char c = p [k];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= c - '0';
        else
        if (c >= 'a' && c <= 'f')
            v |= c - 'a' + 10;
        else
        if (c >= 'A' && c <= 'F')
            v |= c - 'A' + 10;
        else
            return -1;
    }
    return v;
}

//  The escape starting at s [i] (a backslash): how many bytes it covers,
//  and whether it is a lone surrogate (*lone). A surrogate pair counts as
//  one escape of 12 bytes. A backslash before a byte that is not ASCII
//  covers itself only, and \u before anything but four hex digits covers
//  those two, so that what follows is checked as UTF-8.
static size_t
s_escape (const char *s, size_t n, size_t i, bool *lone)
{
    *lone = false;
    if (i + 1 >= n || (unsigned char) s [i + 1] >= 0x80)
        return 1;
    if (s [i + 1] != 'u' || i + 6 > n)
        return 2;
    int cp = s_hex4 (s + i + 2);
    if (cp < 0)
        return 2;                       //  not an escape: what follows is checked as it is
    if (cp < 0xD800 || cp > 0xDFFF)
        return 6;
    if (cp <= 0xDBFF && i + 12 <= n && s [i + 6] == '\\' && s [i + 7] == 'u') {
        int low = s_hex4 (s + i + 8);
        if (low >= 0xDC00 && low <= 0xDFFF)
            return 12;
    }
    *lone = true;
    return 6;
}

bool
sl_utf8_json_clean (const char *s, size_t n)
{
    size_t i = 0, skip;
    bool lone;
    while ((i = s_skip_plain (s, n, i, true)) < n) {
        if (s [i] == '\\') {
            i += s_escape (s, n, i, &lone);
            if (lone)
                return false;
            continue;
        }
        size_t len = sl_utf8_seq (s + i, n - i, &skip);
        if (!len)
            return false;
        i += len;
    }
    return true;
}

void
sl_utf8_repair_json (sl_buf_t *out, const char *s, size_t n)
{
    if (n == 0)
        return;
    size_t i = 0, run = 0, skip;
    bool lone;
    while ((i = s_skip_plain (s, n, i, true)) < n) {
        const char *with;
        size_t width, covered;
        if (s [i] == '\\') {
            covered = s_escape (s, n, i, &lone);
            if (!lone) {
                i += covered;
                continue;
            }
            with = SL_UTF8_REPLACEMENT_ESCAPE;
            width = sizeof SL_UTF8_REPLACEMENT_ESCAPE - 1;
        }
        else {
            size_t len = sl_utf8_seq (s + i, n - i, &skip);
            if (len) {
                i += len;
                continue;
            }
            covered = skip;
            with = SL_UTF8_REPLACEMENT;
            width = sizeof SL_UTF8_REPLACEMENT - 1;
        }
        sl_buf_append (out, s + run, i - run);
        sl_buf_append (out, with, width);
        i += covered;
        run = i;
    }
    sl_buf_append (out, s + run, n - run);
}
