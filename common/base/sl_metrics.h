/*  sl_metrics.h - counters, gauges and histograms, rendered for Prometheus.

    Every process keeps one registry and serves it on GET /metrics. Metrics
    are updated from the reactor thread only, so a counter is a plain
    integer: incrementing one costs one add, cheap enough for hot paths.

    A metric is a name plus an optional label set written as Prometheus text,
    e.g. sl_metrics_counter (m, "sluice_verdicts_total", "action=\"block\"",
    "Verdicts by action"). The same name may be registered with several label
    sets; HELP and TYPE are printed once per name. Registering the same name
    and labels twice returns the same metric.
*/
#ifndef SL_METRICS_H
#define SL_METRICS_H

#include <stdint.h>

#include "common/base/sl_buf.h"

typedef struct _sl_metrics_t sl_metrics_t;

typedef struct {
    uint64_t value;
} sl_counter_t;

typedef struct {
    int64_t value;
} sl_gauge_t;

typedef struct _sl_histo_t sl_histo_t;

//  A gauge whose value is read when rendering.
typedef double (sl_gauge_fn) (void *arg);

sl_metrics_t *sl_metrics_new (void);
void sl_metrics_destroy (sl_metrics_t **self_p);

//  Returned metrics are owned by the registry and live as long as it.
sl_counter_t *sl_metrics_counter (sl_metrics_t *self, const char *name,
                                  const char *labels, const char *help);
sl_gauge_t *sl_metrics_gauge (sl_metrics_t *self, const char *name,
                              const char *labels, const char *help);
void sl_metrics_gauge_fn (sl_metrics_t *self, const char *name, const char *labels,
                          const char *help, sl_gauge_fn *fn, void *arg);
//  bounds: ascending upper bounds of the buckets (+Inf is added).
sl_histo_t *sl_metrics_histogram (sl_metrics_t *self, const char *name, const char *labels,
                                  const char *help, const double *bounds, int count);

static inline void
sl_counter_inc (sl_counter_t *c)
{
    c->value++;
}

static inline void
sl_counter_add (sl_counter_t *c, uint64_t n)
{
    c->value += n;
}

void sl_histo_observe (sl_histo_t *h, double value);
//  The value at quantile q (0..1) estimated from the buckets (upper bound).
double sl_histo_quantile (sl_histo_t *h, double q);

//  Append the Prometheus text exposition of every metric.
void sl_metrics_render (sl_metrics_t *self, sl_buf_t *out);

//  Bucket bounds in seconds for latencies from 10 µs to 10 s.
extern const double sl_metrics_latency_bounds [];
extern const int sl_metrics_latency_bounds_count;

#endif
