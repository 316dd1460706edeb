/*  Integration: rules in shadow mode on real streams. Recorded provider
    streams (../shared/corpus, or $SLUICE_CORPUS; the test is skipped
    without them) are replayed by the mock through two stacks: one whose
    policy has the enforcing rules alone, one with shadow rules beside
    them that would block, drop and terminate the calls of those streams.
    The clients of both get the same bytes; the second records the
    would-be verdicts: on the taps (mode shadow), in the judge's metrics
    (mode="shadow"), and in sluice-audit (side shadow, not counted as the
    stream's calls or blocks), whose GET /api/shadow answers them per
    rule. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proto/sl_msg.h"
#include "tests/integration/audit_proc.h"
#include "tests/integration/harness.h"
#include "tests/integration/verdict_tap.h"

#define S_WAIT_MS 20000
#define S_CORPUS_DEFAULT "../shared/corpus"

//  The enforcing rules: none of them concerns the recorded calls' tools.
#define S_ENFORCING \
    "default: allow\n" \
    "rules:\n" \
    "  - {id: no-rm-rf, tool: run_shell, args: [{pointer: /command, regex: 'rm[[:space:]]+-rf'}], " \
    "action: block}\n"
#define S_SHADOW \
    S_ENFORCING \
    "  - {id: no-weather, mode: shadow, tool: get_weather, action: block}\n" \
    "  - {id: no-stocks, mode: shadow, tool: get_stock_price, args: [{pointer: /ticker, exists: true}], " \
    "action: terminate}\n"

typedef struct {
    const char *path;                   //  the client's endpoint
    const char *recording;              //  under the corpus
} s_case_t;

static const s_case_t s_cases [] = {
    { "/v1/chat/completions", "openai-chat/openai-chat-single-tool-call.sse" },
    { "/v1/chat/completions", "openai-chat/openai-chat-parallel-tool-calls.sse" },
    { "/v1/messages", "anthropic/anthropic-text-then-tool-use.sse" },
    { "/v1/chat/completions", "openai-chat/openai-chat-text-usage.sse" },
};
#define S_CASES (sizeof s_cases / sizeof s_cases [0])

//  Every recording through the stack; each client's bytes into out.
static void
s_run (sluice_stack_t *s, sl_buf_t out [S_CASES])
{
    for (size_t i = 0; i < S_CASES; i++) {
        char body [512];
        snprintf (body, sizeof body, "{\"model\":\"mock-replay/%s\",\"stream\":true,\"max_tokens\":256,"
                                     "\"messages\":[{\"role\":\"user\",\"content\":\"What now?\"}]}",
                  s_cases [i].recording);
        const char *headers [] = { "Content-Type: application/json", "anthropic-version: 2023-06-01", NULL };
        cr_expect_eq (http_request (s->http_port, "POST", s_cases [i].path, body, headers, &out [i], S_WAIT_MS),
                      200, "%s: %s", s_cases [i].recording, sl_buf_cstr (&out [i]));
    }
}

static sluice_stack_t *
s_stack (const char *policy, const char *corpus)
{
    const char *mock_args [] = { "--replay-dir", corpus, NULL };
    stack_opts_t opts = { .policy_text = policy, .mock_delay_ms = 1, .mock_args = mock_args, .audit_spool = "" };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    return s;
}

static int
s_count (const verdict_tap_t *tap, int mode, const char *rule, int action)
{
    int n = 0;
    for (int i = 0; i < tap->count; i++) {
        const sl_msg_t *v = tap->verdicts [i];
        if (v->mode == mode && (!rule || sl_str_eq (v->rule, rule)) && (!action || v->action == action))
            n++;
    }
    return n;
}

Test (shadow, would_be_blocks_on_real_streams_change_no_byte, .timeout = 180)
{
    const char *dir = getenv ("SLUICE_CORPUS");
    char corpus [PATH_MAX] = "";
    if (!realpath (dir && *dir ? dir : S_CORPUS_DEFAULT, corpus))
        cr_skip_test ("no recorded streams at %s", dir && *dir ? dir : S_CORPUS_DEFAULT);

    //  Without the shadow rules.
    sl_buf_t plain [S_CASES] = { { 0 } }, shadow [S_CASES] = { { 0 } };
    sluice_stack_t *s = s_stack (S_ENFORCING, corpus);
    s_run (s, plain);
    cr_expect_eq (stack_stop (s), 0);

    //  With them, a tap and the audit watching.
    s = s_stack (S_SHADOW, corpus);
    char data [600];
    snprintf (data, sizeof data, "%s/audit-data", s->dir);
    const char *store [] = { "--data-dir", data, NULL };
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store, NULL, &a));
    verdict_tap_t *tap = verdict_tap_open (s);
    s_run (s, shadow);

    for (size_t i = 0; i < S_CASES; i++) {
        cr_expect_gt (plain [i].len, 0);
        cr_expect (plain [i].len == shadow [i].len && memcmp (plain [i].data, shadow [i].data, plain [i].len) == 0,
                   "%s: the client gets the same bytes with the shadow rules\n--- without:\n%s\n--- with:\n%s",
                   s_cases [i].recording, sl_buf_cstr (&plain [i]), sl_buf_cstr (&shadow [i]));
    }
    cr_expect_not_null (strstr (sl_buf_cstr (&shadow [0]), "get_weather"), "the call reached the client");

    //  Four calls judged (get_weather twice, GetWeatherArgs, get_stock_price
    //  with a ticker), each allowed; three of them with a would-be verdict.
    cr_expect_geq (verdict_tap_wait (tap, 7, S_WAIT_MS), 7);
    cr_expect_eq (s_count (tap, SL_MODE_SHADOW, "no-weather", SL_ACT_BLOCK), 2);
    cr_expect_eq (s_count (tap, SL_MODE_SHADOW, "no-stocks", SL_ACT_TERMINATE), 1);
    cr_expect_eq (s_count (tap, SL_MODE_SHADOW, NULL, 0), 3, "nothing else would have been decided");
    cr_expect_eq (s_count (tap, SL_MODE_ENFORCE, NULL, SL_ACT_ALLOW), 4, "what was enforced: allow");
    int judge = atoi (s->metrics [3]);
    cr_expect_eq (harness_wait_metric (judge, "sluice_verdicts_total{action=\"block\",check=\"ran\","
                                              "mode=\"shadow\",team=\"default\"}", 2, S_WAIT_MS), 2);
    cr_expect_eq (metric_value (judge, "sluice_verdicts_total{action=\"block\",check=\"ran\",team=\"default\"}"),
                  0, "no enforced block");

    //  The audit: the would-be verdicts per rule, not counted as blocks.
    cr_expect_geq (audit_wait_streams (&a, "state=ended", (int) S_CASES, S_WAIT_MS), (int) S_CASES);
    json_t *all = NULL;
    for (int tries = 0; tries < 100; tries++) {
        json_decref (all);
        all = audit_get (&a, "/api/shadow?since=1h");
        cr_assert_not_null (all);
        if (json_array_size (json_object_get (all, "calls")) >= 3)
            break;
        usleep (100000);
    }
    json_t *rules = json_object_get (all, "rules");
    cr_assert_eq (json_array_size (rules), 2, "%s", json_dumps (all, 0));
    json_t *first = json_array_get (rules, 0);
    cr_expect_str_eq (json_string_value (json_object_get (first, "rule")), "no-weather");
    cr_expect_eq (json_integer_value (json_object_get (first, "would_block")), 2);
    cr_expect_eq (json_array_size (json_object_get (all, "streams")), 3);
    json_decref (all);
    json_t *one = audit_get (&a, "/api/shadow?rule=no-stocks&since=1h");
    cr_assert_not_null (one);
    cr_assert_eq (json_array_size (json_object_get (one, "calls")), 1);
    json_t *call = json_array_get (json_object_get (one, "calls"), 0);
    cr_expect_str_eq (json_string_value (json_object_get (call, "tool")), "get_stock_price");
    cr_expect_str_eq (json_string_value (json_object_get (call, "action")), "terminate");
    cr_expect_gt (json_array_size (json_object_get (one, "over_time")), 0);
    json_decref (one);
    json_t *blocked = audit_get (&a, "/api/streams?state=blocked");
    cr_assert_not_null (blocked);
    cr_expect_eq (json_array_size (json_object_get (blocked, "streams")), 0, "a would-be block blocks no stream");
    json_decref (blocked);
    json_t *bad = audit_get (&a, "/api/shadow?since=yesterday-ish");
    cr_expect_null (bad, "a since that is not a time is refused");
    json_decref (bad);

    verdict_tap_close (tap);
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
    for (size_t i = 0; i < S_CASES; i++) {
        sl_buf_free (&plain [i]);
        sl_buf_free (&shadow [i]);
    }
}
