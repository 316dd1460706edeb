/*  sluice-bench - the load generator: sluice against the bare mock.

    Drives one or more running sluice stacks and, as the baseline, the mock
    upstream directly, with the same scenarios in one run; prints a table
    and writes the figures as JSON.

      sluice-bench --mock http://127.0.0.1:9090/v1 \
                   --stack 'rule=http://127.0.0.1:8080/v1@ingest:123,aggregator:124,...' \
                   --stack2 'none=http://127.0.0.1:8081/v1@...' --out build/bench.json

    Scenarios (all requests streaming, OpenAI chat dialect):
    - time to first byte: sequential mock-text requests (mock without delay);
    - per-chunk latency: mock-paced streams (one chunk per 1 ms, each chunk
      stamped by the mock with its send time) at 1, 100 and 1,000
      concurrent streams; latency = receipt - stamp;
    - throughput: one mock-bench stream of 20,000 chunks as fast as
      possible, then 100 concurrent ones; every mock-bench stream ends with
      two tool calls whose arguments arrive in fragments;
    - CPU per chunk summed over the stack's processes in the one-stream
      run and in the 1,000 paced streams run, RSS of each process at idle
      and its peak under 1,000 streams.
    "Added" figures are sluice minus direct at the same percentile.

    A stack named "plain" is the same stack on a plaintext bus (--bus-auth
    off): when there is one, the cost of CURVE is printed, the CPU per chunk
    of the first stack against plain's.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "../../common/sl_buf.h"
#include "../../common/sl_opts.h"
#include "bench_client.h"
#include "bench_stats.h"

#define MAX_PROCS 8
#define PACED_CHUNKS 200                //  chunks per paced stream (200 ms each)
#define TPUT_CHUNKS 20000               //  chunks per throughput stream
#define TTFB_REQUESTS 300
#define RUN_TIMEOUT_MS 120000

typedef struct {
    char name [16];
    char base [256];                    //  ".../v1"
    int nprocs;
    char proc_names [MAX_PROCS][24];
    pid_t pids [MAX_PROCS];
    //  Figures
    double ttfb_p50, ttfb_p99;          //  ms
    double chunk_p50 [3], chunk_p99 [3];//  ms, at 1 / 100 / 1000 streams
    double tput_one, tput_100;          //  chunks/s
    double cpu_us_per_chunk;
    double cpu_us_per_chunk_1000;       //  in the 1,000 paced streams run
    long rss_idle [MAX_PROCS];          //  KiB
    long rss_peak [MAX_PROCS];          //  KiB, under 1000 streams
    int ingest_metrics;                 //  port of the ingest's /metrics, 0: unknown
    double log_peak;                    //  replay log bytes, peak under 1000 streams
    int failures;
} s_target_t;

static const int s_concurrency [3] = { 1, 100, 1000 };
static bool s_quick;
static const char *s_only = "";         //  comma-separated scenarios, "" for all

//  Is a scenario (ttfb, paced1, paced100, paced1000, tput1, tput100) to run?
static bool
s_wanted (const char *name)
{
    if (!*s_only)
        return true;
    size_t n = strlen (name);
    for (const char *p = s_only; *p;) {
        const char *end = strchr (p, ',');
        size_t len = end ? (size_t) (end - p) : strlen (p);
        if (len == n && strncmp (p, name, n) == 0)
            return true;
        p += len + (end != NULL);
    }
    return false;
}

static int
s_parse_stack (const char *spec, s_target_t *t)
{
    memset (t, 0, sizeof *t);
    const char *eq = strchr (spec, '=');
    const char *at = strchr (spec, '@');
    if (!eq || !at || at < eq)
        return -1;
    snprintf (t->name, sizeof t->name, "%.*s", (int) (eq - spec), spec);
    snprintf (t->base, sizeof t->base, "%.*s", (int) (at - eq - 1), eq + 1);
    char *list = strdup (at + 1);
    char *hash = strchr (list, '#');    //  "...#<ingest metrics port>"
    if (hash) {
        *hash = 0;
        t->ingest_metrics = atoi (hash + 1);
    }
    char *save = NULL;
    for (char *item = strtok_r (list, ",", &save); item && t->nprocs < MAX_PROCS;
         item = strtok_r (NULL, ",", &save)) {
        char *colon = strchr (item, ':');
        if (!colon) {
            free (list);
            return -1;
        }
        *colon = 0;
        snprintf (t->proc_names [t->nprocs], sizeof t->proc_names [0], "%s", item);
        t->pids [t->nprocs++] = (pid_t) atoi (colon + 1);
    }
    free (list);
    return 0;
}

static void
s_body (sl_buf_t *out, const char *model, int max_tokens)
{
    sl_buf_reset (out);
    sl_buf_printf (out, "{\"model\":\"%s\",\"stream\":true,", model);
    if (max_tokens)
        sl_buf_printf (out, "\"max_tokens\":%d,", max_tokens);
    sl_buf_puts (out, "\"messages\":[{\"role\":\"user\",\"content\":\"bench\"}]}");
}

static size_t
s_collect (char *ptr, size_t size, size_t nmemb, void *arg)
{
    sl_buf_append ((sl_buf_t *) arg, ptr, size * nmemb);
    return size * nmemb;
}

//  One value from a Prometheus page; NAN when absent.
static double
s_metric (int port, const char *name)
{
    char url [96];
    snprintf (url, sizeof url, "http://127.0.0.1:%d/metrics", port);
    sl_buf_t page = { 0 };
    CURL *easy = curl_easy_init ();
    curl_easy_setopt (easy, CURLOPT_URL, url);
    curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_collect);
    curl_easy_setopt (easy, CURLOPT_WRITEDATA, &page);
    curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, 1000L);
    double value = NAN;
    if (curl_easy_perform (easy) == CURLE_OK) {
        const char *text = sl_buf_cstr (&page);
        size_t n = strlen (name);
        for (const char *line = text; *line; ) {
            if (strncmp (line, name, n) == 0 && line [n] == ' ') {
                value = atof (line + n + 1);
                break;
            }
            const char *nl = strchr (line, '\n');
            if (!nl)
                break;
            line = nl + 1;
        }
    }
    curl_easy_cleanup (easy);
    sl_buf_free (&page);
    return value;
}

//  Peak RSS (and replay log) sampling while a run is going.
static void
s_sample_rss (void *arg)
{
    s_target_t *t = arg;
    for (int i = 0; i < t->nprocs; i++) {
        long rss = bench_rss_kib (t->pids [i]);
        if (rss > t->rss_peak [i])
            t->rss_peak [i] = rss;
    }
    if (t->ingest_metrics) {
        double bytes = s_metric (t->ingest_metrics, "sluice_replay_log_bytes");
        if (!isnan (bytes) && bytes > t->log_peak)
            t->log_peak = bytes;
    }
}

//  CPU per chunk over the stack's processes in the last s_run, NAN if unknown.
static double s_last_cpu = NAN;

static int
s_run (s_target_t *t, const char *model, int max_tokens, int concurrency, int total,
       bench_result_t *res, bool sample_rss)
{
    sl_buf_t url = { 0 }, body = { 0 };
    sl_buf_printf (&url, "%s/chat/completions", t->base);
    s_body (&body, model, max_tokens);
    bench_run_t run = {
        .url = sl_buf_cstr (&url), .body = sl_buf_cstr (&body),
        .concurrency = concurrency, .total = total, .timeout_ms = RUN_TIMEOUT_MS,
        .tick = sample_rss ? s_sample_rss : NULL, .tick_arg = t
    };
    int64_t cpu0 [MAX_PROCS];
    for (int i = 0; i < t->nprocs; i++)
        cpu0 [i] = bench_cpu_us (t->pids [i]);
    int rc = bench_run (&run, res);
    s_last_cpu = NAN;
    if (t->nprocs && res->events) {
        //  Where the CPU went, per process (a diagnostic line).
        double sum = 0;
        char line [512];
        size_t at = 0;
        for (int i = 0; i < t->nprocs; i++) {
            double us = (double) (bench_cpu_us (t->pids [i]) - cpu0 [i]) / (double) res->events;
            sum += us;
            at += (size_t) snprintf (line + at, at < sizeof line ? sizeof line - at : 0, " %s %.2f",
                                     t->proc_names [i], us);
        }
        fprintf (stderr, "sluice-bench: %s %s x%d: %.2f us of CPU per chunk over the stack (%s)\n",
                 t->name, model, concurrency, sum, line + 1);
        s_last_cpu = sum;
    }
    t->failures += res->failed;
    if (res->failed)
        fprintf (stderr, "sluice-bench: %s %s x%d: %d of %d streams failed\n",
                 t->name, model, concurrency, res->failed, total);
    sl_buf_free (&url);
    sl_buf_free (&body);
    return rc;
}

static int64_t
s_cpu_total (s_target_t *t)
{
    int64_t sum = 0;
    for (int i = 0; i < t->nprocs; i++) {
        int64_t c = bench_cpu_us (t->pids [i]);
        if (c > 0)
            sum += c;
    }
    return sum;
}

static void
s_measure (s_target_t *t)
{
    bench_result_t res;
    for (int i = 0; i < t->nprocs; i++)
        t->rss_idle [i] = bench_rss_kib (t->pids [i]);

    //  Time to first byte.
    if (s_wanted ("ttfb")) {
        s_run (t, "mock-text", 0, 1, s_quick ? 30 : TTFB_REQUESTS, &res, false);
        t->ttfb_p50 = bench_samples_quantile (&res.ttfb_us, 0.5) / 1000;
        t->ttfb_p99 = bench_samples_quantile (&res.ttfb_us, 0.99) / 1000;
        bench_result_free (&res);
    }

    //  Per-chunk latency with paced streams.
    for (int c = 0; c < 3; c++) {
        int streams = s_concurrency [c];
        char name [32];
        snprintf (name, sizeof name, "paced%d", streams);
        if (!s_wanted (name))
            continue;
        int total = streams == 1 ? (s_quick ? 2 : 10) : streams;
        s_run (t, "mock-paced", s_quick ? 50 : PACED_CHUNKS, streams, total, &res, streams == 1000);
        if (streams == 1000)
            t->cpu_us_per_chunk_1000 = s_last_cpu;
        t->chunk_p50 [c] = bench_samples_quantile (&res.chunk_us, 0.5) / 1000;
        t->chunk_p99 [c] = bench_samples_quantile (&res.chunk_us, 0.99) / 1000;
        bench_result_free (&res);
    }

    //  Throughput, one stream, with CPU over the stack's processes.
    if (s_wanted ("tput1")) {
        int64_t cpu0 = s_cpu_total (t);
        s_run (t, "mock-bench", s_quick ? 2000 : TPUT_CHUNKS, 1, 1, &res, false);
        int64_t cpu1 = s_cpu_total (t);
        t->tput_one = res.elapsed_us ? (double) res.events * 1e6 / (double) res.elapsed_us : 0;
        t->cpu_us_per_chunk = t->nprocs && res.events ? (double) (cpu1 - cpu0) / (double) res.events : NAN;
        bench_result_free (&res);
    }

    //  Throughput, 100 streams.
    if (s_wanted ("tput100")) {
        s_run (t, "mock-bench", s_quick ? 2000 : TPUT_CHUNKS, 100, 100, &res, false);
        t->tput_100 = res.elapsed_us ? (double) res.events * 1e6 / (double) res.elapsed_us : 0;
        bench_result_free (&res);
    }
}

static void
s_json_number (sl_buf_t *out, const char *key, double v, bool *first)
{
    sl_buf_printf (out, "%s\n  \"%s\": ", *first ? "" : ",", key);
    *first = false;
    if (isnan (v) || isinf (v))
        sl_buf_puts (out, "null");
    else
        sl_buf_printf (out, "%.4f", v);
}

static long
s_sum (const long *v, int n)
{
    long s = 0;
    for (int i = 0; i < n; i++)
        s += v [i] > 0 ? v [i] : 0;
    return s;
}

static double
s_per_stream_max (const s_target_t *t)
{
    double worst = 0;
    for (int i = 0; i < t->nprocs; i++) {
        double per = (double) (t->rss_peak [i] - t->rss_idle [i]) / 1000.0;
        if (per > worst)
            worst = per;
    }
    return worst;
}

//  One block of keys per stack; the first stack's also go at the top level
//  under the names the issue of record asks for.
static void
s_json_stack (sl_buf_t *out, const s_target_t *t, const s_target_t *direct, const char *prefix, bool *first)
{
    char key [96];
#define K(name) (snprintf (key, sizeof key, "%s%s", prefix, name), key)
    s_json_number (out, K ("ttfb_added_ms_p50"), t->ttfb_p50 - direct->ttfb_p50, first);
    s_json_number (out, K ("ttfb_added_ms_p99"), t->ttfb_p99 - direct->ttfb_p99, first);
    s_json_number (out, K ("chunk_added_ms_p50_s1"), t->chunk_p50 [0] - direct->chunk_p50 [0], first);
    s_json_number (out, K ("chunk_added_ms_p99_s1"), t->chunk_p99 [0] - direct->chunk_p99 [0], first);
    s_json_number (out, K ("chunk_added_ms_p50_s100"), t->chunk_p50 [1] - direct->chunk_p50 [1], first);
    s_json_number (out, K ("chunk_added_ms_p99_s100"), t->chunk_p99 [1] - direct->chunk_p99 [1], first);
    s_json_number (out, K ("chunk_added_ms_p50_s1000"), t->chunk_p50 [2] - direct->chunk_p50 [2], first);
    s_json_number (out, K ("chunk_added_ms_p99_s1000"), t->chunk_p99 [2] - direct->chunk_p99 [2], first);
    s_json_number (out, K ("chunks_per_s_one_stream"), t->tput_one, first);
    s_json_number (out, K ("chunks_per_s_100_streams"), t->tput_100, first);
    s_json_number (out, K ("cpu_us_per_chunk"), t->cpu_us_per_chunk, first);
    s_json_number (out, K ("cpu_us_per_chunk_1000_streams"), t->cpu_us_per_chunk_1000, first);
    s_json_number (out, K ("rss_idle_mb_total"), (double) s_sum (t->rss_idle, t->nprocs) / 1024, first);
    s_json_number (out, K ("rss_per_stream_kib_max"), s_per_stream_max (t), first);
    s_json_number (out, K ("failed_streams"), t->failures, first);
    if (t->ingest_metrics)
        s_json_number (out, K ("replay_log_mb_1000_streams"), t->log_peak / 1048576.0, first);
    for (int i = 0; i < t->nprocs; i++) {
        char name [64];
        snprintf (name, sizeof name, "rss_idle_kib_%s", t->proc_names [i]);
        s_json_number (out, K (name), (double) t->rss_idle [i], first);
        snprintf (name, sizeof name, "rss_1000_streams_kib_%s", t->proc_names [i]);
        s_json_number (out, K (name), (double) t->rss_peak [i], first);
    }
#undef K
}

static void
s_row (const char *label, double direct, const s_target_t *t, int nt, double (*get) (const s_target_t *))
{
    printf ("%-44s %11.3f", label, direct);
    for (int i = 0; i < nt; i++)
        printf (" %11.3f", get (&t [i]));
    printf ("\n");
}

#define GETTER(fn, expr) static double fn (const s_target_t *t) { return (expr); }
GETTER (g_ttfb50, t->ttfb_p50)
GETTER (g_ttfb99, t->ttfb_p99)
GETTER (g_c50_1, t->chunk_p50 [0])
GETTER (g_c99_1, t->chunk_p99 [0])
GETTER (g_c50_100, t->chunk_p50 [1])
GETTER (g_c99_100, t->chunk_p99 [1])
GETTER (g_c50_1000, t->chunk_p50 [2])
GETTER (g_c99_1000, t->chunk_p99 [2])
GETTER (g_tput1, t->tput_one)
GETTER (g_tput100, t->tput_100)
GETTER (g_cpu, t->cpu_us_per_chunk)
GETTER (g_cpu1000, t->cpu_us_per_chunk_1000)
GETTER (g_rss_idle, (double) s_sum (t->rss_idle, t->nprocs) / 1024)
GETTER (g_rss_stream, s_per_stream_max (t))

int
main (int argc, char **argv)
{
    const char *mock = "http://127.0.0.1:9090/v1";
    const char *stack1 = "";
    const char *stack2 = "";
    const char *stack3 = "";
    const char *out_path = "build/bench.json";
    const char *quick = "no";
    sl_opt_t opts [] = {
        { "mock", "SLUICE_BENCH_MOCK", &mock, "base URL of the mock (the direct baseline)" },
        { "stack", "SLUICE_BENCH_STACK", &stack1,
          "name=base-url@proc:pid,...[#ingest-metrics-port] of a running stack" },
        { "stack2", "SLUICE_BENCH_STACK2", &stack2, "a second stack, same form (optional)" },
        { "stack3", "SLUICE_BENCH_STACK3", &stack3, "a third stack, same form (optional; name it plain "
          "for a plaintext bus: the cost of CURVE is printed)" },
        { "out", "SLUICE_BENCH_OUT", &out_path, "where to write the JSON figures" },
        { "quick", "SLUICE_BENCH_QUICK", &quick, "yes: small counts (a smoke run)" },
        { "only", "SLUICE_BENCH_ONLY", &s_only,
          "run only these scenarios (comma-separated: ttfb, paced1, paced100, paced1000, tput1, tput100)" },
        SL_OPT_END
    };
    int rc = sl_opts_parse ("bench", opts, argc, argv);
    if (rc)
        return rc > 0 ? 0 : 2;
    s_quick = strcmp (quick, "yes") == 0;
    s_target_t targets [3];
    int nt = 0;
    const char *specs [3] = { stack1, stack2, stack3 };
    for (int i = 0; i < 3; i++)
        if (*specs [i]) {
            if (s_parse_stack (specs [i], &targets [nt])) {
                fprintf (stderr, "sluice-bench: bad --stack value: %s\n", specs [i]);
                return 2;
            }
            nt++;
        }
    if (nt == 0) {
        fprintf (stderr, "sluice-bench: give at least one --stack (see --help)\n");
        return 2;
    }
    s_target_t direct = { .name = "direct" };
    snprintf (direct.base, sizeof direct.base, "%s", mock);

    fprintf (stderr, "sluice-bench: measuring the mock directly\n");
    s_measure (&direct);
    for (int i = 0; i < nt; i++) {
        fprintf (stderr, "sluice-bench: measuring stack '%s'\n", targets [i].name);
        s_measure (&targets [i]);
    }

    printf ("\n%-44s %11s", "metric", "direct");
    for (int i = 0; i < nt; i++)
        printf (" %11s", targets [i].name);
    printf ("\n");
    s_row ("time to first byte p50 (ms)", direct.ttfb_p50, targets, nt, g_ttfb50);
    s_row ("time to first byte p99 (ms)", direct.ttfb_p99, targets, nt, g_ttfb99);
    s_row ("chunk latency p50, 1 paced stream (ms)", direct.chunk_p50 [0], targets, nt, g_c50_1);
    s_row ("chunk latency p99, 1 paced stream (ms)", direct.chunk_p99 [0], targets, nt, g_c99_1);
    s_row ("chunk latency p50, 100 paced streams (ms)", direct.chunk_p50 [1], targets, nt, g_c50_100);
    s_row ("chunk latency p99, 100 paced streams (ms)", direct.chunk_p99 [1], targets, nt, g_c99_100);
    s_row ("chunk latency p50, 1000 paced streams (ms)", direct.chunk_p50 [2], targets, nt, g_c50_1000);
    s_row ("chunk latency p99, 1000 paced streams (ms)", direct.chunk_p99 [2], targets, nt, g_c99_1000);
    s_row ("throughput, 1 stream (chunks/s)", direct.tput_one, targets, nt, g_tput1);
    s_row ("throughput, 100 streams (chunks/s)", direct.tput_100, targets, nt, g_tput100);
    s_row ("CPU per chunk, all processes (us)", NAN, targets, nt, g_cpu);
    s_row ("CPU per chunk, 1000 paced streams (us)", NAN, targets, nt, g_cpu1000);
    s_row ("RSS at idle, all processes (MB)", NAN, targets, nt, g_rss_idle);
    s_row ("RSS per live stream, worst process (KiB)", NAN, targets, nt, g_rss_stream);
    for (int i = 0; i < nt; i++) {
        printf ("\n%s: added time to first byte p50 %.3f ms, p99 %.3f ms; added per-chunk latency "
                "p50 %.3f / p99 %.3f ms at 100 streams, p99 %.3f ms at 1000\n",
                targets [i].name, targets [i].ttfb_p50 - direct.ttfb_p50,
                targets [i].ttfb_p99 - direct.ttfb_p99,
                targets [i].chunk_p50 [1] - direct.chunk_p50 [1],
                targets [i].chunk_p99 [1] - direct.chunk_p99 [1],
                targets [i].chunk_p99 [2] - direct.chunk_p99 [2]);
        if (targets [i].ingest_metrics)
            printf ("%s replay logs at 1000 live streams: %.1f MB (peak)\n", targets [i].name,
                    targets [i].log_peak / 1048576.0);
        printf ("%s RSS per process, idle / under 1000 streams (KiB):", targets [i].name);
        for (int p = 0; p < targets [i].nprocs; p++)
            printf (" %s %ld/%ld", targets [i].proc_names [p], targets [i].rss_idle [p], targets [i].rss_peak [p]);
        printf ("\n");
    }

    //  What CURVE costs: the first stack against the same on a plaintext bus.
    double curve_one = NAN, curve_1000 = NAN;
    for (int i = 1; i < nt; i++)
        if (strcmp (targets [i].name, "plain") == 0) {
            const s_target_t *a = &targets [0], *b = &targets [i];
            curve_one = (a->cpu_us_per_chunk / b->cpu_us_per_chunk - 1) * 100;
            curve_1000 = (a->cpu_us_per_chunk_1000 / b->cpu_us_per_chunk_1000 - 1) * 100;
            printf ("\nCURVE: %s %.2f us of CPU per chunk against %.2f on a plaintext bus (%+.1f%%), "
                    "at 1000 paced streams %.2f against %.2f (%+.1f%%)\n", a->name,
                    a->cpu_us_per_chunk, b->cpu_us_per_chunk, curve_one,
                    a->cpu_us_per_chunk_1000, b->cpu_us_per_chunk_1000, curve_1000);
        }

    sl_buf_t json = { 0 };
    bool first = true;
    sl_buf_putc (&json, '{');
    s_json_stack (&json, &targets [0], &direct, "", &first);
    for (int i = 0; i < nt; i++) {
        char prefix [32];
        snprintf (prefix, sizeof prefix, "%.15s_", targets [i].name);
        s_json_stack (&json, &targets [i], &direct, prefix, &first);
    }
    s_json_number (&json, "direct_ttfb_ms_p50", direct.ttfb_p50, &first);
    s_json_number (&json, "direct_chunks_per_s_one_stream", direct.tput_one, &first);
    s_json_number (&json, "curve_cpu_per_chunk_added_pct", curve_one, &first);
    s_json_number (&json, "curve_cpu_per_chunk_added_pct_1000_streams", curve_1000, &first);
    sl_buf_puts (&json, "\n}\n");
    FILE *f = fopen (out_path, "w");
    if (!f || fwrite (json.data, 1, json.len, f) != json.len) {
        fprintf (stderr, "sluice-bench: cannot write %s\n", out_path);
        rc = 1;
    }
    if (f)
        fclose (f);
    sl_buf_free (&json);
    int failures = direct.failures;
    for (int i = 0; i < nt; i++)
        failures += targets [i].failures;
    if (failures) {
        fprintf (stderr, "sluice-bench: %d streams failed; the figures above are not trustworthy\n", failures);
        rc = 1;
    }
    return rc;
}
