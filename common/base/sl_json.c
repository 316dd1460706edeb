/*  sl_json.c - zero-allocation JSON scanner and writer (see sl_json.h).

    The validating skip is iterative: an explicit bit stack remembers whether
    each open container is an object or an array, so deep input costs no C
    stack and the bound is a constant.
*/
#include "common/base/sl_json.h"

#include "common/base/sl_utf8.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline const char *
s_ws (const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

//  Where, among the 8 bytes at p, the first quote, backslash or control
//  character (< 0x20) is: 0-7, or 8 when there is none (the common case
//  inside a string, skipped a word at a time). Bit tricks on one 64-bit
//  word: a byte flagged may be a false positive only above a true one, so
//  the lowest flagged byte is always right.
static inline int
s_special8 (const char *p)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t v;
    memcpy (&v, p, sizeof v);
    uint64_t quote = v ^ (ones * '"'), slash = v ^ (ones * '\\');
    uint64_t hits = (((quote - ones) & ~quote) | ((slash - ones) & ~slash) | ((v - ones * 0x20) & ~v)) & highs;
    if (!hits)
        return 8;
#if defined (__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return __builtin_ctzll (hits) >> 3;
#else
    return 0;                           //  the bytes one by one from here
#endif
}

//  p points at the opening quote; returns the byte after the closing quote.
static const char *
s_skip_string (const char *p, const char *end)
{
    p++;
    while (p < end) {
        if (end - p >= 8) {
            int k = s_special8 (p);
            p += k;
            if (k == 8)
                continue;
        }
        unsigned char c = (unsigned char) *p;
        if (c == '"')
            return p + 1;
        if (c < 0x20)
            return NULL;                //  raw control characters are illegal
        if (c == '\\') {
            if (p + 1 >= end)
                return NULL;
            char e = p [1];
            if (e == 'u') {
                if (p + 6 > end)
                    return NULL;
                for (int i = 2; i < 6; i++) {
                    char h = p [i];
                    if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f')
                       || (h >= 'A' && h <= 'F')))
                        return NULL;
                }
                p += 6;
                continue;
            }
            if (!strchr ("\"\\/bfnrt", e) || e == 0)
                return NULL;
            p += 2;
            continue;
        }
        p++;
    }
    return NULL;
}

static const char *
s_skip_number (const char *p, const char *end)
{
    if (p < end && *p == '-')
        p++;
    if (p >= end)
        return NULL;
    if (*p == '0')
        p++;
    else
    if (*p >= '1' && *p <= '9')
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    else
        return NULL;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9')
            return NULL;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        if (p >= end || *p < '0' || *p > '9')
            return NULL;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    }
    return p;
}

static const char *
s_skip_literal (const char *p, const char *end, const char *lit, size_t n)
{
    if ((size_t) (end - p) < n || memcmp (p, lit, n) != 0)
        return NULL;
    return p + n;
}

const char *
sl_json_skip (const char *p, const char *end)
{
    uint64_t stack [SL_JSON_MAX_DEPTH / 64];    //  bit set: open object
    int depth = 0;

value:
    p = s_ws (p, end);
    if (p >= end)
        return NULL;
    switch (*p) {
        case '{':
        case '[':
            if (depth == SL_JSON_MAX_DEPTH)
                return NULL;
            if (*p == '{')
                stack [depth / 64] |= (uint64_t) 1 << (depth % 64);
            else
                stack [depth / 64] &= ~((uint64_t) 1 << (depth % 64));
            depth++;
            p = s_ws (p + 1, end);
            if (p < end && (*p == '}' || *p == ']')) {
                bool is_object = (stack [(depth - 1) / 64] >> ((depth - 1) % 64)) & 1;
                if ((*p == '}') != is_object)
                    return NULL;
                depth--;
                p++;
                goto after_value;
            }
            if (stack [(depth - 1) / 64] >> ((depth - 1) % 64) & 1)
                goto key;
            goto value;
        case '"':
            p = s_skip_string (p, end);
            break;
        case 't':
            p = s_skip_literal (p, end, "true", 4);
            break;
        case 'f':
            p = s_skip_literal (p, end, "false", 5);
            break;
        case 'n':
            p = s_skip_literal (p, end, "null", 4);
            break;
        default:
            p = s_skip_number (p, end);
            break;
    }
    if (!p)
        return NULL;

after_value:
    if (depth == 0)
        return p;
    p = s_ws (p, end);
    if (p >= end)
        return NULL;
    {
        bool is_object = (stack [(depth - 1) / 64] >> ((depth - 1) % 64)) & 1;
        if (*p == ',') {
            p++;
            if (is_object)
                goto key;
            goto value;
        }
        if ((is_object && *p == '}') || (!is_object && *p == ']')) {
            depth--;
            p++;
            goto after_value;
        }
        return NULL;
    }

key:
    p = s_ws (p, end);
    if (p >= end || *p != '"')
        return NULL;
    p = s_skip_string (p, end);
    if (!p)
        return NULL;
    p = s_ws (p, end);
    if (p >= end || *p != ':')
        return NULL;
    p++;
    goto value;
}

//  sl_json_skip's walk, counting as it goes (a copy rather than a flag on
//  the hot scanner, which decoders call for every value of every chunk).
int
sl_json_stats (sl_str_t s, sl_json_stats_t *st)
{
    memset (st, 0, sizeof *st);
    if (!s.ptr)
        return -2;
    const char *start = s.ptr, *p = s.ptr, *end = s.ptr + s.len, *q;
    uint64_t stack [SL_JSON_MAX_DEPTH / 64];    //  bit set: open object
    int depth = 0;

value:
    p = s_ws (p, end);
    if (p >= end)
        goto bad;
    if (depth > 0 && !((stack [(depth - 1) / 64] >> ((depth - 1) % 64)) & 1))
        st->elements++;
    switch (*p) {
        case '{':
        case '[':
            if (depth == SL_JSON_MAX_DEPTH) {
                st->too_deep = true;
                goto bad;
            }
            if (*p == '{') {
                st->objects++;
                stack [depth / 64] |= (uint64_t) 1 << (depth % 64);
            }
            else {
                st->arrays++;
                stack [depth / 64] &= ~((uint64_t) 1 << (depth % 64));
            }
            depth++;
            if ((size_t) depth > st->depth)
                st->depth = (size_t) depth;
            p = s_ws (p + 1, end);
            if (p < end && (*p == '}' || *p == ']')) {
                bool is_object = (stack [(depth - 1) / 64] >> ((depth - 1) % 64)) & 1;
                if ((*p == '}') != is_object)
                    goto bad;
                depth--;
                p++;
                goto after_value;
            }
            if (stack [(depth - 1) / 64] >> ((depth - 1) % 64) & 1)
                goto key;
            goto value;
        case '"':
            q = s_skip_string (p, end);
            if (q) {
                size_t len = (size_t) (q - p) - 2;
                st->strings++;
                st->string_bytes += len;
                if (len > st->longest)
                    st->longest = len;
            }
            break;
        case 't':
            q = s_skip_literal (p, end, "true", 4);
            st->literals++;
            break;
        case 'f':
            q = s_skip_literal (p, end, "false", 5);
            st->literals++;
            break;
        case 'n':
            q = s_skip_literal (p, end, "null", 4);
            st->literals++;
            break;
        default:
            q = s_skip_number (p, end);
            st->numbers++;
            break;
    }
    if (!q)
        goto bad;
    p = q;

after_value:
    if (depth == 0) {
        if (s_ws (p, end) != end)
            goto bad;
        return 0;
    }
    p = s_ws (p, end);
    if (p >= end)
        goto bad;
    {
        bool is_object = (stack [(depth - 1) / 64] >> ((depth - 1) % 64)) & 1;
        if (*p == ',') {
            p++;
            if (is_object)
                goto key;
            goto value;
        }
        if ((is_object && *p == '}') || (!is_object && *p == ']')) {
            depth--;
            p++;
            goto after_value;
        }
        goto bad;
    }

key:
    p = s_ws (p, end);
    if (p >= end || *p != '"')
        goto bad;
    q = s_skip_string (p, end);
    if (!q)
        goto bad;
    st->members++;
    st->key_bytes += (size_t) (q - p) - 2;
    if ((size_t) (q - p) - 2 > st->longest)
        st->longest = (size_t) (q - p) - 2;
    p = s_ws (q, end);
    if (p >= end || *p != ':')
        goto bad;
    p++;
    goto value;

bad:
    st->error_at = (size_t) ((p < end ? p : end) - start);
    return -2;
}

bool
sl_json_valid (sl_str_t s)
{
    if (!s.ptr)
        return false;
    const char *end = s.ptr + s.len;
    const char *p = sl_json_skip (s.ptr, end);
    return p && s_ws (p, end) == end;
}

sl_str_t
sl_json_trim (sl_str_t s)
{
    if (!s.ptr)
        return s;
    const char *p = s_ws (s.ptr, s.ptr + s.len);
    const char *e = s.ptr + s.len;
    while (e > p && (e [-1] == ' ' || e [-1] == '\n' || e [-1] == '\r' || e [-1] == '\t'))
        e--;
    return sl_str_n (p, (size_t) (e - p));
}

sl_json_type_t
sl_json_type (sl_str_t s)
{
    if (!s.ptr)
        return SL_JSON_BAD;
    const char *p = s_ws (s.ptr, s.ptr + s.len);
    if (p >= s.ptr + s.len)
        return SL_JSON_BAD;
    switch (*p) {
        case '{': return SL_JSON_OBJECT;
        case '[': return SL_JSON_ARRAY;
        case '"': return SL_JSON_STRING;
        case 't': return SL_JSON_TRUE;
        case 'f': return SL_JSON_FALSE;
        case 'n': return SL_JSON_NULL;
        default:
            return (*p == '-' || (*p >= '0' && *p <= '9')) ? SL_JSON_NUMBER : SL_JSON_BAD;
    }
}

static int
s_iter_start (sl_json_iter_t *it, sl_str_t s, char open, char close)
{
    if (!s.ptr)
        return -2;
    const char *end = s.ptr + s.len;
    const char *p = s_ws (s.ptr, end);
    if (p >= end || *p != open)
        return -2;
    it->p = p + 1;
    it->end = end;
    it->first = true;
    it->close = close;
    return 0;
}

int
sl_json_object (sl_json_iter_t *it, sl_str_t s)
{
    return s_iter_start (it, s, '{', '}');
}

int
sl_json_array (sl_json_iter_t *it, sl_str_t s)
{
    return s_iter_start (it, s, '[', ']');
}

//  Position the iterator on the next item; 1 more to read, 0 end, -2 bad.
static int
s_iter_advance (sl_json_iter_t *it)
{
    const char *p = s_ws (it->p, it->end);
    if (p >= it->end)
        return -2;
    if (*p == it->close) {
        it->p = p + 1;
        it->end = p;                    //  further calls keep returning 0
        return 0;
    }
    if (!it->first) {
        if (*p != ',')
            return -2;
        p = s_ws (p + 1, it->end);
    }
    it->first = false;
    it->p = p;
    return 1;
}

int
sl_json_next_member (sl_json_iter_t *it, sl_str_t *key, sl_str_t *value)
{
    if (it->p > it->end)
        return 0;
    int rc = s_iter_advance (it);
    if (rc <= 0)
        return rc;
    const char *p = it->p;
    if (p >= it->end || *p != '"')
        return -2;
    const char *kend = s_skip_string (p, it->end);
    if (!kend)
        return -2;
    *key = sl_str_n (p + 1, (size_t) (kend - p - 2));
    p = s_ws (kend, it->end);
    if (p >= it->end || *p != ':')
        return -2;
    p = s_ws (p + 1, it->end);
    const char *vend = sl_json_skip (p, it->end);
    if (!vend)
        return -2;
    *value = sl_str_n (p, (size_t) (vend - p));
    it->p = vend;
    return 1;
}

int
sl_json_next_elem (sl_json_iter_t *it, sl_str_t *value)
{
    if (it->p > it->end)
        return 0;
    int rc = s_iter_advance (it);
    if (rc <= 0)
        return rc;
    const char *vend = sl_json_skip (it->p, it->end);
    if (!vend)
        return -2;
    *value = sl_str_n (it->p, (size_t) (vend - it->p));
    it->p = vend;
    return 1;
}

bool
sl_json_key_eq (sl_str_t raw_key, const char *key)
{
    size_t n = strlen (key);
    //  An escape makes the raw key longer than what it decodes to: a raw
    //  key as long as the name equals it byte for byte or not at all, and
    //  a shorter one never does.
    if (raw_key.len == n)
        return memcmp (raw_key.ptr, key, n) == 0;
    if (raw_key.len < n || !memchr (raw_key.ptr, '\\', raw_key.len))
        return false;
    //  Rare: an escaped key. Decode and compare.
    sl_buf_t tmp = { 0 };
    sl_buf_putc (&tmp, '"');
    sl_buf_append (&tmp, raw_key.ptr, raw_key.len);
    sl_buf_putc (&tmp, '"');
    sl_buf_t dec = { 0 };
    bool eq = sl_json_unescape (sl_buf_str (&tmp), &dec) == 0
           && dec.len == n && memcmp (dec.data, key, n) == 0;
    sl_buf_free (&tmp);
    sl_buf_free (&dec);
    return eq;
}

int
sl_json_find (sl_str_t object, const char *key, sl_str_t *value)
{
    sl_json_iter_t it;
    if (sl_json_object (&it, object))
        return -2;
    sl_str_t k, v;
    int rc;
    while ((rc = sl_json_next_member (&it, &k, &v)) == 1)
        if (sl_json_key_eq (k, key)) {
            *value = v;
            return 1;
        }
    return rc;
}

static int
s_hex4 (const char *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p [i];
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

static void
s_put_utf8 (sl_buf_t *out, uint32_t cp)
{
    char b [4];
    size_t n;
    if (cp < 0x80) {
        b [0] = (char) cp;
        n = 1;
    }
    else
    if (cp < 0x800) {
        b [0] = (char) (0xC0 | (cp >> 6));
        b [1] = (char) (0x80 | (cp & 0x3F));
        n = 2;
    }
    else
    if (cp < 0x10000) {
        b [0] = (char) (0xE0 | (cp >> 12));
        b [1] = (char) (0x80 | ((cp >> 6) & 0x3F));
        b [2] = (char) (0x80 | (cp & 0x3F));
        n = 3;
    }
    else {
        b [0] = (char) (0xF0 | (cp >> 18));
        b [1] = (char) (0x80 | ((cp >> 12) & 0x3F));
        b [2] = (char) (0x80 | ((cp >> 6) & 0x3F));
        b [3] = (char) (0x80 | (cp & 0x3F));
        n = 4;
    }
    sl_buf_append (out, b, n);
}

int
sl_json_unescape (sl_str_t value, sl_buf_t *out)
{
    sl_str_t s = sl_json_trim (value);
    if (!s.ptr || s.len < 2 || s.ptr [0] != '"')
        return -2;
    const char *end = s.ptr + s.len;
    if (s_skip_string (s.ptr, end) != end)
        return -2;
    const char *p = s.ptr + 1;
    const char *stop = end - 1;
    sl_buf_reserve (out, s.len);
    while (p < stop) {
        const char *run = p;
        while (p < stop && *p != '\\')
            p++;
        sl_buf_append (out, run, (size_t) (p - run));
        if (p >= stop)
            break;
        char e = p [1];
        p += 2;
        switch (e) {
            case 'b': sl_buf_putc (out, '\b'); break;
            case 'f': sl_buf_putc (out, '\f'); break;
            case 'n': sl_buf_putc (out, '\n'); break;
            case 'r': sl_buf_putc (out, '\r'); break;
            case 't': sl_buf_putc (out, '\t'); break;
            case 'u': {
                uint32_t cp = (uint32_t) s_hex4 (p);
                p += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    //  High surrogate: pair it with a following low one.
                    if (p + 6 <= stop && p [0] == '\\' && p [1] == 'u') {
                        int lo = s_hex4 (p + 2);
                        if (lo >= 0xDC00 && lo <= 0xDFFF) {
                            cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t) lo - 0xDC00);
                            p += 6;
                        }
                        else
                            cp = 0xFFFD;
                    }
                    else
                        cp = 0xFFFD;
                }
                else
                if (cp >= 0xDC00 && cp <= 0xDFFF)
                    cp = 0xFFFD;        //  lone low surrogate
                s_put_utf8 (out, cp);
                break;
            }
            default:                    //  " \ /
                sl_buf_putc (out, e);
                break;
        }
    }
    return 0;
}

int
sl_json_str (sl_str_t value, sl_buf_t *scratch, sl_str_t *out)
{
    sl_str_t s = sl_json_trim (value);
    if (!s.ptr || s.len < 2 || s.ptr [0] != '"' || s.ptr [s.len - 1] != '"')
        return -2;
    if (!memchr (s.ptr, '\\', s.len)) {
        if (s_skip_string (s.ptr, s.ptr + s.len) != s.ptr + s.len)
            return -2;
        *out = sl_str_n (s.ptr + 1, s.len - 2);
        return 0;
    }
    size_t start = scratch->len;
    if (sl_json_unescape (s, scratch))
        return -2;
    *out = sl_str_n (scratch->data + start, scratch->len - start);
    return 0;
}

int
sl_json_i64 (sl_str_t value, int64_t *out)
{
    sl_str_t s = sl_json_trim (value);
    char tmp [32];
    if (!s.ptr || s.len == 0 || s.len >= sizeof tmp)
        return -2;
    if (s_skip_number (s.ptr, s.ptr + s.len) != s.ptr + s.len)
        return -2;
    memcpy (tmp, s.ptr, s.len);
    tmp [s.len] = 0;
    if (strpbrk (tmp, ".eE")) {
        //  Integral values written as floats ("3.0", "1e3") are accepted.
        double d = strtod (tmp, NULL);
        if (d != floor (d) || d < -9.2e18 || d > 9.2e18)
            return -2;
        *out = (int64_t) d;
        return 0;
    }
    errno = 0;
    long long v = strtoll (tmp, NULL, 10);
    if (errno)
        return -2;
    *out = (int64_t) v;
    return 0;
}

int
sl_json_f64 (sl_str_t value, double *out)
{
    sl_str_t s = sl_json_trim (value);
    char tmp [64];
    if (!s.ptr || s.len == 0 || s.len >= sizeof tmp)
        return -2;
    if (s_skip_number (s.ptr, s.ptr + s.len) != s.ptr + s.len)
        return -2;
    memcpy (tmp, s.ptr, s.len);
    tmp [s.len] = 0;
    *out = strtod (tmp, NULL);
    return 0;
}

int
sl_json_bool (sl_str_t value, bool *out)
{
    sl_str_t s = sl_json_trim (value);
    if (sl_str_eq (s, "true"))
        *out = true;
    else
    if (sl_str_eq (s, "false"))
        *out = false;
    else
        return -2;
    return 0;
}

bool
sl_json_is_null (sl_str_t value)
{
    return sl_str_eq (sl_json_trim (value), "null");
}

//  Characters that need escaping: the quote, the backslash and controls.
//  Bytes that are not well-formed UTF-8 are replaced by U+FFFD here, the
//  one place every string passes through on its way into JSON: whatever
//  an upstream sent, a client or a tap gets well-formed text.
static const char s_hexdig [] = "0123456789abcdef";

void
sl_json_put_escaped (sl_buf_t *out, const char *s, size_t n)
{
    //  Worst case every byte becomes \u00XX (6 bytes); a replacement
    //  character (3 bytes) stands for at least one byte.
    char *w = sl_buf_reserve (out, n * 6);
    char *start = w;
    size_t i = 0;
    while (i < n) {
        //  Plain ASCII needs nothing: eight bytes at a time.
        if (n - i >= 8) {
            uint64_t v;
            memcpy (&v, s + i, sizeof v);
            if (!(v & 0x8080808080808080ull) && s_special8 (s + i) == 8) {
                memcpy (w, s + i, 8);
                w += 8;
                i += 8;
                continue;
            }
        }
        unsigned char c = (unsigned char) s [i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            *w++ = (char) c;
            i++;
            continue;
        }
        if (c >= 0x80) {
            size_t skip, len = sl_utf8_seq (s + i, n - i, &skip);
            if (len) {
                memcpy (w, s + i, len);
                w += len;
                i += len;
            }
            else {
                memcpy (w, SL_UTF8_REPLACEMENT, sizeof SL_UTF8_REPLACEMENT - 1);
                w += sizeof SL_UTF8_REPLACEMENT - 1;
                i += skip;
            }
            continue;
        }
        i++;
        *w++ = '\\';
        switch (c) {
            case '"':  *w++ = '"'; break;
            case '\\': *w++ = '\\'; break;
            case '\n': *w++ = 'n'; break;
            case '\r': *w++ = 'r'; break;
            case '\t': *w++ = 't'; break;
            case '\b': *w++ = 'b'; break;
            case '\f': *w++ = 'f'; break;
            default:
                *w++ = 'u';
                *w++ = '0';
                *w++ = '0';
                *w++ = s_hexdig [c >> 4];
                *w++ = s_hexdig [c & 15];
        }
    }
    out->len += (size_t) (w - start);
}

void
sl_json_put_str (sl_buf_t *out, const char *s, size_t n)
{
    sl_buf_putc (out, '"');
    sl_json_put_escaped (out, s, n);
    sl_buf_putc (out, '"');
}

//  --------------------------------------------------------------------------
//  Closing a cut-off text

//  The closing bytes of the containers open[0..depth), innermost first.
static void
s_put_closers (sl_buf_t *out, const char *open, int depth)
{
    for (int d = depth; d > 0; d--)
        sl_buf_putc (out, open [d - 1] == '{' ? '}' : ']');
}

int
sl_json_close (sl_str_t partial, sl_buf_t *out)
{
    sl_str_t text = sl_json_trim (partial);
    if (!text.len)
        return -2;
    size_t start = out->len;
    if (sl_json_valid (text)) {
        sl_buf_append_str (out, text);
        return 0;
    }
    char first = text.ptr [0];
    if (first != '{' && first != '[' && first != '"')
        return -2;
    //  Every push and pop of a container is itself a place to cut, so the
    //  containers open at the last cut are the bottom cut_depth of the
    //  stack as it stands: no copy of the stack is kept per cut.
    char open [SL_JSON_MAX_DEPTH];
    bool want_key [SL_JSON_MAX_DEPTH];  //  object: a key comes next, not a value
    int depth = 0, cut_depth = 0;
    size_t cut = 0;                     //  bytes of text up to the last cut
    bool in_string = false, is_key = false, in_token = false;
    bool closed = false;                //  the top-level container was closed
    int escape = 0;                     //  1 after '\', 2..5: hex digits of \u still due
    unsigned hex = 0;                   //  value of a \u escape so far
    int utf8 = 0;                       //  continuation bytes still due
    size_t clean = 0;                   //  in a value string: bytes up to its last whole character
    const char *p = text.ptr;
    for (size_t i = 0; i < text.len; i++) {
        unsigned char c = (unsigned char) p [i];
        if (in_string) {
            bool whole = false;
            if (escape == 1) {
                escape = c == 'u' ? 5 : 0;
                hex = 0;
                whole = escape == 0;
            }
            else
            if (escape > 1) {
                hex = hex * 16 + (unsigned) (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
                if (--escape == 1) {
                    escape = 0;
                    //  Half a surrogate pair is no character: wait for the other.
                    whole = !(hex >= 0xd800 && hex <= 0xdbff);
                }
            }
            else
            if (utf8 > 0)
                whole = --utf8 == 0;
            else
            if (c == '\\')
                escape = 1;
            else
            if (c == '"') {
                in_string = false;
                if (!is_key && depth > 0) {
                    cut = i + 1;
                    cut_depth = depth;
                }
                continue;
            }
            else
            if (c >= 0x80) {
                utf8 = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : 1;
                whole = false;
            }
            else
                whole = true;
            if (whole)
                clean = i + 1;
            continue;
        }
        bool space = c == ' ' || c == '\n' || c == '\r' || c == '\t';
        bool ends_token = space || c == ',' || c == '}' || c == ']' || c == ':';
        if (closed && !space)
            return -2;                  //  more after the whole value: not a cut-off text
        if (in_token && ends_token) {
            in_token = false;
            if (depth > 0) {
                cut = i;
                cut_depth = depth;
            }
        }
        if (c == '"') {
            in_string = true;
            is_key = depth > 0 && open [depth - 1] == '{' && want_key [depth - 1];
            clean = i + 1;
            utf8 = 0;
        }
        else
        if (c == '{' || c == '[') {
            if (depth == SL_JSON_MAX_DEPTH)
                return -2;
            open [depth] = (char) c;
            want_key [depth++] = c == '{';
            cut = i + 1;
            cut_depth = depth;
        }
        else
        if (c == '}' || c == ']') {
            if (depth == 0)
                return -2;
            depth--;
            cut = i + 1;
            cut_depth = depth;
            closed = depth == 0;
        }
        else
        if (c == ':' && depth > 0)
            want_key [depth - 1] = false;
        else
        if (c == ',' && depth > 0)
            want_key [depth - 1] = open [depth - 1] == '{';
        else
        if (!ends_token)
            in_token = true;            //  a number or a literal
    }
    if (in_string && !is_key) {
        //  Cut inside a value: keep its whole characters and close it.
        sl_buf_append (out, p, clean);
        sl_buf_putc (out, '"');
        s_put_closers (out, open, depth);
    }
    else {
        if (cut == 0) {
            out->len = start;
            return -2;                  //  a top-level string cut inside its key: nothing to keep
        }
        sl_buf_append (out, p, cut);
        s_put_closers (out, open, cut_depth);
    }
    if (!sl_json_valid (sl_str_n (out->data + start, out->len - start))) {
        out->len = start;
        return -2;
    }
    return 0;
}

void
sl_json_put_raw (sl_buf_t *out, sl_str_t json)
{
    if (!json.ptr || !json.len)
        return;
    if (sl_utf8_json_clean (json.ptr, json.len))
        sl_buf_append (out, json.ptr, json.len);
    else
        sl_utf8_repair_json (out, json.ptr, json.len);
}
