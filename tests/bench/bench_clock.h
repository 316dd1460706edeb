/*  bench_clock.h - what a benchmark measures with: a monotonic clock in
    seconds, and the p50 and p99 of a set of samples (sorted in place).
    Header-only. */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <stdlib.h>
#include <time.h>

static inline double
bench_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline int
bench_cmp (const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

//  Sort samples; their p50 and p99 into *p50 and *p99.
static inline void
bench_percentiles (double *samples, int n, double *p50, double *p99)
{
    qsort (samples, (size_t) n, sizeof *samples, bench_cmp);
    *p50 = samples [n / 2];
    *p99 = samples [n * 99 / 100];
}

#endif
