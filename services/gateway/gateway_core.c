/*  gateway_core.c - the gateway's core (see gateway_core.h): the route
    table over the HTTP server, the streams' lives, frame delivery.

    Every answer the core writes itself (a refused request, an expired or
    lost stream, a missing client key) is an error body of the client's
    dialect, made by the same renderer the emitter uses for that dialect.
    What each frame of a stream is to its client (order, epochs, acks, the
    job kept for a resend, the bounds on silence) is sl_delivery's
    (common/stages); who may start a stream is sl_admission's; what the
    request policy decides is gateway_judge's. This file wires them to
    HTTP and ZeroMQ.
*/
#include "services/gateway/gateway_core.h"

#include <assert.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/base/sl_sidmap.h"
#include "common/bus/sl_router.h"
#include "common/dialects/sl_clientkey.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_plan.h"
#include "common/dialects/sl_render.h"
#include "common/dialects/sl_upstream.h"
#include "common/http/sl_loopback.h"
#include "common/identity/sl_keyid.h"
#include "common/otel/sl_trace.h"
#include "common/service/sl_stage.h"
#include "services/gateway/gateway_judge.h"

#define GATEWAY_ACK_MS 100              //  period of the acks of every live stream
#define GATEWAY_ALONE_POLL_MS 1         //  looks again whether an ALONE frame may go
#define GATEWAY_HEADER_NAME_MAX 128     //  a header name a policy may match on, at most

//  A client's request, or a sink's, from its start to its end.
typedef struct {
    uint8_t sid [SL_SID_SIZE];
    gateway_core_t *core;
    sl_http_req_t *req;                 //  its client, NULL once gone (and for a sink's)
    const gateway_sink_t *sink;         //  NULL for a client's
    void *sink_arg;
    const char *traceparent, *tracestate;   //  a sink's trace context (borrowed)
    int dialect;                        //  the client's
    int64_t started_us;                 //  when the request was dispatched (TTFB)
    int64_t received_us;                //  the same, Unix µs: where the stream's span starts
    sl_delivery_t *delivery;            //  its frames: order, epochs, acks, the job, its bounds
    //  Until the job leaves (the request policy may be asking LLM judges)
    sl_job_t parsed;                    //  the request, owned until the job leaves
    sl_buf_t headers;                   //  its headers for the policy, JSON
    bool judging;                       //  its request policy's turn is under way
    //  Who asked, and what it spent (sl_admission.h)
    sl_caller_t *caller;                //  its identity and limits; given back at the end
    bool borrowed;                      //  the caller is someone else's (gateway_stream_spec_t)
    char *model;                        //  as asked for (prices)
    int64_t retry_after;                //  seconds, of an admission refusal (its Retry-After)
    size_t request_bytes;               //  the job's body, for a usage estimate
    size_t response_bytes;              //  written to the client, for a usage estimate
    bool refused;                       //  refused before any upstream call: nothing spent
    bool has_usage;                     //  the last frame said what the stream spent
    bool usage_estimated;
    sl_usage_t usage;
} s_stream_t;

struct _gateway_core_t {
    gateway_config_t config;
    sl_service_t *service;
    sl_metrics_t *metrics;
    sl_httpd_t *httpd;
    sl_stage_t *stage;
    sl_router_t *router;
    sl_sidmap_t *streams;
    sl_codec_t *codec;
    sl_admission_t *admission;          //  who may call, and within what limits
    gateway_judge_t *judge;             //  the request policy
    sl_handlers_t *routes;              //  the endpoint families' routes, in order
    gateway_refuse_fn *refuse;          //  the shape of the core's own refusals
    void *refuse_arg;
    gateway_cancel_fn *cancel;          //  a stream's requester is gone
    void *cancel_arg;
    int ack_timer;
    int alone_timer;                    //  while ALONE frames wait, -1 otherwise
    int renew_timer;                    //  live streams' places among the concurrent renewed
    sl_httpd_counters_t http;           //  the front door's (sl_httpd.h)
    sl_counter_t *refused;
    sl_counter_t *foreign;              //  requests refused without keys for another site's Host or Origin
    sl_counter_t *streams_total;
    sl_histo_t *ttfb;
    sl_counter_t *frames;
    sl_counter_t *duplicates;
    sl_counter_t *gaps;
    sl_counter_t *cancels;
    sl_counter_t *slow_readers;
    sl_counter_t *unroutable;
    sl_counter_t *unknown_frames;
    sl_counter_t *keepalives;
    sl_counter_t *resent;               //  jobs sent again after their ingest died
    sl_counter_t *ingest_lost;          //  responses ended because their ingest died
    sl_counter_t *stale_frames;         //  frames of an epoch replayed since
    sl_counter_t *expired;              //  streams ended after --stream-expiry-ms of nothing
    sl_counter_t *translated;           //  requests sent to a provider of another dialect
    sl_counter_t *bad_traceparent;      //  client traceparents ignored as malformed
    sl_counter_t *bad_tracestate;       //  client tracestates dropped as invalid
};

//  --------------------------------------------------------------------------
//  Requests: what every family answers with

void
gateway_core_respond_error (sl_http_req_t *req, int dialect, int status, const char *type, const char *message)
{
    const sl_renderer_t *r = sl_render_for (dialect ? dialect : GATEWAY_DEFAULT_DIALECT);
    sl_buf_t body = { 0 };
    r->error_body (status, sl_str (type), sl_str (message), &body);
    sl_http_respond (req, status, "application/json", body.data, body.len);
    sl_buf_free (&body);
}

const char *
gateway_core_header (void *arg, const char *name)
{
    return sl_http_req_header (arg, name);
}

const char *
gateway_core_query (void *arg, const char *name)
{
    return sl_http_req_query (arg, name);
}

sl_admission_t *
gateway_core_admission (gateway_core_t *self)
{
    return self->admission;
}

sl_service_t *
gateway_core_service (gateway_core_t *self)
{
    return self->service;
}

sl_caller_t *
gateway_core_identify (gateway_core_t *self, sl_http_req_t *req, int dialect)
{
    const char *reason;
    sl_caller_t *caller = sl_admission_identify (self->admission,
                                                 sl_clientkey_of (gateway_core_header, gateway_core_query, req),
                                                 &reason);
    if (!caller) {
        char message [128];
        if (strncmp (reason, "token_", 6) == 0)
            snprintf (message, sizeof message, "the token is not accepted (%s)", reason + 6);
        else
            snprintf (message, sizeof message, "invalid or missing API key");
        gateway_core_respond_error (req, dialect, 401, "authentication_error", message);
    }
    return caller;
}

bool
gateway_core_authorized (gateway_core_t *self, sl_http_req_t *req, int dialect)
{
    sl_caller_t *caller = gateway_core_identify (self, req, dialect);
    if (!caller)
        return false;
    sl_admission_finish (self->admission, &caller, NULL, NULL, false);
    return true;
}

sl_policy_t *
gateway_core_policy (gateway_core_t *self, const char *file)
{
    return gateway_judge_policy (self->judge, file);
}

void
gateway_core_count_refused (gateway_core_t *self)
{
    sl_counter_inc (self->refused);
}

void
gateway_core_after (gateway_core_t *self)
{
    sl_router_flush (self->router);
    if (self->httpd)
        sl_httpd_run (self->httpd);
}

void
gateway_core_flush (gateway_core_t *self)
{
    sl_router_flush (self->router);
}

//  --------------------------------------------------------------------------
//  Messages to the ingest

static void
s_send (gateway_core_t *self, sl_msg_t *msg)
{
    if (sl_router_send (self->router, msg))
        sl_counter_inc (self->unroutable);
}

//  Frames delivered and the activity counter: the ingest's only view of
//  whether the stream is alive (see PROTOCOL.md, "ack").
static void
s_ack (gateway_core_t *self, s_stream_t *s, bool last)
{
    sl_msg_t ack;
    sl_delivery_ack (s->delivery, last, &ack);
    s_send (self, &ack);
}

//  Tell its ingest a dispatched stream's requester is gone (why: logged).
static void
s_cancel (gateway_core_t *self, s_stream_t *s, const char *why)
{
    sl_msg_t cancel;
    sl_msg_init (&cancel, SL_MSG_CANCEL);
    memcpy (cancel.sid, s->sid, SL_SID_SIZE);
    cancel.code = SL_STR_LIT ("client_gone");
    cancel.message = sl_str (why);
    s_send (self, &cancel);
    sl_counter_inc (self->cancels);
    if (self->cancel)
        self->cancel (self->cancel_arg, s->sid);  //  a call of it may wait for a person
}

//  Free what the stream held until its job left, stopping its request
//  policy's turn if it is still under way.
static void
s_release (gateway_core_t *self, s_stream_t *s)
{
    if (s->judging) {
        s->judging = false;
        gateway_judge_cancel (self->judge, s->sid);
    }
    sl_job_clear (&s->parsed);
    sl_buf_free (&s->headers);
}

//  What the stream spent: the usage its last frame carried, else an
//  estimate from the bytes of its request and of what reached the client.
static void
s_settle (gateway_core_t *self, s_stream_t *s)
{
    if (!s->caller || s->borrowed)
        return;                         //  a borrowed caller is settled by its owner
    if (s->refused) {
        sl_admission_finish (self->admission, &s->caller, s->model, NULL, false);
        return;
    }
    sl_usage_t estimate = { .input = (int64_t) (s->request_bytes / SL_ADMISSION_BYTES_PER_TOKEN),
                            .output = (int64_t) (s->response_bytes / SL_ADMISSION_BYTES_PER_TOKEN) };
    bool estimated = !s->has_usage || s->usage_estimated;
    sl_admission_finish (self->admission, &s->caller, s->model, s->has_usage ? &s->usage : &estimate, estimated);
}

//  The stream is over: forgotten, and a sink's told.
static void
s_forget (gateway_core_t *self, s_stream_t *s)
{
    s_settle (self, s);
    free (s->model);
    s_release (self, s);
    if (s->req)
        sl_http_req_set_data (s->req, NULL);
    sl_sidmap_remove (self->streams, s->sid);
    sl_router_unpin (self->router, s->sid);
    sl_delivery_destroy (&s->delivery);
    if (s->sink)
        s->sink->ended (s->sink_arg);   //  may start another stream
    free (s);
}

//  End a response that cannot be completed (its ingest died, lost it, or
//  refused it), in the client's dialect: an HTTP error (status) when
//  nothing was written yet, an error event otherwise. A sink's hears it
//  and ends the stream itself.
static void
s_fail (gateway_core_t *self, s_stream_t *s, int status, const char *code, const char *message)
{
    if (s->sink) {
        s->sink->fail (s->sink_arg, status, code, message);
        return;
    }
    const sl_renderer_t *r = sl_render_for (s->dialect);
    sl_buf_t out = { 0 };
    if (s->req && !sl_delivery_started (s->delivery)) {
        r->error_body (status, sl_str (code), sl_str (message), &out);
        if (status == 503)
            sl_http_add_header (s->req, "Retry-After", GATEWAY_RETRY_AFTER_S);
        sl_http_respond (s->req, status, "application/json", out.data, out.len);
    }
    else
    if (s->req) {
        sl_render_stream_t rs;
        sl_render_stream_init (&rs, s->dialect, s->dialect);
        rs.started = true;
        r->error (&rs, 502, sl_str (code), sl_str (message), &out);
        sl_render_stream_clear (&rs);
        if (sl_http_stream_write (s->req, out.data, out.len) == 0)
            sl_http_stream_end (s->req);
    }
    sl_buf_free (&out);
    s_forget (self, s);
}

//  End the streams silent past their bound (sl_delivery_silence) with an
//  error; the ingest is told to let go too (should it run again after
//  all).
static void
s_end_silent (gateway_core_t *self)
{
    size_t count;
    void **streams = sl_sidmap_values (self->streams, &count);
    for (size_t i = 0; i < count; i++) {
        s_stream_t *s = streams [i];
        sl_delivery_silence_t silence = sl_delivery_silence (s->delivery);
        if (silence == SL_DELIVERY_HEARD)
            continue;
        if (silence == SL_DELIVERY_ORPHANED) {
            //  Its upstream call is lost with its ingest (an LLM call
            //  cannot be resumed elsewhere).
            sl_counter_inc (self->ingest_lost);
            s_cancel (self, s, "its ingest went silent");
            s_fail (self, s, 502, "upstream_lost", "the sluice instance calling the model stopped; "
                                                   "the model's answer cannot be resumed");
            continue;
        }
        sl_counter_inc (self->expired);
        char hex [SL_SID_HEX_SIZE], text [160];
        sl_sid_hex (s->sid, hex);
        sl_log_warn ("stream_expired", "sid=%s: nothing came back for %lld ms", hex,
                     (long long) self->config.stream_expiry_ms);
        snprintf (text, sizeof text, "sluice ended this response: nothing arrived for it for %lld ms",
                  (long long) self->config.stream_expiry_ms);
        if (sl_delivery_dispatched (s->delivery))
            s_cancel (self, s, "the stream expired");
        s_fail (self, s, 504, "stream_expired", text);
    }
    free (streams);
}

//  --------------------------------------------------------------------------
//  Frames from the emitters: what each one is to the client is
//  sl_delivery's answer; here it is written, counted and acked.

static int s_on_alone_timer (zloop_t *loop, int timer_id, void *arg);

//  The client still has bytes of ours to take (an ALONE frame waits).
static bool
s_behind (const s_stream_t *s)
{
    return s->req && !sl_http_stream_drained (s->req);
}

static void
s_observe_ttfb (gateway_core_t *self, const s_stream_t *s)
{
    sl_histo_observe (self->ttfb, (double) (zclock_usecs () - s->started_us) / 1e6);
}

//  The client could not take what was written (it is gone, or reads too
//  slowly): stop the upstream.
static void
s_drop_client (gateway_core_t *self, s_stream_t *s)
{
    sl_http_stream_abort (s->req);
    s_cancel (self, s, "client could not take the response");
    s_forget (self, s);
}

//  A keep-alive that opens the response: the first block is a call the
//  judge holds, and the client must hear from us meanwhile.
static void
s_write_keepalive (gateway_core_t *self, s_stream_t *s, const sl_delivery_write_t *w)
{
    if (w->open && s->req && sl_http_stream_start (s->req, w->status, w->content_type) == 0) {
        s_observe_ttfb (self, s);
        sl_delivery_opened (s->delivery);
    }
    if (sl_delivery_started (s->delivery) && w->body.len && sl_http_stream_write (s->req, w->body.ptr, w->body.len)) {
        sl_counter_inc (self->slow_readers);
        s_drop_client (self, s);
    }
}

static void
s_write_frame (gateway_core_t *self, s_stream_t *s, const sl_delivery_write_t *w)
{
    if (s->sink) {
        if (w->end)
            s_ack (self, s, true);
        s->sink->frame (s->sink_arg, w);    //  not a client's: no TTFB, no bytes written
        return;
    }
    if (w->open)
        s_observe_ttfb (self, s);
    if ((w->open || w->whole) && s->refused && s->retry_after > 0) {
        char seconds [24];
        snprintf (seconds, sizeof seconds, "%lld", (long long) s->retry_after);
        sl_http_add_header (s->req, "Retry-After", seconds);
    }
    s->response_bytes += w->body.len;
    int rc = 0;
    if (w->whole)
        rc = sl_http_respond (s->req, w->status, w->content_type, w->body.ptr, w->body.len);
    else {
        if (w->open)
            rc = sl_http_stream_start (s->req, w->status, w->content_type);
        if (rc == 0 && w->body.len)
            rc = sl_http_stream_write (s->req, w->body.ptr, w->body.len);
        if (rc == 0 && w->end)
            sl_http_stream_end (s->req);
    }
    if (rc) {
        if (sl_http_req_aborted (s->req) && sl_http_stream_buffered (s->req) == 0)
            sl_log_info ("client_gone", "stream ended early");
        else
            sl_counter_inc (self->slow_readers);
        s_drop_client (self, s);
        return;
    }
    if (w->end) {
        s_ack (self, s, true);
        s_forget (self, s);
    }
}

static void
s_on_frame (gateway_core_t *self, const sl_msg_t *f)
{
    s_stream_t *s = sl_sidmap_get (self->streams, f->sid);
    if (!s) {
        sl_counter_inc (self->unknown_frames);
        return;
    }
    if ((f->flags & SL_F_LAST) && f->has_usage) {
        s->has_usage = true;
        s->usage = f->usage;
        s->usage_estimated = (f->flags & SL_F_ESTIMATED) != 0;
    }
    sl_delivery_write_t w;
    switch (sl_delivery_feed (s->delivery, f, (f->flags & SL_F_ALONE) && s_behind (s), &w)) {
        case SL_DELIVERY_STALE:
            sl_counter_inc (self->stale_frames);
            break;
        case SL_DELIVERY_HELD:
            if (self->alone_timer < 0)
                self->alone_timer = zloop_timer (sl_service_loop (self->service), GATEWAY_ALONE_POLL_MS, 0,
                                                 s_on_alone_timer, self);
            break;
        case SL_DELIVERY_KEEPALIVE:
            sl_counter_inc (self->keepalives);
            s_write_keepalive (self, s, &w);
            break;
        case SL_DELIVERY_DUPLICATE:
            sl_counter_inc (self->duplicates);
            break;
        case SL_DELIVERY_GAP:
            sl_counter_inc (self->gaps);
            if (sl_log_enabled (SL_LOG_DEBUG)) {
                char hex [SL_SID_HEX_SIZE];
                sl_sid_hex (f->sid, hex);
                sl_log_debug ("frame_gap", "sid=%s epoch=%u seq=%llu expected=%llu", hex, f->epoch,
                              (unsigned long long) f->seq,
                              (unsigned long long) sl_delivery_next_seq (s->delivery));
            }
            break;
        case SL_DELIVERY_WRITE:
            sl_counter_inc (self->frames);
            s_write_frame (self, s, &w);
            break;
    }
}

//  Frames held go once the bytes before them went out (or they waited
//  long enough).
static int
s_on_alone_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) timer_id;
    gateway_core_t *self = arg;
    bool waiting = false;
    size_t count;
    void **streams = sl_sidmap_values (self->streams, &count);
    for (size_t i = 0; i < count; i++) {
        s_stream_t *s = streams [i];
        if (!sl_delivery_holding (s->delivery))
            continue;
        sl_msg_t *f = sl_delivery_release (s->delivery, s_behind (s));
        if (!f) {
            waiting = true;
            continue;
        }
        s_on_frame (self, f);           //  as any frame now (it may free the stream)
        free (f);
    }
    free (streams);
    if (!waiting) {
        zloop_timer_end (loop, self->alone_timer);
        self->alone_timer = -1;
    }
    sl_router_flush (self->router);
    return 0;
}

static int
s_on_ack_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    gateway_core_t *self = arg;
    size_t cursor = 0;
    s_stream_t *s;
    bool silent = false;
    while ((s = sl_sidmap_next (self->streams, &cursor, NULL))) {
        if (sl_delivery_dispatched (s->delivery))
            s_ack (self, s, false);
        silent |= sl_delivery_silence (s->delivery) != SL_DELIVERY_HEARD;
    }
    if (silent)
        s_end_silent (self);
    sl_router_flush (self->router);
    return 0;
}

//  An ingest that was taken for dead speaks again: it may only have been
//  stopped, and a request sent to it meanwhile may have been lost with its
//  connection. Requests nothing came back for yet go to it again (an
//  ingest ignores a request it already has).
static void
s_resend_pending (gateway_core_t *self, const char *endpoint)
{
    size_t cursor = 0;
    s_stream_t *s;
    while ((s = sl_sidmap_next (self->streams, &cursor, NULL))) {
        const char *pinned = sl_router_peer_of (self->router, s->sid);
        sl_msg_t job;
        if (pinned && strcmp (pinned, endpoint) == 0 && sl_delivery_job (s->delivery, self->codec, &job) == 0) {
            sl_counter_inc (self->resent);
            s_send (self, &job);
        }
    }
}

//  An ingest was declared dead, came back, restarted, or has a new
//  connection from us (a request on the old one may be lost: it is sent
//  again). A request nothing came back for yet goes to another ingest at
//  once when its own is dead. A response under way
//  waits SL_DELIVERY_INGEST_GRACE_MS for its ingest to speak again (a process
//  that was only stopped or starved goes on where it was) and then ends
//  with an error; a restarted ingest lost its upstream calls: they end at
//  once.
static void
s_on_ingest_event (void *arg, const char *endpoint, sl_peer_event_t event)
{
    gateway_core_t *self = arg;
    if (event == SL_PEER_UP || event == SL_PEER_RECONNECTED)
        s_resend_pending (self, endpoint);
    if (event == SL_PEER_RECONNECTED)
        return;                         //  the same ingest: a request sent twice runs once
    size_t count;
    void **streams = sl_sidmap_values (self->streams, &count);
    for (size_t i = 0; i < count; i++) {
        s_stream_t *s = streams [i];
        const char *pinned = sl_router_peer_of (self->router, s->sid);
        if (!pinned || strcmp (pinned, endpoint) != 0)
            continue;
        if (event == SL_PEER_UP) {
            sl_delivery_ingest_back (s->delivery);
            continue;
        }
        sl_msg_t job;
        if (sl_delivery_resend (s->delivery, self->codec, &job) == 0) {
            sl_router_unpin (self->router, s->sid);
            sl_counter_inc (self->resent);
            s_send (self, &job);
            continue;
        }
        if (event == SL_PEER_DEAD) {
            sl_delivery_ingest_dead (s->delivery);
            continue;
        }
        sl_router_unpin (self->router, s->sid);
        sl_counter_inc (self->ingest_lost);
        s_fail (self, s, 502, "upstream_lost", "the sluice instance calling the model restarted; "
                                               "the model's answer cannot be resumed");
    }
    free (streams);
    sl_router_flush (self->router);
}

//  The ingest lost a stream it could not replay, or refused it (503: it
//  holds as many streams as it may).
static void
s_on_ingest_message (void *arg, const sl_msg_t *msg)
{
    gateway_core_t *self = arg;
    s_stream_t *s = sl_sidmap_get (self->streams, msg->sid);
    if (!s || msg->type != SL_MSG_ERROR)
        return;
    char code [64], message [256];
    snprintf (code, sizeof code, "%.*s", (int) msg->code.len, msg->code.ptr ? msg->code.ptr : "");
    snprintf (message, sizeof message, "%.*s", (int) msg->message.len, msg->message.ptr ? msg->message.ptr : "");
    int status = msg->status >= 400 && msg->status < 600 ? msg->status : 502;
    sl_counter_inc (status == 503 ? self->refused : self->ingest_lost);
    s_fail (self, s, status, code, message);
}

static void
s_on_inbox (void *arg, const sl_msg_t *msg, sl_str_t peer)
{
    (void) peer;
    gateway_core_t *self = arg;
    if (msg->type == SL_MSG_FRAME)
        s_on_frame (self, msg);
}

static void
s_flush (void *arg)
{
    gateway_core_after (arg);
}

//  --------------------------------------------------------------------------
//  The job

//  Why a request goes no further than the pipeline's verdicts: its
//  error, as the client will get it in its dialect.
typedef struct {
    const char *code;
    int status;
    const char *message;
} s_refusal_t;

//  Count what a translation dropped, by feature (a name from the dialect
//  modules' tables, so the label set stays small).
static void
s_count_drops (gateway_core_t *self, const sl_job_t *parsed)
{
    if (sl_dialect_same_format (parsed->upstream_dialect, parsed->client_dialect))
        return;
    sl_counter_inc (self->translated);
    for (size_t i = 0; i < parsed->drop_count; i++) {
        char labels [160];
        snprintf (labels, sizeof labels, "side=\"request\",feature=\"%s\"", parsed->dropped [i]);
        sl_counter_inc (sl_metrics_counter (self->metrics, "sluice_translation_dropped_total", labels,
                                            "What a translation between dialects left out, only informative"));
    }
}

//  Whose request it is: the id of the key, never the key; its team and
//  user; the policy file it runs under. Without keys, the id of the
//  credential the client sent (its own provider key, forwarded).
static void
s_job_identity (const s_stream_t *s, sl_msg_t *job, char *key_id)
{
    const sl_identity_t *who = sl_caller_identity (s->caller);
    const char *key = s->req ? sl_clientkey_of (gateway_core_header, gateway_core_query, s->req) : NULL;
    if (who->outcome == SL_WHO_OK)
        job->key_id = sl_str (who->key_id);
    else
    if (key && *key) {
        sl_key_id (key, strlen (key), key_id);
        job->key_id = sl_str (key_id);
    }
    if (*who->team)
        job->team = sl_str (who->team);
    if (*who->user)
        job->user = sl_str (who->user);
    if (who->policy)
        job->policy_name = sl_str (who->policy);
    if (who->shadow_policy)
        job->shadow_policy_name = sl_str (who->shadow_policy);
}

//  The trace the stream continues: the client's, or one begun here when
//  this gateway traces. The client's own headers never go upstream as
//  sent: the ingest writes the child's. The job borrows from trace.
static void
s_job_trace (gateway_core_t *self, const s_stream_t *s, sl_msg_t *job, sl_trace_in_t *trace)
{
    const char *tracestate = s->req ? gateway_core_header (s->req, "tracestate") : s->tracestate;
    const char *traceparent = s->req ? gateway_core_header (s->req, "traceparent") : s->traceparent;
    sl_trace_accept (traceparent, tracestate, s->sid, self->config.tracing, trace);
    if (trace->bad_parent)
        sl_counter_inc (self->bad_traceparent);
    if (trace->bad_state)
        sl_counter_inc (self->bad_tracestate);
    if (trace->has_trace) {
        job->trace = sl_str (trace->tc);
        job->received_us = s->received_us;
    }
    if (trace->keep_state)
        job->trace_state = sl_str (tracestate);
}

//  Send the stream's job: the request as prepared, with who sent it,
//  what the request policy made of it (judged: its verdicts, the
//  version's id, the annotations; NULL when refused before its turn),
//  and its refusal if any (no upstream call: the ingest ends the stream
//  with it).
static void
s_send_job (gateway_core_t *self, s_stream_t *s, const s_refusal_t *refusal, sl_str_t verdicts,
            const gateway_judged_t *judged)
{
    sl_http_req_t *req = s->req;
    sl_job_t *parsed = &s->parsed;
    //  The client's own credential goes along only when sluice does not
    //  check client keys itself: then the client's key is sluice's, not
    //  the provider's.
    sl_buf_t auth = { 0 };
    if (req && !sl_admission_checks (self->admission))
        sl_clientkey_line (sl_dialect_get (parsed->client_dialect), gateway_core_header, gateway_core_query, req,
                           &auth);
    s_count_drops (self, parsed);
    //  A route of several providers: the job carries them in the order to
    //  try (drawn by weight from the stream's random id), each with its
    //  body (sl_plan.h). A refused request and a leg go nowhere.
    sl_buf_t failover = { 0 };
    size_t left_out = 0;
    uint32_t draw;
    memcpy (&draw, s->sid, sizeof draw);
    if (!refusal && !s->sink && sl_plan_job (parsed, self->config.routes, draw, &failover, &left_out) == 0
    &&  left_out)
        sl_log_info ("plan_left_out", "model=%s providers=%zu: the request cannot be rendered for them",
                     sl_buf_cstr (&parsed->model), left_out);

    sl_msg_t job;
    sl_msg_init (&job, SL_MSG_REQ);
    memcpy (job.sid, s->sid, SL_SID_SIZE);
    job.client_dialect = (uint8_t) parsed->client_dialect;
    job.upstream_dialect = (uint8_t) parsed->upstream_dialect;
    job.model = sl_buf_str (&parsed->model);
    if (parsed->provider)
        job.provider = sl_str (parsed->provider);
    job.body = sl_buf_str (&parsed->upstream_body);
    if (failover.len)
        job.failover = sl_buf_str (&failover);
    //  The emitters deliver frames to the gateway of this name, among the
    //  gateways they connect to themselves: a name, never an address.
    job.reply_to = sl_str (sl_service_name (self->service));
    job.flags = (parsed->stream ? SL_F_STREAM : 0) | (parsed->include_usage ? SL_F_USAGE : 0);
    job.tools = sl_buf_str (&parsed->tools);
    job.headers = sl_buf_str (&s->headers);
    job.last_user = sl_buf_str (&parsed->last_user);
    if (auth.len)
        job.auth = sl_buf_str (&auth);
    //  The headers the client's dialect sends its own upstream as they are
    //  (the beta features an Anthropic body uses), when it goes to one.
    sl_buf_t passthrough = { 0 };
    //  With several providers, for those of the client's dialect only
    //  (the ingest's to choose).
    if (req && (sl_dialect_same_format (parsed->upstream_dialect, parsed->client_dialect) || failover.len))
        sl_upstream_passthrough (sl_dialect_get (parsed->client_dialect), gateway_core_header, req, &passthrough);
    if (passthrough.len)
        job.passthrough = sl_buf_str (&passthrough);
    char key_id [SL_KEY_ID_SIZE];
    s_job_identity (s, &job, key_id);
    sl_trace_in_t trace;
    s_job_trace (self, s, &job, &trace);
    if (verdicts.len)
        job.req_verdicts = verdicts;
    if (judged) {
        if (judged->policy)
            job.policy = sl_str (judged->policy);
        const sl_annotations_t *notes = judged->annotations;
        if (notes->history.len)
            job.history = sl_buf_str (&notes->history);
        if (notes->digests.len)
            job.tool_digests = sl_buf_str (&notes->digests);
        if (notes->taint.len)
            job.taint = sl_buf_str (&notes->taint);
    }
    if (refusal) {
        job.flags |= SL_F_DENIED;
        job.body = SL_STR_NULL;
        job.code = sl_str (refusal->code);
        job.status = refusal->status;
        job.message = sl_str (refusal->message);
    }
    if (s->sink)
        s->sink->job (s->sink_arg, &job, refusal && !s->refused);
    s->request_bytes = job.body.len;
    //  Kept until the first frame: if its ingest dies before, the job goes
    //  to another one. Judging the request took its own time: the stream's
    //  silence counts from now.
    sl_delivery_dispatch (s->delivery, &job);
    s_send (self, &job);
    sl_router_flush (self->router);
    sl_buf_free (&auth);
    sl_buf_free (&passthrough);
    sl_buf_free (&failover);
    //  The job (the request as it goes upstream) is kept apart until an
    //  ingest answers; the client's own body is not needed any more, and
    //  the response may stream for minutes.
    if (req)
        sl_http_req_drop_body (req);
}

//  --------------------------------------------------------------------------
//  A stream's way in: admitted, judged, sent

//  The request policy decided: its job leaves (refused or not), unless
//  what the policy changed can no longer be sent (the request made again
//  fails: an error in the client's dialect, nothing sent).
static void
s_on_judged (void *arg, const gateway_judged_t *judged)
{
    s_stream_t *s = arg;
    gateway_core_t *self = s->core;
    s->judging = false;
    if (judged->changed && sl_job_refresh (&s->parsed)) {
        sl_counter_inc (self->refused);
        if (s->sink) {
            s->sink->fail (s->sink_arg, s->parsed.status, s->parsed.error_type,
                           sl_buf_cstr (&s->parsed.error_message));
            return;
        }
        gateway_core_respond_error (s->req, s->dialect, s->parsed.status, s->parsed.error_type,
                                    sl_buf_cstr (&s->parsed.error_message));
        s_forget (self, s);
        return;
    }
    s_refusal_t refusal = { judged->code, judged->status, judged->message };
    if (judged->unjudged)
        s->refused = true;              //  refused before any rule ran: nothing spent
    s_send_job (self, s, judged->code ? &refusal : NULL, judged->verdicts, judged);
    s_release (self, s);
}

//  Refused by the admission (a model the key may not use, a limit, the
//  limits store): a verdict like any other, and the stream ends with the
//  refusal in the client's dialect, nothing sent upstream.
static void
s_refuse (gateway_core_t *self, s_stream_t *s, const sl_admission_answer_t *answer)
{
    sl_buf_t verdicts = { 0 };
    gateway_judge_refused (self->judge, s->sid, s->caller, s->started_us, SL_CHK_RAN, answer->rule,
                           answer->message, &verdicts);
    s->refused = true;
    s->retry_after = answer->retry_after;
    s_refusal_t refusal = { answer->code, answer->status, answer->message };
    s_send_job (self, s, &refusal, sl_buf_str (&verdicts), NULL);
    sl_buf_free (&verdicts);
    s_release (self, s);
}

//  The request policy's turn: the caller's policy, following the keys
//  file the admission runs.
static void
s_judge (gateway_core_t *self, s_stream_t *s)
{
    gateway_judge_keys (self->judge, sl_admission_keyring (self->admission));
    s->judging = true;
    gateway_judge_start (self->judge, s->sid, s->parsed.req, sl_buf_str (&s->headers), s->caller, s->started_us,
                         s_on_judged, s);
}

static void
s_on_admitted (void *arg, sl_caller_t *caller, const sl_admission_answer_t *answer)
{
    (void) caller;
    s_stream_t *s = arg;
    gateway_core_t *self = s->core;
    if (answer->outcome == SL_ADMITTED)
        s_judge (self, s);
    else
        s_refuse (self, s, answer);
    sl_router_flush (self->router);
}

//  The streams' clock (sl_delivery): monotonic µs.
static int64_t
s_clock (void *arg)
{
    (void) arg;
    return zclock_usecs ();
}

//  Headers a policy may match on: all but credentials, names lower-cased.
static bool
s_secret_header (const char *name)
{
    static const char *secrets [] = {
        "authorization", "proxy-authorization", "x-api-key", "x-goog-api-key",
        "api-key", "cookie", NULL
    };
    for (int i = 0; secrets [i]; i++)
        if (strcasecmp (name, secrets [i]) == 0)
            return true;
    return false;
}

typedef struct {
    sl_buf_t *out;
    bool first;
} s_hdr_walk_t;

static void
s_collect_header (void *arg, const char *name, const char *value)
{
    s_hdr_walk_t *walk = arg;
    if (s_secret_header (name))
        return;
    char lower [GATEWAY_HEADER_NAME_MAX];
    size_t n = strlen (name);
    if (n >= sizeof lower)
        return;
    for (size_t i = 0; i <= n; i++)
        lower [i] = (char) tolower ((unsigned char) name [i]);
    sl_buf_putc (walk->out, walk->first ? '{' : ',');
    walk->first = false;
    sl_json_put_str (walk->out, lower, n);
    sl_buf_putc (walk->out, ':');
    sl_json_put_str (walk->out, value, strlen (value));
}

void
gateway_core_stream_start (gateway_core_t *self, const gateway_stream_spec_t *spec, sl_job_t *parsed, uint8_t *sid)
{
    s_stream_t *s = sl_xcalloc (1, sizeof *s);
    sl_sid_new (s->sid);
    memcpy (sid, s->sid, SL_SID_SIZE);
    s->core = self;
    s->req = spec->req;
    s->sink = spec->sink;
    s->sink_arg = spec->sink_arg;
    s->traceparent = spec->traceparent;
    s->tracestate = spec->tracestate;
    s->caller = spec->caller;
    s->borrowed = spec->borrowed;
    s->dialect = parsed->client_dialect;
    s->started_us = zclock_usecs ();
    s->received_us = sl_trace_now_us ();
    s->delivery = sl_delivery_new (s->sid, self->config.stream_expiry_ms, s_clock, NULL);
    sl_sidmap_put (self->streams, s->sid, s);
    //  The stream holds the request until its job leaves.
    s->parsed = *parsed;
    memset (parsed, 0, sizeof *parsed);
    s->model = sl_xstrdup (sl_buf_cstr (&s->parsed.model));
    if (!s->req) {
        sl_buf_puts (&s->headers, "{}");    //  no client headers: the request is the gateway's
        //  Admitted already, with its owner: straight to the request policy.
        s_judge (self, s);
        return;
    }
    sl_http_req_set_data (s->req, s);
    sl_counter_inc (self->streams_total);
    s_hdr_walk_t walk = { &s->headers, true };
    sl_http_req_headers (s->req, s_collect_header, &walk);
    if (walk.first)
        sl_buf_putc (&s->headers, '{');
    sl_buf_putc (&s->headers, '}');
    //  Its key's models and limits first: a refused request costs nothing.
    sl_admission_admit (self->admission, s->caller, s->model, s->sid, s_on_admitted, s);
}

void
gateway_core_stream_end (gateway_core_t *self, const uint8_t *sid)
{
    s_stream_t *s = sl_sidmap_get (self->streams, sid);
    if (s)
        s_forget (self, s);
}

void
gateway_core_stream_cancel (gateway_core_t *self, const uint8_t *sid, const char *why)
{
    s_stream_t *s = sl_sidmap_get (self->streams, sid);
    if (!s)
        return;
    if (sl_delivery_dispatched (s->delivery))
        s_cancel (self, s, why);
    sl_router_flush (self->router);
    s_forget (self, s);
}

int
gateway_core_stream_return_caller (gateway_core_t *self, const uint8_t *sid)
{
    s_stream_t *s = sl_sidmap_get (self->streams, sid);
    if (!s || !s->borrowed || !sl_delivery_dispatched (s->delivery))
        return -1;
    s->caller = NULL;
    return 0;
}

//  --------------------------------------------------------------------------
//  Client requests: the route table

void
gateway_core_route (gateway_core_t *self, const gateway_route_t *route)
{
    int rc = sl_handlers_add (self->routes, route);
    assert (rc == 0);                   //  a full table, a route without a prefix or serve
    (void) rc;
}

void
gateway_core_on_refuse (gateway_core_t *self, gateway_refuse_fn *refuse, void *arg)
{
    self->refuse = refuse;
    self->refuse_arg = arg;
}

void
gateway_core_on_cancel (gateway_core_t *self, gateway_cancel_fn *cancel, void *arg)
{
    self->cancel = cancel;
    self->cancel_arg = arg;
}

static void
s_refuse_request (gateway_core_t *self, sl_http_req_t *req, const char *path, int status, const char *type,
                  const char *message)
{
    if (self->refuse)
        self->refuse (self->refuse_arg, req, path, status, type, message);
    else
        gateway_core_respond_error (req, GATEWAY_DEFAULT_DIALECT, status, type, message);
}

//  Without keys, whoever reaches the port may call, and a web page can
//  make this machine's browser call (DNS rebinding): a request that names
//  another site in its Host or Origin is refused, 403 (sl_loopback.h).
//  With keys the key is the guard. True when it was refused.
static bool
s_refuse_foreign (void *arg, sl_http_req_t *req, const char *path)
{
    gateway_core_t *self = arg;
    if (sl_admission_checks (self->admission))
        return false;
    const char *why = sl_loopback_refusal (sl_http_req_header (req, "Host"), sl_http_req_header (req, "Origin"));
    if (!why)
        return false;
    sl_counter_inc (self->foreign);
    s_refuse_request (self, req, path, 403, "permission_error", why);
    return true;
}

//  A request goes to the first route that takes it (sl_handlers.h), the
//  Host and Origin check on its way; while draining the rest is refused
//  (503: the connection closes, so the client retries on another gateway
//  rather than losing the request).
static void
s_on_request (void *arg, sl_http_req_t *req)
{
    gateway_core_t *self = arg;
    const char *method = sl_http_req_method (req);
    const char *path = sl_http_req_path (req);
    if (sl_http_req_bad_framing (req)) {
        //  sl_httpd counted it, and closes the connection after this answer.
        char message [160];
        snprintf (message, sizeof message, "the request's length is ambiguous (%s): refused",
                  sl_http_req_bad_framing (req));
        s_refuse_request (self, req, path, 400, "invalid_request_error", message);
        return;
    }
    bool draining = sl_service_draining (self->service);
    if (sl_handlers_serve (self->routes, req, method, path, draining, s_refuse_foreign, self) != SL_HANDLED_NONE)
        return;
    if (draining) {
        sl_http_add_header (req, "Retry-After", GATEWAY_RETRY_AFTER_S);
        sl_http_add_header (req, "Connection", "close");
        s_refuse_request (self, req, path, 503, "overloaded_error",
                          "this sluice gateway is shutting down: send the request again");
        return;
    }
    s_refuse_request (self, req, path, 404, "not_found_error", "no such endpoint");
}

static void
s_on_closed (void *arg, sl_http_req_t *req, bool aborted)
{
    gateway_core_t *self = arg;
    s_stream_t *s = sl_http_req_data (req);
    if (!s) {
        sl_handlers_closed (self->routes, req);
        return;
    }
    //  The response did not complete: the client left. Stop the upstream
    //  (when the request went to one: it may still be being judged).
    s->req = NULL;
    if (sl_delivery_dispatched (s->delivery))
        s_cancel (self, s, aborted ? "client disconnected" : "response closed");
    sl_router_flush (self->router);
    s_forget (self, s);
}

//  Every live stream keeps its places among its key's and team's
//  concurrent streams (a lease the store lets go of otherwise).
static int
s_on_renew_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    gateway_core_t *self = arg;
    size_t cursor = 0;
    s_stream_t *s;
    while ((s = sl_sidmap_next (self->streams, &cursor, NULL)))
        if (!s->borrowed)               //  a borrowed caller is renewed by its owner
            sl_admission_renew (self->admission, s->caller);
    return 0;
}

//  --------------------------------------------------------------------------
//  Gauges

static double
s_active (void *arg)
{
    return (double) sl_sidmap_size (((gateway_core_t *) arg)->streams);
}

static double
s_pending (void *arg)
{
    return (double) sl_router_pending (((gateway_core_t *) arg)->router);
}

static double
s_connections (void *arg)
{
    gateway_core_t *self = arg;
    return self->httpd ? (double) sl_httpd_connections (self->httpd) : 0;
}

static double
s_body_bytes (void *arg)
{
    gateway_core_t *self = arg;
    return self->httpd ? (double) sl_httpd_body_bytes (self->httpd) : 0;
}

static double
s_buffered (void *arg)
{
    gateway_core_t *self = arg;
    size_t cursor = 0, total = 0;
    s_stream_t *s;
    while ((s = sl_sidmap_next (self->streams, &cursor, NULL)))
        if (s->req)
            total += sl_http_stream_buffered (s->req);
    return (double) total;
}

//  --------------------------------------------------------------------------
//  Drain (sl_service.h): no new client from the SIGTERM on, the streams
//  held finish, and those still running at --drain-ms end with an error in
//  their client's dialect.

static void
s_drain_start (void *arg)
{
    gateway_core_t *self = arg;
    if (sl_httpd_quiesce (self->httpd))
        sl_log_warn ("quiesce_failed", "the client port could not stop accepting; new clients get 503");
    sl_log_info ("draining_streams", "streams=%zu", sl_sidmap_size (self->streams));
}

//  Nothing held: no stream, nothing a route holds (a body being parsed),
//  and every answer's last byte gone to its client.
static bool
s_drain_idle (void *arg)
{
    gateway_core_t *self = arg;
    return sl_sidmap_size (self->streams) == 0 && sl_httpd_requests (self->httpd) == 0
        && !sl_handlers_held (self->routes);
}

static void
s_drain_give_up (void *arg)
{
    gateway_core_t *self = arg;
    size_t count;
    void **streams = sl_sidmap_values (self->streams, &count);
    if (count)
        sl_log_warn ("drain_ended_streams", "streams=%zu", count);
    for (size_t i = 0; i < count; i++) {
        s_stream_t *s = streams [i];
        if (sl_delivery_dispatched (s->delivery))
            s_cancel (self, s, "the gateway is shutting down");
        s_fail (self, s, 503, "shutting_down", "this sluice gateway shut down before the response was complete");
    }
    free (streams);
    gateway_core_after (self);
}

//  --------------------------------------------------------------------------
//  Life

//  A gateway without keys lets in whoever reaches it, and spends the
//  providers' keys for them: on an address other than loopback only when
//  the operator said so (--allow-anonymous). -1 (logged) when it must not
//  start.
static int
s_check_door (gateway_core_t *self)
{
    const char *host = self->config.http_host;
    if (sl_admission_checks (self->admission) || sl_loopback_address (host))
        return 0;
    if (!self->config.allow_anonymous) {
        sl_log_error ("anonymous_refused", "--http-host %s is not a loopback address and the gateway has no keys "
                      "(no --keys-file, no SLUICE_CLIENT_KEYS): whoever reaches it would spend the providers' "
                      "keys. Give it keys (docs/identity.md), listen on 127.0.0.1, or say --allow-anonymous", host);
        return -1;
    }
    sl_log_warn ("anonymous", "no keys on %s (--allow-anonymous): whoever reaches this address spends the "
                 "providers' keys; requests are answered for loopback names only (Host, Origin)", host);
    return 0;
}

static void
s_judge_after (void *arg)
{
    gateway_core_after (arg);
}

static void
s_metrics (gateway_core_t *self, sl_metrics_t *m)
{
    self->refused = sl_metrics_counter (m, "sluice_requests_refused_total", NULL, "Requests refused before any upstream call");
    self->foreign = sl_metrics_counter (m, "sluice_requests_foreign_total", NULL,
                                        "Requests refused without keys for naming another site in Host or Origin "
                                        "(DNS rebinding)");
    self->streams_total = sl_metrics_counter (m, "sluice_streams_total", NULL, "Client streams started");
    self->ttfb = sl_metrics_histogram (m, "sluice_ttfb_seconds", NULL,
                                       "Time from a client request to the first byte of its response",
                                       sl_metrics_latency_bounds, sl_metrics_latency_bounds_count);
    self->frames = sl_metrics_counter (m, "sluice_frames_total", NULL, "Frames delivered to clients");
    self->duplicates = sl_metrics_counter (m, "sluice_frames_duplicate_total", NULL, "Frames dropped as already delivered");
    self->gaps = sl_metrics_counter (m, "sluice_frames_gap_total", NULL,
                                     "Frames that arrived before earlier ones (held back for the replay)");
    self->cancels = sl_metrics_counter (m, "sluice_cancels_total", NULL, "Upstream calls cancelled for a departed client");
    self->slow_readers = sl_metrics_counter (m, "sluice_slow_readers_total", NULL, "Responses ended because the client read too slowly");
    self->unroutable = sl_metrics_counter (m, "sluice_unroutable_total", NULL, "Messages with no ingest to go to");
    self->unknown_frames = sl_metrics_counter (m, "sluice_frames_unknown_total", NULL, "Frames for streams this gateway does not hold");
    self->keepalives = sl_metrics_counter (m, "sluice_keepalive_frames_total", NULL,
                                           "Keep-alive frames received (a call held by the judge)");
    self->resent = sl_metrics_counter (m, "sluice_jobs_resent_total", NULL,
                                       "Requests sent to another ingest after theirs died before answering");
    self->ingest_lost = sl_metrics_counter (m, "sluice_streams_lost_total", NULL,
                                            "Responses ended with an error because their ingest died or lost them");
    self->stale_frames = sl_metrics_counter (m, "sluice_frames_stale_total", NULL,
                                             "Frames of an older epoch than the stream's newest (dropped)");
    self->expired = sl_metrics_counter (m, "sluice_streams_expired_total", NULL,
                                        "Streams ended after --stream-expiry-ms with nothing from the pipeline");
    self->bad_traceparent = sl_metrics_counter (m, "sluice_trace_context_invalid_total", "header=\"traceparent\"",
                                                "Client trace context headers ignored as malformed (W3C)");
    self->bad_tracestate = sl_metrics_counter (m, "sluice_trace_context_invalid_total", "header=\"tracestate\"",
                                               "Client trace context headers ignored as malformed (W3C)");
    sl_metrics_gauge_fn (m, "sluice_streams_active", NULL, "Client streams in progress", s_active, self);
    sl_metrics_gauge_fn (m, "sluice_queue_bytes", "queue=\"ingest\"",
                         "Bytes queued for the next hop, not yet handed to ZeroMQ", s_pending, self);
    sl_metrics_gauge_fn (m, "sluice_client_buffered_bytes", NULL,
                         "Response bytes waiting for clients to read them", s_buffered, self);
    sl_metrics_gauge_fn (m, "sluice_http_connections", NULL, "Client connections open", s_connections, self);
    sl_metrics_gauge_fn (m, "sluice_request_body_bytes", NULL,
                         "Bytes of client request bodies held (until the job leaves for an ingest)",
                         s_body_bytes, self);
    self->http.evicted = sl_metrics_counter (m, "sluice_http_connections_evicted_total", NULL,
                                             "Client connections without a request under way, closed to make room");
    self->http.refused = sl_metrics_counter (m, "sluice_http_connections_refused_total", NULL,
                                             "Client connections refused at a limit with none to close");
    self->http.request_timeouts = sl_metrics_counter (m, "sluice_http_request_timeouts_total", NULL,
                                                      "Client connections closed for a request not complete in time");
    self->http.bad_framing = sl_service_framing_counter (self->service, "client");
    self->translated = sl_metrics_counter (m, "sluice_requests_translated_total", NULL,
                                           "Requests sent to a provider of another dialect than the client's");
}

gateway_core_t *
gateway_core_new (sl_service_t *service, const gateway_config_t *config)
{
    gateway_core_t *self = sl_xcalloc (1, sizeof *self);
    self->config = *config;
    self->service = service;
    self->metrics = sl_service_metrics (service);
    self->streams = sl_sidmap_new ();
    self->routes = sl_handlers_new ();
    self->ack_timer = -1;
    self->alone_timer = -1;
    self->renew_timer = -1;
    zloop_t *loop = sl_service_loop (service);
    self->judge = gateway_judge_new (service, config->policy_path, config->watch_ms, s_judge_after, self);
    if (!self->judge) {
        gateway_core_destroy (&self);
        return NULL;
    }
    sl_admission_config_t admission = {
        .keys_path = config->keys_path,
        .client_keys = config->client_keys,
        .keys_url = config->keys_url,
        .keys_token = config->keys_token,
        //  As without keys, a loopback gateway is open while there are
        //  none; elsewhere a keys URL is always checked.
        .open_until_issued = sl_loopback_address (config->http_host),
        .watch_ms = config->watch_ms,
        .redis_url = config->redis_url,
        .limits_timeout_ms = config->limits_timeout_ms,
        .alerts_url = config->alerts_url,
        .alerts_secret = config->alerts_secret,
        .routes = config->routes,
    };
    self->admission = sl_admission_new (service, &admission);
    if (!self->admission || s_check_door (self)) {
        gateway_core_destroy (&self);
        return NULL;
    }
    //  The keys' policy files load at start (and say so).
    gateway_judge_keys (self->judge, sl_admission_keyring (self->admission));
    s_metrics (self, self->metrics);
    self->codec = sl_codec_new ();
    self->router = sl_router_new (loop, sl_service_name (service), sl_service_incarnation (service));
    sl_router_set_metrics (self->router, self->metrics, "ingest");
    sl_service_watch_hop (service, self->router);
    sl_router_on_peer (self->router, s_on_ingest_event, self);
    sl_router_on_message (self->router, s_on_ingest_message, self);
    self->ack_timer = zloop_timer (loop, GATEWAY_ACK_MS, 0, s_on_ack_timer, self);
    self->renew_timer = zloop_timer (loop, SL_LIMITS_RENEW_S * 1000, 0, s_on_renew_timer, self);
    if (sl_router_set_bus (self->router, sl_service_bus (service), "ingest")
    ||  sl_router_connect (self->router, config->next)) {
        gateway_core_destroy (&self);
        return NULL;
    }
    self->stage = sl_stage_new (service, config->bind, s_on_inbox, s_flush, self);
    if (!self->stage) {
        gateway_core_destroy (&self);
        return NULL;
    }
    sl_httpd_limits_t limits = {
        .max_conns = config->max_conns,
        .max_conns_per_ip = config->max_conns_per_ip,
        .request_timeout_ms = config->request_timeout_ms,
    };
    self->httpd = sl_httpd_new_with (loop, config->http_host, config->http_port, config->max_body, &limits,
                                     s_on_request, s_on_closed, self);
    if (!self->httpd) {
        gateway_core_destroy (&self);
        return NULL;
    }
    sl_httpd_set_counters (self->httpd, &self->http);
    sl_httpd_set_stream_cap (self->httpd, config->stream_cap);
    sl_httpd_dispatch_oversize (self->httpd, true);
    return self;
}

void
gateway_core_start (gateway_core_t *self)
{
    sl_service_on_drain (self->service, s_drain_start, s_drain_idle, s_drain_give_up, self);
    sl_log_info ("listening", "http=%s:%d inbox=%s name=%s", self->config.http_host, sl_httpd_port (self->httpd),
                 sl_inbox_endpoint (sl_stage_inbox (self->stage)), sl_service_name (self->service));
}

void
gateway_core_stop (gateway_core_t *self)
{
    //  Closing the HTTP server ends every client request (on_closed).
    sl_httpd_destroy (&self->httpd);
}

void
gateway_core_destroy (gateway_core_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    gateway_core_t *self = *self_p;
    gateway_core_stop (self);
    if (self->router)
        sl_router_flush (self->router);
    size_t count;
    void **streams = sl_sidmap_values (self->streams, &count);
    for (size_t i = 0; i < count; i++) {
        s_stream_t *s = streams [i];
        s_release (self, s);
        if (s->sink)
            s->sink->dropped (s->sink_arg);     //  its owner goes with the gateway too
        else
            sl_admission_finish (self->admission, &s->caller, s->model, NULL, false);
        free (s->model);
        sl_delivery_destroy (&s->delivery);
        free (s);
    }
    free (streams);
    sl_sidmap_destroy (&self->streams);
    gateway_judge_destroy (&self->judge);
    sl_stage_destroy (&self->stage);
    zloop_t *loop = sl_service_loop (self->service);
    if (self->ack_timer >= 0)
        zloop_timer_end (loop, self->ack_timer);
    if (self->alone_timer >= 0)
        zloop_timer_end (loop, self->alone_timer);
    if (self->renew_timer >= 0)
        zloop_timer_end (loop, self->renew_timer);
    sl_router_destroy (&self->router);
    sl_codec_destroy (&self->codec);
    sl_admission_destroy (&self->admission);
    sl_handlers_destroy (&self->routes);
    free (self);
    *self_p = NULL;
}

int
gateway_core_http_port (gateway_core_t *self)
{
    return sl_httpd_port (self->httpd);
}
