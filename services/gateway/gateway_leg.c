/*  gateway_leg.c - the gateway's internal streams (gateway_leg.h): a
    request the gateway makes itself goes the way a client's goes once its
    body is read (the core's: the request policy, the job, the delivery),
    with no HTTP client at its end: its frames are gathered here, and its
    end, whatever it is, is given to the leg's done.

    A leg is a core stream with a sink (gateway_core.h): the places that
    would write to a client call the sink (frame, fail), which ends the
    stream (gateway_core_stream_end), and a stream that ends otherwise
    still ends its leg (ended): a leg never ends silently.

    Each leg keeps its own timeline (started, judged, answered, first
    frame back, ended), logged at debug level when it ends (leg_timeline):
    where an MCP request's time goes, leg by leg.
*/
#include "services/gateway/gateway_leg.h"

#include <czmq.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_log.h"
#include "common/dialects/sl_render.h"
#include "common/mcp/sl_mcp_leg.h"
#include "common/otel/sl_trace.h"

#define S_LEG_CHAT_PATH "/v1/chat/completions"

//  The kinds and outcomes of sluice_mcp_legs_total.
typedef enum { S_KIND_CALL, S_KIND_RESULT, S_KIND_LIST, S_KIND_COUNT } s_kind_t;
static const char *s_kind_names [] = { "call", "result", "list" };
_Static_assert (sizeof s_kind_names / sizeof s_kind_names [0] == S_KIND_COUNT, "a name for every kind");

struct _gateway_legs_t {
    gateway_core_t *core;
    zloop_t *loop;
    sl_metrics_t *metrics;
    zlistx_t *legs;                     //  legs whose stream lives (s_leg_t)
    uint64_t next_id;                   //  the last leg's id
    int due_timer;                      //  legs that ended while starting, -1 while none
};

//  One leg, from its start to its stream's end.
typedef struct {
    gateway_legs_t *owner;
    uint64_t id;
    uint8_t sid [SL_SID_SIZE];          //  its stream's
    gateway_leg_done_fn *done;
    void *arg;
    s_kind_t kind;
    sl_buf_t inline_answer;             //  REQ inl
    sl_buf_t mcp;                       //  REQ mcp, NUL-terminated
    sl_buf_t provider;                  //  REQ prov, "mcp:<server>"
    sl_buf_t traceparent, tracestate;   //  the MCP request's, NUL-terminated (empty: none)
    //  What came of it
    int status;
    sl_buf_t answer;
    sl_buf_t judged;
    bool refused;
    bool early;                         //  answer_when_judged
    bool judged_due;                    //  judged: done on the reactor's next turn, once the job left
    bool answered;                      //  done was called when judged; the stream goes on for its record
    int judged_status;                  //  200, or the status of the request policy's refusal
    //  Its timeline, monotonic µs (0: not reached)
    int64_t started_us, judged_us, answered_us, first_frame_us;
    int64_t started_unix_us;            //  its start, Unix µs (stream_stamp's clock)
    bool starting;                      //  inside gateway_legs_start: done must wait
    bool due;                           //  ended while starting: done on the reactor's next turn
    bool ended;                         //  done was called (or the leg was cancelled)
} s_leg_t;

static s_kind_t
s_kind_of (const char *mcp)
{
    if (!mcp || strncmp (mcp, "tools/list", 10) == 0)
        return S_KIND_LIST;
    size_t len = strlen (mcp);
    if (len > 7 && strcmp (mcp + len - 7, " result") == 0)
        return S_KIND_RESULT;
    return S_KIND_CALL;
}

static void
s_count (gateway_legs_t *self, s_kind_t kind, const char *outcome)
{
    char labels [96];
    snprintf (labels, sizeof labels, "kind=\"%s\",outcome=\"%s\"", s_kind_names [kind], outcome);
    sl_counter_inc (sl_metrics_counter (self->metrics, "sluice_mcp_legs_total", labels,
                                        "The gateway's own requests for MCP (call, result, list) by outcome"));
}

static void
s_leg_free (s_leg_t **leg_p)
{
    s_leg_t *leg = *leg_p;
    if (!leg)
        return;
    void *handle = zlistx_find (leg->owner->legs, leg);
    if (handle)
        zlistx_delete (leg->owner->legs, handle);
    sl_buf_free (&leg->inline_answer);
    sl_buf_free (&leg->mcp);
    sl_buf_free (&leg->provider);
    sl_buf_free (&leg->traceparent);
    sl_buf_free (&leg->tracestate);
    sl_buf_free (&leg->answer);
    sl_buf_free (&leg->judged);
    free (leg);
    *leg_p = NULL;
}

static const char *
s_outcome (const s_leg_t *leg, int status)
{
    return leg->refused ? "refused" : status == 200 ? "ok" : "error";
}

//  Give the leg's end to its done, once.
static void
s_deliver (s_leg_t *leg)
{
    if (leg->ended)
        return;
    leg->ended = true;
    gateway_leg_result_t result = {
        .status = leg->status ? leg->status : 502,
        .answer = sl_buf_str (&leg->answer),
        .judged = sl_buf_str (&leg->judged),
        .refused = leg->refused
    };
    memcpy (result.sid, leg->sid, SL_SID_SIZE);
    s_count (leg->owner, leg->kind, s_outcome (leg, result.status));
    leg->done (leg->arg, &result);
}

//  A leg answered when judged: its done gets the judged request (or the
//  refusal) now, and its stream goes on for its record with the caller
//  returned. Its job must have left: else it waits for its end as any leg.
static void
s_answer_judged (s_leg_t *leg)
{
    if (leg->ended || gateway_core_stream_return_caller (leg->owner->core, leg->sid))
        return;
    leg->ended = true;
    leg->answered = true;
    leg->answered_us = zclock_usecs ();
    gateway_leg_result_t result = {
        .status = leg->judged_status,
        .answer = SL_STR_NULL,
        .judged = sl_buf_str (&leg->judged),
        .refused = leg->refused
    };
    memcpy (result.sid, leg->sid, SL_SID_SIZE);
    s_count (leg->owner, leg->kind, s_outcome (leg, result.status));
    leg->done (leg->arg, &result);
}

static double
s_ms_since (int64_t from, int64_t to)
{
    return to ? (double) (to - from) / 1000.0 : -1.0;
}

//  The leg's timeline, in ms from its start (-1: not reached).
static void
s_log_timeline (const s_leg_t *leg, int64_t ended_us)
{
    if (!sl_log_enabled (SL_LOG_DEBUG))
        return;
    char sid [SL_SID_HEX_SIZE];
    sl_sid_hex (leg->sid, sid);
    sl_log_debug ("leg_timeline", "sid=%.8s kind=%s start_unix_us=%lld judged_ms=%.3f answered_ms=%.3f"
                  " first_frame_ms=%.3f ended_ms=%.3f status=%d", sid, s_kind_names [leg->kind],
                  (long long) leg->started_unix_us,
                  s_ms_since (leg->started_us, leg->judged_us), s_ms_since (leg->started_us, leg->answered_us),
                  s_ms_since (leg->started_us, leg->first_frame_us), s_ms_since (leg->started_us, ended_us),
                  leg->status);
}

static s_leg_t *
s_find (gateway_legs_t *self, uint64_t id)
{
    for (s_leg_t *leg = zlistx_first (self->legs); leg; leg = zlistx_next (self->legs))
        if (leg->id == id)
            return leg;
    return NULL;
}

static int s_on_due (zloop_t *loop, int timer_id, void *arg);

static void
s_schedule (gateway_legs_t *self)
{
    if (self->due_timer < 0)
        self->due_timer = zloop_timer (self->loop, 0, 1, s_on_due, self);
}

static int
s_on_due (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    gateway_legs_t *self = arg;
    self->due_timer = -1;
    //  By id, not by pointer: a done may start or cancel other legs.
    size_t count = 0;
    uint64_t *due = sl_xcalloc (zlistx_size (self->legs) + 1, sizeof *due);
    for (s_leg_t *leg = zlistx_first (self->legs); leg; leg = zlistx_next (self->legs))
        if (leg->due || leg->judged_due)
            due [count++] = leg->id;
    for (size_t i = 0; i < count; i++) {
        s_leg_t *leg = s_find (self, due [i]);
        if (leg && leg->judged_due) {
            leg->judged_due = false;
            s_answer_judged (leg);
            leg = s_find (self, due [i]);
        }
        if (leg && leg->due)
            gateway_core_stream_end (self->core, leg->sid);     //  delivers its end
    }
    free (due);
    gateway_core_flush (self->core);
    return 0;
}

//  The leg's stream is over: the stream ends and its end goes to done,
//  unless the leg is still starting (done never runs inside
//  gateway_legs_start): then both wait for the reactor's next turn.
static void
s_end (s_leg_t *leg)
{
    if (leg->starting) {
        leg->due = true;
        return;
    }
    gateway_core_stream_end (leg->owner->core, leg->sid);
}

//  --------------------------------------------------------------------------
//  The sink: what the core does with a leg's stream

static void
s_frame (void *arg, const sl_delivery_write_t *w)
{
    s_leg_t *leg = arg;
    if (!leg->first_frame_us)
        leg->first_frame_us = zclock_usecs ();
    if (w->open || w->whole)
        leg->status = w->status;
    sl_buf_append_str (&leg->answer, w->body);
    if (w->end)
        s_end (leg);
}

static void
s_fail (void *arg, int status, const char *code, const char *message)
{
    s_leg_t *leg = arg;
    leg->status = status;
    sl_buf_reset (&leg->answer);
    sl_render_for (SL_DIALECT_OPENAI)->error_body (status, sl_str (code), sl_str (message), &leg->answer);
    s_end (leg);
}

static void
s_job (void *arg, sl_msg_t *job, bool refused_by_policy)
{
    s_leg_t *leg = arg;
    job->provider = sl_buf_str (&leg->provider);
    job->mcp = sl_str (sl_buf_cstr (&leg->mcp));
    //  Refused or not, the job carries its answer: the ingest then names
    //  the leg's provider and never looks for a network one.
    job->inline_answer = sl_buf_str (&leg->inline_answer);
    if (!(job->flags & SL_F_DENIED)) {
        sl_buf_reset (&leg->judged);
        sl_buf_append_str (&leg->judged, job->body);
    }
    leg->refused = refused_by_policy;
    leg->judged_status = (job->flags & SL_F_DENIED) && job->status ? job->status : 200;
    leg->judged_us = zclock_usecs ();
    //  The job leaves when this returns: done on the reactor's next turn.
    if (leg->early && !leg->ended) {
        leg->judged_due = true;
        s_schedule (leg->owner);
    }
}

static void
s_ended (void *arg)
{
    s_leg_t *leg = arg;
    s_log_timeline (leg, zclock_usecs ());
    if (leg->answered && (leg->status != 200 || !leg->answer.len)) {
        char sid [SL_SID_HEX_SIZE];
        sl_sid_hex (leg->sid, sid);
        sl_log_warn ("leg_failed_after_answer", "sid=%.8s kind=%s status=%d: the leg was answered when judged;"
                     " its stream ended without the pipeline's answer", sid, s_kind_names [leg->kind],
                     leg->status);
    }
    if (!leg->ended && !leg->starting) {
        if (!leg->status && !leg->answer.len) {
            //  Ended without an end of its own: never silently.
            leg->status = 502;
            sl_render_for (SL_DIALECT_OPENAI)->error_body (502, SL_STR_LIT ("upstream_lost"),
                                                           SL_STR_LIT ("the leg's stream ended without an answer"),
                                                           &leg->answer);
        }
        s_deliver (leg);
    }
    s_leg_free (&leg);
}

static void
s_dropped (void *arg)
{
    s_leg_t *leg = arg;
    s_leg_free (&leg);
}

static const gateway_sink_t s_sink = {
    .frame = s_frame,
    .fail = s_fail,
    .job = s_job,
    .ended = s_ended,
    .dropped = s_dropped,
};

//  --------------------------------------------------------------------------
//  Legs

static void
s_copy_cstr (sl_buf_t *out, const char *text)
{
    if (text && *text) {
        sl_buf_puts (out, text);
        sl_buf_cstr (out);
    }
}

int
gateway_legs_start (gateway_legs_t *self, const gateway_leg_t *leg, gateway_leg_done_fn *done, void *arg,
                    uint64_t *id)
{
    if (id)
        *id = 0;
    if (!leg || !done || !leg->caller || !leg->server || !leg->inline_answer.ptr
    ||  sl_service_draining (gateway_core_service (self->core)))
        return -1;
    sl_endpoint_t route;
    if (sl_job_route (S_LEG_CHAT_PATH, &route) != 1)
        return -1;
    //  The leg's own dialect end to end: ud = cd = openai, no routing.
    sl_job_t parsed;
    if (sl_job_parse (&route, leg->body, &parsed)) {
        sl_log_warn ("leg_refused", "server=%s mcp=%s: the leg's request does not parse: %s", leg->server,
                     leg->mcp ? leg->mcp : "-", sl_buf_cstr (&parsed.error_message));
        sl_job_clear (&parsed);
        return -1;
    }
    s_leg_t *state = sl_xcalloc (1, sizeof *state);
    state->owner = self;
    state->id = ++self->next_id;
    state->done = done;
    state->arg = arg;
    state->kind = s_kind_of (leg->mcp);
    state->early = leg->answer_when_judged;
    state->started_us = zclock_usecs ();
    state->started_unix_us = sl_trace_now_us ();
    sl_buf_append_str (&state->inline_answer, leg->inline_answer);
    sl_buf_cstr (&state->inline_answer);        //  never NULL: present though empty
    sl_buf_puts (&state->mcp, leg->mcp ? leg->mcp : "");
    sl_buf_cstr (&state->mcp);
    sl_mcp_leg_model (leg->server, &state->provider);   //  "mcp:<server>"
    s_copy_cstr (&state->traceparent, leg->traceparent);
    s_copy_cstr (&state->tracestate, leg->tracestate);
    state->starting = true;
    zlistx_add_end (self->legs, state);
    if (id)
        *id = state->id;
    //  Admitted already, with its MCP request: its caller is borrowed.
    gateway_stream_spec_t spec = {
        .sink = &s_sink,
        .sink_arg = state,
        .caller = leg->caller,
        .borrowed = true,
        .traceparent = state->traceparent.len ? sl_buf_cstr (&state->traceparent) : NULL,
        .tracestate = state->tracestate.len ? sl_buf_cstr (&state->tracestate) : NULL,
    };
    gateway_core_stream_start (self->core, &spec, &parsed, state->sid);
    state->starting = false;
    if (state->due)
        s_schedule (self);
    gateway_core_flush (self->core);
    return 0;
}

void
gateway_legs_cancel (gateway_legs_t *self, uint64_t id)
{
    for (s_leg_t *leg = zlistx_first (self->legs); leg; leg = zlistx_next (self->legs)) {
        if (leg->id != id)
            continue;
        if (leg->answered)
            return;                     //  answered: its stream goes on for its record
        leg->ended = true;              //  done is not called
        s_count (self, leg->kind, "cancelled");
        gateway_core_stream_cancel (self->core, leg->sid, "the MCP request is gone");
        return;
    }
}

gateway_legs_t *
gateway_legs_new (gateway_core_t *core)
{
    gateway_legs_t *self = sl_xcalloc (1, sizeof *self);
    self->core = core;
    self->loop = sl_service_loop (gateway_core_service (core));
    self->metrics = sl_service_metrics (gateway_core_service (core));
    self->legs = zlistx_new ();
    self->due_timer = -1;
    //  Every series there from the start, so that a rate reads 0, not nothing.
    static const char *outcomes [] = { "ok", "refused", "error", "cancelled" };
    for (int k = 0; k < S_KIND_COUNT; k++)
        for (size_t o = 0; o < sizeof outcomes / sizeof outcomes [0]; o++) {
            char labels [96];
            snprintf (labels, sizeof labels, "kind=\"%s\",outcome=\"%s\"", s_kind_names [k], outcomes [o]);
            sl_metrics_counter (self->metrics, "sluice_mcp_legs_total", labels,
                                "The gateway's own requests for MCP (call, result, list) by outcome");
        }
    return self;
}

void
gateway_legs_destroy (gateway_legs_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    gateway_legs_t *self = *self_p;
    //  The core dropped their streams already: what is left goes unanswered.
    while (zlistx_size (self->legs)) {
        s_leg_t *leg = zlistx_first (self->legs);
        s_leg_free (&leg);
    }
    zlistx_destroy (&self->legs);
    if (self->due_timer >= 0)
        zloop_timer_end (self->loop, self->due_timer);
    free (self);
    *self_p = NULL;
}
