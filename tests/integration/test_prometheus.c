/*  Integration: Debian's Prometheus watching a stack like make run's.

    The stack (mock, the five stages, sluice-audit on SQLite behind the
    emitter's spool) runs on ephemeral loopback ports. The test writes a
    Prometheus config with the jobs of deploy/prometheus/prometheus.yml
    (each job's name from that file, its target the test's port for that
    process; the shipped file finds compose's instances by DNS, which
    loopback has not) and the shipped deploy/prometheus/alerts.yml as its
    rule file, starts /usr/bin/prometheus on a free port with a data
    directory of its own, and waits until every target is up. Then it
    sends streams with tool calls under deploy/policy.yaml (one blocked, one
    allowed per stream) and asks Prometheus, by PromQL over its HTTP API,
    whether requests, verdicts by action, tokens, streams at every stage,
    audit records and the hops' batches moved, and whether every hop is
    alive and not stalled. The rules: every one loaded, every one
    evaluating without error, and none left pending on this healthy
    stack.

    Skipped, saying why, when /usr/bin/prometheus is absent (make deps
    installs Debian's prometheus). Every wait is bounded; Prometheus is
    killed when the test ends, and dies with the test's process if that
    ends first. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/integration/audit_proc.h"
#include "tests/integration/harness.h"

#define PROM_BIN "/usr/bin/prometheus"
#define PROM_SCRAPE "deploy/prometheus/prometheus.yml"
#define PROM_RULES "deploy/prometheus/alerts.yml"
#define S_JOBS_MAX 16
#define S_UP_MS 30000                   //  Prometheus up, every target scraped
#define S_WAIT_MS 20000                 //  a query's answer to come true
#define S_POLL_MS 200
#define S_STOP_MS 5000
#define S_REQUEST_MS 15000

static pid_t s_prom_pid;                //  Prometheus, killed by the fini when still running

static void
s_prom_kill (void)
{
    if (s_prom_pid <= 0)
        return;
    kill (s_prom_pid, SIGTERM);
    int64_t until = zclock_mono () + S_STOP_MS;
    while (waitpid (s_prom_pid, NULL, WNOHANG) == 0) {
        if (zclock_mono () > until) {
            kill (s_prom_pid, SIGKILL);
            waitpid (s_prom_pid, NULL, 0);
            break;
        }
        zclock_sleep (50);
    }
    s_prom_pid = 0;
}

//  Start Prometheus with config, its data and log in dir, on port.
static pid_t
s_prom_start (const char *dir, const char *config, int port)
{
    char data [600], listen [64], config_arg [700], data_arg [700], log [600];
    snprintf (data, sizeof data, "%s/data", dir);
    snprintf (log, sizeof log, "%s/prometheus.log", dir);
    snprintf (listen, sizeof listen, "--web.listen-address=127.0.0.1:%d", port);
    snprintf (config_arg, sizeof config_arg, "--config.file=%s", config);
    snprintf (data_arg, sizeof data_arg, "--storage.tsdb.path=%s", data);
    pid_t pid = fork ();
    if (pid == 0) {
        //  Prometheus does not outlive the test, however the test ends.
        prctl (PR_SET_PDEATHSIG, SIGKILL);
        FILE *out = freopen (log, "w", stdout);
        if (!out || dup2 (fileno (stdout), 2) < 0)
            _exit (127);
        execl (PROM_BIN, PROM_BIN, config_arg, data_arg, listen, "--log.level=warn", (char *) NULL);
        _exit (127);
    }
    return pid;
}

//  The shipped config's jobs, in order, with the port each is written
//  with (one "port:" line per job).
typedef struct {
    char name [32];
    int port;
} s_job_t;

static int
s_shipped_jobs (s_job_t *jobs, int max)
{
    FILE *f = fopen (PROM_SCRAPE, "r");
    cr_assert_not_null (f, "%s", PROM_SCRAPE);
    char line [512];
    int count = 0;
    while (fgets (line, sizeof line, f)) {
        const char *p = line + strspn (line, " ");
        if (strncmp (p, "- job_name:", 11) == 0 && count < max) {
            sscanf (p + 11, " %31s", jobs [count].name);
            jobs [count++].port = 0;
        }
        else
        if (strncmp (p, "port:", 5) == 0 && count > 0)
            jobs [count - 1].port = atoi (p + 5);
    }
    fclose (f);
    return count;
}

//  GET path from Prometheus as JSON whose status is "success" (NULL otherwise).
static json_t *
s_prom_get (int port, const char *path)
{
    sl_buf_t body = { 0 };
    int status = http_request (port, "GET", path, NULL, NULL, &body, S_REQUEST_MS);
    json_t *doc = status == 200 ? json_loads (sl_buf_cstr (&body), 0, NULL) : NULL;
    sl_buf_free (&body);
    if (doc && strcmp (json_string_value (json_object_get (doc, "status")) ?: "", "success") != 0)
        json_decref (doc);
    else
        return doc;
    return NULL;
}

//  An instant query's result vector (a new reference), NULL when it fails.
static json_t *
s_query (int port, const char *promql)
{
    CURL *curl = curl_easy_init ();
    char *escaped = curl_easy_escape (curl, promql, 0);
    char path [2048];
    snprintf (path, sizeof path, "/api/v1/query?query=%s", escaped);
    curl_free (escaped);
    curl_easy_cleanup (curl);
    json_t *doc = s_prom_get (port, path);
    json_t *result = doc ? json_incref (json_object_get (json_object_get (doc, "data"), "result")) : NULL;
    json_decref (doc);
    return result;
}

//  Poll promql until its vector has at least want series (at_most: at
//  most); how many it had last. A query that is not answered counts as
//  neither.
static size_t
s_wait_count (int port, const char *promql, size_t want, bool at_most)
{
    size_t got = 0;
    int64_t until = zclock_mono () + S_WAIT_MS;
    do {
        json_t *result = s_query (port, promql);
        got = json_is_array (result) ? json_array_size (result) : at_most ? SIZE_MAX : 0;
        json_decref (result);
        if (at_most ? got <= want : got >= want)
            break;
        zclock_sleep (S_POLL_MS);
    } while (zclock_mono () < until);
    return got;
}

static size_t
s_wait_query (int port, const char *promql, size_t want)
{
    return s_wait_count (port, promql, want, false);
}

//  Whether the vector of promql (polled) has a series with label = each of values.
static bool
s_wait_labels (int port, const char *promql, const char *label, const char *const *values)
{
    int64_t until = zclock_mono () + S_WAIT_MS;
    do {
        json_t *result = s_query (port, promql);
        size_t found = 0, wanted = 0;
        for (const char *const *v = values; *v; v++, wanted++) {
            size_t i;
            json_t *series;
            json_array_foreach (result, i, series) {
                const char *got = json_string_value (json_object_get (json_object_get (series, "metric"), label));
                if (got && strcmp (got, *v) == 0) {
                    found++;
                    break;
                }
            }
        }
        json_decref (result);
        if (found == wanted)
            return true;
        zclock_sleep (S_POLL_MS);
    } while (zclock_mono () < until);
    return false;
}

//  Targets whose last scrape was up (-1 when the API does not answer).
static int
s_targets_up (int port)
{
    json_t *doc = s_prom_get (port, "/api/v1/targets?state=active");
    if (!doc)
        return -1;
    int up = 0;
    size_t i;
    json_t *target;
    json_array_foreach (json_object_get (json_object_get (doc, "data"), "activeTargets"), i, target)
        up += strcmp (json_string_value (json_object_get (target, "health")) ?: "", "up") == 0;
    json_decref (doc);
    return up;
}

//  Rules loaded and rules whose last evaluation was ok.
static void
s_rules (int port, int *loaded, int *ok)
{
    *loaded = *ok = 0;
    json_t *doc = s_prom_get (port, "/api/v1/rules");
    size_t g, r;
    json_t *group, *rule;
    json_array_foreach (json_object_get (json_object_get (doc, "data"), "groups"), g, group)
        json_array_foreach (json_object_get (group, "rules"), r, rule) {
            (*loaded)++;
            *ok += strcmp (json_string_value (json_object_get (rule, "health")) ?: "", "ok") == 0;
        }
    json_decref (doc);
}

//  "- alert:" entries in the shipped rule file.
static int
s_shipped_alerts (void)
{
    FILE *f = fopen (PROM_RULES, "r");
    cr_assert_not_null (f, "%s", PROM_RULES);
    char line [512];
    int count = 0;
    while (fgets (line, sizeof line, f))
        count += strncmp (line + strspn (line, " "), "- alert:", 8) == 0;
    fclose (f);
    return count;
}

static void
s_stream (sluice_stack_t *s, const char *path, const char *body)
{
    sl_buf_t out = { 0 };
    cr_expect_eq (http_request (s->http_port, "POST", path, body, NULL, &out, S_REQUEST_MS), 200, "%s: %s", path,
                  sl_buf_cstr (&out));
    sl_buf_free (&out);
}

#define S_TOOLS_STREAM "{\"model\":\"mock-tools\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"
#define S_TOOLS_WHOLE "{\"model\":\"mock-tools\",\"max_tokens\":50,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"

Test (prometheus, scrapes_every_process_and_sees_streams_pass, .fini = s_prom_kill, .timeout = 120)
{
    if (access (PROM_BIN, X_OK) != 0)
        cr_skip_test ("%s is not installed (Debian's prometheus; make deps installs it)", PROM_BIN);
    char dir [] = "/tmp/sluice-prom-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    sluice_stack_t *s = stack_start (&(stack_opts_t) {
        .policy = "deploy/policy.yaml", .mock_delay_ms = 1, .audit_spool = "" });
    cr_assert_not_null (s);
    char store [600];
    snprintf (store, sizeof store, "%s/audit", dir);
    const char *store_args [] = { "--data-dir", store, NULL };
    audit_proc_t audit;
    cr_assert (audit_start (s, "audit", store_args, NULL, &audit), "sluice-audit comes up");

    //  The shipped jobs, each pointed at this stack's process of that name.
    struct { const char *job; int port; } ours [] = {
        { "gateway", atoi (s->metrics [5]) }, { "ingest", atoi (s->metrics [1]) },
        { "aggregator", atoi (s->metrics [2]) }, { "judge", atoi (s->metrics [3]) },
        { "emitter", atoi (s->metrics [4]) }, { "audit", audit.metrics_port }, { "mock", s->mock_port },
    };
    size_t ours_count = sizeof ours / sizeof ours [0];
    s_job_t jobs [S_JOBS_MAX];
    int job_count = s_shipped_jobs (jobs, S_JOBS_MAX);
    cr_expect_eq ((size_t) job_count, ours_count, "a job for every process of the stack, and no other");
    sl_buf_t config = { 0 };
    char cwd [512];
    cr_assert_not_null (getcwd (cwd, sizeof cwd));
    sl_buf_printf (&config, "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
                   "rule_files:\n  - %s/%s\nscrape_configs:\n", cwd, PROM_RULES);
    for (int j = 0; j < job_count; j++) {
        int port = 0;
        for (size_t o = 0; o < ours_count; o++)
            if (strcmp (jobs [j].name, ours [o].job) == 0)
                port = ours [o].port;
        cr_expect_gt (port, 0, "the shipped job %s is a process of the stack", jobs [j].name);
        cr_expect_gt (jobs [j].port, 0, "the shipped job %s names its port", jobs [j].name);
        sl_buf_printf (&config, "  - job_name: %s\n    static_configs:\n"
                       "      - targets: ['127.0.0.1:%d']\n        labels: { service: %s }\n",
                       jobs [j].name, port, jobs [j].name);
    }
    cr_assert_eq (harness_write (dir, "prometheus.yml", sl_buf_cstr (&config)), 0);
    sl_buf_free (&config);
    char config_path [600];
    snprintf (config_path, sizeof config_path, "%s/prometheus.yml", dir);
    int port = harness_free_port ();
    s_prom_pid = s_prom_start (dir, config_path, port);
    cr_assert_gt (s_prom_pid, 0);

    //  Every target up.
    int up = -1;
    int64_t until = zclock_mono () + S_UP_MS;
    while ((up = s_targets_up (port)) < job_count && zclock_mono () < until)
        zclock_sleep (S_POLL_MS);
    if (up < job_count) {
        char log [700];
        snprintf (log, sizeof log, "cat '%s/prometheus.log' >&2", dir);
        cr_expect_eq (system (log), 0);
    }
    cr_assert_eq (up, job_count, "every target up (%d of %d)", up, job_count);

    //  A first stream makes the series that exist from their first use
    //  (verdicts by action, tokens by kind); Prometheus holds them before
    //  the next streams, so what those add is an increase it can see.
    s_stream (s, "/v1/chat/completions", S_TOOLS_STREAM);
    cr_expect_geq (s_wait_query (port, "sluice_verdicts_total{job=\"judge\",action=\"block\"}"
                                       " and on () sluice_tokens_total{job=\"gateway\",kind=\"output\"}", 1), 1,
                   "the first stream's verdicts and tokens scraped");
    s_stream (s, "/v1/chat/completions", S_TOOLS_STREAM);
    s_stream (s, "/v1/messages", S_TOOLS_WHOLE);

    cr_expect_eq (s_wait_query (port, "sum(increase(sluice_requests_total{job=\"gateway\"}[1m])) > 0", 1), 1,
                  "requests");
    const char *actions [] = { "block", "allow", NULL };
    cr_expect (s_wait_labels (port, "sum by (action) (increase(sluice_verdicts_total{job=\"judge\"}[1m])) > 0",
                              "action", actions), "verdicts by action");
    const char *kinds [] = { "input", "output", NULL };
    cr_expect (s_wait_labels (port, "sum by (kind) (increase(sluice_tokens_total{job=\"gateway\"}[1m])) > 0",
                              "kind", kinds), "tokens, input and output");
    const char *stages [] = { "gateway", "ingest", "aggregator", "judge", "emitter", NULL };
    cr_expect (s_wait_labels (port, "sum by (job) (increase(sluice_streams_total[1m])) > 0", "job", stages),
               "streams at every stage");
    cr_expect_eq (s_wait_query (port, "increase(mock_streams_total{job=\"mock\"}[1m]) > 0", 1), 1,
                  "streams at the upstream");
    cr_expect_eq (s_wait_query (port, "increase(sluice_audit_records_committed_total{job=\"emitter\"}[1m]) > 0"
                                      " and on () increase(sluice_audit_records_total{job=\"audit\"}[1m]) > 0", 1), 1,
                  "audit records spooled, written and committed");
    //  Hop health: every hop of the pipeline moved, and each is alive and not stalled.
    const char *hops [] = { "ingest", "aggregator", "judge", "emitter", "gateway", NULL };
    cr_expect (s_wait_labels (port, "sum by (hop) (increase(sluice_batches_sent_total[1m])) > 0", "hop", hops),
               "batches sent on every hop");
    cr_expect (s_wait_labels (port, "sluice_hop_alive >= 1", "hop", hops), "every hop has a live instance");
    cr_expect (s_wait_labels (port, "sluice_hop_stalled == 0", "hop", hops), "no hop stalled");
    cr_expect_eq (s_wait_query (port, "sluice_audit_connected{job=\"emitter\"} == 1", 1), 1, "the audit connected");

    //  The shipped rules: all loaded, all evaluating, none pending here.
    int want = s_shipped_alerts (), loaded = 0, ok = 0;
    cr_expect_gt (want, 0);
    until = zclock_mono () + S_WAIT_MS;
    do {
        s_rules (port, &loaded, &ok);
        if (loaded == want && ok == want)
            break;
        zclock_sleep (S_POLL_MS);
    } while (zclock_mono () < until);
    cr_expect_eq (loaded, want, "every rule of %s loaded", PROM_RULES);
    cr_expect_eq (ok, want, "every rule evaluates (health ok): %d of %d", ok, want);
    //  Polled until none: a rule true on a healthy stack stays pending,
    //  while a moment of a loaded machine (a peer declared dead for half
    //  a second) passes.
    size_t alerts = s_wait_count (port, "ALERTS", 0, true);
    cr_expect_eq (alerts, 0, "no alert pending or firing on a healthy stack");

    s_prom_kill ();
    cr_expect_eq (proc_stop (audit.proc, 10000), 0);
    free (audit.proc);
    cr_expect_eq (stack_stop (s), 0);
    char rm [600];
    snprintf (rm, sizeof rm, "rm -rf '%s'", dir);
    cr_expect_eq (system (rm), 0);
}
