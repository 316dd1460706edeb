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
    socket, a parser and a delta log): a request beyond that is refused at
    once, before any upstream call, with an error sent straight back to its
    gateway (overloaded_error, 503; the gateway answers it in the client's
    dialect) and counted (sluice_streams_refused_total).

    It keeps what each stream sent downstream (its delta log) and re-sends
    it in a new epoch when the gateway's acks show the stream stalled (a
    stage died), and cancels the call when the acks stop altogether (the
    gateway died). All of that logic is the library sl_upcall
    (common/stages/sl_upcall.h); the service wires it to sockets, libcurl
    and timers (ingest.c).
*/
#ifndef INGEST_H
#define INGEST_H

#include "common/dialects/sl_providers.h"
#include "common/service/sl_service.h"
#include "common/stages/sl_upcall.h"

typedef struct _ingest_t ingest_t;

typedef struct {
    const char *bind;                   //  inbox endpoint (jobs from gateways)
    const char *next;                   //  aggregator endpoints
    sl_upcall_config_t upcall;          //  deadlines, retries, delta log bounds, max streams, routes
} ingest_config_t;

ingest_t *ingest_new (sl_service_t *service, const ingest_config_t *config);
void ingest_destroy (ingest_t **self_p);

#endif
