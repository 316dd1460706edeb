/*  sl_buf.h - a growable byte buffer.

    A value type, not an opaque class: buffers are embedded in the per-stream
    and per-peer structs of every stage and written on every hot path, so a
    call through an opaque pointer and a separate allocation per buffer would
    cost more than they protect. The fields are public for reading; write
    through the functions. A zeroed sl_buf_t is an empty buffer.

    Growth never fails (see sl_alloc.h). Limits on what a buffer may hold are
    the caller's business and are checked where the bytes come in.
*/
#ifndef SL_BUF_H
#define SL_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_str.h"

typedef struct {
    char *data;                         //  bytes, NULL until first write
    size_t len;                         //  bytes in use
    size_t cap;                         //  bytes allocated
} sl_buf_t;

//  Make room for at least extra more bytes; returns a pointer to the end.
char *sl_buf_reserve (sl_buf_t *self, size_t extra);
//  The same for a buffer that lives long and grows a little at a time
//  (a stream's delta log): it grows by a quarter of its size, at least
//  step bytes, instead of doubling, so that less of it sits unused.
char *sl_buf_reserve_gently (sl_buf_t *self, size_t extra, size_t step);
void sl_buf_append (sl_buf_t *self, const void *data, size_t size);
void sl_buf_append_str (sl_buf_t *self, sl_str_t s);
void sl_buf_puts (sl_buf_t *self, const char *cstr);
void sl_buf_putc (sl_buf_t *self, char c);
void sl_buf_printf (sl_buf_t *self, const char *format, ...)
    __attribute__ ((format (printf, 2, 3)));
void sl_buf_vprintf (sl_buf_t *self, const char *format, va_list args);
//  Decimal integers, without printf's cost.
void sl_buf_put_i64 (sl_buf_t *self, int64_t value);
void sl_buf_put_u64 (sl_buf_t *self, uint64_t value);
//  Drop the first n bytes (a consumed prefix).
void sl_buf_consume (sl_buf_t *self, size_t n);
//  Forget the contents, keep the memory.
void sl_buf_reset (sl_buf_t *self);
//  Release the memory; the buffer is empty and reusable afterwards.
void sl_buf_free (sl_buf_t *self);
//  Keep at most cap bytes allocated when the buffer is empty (idle streams
//  should not pin large buffers).
void sl_buf_shrink (sl_buf_t *self, size_t cap);
//  The contents as a NUL-terminated string (the NUL is not counted in len).
const char *sl_buf_cstr (sl_buf_t *self);
//  The contents as a slice (borrowed until the next write).
static inline sl_str_t
sl_buf_str (const sl_buf_t *self)
{
    return sl_str_n (self->data ? self->data : "", self->len);
}

#endif
