/*  Unit tests: common/mcp/sl_mcp_answer (a server's answer, JSON or SSE). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/mcp/sl_mcp_answer.h"

#define BOUND (1u << 20)

static sl_mcp_answer_t *
s_new (int id, const char *content_type)
{
    json_t *jid = json_integer (id);
    sl_mcp_answer_t *a = sl_mcp_answer_new (jid, content_type, BOUND, 0);
    json_decref (jid);
    cr_assert_not_null (a);
    return a;
}

//  Feed text one byte at a time (the worst split); the state after.
static sl_mcp_answer_state_t
s_feed_bytes (sl_mcp_answer_t *a, const char *text)
{
    sl_mcp_answer_state_t state = SL_MCP_ANSWER_MORE;
    for (size_t i = 0; text [i]; i++)
        state = sl_mcp_answer_feed (a, text + i, 1);
    return state;
}

Test (sl_mcp_answer, json_body_completes_on_its_last_byte)
{
    sl_mcp_answer_t *a = s_new (3, "application/json; charset=utf-8");
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"}\"}],\"isError\":false}}";
    size_t n = strlen (body);
    for (size_t i = 0; i + 1 < n; i++)
        cr_assert_eq (sl_mcp_answer_feed (a, body + i, 1), SL_MCP_ANSWER_MORE, "byte %zu", i);
    cr_assert_eq (sl_mcp_answer_feed (a, body + n - 1, 1), SL_MCP_ANSWER_DONE);
    const json_t *result = sl_mcp_answer_result (a);
    cr_assert_not_null (result);
    cr_expect (json_is_false (json_object_get (result, "isError")));
    cr_expect_null (sl_mcp_answer_error (a));
    cr_expect_eq (sl_mcp_answer_bytes (a), n);
    sl_mcp_answer_destroy (&a);
    sl_mcp_answer_destroy (&a);
}

Test (sl_mcp_answer, json_error_response)
{
    sl_mcp_answer_t *a = s_new (3, NULL);
    cr_assert_eq (s_feed_bytes (a, "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32602,\"message\":\"Unknown tool\"}}"),
                  SL_MCP_ANSWER_DONE);
    cr_expect_null (sl_mcp_answer_result (a));
    cr_expect_eq (json_integer_value (json_object_get (sl_mcp_answer_error (a), "code")), -32602);
    sl_mcp_answer_destroy (&a);
}

Test (sl_mcp_answer, sse_skips_notifications_and_refuses_server_requests)
{
    sl_mcp_answer_t *a = s_new (9, "text/event-stream");
    const char *stream =
        "id: prime\ndata:\n\n"
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n"
        "data: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"elicitation/create\",\"params\":{}}\n\n"
        "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\"}}\r\n\r\n"
        "data: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n\n"
        "data: {\"jsonrpc\":\"2.0\",\"id\":9,\n"
        "data: \"result\":{\"content\":[]}}\n\n";
    cr_assert_eq (s_feed_bytes (a, stream), SL_MCP_ANSWER_DONE);
    cr_expect_eq (sl_mcp_answer_notifications (a), 2);
    cr_expect_eq (sl_mcp_answer_requests (a), 1);
    cr_expect (json_is_array (json_object_get (sl_mcp_answer_result (a), "content")));
    //  Done: more bytes change nothing.
    cr_expect_eq (sl_mcp_answer_feed (a, "data: x\n\n", 9), SL_MCP_ANSWER_DONE);
    sl_mcp_answer_destroy (&a);
}

Test (sl_mcp_answer, stream_ending_without_the_response_fails)
{
    sl_mcp_answer_t *a = s_new (1, "text/event-stream");
    cr_expect_eq (s_feed_bytes (a, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n"), SL_MCP_ANSWER_MORE);
    cr_expect_eq (sl_mcp_answer_finish (a), SL_MCP_ANSWER_FAILED);
    cr_expect_str_eq (sl_mcp_answer_reason (a), "server_error");
    sl_mcp_answer_destroy (&a);
    a = s_new (1, "application/json");
    cr_expect_eq (s_feed_bytes (a, "{\"jsonrpc\":\"2.0\",\"id\":1,"), SL_MCP_ANSWER_MORE);
    cr_expect_eq (sl_mcp_answer_finish (a), SL_MCP_ANSWER_FAILED);
    sl_mcp_answer_destroy (&a);
}

Test (sl_mcp_answer, bad_messages_fail)
{
    const char *bodies [] = {
        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}]",           //  a batch
        "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}",             //  another id
        "{\"jsonrpc\":\"2.0\",\"id\":1}",                           //  neither result nor error
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"x\"}",
        "{not json}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies [0]; i++) {
        sl_mcp_answer_t *a = s_new (1, "application/json");
        sl_mcp_answer_feed (a, bodies [i], strlen (bodies [i]));
        cr_expect_eq (sl_mcp_answer_finish (a), SL_MCP_ANSWER_FAILED, "%s", bodies [i]);
        cr_expect_str_eq (sl_mcp_answer_reason (a), "server_error");
        cr_expect_null (sl_mcp_answer_response (a));
        sl_mcp_answer_destroy (&a);
    }
}

Test (sl_mcp_answer, unknown_content_type_is_refused)
{
    json_t *id = json_integer (1);
    cr_expect_null (sl_mcp_answer_new (id, "text/html", BOUND, 0));
    json_decref (id);
}

Test (sl_mcp_answer, an_answer_that_never_ends_is_bounded)
{
    json_t *id = json_integer (1);
    sl_mcp_answer_t *a = sl_mcp_answer_new (id, "text/event-stream", 4096, 1024);
    json_decref (id);
    const char *event = "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n";
    sl_mcp_answer_state_t state = SL_MCP_ANSWER_MORE;
    int fed = 0;
    for (fed = 0; fed < 1000 && state == SL_MCP_ANSWER_MORE; fed++)
        state = sl_mcp_answer_feed (a, event, strlen (event));
    cr_expect_eq (state, SL_MCP_ANSWER_FAILED);
    cr_expect_lt (fed, 1000);
    cr_expect_str_eq (sl_mcp_answer_reason (a), "server_too_large");
    cr_expect_leq (sl_mcp_answer_bytes (a), 4096 + strlen (event));
    sl_mcp_answer_destroy (&a);
}

Test (sl_mcp_answer, an_event_over_the_event_bound_fails)
{
    json_t *id = json_integer (1);
    sl_mcp_answer_t *a = sl_mcp_answer_new (id, "text/event-stream", BOUND, 256);
    json_decref (id);
    char line [600];
    memset (line, 'x', sizeof line);
    cr_expect_eq (sl_mcp_answer_feed (a, "data: ", 6), SL_MCP_ANSWER_MORE);
    cr_expect_eq (sl_mcp_answer_feed (a, line, sizeof line), SL_MCP_ANSWER_FAILED);
    cr_expect_str_eq (sl_mcp_answer_reason (a), "server_too_large");
    sl_mcp_answer_destroy (&a);
}

Test (sl_mcp_answer, a_json_body_over_the_byte_bound_fails)
{
    json_t *id = json_integer (1);
    sl_mcp_answer_t *a = sl_mcp_answer_new (id, "application/json", 64, 0);
    json_decref (id);
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"long enough\"}]}}";
    cr_expect_eq (sl_mcp_answer_feed (a, body, strlen (body)), SL_MCP_ANSWER_FAILED);
    cr_expect_str_eq (sl_mcp_answer_reason (a), "server_too_large");
    cr_expect_null (sl_mcp_answer_result (a));
    sl_mcp_answer_destroy (&a);
}

Test (sl_mcp_answer, string_ids_match_exactly)
{
    json_t *id = json_string ("7");
    sl_mcp_answer_t *a = sl_mcp_answer_new (id, "text/event-stream", BOUND, 0);
    json_decref (id);
    cr_expect_eq (s_feed_bytes (a, "data: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}\n\n"), SL_MCP_ANSWER_MORE);
    cr_expect_eq (s_feed_bytes (a, "data: {\"jsonrpc\":\"2.0\",\"id\":\"7\",\"result\":{}}\n\n"), SL_MCP_ANSWER_DONE);
    sl_mcp_answer_destroy (&a);
}

Test (sl_mcp_answer, an_input_required_result_is_not_relayed)
{
    sl_mcp_answer_t *a = s_new (4, "application/json");
    cr_expect_eq (s_feed_bytes (a, "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"resultType\":\"input_required\","
                                   "\"inputRequests\":{\"a\":{\"method\":\"elicitation/create\"}}}}"), SL_MCP_ANSWER_FAILED);
    cr_expect_str_eq (sl_mcp_answer_reason (a), "server_error");
    cr_expect_eq (sl_mcp_answer_requests (a), 1);
    cr_expect_null (sl_mcp_answer_result (a));
    sl_mcp_answer_destroy (&a);
    a = s_new (4, "application/json");
    cr_expect_eq (s_feed_bytes (a, "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"resultType\":\"complete\",\"content\":[]}}"),
                  SL_MCP_ANSWER_DONE);
    sl_mcp_answer_destroy (&a);
}
