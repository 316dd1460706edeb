/*  Unit tests: services/mock/sl_mock_script. The scripts are decoded with
    the project's own SSE parser and decoders, so the mock and the ingest
    agree on every dialect's format. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"
#include "common/stages/sl_agg.h"
#include "common/dialects/sl_decoder.h"
#include "common/dialects/sl_dialect.h"
#include "common/http/sl_sse.h"
#include "services/mock/sl_mock_script.h"
#include "tests/unit/script_sink.h"

static const int s_dialects [] = {
    SL_DIALECT_OPENAI, SL_DIALECT_ANTHROPIC, SL_DIALECT_RESPONSES, SL_DIALECT_GEMINI
};
#define DIALECTS (sizeof s_dialects / sizeof s_dialects [0])

static script_sink_t
s_run (int dialect, const char *model)
{
    sl_mock_script_t sc;
    cr_assert_eq (sl_mock_script_build (dialect, sl_str (model), sl_str ("{}"), 0, 0, &sc), 0);
    cr_assert_eq (sc.status, 200, "%s in %s", model, sl_dialect_name (dialect));
    script_sink_t sink = script_decode (dialect, &sc);
    sl_mock_script_clear (&sc);
    return sink;
}

Test (sl_mock_script, tools_scenario_in_every_dialect)
{
    const char *finish [] = { "tool_calls", "tool_use", "completed", "STOP" };
    for (size_t d = 0; d < DIALECTS; d++) {
        script_sink_t s = s_run (s_dialects [d], "mock-tools");
        const char *name = sl_dialect_name (s_dialects [d]);
        cr_expect_str_eq (sl_buf_cstr (&s.text), "Let me check the weather and tidy up.", "%s", name);
        cr_expect_str_eq (sl_buf_cstr (&s.calls),
                          "get_weather({\"city\":\"Paris\"});run_shell({\"command\":\"rm -rf /\"}", "%s", name);
        cr_expect_str_eq (sl_buf_cstr (&s.finish), finish [d], "%s", name);
        cr_expect (s.done, "%s", name);
        cr_expect_eq (s.failures + s.errors, 0, "%s", name);
        cr_expect_eq (sl_decoder_unknown (s.dec), 0, "%s: nothing the decoder does not know", name);
        script_sink_free (&s);
    }
}

Test (sl_mock_script, text_and_error_scenarios_in_every_dialect)
{
    for (size_t d = 0; d < DIALECTS; d++) {
        const char *name = sl_dialect_name (s_dialects [d]);
        script_sink_t s = s_run (s_dialects [d], "mock-text");
        cr_expect_gt (s.text.len, 50, "%s", name);
        cr_expect (s.done, "%s", name);
        script_sink_free (&s);
        s = s_run (s_dialects [d], "mock-error");
        cr_expect_str_eq (sl_buf_cstr (&s.text), "This answer will not", "%s", name);
        cr_expect_eq (s.errors, 1, "%s", name);
        cr_expect_not (s.finish.len, "%s", name);
        script_sink_free (&s);
    }
}

//  mock-bad-utf8 really sends what it promises: ill-formed bytes and lone
//  surrogate escapes, in every dialect, in a stream the decoders still
//  read (what sluice makes of it is tested end to end in test_frontdoor).
Test (sl_mock_script, bad_utf8_scenario_sends_ill_formed_text_in_every_dialect)
{
    for (size_t d = 0; d < DIALECTS; d++) {
        const char *name = sl_dialect_name (s_dialects [d]);
        sl_mock_script_t sc;
        cr_assert_eq (sl_mock_script_build (s_dialects [d], sl_str ("mock-bad-utf8"), sl_str ("{}"), 0, 0, &sc), 0);
        sl_buf_t all = { 0 };
        for (size_t i = 0; i < sc.count; i++)
            sl_buf_append (&all, sc.events [i].data, sc.events [i].len);
        cr_expect_not_null (memmem (all.data, all.len, "\xff\xfe", 2), "%s: raw bytes in the text", name);
        cr_expect_not_null (memmem (all.data, all.len, "\\ud800", 6), "%s: a lone surrogate escape", name);
        cr_expect_not_null (memmem (all.data, all.len, "get\xc3weather", 11), "%s: in the tool name", name);
        cr_expect_not_null (memmem (all.data, all.len, "Pa\xff", 3), "%s: in the arguments", name);
        sl_buf_free (&all);
        script_sink_t s = script_decode (s_dialects [d], &sc);
        cr_expect (s.done, "%s", name);
        cr_expect_eq (s.failures + s.errors, 0, "%s", name);
        cr_expect_not_null (strstr (sl_buf_cstr (&s.calls), "weather("), "%s: %s", name, sl_buf_cstr (&s.calls));
        script_sink_free (&s);
        sl_mock_script_clear (&sc);
    }
}

Test (sl_mock_script, bench_scenario_has_the_asked_chunks_and_two_calls)
{
    sl_mock_script_t sc;
    cr_assert_eq (sl_mock_script_build (SL_DIALECT_OPENAI, sl_str ("mock-bench"), sl_str ("{}"), 50, 0, &sc), 0);
    //  role, 50 text, 2 x (start + 3 fragments), finish, usage, [DONE]
    cr_expect_eq (sc.count, 1 + 50 + 8 + 3);
    cr_expect_not (sc.burst, "mock-bench keeps the mock's pace");
    sl_mock_script_clear (&sc);
    //  mock-burst: the same events, sent without any delay.
    sl_mock_script_t burst;
    cr_assert_eq (sl_mock_script_build (SL_DIALECT_OPENAI, sl_str ("mock-burst"), sl_str ("{}"), 50, 0, &burst), 0);
    cr_expect_eq (burst.count, 1 + 50 + 8 + 3);
    cr_expect (burst.burst);
    cr_expect_eq (burst.pace_ms, 0);
    sl_mock_script_clear (&burst);
    for (size_t d = 0; d < DIALECTS; d++) {
        script_sink_t s = s_run (s_dialects [d], "mock-bench");
        cr_expect_str_eq (sl_buf_cstr (&s.calls),
                          "get_weather({\"city\":\"Paris\"});read_file({\"path\":\"/tmp/notes.txt\"}",
                          "%s", sl_dialect_name (s_dialects [d]));
        cr_expect (s.done);
        script_sink_free (&s);
    }
}

Test (sl_mock_script, paced_scenarios_take_their_pace_from_the_name)
{
    static const struct { const char *model; long pace; } cases [] = {
        { "mock-paced", SL_MOCK_PACED_MS }, { "mock-paced-100", 100 }, { "mock-paced-1", 1 },
        { "mock-paced-60000", 60000 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_mock_script_t sc;
        cr_assert_eq (sl_mock_script_build (SL_DIALECT_OPENAI, sl_str (cases [i].model), sl_str ("{}"),
                                            60, 0, &sc), 0);
        cr_expect_eq (sc.status, 200, "%s", cases [i].model);
        cr_expect_eq (sc.pace_ms, cases [i].pace, "%s", cases [i].model);
        cr_expect (sc.stamped, "%s", cases [i].model);
        cr_expect_eq (sc.count, 1 + 60 + 8 + 3, "%s", cases [i].model);
        sl_mock_script_clear (&sc);
    }
    //  Not a pace: the model is unknown (404), never a default pace.
    static const char *bad [] = { "mock-paced-", "mock-paced-0", "mock-paced-60001", "mock-paced-1x",
                                  "mock-paced100", "mock-paced-1000000" };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        sl_mock_script_t sc;
        cr_assert_eq (sl_mock_script_build (SL_DIALECT_OPENAI, sl_str (bad [i]), sl_str ("{}"), 60, 0, &sc), 0);
        cr_expect_eq (sc.status, 404, "%s", bad [i]);
        cr_expect_eq (sc.pace_ms, 0, "%s", bad [i]);
        sl_mock_script_clear (&sc);
    }
}

//  --------------------------------------------------------------------------
//  Tool calls that do not end cleanly

//  What the aggregator makes of a script's one tool call.
typedef struct {
    sl_agg_t *agg;
    sl_decoder_t *dec;
    int calls;                          //  tool call block_ends
    uint32_t flags;                     //  of the last one
    sl_buf_t code;
    sl_buf_t name;
    size_t args_len;
    int errors;                         //  ERROR messages out of the aggregator
} s_blocks_t;

static void
s_agg_out (void *arg, const sl_msg_t *m)
{
    s_blocks_t *b = arg;
    if (m->type == SL_MSG_ERROR)
        b->errors++;
    if (m->type != SL_MSG_BLOCK || m->kind != SL_B_END || m->block != SL_BK_TOOL_CALL)
        return;
    b->calls++;
    b->flags = m->flags;
    sl_buf_reset (&b->code);
    sl_buf_append_str (&b->code, m->code);
    sl_buf_reset (&b->name);
    sl_buf_append_str (&b->name, m->name);
    b->args_len = m->text.len;
}

static void
s_to_agg (void *arg, const sl_msg_t *m)
{
    s_blocks_t *b = arg;
    sl_agg_feed (b->agg, m, s_agg_out, b);
}

static int
s_event_to_agg (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    (void) id;
    s_blocks_t *b = arg;
    sl_decoder_event (b->dec, type, data, s_to_agg, b);
    return 0;
}

static s_blocks_t
s_aggregate (int dialect, const char *model, long kib)
{
    sl_mock_script_t sc;
    cr_assert_eq (sl_mock_script_build (dialect, sl_str (model), sl_str ("{}"), kib, 0, &sc), 0);
    s_blocks_t b = { .agg = sl_agg_new (), .dec = sl_decoder_new (dialect) };
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_START);
    s_to_agg (&b, &m);
    sl_sse_t *sse = sl_sse_new (0);
    for (size_t i = 0; i < sc.count; i++)
        sl_sse_feed (sse, sc.events [i].data, sc.events [i].len, s_event_to_agg, &b);
    sl_sse_finish (sse, s_event_to_agg, &b);
    sl_decoder_finish (b.dec, s_to_agg, &b);
    sl_msg_init (&m, SL_MSG_END);
    s_to_agg (&b, &m);
    sl_sse_destroy (&sse);
    sl_mock_script_clear (&sc);
    return b;
}

static void
s_blocks_free (s_blocks_t *b)
{
    sl_agg_destroy (&b->agg);
    sl_decoder_destroy (&b->dec);
    sl_buf_free (&b->code);
    sl_buf_free (&b->name);
}

Test (sl_mock_script, danger_scenarios_carry_a_whole_call_then_the_cut)
{
    const char *length [] = { "length", "max_tokens", "max_output_tokens", "MAX_TOKENS" };
    for (size_t d = 0; d < DIALECTS; d++) {
        const char *name = sl_dialect_name (s_dialects [d]);
        script_sink_t s = s_run (s_dialects [d], "mock-danger-length");
        cr_expect_str_eq (sl_buf_cstr (&s.text), "Cleaning up.", "%s", name);
        cr_expect_str_eq (sl_buf_cstr (&s.calls), "run_shell({\"command\":\"rm -rf /\"}", "%s", name);
        cr_expect_str_eq (sl_buf_cstr (&s.finish), length [d], "%s", name);
        cr_expect (s.done, "%s", name);
        cr_expect_eq (s.errors + s.failures, 0, "%s", name);
        cr_expect_eq (sl_decoder_unknown (s.dec), 0, "%s", name);
        script_sink_free (&s);

        s = s_run (s_dialects [d], "mock-danger-error");
        cr_expect_str_eq (sl_buf_cstr (&s.calls), "run_shell({\"command\":\"rm -rf /\"}", "%s", name);
        cr_expect_eq (s.errors, 1, "%s: the provider's error", name);
        cr_expect_not (s.finish.len, "%s", name);
        script_sink_free (&s);

        s = s_run (s_dialects [d], "mock-danger-eof");
        cr_expect_str_eq (sl_buf_cstr (&s.calls), "run_shell({\"command\":\"rm -rf /\"}", "%s", name);
        cr_expect_str_eq (sl_buf_cstr (&s.error), "upstream_incomplete", "%s: the body ended early", name);
        cr_expect_not (s.done, "%s", name);
        script_sink_free (&s);
    }
}

Test (sl_mock_script, danger_huge_streams_a_call_of_the_asked_size)
{
    const char *head = "run_shell({\"command\":\"rm -rf /\",\"note\":\"PADDING-";
    for (size_t d = 0; d < DIALECTS; d++) {
        const char *name = sl_dialect_name (s_dialects [d]);
        sl_mock_script_t sc;
        cr_assert_eq (sl_mock_script_build (s_dialects [d], sl_str ("mock-danger-huge"), sl_str ("{}"), 256, 0,
                                            &sc), 0);
        cr_expect_gt (sc.count, 256 / 64, "%s: the call comes in pieces", name);
        script_sink_t s = script_decode (s_dialects [d], &sc);
        sl_mock_script_clear (&sc);
        const char *calls = sl_buf_cstr (&s.calls);
        cr_expect (strncmp (calls, head, strlen (head)) == 0, "%s: %.60s", name, calls);
        sl_str_t args = sl_str_n (calls + strlen ("run_shell("), s.calls.len - strlen ("run_shell("));
        cr_expect (sl_json_valid (args), "%s: the arguments are whole", name);
        cr_expect_geq (args.len, 256 * 1024, "%s", name);
        cr_expect_lt (args.len, 257 * 1024, "%s", name);
        cr_expect (s.done, "%s", name);
        cr_expect_eq (s.errors + s.failures, 0, "%s", name);
        cr_expect_eq (sl_decoder_unknown (s.dec), 0, "%s", name);
        script_sink_free (&s);
    }
}

//  Through the aggregator, in every dialect, the call is cut as the
//  scenario says (Anthropic and Responses close the call's block before
//  the length finish: it is cut all the same).
Test (sl_mock_script, danger_scenarios_are_cut_calls_to_the_aggregator)
{
    const char *models [] = { "mock-danger-length", "mock-danger-error", "mock-danger-eof" };
    const char *cuts [] = { "length", "error", "eof" };
    for (size_t d = 0; d < DIALECTS; d++)
        for (size_t k = 0; k < 3; k++) {
            s_blocks_t b = s_aggregate (s_dialects [d], models [k], 0);
            const char *name = sl_dialect_name (s_dialects [d]);
            cr_expect_eq (b.calls, 1, "%s %s", name, models [k]);
            cr_expect (b.flags & SL_F_INCOMPLETE, "%s %s: cut", name, models [k]);
            cr_expect_not (b.flags & SL_F_ARGS_VALID, "%s %s", name, models [k]);
            cr_expect_str_eq (sl_buf_cstr (&b.code), cuts [k], "%s %s", name, models [k]);
            cr_expect_str_eq (sl_buf_cstr (&b.name), "run_shell", "%s %s", name, models [k]);
            s_blocks_free (&b);
        }
    //  mock-tools, for contrast: both calls end cleanly everywhere.
    for (size_t d = 0; d < DIALECTS; d++) {
        s_blocks_t b = s_aggregate (s_dialects [d], "mock-tools", 0);
        cr_expect_eq (b.calls, 2);
        cr_expect (b.flags & SL_F_ARGS_VALID, "%s", sl_dialect_name (s_dialects [d]));
        cr_expect_eq (b.code.len, 0);
        s_blocks_free (&b);
    }
    //  mock-danger-huge at its default size is more than a stream may carry.
    for (size_t d = 0; d < DIALECTS; d++) {
        s_blocks_t b = s_aggregate (s_dialects [d], "mock-danger-huge", 0);
        const char *name = sl_dialect_name (s_dialects [d]);
        cr_expect_eq (b.calls, 1, "%s", name);
        cr_expect_str_eq (sl_buf_cstr (&b.code), "size", "%s", name);
        cr_expect_eq (b.errors, 1, "%s: stream_too_large", name);
        s_blocks_free (&b);
    }
}

Test (sl_mock_script, misbehaviours)
{
    for (size_t d = 0; d < DIALECTS; d++) {
        int dialect = s_dialects [d];
        const char *name = sl_dialect_name (dialect);
        sl_mock_script_t sc;
        sl_mock_script_build (dialect, sl_str ("mock-stall"), sl_str ("{}"), 0, 0, &sc);
        cr_expect_eq (sc.status, 200);
        cr_expect_eq (sc.end, SL_MOCK_END_STALL);
        cr_expect_eq (sc.count, 3, "%s", name);
        sl_mock_script_clear (&sc);

        sl_mock_script_build (dialect, sl_str ("mock-drop"), sl_str ("{}"), 0, 0, &sc);
        cr_expect_eq (sc.end, SL_MOCK_END_DROP);
        script_sink_t s = script_decode (dialect, &sc);
        cr_expect (!s.done, "%s: a dropped stream does not end cleanly", name);
        script_sink_free (&s);
        sl_mock_script_clear (&sc);

        sl_mock_script_build (dialect, sl_str ("mock-hang"), sl_str ("{}"), 0, 0, &sc);
        cr_expect_eq (sc.status, 0, "no answer at all");
        sl_mock_script_clear (&sc);

        sl_mock_script_build (dialect, sl_str ("mock-garbage"), sl_str ("{}"), 0, 0, &sc);
        s = script_decode (dialect, &sc);
        cr_expect_eq (s.failures, 1, "%s: the garbage event is refused", name);
        script_sink_free (&s);
        sl_mock_script_clear (&sc);

        sl_mock_script_build (dialect, sl_str ("mock-429"), sl_str ("{}"), 0, 0, &sc);
        cr_expect_eq (sc.status, 429);
        cr_expect_str_eq (sc.retry_after, "1");
        cr_expect (sl_json_valid (sl_buf_str (&sc.error_body)));
        sl_mock_script_clear (&sc);

        sl_mock_script_build (dialect, sl_str ("mock-500"), sl_str ("{}"), 0, 0, &sc);
        cr_expect_eq (sc.status, 500);
        cr_expect_str_eq (sc.retry_after, "");
        cr_expect (sl_json_valid (sl_buf_str (&sc.error_body)));
        sl_mock_script_clear (&sc);

        sl_mock_script_build (dialect, sl_str ("mock-flaky"), sl_str ("{}"), 0, 0, &sc);
        cr_expect_eq (sc.status, 503, "first attempt fails");
        cr_expect_str_eq (sc.retry_after, "0");
        sl_mock_script_clear (&sc);
        sl_mock_script_build (dialect, sl_str ("mock-flaky"), sl_str ("{}"), 0, 1, &sc);
        cr_expect_eq (sc.status, 200, "the retry succeeds");
        sl_mock_script_clear (&sc);
    }
}

Test (sl_mock_script, same_request_same_bytes_and_unknown_model)
{
    for (size_t d = 0; d < DIALECTS; d++) {
        sl_mock_script_t a, b;
        sl_mock_script_build (s_dialects [d], sl_str ("mock-tools"), sl_str ("{\"x\":1}"), 0, 0, &a);
        sl_mock_script_build (s_dialects [d], sl_str ("mock-tools"), sl_str ("{\"x\":1}"), 0, 0, &b);
        cr_assert_eq (a.count, b.count);
        for (size_t i = 0; i < a.count; i++)
            cr_expect (sl_str_eq_str (sl_buf_str (&a.events [i]), sl_buf_str (&b.events [i])));
        sl_mock_script_clear (&a);
        sl_mock_script_clear (&b);
        sl_mock_script_build (s_dialects [d], sl_str ("gpt-9"), sl_str ("{}"), 0, 0, &a);
        cr_expect_eq (a.status, 404);
        cr_expect (sl_json_valid (sl_buf_str (&a.error_body)));
        cr_expect_not_null (strstr (sl_buf_cstr (&a.error_body), "gpt-9"));
        sl_mock_script_clear (&a);
    }
    sl_mock_script_t sc;
    cr_expect_eq (sl_mock_script_build (SL_DIALECT_NONE, sl_str ("mock-text"), sl_str ("{}"), 0, 0, &sc), -1);
}

Test (sl_mock_script, replay_keeps_sse_bytes_and_frames_chunk_files)
{
    sl_mock_script_t sc;
    const char *sse = "event: a\r\ndata: 1\r\n\r\ndata: 2\n\n: c\ndata: 3";
    cr_assert_eq (sl_mock_script_playback (sl_str ("x.sse"), sl_str (sse), &sc), 0);
    cr_expect_eq (sc.count, 3);
    sl_buf_t all = { 0 };
    for (size_t i = 0; i < sc.count; i++)
        sl_buf_append_str (&all, sl_buf_str (&sc.events [i]));
    cr_expect_str_eq (sl_buf_cstr (&all), sse, "verbatim, unterminated end included");
    cr_expect_str_eq (sl_buf_cstr (&sc.events [0]), "event: a\r\ndata: 1\r\n\r\n");
    sl_mock_script_clear (&sc);
    sl_buf_free (&all);

    cr_assert_eq (sl_mock_script_playback (sl_str ("x.chunks.jsonl"), sl_str ("{\"a\":1}\n\n{\"b\":2}\n"), &sc), 0);
    cr_expect_eq (sc.count, 2);
    cr_expect_str_eq (sl_buf_cstr (&sc.events [1]), "data: {\"b\":2}\n\n");
    sl_mock_script_clear (&sc);

    cr_assert_eq (sl_mock_script_playback (sl_str ("x.json"), sl_str ("[{\"a\":\n 1}, {\"b\":2}]"), &sc), 0);
    cr_expect_eq (sc.count, 2);
    cr_expect_str_eq (sl_buf_cstr (&sc.events [0]), "data: {\"a\": 1}\n\n");
    sl_mock_script_clear (&sc);
    cr_expect_eq (sl_mock_script_playback (sl_str ("x.json"), sl_str ("{not an array"), &sc), -1);
}
