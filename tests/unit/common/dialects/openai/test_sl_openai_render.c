/*  Unit tests: the OpenAI Chat Completions renderer
    (common/dialects/openai/sl_openai_render), through the emitter: the
    chunks a client reassembles, the usage chunk only when asked for, what
    a chat chunk has no place for left out, errors and [DONE]. */
#include "tests/unit/emit_driver.h"

#define MAX_EVENTS 80

static const char *
s_at (json_t *data, const char *key)
{
    json_t *delta = json_object_get (json_array_get (json_object_get (data, "choices"), 0), "delta");
    json_t *v = json_object_get (delta, key);
    return json_is_string (v) ? json_string_value (v) : NULL;
}

Test (sl_openai_render, chunks_reassemble_into_the_response)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_OPENAI, SL_F_STREAM | SL_F_USAGE);
    driver_full_response (&d, NULL);
    sse_event_t ev [MAX_EVENTS];
    int n = driver_events (&d, ev, MAX_EVENTS);
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "every chunk passed the validator:\n%s", driver_bytes (&d));
    cr_assert_gt (n, 5);
    cr_expect_str_eq (s_at (ev [0].data, "role"), "assistant", "the first chunk gives the role");
    sl_buf_t text = { 0 }, reasoning = { 0 }, args = { 0 };
    const char *call_id = NULL, *finish = NULL;
    json_t *usage = NULL;
    for (int i = 0; i < n && ev [i].data; i++) {
        cr_expect_str_eq (json_string_value (json_object_get (ev [i].data, "id")), "resp-id-1", "one id");
        cr_expect_str_eq (json_string_value (json_object_get (ev [i].data, "object")), "chat.completion.chunk");
        json_t *choice = json_array_get (json_object_get (ev [i].data, "choices"), 0);
        const char *t;
        if ((t = s_at (ev [i].data, "content")))
            sl_buf_puts (&text, t);
        if ((t = s_at (ev [i].data, "reasoning_content")))
            sl_buf_puts (&reasoning, t);
        json_t *call = json_array_get (json_object_get (json_object_get (choice, "delta"), "tool_calls"), 0);
        if (call) {
            cr_expect_eq (json_integer_value (json_object_get (call, "index")), 0, "calls numbered from 0");
            if (json_object_get (call, "id"))
                call_id = json_string_value (json_object_get (call, "id"));
            sl_buf_puts (&args, json_string_value (json_object_get (json_object_get (call, "function"), "arguments")));
        }
        if (json_is_string (json_object_get (choice, "finish_reason")))
            finish = json_string_value (json_object_get (choice, "finish_reason"));
        if (json_object_get (ev [i].data, "usage"))
            usage = json_object_get (ev [i].data, "usage");
    }
    cr_expect_str_eq (sl_buf_cstr (&text), "Paris is sunny \"today\".blocked run_shell", "a notice in its place");
    cr_expect_str_eq (sl_buf_cstr (&reasoning), "Let me think.");
    cr_expect_str_eq (sl_buf_cstr (&args), "{\"city\":\"Paris\"}");
    cr_expect_str_eq (call_id, "call_w1");
    cr_expect_str_eq (finish, "tool_calls");
    cr_assert_not_null (usage, "asked for: the usage chunk");
    cr_expect_eq (json_integer_value (json_object_get (usage, "prompt_tokens")), 40);
    cr_expect_eq (json_integer_value (json_object_get (json_object_get (usage, "completion_tokens_details"),
                                                       "reasoning_tokens")), 5);
    cr_expect_not_null (strstr (driver_bytes (&d), "\"annotations\":[{\"type\":\"url_citation\""),
                        "the citation as an annotation");
    cr_expect_not_null (strstr (driver_bytes (&d), "data: [DONE]\n\n"));
    sl_buf_free (&text);
    sl_buf_free (&reasoning);
    sl_buf_free (&args);
    driver_events_free (ev, n);
    driver_stop (&d);
}

Test (sl_openai_render, usage_only_when_the_client_asked_for_it)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_OPENAI, SL_F_STREAM);
    driver_full_response (&d, NULL);
    const char *bytes = driver_bytes (&d);
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "%s", bytes);
    cr_expect_null (strstr (bytes, "\"usage\""), "the upstream reported usage, the client did not ask: %s", bytes);
    cr_expect_not_null (strstr (bytes, "\"finish_reason\":\"tool_calls\""));
    cr_expect_not_null (strstr (bytes, "data: [DONE]\n\n"));
    driver_stop (&d);
}

Test (sl_openai_render, what_a_chat_chunk_cannot_carry_is_left_out)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_OPENAI, SL_F_STREAM);
    driver_server_tools_response (&d);
    const char *bytes = driver_bytes (&d);
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "%s", bytes);
    cr_expect_null (strstr (bytes, "opaque=="), "redacted thinking has no place in a chat chunk: %s", bytes);
    cr_expect_null (strstr (bytes, "web_search"), "nor a server tool: %s", bytes);
    cr_expect_not_null (strstr (bytes, "data: [DONE]\n\n"));
    driver_stop (&d);
}

//  The first chunk's content, as OpenAI's own streams have it: "" when the
//  message opens with text (or reasoning), null when it opens with a call
//  (openai 7's SDK keeps a message's content null only then).
static json_t *
s_first_content (int first_kind, driver_t *d)
{
    driver_start (d, SL_DIALECT_OPENAI, SL_F_STREAM);
    sl_msg_t m = driver_block (SL_B_START, first_kind, 0);
    if (first_kind == SL_BK_TOOL_CALL) {
        m.id = sl_str ("call_1");
        m.name = sl_str ("get_weather");
    }
    driver_feed (d, m);
    sse_event_t ev [4];
    int n = driver_events (d, ev, 4);
    cr_assert_geq (n, 1, "%s", driver_bytes (d));
    json_t *delta = json_object_get (json_array_get (json_object_get (ev [0].data, "choices"), 0), "delta");
    cr_expect_str_eq (json_string_value (json_object_get (delta, "role")), "assistant");
    json_t *content = json_incref (json_object_get (delta, "content"));
    driver_events_free (ev, n);
    driver_stop (d);
    return content;
}

Test (sl_openai_render, the_first_chunks_content_is_null_before_a_call_and_empty_before_text)
{
    driver_t d;
    json_t *c = s_first_content (SL_BK_TOOL_CALL, &d);
    cr_expect (c && json_is_null (c), "a call first: content null");
    json_decref (c);
    c = s_first_content (SL_BK_REFUSAL, &d);
    cr_expect (c && json_is_null (c), "a refusal first: content null");
    json_decref (c);
    c = s_first_content (SL_BK_TEXT, &d);
    cr_expect (json_is_string (c) && json_string_length (c) == 0, "text first: content \"\"");
    json_decref (c);
    c = s_first_content (SL_BK_THINKING, &d);
    cr_expect (json_is_string (c) && json_string_length (c) == 0, "reasoning first: content \"\"");
    json_decref (c);
}
