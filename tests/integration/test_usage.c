/*  Integration: who called and what it cost, end to end.

    A stack with a keys file of two teams (keys made by the real
    sluice-keys), prices in its routes file, and sluice-audit reading the
    same file. One team's stream reports its usage (the mock's OpenAI
    chunks do); the other's comes from a recording without any, so the
    emitter estimates it. The gateway counts both teams' money; the audit
    records each stream's team, user, usage (estimated or not) and cost,
    answers usage per team, user and model, and filters streams by team
    and user, and projects this month per team and key beside the
    budgets of its own keys file (payments': a micro-dollar, so its
    projection passes it whatever the day); a budget alert posted with
    the gateways' token is listed; the console's Usage page (with the
    projection and the alerts) and its grouped History draw them in a
    real browser (tests/browser/usage.mjs; skipped, with the reason,
    when node, Chromium or playwright-core is missing). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/identity/sl_limits.h"
#include "tests/integration/audit_proc.h"
#include "tests/integration/browser.h"
#include "tests/integration/harness.h"

#define S_WAIT_MS 15000
#define S_NO_USAGE "nousage.sse"        //  a recorded OpenAI stream without a usage chunk
#define S_KEYS_TOKEN "gateways-keys-token-for-usage"

//  A fresh key of team/user from sluice-keys: the key into key, its
//  entry appended to entries.
static void
s_new_key (const char *team, const char *user, char *key, size_t size, sl_buf_t *entries)
{
    const char *bin = getenv ("SLUICE_BIN_DIR");
    char cmd [1024];
    snprintf (cmd, sizeof cmd, "%s/sluice-keys new --team %s --user %s", bin ? bin : "build/asan/bin", team, user);
    FILE *p = popen (cmd, "r");
    cr_assert_not_null (p);
    char line [512];
    cr_assert_not_null (fgets (line, sizeof line, p), "sluice-keys printed a key");
    line [strcspn (line, "\n")] = 0;
    snprintf (key, size, "%s", line);
    while (fgets (line, sizeof line, p))
        sl_buf_puts (entries, line);
    cr_assert_eq (pclose (p), 0);
}

static void
s_write (const char *path, const char *text)
{
    FILE *f = fopen (path, "w");
    cr_assert_not_null (f, "%s", path);
    fputs (text, f);
    fclose (f);
}

//  A streaming OpenAI chat request for model with key; its status.
static int
s_chat (sluice_stack_t *s, const char *key, const char *model)
{
    char auth [160], body [256];
    snprintf (auth, sizeof auth, "Authorization: Bearer %s", key);
    snprintf (body, sizeof body, "{\"model\":\"%s\",\"stream\":true,\"messages\":"
                                 "[{\"role\":\"user\",\"content\":\"How much did this cost?\"}]}", model);
    const char *headers [] = { "Content-Type: application/json", auth, NULL };
    sl_buf_t out = { 0 };
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", body, headers, &out, 20000);
    cr_expect_null (strstr (sl_buf_cstr (&out), "\"usage\""), "no usage the client did not ask for: %s",
                    sl_buf_cstr (&out));
    sl_buf_free (&out);
    return status;
}

//  The one stream /api/streams?<query> lists.
static json_t *
s_stream (const audit_proc_t *a, const char *query)
{
    char path [128];
    snprintf (path, sizeof path, "/api/streams?%s", query);
    json_t *list = audit_get (a, path);
    cr_assert_not_null (list);
    cr_assert_eq (json_array_size (json_object_get (list, "streams")), 1, "one stream for %s", query);
    json_t *stream = json_incref (json_array_get (json_object_get (list, "streams"), 0));
    json_decref (list);
    return stream;
}

static const char *
s_str (json_t *o, const char *name)
{
    const char *v = json_string_value (json_object_get (o, name));
    return v ? v : "(none)";
}

Test (usage, teams_usage_and_cost_reach_the_gateway_the_audit_and_the_console, .timeout = 240)
{
    char dir [] = "/tmp/sluice-usage-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    //  The recording: text, a finish, and no usage (a server that does
    //  not honour stream_options.include_usage).
    char path [300];
    snprintf (path, sizeof path, "%s/" S_NO_USAGE, dir);
    s_write (path, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","
                   "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"This answer reports "
                   "no usage at all, so sluice estimates it.\"},\"finish_reason\":null}]}\n\n"
                   "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","
                   "\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
                   "data: [DONE]\n\n");
    char ada [128], cy [128];
    sl_buf_t keys = { 0 };
    sl_buf_puts (&keys, "keys:\n");
    s_new_key ("payments", "ada", ada, sizeof ada, &keys);
    s_new_key ("search", "cy", cy, sizeof cy, &keys);
    char keys_path [300];
    snprintf (keys_path, sizeof keys_path, "%s/keys.yaml", dir);
    s_write (keys_path, sl_buf_cstr (&keys));
    //  The audit's copy names payments' monthly budget: a micro-dollar.
    char audit_keys [300];
    snprintf (audit_keys, sizeof audit_keys, "%s/audit-keys.yaml", dir);
    sl_buf_t budgets = { 0 };
    sl_buf_printf (&budgets, "teams:\n  - name: payments\n    limits: {budget: {usd: 0.000001}}\n%s", sl_buf_cstr (&keys));
    s_write (audit_keys, sl_buf_cstr (&budgets));
    sl_buf_free (&budgets);
    sl_buf_free (&keys);

    const char *gateway_args [] = { "--keys-file", keys_path, NULL };
    const char *mock_args [] = { "--replay-dir", dir, NULL };
    stack_opts_t opts = {
        .mock_delay_ms = 1, .audit_spool = "", .gateway_args = gateway_args, .mock_args = mock_args,
        .routes_text = HARNESS_MOCK_PROVIDERS
                       "prices:\n  - { model: \"mock-*\", input: 2.5, output: 10 }\n"
    };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    const char *store [] = { "--data-dir", dir, NULL };
    const char *extra [] = { "--routes", s->routes_path, "--keys-file", audit_keys, NULL };
    audit_proc_t a;
    setenv ("SLUICE_KEYS_TOKEN", S_KEYS_TOKEN, 1);
    cr_assert (audit_start (s, "audit", store, extra, &a));
    unsetenv ("SLUICE_KEYS_TOKEN");

    cr_expect_eq (s_chat (s, ada, "mock-text"), 200);
    cr_expect_eq (s_chat (s, cy, "mock-replay/" S_NO_USAGE), 200);
    cr_expect_eq (audit_wait_streams (&a, "state=ended", 2, S_WAIT_MS), 2);

    //  The gateway: money and tokens per team, the estimate counted as one.
    int gw = atoi (s->metrics [5]);
    cr_expect_gt (harness_wait_metric (gw, "sluice_cost_usd_micro_total{team=\"payments\"}", 1, S_WAIT_MS), 0);
    cr_expect_gt (harness_wait_metric (gw, "sluice_cost_usd_micro_total{team=\"search\"}", 1, S_WAIT_MS), 0);
    cr_expect_gt (harness_wait_metric (gw, "sluice_tokens_estimated_total{team=\"search\"}", 1, S_WAIT_MS), 0);
    cr_expect_lt (metric_value (gw, "sluice_tokens_estimated_total{team=\"payments\"}"), 1,
                  "the mock reported payments' usage");

    //  The audit: whose, how much, whether estimated, what it cost.
    json_t *paid = s_stream (&a, "team=payments&user=ada");
    cr_expect_str_eq (s_str (paid, "model"), "mock-text");
    cr_expect (json_is_false (json_object_get (paid, "usage_estimated")));
    json_int_t in = json_integer_value (json_object_get (paid, "usage_in"));
    json_int_t out = json_integer_value (json_object_get (paid, "usage_out"));
    cr_expect_gt (in + out, 0);
    cr_expect_eq (json_integer_value (json_object_get (paid, "cost_usd_micro")),
                  (json_int_t) ((in * 25 + out * 100 + 5) / 10), "2.5 and 10 dollars per million");
    json_decref (paid);
    json_t *guessed = s_stream (&a, "team=search");
    cr_expect_str_eq (s_str (guessed, "user"), "cy");
    cr_expect (json_is_true (json_object_get (guessed, "usage_estimated")));
    cr_expect_gt (json_integer_value (json_object_get (guessed, "usage_in")), 0, "from the request's bytes");
    cr_expect_gt (json_integer_value (json_object_get (guessed, "usage_out")), 0, "from the answer's text");
    cr_expect_gt (json_integer_value (json_object_get (guessed, "cost_usd_micro")), 0);
    json_decref (guessed);
    json_t *usage = audit_get (&a, "/api/usage?group=user");
    cr_assert_not_null (usage);
    char *text = json_dumps (usage, JSON_COMPACT);
    cr_expect_not_null (strstr (text, "\"team\":\"payments\",\"user\":\"ada\",\"requests\":1"), "%s", text);
    cr_expect_not_null (strstr (text, "\"team\":\"search\",\"user\":\"cy\",\"requests\":1"), "%s", text);
    free (text);
    json_decref (usage);

    //  This month, projected: payments past its budget, search without one.
    json_t *month = audit_get (&a, "/api/usage/month");
    cr_assert_not_null (month);
    size_t i;
    json_t *row;
    int teams = 0;
    json_array_foreach (json_object_get (month, "teams"), i, row) {
        const char *team = s_str (row, "team");
        double spent = json_number_value (json_object_get (row, "spent_usd"));
        cr_expect_gt (spent, 0, "%s spent", team);
        cr_expect_geq (json_number_value (json_object_get (row, "projected_month_usd")), spent, "%s", team);
        if (strcmp (team, "payments") == 0) {
            teams++;
            cr_expect_float_eq (json_number_value (json_object_get (row, "budget_usd")), 0.000001, 1e-9);
            cr_expect (json_is_true (json_object_get (row, "over_budget")), "payments past its budget");
        }
        if (strcmp (team, "search") == 0) {
            teams++;
            cr_expect (json_is_null (json_object_get (row, "budget_usd")));
            cr_expect (json_is_false (json_object_get (row, "over_budget")));
        }
    }
    cr_expect_eq (teams, 2);
    cr_expect_eq (json_array_size (json_object_get (month, "keys")), 2, "a row per key");
    json_decref (month);
    //  A budget alert, as a gateway posts it with the keys token.
    char id [SL_LIMITS_ALERT_ID_HEX + 1], alert [768];
    sl_limits_alert_id ("team:payments", "budget_usd", 80, "202612", id);
    snprintf (alert, sizeof alert, "{\"type\":\"limits_alert\",\"id\":\"%s\",\"at\":1796083200000,"
              "\"team\":\"payments\",\"key\":null,\"user\":\"ada\",\"subject\":\"team:payments\","
              "\"limit\":\"budget_usd\",\"threshold\":80,\"used\":8,\"max\":10,\"period\":\"month\","
              "\"window\":\"202612\"}", id);
    const char *post [] = { "Authorization: Bearer " S_KEYS_TOKEN, "Content-Type: application/json", NULL };
    sl_buf_t answer = { 0 };
    cr_expect_eq (http_request (a.console_port, "POST", "/api/alerts", alert, post, &answer, S_WAIT_MS), 201,
                  "%s", sl_buf_cstr (&answer));
    sl_buf_free (&answer);
    json_t *alerts = audit_get (&a, "/api/alerts");
    cr_assert_not_null (alerts);
    cr_expect_eq (json_array_size (json_object_get (alerts, "alerts")), 1);
    json_decref (alerts);

    //  The console, in a browser.
    const char *missing = browser_missing ();
    if (missing)
        cr_log_warn ("the console's usage page is not driven: %s", missing);
    else {
        char console_url [80];
        snprintf (console_url, sizeof console_url, "SLUICE_CONSOLE_URL=http://127.0.0.1:%d/", a.console_port);
        const char *env [] = { console_url, NULL };
        cr_expect (browser_run ("usage.mjs", env, s->dir), "the browser test passed (its output is above)");
    }
    //  The raw keys are in no log of the stack.
    char grep [600];
    snprintf (grep, sizeof grep, "grep -rqF -e '%s' -e '%s' '%s'", ada, cy, s->dir);
    cr_expect_neq (system (grep), 0, "no key in any log");
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}
