/*  gateway.c - client HTTP, frame delivery, the streams' lives (see
    gateway.h; a request's way in, from its credential to its job, is
    gateway_request.c's).

    Every answer the gateway writes itself (a refused request, an unknown
    endpoint, a body over the limit, a missing client key) is an error
    body of the client's dialect, made by the same renderer the emitter
    uses for that dialect. What a request means, which provider serves it
    and what goes upstream are the libraries' (common/dialects:
    sl_job, sl_models, sl_clientkey); what each frame of a stream is to
    its client (order, epochs, acks, the job kept for a resend, the
    bounds on silence) is sl_delivery's (common/stages). This file wires
    them to HTTP and ZeroMQ.
*/
#include "services/gateway/gateway_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

//  --------------------------------------------------------------------------
//  Messages to the ingest

void
gateway_send (gateway_t *self, sl_msg_t *msg)
{
    if (sl_router_send (self->router, msg))
        sl_counter_inc (self->unroutable);
}

//  Frames delivered and the activity counter: the ingest's only view of
//  whether the stream is alive (see PROTOCOL.md, "ack").
static void
s_ack (gateway_t *self, gateway_stream_t *s, bool last)
{
    sl_msg_t ack;
    sl_delivery_ack (s->delivery, last, &ack);
    gateway_send (self, &ack);
}

void
gateway_stream_cancel (gateway_t *self, gateway_stream_t *s, const char *why)
{
    sl_msg_t cancel;
    sl_msg_init (&cancel, SL_MSG_CANCEL);
    memcpy (cancel.sid, s->sid, SL_SID_SIZE);
    cancel.code = SL_STR_LIT ("client_gone");
    cancel.message = sl_str (why);
    gateway_send (self, &cancel);
    sl_counter_inc (self->cancels);
    gateway_approvals_cancel (self, s->sid);     //  a call of it may wait for a person
}

static void
s_stop_ask (void *arg, uint64_t ticket)
{
    sl_llm_client_cancel (arg, ticket);
}

//  Free what the stream held until its job left, stopping its asks in
//  flight.
void
gateway_stream_release (gateway_t *self, gateway_stream_t *s)
{
    sl_llm_tickets_drop_stream (self->tickets, s->sid, s_stop_ask, self->llm);
    sl_reqjudge_destroy (&s->rj);
    sl_job_clear (&s->parsed);
    sl_buf_free (&s->headers);
    sl_policy_unref (&s->policy);
}

static void s_fail (gateway_t *self, gateway_stream_t *s, int status, const char *code, const char *message);

//  End the streams silent past their bound (sl_delivery_silence) with an
//  error; the ingest is told to let go too (should it run again after
//  all).
static void
s_end_silent (gateway_t *self)
{
    size_t count;
    void **streams = sl_sidmap_values (self->streams, &count);
    for (size_t i = 0; i < count; i++) {
        gateway_stream_t *s = streams [i];
        sl_delivery_silence_t silence = sl_delivery_silence (s->delivery);
        if (silence == SL_DELIVERY_HEARD)
            continue;
        if (silence == SL_DELIVERY_ORPHANED) {
            //  Its upstream call is lost with its ingest (an LLM call
            //  cannot be resumed elsewhere).
            sl_counter_inc (self->ingest_lost);
            gateway_stream_cancel (self, s, "its ingest went silent");
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
            gateway_stream_cancel (self, s, "the stream expired");
        s_fail (self, s, 504, "stream_expired", text);
    }
    free (streams);
}

//  What the stream spent: the usage its last frame carried, else an
//  estimate from the bytes of its request and of what reached the client.
static void
s_stream_settle (gateway_t *self, gateway_stream_t *s)
{
    if (!s->caller || s->leg)
        return;                         //  a leg's caller is its MCP request's
    if (s->refused) {
        sl_admission_finish (self->admission, &s->caller, s->model, NULL, false);
        return;
    }
    sl_usage_t estimate = { .input = (int64_t) (s->request_bytes / SL_ADMISSION_BYTES_PER_TOKEN),
                            .output = (int64_t) (s->response_bytes / SL_ADMISSION_BYTES_PER_TOKEN) };
    bool estimated = !s->has_usage || s->usage_estimated;
    sl_admission_finish (self->admission, &s->caller, s->model, s->has_usage ? &s->usage : &estimate, estimated);
}

void
gateway_stream_forget (gateway_t *self, gateway_stream_t *s)
{
    s_stream_settle (self, s);
    free (s->model);
    gateway_stream_release (self, s);
    if (s->req)
        sl_http_req_set_data (s->req, NULL);
    sl_sidmap_remove (self->streams, s->sid);
    sl_router_unpin (self->router, s->sid);
    sl_delivery_destroy (&s->delivery);
    gateway_leg_forget (self, s);       //  a leg's end goes to its done
    free (s);
}

//  End a response that cannot be completed (its ingest died, lost it, or
//  refused it), in the client's dialect: an HTTP error (status) when
//  nothing was written yet, an error event otherwise.
static void
s_fail (gateway_t *self, gateway_stream_t *s, int status, const char *code, const char *message)
{
    if (s->leg) {
        gateway_leg_fail (self, s, status, code, message);
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
    gateway_stream_forget (self, s);
}

//  --------------------------------------------------------------------------
//  Frames from the emitters: what each one is to the client is
//  sl_delivery's answer; here it is written, counted and acked.

static int s_on_alone_timer (zloop_t *loop, int timer_id, void *arg);

//  The client still has bytes of ours to take (an ALONE frame waits).
static bool
s_behind (const gateway_stream_t *s)
{
    return s->req && !sl_http_stream_drained (s->req);
}

static void
s_observe_ttfb (gateway_t *self, const gateway_stream_t *s)
{
    sl_histo_observe (self->ttfb, (double) (zclock_usecs () - s->started_us) / 1e6);
}

//  The client could not take what was written (it is gone, or reads too
//  slowly): stop the upstream.
static void
s_drop_client (gateway_t *self, gateway_stream_t *s)
{
    sl_http_stream_abort (s->req);
    gateway_stream_cancel (self, s, "client could not take the response");
    gateway_stream_forget (self, s);
}

//  A keep-alive that opens the response: the first block is a call the
//  judge holds, and the client must hear from us meanwhile.
static void
s_write_keepalive (gateway_t *self, gateway_stream_t *s, const sl_delivery_write_t *w)
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
s_write_frame (gateway_t *self, gateway_stream_t *s, const sl_delivery_write_t *w)
{
    if (s->leg) {
        if (w->end)
            s_ack (self, s, true);
        gateway_leg_frame (self, s, w);     //  not a client's: no TTFB, no bytes written
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
        gateway_stream_forget (self, s);
    }
}

static void
s_on_frame (gateway_t *self, const sl_msg_t *f)
{
    gateway_stream_t *s = sl_sidmap_get (self->streams, f->sid);
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
    gateway_t *self = arg;
    bool waiting = false;
    size_t count;
    void **streams = sl_sidmap_values (self->streams, &count);
    for (size_t i = 0; i < count; i++) {
        gateway_stream_t *s = streams [i];
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
    gateway_t *self = arg;
    size_t cursor = 0;
    gateway_stream_t *s;
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
s_resend_pending (gateway_t *self, const char *endpoint)
{
    size_t cursor = 0;
    gateway_stream_t *s;
    while ((s = sl_sidmap_next (self->streams, &cursor, NULL))) {
        const char *pinned = sl_router_peer_of (self->router, s->sid);
        sl_msg_t job;
        if (pinned && strcmp (pinned, endpoint) == 0 && sl_delivery_job (s->delivery, self->codec, &job) == 0) {
            sl_counter_inc (self->resent);
            gateway_send (self, &job);
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
    gateway_t *self = arg;
    if (event == SL_PEER_UP || event == SL_PEER_RECONNECTED)
        s_resend_pending (self, endpoint);
    if (event == SL_PEER_RECONNECTED)
        return;                         //  the same ingest: a request sent twice runs once
    size_t count;
    void **streams = sl_sidmap_values (self->streams, &count);
    for (size_t i = 0; i < count; i++) {
        gateway_stream_t *s = streams [i];
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
            gateway_send (self, &job);
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
    gateway_t *self = arg;
    gateway_stream_t *s = sl_sidmap_get (self->streams, msg->sid);
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
    gateway_t *self = arg;
    if (msg->type == SL_MSG_FRAME)
        s_on_frame (self, msg);
}

static void
s_flush (void *arg)
{
    gateway_t *self = arg;
    sl_router_flush (self->router);
    sl_httpd_run (self->httpd);
}

//  --------------------------------------------------------------------------
//  Client requests

static void
s_serve_status (gateway_t *self, sl_http_req_t *req, const char *method, const char *path)
{
    if (strcmp (method, "GET") != 0) {
        sl_http_add_header (req, "Allow", "GET");
        gateway_respond_error (req, GATEWAY_DEFAULT_DIALECT, 405, "invalid_request_error", "use GET");
        return;
    }
    if (sl_service_answer_probe (self->service, req, path))
        return;
    sl_buf_reset (&self->scratch);
    sl_service_render_metrics (self->service, &self->scratch);
    sl_http_respond (req, 200, "text/plain; version=0.0.4", self->scratch.data, self->scratch.len);
}

//  GET /v1/models and friends (sl_models.h); false when path is not one.
static bool
s_serve_models (gateway_t *self, sl_http_req_t *req, const char *path)
{
    int status, dialect;
    sl_buf_reset (&self->scratch);
    if (!self->config.routes
    ||  !sl_models_answer (self->config.routes, path, gateway_header, req, &status, &dialect, &self->scratch))
        return false;
    if (!gateway_authorized (self, req, dialect))
        return true;
    sl_http_respond (req, status, "application/json", self->scratch.data, self->scratch.len);
    return true;
}

//  A request parsed: refused in the client's dialect, or on its way.
static void
s_on_parsed (gateway_t *self, sl_http_req_t *req, int dialect, int rc, sl_job_t *parsed, sl_caller_t *caller)
{
    if (rc) {
        sl_admission_finish (self->admission, &caller, NULL, NULL, false);
        sl_counter_inc (self->refused);
        if (parsed->provider)           //  routed: the translation refused it
            sl_counter_inc (self->untranslated);
        gateway_respond_error (req, dialect, parsed->status, parsed->error_type, sl_buf_cstr (&parsed->error_message));
    }
    else
        gateway_start_stream (self, req, parsed, caller);
}

//  A request with ambiguous framing (sl_httpd counted it, and closes the
//  connection after this answer): 400 in the dialect its path names.
static void
s_refuse_framing (sl_http_req_t *req, const char *path, const char *why)
{
    sl_endpoint_t route;
    sl_job_route (path, &route);
    char message [160];
    snprintf (message, sizeof message, "the request's length is ambiguous (%s): refused", why);
    gateway_respond_error (req, route.dialect, 400, "invalid_request_error", message);
}

//  A request on a kept-alive connection while the gateway drains: 503 in
//  the dialect its path names, and the connection closes, so the client
//  retries on another gateway rather than losing the request.
static void
s_refuse_draining (sl_http_req_t *req, const char *path)
{
    sl_endpoint_t route;
    sl_job_route (path, &route);
    sl_http_add_header (req, "Retry-After", GATEWAY_RETRY_AFTER_S);
    sl_http_add_header (req, "Connection", "close");
    gateway_respond_error (req, route.dialect, 503, "overloaded_error",
                           "this sluice gateway is shutting down: send the request again");
}

//  Without keys, whoever reaches the port may call, and a web page can
//  make this machine's browser call (DNS rebinding): a request that names
//  another site in its Host or Origin is refused, 403 in the dialect its
//  path names (sl_loopback.h). With keys the key is the guard. True when
//  it was refused.
static bool
s_refuse_foreign (gateway_t *self, sl_http_req_t *req, const char *path)
{
    if (sl_admission_checks (self->admission))
        return false;
    const char *why = sl_loopback_refusal (sl_http_req_header (req, "Host"), sl_http_req_header (req, "Origin"));
    if (!why)
        return false;
    sl_counter_inc (self->foreign);
    sl_endpoint_t route;
    sl_job_route (path, &route);
    gateway_respond_error (req, route.dialect ? route.dialect : GATEWAY_DEFAULT_DIALECT, 403, "permission_error",
                           why);
    return true;
}

static void
s_on_request (void *arg, sl_http_req_t *req)
{
    gateway_t *self = arg;
    const char *method = sl_http_req_method (req);
    const char *path = sl_http_req_path (req);
    if (sl_http_req_bad_framing (req)) {
        s_refuse_framing (req, path, sl_http_req_bad_framing (req));
        return;
    }
    //  The probes say no more than up or not, whoever asks.
    bool probe = strcmp (path, "/healthz") == 0 || strcmp (path, "/readyz") == 0;
    if (!probe && s_refuse_foreign (self, req, path))
        return;
    if (probe || strcmp (path, "/metrics") == 0) {
        //  The metrics tell how busy sluice is, with what, and how it
        //  refuses: on the client port, with client keys configured, only
        //  for a client with a key (the metrics port is for operators and
        //  stays open). /healthz and /readyz say no more than up or not,
        //  and taking new streams or draining.
        if (path [1] == 'm' && !gateway_authorized (self, req, GATEWAY_DEFAULT_DIALECT))
            return;
        s_serve_status (self, req, method, path);
        return;
    }
    if (gateway_mcp_serve (self->mcp, self, req, method, path))
        return;                         //  MCP answers in JSON-RPC, draining too
    if (sl_service_draining (self->service)) {
        s_refuse_draining (req, path);
        return;
    }
    if (strcmp (method, "GET") == 0 && s_serve_models (self, req, path))
        return;
    if (gateway_approvals_serve (self, req, method, path))
        return;
    sl_endpoint_t route;
    bool found = sl_job_route (path, &route) == 1;
    int dialect = route.dialect ? route.dialect : GATEWAY_DEFAULT_DIALECT;
    if (!found) {
        gateway_respond_error (req, dialect, 404, "not_found_error", "no such endpoint");
        return;
    }
    if (strcmp (method, "POST") != 0) {
        sl_http_add_header (req, "Allow", "POST");
        gateway_respond_error (req, dialect, 405, "invalid_request_error", "use POST");
        return;
    }
    sl_caller_t *caller = gateway_identify (self, req, dialect);
    if (!caller)
        return;
    sl_counter_inc (gateway_request_counter (self, dialect, sl_caller_team_label (caller)));
    if (sl_http_req_too_large (req)) {
        sl_admission_finish (self->admission, &caller, NULL, NULL, false);
        sl_counter_inc (self->refused);
        char message [96];
        snprintf (message, sizeof message, "the request body is over the limit of %zu bytes",
                  self->config.max_body);
        gateway_respond_error (req, dialect, 413, "request_too_large", message);
        return;
    }
    sl_str_t body = sl_http_req_body (req);
    const char *alt = sl_http_req_query (req, "alt");
    route.sse = alt && strcmp (alt, "sse") == 0;
    if (body.len > PARSE_WORKER_INLINE_BYTES) {
        //  Long work: off the reactor, which keeps answering heartbeats.
        parse_worker_task_t *task = parse_worker_task_new ();
        task->endpoint = route;
        task->routes = self->config.routes;
        sl_buf_append_str (&task->body, body);
        task->owner = req;
        task->caller = caller;
        zlistx_add_end (self->parsing, task);
        parse_worker_submit (self->parse_worker, task);
        return;
    }
    sl_job_t parsed;
    int rc = sl_job_prepare (&route, body, self->config.routes, self->toolcache, &parsed);
    s_on_parsed (self, req, dialect, rc, &parsed, caller);
    sl_job_clear (&parsed);
}

//  A large body came back parsed from the worker thread; its client may
//  have gone meanwhile.
static void
s_on_parse_done (void *arg, parse_worker_task_t *task)
{
    gateway_t *self = arg;
    void *handle = zlistx_find (self->parsing, task);
    if (handle)
        zlistx_delete (self->parsing, handle);
    sl_log_info ("request_parsed", "bytes=%zu took_ms=%.1f client=%s", task->body.len, task->took_us / 1000.0,
                 task->owner ? "waiting" : "gone");
    sl_caller_t *caller = task->caller;
    if (task->owner) {
        s_on_parsed (self, task->owner, task->endpoint.dialect, task->rc, &task->parsed, caller);
        sl_router_flush (self->router);
        sl_httpd_run (self->httpd);
    }
    else
        sl_admission_finish (self->admission, &caller, NULL, NULL, false);
    parse_worker_task_destroy (&task);
}

static void
s_on_closed (void *arg, sl_http_req_t *req, bool aborted)
{
    gateway_t *self = arg;
    gateway_stream_t *s = sl_http_req_data (req);
    if (!s) {
        if (gateway_approvals_closed (self, req) || gateway_mcp_closed (self->mcp, req))
            return;
        //  A client that left while its body was being parsed.
        for (parse_worker_task_t *task = zlistx_first (self->parsing); task; task = zlistx_next (self->parsing))
            if (task->owner == req)
                task->owner = NULL;
        return;
    }
    //  The response did not complete: the client left. Stop the upstream
    //  (when the request went to one: it may still be being judged).
    s->req = NULL;
    if (sl_delivery_dispatched (s->delivery))
        gateway_stream_cancel (self, s, aborted ? "client disconnected" : "response closed");
    sl_router_flush (self->router);
    gateway_stream_forget (self, s);
}

//  Every live stream keeps its places among its key's and team's
//  concurrent streams (a lease the store lets go of otherwise).
static int
s_on_renew_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    gateway_t *self = arg;
    size_t cursor = 0;
    gateway_stream_t *s;
    while ((s = sl_sidmap_next (self->streams, &cursor, NULL)))
        if (!s->leg)                    //  a leg's caller is renewed by its MCP request
            sl_admission_renew (self->admission, s->caller);
    return 0;
}

static double
s_active (void *arg)
{
    return (double) sl_sidmap_size (((gateway_t *) arg)->streams);
}

static double
s_pending (void *arg)
{
    return (double) sl_router_pending (((gateway_t *) arg)->router);
}

static double
s_connections (void *arg)
{
    gateway_t *self = arg;
    return self->httpd ? (double) sl_httpd_connections (self->httpd) : 0;
}

static double
s_body_bytes (void *arg)
{
    gateway_t *self = arg;
    return self->httpd ? (double) sl_httpd_body_bytes (self->httpd) : 0;
}

static double
s_buffered (void *arg)
{
    gateway_t *self = arg;
    size_t cursor = 0, total = 0;
    gateway_stream_t *s;
    while ((s = sl_sidmap_next (self->streams, &cursor, NULL)))
        if (s->req)
            total += sl_http_stream_buffered (s->req);
    return (double) total;
}

//  --------------------------------------------------------------------------
//  The policy

//  What the "policy_loaded" line says of a policy here (requests read it
//  from the set as they arrive: nothing to do on a reload).
static void
s_describe (sl_policy_t *policy, sl_buf_t *out)
{
    sl_buf_printf (out, "%d request rules, history %s, id=%s", sl_policy_request_count (policy),
                   sl_policy_uses_history (policy) ? "yes" : "no", sl_policy_id (policy));
}

static void
s_policy_metrics (gateway_t *self, sl_metrics_t *m)
{
    //  The series of requests without a team are there from the start.
    for (int a = SL_ACT_ALLOW; a < SL_ACT_MAX; a++)
        for (int c = 0; c < SL_CHK_MAX; c++)
            sl_service_verdict_counter (self->service, "sluice_request_verdicts_total", GATEWAY_VERDICTS_HELP, a, c,
                                        SL_TEAMLABEL_DEFAULT);
    for (int d = SL_DIALECT_OPENAI; d < SL_DIALECT_MAX; d++)
        if (sl_dialect_is_client (sl_dialect_get (d)))     //  clients call only these
            gateway_request_counter (self, d, SL_TEAMLABEL_DEFAULT);
    self->denied = sl_metrics_counter (m, "sluice_requests_denied_total", NULL,
                                       "Requests the request policy refused (403)");
    self->unjudged = sl_metrics_counter (m, "sluice_policy_unknown_total", NULL,
                                         "Requests whose policy file this gateway does not have (refused, 500)");
    self->judge_latency = sl_metrics_histogram (m, "sluice_request_judge_seconds", NULL,
                                                "Time from a request to its last request verdict",
                                                sl_metrics_latency_bounds, sl_metrics_latency_bounds_count);
}
//  --------------------------------------------------------------------------
//  Drain (sl_service.h): no new client from the SIGTERM on, the streams
//  held finish, and those still running at --drain-ms end with an error in
//  their client's dialect.

static void
s_drain_start (void *arg)
{
    gateway_t *self = arg;
    if (sl_httpd_quiesce (self->httpd))
        sl_log_warn ("quiesce_failed", "the client port could not stop accepting; new clients get 503");
    sl_log_info ("draining_streams", "streams=%zu", sl_sidmap_size (self->streams));
}

//  Nothing held: no stream, no body being parsed, and every answer's last
//  byte gone to its client.
static bool
s_drain_idle (void *arg)
{
    gateway_t *self = arg;
    return sl_sidmap_size (self->streams) == 0 && zlistx_size (self->parsing) == 0
        && sl_httpd_requests (self->httpd) == 0;
}

static void
s_drain_give_up (void *arg)
{
    gateway_t *self = arg;
    size_t count;
    void **streams = sl_sidmap_values (self->streams, &count);
    if (count)
        sl_log_warn ("drain_ended_streams", "streams=%zu", count);
    for (size_t i = 0; i < count; i++) {
        gateway_stream_t *s = streams [i];
        if (sl_delivery_dispatched (s->delivery))
            gateway_stream_cancel (self, s, "the gateway is shutting down");
        s_fail (self, s, 503, "shutting_down", "this sluice gateway shut down before the response was complete");
    }
    free (streams);
    sl_router_flush (self->router);
    sl_httpd_run (self->httpd);
}

//  A gateway without keys lets in whoever reaches it, and spends the
//  providers' keys for them: on an address other than loopback only when
//  the operator said so (--allow-anonymous). -1 (logged) when it must not
//  start.
static int
s_check_door (gateway_t *self)
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

gateway_t *
gateway_new (sl_service_t *service, const gateway_config_t *config)
{
    gateway_t *self = sl_xcalloc (1, sizeof *self);
    self->config = *config;
    self->service = service;
    self->streams = sl_sidmap_new ();
    self->leg_timer = -1;
    zloop_t *loop = sl_service_loop (service);
    sl_metrics_t *m = sl_service_metrics (service);
    self->policies = sl_policyset_new (service, config->policy_path, config->watch_ms, s_describe);
    if (!self->policies) {
        sl_sidmap_destroy (&self->streams);
        free (self);
        return NULL;
    }
    self->metrics = m;
    sl_admission_config_t admission = {
        .keys_path = config->keys_path,
        .client_keys = config->client_keys,
        .watch_ms = config->watch_ms,
        .redis_url = config->redis_url,
        .limits_timeout_ms = config->limits_timeout_ms,
        .routes = config->routes,
    };
    self->admission = sl_admission_new (service, &admission);
    if (!self->admission) {
        sl_policyset_destroy (&self->policies);
        sl_sidmap_destroy (&self->streams);
        free (self);
        return NULL;
    }
    if (s_check_door (self)) {
        sl_admission_destroy (&self->admission);
        sl_policyset_destroy (&self->policies);
        sl_sidmap_destroy (&self->streams);
        free (self);
        return NULL;
    }
    s_policy_metrics (self, m);
    gateway_policies_follow_keys (self);      //  the keys' files load at start (and say so)
    self->llm = sl_llm_client_new (loop, m, gateway_llm_done, gateway_llm_after, self);
    self->llm_cache = sl_llm_cache_new (SL_LLM_CACHE_DEFAULT);
    self->tickets = sl_llm_tickets_new ();
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
    self->codec = sl_codec_new ();
    self->parsing = zlistx_new ();
    self->parse_worker = parse_worker_new (loop, s_on_parse_done, self);
    self->toolcache = sl_toolcache_new ();
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
    self->untranslated = sl_metrics_counter (m, "sluice_requests_untranslatable_total", NULL,
                                             "Requests refused because something they need cannot cross to the "
                                             "provider's dialect");

    self->router = sl_router_new (loop, sl_service_name (service), sl_service_incarnation (service));
    sl_router_set_metrics (self->router, m, "ingest");
    sl_service_watch_hop (service, self->router);
    sl_router_on_peer (self->router, s_on_ingest_event, self);
    sl_router_on_message (self->router, s_on_ingest_message, self);
    self->ack_timer = zloop_timer (loop, GATEWAY_ACK_MS, 0, s_on_ack_timer, self);
    self->alone_timer = -1;
    gateway_leg_metrics (self);
    self->renew_timer = zloop_timer (loop, SL_LIMITS_RENEW_S * 1000, 0, s_on_renew_timer, self);
    if (sl_router_set_bus (self->router, sl_service_bus (service), "ingest")
    ||  sl_router_connect (self->router, config->next)) {
        gateway_destroy (&self);
        return NULL;
    }
    self->stage = sl_stage_new (service, config->bind, s_on_inbox, s_flush, self);
    if (!self->stage) {
        gateway_destroy (&self);
        return NULL;
    }
    const char *bound = sl_inbox_endpoint (sl_stage_inbox (self->stage));
    sl_httpd_limits_t limits = {
        .max_conns = config->max_conns,
        .max_conns_per_ip = config->max_conns_per_ip,
        .request_timeout_ms = config->request_timeout_ms,
    };
    self->httpd = sl_httpd_new_with (loop, config->http_host, config->http_port, config->max_body, &limits,
                                     s_on_request, s_on_closed, self);
    if (!self->httpd) {
        gateway_destroy (&self);
        return NULL;
    }
    if (gateway_approvals_start (self)) {
        gateway_destroy (&self);
        return NULL;
    }
    self->mcp = gateway_mcp_new (self);
    sl_httpd_set_counters (self->httpd, &self->http);
    sl_httpd_set_stream_cap (self->httpd, config->stream_cap);
    sl_httpd_dispatch_oversize (self->httpd, true);
    sl_service_on_drain (service, s_drain_start, s_drain_idle, s_drain_give_up, self);
    sl_log_info ("listening", "http=%s:%d inbox=%s name=%s",
                 config->http_host, sl_httpd_port (self->httpd), bound, sl_service_name (self->service));
    return self;
}

void
gateway_destroy (gateway_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    gateway_t *self = *self_p;
    //  Closing the HTTP server ends every client request (on_closed).
    sl_httpd_destroy (&self->httpd);
    gateway_mcp_destroy (&self->mcp);
    //  Whose bodies were still being parsed: let them go (the worker
    //  never touches a task's caller).
    for (parse_worker_task_t *task = zlistx_first (self->parsing); task; task = zlistx_next (self->parsing)) {
        sl_caller_t *caller = task->caller;
        task->caller = NULL;
        sl_admission_finish (self->admission, &caller, NULL, NULL, false);
    }
    parse_worker_destroy (&self->parse_worker);     //  frees the tasks it still held
    sl_toolcache_destroy (&self->toolcache);
    zlistx_destroy (&self->parsing);
    sl_router_flush (self->router);
    gateway_approvals_stop (self);
    size_t count;
    void **streams = sl_sidmap_values (self->streams, &count);
    for (size_t i = 0; i < count; i++) {
        gateway_stream_t *s = streams [i];
        gateway_stream_release (self, s);
        if (s->leg)
            gateway_leg_drop (s);       //  its MCP request goes with the gateway too
        else
            sl_admission_finish (self->admission, &s->caller, s->model, NULL, false);
        free (s->model);
        sl_delivery_destroy (&s->delivery);
        free (s);
    }
    free (streams);
    sl_sidmap_destroy (&self->streams);
    sl_llm_client_destroy (&self->llm);
    sl_llm_cache_destroy (&self->llm_cache);
    sl_llm_tickets_destroy (&self->tickets);
    sl_keyring_unref (&self->policy_keys);
    sl_policyset_destroy (&self->policies);
    sl_stage_destroy (&self->stage);
    if (self->ack_timer > 0)
        zloop_timer_end (sl_service_loop (self->service), self->ack_timer);
    if (self->alone_timer > 0)
        zloop_timer_end (sl_service_loop (self->service), self->alone_timer);
    if (self->renew_timer > 0)
        zloop_timer_end (sl_service_loop (self->service), self->renew_timer);
    if (self->leg_timer >= 0)
        zloop_timer_end (sl_service_loop (self->service), self->leg_timer);
    sl_router_destroy (&self->router);
    sl_codec_destroy (&self->codec);
    sl_buf_free (&self->scratch);
    sl_admission_destroy (&self->admission);
    free (self);
    *self_p = NULL;
}

int
gateway_http_port (gateway_t *self)
{
    return sl_httpd_port (self->httpd);
}
