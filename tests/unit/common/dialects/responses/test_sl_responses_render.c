/*  Unit tests: the OpenAI Responses renderer, through the emitter. */
#include "tests/unit/emit_driver.h"

#define MAX_EVENTS 80

static json_t *
s_get (json_t *j, const char *path)
{
    char key [64];
    const char *p = path;
    while (j && *p) {
        size_t n = strcspn (p, ".");
        snprintf (key, sizeof key, "%.*s", (int) n, p);
        if (key [0] >= '0' && key [0] <= '9')
            j = json_array_get (j, (size_t) atoi (key));
        else
            j = json_object_get (j, key);
        p += n + (p [n] == '.');
    }
    return j;
}

static const char *
s_str (json_t *j, const char *path)
{
    json_t *v = s_get (j, path);
    return json_is_string (v) ? json_string_value (v) : "(none)";
}

Test (sl_render_responses, renders_every_block_in_a_legal_stream)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_RESPONSES, SL_F_STREAM);
    driver_full_response (&d, NULL);
    sse_event_t ev [MAX_EVENTS];
    int n = driver_events (&d, ev, MAX_EVENTS);
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "every event passed the validator:\n%s", driver_bytes (&d));
    cr_assert_gt (n, 4);
    cr_expect_str_eq (ev [0].name, "response.created");
    cr_expect_str_eq (ev [1].name, "response.in_progress");
    cr_expect_str_eq (ev [n - 1].name, "response.completed");
    for (int i = 0; i < n; i++) {
        cr_expect_str_eq (s_str (ev [i].data, "type"), ev [i].name, "event %d names its type", i);
        cr_expect_eq (json_integer_value (json_object_get (ev [i].data, "sequence_number")), i);
    }
    //  Reassemble like a client: text deltas, argument deltas, reasoning.
    sl_buf_t text = { 0 }, args = { 0 }, reasoning = { 0 };
    int annotations = 0;
    for (int i = 0; i < n; i++) {
        const char *name = ev [i].name;
        if (strcmp (name, "response.output_text.delta") == 0)
            sl_buf_puts (&text, s_str (ev [i].data, "delta"));
        if (strcmp (name, "response.function_call_arguments.delta") == 0)
            sl_buf_puts (&args, s_str (ev [i].data, "delta"));
        if (strcmp (name, "response.reasoning_text.delta") == 0)
            sl_buf_puts (&reasoning, s_str (ev [i].data, "delta"));
        if (strcmp (name, "response.output_text.annotation.added") == 0)
            annotations++;
    }
    cr_expect_str_eq (sl_buf_cstr (&text), "Paris is sunny \"today\".blocked run_shell");
    cr_expect_str_eq (sl_buf_cstr (&args), "{\"city\":\"Paris\"}");
    cr_expect_str_eq (sl_buf_cstr (&reasoning), "Let me think.");
    cr_expect_eq (annotations, 1);
    //  The final response lists every item with its whole content.
    json_t *resp = s_get (ev [n - 1].data, "response");
    cr_expect_str_eq (s_str (resp, "id"), "resp-id-1");
    cr_expect_str_eq (s_str (resp, "status"), "completed");
    cr_expect_str_eq (s_str (resp, "model"), "real-model");
    json_t *output = s_get (resp, "output");
    cr_assert_eq (json_array_size (output), 4);
    cr_expect_str_eq (s_str (output, "0.type"), "reasoning");
    cr_expect_str_eq (s_str (output, "0.encrypted_content"), "sig-abc");
    cr_expect_str_eq (s_str (output, "1.type"), "message");
    cr_expect_str_eq (s_str (output, "1.content.0.text"), "Paris is sunny \"today\".");
    cr_expect_str_eq (s_str (output, "1.content.0.annotations.0.url"), "https://example.org");
    cr_expect_str_eq (s_str (output, "2.type"), "function_call");
    cr_expect_str_eq (s_str (output, "2.call_id"), "call_w1");
    cr_expect_str_eq (s_str (output, "2.name"), "get_weather");
    cr_expect_str_eq (s_str (output, "2.arguments"), "{\"city\":\"Paris\"}");
    cr_expect_str_eq (s_str (output, "3.content.0.text"), "blocked run_shell");
    cr_expect_eq (json_integer_value (s_get (resp, "usage.input_tokens_details.cached_tokens")), 8);
    cr_expect_eq (json_integer_value (s_get (resp, "usage.output_tokens_details.reasoning_tokens")), 5);
    cr_expect_eq (json_integer_value (s_get (resp, "usage.total_tokens")), 65);
    sl_buf_free (&text);
    sl_buf_free (&args);
    sl_buf_free (&reasoning);
    driver_events_free (ev, n);
    driver_stop (&d);
}

Test (sl_render_responses, summaries_refusals_and_a_cut_response)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_RESPONSES, SL_F_STREAM);
    sl_msg_t m = driver_block (SL_B_START, SL_BK_THINKING, 0);
    m.flags = SL_F_SUMMARY;
    m.id = sl_str ("rs_1");
    driver_feed (&d, m);
    m = driver_block (SL_B_DELTA, SL_BK_THINKING, 0);
    m.text = sl_str ("summary");
    driver_feed (&d, m);
    m = driver_block (SL_B_END, SL_BK_THINKING, 0);
    m.text = sl_str ("summary");
    m.flags = SL_F_SUMMARY;
    driver_feed (&d, m);
    driver_feed (&d, driver_block (SL_B_START, SL_BK_REFUSAL, 1));
    m = driver_block (SL_B_DELTA, SL_BK_REFUSAL, 1);
    m.text = sl_str ("I can't");
    driver_feed (&d, m);
    m = driver_block (SL_B_END, SL_BK_REFUSAL, 1);
    m.text = sl_str ("I can't");
    driver_feed (&d, m);
    m = driver_block (SL_B_FINISH, 0, -1);
    m.finish = SL_FIN_LENGTH;
    driver_feed (&d, m);
    driver_end (&d);
    sse_event_t ev [MAX_EVENTS];
    int n = driver_events (&d, ev, MAX_EVENTS);
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "%s", driver_bytes (&d));
    cr_assert_gt (n, 0);
    cr_expect_str_eq (ev [n - 1].name, "response.incomplete");
    json_t *resp = s_get (ev [n - 1].data, "response");
    cr_expect_str_eq (s_str (resp, "incomplete_details.reason"), "max_output_tokens");
    cr_expect_str_eq (s_str (resp, "output.0.summary.0.text"), "summary");
    cr_expect_str_eq (s_str (resp, "output.0.id"), "rs_1");
    cr_expect_str_eq (s_str (resp, "output.1.content.0.type"), "refusal");
    cr_expect_str_eq (s_str (resp, "output.1.content.0.refusal"), "I can't");
    driver_events_free (ev, n);
    driver_stop (&d);
}

Test (sl_render_responses, errors_in_the_dialect)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_RESPONSES, SL_F_STREAM);
    driver_feed (&d, driver_block (SL_B_START, SL_BK_TEXT, 0));
    sl_msg_t m = driver_block (SL_B_DELTA, SL_BK_TEXT, 0);
    m.text = sl_str ("Half an ans");
    driver_feed (&d, m);
    //  The aggregator closes the block an error cuts, as incomplete.
    m = driver_block (SL_B_END, SL_BK_TEXT, 0);
    m.text = sl_str ("Half an ans");
    m.flags = SL_F_INCOMPLETE;
    driver_feed (&d, m);
    sl_msg_t err = recorder_msg (SL_MSG_ERROR, 0);
    err.code = sl_str ("server_error");
    err.message = sl_str ("boom");
    driver_feed (&d, err);
    driver_end (&d);
    sse_event_t ev [MAX_EVENTS];
    int n = driver_events (&d, ev, MAX_EVENTS);
    cr_assert_gt (n, 3);
    //  The cut-off text is not a completed message.
    cr_expect_str_eq (ev [n - 3].name, "response.output_item.done");
    cr_expect_str_eq (s_str (ev [n - 3].data, "item.status"), "incomplete");
    //  Then as the API ends a broken stream: error, then response.failed.
    cr_expect_str_eq (ev [n - 2].name, "error");
    cr_expect_str_eq (s_str (ev [n - 2].data, "code"), "server_error");
    cr_expect_str_eq (s_str (ev [n - 2].data, "message"), "boom");
    cr_expect_str_eq (s_str (ev [n - 2].data, "error.message"), "boom", "nested too, for the SDKs' readers");
    cr_expect_str_eq (s_str (ev [n - 2].data, "error.type"), "server_error");
    cr_expect_str_eq (ev [n - 1].name, "response.failed");
    cr_expect_str_eq (s_str (ev [n - 1].data, "response.status"), "failed");
    cr_expect_str_eq (s_str (ev [n - 1].data, "response.error.code"), "server_error");
    cr_expect_str_eq (s_str (ev [n - 1].data, "response.error.message"), "boom");
    json_t *output = json_object_get (json_object_get (ev [n - 1].data, "response"), "output");
    cr_assert_eq (json_array_size (output), 1, "the items it got to");
    cr_expect_str_eq (json_string_value (json_object_get (json_array_get (output, 0), "status")), "incomplete");
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "%s", driver_bytes (&d));
    driver_events_free (ev, n);
    driver_stop (&d);

    //  Before any item (a terminated first call): the response starts, fails.
    driver_start (&d, SL_DIALECT_RESPONSES, SL_F_STREAM);
    driver_feed (&d, driver_block (SL_B_KEEPALIVE, 0, -1));
    sl_msg_t ka = driver_block (SL_B_KEEPALIVE, 0, -1);
    ka.flags = SL_F_KEEPALIVE;
    driver_feed (&d, ka);
    err.code = sl_str ("policy_violation");
    err.message = sl_str ("sluice ended this response");
    err.status = 403;
    driver_feed (&d, err);
    driver_end (&d);
    n = driver_events (&d, ev, MAX_EVENTS);
    const char *want [] = { "response.created", "response.in_progress", "error", "response.failed" };
    cr_assert_eq (n, 4, "%s", driver_bytes (&d));
    for (int i = 0; i < 4; i++)
        cr_expect_str_eq (ev [i].name, want [i]);
    cr_expect_str_eq (s_str (ev [3].data, "response.error.message"), "sluice ended this response");
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "%s", driver_bytes (&d));
    driver_events_free (ev, n);
    driver_stop (&d);
}

//  Citations given while no text was open (a citation block) become the
//  annotations of the text that follows, or of an empty message.
Test (sl_render_responses, citations_belong_to_the_text_that_follows)
{
    for (int text = 0; text < 2; text++)
        for (uint32_t flags = 0; flags <= SL_F_STREAM; flags += SL_F_STREAM) {
            driver_t d;
            driver_start (&d, SL_DIALECT_RESPONSES, flags);
            driver_feed (&d, driver_block (SL_B_START, SL_BK_CITATION, 0));
            sl_msg_t m = driver_block (SL_B_END, SL_BK_CITATION, 0);
            m.body = sl_str ("{\"citations\":[{\"type\":\"url_citation\",\"url\":\"https://a.example\"}]}");
            driver_feed (&d, m);
            if (text) {
                driver_feed (&d, driver_block (SL_B_START, SL_BK_TEXT, 1));
                m = driver_block (SL_B_END, SL_BK_TEXT, 1);
                m.text = sl_str ("cited");
                m.body = sl_str ("{\"citations\":[{\"type\":\"url_citation\",\"url\":\"https://b.example\"}]}");
                driver_feed (&d, m);
            }
            m = driver_block (SL_B_FINISH, 0, -1);
            m.finish = SL_FIN_STOP;
            driver_feed (&d, m);
            driver_end (&d);
            cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "%s", driver_bytes (&d));
            json_t *resp;
            if (flags) {
                sse_event_t ev [MAX_EVENTS];
                int n = driver_events (&d, ev, MAX_EVENTS);
                cr_assert_gt (n, 0);
                int added = 0;
                for (int i = 0; i < n; i++)
                    added += strcmp (ev [i].name, "response.output_text.annotation.added") == 0;
                cr_expect_eq (added, text ? 2 : 1, "text %d: annotation events", text);
                resp = json_incref (json_object_get (ev [n - 1].data, "response"));
                driver_events_free (ev, n);
            }
            else {
                sl_msg_t *last = d.rec.msgs [d.rec.count - 1];
                resp = json_loadb (last->body.ptr, last->body.len, 0, NULL);
            }
            cr_expect_eq (json_array_size (json_object_get (resp, "output")), 1, "text %d, stream %u", text, flags);
            cr_expect_str_eq (s_str (resp, "output.0.content.0.text"), text ? "cited" : "");
            cr_expect_str_eq (s_str (resp, "output.0.content.0.annotations.0.url"), "https://a.example");
            if (text)
                cr_expect_str_eq (s_str (resp, "output.0.content.0.annotations.1.url"), "https://b.example");
            json_decref (resp);
            driver_stop (&d);
        }
}
