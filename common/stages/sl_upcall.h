/*  sl_upcall.h - the ingest's upstream calls: each stream's call to its
    provider, the call's deadlines and retries, and the stream's delta log.

    A pure library (the ingest's): no socket, no libcurl, no clock of its
    own. The service feeds it what happens (a request job, a cancel, a
    gateway's ack, a stream lost further on, the events of an HTTP
    transfer: connected, a header line, body bytes, done; and the passing
    of time, sl_upcall_tick) and it answers through the operations the
    service gives it (sl_upcall_ops_t): what to send downstream, what to
    tell a gateway directly, when to start, stop, pause or resume a
    transfer. Time comes from the ops' clocks only.

    Each stream is a small state machine over its upstream call:

        BACKOFF --start_attempt--> (AUTHORIZING) --> CONNECTING --connected--> WAITING
        WAITING --first_byte--> STREAMING --bytes--> STREAMING
        any --done / failure / timeout--> (retry: BACKOFF) or DONE

    AUTHORIZING: a provider whose credential comes from a source
    (sl_auth.h: a cloud's token being fetched, a signature's credentials)
    has each attempt authorized before it starts; while the source is
    fetching, the call waits here, in the reactor, until the service says
    the source has news (sl_upcall_authorized) or auth_timeout_ms passes.
    Credentials that cannot be had (or do not come in time) move the call
    to its next provider, as a first byte that does not come does; with
    none left, the stream ends with upstream_credentials (502) or
    upstream_credentials_timeout (504), never a request sent without them.

    DONE: the upstream part is over (or failed) and END went downstream;
    the stream stays until the gateway acknowledges the end of the
    response, so that it can still be re-sent. Every state but DONE has
    its deadline (the end of a backoff, connect, first byte, idle between
    bytes: the config's), checked by sl_upcall_tick; an expired one ends
    the call with an error naming it (a connect that never completed is
    retried first). A retry (connection errors, 429, 5xx) is allowed only
    while nothing but the START has gone downstream: the client has seen
    nothing. Its wait is the answer's Retry-After, or an exponential
    backoff (sl_retry.h); a Retry-After over retry_max_ms is not waited
    for. The request body is kept for a retry and let go once the response
    is under way and the transfer has sent all of it.

    The delta log: everything a stream sends downstream is also kept, up to
    log_max bytes a stream and log_total in all; a log over its bound is
    dropped and the stream can no longer be re-sent (counted). A stream is
    re-sent from its log, in a new epoch (the routers pin it afresh to live
    instances), when a stage instance holding it dies (sl_upcall_lost), and
    as a safety net when the gateway's activity counter (in its acks)
    stays still for stall_ms after a send, the deadline doubling at each
    re-send so that overload is not mistaken for death. A START alone does
    not start that clock: nothing reaches the client before the model's
    first byte, and the upstream deadlines judge that silence. A stream
    that cannot be re-sent (no log, or re-sent SL_UPCALL_MAX_RESENDS times)
    is lost: its gateway hears directly. When no ack at all comes for
    gateway_dead_ms, the gateway is gone: the call is cancelled.

    An inline answer (REQ "inl": the gateway's own request, an MCP leg)
    makes no upstream call at all: no provider is looked up, no credential
    or URL is built, ops.start is never called and nothing is retried.
    The answer is read from the reactor (ops.later, sl_upcall_inline) as
    the body of a transfer of status 200 would be, by the "ud" dialect's
    decoder, so the delta log, re-sends, credit, acks and ends are those
    of any stream. The provider named is the job's "prov".

    Several providers (the job's "fo": a route's providers in the order
    to try them, each with its model and body, common/dialects/sl_plan.h):
    the call's attempts walk them (sl_failover.h). A connect error or
    timeout, a 429, a 5xx (529 too), a connection that breaks and a first
    byte that does not come, while nothing has gone
    downstream, move the call to the next provider at once (its own
    dialect's URL, credential, body and decoder); a Retry-After holds
    that provider for every stream until its time, and it is passed by
    rather than waited on; a 401 or 403 moves to the provider's next key
    (key_envs), never to another provider. When none is left in order,
    the list is tried again from the top after a backoff, up to
    max_retries rounds (with one provider: the retries of a single
    upstream). The ingest's health table (sl_failover_t) ejects a
    provider that fails config.eject.failures times within the window for
    the cool-down, then lets one probe through. An answer that began
    (2xx) and does not decode is not failed over: it ends the stream
    (upstream_malformed) and counts as the provider's failure.

    The START goes downstream only when the call commits to a provider
    (the first message the stream sends: what the decoder made of a 2xx
    answer, or the error that ends it), so that it names the provider
    that served, its dialect (what the later stages translate from) and,
    in "att", every provider tried before and why it was left.

    Metric names and help, log event names and the texts of log lines and
    of the errors it sends are the ingest's (sluice_replays_total,
    stream_replay, "replay log" ...): interfaces that keep their words.
*/
#ifndef SL_UPCALL_H
#define SL_UPCALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "common/base/sl_metrics.h"
#include "common/dialects/sl_upstream.h"
#include "common/dialects/sl_providers.h"
#include "common/http/sl_auth.h"
#include "common/stages/sl_failover.h"
#include "proto/sl_msg.h"

#define SL_UPCALL_MAX_RESENDS 8         //  re-sends of one stream before it is lost
#define SL_UPCALL_ERROR_BODY_MAX 65536  //  bytes of a non-2xx body kept
#define SL_UPCALL_INLINE_PIECE 16384    //  an inline answer is decoded this much at a time
#define SL_UPCALL_TRIED_MAX 64          //  attempts and skips a stream's record names, at most

typedef struct _sl_upcall_t sl_upcall_t;
//  One stream and its upstream call (owned by sl_upcall_t; valid while its
//  transfer runs).
typedef struct _sl_upcall_call_t sl_upcall_call_t;

typedef struct {
    sl_providers_t *routes;             //  providers and routes (borrowed)
    long connect_timeout_ms;            //  TCP + TLS connect
    long first_byte_timeout_ms;         //  request sent -> first response byte
    long idle_timeout_ms;               //  no byte for this long ends the call
    size_t max_event;                   //  SSE line / event limit, bytes
    int max_retries;                    //  attempts after the first
    long retry_base_ms;                 //  first backoff, doubled each time
    long retry_max_ms;                  //  longest wait; a longer Retry-After is not waited for
    long stall_ms;                      //  no progress after a send this long: re-send
    long gateway_dead_ms;               //  no ack this long: the gateway is gone
    size_t log_max;                     //  bytes of one stream's delta log
    size_t log_total;                   //  bytes of all delta logs
    size_t max_streams;                 //  streams at once; more are refused (503); 0: no limit
    sl_failover_config_t eject;         //  when a provider is ejected, and for how long
    long auth_timeout_ms;               //  the longest wait for a credential; 0: connect_timeout_ms
} sl_upcall_config_t;

#define SL_UPCALL_TRACE_HEADERS 2      //  traceparent and tracestate of a traced stream
#define SL_UPCALL_AUTH_LINES 4          //  a credential source's lines (a signature's: four)

//  What a transfer is to send: borrowed for the start call.
typedef struct {
    const char *url;
    //  "Name: value" lines
    const char *header [SL_UPSTREAM_HEADERS_MAX + SL_UPCALL_TRACE_HEADERS + SL_UPCALL_AUTH_LINES];
    size_t header_count;
    sl_str_t body;                      //  valid until the transfer is stopped
} sl_upcall_attempt_t;

//  What curl's write callback is to answer for body bytes.
typedef enum {
    SL_UPCALL_TAKEN,                    //  the bytes were taken
    SL_UPCALL_PAUSE,                    //  the next stage holds back credit: pause the
                                        //  transfer, the bytes untaken (sl_upcall_resume)
    SL_UPCALL_STOP                      //  the stream failed: stop the transfer (done follows)
} sl_upcall_take_t;

//  The service's side. None may call back into the library.
typedef struct {
    //  Queue msg for the next stage. 0 ok, -1 when no instance takes it
    //  (counted as unroutable).
    int (*send) (void *arg, const sl_msg_t *msg);
    //  The encoded bytes of the message send queued last (valid until the
    //  next send), or NULL: the library then encodes it itself.
    const uint8_t *(*encoded) (void *arg, size_t *len);
    //  Tell a gateway directly (peer: the routing id its job came from).
    void (*reply) (void *arg, sl_str_t peer, const sl_msg_t *msg);
    //  Start an attempt's transfer for call: its handle, or NULL when it
    //  could not start. Its events come back through sl_upcall_connected,
    //  _header, _body and, once, _done.
    void *(*start) (void *arg, sl_upcall_call_t *call, const sl_upcall_attempt_t *attempt);
    //  Stop and free a transfer (one that ended by itself too); no event
    //  of it comes back after.
    void (*stop) (void *arg, void *transfer);
    //  Go on reading a transfer paused by SL_UPCALL_PAUSE.
    void (*resume) (void *arg, void *transfer);
    //  The HTTP status of the transfer's answer, 0 while not known.
    long (*status) (void *arg, void *transfer);
    //  Bytes of the request body the transfer has sent, -1 when unknown.
    int64_t (*uploaded) (void *arg, void *transfer);
    //  True while the next stage holds back credit.
    bool (*congested) (void *arg);
    //  Monotonic time, ms.
    int64_t (*clock) (void *arg);
    //  Calendar time, s (a Retry-After that is a date).
    time_t (*wall) (void *arg);
    //  Call sl_upcall_inline (self, sid) soon, from the reactor: never
    //  from inside this call. NULL: inline answers are refused (an error
    //  ends such a stream; nothing is called).
    void (*later) (void *arg, const uint8_t *sid);
    //  The credential source of a provider (sl_auth.h), or NULL: its key,
    //  or the client's own, goes in its dialect's header (sl_upstream.h).
    //  NULL op: no provider has a source.
    sl_auth_t *(*auth) (void *arg, const sl_provider_t *provider);
} sl_upcall_ops_t;

//  Registers the ingest's counters and gauges in metrics (which must
//  outlive it). The ops are copied; arg is passed to each.
sl_upcall_t *sl_upcall_new (const sl_upcall_config_t *config, const sl_upcall_ops_t *ops, void *arg,
                            sl_metrics_t *metrics);
//  Stops every transfer still running.
void sl_upcall_destroy (sl_upcall_t **self_p);

//  From gateways (peer: the routing id the message came from).
//  A request job: start the stream (START downstream) and its call, or
//  refuse it at once over max_streams. A duplicate is ignored.
void sl_upcall_request (sl_upcall_t *self, const sl_msg_t *req, sl_str_t peer);
//  The client went away: stop the call, end the stream, forget it.
void sl_upcall_cancel (sl_upcall_t *self, const sl_msg_t *msg);
//  An ack: the gateway lives, its activity counter (ts), and with
//  SL_F_LAST the end of the response. An ack for a stream not held is
//  answered with upstream_lost.
void sl_upcall_ack (sl_upcall_t *self, const sl_msg_t *msg, sl_str_t peer);

//  From the next stages: the stream sid in epoch was lost further on (an
//  instance holding it died, why says how: a log field). Re-sent in a new
//  epoch when epoch is still its current one.
void sl_upcall_lost (sl_upcall_t *self, const uint8_t *sid, uint32_t epoch, const char *why);

//  From a transfer (call: as given to ops.start).
//  The connection is up and the request about to go.
void sl_upcall_connected (sl_upcall_t *self, sl_upcall_call_t *call);
//  One header line of the answer, as received.
void sl_upcall_header (sl_upcall_t *self, sl_upcall_call_t *call, const char *line, size_t len);
//  Body bytes.
sl_upcall_take_t sl_upcall_body (sl_upcall_t *self, sl_upcall_call_t *call, const char *data, size_t len);
//  The transfer ended: error is NULL when it ended cleanly, else the
//  transport's reason (said to the client), detail what to log (may be
//  NULL). The transfer is stopped (ops.stop) before this returns.
void sl_upcall_done (sl_upcall_t *self, sl_upcall_call_t *call, const char *error, const char *detail);

//  An inline answer's turn (ops.later): decode it as a transfer's body
//  of status 200, text/event-stream, as far as credit allows (paused, it
//  goes on at sl_upcall_resume), then end it as a transfer's done. Nothing
//  when the stream is gone or its answer was read.
void sl_upcall_inline (sl_upcall_t *self, const uint8_t *sid);

//  A credential source has news (its notify hook): the calls waiting for
//  credentials ask again, and start, move on, or wait on.
void sl_upcall_authorized (sl_upcall_t *self);

//  Time passed: fire the deadlines that are due (gateway gone, stalled
//  acks, backoff over, connect, first byte, idle).
void sl_upcall_tick (sl_upcall_t *self);
//  Credit came back: resume every paused transfer.
void sl_upcall_resume (sl_upcall_t *self);

//  Streams held.
size_t sl_upcall_count (sl_upcall_t *self);
//  The providers' health (borrowed; for the console's and tests' eyes).
sl_failover_t *sl_upcall_failover (sl_upcall_t *self);
//  Bytes held in delta logs, and in request bodies kept for a retry.
size_t sl_upcall_log_bytes (sl_upcall_t *self);
size_t sl_upcall_body_bytes (sl_upcall_t *self);
//  Bytes of what a new attempt is made of (URLs, headers, credential
//  lines, the clients' own headers), held while a retry may need them
//  (for tests: walks every stream).
size_t sl_upcall_attempt_bytes (sl_upcall_t *self);

#endif
