/*  sl_sse.c - WHATWG event-stream parsing, incremental (see sl_sse.h). */
#include "common/http/sl_sse.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"

#define SL_SSE_RETRY_DIGITS 19          //  longer values would overflow a long

struct _sl_sse_t {
    size_t max;                         //  bytes per line, event data, trailer
    sl_buf_t line;                      //  a line split across reads
    sl_buf_t data;                      //  data buffer (each line + LF)
    sl_buf_t type;                      //  event type buffer
    sl_buf_t id;                        //  last event id buffer
    sl_buf_t junk;                      //  non-field lines since the last event
    bool junk_overflow;                 //  junk grew past max: not reported
    bool skip_lf;                       //  last read ended in CR
    bool started;                       //  first line seen (BOM handled)
    long retry;                         //  last valid retry, -1 none
    const char *error;
};

sl_sse_t *
sl_sse_new (size_t max_size)
{
    sl_sse_t *self = sl_xcalloc (1, sizeof *self);
    self->max = max_size ? max_size : SL_SSE_DEFAULT_MAX;
    self->retry = -1;
    self->error = "";
    return self;
}

void
sl_sse_destroy (sl_sse_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_sse_t *self = *self_p;
    sl_buf_free (&self->line);
    sl_buf_free (&self->data);
    sl_buf_free (&self->type);
    sl_buf_free (&self->id);
    sl_buf_free (&self->junk);
    free (self);
    *self_p = NULL;
}

void
sl_sse_reset (sl_sse_t *self)
{
    sl_buf_reset (&self->line);
    sl_buf_reset (&self->data);
    sl_buf_reset (&self->type);
    sl_buf_reset (&self->id);
    sl_buf_reset (&self->junk);
    self->junk_overflow = false;
    self->skip_lf = false;
    self->started = false;
    self->retry = -1;
    self->error = "";
}

const char *
sl_sse_error (sl_sse_t *self)
{
    return self->error;
}

long
sl_sse_retry (sl_sse_t *self)
{
    return self->retry;
}

static int
s_dispatch (sl_sse_t *self, sl_sse_event_fn *fn, void *arg)
{
    if (self->data.len == 0) {
        //  Nothing to dispatch: the event type is reset, not carried over.
        sl_buf_reset (&self->type);
        return 0;
    }
    //  An event arrived: what came before it was not a trailing body.
    sl_buf_reset (&self->junk);
    self->junk_overflow = false;
    sl_str_t data = sl_str_n (self->data.data, self->data.len - 1);   //  drop final LF
    sl_str_t type = self->type.len ? sl_buf_str (&self->type) : SL_STR_LIT ("message");
    int rc = fn (arg, type, data, sl_buf_str (&self->id));
    sl_buf_reset (&self->data);
    sl_buf_reset (&self->type);
    return rc;
}

static bool
s_all_digits (const char *p, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (p [i] < '0' || p [i] > '9')
            return false;
    return true;
}

//  One complete line, without its line end.
static int
s_line (sl_sse_t *self, const char *p, size_t n, sl_sse_event_fn *fn, void *arg)
{
    if (!self->started) {
        self->started = true;
        if (n >= 3 && memcmp (p, "\xEF\xBB\xBF", 3) == 0) {
            p += 3;
            n -= 3;
        }
    }
    if (n == 0)
        return s_dispatch (self, fn, arg);
    if (p [0] == ':')
        return 0;                       //  comment
    const char *colon = memchr (p, ':', n);
    size_t name_len = colon ? (size_t) (colon - p) : n;
    const char *value = colon ? colon + 1 : p + n;
    size_t value_len = colon ? n - name_len - 1 : 0;
    if (value_len && *value == ' ') {
        value++;
        value_len--;
    }
    if (name_len == 4 && memcmp (p, "data", 4) == 0) {
        if (self->data.len + value_len + 1 > self->max) {
            self->error = "event data over the size limit";
            return -1;
        }
        sl_buf_append (&self->data, value, value_len);
        sl_buf_putc (&self->data, '\n');
    }
    else
    if (name_len == 5 && memcmp (p, "event", 5) == 0) {
        sl_buf_reset (&self->type);
        sl_buf_append (&self->type, value, value_len);
    }
    else
    if (name_len == 2 && memcmp (p, "id", 2) == 0) {
        if (!memchr (value, 0, value_len)) {
            sl_buf_reset (&self->id);
            sl_buf_append (&self->id, value, value_len);
        }
    }
    else
    if (name_len == 5 && memcmp (p, "retry", 5) == 0) {
        if (s_all_digits (value, value_len) && value_len < SL_SSE_RETRY_DIGITS)
            self->retry = strtol (value, NULL, 10);
    }
    else
    if (!self->junk_overflow) {
        //  Unknown field: ignored by the rules, but remembered in case the
        //  stream ends in a bare JSON body (see sl_sse_finish).
        if (self->junk.len + n + 1 > self->max) {
            self->junk_overflow = true;
            sl_buf_reset (&self->junk);
        }
        else {
            sl_buf_append (&self->junk, p, n);
            sl_buf_putc (&self->junk, '\n');
        }
    }
    return 0;
}

//  The first CR or LF in [p, end), or end. Two memchr calls (vectorized in
//  libc) beat a byte loop: lines are long and CR is rare or right before LF.
static inline const char *
s_line_end (const char *p, const char *end)
{
    const char *lf = memchr (p, '\n', (size_t) (end - p));
    const char *limit = lf ? lf : end;
    const char *cr = memchr (p, '\r', (size_t) (limit - p));
    return cr ? cr : limit;
}

int
sl_sse_feed (sl_sse_t *self, const char *data, size_t size, sl_sse_event_fn *fn, void *arg)
{
    const char *p = data;
    const char *end = data + size;
    while (p < end) {
        if (self->skip_lf) {
            self->skip_lf = false;
            if (*p == '\n') {
                p++;
                continue;
            }
        }
        const char *q = s_line_end (p, end);
        if (q == end) {
            //  Partial line: keep it for the next read.
            if (self->line.len + (size_t) (end - p) > self->max) {
                self->error = "line over the size limit";
                return -1;
            }
            sl_buf_append (&self->line, p, (size_t) (end - p));
            break;
        }
        //  The limit holds however the line was split across reads.
        if (self->line.len + (size_t) (q - p) > self->max) {
            self->error = "line over the size limit";
            return -1;
        }
        int rc;
        if (self->line.len) {
            sl_buf_append (&self->line, p, (size_t) (q - p));
            rc = s_line (self, self->line.data, self->line.len, fn, arg);
            sl_buf_reset (&self->line);
        }
        else
            rc = s_line (self, p, (size_t) (q - p), fn, arg);
        if (*q == '\r') {
            if (q + 1 < end) {
                if (q [1] == '\n')
                    q++;
            }
            else
                self->skip_lf = true;
        }
        p = q + 1;
        if (rc)
            return rc;
    }
    return 0;
}

int
sl_sse_finish (sl_sse_t *self, sl_sse_event_fn *fn, void *arg)
{
    int rc = 0;
    if (self->line.len) {
        sl_buf_t last = self->line;
        self->line = (sl_buf_t) { 0 };
        rc = s_line (self, last.data, last.len, fn, arg);
        sl_buf_free (&last);
        if (rc)
            return rc;
    }
    //  Lenient: a pending event is dispatched without its blank line.
    sl_buf_t junk = self->junk;         //  dispatch clears the junk buffer
    self->junk = (sl_buf_t) { 0 };
    rc = s_dispatch (self, fn, arg);
    if (rc == 0 && junk.len && !self->junk_overflow && sl_json_valid (sl_buf_str (&junk))) {
        sl_str_t body = sl_json_trim (sl_buf_str (&junk));
        rc = fn (arg, SL_STR_LIT ("error"), body, sl_buf_str (&self->id));
    }
    sl_buf_free (&junk);
    return rc;
}
