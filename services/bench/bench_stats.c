/*  bench_stats.c - samples and /proc readings (see bench_stats.h). */
#include "services/bench/bench_stats.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/base/sl_alloc.h"

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

//  The first number after "<key>" in a /proc file of key/value lines, -1
//  if absent or unreadable.
static long
s_proc_value (const char *path, const char *key)
{
    FILE *f = fopen (path, "r");
    if (!f)
        return -1;
    char line [256];
    size_t n = strlen (key);
    long value = -1;
    while (fgets (line, sizeof line, f))
        if (strncmp (line, key, n) == 0) {
            value = strtol (line + n, NULL, 10);
            break;
        }
    fclose (f);
    return value;
}

//  A count read from one of a process's threads, given the path of its
//  task directory; negative when unreadable.
typedef int64_t (s_task_fn) (const char *task);

//  The sum of fn over every thread of the process (ZeroMQ's I/O thread
//  included), -1 when the process is gone.
static int64_t
s_sum_tasks (pid_t pid, s_task_fn *fn)
{
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
        char task [320];
        snprintf (task, sizeof task, "/proc/%d/task/%s", (int) pid, e->d_name);
        int64_t v = fn (task);
        if (v > 0)
            total += v;
    }
    closedir (dir);
    return total;
}

//  The scheduler's own count of the thread's CPU time, in nanoseconds.
static int64_t
s_task_cpu_ns (const char *task)
{
    char stat [360];
    snprintf (stat, sizeof stat, "%s/schedstat", task);
    FILE *f = fopen (stat, "r");
    if (!f)
        return -1;
    unsigned long long ns = 0;
    int64_t v = fscanf (f, "%llu", &ns) == 1 ? (int64_t) ns : -1;
    fclose (f);
    return v;
}

static int64_t
s_task_ctxsw (const char *task)
{
    char status [360];
    snprintf (status, sizeof status, "%s/status", task);
    long v = s_proc_value (status, "voluntary_ctxt_switches:");
    long nv = s_proc_value (status, "nonvoluntary_ctxt_switches:");
    return (v > 0 ? v : 0) + (nv > 0 ? nv : 0);
}

int64_t
bench_cpu_us (pid_t pid)
{
    //  /proc/<pid>/stat counts in clock ticks (10 ms), too coarse for a
    //  run of 0.1 s.
    int64_t ns = s_sum_tasks (pid, s_task_cpu_ns);
    return ns < 0 ? -1 : ns / 1000;
}

long
bench_rss_kib (pid_t pid)
{
    char path [64];
    snprintf (path, sizeof path, "/proc/%d/status", (int) pid);
    return s_proc_value (path, "VmRSS:");
}

int64_t
bench_ctxsw (pid_t pid)
{
    //  /proc/<pid>/status counts the main thread only: the I/O threads'
    //  wake-ups are in their own task entries.
    return s_sum_tasks (pid, s_task_ctxsw);
}

long
bench_pss_kib (pid_t pid)
{
    char path [64];
    snprintf (path, sizeof path, "/proc/%d/smaps_rollup", (int) pid);
    return s_proc_value (path, "Pss:");
}
