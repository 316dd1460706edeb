/*  hops.c - what a stack's processes hold (see hops.h). */
#include "tests/integration/hops.h"

#include <stdlib.h>
#include <time.h>

static long
s_now_ms (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

bool
hops_all_free (sluice_stack_t *s, int timeout_ms, const char **which, double *count)
{
    static const char *names [] = { "ingest", "aggregator", "judge", "emitter", "gateway" };
    long deadline = s_now_ms () + timeout_ms;
    for (;;) {
        bool all_free = true;
        for (int hop = 1; hop <= 5 && all_free; hop++) {
            double v = metric_value (atoi (s->metrics [hop]), "sluice_streams_active");
            if (v != 0) {
                all_free = false;
                *which = names [hop - 1];
                *count = v;
            }
        }
        if (all_free) {
            double v = metric_value (s->mock_port, "mock_streams_active");
            if (v != 0) {
                all_free = false;
                *which = "mock";
                *count = v;
            }
        }
        if (all_free)
            return true;
        if (s_now_ms () >= deadline)
            return false;
        struct timespec pause = { 0, 20 * 1000000L };
        nanosleep (&pause, NULL);
    }
}
