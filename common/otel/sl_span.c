/*  sl_span.c - one finished span (see sl_span.h; bounds in sl_span_impl.h). */
#include "common/otel/sl_span.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_utf8.h"
#include "common/otel/sl_span_impl.h"

#define S_ATTRS_FIRST 8                 //  attribute slots made at first use

static bool
s_all_zero (const uint8_t *bytes, size_t size)
{
    for (size_t i = 0; i < size; i++)
        if (bytes [i])
            return false;
    return true;
}

//  A copy of value as well-formed UTF-8, cut at SL_SPAN_STR_MAX on a
//  character boundary (the cut counted on the span).
static sl_span_str_t
s_copy (sl_span_t *self, sl_str_t value)
{
    sl_buf_t buf = { 0 };
    const char *ptr = value.ptr ? value.ptr : "";
    size_t len = value.len;
    if (len > SL_SPAN_STR_MAX * 2)      //  what repair could still keep
        len = SL_SPAN_STR_MAX * 2;
    if (sl_utf8_valid (ptr, len))
        sl_buf_append (&buf, ptr, len);
    else
        sl_utf8_repair (&buf, ptr, len);
    if (buf.len > SL_SPAN_STR_MAX || len < value.len) {
        size_t keep = buf.len < SL_SPAN_STR_MAX ? buf.len : SL_SPAN_STR_MAX;
        //  Back up over continuation bytes to the start of a character.
        while (keep > 0 && keep < buf.len && ((unsigned char) buf.data [keep] & 0xC0) == 0x80)
            keep--;
        buf.len = keep;
        self->truncated++;
    }
    sl_span_str_t out = { sl_xstrndup (buf.data ? buf.data : "", buf.len), buf.len };
    sl_buf_free (&buf);
    return out;
}

static void
s_str_free (sl_span_str_t *s)
{
    free (s->ptr);
    s->ptr = NULL;
    s->len = 0;
}

static void
s_attr_clear (sl_span_attr_t *attr)
{
    if (attr->type == SL_SPAN_ATTR_STR)
        s_str_free (&attr->v.str);
    else
    if (attr->type == SL_SPAN_ATTR_STR_ARRAY) {
        for (size_t i = 0; i < attr->v.arr.count; i++)
            s_str_free (&attr->v.arr.items [i]);
        free (attr->v.arr.items);
        attr->v.arr.items = NULL;
        attr->v.arr.count = 0;
    }
}

//  The attribute key, its old value cleared (a key set twice keeps its
//  place and its last value), or a new one; NULL past the bound (counted).
static sl_span_attr_t *
s_attr (sl_span_t *self, const char *key, sl_span_attr_type_t type)
{
    assert (key && *key);
    for (size_t i = 0; i < self->attr_count; i++) {
        sl_span_attr_t *attr = &self->attrs [i];
        if (strcmp (attr->key, key) == 0) {
            if (type != SL_SPAN_ATTR_STR_ARRAY || attr->type != SL_SPAN_ATTR_STR_ARRAY) {
                s_attr_clear (attr);
                memset (&attr->v, 0, sizeof attr->v);
                attr->type = type;
            }
            return attr;
        }
    }
    if (self->attr_count >= SL_SPAN_ATTRS_MAX) {
        self->dropped++;
        return NULL;
    }
    if (self->attr_count == self->attr_cap) {
        self->attr_cap = self->attr_cap ? self->attr_cap * 2 : S_ATTRS_FIRST;
        self->attrs = sl_xrealloc (self->attrs, self->attr_cap * sizeof *self->attrs);
    }
    sl_span_attr_t *attr = &self->attrs [self->attr_count++];
    memset (attr, 0, sizeof *attr);
    attr->key = sl_xstrdup (key);
    attr->type = type;
    return attr;
}

sl_span_t *
sl_span_new (const char *name, const uint8_t trace [SL_TRACE_ID_SIZE], const uint8_t id [SL_SPAN_ID_SIZE],
             const uint8_t *parent, sl_span_kind_t kind, uint64_t start_ns)
{
    assert (name && trace && id);
    assert (!s_all_zero (trace, SL_TRACE_ID_SIZE) && !s_all_zero (id, SL_SPAN_ID_SIZE));
    assert (kind == SL_SPAN_INTERNAL || kind == SL_SPAN_SERVER || kind == SL_SPAN_CLIENT);
    sl_span_t *self = sl_xcalloc (1, sizeof *self);
    self->name = s_copy (self, sl_str (name));
    memcpy (self->trace, trace, SL_TRACE_ID_SIZE);
    memcpy (self->id, id, SL_SPAN_ID_SIZE);
    if (parent && !s_all_zero (parent, SL_SPAN_ID_SIZE)) {
        memcpy (self->parent, parent, SL_SPAN_ID_SIZE);
        self->has_parent = true;
    }
    self->kind = kind;
    self->start_ns = start_ns;
    return self;
}

void
sl_span_destroy (sl_span_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_span_t *self = *self_p;
    for (size_t i = 0; i < self->attr_count; i++) {
        s_attr_clear (&self->attrs [i]);
        free (self->attrs [i].key);
    }
    free (self->attrs);
    s_str_free (&self->name);
    s_str_free (&self->tracestate);
    s_str_free (&self->message);
    free (self);
    *self_p = NULL;
}

void
sl_span_set_str (sl_span_t *self, const char *key, sl_str_t value)
{
    sl_span_attr_t *attr = s_attr (self, key, SL_SPAN_ATTR_STR);
    if (attr)
        attr->v.str = s_copy (self, value);
}

void
sl_span_set_int (sl_span_t *self, const char *key, int64_t value)
{
    sl_span_attr_t *attr = s_attr (self, key, SL_SPAN_ATTR_INT);
    if (attr)
        attr->v.i64 = value;
}

void
sl_span_set_double (sl_span_t *self, const char *key, double value)
{
    sl_span_attr_t *attr = s_attr (self, key, SL_SPAN_ATTR_DOUBLE);
    if (attr)
        attr->v.dbl = value;
}

void
sl_span_set_bool (sl_span_t *self, const char *key, bool value)
{
    sl_span_attr_t *attr = s_attr (self, key, SL_SPAN_ATTR_BOOL);
    if (attr)
        attr->v.flag = value;
}

void
sl_span_add_str (sl_span_t *self, const char *key, sl_str_t value)
{
    sl_span_attr_t *attr = s_attr (self, key, SL_SPAN_ATTR_STR_ARRAY);
    if (!attr)
        return;
    if (attr->v.arr.count >= SL_SPAN_ARRAY_MAX) {
        self->truncated++;
        return;
    }
    attr->v.arr.items = sl_xrealloc (attr->v.arr.items, (attr->v.arr.count + 1) * sizeof *attr->v.arr.items);
    attr->v.arr.items [attr->v.arr.count++] = s_copy (self, value);
}

void
sl_span_set_tracestate (sl_span_t *self, sl_str_t tracestate)
{
    s_str_free (&self->tracestate);
    if (sl_str_present (tracestate) && tracestate.len > 0)
        self->tracestate = s_copy (self, tracestate);
}

void
sl_span_set_error (sl_span_t *self, sl_str_t message)
{
    s_str_free (&self->message);
    self->error = true;
    self->message = s_copy (self, message);
}

void
sl_span_end (sl_span_t *self, uint64_t end_ns)
{
    self->end_ns = end_ns < self->start_ns ? self->start_ns : end_ns;
    self->ended = true;
}
