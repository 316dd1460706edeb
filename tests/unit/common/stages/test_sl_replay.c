/*  Unit tests: common/stages/sl_replay (the stages in one process). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/stages/sl_emitter.h"
#include "common/stages/sl_replay.h"

static void
s_collect (void *arg, const char *data, size_t size)
{
    sl_buf_append ((sl_buf_t *) arg, data, size);
}

//  A short OpenAI capture: text, one call, finish, usage, [DONE].
static const char *s_capture =
    "data: {\"id\":\"c1\",\"model\":\"gpt\",\"created\":5,\"choices\":[{\"index\":0,"
        "\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\r\n\r\n"
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi \"}}]}\n\n"
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"there\"}}]}\n\n"
    ": a comment\n\n"
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
        "\"id\":\"call_1\",\"function\":{\"name\":\"run_shell\",\"arguments\":\"\"}}]}}]}\n\n"
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,"
        "\"function\":{\"arguments\":\"{\\\"command\\\":\\\"rm -rf /\\\"}\"}}]}}]}\n\n"
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
    "data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,"
        "\"total_tokens\":7}}\n\n"
    "data: [DONE]\n\n";

static const char *s_expected =
    "{\"kind\":\"text\",\"index\":0,\"text\":\"Hi there\"}\n"
    "{\"kind\":\"tool_call\",\"index\":1,\"id\":\"call_1\",\"name\":\"run_shell\","
        "\"arguments\":\"{\\\"command\\\":\\\"rm -rf /\\\"}\",\"args_valid\":true,\"repaired\":false}\n"
    "{\"finish\":\"tool_calls\",\"finish_raw\":\"tool_calls\",\"usage\":{\"input\":3,\"output\":4,\"total\":7}}\n";

//  Run a capture fed in pieces of `step` bytes (0: at once); returns the
//  result of the last call.
static int
s_run (const sl_replay_opts_t *opts, const char *input, size_t len, size_t step, sl_buf_t *out)
{
    const char *why = NULL;
    sl_replay_t *r = sl_replay_new (opts, s_collect, out, &why);
    cr_assert_not_null (r, "%s", why);
    int rc = 0;
    for (size_t at = 0; at < len && rc == 0;) {
        size_t n = step && len - at > step ? step : len - at;
        rc = sl_replay_feed (r, input + at, n);
        at += n;
    }
    if (rc == 0)
        rc = sl_replay_finish (r);
    cr_expect_eq (sl_replay_finish (r), rc, "finish twice gives the same answer");
    sl_replay_destroy (&r);
    sl_replay_destroy (&r);
    return rc;
}

Test (sl_replay, blocks_then_finish)
{
    sl_replay_opts_t opts = { .dialect = SL_DIALECT_OPENAI };
    sl_buf_t out = { 0 };
    cr_expect_eq (s_run (&opts, s_capture, strlen (s_capture), 0, &out), 0);
    cr_expect_str_eq (sl_buf_cstr (&out), s_expected);
    sl_buf_free (&out);
}

Test (sl_replay, any_split_of_the_bytes_gives_the_same_output)
{
    sl_replay_opts_t opts = { .dialect = SL_DIALECT_OPENAI };
    for (size_t step = 1; step <= 17; step++) {
        sl_buf_t out = { 0 };
        cr_expect_eq (s_run (&opts, s_capture, strlen (s_capture), step, &out), 0);
        cr_expect_str_eq (sl_buf_cstr (&out), s_expected, "pieces of %zu bytes", step);
        sl_buf_free (&out);
    }
}

Test (sl_replay, jsonl_is_detected_and_forced)
{
    const char *jsonl =
        "\xEF\xBB\xBF  {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"A\"}}]}\r\n"
        "\n"
        "{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"B\"},\"finish_reason\":\"stop\"}]}";
    const char *expected =
        "{\"kind\":\"text\",\"index\":0,\"text\":\"AB\"}\n"
        "{\"finish\":\"stop\",\"finish_raw\":\"stop\",\"usage\":{}}\n";
    for (int forced = 0; forced < 2; forced++) {
        sl_replay_opts_t opts = { .dialect = SL_DIALECT_OPENAI,
                                  .input = forced ? SL_REPLAY_INPUT_JSONL : SL_REPLAY_INPUT_AUTO };
        //  A forced JSONL input does not strip a byte order mark.
        const char *in = forced ? jsonl + 3 : jsonl;
        for (size_t step = 0; step < 6; step += 5) {
            sl_buf_t out = { 0 };
            cr_expect_eq (s_run (&opts, in, strlen (in), step, &out), 0);
            cr_expect_str_eq (sl_buf_cstr (&out), expected, "forced %d step %zu", forced, step);
            sl_buf_free (&out);
        }
    }
}

Test (sl_replay, json_array_input)
{
    const char *json =
        "[{\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"A\"}}]},\n"
        " {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}]";
    sl_replay_opts_t opts = { .dialect = SL_DIALECT_OPENAI };
    sl_buf_t out = { 0 };
    cr_expect_eq (s_run (&opts, json, strlen (json), 7, &out), 0);
    cr_expect_str_eq (sl_buf_cstr (&out),
        "{\"kind\":\"text\",\"index\":0,\"text\":\"A\",\"incomplete\":true}\n"
        "{\"finish\":\"length\",\"finish_raw\":\"length\",\"usage\":{}}\n");
    sl_buf_free (&out);
}

Test (sl_replay, malformed_input_writes_an_error_line)
{
    const char *bad [] = {
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"A\"}}]}\n\ndata: {not json\n\n",
        "{\"choices\":[]}\n[1,2]\n",
        "[{\"choices\":[]},",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        sl_replay_opts_t opts = { .dialect = SL_DIALECT_OPENAI };
        sl_buf_t out = { 0 };
        cr_expect_eq (s_run (&opts, bad [i], strlen (bad [i]), 0, &out), -2, "input %zu", i);
        const char *text = sl_buf_cstr (&out);
        cr_expect (strncmp (text + out.len - 1, "\n", 1) == 0);
        cr_expect_not_null (strstr (text, "{\"error\":\"malformed input: "), "input %zu: %s", i, text);
        cr_expect_null (strstr (text, "\"finish\""), "no finish line after malformed input");
        sl_buf_free (&out);
    }
}

Test (sl_replay, a_line_over_the_limit_is_malformed)
{
    sl_replay_opts_t opts = { .dialect = SL_DIALECT_OPENAI, .max_event = 64 };
    char big [200];
    memset (big, 'x', sizeof big);
    memcpy (big, "data: ", 6);
    sl_buf_t out = { 0 };
    cr_expect_eq (s_run (&opts, big, sizeof big, 50, &out), -2);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "size limit"), "%s", sl_buf_cstr (&out));
    sl_buf_free (&out);
}

Test (sl_replay, an_upstream_error_is_not_malformed_input)
{
    const char *capture =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Partial\"}}]}\n\n"
        "event: error\ndata: {\"error\":{\"type\":\"server_error\",\"message\":\"boom\"}}\n\n";
    sl_replay_opts_t opts = { .dialect = SL_DIALECT_OPENAI };
    sl_buf_t out = { 0 };
    cr_expect_eq (s_run (&opts, capture, strlen (capture), 0, &out), 0);
    cr_expect_str_eq (sl_buf_cstr (&out),
        "{\"kind\":\"text\",\"index\":0,\"text\":\"Partial\",\"incomplete\":true}\n"
        "{\"finish\":\"error\",\"finish_raw\":null,\"usage\":{},"
        "\"error\":{\"code\":\"server_error\",\"message\":\"boom\",\"status\":500}}\n");
    sl_buf_free (&out);
}

Test (sl_replay, a_capture_that_stops_short_ends_with_an_error)
{
    sl_replay_opts_t opts = { .dialect = SL_DIALECT_OPENAI };
    sl_buf_t out = { 0 };
    cr_expect_eq (s_run (&opts, "", 0, 0, &out), 0);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "\"code\":\"upstream_incomplete\""), "%s",
                        sl_buf_cstr (&out));
    sl_buf_free (&out);
}

Test (sl_replay, policy_verdicts_and_replaced_calls)
{
    const char *yaml =
        "rules:\n"
        "  - id: no-rm-rf\n"
        "    tool: run_shell\n"
        "    args:\n"
        "      - pointer: /command\n"
        "        regex: 'rm[[:space:]]+-[a-zA-Z]*[rf]'\n"
        "    action: block\n"
        "    message: \"blocked {tool} ({rule})\"\n";
    char *error = NULL;
    sl_policy_t *policy = sl_policy_parse (yaml, strlen (yaml), "test", &error);
    cr_assert_not_null (policy, "%s", error);
    sl_replay_opts_t opts = { .dialect = SL_DIALECT_OPENAI, .policy = policy };
    sl_buf_t out = { 0 };
    cr_expect_eq (s_run (&opts, s_capture, strlen (s_capture), 0, &out), 0);
    sl_policy_unref (&policy);
    cr_expect_str_eq (sl_buf_cstr (&out),
        "{\"kind\":\"text\",\"index\":0,\"text\":\"Hi there\"}\n"
        "{\"verdict\":{\"index\":1,\"id\":\"call_1\",\"name\":\"run_shell\",\"action\":\"block\","
            "\"check\":\"ran\",\"rule\":\"no-rm-rf\",\"reason\":\"rule no-rm-rf matched\"}}\n"
        "{\"kind\":\"text\",\"index\":1,\"text\":\"\\n\\nblocked run_shell (no-rm-rf)\",\"replaced\":true}\n"
        "{\"finish\":\"stop\",\"finish_raw\":null,\"usage\":{\"input\":3,\"output\":4,\"total\":7}}\n");
    sl_buf_free (&out);
}

Test (sl_replay, render_openai_gives_the_client_bytes)
{
    sl_replay_opts_t opts = { .dialect = SL_DIALECT_OPENAI, .render = SL_DIALECT_OPENAI };
    sl_buf_t out = { 0 };
    cr_expect_eq (s_run (&opts, s_capture, strlen (s_capture), 3, &out), 0);
    const char *text = sl_buf_cstr (&out);
    cr_expect_not_null (strstr (text, "\"content\":\"Hi \""), "%s", text);
    cr_expect_not_null (strstr (text, "\"name\":\"run_shell\""));
    cr_expect_not_null (strstr (text, "\"finish_reason\":\"tool_calls\""));
    cr_expect_not_null (strstr (text, "\"usage\":{\"prompt_tokens\":3"));
    cr_expect_eq (strcmp (text + out.len - strlen ("data: [DONE]\n\n"), "data: [DONE]\n\n"), 0);
    sl_buf_free (&out);
}

Test (sl_replay, every_dialect_decodes_and_renders_its_own)
{
    cr_expect_not (sl_replay_can_decode (0));
    for (int d = SL_DIALECT_OPENAI; d < SL_DIALECT_MAX; d++) {
        cr_expect (sl_replay_can_decode (d) == !!sl_dialect_get (d), "dialect %d has a decoder", d);
        //  An upstream-only dialect's clients are its format's.
        if (!sl_dialect_is_client (sl_dialect_get (d)))
            continue;
        cr_expect (sl_emitter_can_render (d), "dialect %d has a renderer", d);
        const char *why = NULL;
        sl_replay_opts_t opts = { .dialect = d, .render = d };
        sl_replay_t *r = sl_replay_new (&opts, s_collect, NULL, &why);
        cr_expect_not_null (r, "dialect %d: %s", d, why);
        sl_replay_destroy (&r);
    }
    const char *why = NULL;
    sl_replay_opts_t opts = { .dialect = 0 };
    cr_expect_null (sl_replay_new (&opts, s_collect, NULL, &why));
    cr_expect_not_null (strstr (why, "no decoder"), "%s", why);
    opts = (sl_replay_opts_t) { .dialect = SL_DIALECT_OPENAI, .render = SL_DIALECT_MAX };
    cr_expect_null (sl_replay_new (&opts, s_collect, NULL, &why));
    cr_expect_not_null (strstr (why, "no renderer"), "%s", why);
}

Test (sl_replay, a_capture_renders_for_a_client_of_any_dialect)
{
    //  The services translate a stream for a client of another dialect,
    //  and so does the replay: every pair renders.
    for (int from = SL_DIALECT_OPENAI; from < SL_DIALECT_MAX; from++)
        for (int to = SL_DIALECT_OPENAI; to < SL_DIALECT_MAX; to++) {
            if (!sl_dialect_get (from) || !sl_dialect_is_client (sl_dialect_get (to)))
                continue;
            const char *why = NULL;
            sl_buf_t out = { 0 };
            sl_replay_opts_t opts = { .dialect = from, .render = to };
            sl_replay_t *r = sl_replay_new (&opts, s_collect, &out, &why);
            cr_expect_not_null (r, "%d rendered as %d: %s", from, to, why ? why : "");
            sl_replay_destroy (&r);
            sl_buf_free (&out);
        }
}

Test (sl_replay, the_snapshot_holds_the_final_message)
{
    sl_replay_opts_t opts = { .dialect = SL_DIALECT_OPENAI };
    sl_buf_t out = { 0 };
    const char *why = NULL;
    sl_replay_t *r = sl_replay_new (&opts, s_collect, &out, &why);
    cr_assert_not_null (r);
    cr_expect_eq (sl_replay_feed (r, s_capture, strlen (s_capture)), 0);
    cr_expect_eq (sl_replay_finish (r), 0);
    const sl_snapshot_t *snap = sl_replay_snapshot (r);
    cr_assert_not_null (snap);
    cr_expect (sl_str_eq (sl_snapshot_id (snap), "c1"));
    cr_expect (sl_str_eq (sl_snapshot_model (snap), "gpt"));
    cr_expect_eq (sl_snapshot_count (snap), 2);
    cr_expect (sl_snapshot_ended (snap));
    cr_expect_str_eq (sl_replay_error (r), "");
    sl_replay_destroy (&r);
    sl_buf_free (&out);
}

Test (sl_replay, an_llm_judge_rule_is_recorded_as_not_run)
{
    //  No network in a replay: the judge is not asked, the check is an
    //  error (never "ran"), and the rule's on_error action is taken.
    const char *yaml =
        "rules:\n"
        "  - id: ask-about-shell\n"
        "    tool: run_shell\n"
        "    llm_judge:\n"
        "      url: http://127.0.0.1:9/v1/chat/completions\n"
        "      model: judge-m\n"
        "      on_error: %s\n"
        "    action: block\n"
        "    message: \"held: {reason}\"\n";
    const char *fail_modes [] = { "block", "allow" };
    for (int i = 0; i < 2; i++) {
        char text [512];
        snprintf (text, sizeof text, yaml, fail_modes [i]);
        char *error = NULL;
        sl_policy_t *policy = sl_policy_parse (text, strlen (text), "test", &error);
        cr_assert_not_null (policy, "%s", error);
        sl_replay_opts_t opts = { .dialect = SL_DIALECT_OPENAI, .policy = policy };
        sl_buf_t out = { 0 };
        cr_expect_eq (s_run (&opts, s_capture, strlen (s_capture), 0, &out), 0);
        sl_policy_unref (&policy);
        const char *got = sl_buf_cstr (&out);
        char verdict [512];
        snprintf (verdict, sizeof verdict,
                  "{\"verdict\":{\"index\":1,\"id\":\"call_1\",\"name\":\"run_shell\",\"action\":\"%s\","
                  "\"check\":\"error\",\"rule\":\"ask-about-shell\",\"reason\":\"LLM judge judge-m failed: "
                  "sluice-replay makes no network calls, so the judge was not asked; on_error: %s\","
                  "\"judge_model\":\"judge-m\"}}\n", fail_modes [i], fail_modes [i]);
        cr_expect_not_null (strstr (got, verdict), "%s", got);
        if (i == 0)
            cr_expect_not_null (strstr (got, "\"text\":\"\\n\\nheld: LLM judge judge-m failed: "), "%s", got);
        else
            cr_expect_not_null (strstr (got, "\"kind\":\"tool_call\""), "%s", got);
        sl_buf_free (&out);
    }
}

Test (sl_replay, an_ask_rule_blocks_offline)
{
    //  Nobody to ask in a replay: the call is blocked, check error, even
    //  when the rule would let it run on a timeout.
    const char *yaml = "rules:\n  - id: ask-shell\n    tool: run_shell\n    action: ask\n"
                       "    ask: {on_timeout: allow}\n";
    char *error = NULL;
    sl_policy_t *policy = sl_policy_parse (yaml, strlen (yaml), "test", &error);
    cr_assert_not_null (policy, "%s", error);
    sl_replay_opts_t opts = { .dialect = SL_DIALECT_OPENAI, .policy = policy };
    sl_buf_t out = { 0 };
    cr_expect_eq (s_run (&opts, s_capture, strlen (s_capture), 0, &out), 0);
    sl_policy_unref (&policy);
    const char *got = sl_buf_cstr (&out);
    cr_expect_not_null (strstr (got, "\"action\":\"block\",\"check\":\"error\",\"rule\":\"ask-shell\","
                                     "\"reason\":\"not decided: sluice-replay asks nobody"), "%s", got);
    cr_expect_null (strstr (got, "\"kind\":\"tool_call\""), "%s", got);
    sl_buf_free (&out);
}

Test (sl_replay, the_request_behind_a_capture_reaches_the_judge)
{
    //  Model and tool definitions, as the gateway would pass them on.
    const char *yaml =
        "rules:\n"
        "  - id: model\n"
        "    model: gpt-x\n"
        "    tool: other\n"
        "    action: drop\n"
        "  - id: schema\n"
        "    schema_violation: true\n"
        "    action: block\n";
    char *error = NULL;
    sl_policy_t *policy = sl_policy_parse (yaml, strlen (yaml), "test", &error);
    cr_assert_not_null (policy, "%s", error);
    const char *tools [] = {
        "[{\"name\":\"run_shell\",\"schema\":{\"type\":\"object\",\"properties\":"
            "{\"command\":{\"type\":\"string\"}},\"required\":[\"command\"]}}]",
        "[{\"name\":\"run_shell\",\"schema\":{\"type\":\"object\",\"properties\":"
            "{\"command\":{\"type\":\"integer\"}}}}]",
    };
    const char *expected [] = { "\"action\":\"allow\",\"check\":\"default\"",
                                "\"action\":\"block\",\"check\":\"ran\",\"rule\":\"schema\"" };
    for (int i = 0; i < 2; i++) {
        sl_replay_opts_t opts = { .dialect = SL_DIALECT_OPENAI, .policy = policy,
                                  .model = sl_str ("gpt-x"), .tools = sl_str (tools [i]) };
        sl_buf_t out = { 0 };
        cr_expect_eq (s_run (&opts, s_capture, strlen (s_capture), 0, &out), 0);
        cr_expect_not_null (strstr (sl_buf_cstr (&out), expected [i]), "%d: %s", i, sl_buf_cstr (&out));
        sl_buf_free (&out);
    }
    sl_policy_unref (&policy);
}
