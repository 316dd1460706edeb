/*  Integration: sluice-policy backtest over a store real traffic filled.

    A stack under deploy/policy.yaml (rm -rf blocked) records streams of
    mock-tools (a get_weather call and a run_shell "rm -rf /" call each)
    in sluice-audit's SQLite store. While the audit still runs, the
    backtest of a changed policy (get_weather blocked, rm -rf no longer)
    reports exactly those calls newly blocked and newly allowed, per rule,
    team and tool, with their streams; it writes nothing to the store.
    Then what fails must fail: an empty window, a policy that does not
    load, a store that does not exist (never created). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/integration/audit_proc.h"
#include "tests/integration/harness.h"

#define REQ_TOOLS "{\"model\":\"mock-tools\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"tidy up\"}]," \
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\"}}}," \
    "{\"type\":\"function\",\"function\":{\"name\":\"run_shell\",\"parameters\":{\"type\":\"object\"}}}]}"
#define STREAMS 4
#define WAIT_MS 20000

//  What recorded the streams, changed: the weather blocked, rm -rf allowed.
static const char *S_CHANGED =
    "default: allow\n"
    "rules:\n"
    "  - id: no-weather\n"
    "    tool: get_weather\n"
    "    action: block\n";

//  Run sluice-policy with args; its exit status, its output into out.
static int
s_policy (sluice_stack_t *s, const char *label, const char *const *args, sl_buf_t *out)
{
    proc_t *p = proc_start_as (s->dir, "policy", label, args);
    cr_assert_not_null (p, "sluice-policy starts");
    int rc = proc_wait_exit (p, 60000);
    sl_buf_reset (out);
    harness_read (p->log_path, out);
    free (p);
    return rc;
}

//  The JSON object of the output (its line starting with {"policy").
static json_t *
s_json (sl_buf_t *out)
{
    const char *line = strstr (sl_buf_cstr (out), "{\"policy\"");
    cr_assert_not_null (line, "a JSON line in: %s", sl_buf_cstr (out));
    json_error_t err;
    json_t *j = json_loads (line, JSON_DISABLE_EOF_CHECK, &err);
    cr_assert_not_null (j, "%s: %s", err.text, line);
    return j;
}

static json_int_t
s_int (json_t *o, const char *a, const char *b)
{
    json_t *v = json_object_get (o, a);
    if (b)
        v = json_object_get (v, b);
    return json_integer_value (v);
}

Test (backtest, a_changed_policy_over_recorded_traffic, .timeout = 180)
{
    char dir [] = "/tmp/sluice-backtest-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    stack_opts_t opts = { .policy = "deploy/policy.yaml", .mock_delay_ms = 1, .audit_spool = "" };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack comes up");
    const char *store [] = { "--data-dir", dir, NULL };
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store, NULL, &a), "sluice-audit comes up");
    for (int i = 0; i < STREAMS; i++) {
        sl_buf_t body = { 0 };
        cr_assert_eq (http_request (s->http_port, "POST", "/v1/chat/completions", REQ_TOOLS, NULL, &body, 20000),
                      200);
        sl_buf_free (&body);
    }
    cr_assert_eq (audit_wait_streams (&a, "state=ended", STREAMS, WAIT_MS), STREAMS);
    cr_assert_eq (audit_wait_streams (&a, "rule=no-rm-rf&action=block", STREAMS, WAIT_MS), STREAMS);
    cr_assert_eq (harness_write (s->dir, "changed.yaml", S_CHANGED), 0);
    char policy [600];
    snprintf (policy, sizeof policy, "%s/changed.yaml", s->dir);
    char db [128];
    snprintf (db, sizeof db, "%s/audit.db", dir);
    struct stat before;
    cr_assert_eq (stat (db, &before), 0);

    //  The backtest, beside the running audit.
    sl_buf_t out = { 0 };
    const char *args [] = { "backtest", "--policy", policy, "--since", "1h", "--data-dir", dir, "--json", NULL };
    cr_assert_eq (s_policy (s, "backtest", args, &out), 0, "%s", sl_buf_cstr (&out));
    json_t *j = s_json (&out);
    cr_expect_eq (s_int (j, "calls", NULL), 2 * STREAMS, "%s", sl_buf_cstr (&out));
    cr_expect_eq (s_int (j, "changed", "newly_blocked"), STREAMS, "every get_weather call");
    cr_expect_eq (s_int (j, "changed", "newly_allowed"), STREAMS, "every rm -rf call");
    cr_expect_eq (s_int (j, "changed", "rewritten"), 0);
    cr_expect_eq (s_int (j, "changed", "asked"), 0);
    cr_expect_eq (s_int (j, "unchanged", NULL), 0);
    json_t *by_rule = json_object_get (j, "by_rule");
    cr_expect_eq (s_int (json_object_get (by_rule, "no-weather"), "newly_blocked", NULL), STREAMS);
    cr_expect_eq (s_int (json_object_get (by_rule, "(default)"), "newly_allowed", NULL), STREAMS);
    json_t *by_tool = json_object_get (j, "by_tool");
    cr_expect_eq (s_int (json_object_get (by_tool, "run_shell"), "newly_allowed", NULL), STREAMS);
    cr_expect_eq (s_int (json_object_get (by_tool, "get_weather"), "newly_blocked", NULL), STREAMS);
    json_t *examples = json_object_get (j, "examples");
    cr_expect_eq (json_array_size (examples), 2 * STREAMS, "every changed call, under the default 10 a kind");
    json_t *first = json_array_get (examples, 0);
    cr_expect_eq (strlen (json_string_value (json_object_get (first, "sid"))), 32, "a stream id to open");
    json_decref (j);

    //  The same as a person reads it.
    const char *text [] = { "backtest", "--policy", policy, "--since", "1h", "--data-dir", dir, NULL };
    cr_expect_eq (s_policy (s, "backtest-text", text, &out), 0);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "8 calls judged again"), "%s", sl_buf_cstr (&out));

    //  The store is as the audit left it: nothing written by the backtest.
    cr_expect_eq (audit_wait_streams (&a, "state=ended", STREAMS, WAIT_MS), STREAMS);
    cr_expect_eq (audit_wait_streams (&a, "rule=no-rm-rf&action=block", STREAMS, WAIT_MS), STREAMS);

    //  What must fail, fails, saying why.
    const char *empty [] = { "backtest", "--policy", policy, "--since", "2020-01-01", "--until", "2020-01-02",
                             "--data-dir", dir, NULL };
    cr_expect_eq (s_policy (s, "empty", empty, &out), 2);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "no tool call recorded in the window"), "%s",
                        sl_buf_cstr (&out));
    cr_assert_eq (harness_write (s->dir, "broken.yaml", "rules:\n  - id: x\n    action: maybe\n"), 0);
    char broken [600];
    snprintf (broken, sizeof broken, "%s/broken.yaml", s->dir);
    const char *bad [] = { "backtest", "--policy", broken, "--since", "1h", "--data-dir", dir, NULL };
    cr_expect_eq (s_policy (s, "bad-policy", bad, &out), 2);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "the policy does not load"), "%s", sl_buf_cstr (&out));
    char nowhere [600];
    snprintf (nowhere, sizeof nowhere, "%s/nowhere", s->dir);
    const char *none [] = { "backtest", "--policy", policy, "--since", "1h", "--data-dir", nowhere, NULL };
    cr_expect_eq (s_policy (s, "no-store", none, &out), 2);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "no such store"), "%s", sl_buf_cstr (&out));
    struct stat st;
    cr_expect_neq (stat (nowhere, &st), 0, "a missing store is never made");
    sl_buf_free (&out);

    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
    char cmd [160];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}
