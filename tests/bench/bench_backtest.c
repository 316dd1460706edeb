/*  Benchmark: sluice-policy backtest over 1,000,000 recorded tool calls.

    Fills a SQLite store (a file, WAL, as sluice-audit keeps it) with
    BENCH_BACKTEST_CALLS generated calls (default 1,000,000: 100,000
    streams of ten calls, shell commands and file reads of 40 tools, 20
    teams, a tenth of them blocked by the recorded policy), then runs the
    backtest the program runs (sl_calls_open, sl_calls_backtest: the
    store read in pages, each call judged again under a changed policy)
    on one core, and prints the time, the rate and the process's peak
    memory. The store is made once per run in a temporary directory and
    removed after (BENCH_BACKTEST_KEEP=1 keeps it).
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common/policy/sl_backtest.h"
#include "services/audit/store/sl_calls.h"
#include "services/audit/store/sl_store.h"

#define S_DEFAULT_CALLS 1000000
#define S_CALLS_PER_STREAM 10
#define S_TOOLS 40
#define S_TEAMS 20
#define S_T0 1700000000000LL
#define S_BATCH 5000                    //  calls per transaction while filling

static const char *S_OLD =
    "default: allow\n"
    "rules:\n"
    "  - id: no-rm-rf\n"
    "    tool: run_shell\n"
    "    args: [{pointer: /command, regex: 'rm[[:space:]]+-rf'}]\n"
    "    action: block\n";

//  The changed policy: curl blocked too, secrets read asked, a rewrite.
static const char *S_NEW =
    "default: allow\n"
    "rules:\n"
    "  - id: no-rm-rf\n"
    "    tool: run_shell\n"
    "    args: [{pointer: /command, regex: 'rm[[:space:]]+-rf'}]\n"
    "    action: block\n"
    "  - id: no-curl\n"
    "    tool: run_shell\n"
    "    args: [{pointer: /command, regex: '(^|[[:space:]])curl[[:space:]]'}]\n"
    "    action: block\n"
    "  - id: secrets-asked\n"
    "    tool: read_file\n"
    "    args: [{pointer: /path, prefix: /etc/}]\n"
    "    action: ask\n"
    "  - id: tool-7-pinned\n"
    "    tool: tool_7\n"
    "    action: rewrite\n"
    "    set: {/region: eu}\n";

static double
s_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double
s_cpu (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int
s_fill (sl_store_t *store, long calls)
{
    char id [SL_POLICY_ID_SIZE];
    char *error = NULL;
    sl_policy_t *old = sl_policy_parse (S_OLD, strlen (S_OLD), "old.yaml", &error);
    if (!old)
        return -1;
    snprintf (id, sizeof id, "%s", sl_policy_id (old));
    sl_policy_unref (&old);
    sl_val_t pol [] = { sl_val_text (id), sl_val_text (S_OLD) };
    if (sl_store_exec (store, "INSERT INTO policies (judge, policy, name, source, first_seen, last_seen) "
                       "VALUES ('bench', $1, 'old.yaml', $2, 0, 0)", pol, 2, NULL))
        return -1;
    char sid [40], args [160], tool [32], team [32];
    for (long i = 0; i < calls; i++) {
        if (i % S_BATCH == 0 && sl_store_begin (store))
            return -1;
        long stream = i / S_CALLS_PER_STREAM;
        snprintf (sid, sizeof sid, "%032lx", stream);
        snprintf (team, sizeof team, "team-%ld", stream % S_TEAMS);
        if (i % S_CALLS_PER_STREAM == 0) {
            sl_val_t s [] = { sl_val_text (sid), sl_val_int (S_T0 + i), sl_val_text ("gpt-4o"),
                              sl_val_text ("clean up the build and publish it"), sl_val_text (team),
                              sl_val_text (id) };
            if (sl_store_exec (store, "INSERT INTO streams (sid, started_at, model, last_user, team, policy) "
                               "VALUES ($1, $2, $3, $4, $5, $6)", s, 6, NULL))
                return -1;
        }
        const char *action = "allow", *rule = NULL;
        switch (i % 10) {
            case 0:
                snprintf (tool, sizeof tool, "run_shell");
                snprintf (args, sizeof args, "{\"command\":\"rm -rf build/%ld\"}", i);
                action = "block", rule = "no-rm-rf";
                break;
            case 1: case 2:
                snprintf (tool, sizeof tool, "run_shell");
                snprintf (args, sizeof args, "{\"command\":\"curl https://example.com/%ld\"}", i);
                break;
            case 3:
                snprintf (tool, sizeof tool, "read_file");
                snprintf (args, sizeof args, "{\"path\":\"/etc/hosts.%ld\"}", i);
                break;
            default:
                snprintf (tool, sizeof tool, "tool_%ld", i % S_TOOLS);
                snprintf (args, sizeof args, "{\"path\":\"src/file_%ld.c\",\"lines\":[1,%ld]}", i, i % 500);
        }
        sl_val_t v [] = { sl_val_text (sid), sl_val_int (i % S_CALLS_PER_STREAM), sl_val_text (tool),
                          sl_val_text (action), sl_val_text (args), sl_val_int (S_T0 + i), sl_val_text (rule),
                          sl_val_text (rule ? "ran" : "default") };
        if (sl_store_exec (store, "INSERT INTO verdicts (sid, seq, side, tool, action, checked, rule, arguments, at) "
                           "VALUES ($1, $2, 'response', $3, $4, $8, $7, $5, $6)", v, 8, NULL))
            return -1;
        if ((i % S_BATCH == S_BATCH - 1 || i == calls - 1) && sl_store_commit (store))
            return -1;
    }
    return 0;
}

int
main (void)
{
    long calls = getenv ("BENCH_BACKTEST_CALLS") ? atol (getenv ("BENCH_BACKTEST_CALLS")) : S_DEFAULT_CALLS;
    if (calls <= 0)
        calls = S_DEFAULT_CALLS;
    char dir [] = "/tmp/sluice-bench-backtest-XXXXXX";
    if (!mkdtemp (dir))
        return 1;
    char path [128];
    snprintf (path, sizeof path, "%s/audit.db", dir);
    char *error = NULL;
    sl_store_t *writer = sl_store_open (path, &error);
    if (!writer) {
        fprintf (stderr, "bench_backtest: %s\n", error);
        return 1;
    }
    double t0 = s_now ();
    if (s_fill (writer, calls)) {
        fprintf (stderr, "bench_backtest: filling the store: %s\n", sl_store_error (writer));
        return 1;
    }
    sl_store_close (&writer);
    printf ("backtest: store of %ld recorded calls filled in %.1f s\n", calls, s_now () - t0);

    sl_policy_t *policy = sl_policy_parse (S_NEW, strlen (S_NEW), "new.yaml", &error);
    sl_store_t *store = policy ? sl_calls_open (path, &error) : NULL;
    if (!store) {
        fprintf (stderr, "bench_backtest: %s\n", error);
        return 1;
    }
    sl_backtest_t *b = sl_backtest_new (policy, SL_BACKTEST_DEFAULT_EXAMPLES);
    sl_calls_filter_t all = { .from = S_T0, .to = S_T0 + calls };
    double w0 = s_now (), c0 = s_cpu ();
    int64_t judged = sl_calls_backtest (store, &all, b);
    double wall = s_now () - w0, cpu = s_cpu () - c0;
    struct rusage ru;
    getrusage (RUSAGE_SELF, &ru);
    int rc = judged == calls ? 0 : 1;
    printf ("backtest: %lld calls judged again in %.1f s (%.1f s CPU, one core): %.0f calls/s; peak RSS %ld MiB\n",
            (long long) judged, wall, cpu, judged / (wall > 0 ? wall : 1), ru.ru_maxrss / 1024);
    printf ("backtest: newly_blocked %lld, newly_allowed %lld, rewritten %lld, asked %lld, unchanged %lld\n",
            (long long) sl_backtest_count (b, SL_BACKTEST_NEWLY_BLOCKED),
            (long long) sl_backtest_count (b, SL_BACKTEST_NEWLY_ALLOWED),
            (long long) sl_backtest_count (b, SL_BACKTEST_REWRITTEN),
            (long long) sl_backtest_count (b, SL_BACKTEST_ASKED), (long long) sl_backtest_count (b, SL_BACKTEST_SAME));
    //  The generated mix: 2 in 10 curl calls newly blocked, 1 in 10 asked,
    //  tool_7 rewritten (1 in 40 of the rest).
    if (sl_backtest_count (b, SL_BACKTEST_NEWLY_BLOCKED) != calls / 10 * 2
        || sl_backtest_count (b, SL_BACKTEST_ASKED) != calls / 10) {
        fprintf (stderr, "bench_backtest: the counts are not the generated mix's\n");
        rc = 1;
    }
    sl_backtest_destroy (&b);
    sl_store_close (&store);
    sl_policy_unref (&policy);
    if (!getenv ("BENCH_BACKTEST_KEEP")) {
        char cmd [160];
        snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system (cmd) != 0)
            rc = 1;
    }
    else
        printf ("backtest: the store is kept in %s\n", path);
    return rc;
}
