/*  sl_emitter.c - stream bookkeeping and framing around the renderers. */
#include "sl_emitter.h"

#include <stdlib.h>
#include <string.h>

#include "../../common/sl_alloc.h"
#include "../../common/sl_sidmap.h"
#include "sl_render.h"

#define SL_EMITTER_SSE_TYPE "text/event-stream"
#define SL_EMITTER_JSON_TYPE "application/json"
#define SL_EMITTER_DEFAULT_ERROR_STATUS 502

typedef struct {
    uint8_t sid [SL_SID_SIZE];
    uint32_t epoch;
    uint64_t seq;                       //  next frame sequence
    sl_buf_t reply_to;                  //  owning gateway's endpoint
    sl_render_stream_t rs;
    bool first_sent;                    //  the FIRST frame is out
    bool last_sent;                     //  the LAST frame is out
} s_stream_t;

struct _sl_emitter_t {
    sl_sidmap_t *streams;
    uint64_t dropped;
    sl_buf_t out;                       //  bytes of the frame being built
    sl_emit_fn *emit;
    void *arg;
};

sl_emitter_t *
sl_emitter_new (void)
{
    sl_emitter_t *self = sl_xcalloc (1, sizeof *self);
    self->streams = sl_sidmap_new ();
    return self;
}

static void
s_stream_free (s_stream_t *s)
{
    sl_buf_free (&s->reply_to);
    sl_buf_free (&s->rs.model);
    sl_buf_free (&s->rs.id);
    sl_buf_free (&s->rs.prefix);
    free (s);
}

void
sl_emitter_destroy (sl_emitter_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_emitter_t *self = *self_p;
    size_t cursor = 0;
    s_stream_t *s;
    while ((s = sl_sidmap_next (self->streams, &cursor, NULL)))
        s_stream_free (s);
    sl_sidmap_destroy (&self->streams);
    sl_buf_free (&self->out);
    free (self);
    *self_p = NULL;
}

size_t
sl_emitter_streams (sl_emitter_t *self)
{
    return sl_sidmap_size (self->streams);
}

uint64_t
sl_emitter_dropped (sl_emitter_t *self)
{
    return self->dropped;
}

//  Send what was rendered into self->out as one frame.
static void
s_frame (sl_emitter_t *self, s_stream_t *s, int status, const char *content_type, bool last)
{
    if (self->out.len == 0 && !last)
        return;
    sl_msg_t f;
    sl_msg_init (&f, SL_MSG_FRAME);
    memcpy (f.sid, s->sid, SL_SID_SIZE);
    f.epoch = s->epoch;
    f.seq = s->seq++;
    f.body = sl_buf_str (&self->out);
    f.reply_to = sl_buf_str (&s->reply_to);
    if (!s->first_sent) {
        f.flags |= SL_F_FIRST;
        f.status = status;
        f.content_type = sl_str (content_type);
        s->first_sent = true;
    }
    if (last) {
        f.flags |= SL_F_LAST;
        s->last_sent = true;
    }
    self->emit (self->arg, &f);
    sl_buf_reset (&self->out);
}

static void
s_on_start (sl_emitter_t *self, const sl_msg_t *msg)
{
    s_stream_t *s = sl_xcalloc (1, sizeof *s);
    memcpy (s->sid, msg->sid, SL_SID_SIZE);
    s->epoch = msg->epoch;
    sl_buf_append_str (&s->reply_to, msg->reply_to);
    s->rs.client_dialect = msg->client_dialect;
    s->rs.upstream_dialect = msg->upstream_dialect;
    s->rs.flags = msg->flags;
    sl_buf_append_str (&s->rs.model, msg->model);
    //  Until the upstream names the response, it is named after the stream.
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (msg->sid, hex);
    sl_buf_printf (&s->rs.id, "chatcmpl-%s", hex);
    sl_sidmap_put (self->streams, msg->sid, s);
}

static void
s_on_block (sl_emitter_t *self, s_stream_t *s, const sl_msg_t *msg)
{
    if (msg->kind == SL_B_MESSAGE) {
        if (msg->id.ptr && msg->id.len) {
            sl_buf_reset (&s->rs.id);
            sl_buf_append_str (&s->rs.id, msg->id);
        }
        if (msg->model.ptr && msg->model.len) {
            sl_buf_reset (&s->rs.model);
            sl_buf_append_str (&s->rs.model, msg->model);
        }
        s->rs.created = msg->ts;
        return;
    }
    sl_render_openai_block (&s->rs, msg, &self->out);
    s_frame (self, s, 200, SL_EMITTER_SSE_TYPE, false);
}

static void
s_on_error (sl_emitter_t *self, s_stream_t *s, const sl_msg_t *msg)
{
    s->rs.failed = true;
    if (!s->rs.started) {
        //  Nothing sent yet: a real HTTP error response.
        sl_render_openai_error_body (msg, &self->out);
        int status = msg->status >= 400 ? msg->status : SL_EMITTER_DEFAULT_ERROR_STATUS;
        s_frame (self, s, status, SL_EMITTER_JSON_TYPE, true);
        return;
    }
    sl_render_openai_error (&s->rs, msg, &self->out);
    s_frame (self, s, 200, SL_EMITTER_SSE_TYPE, false);
}

static void
s_on_end (sl_emitter_t *self, s_stream_t *s)
{
    if (s->last_sent)
        return;
    //  The aggregator always sends a finish before a normal end, so a
    //  stream that did not fail has started by now.
    if (!s->rs.failed)
        sl_render_openai_end (&s->rs, &self->out);
    s_frame (self, s, 200, SL_EMITTER_SSE_TYPE, true);
}

void
sl_emitter_feed (sl_emitter_t *self, const sl_msg_t *msg, sl_emit_fn *emit, void *arg)
{
    self->emit = emit;
    self->arg = arg;
    s_stream_t *s = sl_sidmap_get (self->streams, msg->sid);
    if (s && msg->epoch < s->epoch) {
        self->dropped++;
        return;
    }
    if (s && msg->epoch > s->epoch) {
        sl_sidmap_remove (self->streams, msg->sid);
        s_stream_free (s);
        s = NULL;
    }
    if (msg->type == SL_MSG_START) {
        if (s)
            self->dropped++;
        else
            s_on_start (self, msg);
        return;
    }
    if (!s) {
        self->dropped++;
        return;
    }
    switch (msg->type) {
        case SL_MSG_BLOCK:
            if (!s->last_sent)
                s_on_block (self, s, msg);
            break;
        case SL_MSG_ERROR:
            if (!s->last_sent)
                s_on_error (self, s, msg);
            break;
        case SL_MSG_END:
            s_on_end (self, s);
            sl_sidmap_remove (self->streams, s->sid);
            s_stream_free (s);
            break;
        default:
            break;                      //  verdicts are for taps, not clients
    }
}
