/*  sl_metrics.c - the metrics registry (see sl_metrics.h). */
#include "common/base/sl_metrics.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

typedef enum { M_COUNTER, M_GAUGE, M_GAUGE_FN, M_HISTO } s_mtype_t;

struct _sl_histo_t {
    double *bounds;
    int count;                          //  bounds, without +Inf
    uint64_t *buckets;                  //  count + 1, not cumulative
    uint64_t total;
    double sum;
};

typedef struct _s_metric_t {
    char *name;
    char *labels;                       //  "" when none
    char *help;
    s_mtype_t type;
    union {
        sl_counter_t counter;
        sl_gauge_t gauge;
        sl_histo_t histo;
        struct {
            sl_gauge_fn *fn;
            void *arg;
        } gauge_fn;
    } u;
    struct _s_metric_t *next;
} s_metric_t;

struct _sl_metrics_t {
    s_metric_t *head;
    s_metric_t *tail;
};

const double sl_metrics_latency_bounds [] = {
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
    0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
};
const int sl_metrics_latency_bounds_count =
    sizeof sl_metrics_latency_bounds / sizeof sl_metrics_latency_bounds [0];

sl_metrics_t *
sl_metrics_new (void)
{
    return sl_xcalloc (1, sizeof (sl_metrics_t));
}

void
sl_metrics_destroy (sl_metrics_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    s_metric_t *m = (*self_p)->head;
    while (m) {
        s_metric_t *next = m->next;
        if (m->type == M_HISTO) {
            free (m->u.histo.bounds);
            free (m->u.histo.buckets);
        }
        free (m->name);
        free (m->labels);
        free (m->help);
        free (m);
        m = next;
    }
    free (*self_p);
    *self_p = NULL;
}

static s_metric_t *
s_register (sl_metrics_t *self, const char *name, const char *labels,
            const char *help, s_mtype_t type, bool *existed)
{
    labels = labels ? labels : "";
    for (s_metric_t *m = self->head; m; m = m->next)
        if (strcmp (m->name, name) == 0 && strcmp (m->labels, labels) == 0) {
            *existed = true;
            return m;
        }
    *existed = false;
    s_metric_t *m = sl_xcalloc (1, sizeof *m);
    m->name = sl_xstrdup (name);
    m->labels = sl_xstrdup (labels);
    m->help = sl_xstrdup (help ? help : name);
    m->type = type;
    //  Keep metrics of one name together so HELP/TYPE print once.
    s_metric_t *after = NULL;
    for (s_metric_t *it = self->head; it; it = it->next)
        if (strcmp (it->name, name) == 0)
            after = it;
    if (after) {
        m->next = after->next;
        after->next = m;
        if (self->tail == after)
            self->tail = m;
    }
    else {
        if (self->tail)
            self->tail->next = m;
        else
            self->head = m;
        self->tail = m;
    }
    return m;
}

sl_counter_t *
sl_metrics_counter (sl_metrics_t *self, const char *name, const char *labels, const char *help)
{
    bool existed;
    return &s_register (self, name, labels, help, M_COUNTER, &existed)->u.counter;
}

sl_gauge_t *
sl_metrics_gauge (sl_metrics_t *self, const char *name, const char *labels, const char *help)
{
    bool existed;
    return &s_register (self, name, labels, help, M_GAUGE, &existed)->u.gauge;
}

void
sl_metrics_gauge_fn (sl_metrics_t *self, const char *name, const char *labels,
                     const char *help, sl_gauge_fn *fn, void *arg)
{
    bool existed;
    s_metric_t *m = s_register (self, name, labels, help, M_GAUGE_FN, &existed);
    m->u.gauge_fn.fn = fn;
    m->u.gauge_fn.arg = arg;
}

sl_histo_t *
sl_metrics_histogram (sl_metrics_t *self, const char *name, const char *labels,
                      const char *help, const double *bounds, int count)
{
    bool existed;
    s_metric_t *m = s_register (self, name, labels, help, M_HISTO, &existed);
    if (!existed) {
        m->u.histo.bounds = sl_xmemdup (bounds, (size_t) count * sizeof (double));
        m->u.histo.count = count;
        m->u.histo.buckets = sl_xcalloc ((size_t) count + 1, sizeof (uint64_t));
    }
    return &m->u.histo;
}

void
sl_histo_observe (sl_histo_t *h, double value)
{
    //  Few buckets: a linear scan beats a binary search here.
    int i = 0;
    while (i < h->count && value > h->bounds [i])
        i++;
    h->buckets [i]++;
    h->total++;
    h->sum += value;
}

double
sl_histo_quantile (sl_histo_t *h, double q)
{
    if (h->total == 0)
        return NAN;
    uint64_t rank = (uint64_t) ceil (q * (double) h->total);
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (int i = 0; i <= h->count; i++) {
        seen += h->buckets [i];
        if (seen >= rank)
            return i < h->count ? h->bounds [i] : INFINITY;
    }
    return INFINITY;
}

static void
s_series (sl_buf_t *out, const char *name, const char *suffix, const char *labels,
          const char *extra)
{
    sl_buf_puts (out, name);
    sl_buf_puts (out, suffix);
    bool any = labels [0] || (extra && extra [0]);
    if (any) {
        sl_buf_putc (out, '{');
        sl_buf_puts (out, labels);
        if (labels [0] && extra && extra [0])
            sl_buf_putc (out, ',');
        if (extra)
            sl_buf_puts (out, extra);
        sl_buf_putc (out, '}');
    }
    sl_buf_putc (out, ' ');
}

void
sl_metrics_render (sl_metrics_t *self, sl_buf_t *out)
{
    static const char *type_names [] = { "counter", "gauge", "gauge", "histogram" };
    const char *last_name = "";
    for (s_metric_t *m = self->head; m; m = m->next) {
        if (strcmp (m->name, last_name) != 0) {
            sl_buf_printf (out, "# HELP %s %s\n# TYPE %s %s\n",
                           m->name, m->help, m->name, type_names [m->type]);
            last_name = m->name;
        }
        switch (m->type) {
            case M_COUNTER:
                s_series (out, m->name, "", m->labels, NULL);
                sl_buf_put_u64 (out, m->u.counter.value);
                sl_buf_putc (out, '\n');
                break;
            case M_GAUGE:
                s_series (out, m->name, "", m->labels, NULL);
                sl_buf_put_i64 (out, m->u.gauge.value);
                sl_buf_putc (out, '\n');
                break;
            case M_GAUGE_FN:
                s_series (out, m->name, "", m->labels, NULL);
                sl_buf_printf (out, "%.17g\n", m->u.gauge_fn.fn (m->u.gauge_fn.arg));
                break;
            case M_HISTO: {
                sl_histo_t *h = &m->u.histo;
                uint64_t cumulative = 0;
                char le [48];
                for (int i = 0; i <= h->count; i++) {
                    cumulative += h->buckets [i];
                    if (i < h->count)
                        snprintf (le, sizeof le, "le=\"%g\"", h->bounds [i]);
                    else
                        snprintf (le, sizeof le, "le=\"+Inf\"");
                    s_series (out, m->name, "_bucket", m->labels, le);
                    sl_buf_put_u64 (out, cumulative);
                    sl_buf_putc (out, '\n');
                }
                s_series (out, m->name, "_sum", m->labels, NULL);
                sl_buf_printf (out, "%.9g\n", h->sum);
                s_series (out, m->name, "_count", m->labels, NULL);
                sl_buf_put_u64 (out, h->total);
                sl_buf_putc (out, '\n');
                break;
            }
        }
    }
}
