/*  sl_ended.c - streams ended early, remembered to end them again
    (see sl_ended.h).
*/
#include "common/stages/sl_ended.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_sidmap.h"

typedef struct {
    uint32_t epoch;
    int64_t since;                      //  ms: when it was put (or answered)
    int status;
    sl_buf_t start;
    sl_buf_t code;
    sl_buf_t message;
} s_entry_t;

struct _sl_ended_t {
    sl_sidmap_t *streams;               //  sid -> s_entry_t
    size_t max;
    int64_t keep_ms;
};

static void
s_entry_free (void *value)
{
    s_entry_t *e = value;
    sl_buf_free (&e->start);
    sl_buf_free (&e->code);
    sl_buf_free (&e->message);
    free (e);
}

sl_ended_t *
sl_ended_new (size_t max, int64_t keep_ms)
{
    sl_ended_t *self = sl_xcalloc (1, sizeof *self);
    self->streams = sl_sidmap_new ();
    self->max = max ? max : 1;
    self->keep_ms = keep_ms;
    return self;
}

void
sl_ended_destroy (sl_ended_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_ended_t *self = *self_p;
    size_t cursor = 0;
    void *e;
    while ((e = sl_sidmap_next (self->streams, &cursor, NULL)))
        s_entry_free (e);
    sl_sidmap_destroy (&self->streams);
    free (self);
    *self_p = NULL;
}

//  Forget the stream kept longest (only when full: a scan of max entries).
static void
s_forget_oldest (sl_ended_t *self)
{
    size_t cursor = 0;
    const uint8_t *sid;
    uint8_t oldest_sid [SL_SID_SIZE];
    s_entry_t *e, *oldest = NULL;
    while ((e = sl_sidmap_next (self->streams, &cursor, &sid)))
        if (!oldest || e->since < oldest->since) {
            oldest = e;
            memcpy (oldest_sid, sid, SL_SID_SIZE);
        }
    if (oldest) {
        sl_sidmap_remove (self->streams, oldest_sid);
        s_entry_free (oldest);
    }
}

size_t
sl_ended_put (sl_ended_t *self, const uint8_t *sid, uint32_t epoch, sl_str_t start, const char *code,
              const char *message, int status, int64_t now)
{
    size_t forgotten = 0;
    s_entry_t *e = sl_sidmap_remove (self->streams, sid);
    if (e)
        s_entry_free (e);
    else
    if (sl_sidmap_size (self->streams) >= self->max) {
        sl_ended_expire (self, now);
        if (sl_sidmap_size (self->streams) >= self->max) {
            s_forget_oldest (self);
            forgotten = 1;
        }
    }
    e = sl_xcalloc (1, sizeof *e);
    e->epoch = epoch;
    e->since = now;
    e->status = status;
    sl_buf_append_str (&e->start, start);
    sl_buf_append_str (&e->code, sl_str (code));
    sl_buf_append_str (&e->message, sl_str (message));
    sl_sidmap_put (self->streams, sid, e);
    return forgotten;
}

bool
sl_ended_lost (sl_ended_t *self, const uint8_t *sid, uint32_t epoch, sl_ended_stream_t *stream, int64_t now)
{
    s_entry_t *e = sl_sidmap_get (self->streams, sid);
    if (!e || e->epoch != epoch || now - e->since > self->keep_ms)
        return false;
    e->epoch++;
    e->since = now;
    *stream = (sl_ended_stream_t) {
        .epoch = e->epoch,
        .start = sl_buf_str (&e->start),
        .code = sl_buf_str (&e->code),
        .message = sl_buf_str (&e->message),
        .status = e->status
    };
    return true;
}

static bool
s_kept_too_long (void *value, void *arg)
{
    const s_entry_t *e = value;
    const int64_t *limit = arg;
    return e->since < *limit;
}

void
sl_ended_expire (sl_ended_t *self, int64_t now)
{
    int64_t limit = now - self->keep_ms;
    sl_sidmap_drop_if (self->streams, s_kept_too_long, &limit, s_entry_free);
}

size_t
sl_ended_count (sl_ended_t *self)
{
    return sl_sidmap_size (self->streams);
}
