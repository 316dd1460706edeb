/*  ingest.h - the ingest service: request jobs in, upstream calls, deltas out.

    For every request job from a gateway it takes the provider the
    gateway's routing named (or routes the model in the request's upstream
    dialect itself when its routes have no such provider: sl_providers),
    prepares the call (sl_upstream: the dialect's URL, headers and
    credential), starts the upstream HTTP call
    (libcurl multi, in the reactor) at the dialect's path with the
    provider's credentials, parses the server-sent events as they arrive,
    decodes them with the dialect's decoder and sends the deltas (after a
    START carrying the request's metadata and the provider's name) to the
    aggregator the stream is pinned to.

    It guards every call with three deadlines (connect, first byte, idle
    between bytes), each ending the stream with an error naming it; it
    retries with backoff (honouring Retry-After) on connection errors, 429
    and 5xx while nothing but the START has gone downstream; and a cancel
    from the gateway aborts the call at once.

    It holds at most max_streams streams at once (each has an upstream
    socket, a parser and a replay log): a request beyond that is refused at
    once, before any upstream call, with an error sent straight back to its
    gateway (overloaded_error, 503; the gateway answers it in the client's
    dialect) and counted (sluice_streams_refused_total).

    It keeps what each stream sent downstream and replays it in a new epoch
    when the gateway's acks show the stream stalled (a stage died), and
    cancels the call when the acks stop altogether (the gateway died); see
    ingest.c.
*/
#ifndef INGEST_H
#define INGEST_H

#include "common/dialects/sl_providers.h"
#include "common/service/sl_service.h"

typedef struct _ingest_t ingest_t;

typedef struct {
    const char *bind;                   //  inbox endpoint (jobs from gateways)
    const char *next;                   //  aggregator endpoints
    sl_providers_t *routes;                //  providers and routes (borrowed)
    long connect_timeout_ms;            //  TCP + TLS connect
    long first_byte_timeout_ms;         //  request sent -> first response byte
    long idle_timeout_ms;               //  no byte for this long ends the call
    size_t max_event;                   //  SSE line / event limit, bytes
    int max_retries;                    //  attempts after the first
    long retry_base_ms;                 //  first backoff, doubled each time
    long retry_max_ms;                  //  longest wait; a longer Retry-After is not waited for
    long stall_ms;                      //  no progress after a send this long: replay
    long gateway_dead_ms;               //  no ack this long: the gateway is gone
    size_t replay_log_max;              //  bytes of one stream's replay log
    size_t replay_log_total;            //  bytes of all replay logs
    size_t max_streams;                 //  streams at once; more are refused (503)
} ingest_config_t;

ingest_t *ingest_new (sl_service_t *service, const ingest_config_t *config);
void ingest_destroy (ingest_t **self_p);

#endif
