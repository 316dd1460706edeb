/*  sl_otlp.h - spans sent to an OpenTelemetry collector over OTLP/HTTP.

    Each process that makes spans keeps one exporter. It runs in the
    process's reactor (zloop timers, transfers through sl_curlm: no thread)
    and never blocks a stream: sl_otlp_submit only queues. The queue is
    bounded; a span that finds it full is dropped and counted. Spans go
    out in batches (at most batch_max, at most batch_delay_ms after the
    first waits), one transfer at a time, encoded as OTLP JSON or OTLP
    protobuf (ExportTraceServiceRequest, one ResourceSpans whose resource
    carries service.name, service.instance.id and service.version). A
    batch the collector refuses for good (HTTP 4xx other than 408/429)
    is dropped and counted; one that fails in transit or is answered
    408, 429, 5xx or garbage is sent again after exponential back-off
    (Retry-After honoured, within the bounds) up to max_attempts, then
    dropped and counted. Nothing is ever dropped silently.

    Configuration from the environment (sl_otlp_config_env):
      SLUICE_OTLP_ENDPOINT   the collector: a base URL (".../v1/traces" is
                             appended) or the full traces URL; unset or
                             empty: no exporter, spans are not made
      SLUICE_OTLP_HEADERS    "name=value,name=value" sent with every
                             export (authorization), values URL-decoded
      SLUICE_OTLP_PROTOCOL   "http/protobuf" (default) or "http/json"
      SLUICE_OTLP_TIMEOUT_MS one export's bound (default 10000)
    A value that cannot be used is an error at start, never ignored.

    Metrics (registered on the process's registry):
      sluice_otlp_spans_exported_total       spans the collector accepted
      sluice_otlp_spans_dropped_total{reason="queue_full"|"rejected"|"retries_exhausted"|"shutdown"}
      sluice_otlp_export_retries_total       batches sent again
      sluice_otlp_queue_spans                spans waiting
*/
#ifndef SL_OTLP_H
#define SL_OTLP_H

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/base/sl_metrics.h"
#include "common/otel/sl_span.h"

typedef enum {
    SL_OTLP_PROTOBUF = 0,
    SL_OTLP_JSON
} sl_otlp_protocol_t;

typedef struct {
    char *endpoint;                     //  the traces URL; NULL: tracing off
    char *headers;                      //  "name=value,..." or NULL
    sl_otlp_protocol_t protocol;
    const char *service_name;           //  "sluice-emitter"
    const char *instance;               //  service.instance.id
    size_t queue_max;                   //  spans waiting at most (default 4096)
    size_t batch_max;                   //  spans per export at most (default 512)
    int batch_delay_ms;                 //  a waiting span goes out within this (default 1000)
    int timeout_ms;                     //  one export's bound (default 10000)
    int max_attempts;                   //  sends of one batch at most (default 5)
    int backoff_min_ms;                 //  first wait before sending again (default 500)
    int backoff_max_ms;                 //  longest wait (default 30000)
} sl_otlp_config_t;

typedef struct _sl_otlp_t sl_otlp_t;

#define SL_OTLP_FLUSH_MS 2000           //  what sl_otlp_destroy waits for at most

typedef struct {
    uint64_t exported;
    uint64_t dropped_queue_full;
    uint64_t dropped_rejected;
    uint64_t dropped_retries;
    uint64_t retries;
    size_t queued;
} sl_otlp_stats_t;

//  Defaults, then the environment. 0 ok (endpoint NULL when tracing is
//  off), -1 with *error (the caller's to free) on a value that cannot be
//  used. Free the strings with sl_otlp_config_free.
int sl_otlp_config_env (sl_otlp_config_t *cfg, const char *service_name, const char *instance, char **error);
void sl_otlp_config_free (sl_otlp_config_t *cfg);
//  NULL when cfg->endpoint is NULL (tracing off) or curl refuses it. The
//  loop, metrics and cfg's strings are borrowed and outlive the exporter.
sl_otlp_t *sl_otlp_new (zloop_t *loop, const sl_otlp_config_t *cfg, sl_metrics_t *metrics);
//  Sends what waits within a short bound (SL_OTLP_FLUSH_MS), then drops
//  (counted, reason shutdown) what is left.
void sl_otlp_destroy (sl_otlp_t **self_p);
//  Takes the span (*span_p becomes NULL), ended or not (an unended span
//  ends now). Never blocks.
void sl_otlp_submit (sl_otlp_t *self, sl_span_t **span_p);
void sl_otlp_stats (sl_otlp_t *self, sl_otlp_stats_t *stats);

#endif
