/*  bench_stats.c - samples and /proc readings (see bench_stats.h). */
#include "bench_stats.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../common/sl_alloc.h"

void
bench_samples_add (bench_samples_t *s, double value)
{
    if (s->count == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 1024;
        s->values = sl_xrealloc (s->values, s->cap * sizeof (double));
    }
    s->values [s->count++] = value;
}

static int
s_cmp (const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

double
bench_samples_quantile (bench_samples_t *s, double q)
{
    if (s->count == 0)
        return NAN;
    qsort (s->values, s->count, sizeof (double), s_cmp);
    size_t rank = (size_t) ceil (q * (double) s->count);
    if (rank == 0)
        rank = 1;
    return s->values [rank - 1];
}

void
bench_samples_free (bench_samples_t *s)
{
    free (s->values);
    memset (s, 0, sizeof *s);
}

int64_t
bench_cpu_us (pid_t pid)
{
    //  The scheduler's own count, in nanoseconds, summed over the
    //  process's threads (ZeroMQ's I/O thread included): /proc/<pid>/stat
    //  counts in clock ticks (10 ms), too coarse for a run of 0.1 s.
    char path [64];
    snprintf (path, sizeof path, "/proc/%d/task", (int) pid);
    DIR *dir = opendir (path);
    if (!dir)
        return -1;
    int64_t total = 0;
    struct dirent *e;
    while ((e = readdir (dir))) {
        if (e->d_name [0] == '.')
            continue;
        char stat [320];
        snprintf (stat, sizeof stat, "/proc/%d/task/%s/schedstat", (int) pid, e->d_name);
        FILE *f = fopen (stat, "r");
        if (!f)
            continue;
        unsigned long long ns = 0;
        if (fscanf (f, "%llu", &ns) == 1)
            total += (int64_t) ns;
        fclose (f);
    }
    closedir (dir);
    return total / 1000;
}

long
bench_rss_kib (pid_t pid)
{
    char path [64];
    snprintf (path, sizeof path, "/proc/%d/status", (int) pid);
    FILE *f = fopen (path, "r");
    if (!f)
        return -1;
    char line [256];
    long rss = -1;
    while (fgets (line, sizeof line, f))
        if (strncmp (line, "VmRSS:", 6) == 0) {
            rss = strtol (line + 6, NULL, 10);
            break;
        }
    fclose (f);
    return rss;
}
