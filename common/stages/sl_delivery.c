/*  sl_delivery.c - one client stream's frames as the gateway delivers
    them (see sl_delivery.h).

    Times of the bounds are kept in milliseconds (the clock's µs / 1000),
    the unit the bounds are given in, so that a bound is crossed at the
    same millisecond whatever the clock's sub-millisecond part.
*/
#include "common/stages/sl_delivery.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"

#define S_US_PER_MS 1000
#define S_DEFAULT_STATUS 200            //  of a frame that opens a response and names none

struct _sl_delivery_t {
    uint8_t sid [SL_SID_SIZE];
    int64_t expiry_ms;                  //  silence after which the stream expires, 0: never
    sl_delivery_clock_fn *clock;
    void *clock_arg;
    uint64_t next_seq;                  //  next frame expected (= frames written)
    uint32_t epoch;                     //  newest epoch frames came in
    uint64_t activity;                  //  frames and keep-alives received (not stale)
    int64_t heard_ms;                   //  last frame or keep-alive (or the request, the job)
    bool started;                       //  the response's status line is out
    bool dispatched;                    //  the job went to an ingest
    sl_buf_t job;                       //  the encoded job, until an ingest shows it has it
    int resends;                        //  times the job went to another ingest
    bool orphaned;                      //  its ingest was declared dead ...
    int64_t orphaned_ms;                //  ... then
    sl_msg_t *held;                     //  an ALONE frame waiting for the bytes before it to go
    int64_t held_us;                    //  since when
};

static int64_t
s_now_us (const sl_delivery_t *self)
{
    return self->clock ? self->clock (self->clock_arg) : 0;
}

static int64_t
s_now_ms (const sl_delivery_t *self)
{
    return s_now_us (self) / S_US_PER_MS;
}

sl_delivery_t *
sl_delivery_new (const uint8_t sid [SL_SID_SIZE], int64_t expiry_ms, sl_delivery_clock_fn *clock, void *clock_arg)
{
    sl_delivery_t *self = sl_xcalloc (1, sizeof *self);
    memcpy (self->sid, sid, SL_SID_SIZE);
    self->expiry_ms = expiry_ms;
    self->clock = clock;
    self->clock_arg = clock_arg;
    self->heard_ms = s_now_ms (self);
    return self;
}

void
sl_delivery_destroy (sl_delivery_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_delivery_t *self = *self_p;
    sl_buf_free (&self->job);
    free (self->held);
    free (self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  The request's job

void
sl_delivery_dispatch (sl_delivery_t *self, const sl_msg_t *job)
{
    sl_buf_reset (&self->job);
    sl_msg_encode (job, &self->job);
    self->dispatched = true;
    self->heard_ms = s_now_ms (self);
}

bool
sl_delivery_dispatched (const sl_delivery_t *self)
{
    return self->dispatched;
}

int
sl_delivery_job (sl_delivery_t *self, sl_codec_t *codec, sl_msg_t *job)
{
    size_t offset = 0;
    if (!self->job.len || sl_codec_decode (codec, self->job.data, self->job.len, &offset, job) != 0)
        return -1;
    return 0;
}

int
sl_delivery_resend (sl_delivery_t *self, sl_codec_t *codec, sl_msg_t *job)
{
    if (self->resends >= SL_DELIVERY_MAX_RESENDS || sl_delivery_job (self, codec, job))
        return -1;
    self->resends++;
    return 0;
}

//  --------------------------------------------------------------------------
//  Frames

//  An ALONE frame waits while the client still has bytes of ours to
//  take, at most SL_DELIVERY_ALONE_WAIT_MS. True when it was held.
static bool
s_hold_alone (sl_delivery_t *self, const sl_msg_t *f, bool behind)
{
    if (!(f->flags & SL_F_ALONE) || !self->started || !behind)
        return false;
    int64_t now = s_now_us (self);
    if (self->held && now - self->held_us >= SL_DELIVERY_ALONE_WAIT_MS * S_US_PER_MS)
        return false;                   //  waited long enough
    if (!self->held)
        self->held_us = now;
    free (self->held);                  //  a replay brings the same frame again
    self->held = sl_msg_dup (f);
    return true;
}

//  The response's content type as the frame names it (when it fits).
static void
s_content_type (const sl_msg_t *f, sl_delivery_write_t *w)
{
    snprintf (w->content_type, sizeof w->content_type, "%s", SL_DELIVERY_EVENT_STREAM);
    if (f->content_type.ptr && f->content_type.len < sizeof w->content_type) {
        memcpy (w->content_type, f->content_type.ptr, f->content_type.len);
        w->content_type [f->content_type.len] = 0;
    }
}

sl_delivery_outcome_t
sl_delivery_feed (sl_delivery_t *self, const sl_msg_t *f, bool behind, sl_delivery_write_t *w)
{
    memset (w, 0, sizeof *w);
    if (f->epoch < self->epoch)
        return SL_DELIVERY_STALE;
    self->epoch = f->epoch;
    self->heard_ms = s_now_ms (self);
    bool keepalive = (f->flags & SL_F_KEEPALIVE) != 0;
    if (f->seq == self->next_seq && !keepalive && s_hold_alone (self, f, behind))
        return SL_DELIVERY_HELD;
    self->activity++;
    sl_buf_free (&self->job);           //  an ingest has it: no resend any more
    w->status = f->status ? f->status : S_DEFAULT_STATUS;
    w->body = f->body;
    w->open = (f->flags & SL_F_FIRST) && !self->started;
    if (keepalive) {
        snprintf (w->content_type, sizeof w->content_type, "%s", SL_DELIVERY_EVENT_STREAM);
        return SL_DELIVERY_KEEPALIVE;
    }
    if (f->seq < self->next_seq)
        return SL_DELIVERY_DUPLICATE;
    if (f->seq > self->next_seq)
        return SL_DELIVERY_GAP;
    self->next_seq++;
    s_content_type (f, w);
    w->end = (f->flags & SL_F_LAST) != 0;
    w->whole = w->open && w->end
            && strncmp (w->content_type, SL_DELIVERY_EVENT_STREAM, strlen (SL_DELIVERY_EVENT_STREAM)) != 0;
    if (w->open)
        self->started = true;           //  a failed write ends the stream anyway
    return SL_DELIVERY_WRITE;
}

void
sl_delivery_opened (sl_delivery_t *self)
{
    self->started = true;
}

bool
sl_delivery_started (const sl_delivery_t *self)
{
    return self->started;
}

bool
sl_delivery_holding (const sl_delivery_t *self)
{
    return self->held != NULL;
}

sl_msg_t *
sl_delivery_release (sl_delivery_t *self, bool behind)
{
    if (!self->held
    ||  (behind && s_now_us (self) - self->held_us < SL_DELIVERY_ALONE_WAIT_MS * S_US_PER_MS))
        return NULL;
    sl_msg_t *f = self->held;
    self->held = NULL;
    self->held_us = 0;
    f->flags &= ~SL_F_ALONE;            //  now as any frame
    return f;
}

void
sl_delivery_ack (const sl_delivery_t *self, bool last, sl_msg_t *ack)
{
    sl_msg_init (ack, SL_MSG_ACK);
    memcpy (ack->sid, self->sid, SL_SID_SIZE);
    ack->seq = self->next_seq;
    ack->ts = (int64_t) self->activity;
    ack->flags = last ? SL_F_LAST : 0;
}

uint64_t
sl_delivery_next_seq (const sl_delivery_t *self)
{
    return self->next_seq;
}

//  --------------------------------------------------------------------------
//  Its ingest

void
sl_delivery_ingest_dead (sl_delivery_t *self)
{
    if (!self->orphaned) {
        self->orphaned = true;
        self->orphaned_ms = s_now_ms (self);
    }
}

void
sl_delivery_ingest_back (sl_delivery_t *self)
{
    self->orphaned = false;
}

sl_delivery_silence_t
sl_delivery_silence (const sl_delivery_t *self)
{
    int64_t now = s_now_ms (self);
    if (self->orphaned && now - self->orphaned_ms > SL_DELIVERY_INGEST_GRACE_MS)
        return SL_DELIVERY_ORPHANED;
    if (self->expiry_ms > 0 && now - self->heard_ms > self->expiry_ms)
        return SL_DELIVERY_EXPIRED;
    return SL_DELIVERY_HEARD;
}
