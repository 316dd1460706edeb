/*  bench_stats.h - samples, percentiles and process readings for sluice-bench. */
#ifndef BENCH_STATS_H
#define BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct {
    double *values;
    size_t count;
    size_t cap;
} bench_samples_t;

void bench_samples_add (bench_samples_t *s, double value);
//  The value at quantile q (0..1) by nearest rank; NaN when empty.
double bench_samples_quantile (bench_samples_t *s, double q);
void bench_samples_free (bench_samples_t *s);

//  CPU time a process (all its threads) has used, µs, from the
//  scheduler's nanosecond counts; -1 if unreadable.
int64_t bench_cpu_us (pid_t pid);
//  Resident set size of a process, KiB; -1 if unreadable.
long bench_rss_kib (pid_t pid);

#endif
