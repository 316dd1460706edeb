/*  Unit tests: common/base/sl_metrics. */
#include <criterion/criterion.h>
#include <math.h>

#include "common/base/sl_metrics.h"

static double
s_seven (void *arg)
{
    (void) arg;
    return 7;
}

Test (sl_metrics, renders_prometheus_text)
{
    sl_metrics_t *m = sl_metrics_new ();
    sl_counter_t *a = sl_metrics_counter (m, "x_total", "action=\"allow\"", "Verdicts");
    sl_counter_t *b = sl_metrics_counter (m, "x_total", "action=\"block\"", "Verdicts");
    sl_metrics_gauge_fn (m, "streams", NULL, "Streams", s_seven, NULL);
    cr_expect_eq (sl_metrics_counter (m, "x_total", "action=\"allow\"", NULL), a, "same metric twice");
    sl_counter_inc (a);
    sl_counter_add (b, 3);
    double bounds [] = { 0.1, 1 };
    sl_histo_t *h = sl_metrics_histogram (m, "lat_seconds", NULL, "Latency", bounds, 2);
    sl_histo_observe (h, 0.05);
    sl_histo_observe (h, 0.5);
    sl_histo_observe (h, 5);
    sl_buf_t out = { 0 };
    sl_metrics_render (m, &out);
    cr_expect_str_eq (sl_buf_cstr (&out),
        "# HELP x_total Verdicts\n# TYPE x_total counter\n"
        "x_total{action=\"allow\"} 1\nx_total{action=\"block\"} 3\n"
        "# HELP streams Streams\n# TYPE streams gauge\nstreams 7\n"
        "# HELP lat_seconds Latency\n# TYPE lat_seconds histogram\n"
        "lat_seconds_bucket{le=\"0.1\"} 1\nlat_seconds_bucket{le=\"1\"} 2\nlat_seconds_bucket{le=\"+Inf\"} 3\n"
        "lat_seconds_sum 5.55\nlat_seconds_count 3\n");
    cr_expect_eq (sl_histo_quantile (h, 0.5), 1);
    cr_expect (isinf (sl_histo_quantile (h, 1)));
    sl_buf_free (&out);
    sl_metrics_destroy (&m);
}
