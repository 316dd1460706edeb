/*  Unit tests: the Anthropic Messages renderer, through the emitter. */
#include "tests/unit/emit_driver.h"

#define MAX_EVENTS 64

static const char *
s_str (json_t *j, const char *path)
{
    //  "a.b.c" object path
    char key [64];
    const char *p = path;
    while (j && *p) {
        size_t n = strcspn (p, ".");
        snprintf (key, sizeof key, "%.*s", (int) n, p);
        j = json_object_get (j, key);
        p += n + (p [n] == '.');
    }
    return json_is_string (j) ? json_string_value (j) : NULL;
}

Test (sl_render_anthropic, renders_every_block_in_a_legal_stream)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_ANTHROPIC, SL_F_STREAM);
    driver_full_response (&d, "tool_use");
    sse_event_t ev [MAX_EVENTS];
    int n = driver_events (&d, ev, MAX_EVENTS);
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "every event passed the validator:\n%s", driver_bytes (&d));
    const char *want [] = {
        "message_start",
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",   //  thinking + sig
        "content_block_start", "content_block_delta", "content_block_delta", "content_block_delta",
        "content_block_stop",                                                                      //  text + citation
        "content_block_start", "content_block_delta", "content_block_stop",                        //  the notice
        "content_block_start", "content_block_delta", "content_block_stop",                        //  the held call
        "message_delta", "message_stop", NULL };
    int k = 0;
    for (; want [k]; k++)
        cr_expect_str_eq (k < n ? ev [k].name : "", want [k], "event %d", k);
    cr_expect_eq (n, k);
    cr_assert_eq (n, k);
    cr_expect_str_eq (s_str (ev [0].data, "message.id"), "resp-id-1");
    cr_expect_str_eq (s_str (ev [0].data, "message.model"), "real-model");
    cr_expect_str_eq (s_str (ev [1].data, "content_block.type"), "thinking");
    cr_expect_str_eq (s_str (ev [2].data, "delta.thinking"), "Let me think.");
    cr_expect_str_eq (s_str (ev [3].data, "delta.type"), "signature_delta");
    cr_expect_str_eq (s_str (ev [3].data, "delta.signature"), "sig-abc");
    cr_expect_str_eq (s_str (ev [7].data, "delta.text"), "sunny \"today\".");
    cr_expect_str_eq (s_str (ev [8].data, "delta.type"), "citations_delta", "the text's citations, at its end");
    cr_expect_str_eq (s_str (ev [8].data, "delta.citation.url"), "https://example.org");
    cr_expect_str_eq (s_str (ev [11].data, "delta.text"), "blocked run_shell", "the notice comes before the call");
    cr_expect_eq (json_integer_value (json_object_get (ev [13].data, "index")), 3);
    cr_expect_str_eq (s_str (ev [13].data, "content_block.type"), "tool_use");
    cr_expect_str_eq (s_str (ev [13].data, "content_block.id"), "call_w1");
    cr_expect_str_eq (s_str (ev [13].data, "content_block.name"), "get_weather");
    cr_expect_str_eq (s_str (ev [14].data, "delta.partial_json"), "{\"city\":\"Paris\"}");
    cr_expect_str_eq (s_str (ev [16].data, "delta.stop_reason"), "tool_use");
    json_t *usage = json_object_get (ev [16].data, "usage");
    cr_expect_eq (json_integer_value (json_object_get (usage, "input_tokens")), 40);
    cr_expect_eq (json_integer_value (json_object_get (usage, "output_tokens")), 25);
    cr_expect_eq (json_integer_value (json_object_get (usage, "cache_read_input_tokens")), 8);
    cr_expect_eq (json_integer_value (json_object_get (usage, "cache_creation_input_tokens")), 3);
    driver_events_free (ev, n);
    driver_stop (&d);
}

Test (sl_render_anthropic, redacted_thinking_and_server_tools)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_ANTHROPIC, SL_F_STREAM);
    driver_feed (&d, driver_block (SL_B_START, SL_BK_REDACTED_THINKING, 0));
    sl_msg_t m = driver_block (SL_B_END, SL_BK_REDACTED_THINKING, 0);
    m.text = sl_str ("opaque==");
    driver_feed (&d, m);
    m = driver_block (SL_B_START, SL_BK_SERVER_TOOL_USE, 1);
    m.id = sl_str ("srvtoolu_1");
    m.name = sl_str ("web_search");
    driver_feed (&d, m);
    m = driver_block (SL_B_DELTA, SL_BK_SERVER_TOOL_USE, 1);
    m.text = sl_str ("{\"query\":\"x\"}");
    driver_feed (&d, m);
    m = driver_block (SL_B_END, SL_BK_SERVER_TOOL_USE, 1);
    m.text = sl_str ("{\"query\":\"x\"}");
    driver_feed (&d, m);
    m = driver_block (SL_B_START, SL_BK_SERVER_TOOL_RESULT, 2);
    m.id = sl_str ("srvtoolu_1");
    m.name = sl_str ("web_search_tool_result");
    driver_feed (&d, m);
    m = driver_block (SL_B_END, SL_BK_SERVER_TOOL_RESULT, 2);
    m.body = sl_str ("[{\"type\":\"web_search_result\",\"url\":\"u\"}]");
    driver_feed (&d, m);
    m = driver_block (SL_B_FINISH, 0, -1);
    m.finish = SL_FIN_STOP;
    m.stop_seq = sl_str ("STOP!");
    driver_feed (&d, m);
    driver_end (&d);
    sse_event_t ev [MAX_EVENTS];
    int n = driver_events (&d, ev, MAX_EVENTS);
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "%s", driver_bytes (&d));
    cr_assert_eq (n, 10, "%s", driver_bytes (&d));
    cr_expect_str_eq (s_str (ev [1].data, "content_block.type"), "redacted_thinking");
    cr_expect_str_eq (s_str (ev [1].data, "content_block.data"), "opaque==");
    cr_expect_str_eq (s_str (ev [3].data, "content_block.type"), "server_tool_use");
    cr_expect_str_eq (s_str (ev [4].data, "delta.partial_json"), "{\"query\":\"x\"}");
    cr_expect_str_eq (s_str (ev [6].data, "content_block.type"), "web_search_tool_result");
    cr_expect_str_eq (s_str (ev [6].data, "content_block.tool_use_id"), "srvtoolu_1");
    cr_expect (json_is_array (json_object_get (json_object_get (ev [6].data, "content_block"), "content")));
    cr_expect_str_eq (s_str (ev [8].data, "delta.stop_reason"), "stop_sequence");
    cr_expect_str_eq (s_str (ev [8].data, "delta.stop_sequence"), "STOP!");
    driver_events_free (ev, n);
    driver_stop (&d);
}

Test (sl_render_anthropic, errors_in_the_dialect)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_ANTHROPIC, SL_F_STREAM);
    sl_msg_t err = recorder_msg (SL_MSG_ERROR, 0);
    err.code = sl_str ("rate_limit_error");
    err.message = sl_str ("slow down");
    err.status = 429;
    driver_feed (&d, err);
    cr_assert_eq (d.rec.count, 1);
    cr_expect_eq (d.rec.msgs [0]->status, 429);
    cr_expect_str_eq (driver_bytes (&d),
                      "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}");
    driver_stop (&d);

    driver_start (&d, SL_DIALECT_ANTHROPIC, SL_F_STREAM);
    driver_feed (&d, driver_block (SL_B_START, SL_BK_TEXT, 0));
    err.status = 0;
    err.code = sl_str ("server_error");
    driver_feed (&d, err);
    driver_end (&d);
    sse_event_t ev [MAX_EVENTS];
    int n = driver_events (&d, ev, MAX_EVENTS);
    cr_assert_eq (n, 3);
    cr_expect_str_eq (ev [2].name, "error");
    cr_expect_str_eq (s_str (ev [2].data, "error.type"), "server_error");
    cr_expect_null (strstr (driver_bytes (&d), "message_stop"), "a failed stream does not claim completion");
    driver_events_free (ev, n);
    driver_stop (&d);
}

Test (sl_render_anthropic, stop_reason_follows_the_calls_left)
{
    //  The judge blocked every call and fixed the finish to stop.
    driver_t d;
    driver_start (&d, SL_DIALECT_ANTHROPIC, SL_F_STREAM);
    driver_feed (&d, driver_block (SL_B_START, SL_BK_TEXT, 0));
    sl_msg_t m = driver_block (SL_B_END, SL_BK_TEXT, 0);
    driver_feed (&d, m);
    m = driver_block (SL_B_FINISH, 0, -1);
    m.finish = SL_FIN_STOP;
    driver_feed (&d, m);
    driver_end (&d);
    cr_expect_not_null (strstr (driver_bytes (&d), "\"stop_reason\":\"end_turn\""), "%s", driver_bytes (&d));
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0);
    driver_stop (&d);
}

//  Anthropic sends a text block's citations before its text: sluice sees
//  a citation block, then the text. The citations go into the text block
//  that follows, or into an empty one when none does.
static void
s_citations_then (driver_t *d, bool text)
{
    driver_feed (d, driver_block (SL_B_START, SL_BK_CITATION, 0));
    sl_msg_t m = driver_block (SL_B_END, SL_BK_CITATION, 0);
    m.body = sl_str ("{\"citations\":[{\"type\":\"web_search_result_location\",\"url\":\"https://a.example\"},"
                     "{\"type\":\"web_search_result_location\",\"url\":\"https://b.example\"}]}");
    driver_feed (d, m);
    if (text) {
        driver_feed (d, driver_block (SL_B_START, SL_BK_TEXT, 1));
        m = driver_block (SL_B_DELTA, SL_BK_TEXT, 1);
        m.text = sl_str ("cited");
        driver_feed (d, m);
        m = driver_block (SL_B_END, SL_BK_TEXT, 1);
        m.text = sl_str ("cited");
        driver_feed (d, m);
    }
    m = driver_block (SL_B_FINISH, 0, -1);
    m.finish = SL_FIN_STOP;
    driver_feed (d, m);
    driver_end (d);
}

Test (sl_render_anthropic, citations_belong_to_the_text_that_follows)
{
    for (int text = 0; text < 2; text++) {
        driver_t d;
        driver_start (&d, SL_DIALECT_ANTHROPIC, SL_F_STREAM);
        s_citations_then (&d, text);
        cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "%s", driver_bytes (&d));
        sse_event_t ev [MAX_EVENTS];
        int n = driver_events (&d, ev, MAX_EVENTS);
        const char *want [] = { "message_start", "content_block_start", "content_block_delta",
                                "content_block_delta", "content_block_delta", "content_block_stop",
                                "message_delta", "message_stop", NULL };
        int k = 0, skip = text ? 0 : 1;     //  no text: no text delta
        for (int w = 0; want [w]; w++) {
            if (w == 4 && skip)
                continue;
            cr_expect_str_eq (k < n ? ev [k].name : "", want [w], "text %d, event %d", text, k);
            k++;
        }
        cr_expect_eq (n, k);
        if (n == k) {
            cr_expect_str_eq (s_str (ev [2].data, "delta.citation.url"), "https://a.example", "first, as sent");
            cr_expect_str_eq (s_str (ev [3].data, "delta.citation.url"), "https://b.example");
            if (text)
                cr_expect_str_eq (s_str (ev [4].data, "delta.text"), "cited");
        }
        driver_events_free (ev, n);
        driver_stop (&d);

        //  The same in one body.
        driver_start (&d, SL_DIALECT_ANTHROPIC, 0);
        s_citations_then (&d, text);
        cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0);
        sl_msg_t *last = d.rec.msgs [d.rec.count - 1];
        json_t *b = json_loadb (last->body.ptr, last->body.len, 0, NULL);
        json_t *content = json_object_get (b, "content");
        cr_expect_eq (json_array_size (content), 1, "text %d: one text block", text);
        json_t *block = json_array_get (content, 0);
        cr_expect_str_eq (json_string_value (json_object_get (block, "text")), text ? "cited" : "");
        cr_expect_eq (json_array_size (json_object_get (block, "citations")), 2);
        json_decref (b);
        driver_stop (&d);
    }
}

//  message_start carries the usage the upstream gave at its start (the
//  message event before any block), as the provider sent it; zeros only
//  when it gave none.
Test (sl_render_anthropic, message_start_carries_the_upstream_usage)
{
    for (int with = 0; with < 2; with++) {
        driver_t d;
        driver_start (&d, SL_DIALECT_ANTHROPIC, SL_F_STREAM);
        sl_msg_t m = driver_block (SL_B_MESSAGE, 0, -1);
        m.id = sl_str ("msg_1");
        if (with) {
            m.has_usage = true;
            m.usage = (sl_usage_t) { 472, 2, -1, 80, 20, -1 };
        }
        driver_feed (&d, m);
        driver_feed (&d, driver_block (SL_B_START, SL_BK_TEXT, 0));
        sse_event_t ev [MAX_EVENTS];
        int n = driver_events (&d, ev, MAX_EVENTS);
        cr_assert_geq (n, 1);
        cr_assert_str_eq (ev [0].name, "message_start");
        json_t *usage = json_object_get (json_object_get (ev [0].data, "message"), "usage");
        cr_expect_eq (json_integer_value (json_object_get (usage, "input_tokens")), with ? 472 : 0);
        cr_expect_eq (json_integer_value (json_object_get (usage, "output_tokens")), with ? 2 : 0);
        cr_expect_eq (json_integer_value (json_object_get (usage, "cache_read_input_tokens")), with ? 80 : 0);
        cr_expect_eq (json_integer_value (json_object_get (usage, "cache_creation_input_tokens")), with ? 20 : 0);
        cr_expect_eq (json_object_get (usage, "cache_read_input_tokens") != NULL, with == 1,
                      "cache fields only when reported");
        cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0);
        driver_events_free (ev, n);
        driver_stop (&d);
    }
}
