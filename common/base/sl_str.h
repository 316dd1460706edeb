/*  sl_str.h - a borrowed byte slice.

    Decoded messages, JSON values and SSE fields are slices into a buffer that
    someone else owns; nothing is copied until a stage needs to keep it. A
    slice with ptr == NULL is "absent"; ptr != NULL with len == 0 is "present
    and empty". The owner of the buffer states how long the slice lives.
*/
#ifndef SL_STR_H
#define SL_STR_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

typedef struct {
    const char *ptr;                    //  first byte, NULL when absent
    size_t len;                         //  length in bytes
} sl_str_t;

#define SL_STR_NULL ((sl_str_t) { NULL, 0 })
#define SL_STR_LIT(lit) ((sl_str_t) { (lit), sizeof (lit) - 1 })

static inline sl_str_t
sl_str (const char *cstr)
{
    return cstr ? (sl_str_t) { cstr, strlen (cstr) } : SL_STR_NULL;
}

static inline sl_str_t
sl_str_n (const void *ptr, size_t len)
{
    return (sl_str_t) { (const char *) ptr, len };
}

static inline bool
sl_str_present (sl_str_t s)
{
    return s.ptr != NULL;
}

static inline bool
sl_str_eq (sl_str_t s, const char *cstr)
{
    size_t n = strlen (cstr);
    return s.ptr && s.len == n && memcmp (s.ptr, cstr, n) == 0;
}

static inline bool
sl_str_eq_str (sl_str_t a, sl_str_t b)
{
    if (!a.ptr || !b.ptr)
        return a.ptr == b.ptr;
    return a.len == b.len && (a.len == 0 || memcmp (a.ptr, b.ptr, a.len) == 0);
}

static inline bool
sl_str_starts (sl_str_t s, const char *prefix)
{
    size_t n = strlen (prefix);
    return s.ptr && s.len >= n && memcmp (s.ptr, prefix, n) == 0;
}

#endif
