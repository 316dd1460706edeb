/*  ingest.h - the ingest service: request jobs in, upstream calls, deltas out.

    For every request job from a gateway it starts the upstream HTTP call
    (libcurl multi, in the reactor), parses the server-sent events as they
    arrive, decodes them with the provider's decoder and sends the deltas
    (after a START carrying the request's metadata) to the aggregator the
    stream is pinned to. A cancel from the gateway aborts the call at once.
*/
#ifndef INGEST_H
#define INGEST_H

#include "../../common/sl_service.h"

typedef struct _ingest_t ingest_t;

typedef struct {
    const char *bind;                   //  inbox endpoint (jobs from gateways)
    const char *next;                   //  aggregator endpoints
    const char *openai_base_url;        //  e.g. https://api.openai.com/v1
    const char *openai_key;             //  NULL or "" to forward the client's
    long connect_timeout_ms;
    long idle_timeout_s;                //  no byte for this long ends the call
    size_t max_event;                   //  SSE line / event limit, bytes
} ingest_config_t;

ingest_t *ingest_new (sl_service_t *service, const ingest_config_t *config);
void ingest_destroy (ingest_t **self_p);

#endif
