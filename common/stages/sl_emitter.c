/*  sl_emitter.c - stream bookkeeping, framing and the legality gate around
    the renderers (see sl_emitter.h).

    States of a stream, from the client's point of view:
        QUIET     nothing sent: an error can still be an HTTP status
        STREAMING the FIRST frame is out (status 200, an event stream)
        CLOSED    the LAST frame is out; everything else is ignored until END

    A non-streaming response stays QUIET until its END: its events go into
    a snapshot, and the END renders the whole body (or an HTTP error).
*/
#include "common/stages/sl_emitter.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"
#include "common/base/sl_sidmap.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_render.h"
#include "common/dialects/sl_validate.h"
#include "common/stages/sl_usage.h"

#define SL_EMITTER_LIVENESS_US 100000  //  frameless input this long: a liveness keep-alive
#define SL_EMITTER_SSE_TYPE "text/event-stream"
#define SL_EMITTER_JSON_TYPE "application/json"
#define SL_EMITTER_DEFAULT_ERROR_STATUS 502
#define SL_EMITTER_ILLEGAL_CODE "illegal_output"
#define SL_EMITTER_FALLBACK_DIALECT SL_DIALECT_OPENAI   //  answers a stream of a dialect not registered

typedef enum { ST_QUIET, ST_STREAMING, ST_CLOSED } s_state_t;

typedef struct {
    uint8_t sid [SL_SID_SIZE];
    uint32_t epoch;
    uint64_t seq;                       //  next frame sequence
    int64_t signalled_us;               //  last frame or keep-alive sent, by the clock
    s_state_t state;
    bool opened;                        //  a keep-alive opened the response (status 200 out)
    sl_buf_t reply_to;                  //  owning gateway's instance name
    const sl_renderer_t *renderer;
    sl_validate_t *validate;
    sl_render_stream_t rs;
    sl_snapshot_t *snap;                //  non-streaming: the response so far; NULL when streaming
    sl_usage_tally_t usage;             //  what it spent, for the LAST frame
} s_stream_t;

struct _sl_emitter_t {
    sl_sidmap_t *streams;
    sl_emitter_stats_t stats;
    sl_buf_t out;                       //  rendered bytes, not yet checked
    sl_buf_t frame;                     //  checked bytes of the frame being built
    sl_buf_t why;                       //  reason text of a withheld event
    sl_emit_fn *emit;
    void *arg;
    int64_t (*clock) (void *arg);       //  µs, for liveness keep-alives; NULL: none
    void *clock_arg;
};

sl_emitter_t *
sl_emitter_new (void)
{
    sl_emitter_t *self = sl_xcalloc (1, sizeof *self);
    self->streams = sl_sidmap_new ();
    return self;
}

bool
sl_emitter_can_render (int dialect)
{
    return sl_render_for (dialect) != NULL;
}

static void
s_stream_free (s_stream_t *s)
{
    sl_buf_free (&s->reply_to);
    sl_render_stream_clear (&s->rs);
    sl_validate_destroy (&s->validate);
    sl_snapshot_destroy (&s->snap);
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
    sl_buf_free (&self->frame);
    sl_buf_free (&self->why);
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
    return self->stats.dropped;
}

void
sl_emitter_set_clock (sl_emitter_t *self, int64_t (*clock) (void *arg), void *arg)
{
    self->clock = clock;
    self->clock_arg = arg;
}

const sl_emitter_stats_t *
sl_emitter_stats (sl_emitter_t *self)
{
    return &self->stats;
}

//  --------------------------------------------------------------------------
//  Frames

static void s_send_frame_flagged (sl_emitter_t *self, s_stream_t *s, int status, const char *content_type,
                                  bool last, uint32_t flags);

//  Send self->frame as one frame (nothing when empty and not last).
static void
s_send_frame (sl_emitter_t *self, s_stream_t *s, int status, const char *content_type, bool last)
{
    s_send_frame_flagged (self, s, status, content_type, last, 0);
}

//  The end of a failed stream: self->frame, then the renderer's part that
//  must reach the client by itself (rs.alone) as the last frame, ALONE.
static void
s_send_failed_end (sl_emitter_t *self, s_stream_t *s)
{
    if (!s->rs.alone.len) {
        s_send_frame (self, s, 200, SL_EMITTER_SSE_TYPE, true);
        return;
    }
    s_send_frame (self, s, 200, SL_EMITTER_SSE_TYPE, false);
    sl_str_t alone = sl_buf_str (&s->rs.alone);
    if (sl_validate_event (s->validate, alone) == 0) {
        sl_buf_append_str (&self->frame, alone);
        self->stats.events_out++;
    }
    sl_buf_reset (&s->rs.alone);
    s_send_frame_flagged (self, s, 200, SL_EMITTER_SSE_TYPE, true, SL_F_ALONE);
}

static void
s_send_frame_flagged (sl_emitter_t *self, s_stream_t *s, int status, const char *content_type, bool last,
                      uint32_t flags)
{
    if (self->frame.len == 0 && !last)
        return;
    sl_msg_t f;
    sl_msg_init (&f, SL_MSG_FRAME);
    memcpy (f.sid, s->sid, SL_SID_SIZE);
    f.epoch = s->epoch;
    f.seq = s->seq++;
    f.body = sl_buf_str (&self->frame);
    f.reply_to = sl_buf_str (&s->reply_to);
    f.flags = flags;
    if (s->state == ST_QUIET) {
        f.flags |= SL_F_FIRST;
        f.status = status;
        f.content_type = sl_str (content_type);
        s->state = ST_STREAMING;
    }
    if (last) {
        //  What the stream spent, for the gateway's limits (never written
        //  to the client): as reported, else estimated and flagged so.
        f.flags |= SL_F_LAST;
        f.has_usage = true;
        if (sl_usage_tally_result (&s->usage, &f.usage))
            f.flags |= SL_F_ESTIMATED;
        s->state = ST_CLOSED;
    }
    self->stats.frames++;
    self->emit (self->arg, &f);
    sl_buf_reset (&self->frame);
}

//  An empty frame, neither FIRST nor LAST: a non-streaming response made
//  progress. The gateway writes nothing for it but acknowledges it like
//  any frame, so a long response still shows the stream is alive. Only
//  events that come from the stream's input make one (not keep-alives),
//  so a re-sent stream numbers its frames the same way.
static void
s_send_progress (sl_emitter_t *self, s_stream_t *s)
{
    sl_msg_t f;
    sl_msg_init (&f, SL_MSG_FRAME);
    memcpy (f.sid, s->sid, SL_SID_SIZE);
    f.epoch = s->epoch;
    f.seq = s->seq++;
    f.body = SL_STR_LIT ("");
    f.reply_to = sl_buf_str (&s->reply_to);
    self->stats.frames++;
    self->emit (self->arg, &f);
}

//  Nothing reached the client yet, not even a keep-alive: an error can
//  still be an HTTP status.
static bool
s_untouched (const s_stream_t *s)
{
    return s->state == ST_QUIET && !s->opened;
}

//  A whole HTTP error response, when nothing was sent yet.
static void
s_http_error (sl_emitter_t *self, s_stream_t *s, int status, sl_str_t code, sl_str_t message)
{
    sl_buf_reset (&self->frame);
    s->renderer->error_body (status, code, message, &self->frame);
    self->stats.events_out++;
    self->stats.http_errors++;
    s_send_frame (self, s, status, SL_EMITTER_JSON_TYPE, true);
}

//  Tell monitoring why the stream was cut.
static void
s_report_illegal (sl_emitter_t *self, s_stream_t *s)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_ERROR);
    memcpy (m.sid, s->sid, SL_SID_SIZE);
    m.epoch = s->epoch;
    m.code = SL_STR_LIT (SL_EMITTER_ILLEGAL_CODE);
    m.message = sl_buf_str (&self->why);
    m.status = SL_EMITTER_DEFAULT_ERROR_STATUS;
    self->emit (self->arg, &m);
}

//  An event was withheld (or the response could not be completed): end
//  the stream cleanly in the client's dialect.
static void
s_cut (sl_emitter_t *self, s_stream_t *s, const char *what, const char *why)
{
    self->stats.illegal++;
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (s->sid, hex);
    sl_buf_reset (&self->why);
    sl_buf_printf (&self->why, "sluice withheld %s that would break the %s client: %s",
                   what, sl_dialect_name (s->rs.client_dialect), why ? why : sl_validate_reason (s->validate));
    sl_log_warn ("illegal_output", "sid=%s %s", hex, sl_buf_cstr (&self->why));
    s_report_illegal (self, s);
    s->rs.failed = true;
    if (s_untouched (s) && self->frame.len == 0) {
        s_http_error (self, s, SL_EMITTER_DEFAULT_ERROR_STATUS, SL_STR_LIT (SL_EMITTER_ILLEGAL_CODE),
                      sl_buf_str (&self->why));
        return;
    }
    sl_buf_t err = { 0 };
    s->renderer->error (&s->rs, SL_EMITTER_DEFAULT_ERROR_STATUS, SL_STR_LIT (SL_EMITTER_ILLEGAL_CODE),
                        sl_buf_str (&self->why), &err);
    //  The error's events are checked too, one by one, as far as they are
    //  legal (an error event is legal in every open state).
    sl_str_t rest = sl_buf_str (&err);
    while (rest.len) {
        size_t n = sl_validate_next_event (rest);
        sl_str_t event = sl_str_n (rest.ptr, n ? n : rest.len);
        if (sl_validate_event (s->validate, event))
            break;
        sl_buf_append_str (&self->frame, event);
        self->stats.events_out++;
        rest = sl_str_n (rest.ptr + event.len, rest.len - event.len);
    }
    sl_buf_free (&err);
    s_send_failed_end (self, s);
}

//  Check every event rendered into self->out and move the legal ones into
//  the frame; the first illegal one cuts the stream. Returns 0 when all
//  were legal.
static int
s_check (sl_emitter_t *self, s_stream_t *s)
{
    sl_str_t rest = sl_buf_str (&self->out);
    int rc = 0;
    while (rest.len) {
        size_t n = sl_validate_next_event (rest);
        sl_str_t event = sl_str_n (rest.ptr, n ? n : rest.len);
        if (sl_validate_event (s->validate, event)) {
            s_cut (self, s, "an event", NULL);
            rc = -1;
            break;
        }
        sl_buf_append_str (&self->frame, event);
        self->stats.events_out++;
        rest = sl_str_n (rest.ptr + event.len, rest.len - event.len);
    }
    sl_buf_reset (&self->out);
    return rc;
}

//  --------------------------------------------------------------------------
//  Stream events

static void
s_on_start (sl_emitter_t *self, const sl_msg_t *msg)
{
    s_stream_t *s = sl_xcalloc (1, sizeof *s);
    memcpy (s->sid, msg->sid, SL_SID_SIZE);
    s->epoch = msg->epoch;
    sl_buf_append_str (&s->reply_to, msg->reply_to);
    bool known = sl_render_stream_init (&s->rs, msg->client_dialect, msg->upstream_dialect) == 0;
    s->rs.flags = msg->flags;
    sl_sid_hex (msg->sid, s->rs.sid_hex);
    sl_buf_append_str (&s->rs.model, msg->model);
    sl_usage_tally_init (&s->usage, msg);
    s->renderer = s->rs.renderer;
    s->validate = sl_validate_new (msg->client_dialect);
    if (!sl_dialect_same_format (msg->client_dialect, msg->upstream_dialect) && msg->upstream_dialect)
        self->stats.translated++;
    if (!(msg->flags & SL_F_STREAM)) {
        s->snap = sl_snapshot_new ();
        sl_snapshot_feed (s->snap, msg);
    }
    sl_sidmap_put (self->streams, msg->sid, s);
    self->stats.streams++;
    if (!known) {
        //  The gateway only accepts dialects we render: a stream of another
        //  is an error, answered in SL_EMITTER_FALLBACK_DIALECT's shape so
        //  that the gateway can end it.
        sl_render_stream_init (&s->rs, SL_EMITTER_FALLBACK_DIALECT, SL_EMITTER_FALLBACK_DIALECT);
        s->renderer = s->rs.renderer;
        sl_validate_destroy (&s->validate);
        s->validate = sl_validate_new (SL_EMITTER_FALLBACK_DIALECT);
        s_http_error (self, s, SL_EMITTER_DEFAULT_ERROR_STATUS, SL_STR_LIT ("unsupported_dialect"),
                      SL_STR_LIT ("the emitter cannot render this client dialect"));
    }
}

//  A keep-alive is time-driven, so it must not take a frame number: a
//  re-sent stream numbers frames the same way whatever keep-alives went out. It
//  tells the gateway (and through its acks the ingest) that the stream is
//  alive; once the response has started it also carries the dialect's
//  comment to keep the client's connection open.
//
//  A visible keep-alive while nothing was sent (the first block is a call
//  the judge holds) opens the response: status 200 and the dialect's
//  keep-alive, so the client hears from sluice during the hold. Errors are
//  then events of the stream, not an HTTP status.
static void
s_send_keepalive (sl_emitter_t *self, s_stream_t *s, bool visible)
{
    sl_buf_reset (&self->out);
    bool open_now = visible && s->state == ST_QUIET && !s->opened && !s->snap;
    if (visible && (s->state == ST_STREAMING || s->opened || open_now))
        sl_buf_puts (&self->out, s->renderer->keepalive);
    sl_msg_t f;
    sl_msg_init (&f, SL_MSG_FRAME);
    memcpy (f.sid, s->sid, SL_SID_SIZE);
    f.epoch = s->epoch;
    f.seq = s->seq;
    f.flags = SL_F_KEEPALIVE;
    if (open_now) {
        f.flags |= SL_F_FIRST;
        f.status = 200;
        f.content_type = SL_STR_LIT (SL_EMITTER_SSE_TYPE);
        s->opened = true;
    }
    f.body = sl_buf_str (&self->out);
    f.reply_to = sl_buf_str (&s->reply_to);
    self->emit (self->arg, &f);
    sl_buf_reset (&self->out);
}

//  A block of a translated stream: false when the client's dialect cannot
//  carry it (dropped and counted once per block), else the block as it
//  goes on in *copy.
static bool
s_crosses (sl_emitter_t *self, const sl_msg_t *msg, sl_msg_t *copy)
{
    *copy = *msg;
    if (msg->kind != SL_B_START && msg->kind != SL_B_DELTA && msg->kind != SL_B_END)
        return true;
    bool foreign = msg->block == SL_BK_SERVER_TOOL_USE || msg->block == SL_BK_SERVER_TOOL_RESULT
                || msg->block == SL_BK_CITATION;
    if (foreign) {
        if (msg->kind == SL_B_END)
            self->stats.translation_dropped++;
        return false;
    }
    if (msg->kind == SL_B_END && msg->block == SL_BK_TEXT && msg->body.len) {
        sl_buf_t scratch = { 0 };
        if (sl_render_put_citations (&scratch, msg->body))
            self->stats.translation_dropped++;
        sl_buf_free (&scratch);
        copy->body = SL_STR_NULL;
    }
    return true;
}

static void
s_on_block (sl_emitter_t *self, s_stream_t *s, const sl_msg_t *msg)
{
    sl_msg_t crossed;
    if (s->rs.client_dialect != s->rs.upstream_dialect && s->rs.upstream_dialect) {
        if (!s_crosses (self, msg, &crossed))
            return;
        msg = &crossed;
    }
    if (msg->kind == SL_B_KEEPALIVE) {
        //  Visible (a comment for the client) only when the judge says so.
        if (s->state != ST_CLOSED)
            s_send_keepalive (self, s, (msg->flags & SL_F_KEEPALIVE) != 0);
        return;
    }
    if (msg->kind == SL_B_MESSAGE) {
        //  The upstream's identity of the response, used by every event.
        if (msg->id.ptr && msg->id.len) {
            sl_buf_reset (&s->rs.id);
            sl_buf_append_str (&s->rs.id, msg->id);
        }
        if (msg->model.ptr && msg->model.len) {
            sl_buf_reset (&s->rs.model);
            sl_buf_append_str (&s->rs.model, msg->model);
        }
        s->rs.created = msg->ts;
        if (msg->has_usage) {
            s->rs.start_has_usage = true;
            s->rs.start_usage = msg->usage;
        }
        if (!s->snap)
            return;
    }
    if (s->snap) {
        if (msg->kind != SL_B_KEEPALIVE) {
            sl_snapshot_feed (s->snap, msg);
            s_send_progress (self, s);
        }
        return;
    }
    s->renderer->block (&s->rs, msg, &self->out);
    if (s_check (self, s) == 0)
        s_send_frame (self, s, 200, SL_EMITTER_SSE_TYPE, false);
}

static void
s_on_error (sl_emitter_t *self, s_stream_t *s, const sl_msg_t *msg)
{
    s->rs.failed = true;
    int status = msg->status >= 400 && msg->status <= 599 ? msg->status : SL_EMITTER_DEFAULT_ERROR_STATUS;
    if (s_untouched (s)) {
        //  Nothing sent yet: a real HTTP error response.
        s_http_error (self, s, status, msg->code, msg->message);
        return;
    }
    s->renderer->error (&s->rs, status, msg->code, msg->message, &self->out);
    if (s_check (self, s) == 0)
        s_send_failed_end (self, s);
}

//  The end of a non-streaming response: its whole body, checked; an HTTP
//  error when it did not finish or the body would not be legal.
static void
s_send_body (sl_emitter_t *self, s_stream_t *s)
{
    if (sl_snapshot_finish (s->snap) == SL_FIN_NONE) {
        //  The response stopped short of its finish: never a 200.
        s_cut (self, s, "the end of a response", "the response ended before its finish");
        return;
    }
    sl_buf_reset (&self->frame);
    s->renderer->body (&s->rs, s->snap, &self->frame);
    if (sl_validate_body (s->validate, sl_buf_str (&self->frame))) {
        sl_buf_reset (&self->frame);
        s_cut (self, s, "a response body", NULL);
        return;
    }
    self->stats.events_out++;
    s_send_frame (self, s, 200, SL_EMITTER_JSON_TYPE, true);
}

static void
s_on_end (sl_emitter_t *self, s_stream_t *s)
{
    if (s->state == ST_CLOSED)
        return;
    if (s->snap) {
        s_send_body (self, s);
        return;
    }
    if (!s->rs.failed) {
        s->renderer->end (&s->rs, &self->out);
        if (s_check (self, s))
            return;
    }
    if (sl_validate_end (s->validate) && !s->rs.failed) {
        //  The response stopped short of its last event (no finish came):
        //  say so rather than let the client take it as complete.
        s_cut (self, s, "the end of a response", NULL);
        return;
    }
    if (s_untouched (s) && self->frame.len == 0) {
        s_http_error (self, s, SL_EMITTER_DEFAULT_ERROR_STATUS, SL_STR_LIT ("empty_response"),
                      SL_STR_LIT ("the upstream ended the response without any content"));
        return;
    }
    s_send_frame (self, s, 200, SL_EMITTER_SSE_TYPE, true);
}

void
sl_emitter_feed (sl_emitter_t *self, const sl_msg_t *msg, sl_emit_fn *emit, void *arg)
{
    self->emit = emit;
    self->arg = arg;
    s_stream_t *s = sl_sidmap_get (self->streams, msg->sid);
    if (s && msg->epoch < s->epoch) {
        self->stats.dropped++;
        return;
    }
    if (s && msg->epoch > s->epoch) {
        sl_sidmap_remove (self->streams, msg->sid);
        s_stream_free (s);
        s = NULL;
    }
    if (sl_log_enabled (SL_LOG_DEBUG) && (msg->type == SL_MSG_START || !s)) {
        char hex [SL_SID_HEX_SIZE];
        sl_sid_hex (msg->sid, hex);
        sl_log_debug (s ? "dup_start" : msg->type == SL_MSG_START ? "start" : "unknown_stream",
                      "sid=%s epoch=%u type=%d", hex, msg->epoch, msg->type);
    }
    if (msg->type == SL_MSG_START) {
        if (s)
            self->stats.dropped++;
        else
            s_on_start (self, msg);
        return;
    }
    if (!s) {
        self->stats.dropped++;
        return;
    }
    sl_usage_tally_feed (&s->usage, msg);
    switch (msg->type) {
        case SL_MSG_BLOCK: {
            if (s->state == ST_CLOSED)
                break;
            uint64_t frames = s->seq;
            s_on_block (self, s, msg);
            //  Input that produces no frame (a part held for the dialect's
            //  order, a non-streaming response being built) must still show
            //  the gateway, and through its acks the ingest, that the stream
            //  is alive: an empty keep-alive when nothing went out for
            //  SL_EMITTER_LIVENESS_US. Empty, so the client's bytes do not
            //  depend on timing; without a clock (tests, sluice-replay) none.
            if (!self->clock || s->state == ST_CLOSED)
                break;
            int64_t now = self->clock (self->clock_arg);
            if (s->seq != frames || msg->kind == SL_B_KEEPALIVE)
                s->signalled_us = now;
            else
            if (now - s->signalled_us >= SL_EMITTER_LIVENESS_US) {
                s_send_keepalive (self, s, false);
                s->signalled_us = now;
            }
            break;
        }
        case SL_MSG_ERROR:
            if (s->state != ST_CLOSED)
                s_on_error (self, s, msg);
            break;
        case SL_MSG_END:
            s_on_end (self, s);
            //  What the client's renderer could not carry, of a translated stream.
            if (s->rs.client_dialect != s->rs.upstream_dialect)
                self->stats.translation_dropped += s->rs.dropped;
            sl_sidmap_remove (self->streams, s->sid);
            s_stream_free (s);
            break;
        default:
            break;                      //  verdicts are for taps, not clients
    }
}
