/*  Benchmark: what the judge adds to a tool call, and how many LLM-judge
    calls it carries at once without slowing other streams.

    Part 1, the judge library on one core. Streams shaped like real ones
    (start, a text block, two tool calls with their arguments in fragments,
    finish, end) are fed through sl_judge with rule-only policies. A call's
    bytes are held until its block_end in any case (it cannot be judged
    before it is complete); what the judge adds is the time from feeding
    that block_end to the call's release, i.e. the sl_judge_feed call that
    decides, emits the verdict and releases the held events. Its p50, p99
    and p99.9 are printed per policy; the target is under 50 us.

    Part 2, the real processes (build/bin, optimized) on loopback, with two
    mocks: one as the upstream model, one as a slow LLM judge (judge-slow,
    1 s). N streams whose run_shell call goes to the LLM judge are started
    at once; while they are held, probe streams (mock-text, one event every
    20 ms) run back to back through the same five processes. For each N the
    bench prints the judge's peak of requests in flight, the probes' time to
    first byte and the gaps between their events, next to the same numbers
    without load. A probe that is not slowed sees ~20 ms gaps, as without
    load. SLUICE_BENCH_JUDGE_MAX caps N (default 1000: the gateway and the
    mocks serve at most 1020 connections at once, libmicrohttpd's default
    limit, so larger rounds measure that limit, not the judge); 0 skips
    part 2.
*/
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <czmq.h>
#include <jansson.h>

#include "common/stages/sl_judge.h"

#define CALLS_PER_STREAM 2
#define STREAMS 100000
#define LIVE_STREAMS 64                 //  streams interleaved at once

static double
s_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static int
s_cmp (const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static double
s_pct (double *v, size_t n, double q)
{
    if (!n)
        return 0;
    size_t i = (size_t) (q * (double) (n - 1) + 0.5);
    return v [i];
}

//  --------------------------------------------------------------------------
//  Part 1: the library

static uint64_t s_emitted;

static void
s_count (void *arg, const sl_msg_t *msg)
{
    (void) arg;
    (void) msg;
    s_emitted++;
}

static const char *s_tools =
    "[{\"name\":\"get_weather\",\"schema\":{\"type\":\"object\",\"required\":[\"city\"],\"properties\":"
    "{\"city\":{\"type\":\"string\"},\"unit\":{\"enum\":[\"c\",\"f\"]}},\"additionalProperties\":false}},"
    "{\"name\":\"run_shell\",\"schema\":{\"type\":\"object\",\"required\":[\"command\"],\"properties\":"
    "{\"command\":{\"type\":\"string\"},\"timeout\":{\"type\":\"integer\"}}}}]";

static void
s_msg (sl_msg_t *m, sl_msg_type_t type, const uint8_t *sid, int kind, int block, int index)
{
    sl_msg_init (m, type);
    memcpy (m->sid, sid, SL_SID_SIZE);
    m->kind = (uint8_t) kind;
    m->block = (uint8_t) block;
    m->index = index;
}

//  Feed one event of stream k's script (step); the block_end of a call is
//  timed into lat. Returns false after the last step.
static bool
s_step (sl_judge_t *judge, const uint8_t *sid, int step, double *lat, size_t *n_lat)
{
    static const char *names [CALLS_PER_STREAM] = { "get_weather", "run_shell" };
    static const char *frags [CALLS_PER_STREAM][3] = {
        { "{\"ci", "ty\":\"Pa", "ris\"}" }, { "{\"comm", "and\":\"ls -la /tmp", "\"}" }
    };
    static const char *whole [CALLS_PER_STREAM] = { "{\"city\":\"Paris\"}", "{\"command\":\"ls -la /tmp\"}" };
    sl_msg_t m;
    if (step == 0) {
        s_msg (&m, SL_MSG_START, sid, 0, 0, -1);
        m.model = sl_str ("gpt-4o");
        m.tools = sl_str (s_tools);
        m.headers = sl_str ("{\"user-agent\":\"bench\",\"x-team\":\"infra\"}");
    }
    else
    if (step <= 3) {
        s_msg (&m, SL_MSG_BLOCK, sid, step == 1 ? SL_B_START : step == 2 ? SL_B_DELTA : SL_B_END, SL_BK_TEXT, 0);
        m.text = sl_str ("Let me check.");
    }
    else
    if (step < 4 + CALLS_PER_STREAM * 5) {
        int c = (step - 4) / 5, part = (step - 4) % 5;
        int kind = part == 0 ? SL_B_START : part == 4 ? SL_B_END : SL_B_DELTA;
        s_msg (&m, SL_MSG_BLOCK, sid, kind, SL_BK_TOOL_CALL, 1 + c);
        if (kind != SL_B_DELTA)
            m.name = sl_str (names [c]);
        m.text = sl_str (kind == SL_B_END ? whole [c] : kind == SL_B_DELTA ? frags [c][part - 1] : NULL);
        if (kind == SL_B_END) {
            m.flags = SL_F_ARGS_VALID;
            double t0 = s_now ();
            sl_judge_feed (judge, &m, s_count, NULL);
            lat [(*n_lat)++] = s_now () - t0;
            return true;
        }
    }
    else
    if (step == 4 + CALLS_PER_STREAM * 5) {
        s_msg (&m, SL_MSG_BLOCK, sid, SL_B_FINISH, 0, -1);
        m.finish = SL_FIN_TOOL_CALLS;
    }
    else
    if (step == 5 + CALLS_PER_STREAM * 5)
        s_msg (&m, SL_MSG_END, sid, 0, 0, -1);
    else
        return false;
    sl_judge_feed (judge, &m, s_count, NULL);
    return true;
}

static void
s_bench_policy (const char *label, sl_policy_t *policy)
{
    sl_judge_t *judge = sl_judge_new (policy);
    double *lat = malloc (sizeof (double) * STREAMS * CALLS_PER_STREAM);
    size_t n_lat = 0;
    uint8_t sids [LIVE_STREAMS][SL_SID_SIZE];
    int steps [LIVE_STREAMS];
    uint64_t next_id = 1;
    for (int i = 0; i < LIVE_STREAMS; i++) {
        memset (sids [i], 0, SL_SID_SIZE);
        memcpy (sids [i], &next_id, sizeof next_id);
        next_id++;
        steps [i] = 0;
    }
    //  Interleave LIVE_STREAMS streams, one event each in turn, as a busy
    //  judge sees them.
    long started = LIVE_STREAMS;
    double t0 = s_now ();
    while (n_lat < (size_t) STREAMS * CALLS_PER_STREAM)
        for (int i = 0; i < LIVE_STREAMS && n_lat < (size_t) STREAMS * CALLS_PER_STREAM; i++)
            if (!s_step (judge, sids [i], steps [i]++, lat, &n_lat) && started < STREAMS) {
                memcpy (sids [i], &next_id, sizeof next_id);
                next_id++;
                steps [i] = 0;
                started++;
            }
    double total = s_now () - t0;
    qsort (lat, n_lat, sizeof (double), s_cmp);
    printf ("judge %-34s added latency per tool call: p50 %5.2f us  p99 %5.2f us  p99.9 %6.2f us"
            "  (%zu calls; %.2f us of CPU per stream of 2 calls)\n", label,
            s_pct (lat, n_lat, 0.50) * 1e6, s_pct (lat, n_lat, 0.99) * 1e6, s_pct (lat, n_lat, 0.999) * 1e6,
            n_lat, total / (double) started * 1e6);
    free (lat);
    sl_judge_destroy (&judge);
}

static sl_policy_t *
s_parse (const char *yaml)
{
    char *error = NULL;
    sl_policy_t *p = sl_policy_parse (yaml, strlen (yaml), "bench", &error);
    if (!p) {
        fprintf (stderr, "bench policy: %s\n", error);
        exit (1);
    }
    return p;
}

static void
s_part1 (void)
{
    char *error = NULL;
    sl_policy_t *shipped = sl_policy_load ("deploy/policy.yaml", &error);
    if (!shipped) {
        fprintf (stderr, "%s\n", error);
        exit (1);
    }
    s_bench_policy ("deploy/policy.yaml (1 rule)", shipped);
    sl_policy_unref (&shipped);
    sl_policy_t *shell = sl_policy_load ("deploy/policies/destructive-shell.yaml", &error);
    if (!shell) {
        fprintf (stderr, "%s\n", error);
        exit (1);
    }
    s_bench_policy ("destructive-shell.yaml (5 rules)", shell);
    sl_policy_unref (&shell);
    //  Twelve rules, most of which the calls walk past, with every kind of
    //  condition: names, globs, headers, model, regex, prefix, numbers,
    //  flags, the schema check and a rewrite.
    sl_policy_t *big = s_parse (
        "default: allow\n"
        "rules:\n"
        "  - {id: r1, tool: [deploy, 'k8s_*'], headers: [{name: x-team, equals: infra, not: true}], action: block}\n"
        "  - {id: r2, model: 'claude-*', tool: computer, action: block}\n"
        "  - {id: r3, tool: run_shell, args: [{pointer: /command, regex: 'rm[[:space:]]+-[a-z]*r'}], action: block}\n"
        "  - {id: r4, tool: run_shell, args: [{pointer: /command, regex: '(curl|wget).*[|].*sh'}], action: block}\n"
        "  - {id: r5, tool: write_file, args: [{pointer: /path, prefix: /etc/}], action: block}\n"
        "  - {id: r6, tool: transfer, args: [{pointer: /amount, gt: 1000}], action: block}\n"
        "  - {id: r7, args_invalid: true, action: block}\n"
        "  - {id: r8, args_repaired: true, tool: run_shell, action: block}\n"
        "  - {id: r9, max_calls: 16, action: drop}\n"
        "  - {id: r10, schema_violation: true, action: block}\n"
        "  - {id: r11, tool: telemetry, action: drop}\n"
        "  - {id: r12, tool: run_shell, args: [{pointer: /timeout, exists: false}], action: rewrite,\n"
        "     set: {/timeout: 60}}\n");
    s_bench_policy ("12 rules, schema check + rewrite", big);
    sl_policy_unref (&big);
    //  The same twelve in shadow mode (the file's mode): nothing is
    //  enforced, and every call is judged again under them, its would-be
    //  verdict emitted: what a shadow rule adds to a call's release.
    sl_policy_t *shadow = s_parse (
        "mode: shadow\n"
        "default: allow\n"
        "rules:\n"
        "  - {id: r1, tool: [deploy, 'k8s_*'], headers: [{name: x-team, equals: infra, not: true}], action: block}\n"
        "  - {id: r2, model: 'claude-*', tool: computer, action: block}\n"
        "  - {id: r3, tool: run_shell, args: [{pointer: /command, regex: 'rm[[:space:]]+-[a-z]*r'}], action: block}\n"
        "  - {id: r4, tool: run_shell, args: [{pointer: /command, regex: '(curl|wget).*[|].*sh'}], action: block}\n"
        "  - {id: r5, tool: write_file, args: [{pointer: /path, prefix: /etc/}], action: block}\n"
        "  - {id: r6, tool: transfer, args: [{pointer: /amount, gt: 1000}], action: block}\n"
        "  - {id: r7, args_invalid: true, action: block}\n"
        "  - {id: r8, args_repaired: true, tool: run_shell, action: block}\n"
        "  - {id: r9, max_calls: 16, action: drop}\n"
        "  - {id: r10, schema_violation: true, action: block}\n"
        "  - {id: r11, tool: telemetry, action: drop}\n"
        "  - {id: r12, tool: run_shell, args: [{pointer: /timeout, exists: false}], action: rewrite,\n"
        "     set: {/timeout: 60}}\n");
    s_bench_policy ("the 12 rules in shadow mode", shadow);
    sl_policy_unref (&shadow);
}

//  --------------------------------------------------------------------------
//  Part 2: LLM-judge calls in flight, over the real processes

#define MAX_PROCS 10
#define PROBE_MODEL "mock-text"
#define PROBE_DELAY_MS 20               //  the upstream mock's pace
#define JUDGE_DELAY_MS 3000             //  the judge mock's thinking time
#define PROBE_LANES 4                   //  probe streams at a time
#define ROUND_TIMEOUT_S 60
#define ASK_HOLD_S 3                    //  held calls wait this long for a person

typedef struct {
    pid_t pid;
    char log [256];
} s_proc_t;

static char s_dir [64];
static s_proc_t s_procs [MAX_PROCS];
static int s_nprocs;

static s_proc_t *
s_spawn (const char *name, const char *const *args)
{
    s_proc_t *p = &s_procs [s_nprocs++];
    snprintf (p->log, sizeof p->log, "%s/%s.log", s_dir, name);
    char path [128];
    snprintf (path, sizeof path, "build/bin/sluice-%s", strncmp (name, "mock", 4) == 0 ? "mock" : name);
    const char *argv [32] = { path };
    int n = 1;
    for (int i = 0; args [i] && n < 30; i++)
        argv [n++] = args [i];
    argv [n] = NULL;
    p->pid = fork ();
    if (p->pid == 0) {
        int fd = open (p->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2 (fd, 1);
        dup2 (fd, 2);
        close (fd);
        execv (path, (char *const *) argv);
        _exit (127);
    }
    return p;
}

//  The value after `after` on the first log line holding needle (bounded wait).
static bool
s_log_value (s_proc_t *p, const char *needle, const char *after, char *out, size_t size)
{
    for (int tries = 0; tries < 3000; tries++) {
        FILE *f = fopen (p->log, "r");
        char line [4096];
        while (f && fgets (line, sizeof line, f)) {
            char *hit = strstr (line, needle);
            char *v = hit ? strstr (hit, after) : NULL;
            if (v) {
                v += strlen (after);
                size_t n = strcspn (v, " \"\n");
                snprintf (out, size, "%.*s", (int) (n < size ? n : size - 1), v);
                fclose (f);
                return true;
            }
        }
        if (f)
            fclose (f);
        struct timespec ts = { 0, 5000000 };
        nanosleep (&ts, NULL);
    }
    return false;
}

static void
s_stop_all (void)
{
    for (int i = s_nprocs - 1; i >= 0; i--)
        if (s_procs [i].pid > 0)
            kill (s_procs [i].pid, SIGTERM);
    for (int i = s_nprocs - 1; i >= 0; i--)
        if (s_procs [i].pid > 0) {
            waitpid (s_procs [i].pid, NULL, 0);
            unlink (s_procs [i].log);
        }
    char policy [128];
    snprintf (policy, sizeof policy, "%s/policy.yaml", s_dir);
    unlink (policy);
    char cmd [160];
    snprintf (cmd, sizeof cmd, "rm -rf '%s/keys'", s_dir);
    if (system (cmd) != 0)
        fprintf (stderr, "bench_judge: cannot remove %s/keys\n", s_dir);
    rmdir (s_dir);
    s_nprocs = 0;
}

//  A TCP port on 127.0.0.1 that was free a moment ago.
static int
s_free_port (void)
{
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    bind (fd, (struct sockaddr *) &a, sizeof a);
    getsockname (fd, (struct sockaddr *) &a, &len);
    close (fd);
    return ntohs (a.sin_port);
}

typedef struct {
    int http_port;
    int judge_metrics;
    pid_t judge_pid;
    bool ask;                           //  run_shell waits for a person, not an LLM judge
    char approvals [128];               //  the judge's control endpoint
    char keys [96];
} s_stack_t;

static bool
s_stack_start (s_stack_t *st)
{
    char port [16], up [16], inbox [128], next [128], pub [128], metrics [16], keys [96], gateway [64], name [64];
    //  The bus's keys, made for the run; the gateway's inbox, which the
    //  emitter connects to before the gateway starts, on a port picked now.
    snprintf (keys, sizeof keys, "%s/keys", s_dir);
    const char *keygen_args [] = { "--dir", keys, NULL };
    s_proc_t *keygen = s_spawn ("keygen", keygen_args);
    int status = -1;
    if (waitpid (keygen->pid, &status, 0) != keygen->pid || !WIFEXITED (status) || WEXITSTATUS (status) != 0)
        return false;
    keygen->pid = 0;
    unlink (keygen->log);
    snprintf (gateway, sizeof gateway, "tcp://127.0.0.1:%d", s_free_port ());
    const char *mock_args [] = { "--port", "0", "--delay-ms", "20", NULL };
    if (!s_log_value (s_spawn ("mock", mock_args), "\"listening\"", "http=127.0.0.1:", up, sizeof up))
        return false;
    s_proc_t *jm = s_spawn ("mock-judge", mock_args);
    if (!s_log_value (jm, "\"listening\"", "http=127.0.0.1:", port, sizeof port))
        return false;
    char policy [128];
    snprintf (policy, sizeof policy, "%s/policy.yaml", s_dir);
    FILE *f = fopen (policy, "w");
    if (st->ask)
        fprintf (f, "rules:\n  - id: shell-ask\n    tool: run_shell\n    action: ask\n"
                    "    ask: {timeout_ms: 120000}\n");
    else
        fprintf (f, "rules:\n  - id: shell-judge\n    tool: run_shell\n    llm_judge:\n"
                    "      url: http://127.0.0.1:%s/v1/chat/completions\n      model: judge-slow-%d\n"
                    "      timeout_ms: 60000\n      concurrency: 100000\n", port, JUDGE_DELAY_MS);
    fclose (f);
    const char *em_args [] = { "--bind", "tcp://127.0.0.1:*", "--pub", "tcp://127.0.0.1:*", "--pub-meta", "off",
                               "--gateways", gateway, "--keys", keys, "--metrics-port", "0", NULL };
    s_proc_t *em = s_spawn ("emitter", em_args);
    if (!s_log_value (em, "\"inbox_bound\"", "endpoint=", inbox, sizeof inbox)
    ||  !s_log_value (em, "\"pub_bound\"", "endpoint=", pub, sizeof pub))
        return false;
    snprintf (next, sizeof next, "%s", inbox);
    const char *judge_args [] = { "--bind", "tcp://127.0.0.1:*", "--next", next, "--metrics-port", "0",
                                  "--policy", policy, "--keys", keys, "--approvals-bind", "tcp://127.0.0.1:*",
                                  NULL };
    snprintf (st->keys, sizeof st->keys, "%s", keys);
    s_proc_t *judge = s_spawn ("judge", judge_args);
    if (!s_log_value (judge, "\"approvals_bound\"", "endpoint=", st->approvals, sizeof st->approvals)
    ||  !s_log_value (judge, "\"inbox_bound\"", "endpoint=", inbox, sizeof inbox)
    ||  !s_log_value (judge, "\"started\"", "metrics_port=", metrics, sizeof metrics))
        return false;
    st->judge_metrics = atoi (metrics);
    st->judge_pid = judge->pid;
    snprintf (next, sizeof next, "%s", inbox);
    const char *agg_args [] = { "--bind", "tcp://127.0.0.1:*", "--next", next, "--metrics-port", "0",
                                "--keys", keys, NULL };
    if (!s_log_value (s_spawn ("aggregator", agg_args), "\"inbox_bound\"", "endpoint=", inbox, sizeof inbox))
        return false;
    snprintf (next, sizeof next, "%s", inbox);
    char base [64];
    snprintf (base, sizeof base, "http://127.0.0.1:%s/v1", up);
    const char *in_args [] = { "--bind", "tcp://127.0.0.1:*", "--next", next, "--metrics-port", "0",
                               "--openai-base-url", base, "--keys", keys, NULL };
    if (!s_log_value (s_spawn ("ingest", in_args), "\"inbox_bound\"", "endpoint=", inbox, sizeof inbox))
        return false;
    snprintf (next, sizeof next, "%s", inbox);
    const char *gw_args [] = { "--http-port", "0", "--bind", gateway, "--next", next,
                               "--metrics-port", "0", "--keys", keys, NULL };
    if (!s_log_value (s_spawn ("gateway", gw_args), "\"listening\"", "http=127.0.0.1:", port, sizeof port)
    ||  !s_log_value (em, "\"peer_up\"", "name=", name, sizeof name))     //  the emitter heard from it
        return false;
    st->http_port = atoi (port);
    return true;
}

//  A metric of the judge (first sample of that name), -1 when absent.
static double
s_metric (s_stack_t *st, const char *name)
{
    char cmd [256];
    snprintf (cmd, sizeof cmd, "curl -s http://127.0.0.1:%d/metrics", st->judge_metrics);
    FILE *f = popen (cmd, "r");
    char line [1024];
    double v = -1;
    size_t n = strlen (name);
    while (f && fgets (line, sizeof line, f))
        if (strncmp (line, name, n) == 0 && line [n] == ' ')
            v = atof (line + n + 1);
    if (f)
        pclose (f);
    return v;
}

//  CPU seconds the process has used (user + system).
static double
s_cpu (pid_t pid)
{
    char path [64], buf [1024];
    snprintf (path, sizeof path, "/proc/%d/stat", (int) pid);
    FILE *f = fopen (path, "r");
    if (!f || !fgets (buf, sizeof buf, f)) {
        if (f)
            fclose (f);
        return 0;
    }
    fclose (f);
    char *p = strrchr (buf, ')');
    unsigned long utime = 0, stime = 0;
    //  Fields after the name: state is 3rd; utime and stime are 14th and 15th.
    if (p && sscanf (p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) == 2)
        return (double) (utime + stime) / (double) sysconf (_SC_CLK_TCK);
    return 0;
}

typedef struct {
    CURL *easy;
    struct curl_slist *headers;
    bool probe;
    bool done;
    bool ok;                            //  a complete response ([DONE])
    double started, first, last;        //  times of the request, first and last bytes
    double *gaps;                       //  between arrivals (probes)
    size_t n_gaps, cap_gaps;
    char tail [16];                     //  last bytes seen
} s_xfer_t;

static size_t
s_on_body (char *ptr, size_t size, size_t nmemb, void *arg)
{
    s_xfer_t *x = arg;
    size_t n = size * nmemb;
    double now = s_now ();
    if (!x->first)
        x->first = now;
    else
    if (x->probe) {
        if (x->n_gaps == x->cap_gaps) {
            x->cap_gaps = x->cap_gaps ? x->cap_gaps * 2 : 64;
            x->gaps = realloc (x->gaps, x->cap_gaps * sizeof (double));
        }
        x->gaps [x->n_gaps++] = now - x->last;
    }
    x->last = now;
    size_t keep = n < sizeof x->tail - 1 ? n : sizeof x->tail - 1;
    memcpy (x->tail, ptr + n - keep, keep);
    x->tail [keep] = 0;
    return n;
}

static s_xfer_t *
s_request (CURLM *multi, int port, const char *model, bool probe)
{
    s_xfer_t *x = calloc (1, sizeof *x);
    x->probe = probe;
    x->easy = curl_easy_init ();
    char url [128], body [256];
    snprintf (url, sizeof url, "http://127.0.0.1:%d/v1/chat/completions", port);
    snprintf (body, sizeof body, "{\"model\":\"%s\",\"stream\":true,\"messages\":[{\"role\":\"user\","
              "\"content\":\"hi %p\"}]}", model, (void *) x);
    x->headers = curl_slist_append (NULL, "Content-Type: application/json");
    curl_easy_setopt (x->easy, CURLOPT_URL, url);
    curl_easy_setopt (x->easy, CURLOPT_COPYPOSTFIELDS, body);
    curl_easy_setopt (x->easy, CURLOPT_HTTPHEADER, x->headers);
    curl_easy_setopt (x->easy, CURLOPT_WRITEFUNCTION, s_on_body);
    curl_easy_setopt (x->easy, CURLOPT_WRITEDATA, x);
    curl_easy_setopt (x->easy, CURLOPT_PRIVATE, (char *) x);
    curl_easy_setopt (x->easy, CURLOPT_TIMEOUT, (long) ROUND_TIMEOUT_S);
    curl_easy_setopt (x->easy, CURLOPT_NOSIGNAL, 1L);
    x->started = s_now ();
    curl_multi_add_handle (multi, x->easy);
    return x;
}

static void
s_xfer_free (CURLM *multi, s_xfer_t *x)
{
    curl_multi_remove_handle (multi, x->easy);
    curl_easy_cleanup (x->easy);
    curl_slist_free_all (x->headers);
    free (x->gaps);
    free (x);
}

typedef struct {
    double ttfb_p50, ttfb_max, gap_p50, gap_p99, gap_max;
    int probes;
    int loaded_ok;
    double peak;
    double judge_cpu;
    double ramp;                        //  s until every judged call was in flight
    double rss_base_kb, rss_held_kb;    //  the judge's resident memory before, and with all held
    double approve_s;                   //  approving every held call (ask)
} s_round_t;

//  Drive the transfers a little; count what finished.
static void
s_drive (CURLM *multi, int *loaded_done, int *loaded_ok, s_xfer_t **probes, s_xfer_t ***finished,
         size_t *n_finished)
{
    int running;
    curl_multi_perform (multi, &running);
    curl_multi_poll (multi, NULL, 0, 5, NULL);
    curl_multi_perform (multi, &running);
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read (multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        s_xfer_t *x;
        curl_easy_getinfo (msg->easy_handle, CURLINFO_PRIVATE, (char **) &x);
        x->done = true;
        x->ok = msg->data.result == CURLE_OK && strstr (x->tail, "[DONE]");
        if (!x->probe) {
            (*loaded_done)++;
            *loaded_ok += x->ok;
        }
    }
    //  Finished probes are kept for the statistics and replaced.
    for (int i = 0; probes && i < PROBE_LANES; i++)
        if (probes [i] && probes [i]->done) {
            *finished = realloc (*finished, (*n_finished + 1) * sizeof (s_xfer_t *));
            (*finished) [(*n_finished)++] = probes [i];
            probes [i] = NULL;
        }
}

//  Run n judged streams, wait until all their calls are in flight at the
//  judge, then run probes back to back (PROBE_LANES at a time) until the
//  judged streams are done. n == 0: probes alone, for probe_rounds each.
//  Resident memory of a process, kB.
static double
s_rss_kb (pid_t pid)
{
    char path [64], line [256];
    snprintf (path, sizeof path, "/proc/%d/status", (int) pid);
    FILE *f = fopen (path, "r");
    double kb = 0;
    while (f && fgets (line, sizeof line, f))
        if (strncmp (line, "VmRSS:", 6) == 0)
            kb = atof (line + 6);
    if (f)
        fclose (f);
    return kb;
}

//  Approve every pending approval through the judge's control link, as
//  the console does: one list, then every decision at once.
static void
s_approve_all (s_stack_t *st, int n)
{
    char path [160];
    snprintf (path, sizeof path, "%s/gateway.key_secret", st->keys);
    zcert_t *mine = zcert_load (path);
    snprintf (path, sizeof path, "%s/judge.key", st->keys);
    zcert_t *judge = zcert_load (path);
    if (!mine || !judge) {
        fprintf (stderr, "bench_judge: no keys in %s\n", st->keys);
        zcert_destroy (&mine);
        zcert_destroy (&judge);
        return;
    }
    zsock_t *sock = zsock_new (ZMQ_DEALER);
    zcert_apply (mine, sock);
    zsock_set_curve_serverkey (sock, zcert_public_txt (judge));
    zsock_connect (sock, "%s", st->approvals);
    sl_codec_t *codec = sl_codec_new ();
    sl_buf_t wire = { 0 };
    json_t *list = NULL;
    int sent = 0, answered = 0;
    for (int phase = 0; phase < 2; phase++) {
        size_t count = phase == 0 ? 1 : json_array_size (json_object_get (list, "approvals"));
        for (size_t i = 0; i < count; i++) {
            sl_msg_t req;
            sl_msg_init (&req, SL_MSG_CTL);
            sl_sid_new (req.sid);
            req.code = sl_str (phase == 0 ? "list" : "decide");
            json_t *a = phase ? json_array_get (json_object_get (list, "approvals"), i) : NULL;
            req.id = sl_str (a ? json_string_value (json_object_get (a, "id")) : NULL);
            req.body = sl_str (phase == 0 ? "{\"by\":{\"console\":true}}"
                                          : "{\"by\":{\"console\":true},\"decision\":\"approve\"}");
            sl_buf_reset (&wire);
            sl_msg_encode (&req, &wire);
            zframe_t *frame = zframe_new (wire.data, wire.len);
            zframe_send (&frame, sock, 0);
            sent += phase;
        }
        for (size_t i = 0; i < count; i++) {
            zsock_set_rcvtimeo (sock, 10000);
            zframe_t *reply = zframe_recv (sock);
            if (!reply)
                break;
            size_t offset = 0;
            sl_msg_t m;
            if (sl_codec_decode (codec, zframe_data (reply), zframe_size (reply), &offset, &m) == 0) {
                if (phase == 0)
                    list = json_loadb (m.body.ptr, m.body.len, 0, NULL);
                else
                    answered += m.status == 200;
            }
            zframe_destroy (&reply);
        }
    }
    if (answered != n)
        fprintf (stderr, "bench_judge: %d of %d approvals taken (%d sent)\n", answered, n, sent);
    json_decref (list);
    sl_buf_free (&wire);
    sl_codec_destroy (&codec);
    zsock_destroy (&sock);
    zcert_destroy (&mine);
    zcert_destroy (&judge);
}

static s_round_t
s_round (s_stack_t *st, int n, int probe_rounds)
{
    s_round_t r = { 0 };
    CURLM *multi = curl_multi_init ();
    s_xfer_t **loaded = calloc ((size_t) n + 1, sizeof (s_xfer_t *));
    s_xfer_t *probes [PROBE_LANES] = { 0 };
    s_xfer_t **finished = NULL;
    size_t n_finished = 0;
    int loaded_done = 0, started = 0;
    double cpu0 = s_cpu (st->judge_pid);
    double t0 = s_now (), deadline = t0 + ROUND_TIMEOUT_S, next_check = 0;
    for (int i = 0; i < n; i++)
        loaded [i] = s_request (multi, st->http_port, "mock-tools", false);
    r.rss_base_kb = s_rss_kb (st->judge_pid);
    //  Ramp: until every judged call waits for its judge (or a person).
    while (n && s_now () < deadline) {
        s_drive (multi, &loaded_done, &r.loaded_ok, NULL, &finished, &n_finished);
        if (s_now () >= next_check) {
            if (s_metric (st, st->ask ? "sluice_approvals_pending" : "sluice_llm_judge_inflight") >= n)
                break;
            next_check = s_now () + 0.02;
        }
    }
    r.ramp = s_now () - t0;
    r.rss_held_kb = s_rss_kb (st->judge_pid);
    //  Nobody decides while the probes run for ASK_HOLD_S; then a person
    //  approves every held call.
    double approve_at = st->ask && n ? s_now () + ASK_HOLD_S : 0;
    while (s_now () < deadline && (n ? loaded_done < n : started < probe_rounds * PROBE_LANES
                                                        || n_finished < (size_t) started)) {
        if (approve_at && s_now () >= approve_at) {
            double a0 = s_now ();
            s_approve_all (st, n);
            r.approve_s = s_now () - a0;
            approve_at = 0;
        }
        for (int i = 0; i < PROBE_LANES; i++)
            if (!probes [i] && (n ? loaded_done < n : started < probe_rounds * PROBE_LANES)) {
                probes [i] = s_request (multi, st->http_port, PROBE_MODEL, true);
                started++;
            }
        s_drive (multi, &loaded_done, &r.loaded_ok, probes, &finished, &n_finished);
    }
    r.judge_cpu = s_cpu (st->judge_pid) - cpu0;
    r.peak = s_metric (st, "sluice_llm_judge_inflight_peak");
    double *ttfb = malloc ((n_finished + 1) * sizeof (double));
    size_t n_ttfb = 0, n_gaps = 0, cap_gaps = 1024;
    double *gaps = malloc (cap_gaps * sizeof (double));
    for (size_t i = 0; i < n_finished; i++) {
        s_xfer_t *x = finished [i];
        if (x->ok) {
            ttfb [n_ttfb++] = x->first - x->started;
            for (size_t k = 0; k < x->n_gaps; k++) {
                if (n_gaps == cap_gaps)
                    gaps = realloc (gaps, (cap_gaps *= 2) * sizeof (double));
                gaps [n_gaps++] = x->gaps [k];
            }
        }
        s_xfer_free (multi, x);
    }
    free (finished);
    for (int i = 0; i < PROBE_LANES; i++)
        if (probes [i])
            s_xfer_free (multi, probes [i]);
    for (int i = 0; i < n; i++)
        s_xfer_free (multi, loaded [i]);
    free (loaded);
    curl_multi_cleanup (multi);
    qsort (ttfb, n_ttfb, sizeof (double), s_cmp);
    qsort (gaps, n_gaps, sizeof (double), s_cmp);
    r.probes = (int) n_ttfb;
    r.ttfb_p50 = s_pct (ttfb, n_ttfb, 0.5) * 1e3;
    r.ttfb_max = n_ttfb ? ttfb [n_ttfb - 1] * 1e3 : 0;
    r.gap_p50 = s_pct (gaps, n_gaps, 0.5) * 1e3;
    r.gap_p99 = s_pct (gaps, n_gaps, 0.99) * 1e3;
    r.gap_max = n_gaps ? gaps [n_gaps - 1] * 1e3 : 0;
    free (ttfb);
    free (gaps);
    return r;
}

//  The rounds' bound (SLUICE_BENCH_JUDGE_MAX) into *max, and a stack up
//  in a fresh directory: 0 ready, -1 skipped (a bound of 0), 1 failed.
static int
s_part_start (s_stack_t *st, int *max)
{
    const char *env = getenv ("SLUICE_BENCH_JUDGE_MAX");
    *max = env ? atoi (env) : 1000;
    if (*max <= 0)
        return -1;
    snprintf (s_dir, sizeof s_dir, "/tmp/sluice-bench-XXXXXX");
    if (!mkdtemp (s_dir))
        return 1;
    if (!s_stack_start (st)) {
        fprintf (stderr, "bench_judge: the stack did not come up (logs in %s)\n", s_dir);
        s_stop_all ();
        return 1;
    }
    return 0;
}

static int
s_part2 (void)
{
    curl_global_init (CURL_GLOBAL_DEFAULT);
    s_stack_t st = { .ask = false };
    int max, up = s_part_start (&st, &max);
    if (up)
        return up > 0;
    printf ("LLM-judge calls in flight (the judge answers after %d ms). Once all are in flight, probe\n"
            "streams (%s, an event every %d ms, %d at a time) run through the same processes:\n",
            JUDGE_DELAY_MS, PROBE_MODEL, PROBE_DELAY_MS, PROBE_LANES);
    printf ("  %6s %8s %9s %7s %6s %10s %10s %8s %8s %8s %10s\n", "judged", "complete", "in flight", "ramp",
            "probes", "ttfb p50", "ttfb max", "gap p50", "gap p99", "gap max", "judge CPU");
    s_round_t base = s_round (&st, 0, 2);
    printf ("  %6d %8s %9s %7s %6d %7.1f ms %7.1f ms %5.1f ms %5.1f ms %5.1f ms\n", 0, "-", "-", "-",
            base.probes, base.ttfb_p50, base.ttfb_max, base.gap_p50, base.gap_p99, base.gap_max);
    static const int sizes [] = { 100, 500, 1000, 2000, 4000 };
    int rc = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes [0] && sizes [i] <= max; i++) {
        s_round_t r = s_round (&st, sizes [i], 0);
        printf ("  %6d %8d %9.0f %5.2f s %6d %7.1f ms %7.1f ms %5.1f ms %5.1f ms %5.1f ms %5.0f us/call\n",
                sizes [i], r.loaded_ok, r.peak, r.ramp, r.probes, r.ttfb_p50, r.ttfb_max, r.gap_p50,
                r.gap_p99, r.gap_max, r.judge_cpu / sizes [i] * 1e6);
        fflush (stdout);
        if (r.loaded_ok != sizes [i])
            rc = 1;
    }
    s_stop_all ();
    return rc;
}

//  Part 3: calls held for a person (action ask): what each costs the
//  judge in memory, whether other streams slow down, and approving them.
static int
s_part3 (void)
{
    s_stack_t st = { .ask = true };
    int max, up = s_part_start (&st, &max);
    if (up)
        return up > 0;
    printf ("Calls held for a person (action ask), %d s with nobody deciding, then all approved at once;\n"
            "probe streams (%s) run meanwhile:\n", ASK_HOLD_S, PROBE_MODEL);
    printf ("  %6s %8s %7s %12s %10s %8s %8s %8s %10s\n", "held", "complete", "ramp", "judge memory",
            "per call", "gap p50", "gap p99", "gap max", "approving");
    s_round_t base = s_round (&st, 0, 2);
    printf ("  %6d %8s %7s %9.0f kB %10s %5.1f ms %5.1f ms %5.1f ms\n", 0, "-", "-", base.rss_base_kb, "-",
            base.gap_p50, base.gap_p99, base.gap_max);
    static const int sizes [] = { 100, 1000 };
    int rc = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes [0] && sizes [i] <= max; i++) {
        s_round_t r = s_round (&st, sizes [i], 0);
        double per = (r.rss_held_kb - r.rss_base_kb) * 1024.0 / sizes [i];
        printf ("  %6d %8d %5.2f s %9.0f kB %7.0f B %5.1f ms %5.1f ms %5.1f ms %7.0f ms\n", sizes [i], r.loaded_ok,
                r.ramp, r.rss_held_kb, per, r.gap_p50, r.gap_p99, r.gap_max, r.approve_s * 1e3);
        fflush (stdout);
        if (r.loaded_ok != sizes [i])
            rc = 1;
    }
    s_stop_all ();
    return rc;
}

int
main (void)
{
    s_part1 ();
    fflush (stdout);
    int rc = s_part2 ();
    fflush (stdout);
    return s_part3 () || rc;
}
