/*  sl_validate.c - the validator object around each dialect module's
    checks (see sl_validate.h and sl_validate_impl.h): splitting events,
    keeping the state, the helpers the checks read JSON with.

    The state of a response is a plain struct: a check works on a copy and
    commits it only when the event is legal, so an illegal event leaves
    the state as it was. Event data is read with the zero-allocation JSON
    scanner; decoded strings go through one scratch buffer per validator.
*/
#include "common/dialects/sl_validate.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"
#include "proto/sl_msg.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_validate_impl.h"

struct _sl_validate_t {
    const sl_validator_vt_t *vt;        //  the client dialect's module's
    sl_vd_state_t state;
    sl_buf_t data;                      //  the event's data lines, joined
    sl_buf_t scratch;                   //  decoded strings
    char reason [256];
};

sl_validate_t *
sl_validate_new (int dialect)
{
    const sl_dialect_t *d = sl_dialect_get (dialect);
    if (!d)
        return NULL;
    sl_validate_t *self = sl_xcalloc (1, sizeof *self);
    self->vt = d->validator;
    self->state.open_index = -1;
    return self;
}

void
sl_validate_destroy (sl_validate_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_validate_t *self = *self_p;
    sl_buf_free (&self->data);
    sl_buf_free (&self->scratch);
    free (self);
    *self_p = NULL;
}

const char *
sl_validate_reason (sl_validate_t *self)
{
    return self->reason;
}

int
sl_vd_fail (sl_validate_t *self, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    vsnprintf (self->reason, sizeof self->reason, format, args);
    va_end (args);
    return -1;
}

size_t
sl_validate_next_event (sl_str_t bytes)
{
    //  From line end to line end (memchr), instead of byte by byte.
    const char *p = bytes.ptr, *end = bytes.ptr + bytes.len;
    while (p && p < end) {
        const char *nl = memchr (p, '\n', (size_t) (end - p));
        if (!nl || nl + 1 >= end)
            return 0;
        if (nl [1] == '\n')
            return (size_t) (nl + 2 - bytes.ptr);
        if (nl [1] == '\r' && nl + 2 < end && nl [2] == '\n')
            return (size_t) (nl + 3 - bytes.ptr);
        p = nl + 1;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Reading JSON (sl_validate_impl.h)

int
sl_vd_path (sl_str_t json, const char *path, sl_str_t *out)
{
    sl_str_t cur = json;
    const char *p = path;
    char key [64];
    while (*p) {
        size_t n = strcspn (p, ".");
        if (n >= sizeof key)
            return -2;
        memcpy (key, p, n);
        key [n] = 0;
        p += n + (p [n] == '.');
        if (key [0] >= '0' && key [0] <= '9') {
            long want = atol (key);
            sl_json_iter_t it;
            if (sl_json_array (&it, cur))
                return sl_json_type (cur) == SL_JSON_BAD ? -2 : 0;
            sl_str_t elem;
            int rc;
            long i = 0;
            while ((rc = sl_json_next_elem (&it, &elem)) == 1 && i < want)
                i++;
            if (rc != 1)
                return rc == 0 ? 0 : -2;
            cur = elem;
        }
        else {
            if (sl_json_type (cur) != SL_JSON_OBJECT)
                return 0;
            int rc = sl_json_find (cur, key, &cur);
            if (rc != 1)
                return rc;
        }
    }
    *out = sl_json_trim (cur);
    return 1;
}

sl_str_t
sl_vd_string (sl_validate_t *self, sl_str_t json, const char *path)
{
    sl_str_t v;
    if (sl_vd_path (json, path, &v) != 1 || sl_json_type (v) != SL_JSON_STRING)
        return SL_STR_NULL;
    sl_buf_reset (&self->scratch);
    if (sl_json_unescape (v, &self->scratch))
        return SL_STR_NULL;
    return sl_str_n (self->scratch.data ? self->scratch.data : "", self->scratch.len);
}

int
sl_vd_pick (sl_str_t json, const char *const *keys, sl_str_t *values)
{
    int n = 0;
    while (keys [n])
        values [n++] = SL_STR_NULL;
    sl_json_iter_t it;
    if (sl_json_object (&it, json))
        return -2;
    sl_str_t key, value;
    int rc;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1)
        for (int i = 0; i < n; i++)
            if (!values [i].ptr && sl_json_key_eq (key, keys [i])) {
                values [i] = sl_json_trim (value);
                break;
            }
    if (rc != 0)
        return -2;
    const char *end = json.ptr + json.len;
    for (const char *p = it.p; p < end; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
            return -2;
    return 0;
}

sl_str_t
sl_vd_text (sl_validate_t *self, sl_str_t value)
{
    if (!value.ptr || sl_json_type (value) != SL_JSON_STRING)
        return SL_STR_NULL;
    sl_buf_reset (&self->scratch);
    if (sl_json_unescape (value, &self->scratch))
        return SL_STR_NULL;
    return sl_str_n (self->scratch.data ? self->scratch.data : "", self->scratch.len);
}

int
sl_vd_count (sl_str_t json, const char *path)
{
    sl_str_t v, elem;
    sl_json_iter_t it;
    if (sl_vd_path (json, path, &v) != 1 || sl_json_array (&it, v))
        return -1;
    int n = 0, rc;
    while ((rc = sl_json_next_elem (&it, &elem)) == 1)
        n++;
    return rc == 0 ? n : -1;
}

//  --------------------------------------------------------------------------
//  Checking

int
sl_validate_body (sl_validate_t *self, sl_str_t body)
{
    self->reason [0] = 0;
    return self->vt->body (self, sl_json_trim (body));
}

int
sl_validate_event (sl_validate_t *self, sl_str_t event)
{
    self->reason [0] = 0;
    //  Split the event into its name and data; comments are keep-alives.
    //  The data: one line is read where it stands; several are joined in
    //  self->data.
    sl_str_t name = SL_STR_NULL, data = SL_STR_NULL;
    bool has_data = false;
    sl_buf_reset (&self->data);
    const char *p = event.ptr, *end = event.ptr + event.len;
    while (p && p < end) {
        const char *nl = memchr (p, '\n', (size_t) (end - p));
        sl_str_t line = sl_str_n (p, (size_t) ((nl ? nl : end) - p));
        p = nl ? nl + 1 : end;
        if (line.len && line.ptr [line.len - 1] == '\r')
            line.len--;
        if (line.len == 0 || line.ptr [0] == ':')
            continue;
        const char *colon = memchr (line.ptr, ':', line.len);
        size_t field = colon ? (size_t) (colon - line.ptr) : line.len;
        sl_str_t value = colon ? sl_str_n (colon + 1, line.len - field - 1) : SL_STR_LIT ("");
        if (value.len && value.ptr [0] == ' ')
            value = sl_str_n (value.ptr + 1, value.len - 1);
        if (field == 5 && memcmp (line.ptr, "event", 5) == 0)
            name = value;
        else
        if (field == 4 && memcmp (line.ptr, "data", 4) == 0) {
            if (!has_data)
                data = value;
            else {
                if (self->data.len == 0)
                    sl_buf_append_str (&self->data, data);
                sl_buf_putc (&self->data, '\n');
                sl_buf_append_str (&self->data, value);
                data = sl_buf_str (&self->data);
            }
            has_data = true;
        }
    }
    if (!has_data && !name.ptr && self->vt->bare)
        return self->vt->bare (self, &self->state, event);
    if (self->state.phase == SL_VD_END)
        return sl_vd_fail (self, "an event after the end of the response");
    if (!has_data && !name.ptr)
        return 0;                       //  a comment: allowed before the end
    if (!has_data)
        return sl_vd_fail (self, "an event without data");
    sl_vd_state_t next = self->state;
    if (self->vt->event (self, &next, name, sl_json_trim (data)))
        return -1;
    self->state = next;
    return 0;
}

int
sl_validate_end (sl_validate_t *self)
{
    if (self->state.phase == SL_VD_END)
        return 0;
    return sl_vd_fail (self, "the response ended before its last event");
}
