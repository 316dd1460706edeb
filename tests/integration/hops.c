/*  hops.c - what a stack's processes hold (see hops.h). */
#include "tests/integration/hops.h"

#include <stdlib.h>
#include <time.h>

bool
hops_all_free (sluice_stack_t *s, int timeout_ms, const char **which, double *count)
{
    static const char *names [] = { "ingest", "aggregator", "judge", "emitter", "gateway" };
    long deadline = zclock_mono () + timeout_ms;
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
        if (zclock_mono () >= deadline)
            return false;
        struct timespec pause = { 0, 20 * 1000000L };
        nanosleep (&pause, NULL);
    }
}
