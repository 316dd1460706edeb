/*  sl_buf.c - a growable byte buffer (see sl_buf.h). */
#include "common/base/sl_buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

#define SL_BUF_MIN_CAP 64               //  first allocation, bytes

char *
sl_buf_reserve (sl_buf_t *self, size_t extra)
{
    size_t need = self->len + extra + 1;        //  +1 keeps room for a NUL
    if (need > self->cap) {
        size_t cap = self->cap ? self->cap : SL_BUF_MIN_CAP;
        while (cap < need)
            cap *= 2;
        self->data = sl_xrealloc (self->data, cap);
        self->cap = cap;
    }
    return self->data + self->len;
}

char *
sl_buf_reserve_gently (sl_buf_t *self, size_t extra, size_t step)
{
    size_t need = self->len + extra + 1;
    if (need > self->cap) {
        size_t grow = self->cap / 4 > step ? self->cap / 4 : step;
        size_t cap = self->cap + grow > need ? self->cap + grow : need;
        self->data = sl_xrealloc (self->data, cap);
        self->cap = cap;
    }
    return self->data + self->len;
}

void
sl_buf_append (sl_buf_t *self, const void *data, size_t size)
{
    if (size == 0)
        return;
    memcpy (sl_buf_reserve (self, size), data, size);
    self->len += size;
}

void
sl_buf_append_str (sl_buf_t *self, sl_str_t s)
{
    if (s.ptr)
        sl_buf_append (self, s.ptr, s.len);
}

void
sl_buf_puts (sl_buf_t *self, const char *cstr)
{
    sl_buf_append (self, cstr, strlen (cstr));
}

void
sl_buf_putc (sl_buf_t *self, char c)
{
    *sl_buf_reserve (self, 1) = c;
    self->len++;
}

void
sl_buf_vprintf (sl_buf_t *self, const char *format, va_list args)
{
    va_list copy;
    va_copy (copy, args);
    char *end = sl_buf_reserve (self, 64);
    size_t room = self->cap - self->len;
    int n = vsnprintf (end, room, format, args);
    if (n >= 0 && (size_t) n >= room) {
        end = sl_buf_reserve (self, (size_t) n);
        n = vsnprintf (end, (size_t) n + 1, format, copy);
    }
    va_end (copy);
    if (n > 0)
        self->len += (size_t) n;
}

void
sl_buf_printf (sl_buf_t *self, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    sl_buf_vprintf (self, format, args);
    va_end (args);
}

void
sl_buf_put_u64 (sl_buf_t *self, uint64_t value)
{
    char tmp [24];
    size_t n = 0;
    do {
        tmp [n++] = (char) ('0' + value % 10);
        value /= 10;
    } while (value);
    char *out = sl_buf_reserve (self, n);
    for (size_t i = 0; i < n; i++)
        out [i] = tmp [n - 1 - i];
    self->len += n;
}

void
sl_buf_put_i64 (sl_buf_t *self, int64_t value)
{
    if (value < 0) {
        sl_buf_putc (self, '-');
        sl_buf_put_u64 (self, (uint64_t) 0 - (uint64_t) value);
    }
    else
        sl_buf_put_u64 (self, (uint64_t) value);
}

void
sl_buf_consume (sl_buf_t *self, size_t n)
{
    if (n >= self->len)
        self->len = 0;
    else {
        memmove (self->data, self->data + n, self->len - n);
        self->len -= n;
    }
}

void
sl_buf_reset (sl_buf_t *self)
{
    self->len = 0;
}

void
sl_buf_free (sl_buf_t *self)
{
    free (self->data);
    self->data = NULL;
    self->len = self->cap = 0;
}

void
sl_buf_shrink (sl_buf_t *self, size_t cap)
{
    if (self->len == 0 && self->cap > cap)
        sl_buf_free (self);
}

const char *
sl_buf_cstr (sl_buf_t *self)
{
    sl_buf_reserve (self, 0);
    self->data [self->len] = 0;
    return self->data;
}
