/*  gateway_leg.c - the gateway's internal streams (gateway_leg.h): a
    request the gateway makes itself goes the way a client's goes once its
    body is read (gateway_request.c: the request policy, the job, the
    delivery), with no HTTP client at its end: its frames are gathered
    here, and its end, whatever it is, is given to the leg's done.

    A leg is a gateway_stream_t with no req and with a leg state. The
    places that would write to a client ask the leg instead
    (gateway_leg_frame, gateway_leg_fail), and forgetting a leg's stream
    ends it (gateway_leg_forget): a leg never ends silently.
*/
#include "services/gateway/gateway_leg.h"
#include "services/gateway/gateway_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/mcp/sl_mcp_leg.h"
#include "common/otel/sl_trace.h"

#define S_LEG_CHAT_PATH "/v1/chat/completions"

//  The kinds and outcomes of sluice_mcp_legs_total.
typedef enum { S_KIND_CALL, S_KIND_RESULT, S_KIND_LIST, S_KIND_COUNT } s_kind_t;
static const char *s_kind_names [] = { "call", "result", "list" };
_Static_assert (sizeof s_kind_names / sizeof s_kind_names [0] == S_KIND_COUNT, "a name for every kind");

struct _gateway_leg_state_t {
    uint64_t id;
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
    bool starting;                      //  inside gateway_leg_start: done must wait
    bool due;                           //  ended while starting: done on the reactor's next turn
    bool ended;                         //  done was called (or the leg was cancelled)
};

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
s_count (gateway_t *self, s_kind_t kind, const char *outcome)
{
    char labels [96];
    snprintf (labels, sizeof labels, "kind=\"%s\",outcome=\"%s\"", s_kind_names [kind], outcome);
    sl_counter_inc (sl_metrics_counter (self->metrics, "sluice_mcp_legs_total", labels,
                                        "The gateway's own requests for MCP (call, result, list) by outcome"));
}

//  Every series there from the start, so that a rate reads 0, not nothing.
void
gateway_leg_metrics (gateway_t *self)
{
    static const char *outcomes [] = { "ok", "refused", "error", "cancelled" };
    for (int k = 0; k < S_KIND_COUNT; k++)
        for (size_t o = 0; o < sizeof outcomes / sizeof outcomes [0]; o++) {
            char labels [96];
            snprintf (labels, sizeof labels, "kind=\"%s\",outcome=\"%s\"", s_kind_names [k], outcomes [o]);
            sl_metrics_counter (self->metrics, "sluice_mcp_legs_total", labels,
                                "The gateway's own requests for MCP (call, result, list) by outcome");
        }
}

static void
s_state_free (gateway_leg_state_t **leg_p)
{
    gateway_leg_state_t *leg = *leg_p;
    if (!leg)
        return;
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

//  Give the leg's end to its done, once.
static void
s_deliver (gateway_t *self, gateway_stream_t *s)
{
    gateway_leg_state_t *leg = s->leg;
    if (leg->ended)
        return;
    leg->ended = true;
    gateway_leg_result_t result = {
        .status = leg->status ? leg->status : 502,
        .answer = sl_buf_str (&leg->answer),
        .judged = sl_buf_str (&leg->judged),
        .refused = leg->refused
    };
    memcpy (result.sid, s->sid, SL_SID_SIZE);
    s_count (self, leg->kind, leg->refused ? "refused" : result.status == 200 ? "ok" : "error");
    leg->done (leg->arg, &result);
}

static int
s_on_due (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    gateway_t *self = arg;
    self->leg_timer = -1;
    //  By id, not by pointer: a done may start or cancel other legs.
    sl_buf_t due = { 0 };
    size_t cursor = 0;
    gateway_stream_t *s;
    while ((s = sl_sidmap_next (self->streams, &cursor, NULL)))
        if (s->leg && s->leg->due)
            sl_buf_append (&due, s->sid, SL_SID_SIZE);
    for (size_t at = 0; at + SL_SID_SIZE <= due.len; at += SL_SID_SIZE) {
        s = sl_sidmap_get (self->streams, (const uint8_t *) due.data + at);
        if (s && s->leg && s->leg->due)
            gateway_stream_forget (self, s);    //  delivers its end
    }
    sl_buf_free (&due);
    sl_router_flush (self->router);
    return 0;
}

//  The leg's stream is over: its end goes to done and the stream is
//  forgotten, unless the leg is still starting (done never runs inside
//  gateway_leg_start): then both wait for the reactor's next turn.
static void
s_end (gateway_t *self, gateway_stream_t *s)
{
    if (s->leg->starting) {
        s->leg->due = true;
        return;
    }
    gateway_stream_forget (self, s);
}

void
gateway_leg_frame (gateway_t *self, gateway_stream_t *s, const sl_delivery_write_t *w)
{
    gateway_leg_state_t *leg = s->leg;
    if (w->open || w->whole)
        leg->status = w->status;
    sl_buf_append_str (&leg->answer, w->body);
    if (w->end)
        s_end (self, s);
}

void
gateway_leg_fail (gateway_t *self, gateway_stream_t *s, int status, const char *code, const char *message)
{
    gateway_leg_state_t *leg = s->leg;
    leg->status = status;
    sl_buf_reset (&leg->answer);
    sl_render_for (SL_DIALECT_OPENAI)->error_body (status, sl_str (code), sl_str (message), &leg->answer);
    s_end (self, s);
}

void
gateway_leg_job (gateway_stream_t *s, sl_msg_t *job, bool refused_by_policy)
{
    gateway_leg_state_t *leg = s->leg;
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
}

const char *
gateway_leg_traceparent (const gateway_stream_t *s)
{
    return s->leg->traceparent.len ? sl_buf_cstr (&s->leg->traceparent) : NULL;
}

const char *
gateway_leg_tracestate (const gateway_stream_t *s)
{
    return s->leg->tracestate.len ? sl_buf_cstr (&s->leg->tracestate) : NULL;
}

void
gateway_leg_forget (gateway_t *self, gateway_stream_t *s)
{
    if (!s->leg)
        return;
    if (!s->leg->ended && !s->leg->starting) {
        if (!s->leg->status && !s->leg->answer.len) {
            //  Forgotten without an end of its own: never silently.
            s->leg->status = 502;
            sl_render_for (SL_DIALECT_OPENAI)->error_body (502, SL_STR_LIT ("upstream_lost"),
                                                           SL_STR_LIT ("the leg's stream ended without an answer"),
                                                           &s->leg->answer);
        }
        s_deliver (self, s);
    }
    s_state_free (&s->leg);
}

void
gateway_leg_drop (gateway_stream_t *s)
{
    s_state_free (&s->leg);
}

static void
s_copy_cstr (sl_buf_t *out, const char *text)
{
    if (text && *text) {
        sl_buf_puts (out, text);
        sl_buf_cstr (out);
    }
}

int
gateway_leg_start (gateway_t *self, const gateway_leg_t *leg, gateway_leg_done_fn *done, void *arg, uint64_t *id)
{
    if (id)
        *id = 0;
    if (!leg || !done || !leg->caller || !leg->server || !leg->inline_answer.ptr
    ||  sl_service_draining (self->service))
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
    gateway_leg_state_t *state = sl_xcalloc (1, sizeof *state);
    state->id = ++self->leg_next_id;
    state->done = done;
    state->arg = arg;
    state->kind = s_kind_of (leg->mcp);
    sl_buf_append_str (&state->inline_answer, leg->inline_answer);
    sl_buf_cstr (&state->inline_answer);        //  never NULL: present though empty
    sl_buf_puts (&state->mcp, leg->mcp ? leg->mcp : "");
    sl_buf_cstr (&state->mcp);
    sl_mcp_leg_model (leg->server, &state->provider);   //  "mcp:<server>"
    s_copy_cstr (&state->traceparent, leg->traceparent);
    s_copy_cstr (&state->tracestate, leg->tracestate);
    state->starting = true;

    gateway_stream_t *s = sl_xcalloc (1, sizeof *s);
    s->owner = self;
    s->leg = state;
    s->caller = leg->caller;            //  borrowed: never finished here (gateway_stream_forget)
    s->dialect = SL_DIALECT_OPENAI;
    s->started_us = zclock_usecs ();
    s->received_us = sl_trace_now_us ();
    sl_sid_new (s->sid);
    s->delivery = sl_delivery_new (s->sid, self->config.stream_expiry_ms, gateway_clock, NULL);
    sl_sidmap_put (self->streams, s->sid, s);
    s->parsed = parsed;
    s->model = sl_xstrdup (sl_buf_cstr (&s->parsed.model));
    sl_buf_puts (&s->headers, "{}");    //  no client headers: the request is the gateway's
    if (id)
        *id = state->id;
    //  Admitted already, with its MCP request: straight to the request policy.
    gateway_judge_request (self, s);
    state->starting = false;
    if (state->due && self->leg_timer < 0)
        self->leg_timer = zloop_timer (sl_service_loop (self->service), 0, 1, s_on_due, self);
    sl_router_flush (self->router);
    return 0;
}

void
gateway_leg_cancel (gateway_t *self, uint64_t id)
{
    size_t cursor = 0;
    gateway_stream_t *s;
    while ((s = sl_sidmap_next (self->streams, &cursor, NULL))) {
        if (!s->leg || s->leg->id != id)
            continue;
        s->leg->ended = true;           //  done is not called
        s_count (self, s->leg->kind, "cancelled");
        if (sl_delivery_dispatched (s->delivery))
            gateway_stream_cancel (self, s, "the MCP request is gone");
        sl_router_flush (self->router);
        gateway_stream_forget (self, s);
        return;
    }
}
