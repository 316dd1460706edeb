/*  gateway_core.h - the gateway's core: its HTTP server and route table,
    the stream table, admission, the job each stream sends to an ingest,
    and what comes back for it. Every other file of the gateway is an
    endpoint family or a client of streams, and uses only this interface
    (and gateway_leg.h, the streams with no HTTP client).

    Routes. Each endpoint family (gateway.c makes them: the probes, MCP,
    the models list, approvals, the model dialects) registers what it
    serves: a method, a path prefix, serve and on_close (h2o's
    h2o_config_register_path and its handlers' on_req). A request is
    tried against the routes in the order they were registered; serve
    answers (now or later) and returns true, or declines with false and
    the next route is tried (sl_handlers.h: the table and its order). The
    core never names a family: what it answers itself (ambiguous framing,
    another site's Host or Origin without keys, a request while draining,
    a path no route took) is shaped by the refuse hook
    (gateway_core_on_refuse).

    Streams. A family starts a stream from a parsed request and its
    caller (gateway_core_stream_start): admitted (sl_admission, unless its
    caller was admitted already), judged by the caller's request policy
    (gateway_judge.h, the core's own), sent to an ingest as a job with a
    fresh stream id, and its frames written to its HTTP client in order
    (sl_delivery: epochs, acks, resends, the bounds on silence) until it
    ends: its last frame, an error, its client gone, the gateway's drain.
    A stream with no HTTP client (a leg) has a sink instead: the places
    that would write to a client call the sink, which ends the stream
    when it is done with it (gateway_core_stream_end).
*/
#ifndef GATEWAY_CORE_H
#define GATEWAY_CORE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/dialects/sl_job.h"
#include "common/http/sl_httpd.h"
#include "common/policy/sl_policy.h"
#include "common/service/sl_service.h"
#include "common/stages/sl_delivery.h"
#include "proto/sl_msg.h"
#include "services/gateway/gateway.h"
#include "services/gateway/sl_admission.h"
#include "services/gateway/sl_handlers.h"

#define GATEWAY_RETRY_AFTER_S "1"       //  Retry-After of a 503 (an ingest at its stream limit, a drain)
#define GATEWAY_DEFAULT_DIALECT SL_DIALECT_OPENAI   //  the shape of answers to paths no dialect claims

typedef struct _gateway_core_t gateway_core_t;

//  --------------------------------------------------------------------------
//  Life

//  NULL (logged) when it cannot start: the policy or the keys file does
//  not load, no keys on an address other than loopback without
//  --allow-anonymous, a port or endpoint that cannot be bound.
gateway_core_t *gateway_core_new (sl_service_t *service, const gateway_config_t *config);
//  The routes are registered: say so (the line operators and tests wait
//  for) and serve.
void gateway_core_start (gateway_core_t *self);
//  Close the HTTP server: every request still open is closed (each
//  route's on_close, each stream's end) while the families still live.
//  Then the families, then the core, go.
void gateway_core_stop (gateway_core_t *self);
void gateway_core_destroy (gateway_core_t **self_p);
int gateway_core_http_port (gateway_core_t *self);
sl_service_t *gateway_core_service (gateway_core_t *self);
//  Outside the HTTP server's and the inbox's own turns (a timer, curl, a
//  control link answered): send what was queued for the ingests, write
//  what was queued for the clients. Never from inside a route's serve
//  (the HTTP server is running it).
void gateway_core_after (gateway_core_t *self);
//  Send what was queued for the ingests (anywhere, a serve too).
void gateway_core_flush (gateway_core_t *self);

//  --------------------------------------------------------------------------
//  Routes

//  A route is a handler of the core's table (sl_handlers.h): {method,
//  prefix, serve, on_close}, what it holds (held), and whether it is
//  open to whoever asks (no Host or Origin check: the probes) and served
//  while draining (it says so itself).
typedef sl_handler_t gateway_route_t;

//  Add a route after those registered (the struct is copied; prefix and
//  method must outlive the core). At most SL_HANDLERS_MAX.
void gateway_core_route (gateway_core_t *self, const gateway_route_t *route);

//  How the core's own refusals look (by path: a client reads errors in
//  its dialect); without a hook, GATEWAY_DEFAULT_DIALECT's error body.
typedef void (gateway_refuse_fn) (void *arg, sl_http_req_t *req, const char *path, int status, const char *type,
                                  const char *message);
void gateway_core_on_refuse (gateway_core_t *self, gateway_refuse_fn *refuse, void *arg);

//  A dispatched stream's requester is gone (its upstream call is
//  cancelled): whoever holds something of stream sid lets go of it (a
//  call of it waiting for a person's approval). One hook.
typedef void (gateway_cancel_fn) (void *arg, const uint8_t *sid);
void gateway_core_on_cancel (gateway_core_t *self, gateway_cancel_fn *cancel, void *arg);

//  --------------------------------------------------------------------------
//  Requests: what every family answers with

//  An error answer in a dialect's error body (0: GATEWAY_DEFAULT_DIALECT).
void gateway_core_respond_error (sl_http_req_t *req, int dialect, int status, const char *type,
                                 const char *message);
//  A request header, a query parameter (arg: the request), for the
//  libraries that read them (sl_header_fn).
const char *gateway_core_header (void *arg, const char *name);
const char *gateway_core_query (void *arg, const char *name);
//  Who runs the keys and limits (sl_admission.h; borrowed).
sl_admission_t *gateway_core_admission (gateway_core_t *self);
//  Who sent req: its caller, or NULL when the credential is refused
//  (answered: 401 in dialect, counted by reason). The caller is the
//  request's until sl_admission_finish.
sl_caller_t *gateway_core_identify (gateway_core_t *self, sl_http_req_t *req, int dialect);
//  A request that needs a caller only to be let in (/metrics, /v1/models):
//  false when it was refused (and answered).
bool gateway_core_authorized (gateway_core_t *self, sl_http_req_t *req, int dialect);
//  The request policy a caller's identity names (file NULL: the
//  default), NULL when it is not loaded here. Borrowed.
sl_policy_t *gateway_core_policy (gateway_core_t *self, const char *file);
//  A request refused before it became a stream (its body, its parse):
//  counted in sluice_requests_refused_total.
void gateway_core_count_refused (gateway_core_t *self);

//  --------------------------------------------------------------------------
//  Streams

//  Where a stream with no HTTP client goes. Each is called with the
//  sink's arg; none is called from inside gateway_core_stream_start but
//  fail and job. After frame with w->end, or fail, the stream waits for
//  gateway_core_stream_end (the sink's to call, now or later).
typedef struct {
    //  A frame of the answer (an ack LAST went already for its end).
    void (*frame) (void *arg, const sl_delivery_write_t *w);
    //  The stream cannot complete (its ingest lost it, it expired, the
    //  gateway drains, its request could not be made again).
    void (*fail) (void *arg, int status, const char *code, const char *message);
    //  Its job is leaving: add what the sink's jobs carry. refused_by_policy:
    //  the request policy refused it.
    void (*job) (void *arg, sl_msg_t *job, bool refused_by_policy);
    //  It is over (gateway_core_stream_end or _cancel): its last call.
    void (*ended) (void *arg);
    //  The gateway is going with the stream in it: its last call.
    void (*dropped) (void *arg);
} gateway_sink_t;

typedef struct {
    sl_http_req_t *req;                 //  its client (NULL: sink)
    const gateway_sink_t *sink;         //  with no client: where it goes (static), and its arg
    void *sink_arg;
    sl_caller_t *caller;                //  taken (a borrowed one is not)
    bool borrowed;                      //  the caller is someone else's and was admitted already: no
                                        //  admission, no renewal, nothing settled at the end
    const char *traceparent;            //  a sink's trace context (a client's is its headers),
    const char *tracestate;             //  NULL: none; borrowed until ended
} gateway_stream_spec_t;

//  Start a stream of spec for the request parsed (its contents are
//  taken); its id is written to sid (SL_SID_SIZE bytes) before anything
//  else happens to it. Refusals (admission, policy) run the pipeline as
//  verdicts to the client's own error.
void gateway_core_stream_start (gateway_core_t *self, const gateway_stream_spec_t *spec, sl_job_t *parsed,
                                uint8_t *sid);
//  The stream sid is over: forgotten (a sink's ended called). Nothing
//  when there is none.
void gateway_core_stream_end (gateway_core_t *self, const uint8_t *sid);
//  Its requester is gone: its ingest is told (once its job left), then
//  it ends as gateway_core_stream_end.
void gateway_core_stream_cancel (gateway_core_t *self, const uint8_t *sid, const char *why);
//  The stream's borrowed caller goes back to its owner, who may free it:
//  once its job left, a stream with a borrowed caller needs it no more
//  (the job, resends included, carries the identity). 0, or -1 (nothing
//  changed) when there is no such stream, its caller is its own or its
//  job has not left.
int gateway_core_stream_return_caller (gateway_core_t *self, const uint8_t *sid);

#endif
