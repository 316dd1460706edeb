/*  Unit tests: services/mock/sl_mock_script. The scripts are decoded with
    the project's own SSE parser and OpenAI decoder, so the mock and the
    ingest agree on the format. */
#include <criterion/criterion.h>

#include "../../common/sl_buf.h"
#include "../../services/ingest/sl_decoder.h"
#include "../../services/ingest/sl_sse.h"
#include "../../services/mock/sl_mock_script.h"

typedef struct {
    sl_decoder_t *dec;
    sl_buf_t text;
    sl_buf_t calls;                     //  "name(args);" per call
    sl_buf_t finish;
    int errors;
} s_sink_t;

static void
s_delta (void *arg, const sl_msg_t *m)
{
    s_sink_t *s = arg;
    if (m->type == SL_MSG_ERROR) {
        s->errors++;
        return;
    }
    if (m->kind == SL_D_TEXT)
        sl_buf_append_str (&s->text, m->text);
    if (m->kind == SL_D_TOOL_CALL) {
        if (m->name.ptr) {
            if (s->calls.len)
                sl_buf_puts (&s->calls, ");");
            sl_buf_append_str (&s->calls, m->name);
            sl_buf_putc (&s->calls, '(');
        }
        sl_buf_append_str (&s->calls, m->text);
    }
    if (m->kind == SL_D_FINISH)
        sl_buf_append_str (&s->finish, m->finish_raw);
}

static int
s_event (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    (void) id;
    s_sink_t *s = arg;
    cr_assert_eq (sl_decoder_event (s->dec, type, data, s_delta, s), 0);
    return 0;
}

static s_sink_t
s_run (const char *model)
{
    sl_mock_script_t sc;
    cr_assert_eq (sl_mock_script_build (sl_str (model), sl_str ("{}"), 0, &sc), 0);
    cr_assert_eq (sc.status, 200);
    s_sink_t sink = { .dec = sl_decoder_new (SL_DIALECT_OPENAI) };
    sl_sse_t *sse = sl_sse_new (0);
    for (size_t i = 0; i < sc.count; i++)
        cr_assert_eq (sl_sse_feed (sse, sc.events [i].data, sc.events [i].len, s_event, &sink), 0);
    sl_sse_destroy (&sse);
    sl_mock_script_clear (&sc);
    return sink;
}

static void
s_sink_free (s_sink_t *s)
{
    sl_decoder_destroy (&s->dec);
    sl_buf_free (&s->text);
    sl_buf_free (&s->calls);
    sl_buf_free (&s->finish);
}

Test (sl_mock_script, tools_scenario)
{
    s_sink_t s = s_run ("mock-tools");
    cr_expect_str_eq (sl_buf_cstr (&s.text), "Let me check the weather and tidy up.");
    cr_expect_str_eq (sl_buf_cstr (&s.calls),
                      "get_weather({\"city\":\"Paris\"});run_shell({\"command\":\"rm -rf /\"}");
    cr_expect_str_eq (sl_buf_cstr (&s.finish), "tool_calls");
    cr_expect (sl_decoder_done (s.dec));
    s_sink_free (&s);
}

Test (sl_mock_script, bench_scenario_has_the_asked_chunks_and_two_calls)
{
    sl_mock_script_t sc;
    cr_assert_eq (sl_mock_script_build (sl_str ("mock-bench"), sl_str ("{}"), 50, &sc), 0);
    //  role, 50 text, 2 x (start + 3 fragments), finish, usage, [DONE]
    cr_expect_eq (sc.count, 1 + 50 + 8 + 3);
    sl_mock_script_clear (&sc);
    s_sink_t s = s_run ("mock-bench");
    cr_expect_str_eq (sl_buf_cstr (&s.calls),
                      "get_weather({\"city\":\"Paris\"});read_file({\"path\":\"/tmp/notes.txt\"}");
    cr_expect (sl_decoder_done (s.dec));
    s_sink_free (&s);
}

Test (sl_mock_script, text_and_error_scenarios)
{
    s_sink_t s = s_run ("mock-text");
    cr_expect_gt (s.text.len, 50);
    cr_expect_str_eq (sl_buf_cstr (&s.finish), "stop");
    s_sink_free (&s);
    s = s_run ("mock-error");
    cr_expect_eq (s.errors, 1);
    cr_expect_not (s.finish.len);
    s_sink_free (&s);
}

Test (sl_mock_script, same_request_same_bytes_and_unknown_model)
{
    sl_mock_script_t a, b;
    sl_mock_script_build (sl_str ("mock-text"), sl_str ("{\"x\":1}"), 0, &a);
    sl_mock_script_build (sl_str ("mock-text"), sl_str ("{\"x\":1}"), 0, &b);
    cr_assert_eq (a.count, b.count);
    for (size_t i = 0; i < a.count; i++)
        cr_expect (sl_str_eq_str (sl_buf_str (&a.events [i]), sl_buf_str (&b.events [i])));
    sl_mock_script_clear (&a);
    sl_mock_script_clear (&b);
    sl_mock_script_build (sl_str ("gpt-9"), sl_str ("{}"), 0, &a);
    cr_expect_eq (a.status, 404);
    cr_expect_not_null (strstr (sl_buf_cstr (&a.error_body), "model_not_found"));
    sl_mock_script_clear (&a);
}
