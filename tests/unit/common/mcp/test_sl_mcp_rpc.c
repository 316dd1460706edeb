/*  Unit tests: common/mcp/sl_mcp_rpc (a client's JSON-RPC message checked). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/mcp/sl_mcp_rpc.h"

#define HEADERS_MAX 8

//  Headers for a test: pairs of name and value, NULL-terminated.
typedef struct {
    const char *pairs [HEADERS_MAX * 2 + 1];
} headers_t;

static const char *
s_header (void *arg, const char *name)
{
    headers_t *h = arg;
    for (int i = 0; h->pairs [i]; i += 2)
        if (strcasecmp (h->pairs [i], name) == 0)
            return h->pairs [i + 1];
    return NULL;
}

static int
s_parse (const char *body, headers_t *h, sl_mcp_rpc_t *rpc, sl_mcp_error_t *err)
{
    sl_mcp_headers_t headers = { s_header, h };
    return sl_mcp_rpc_parse (sl_str (body), &headers, rpc, err);
}

//  Parse that must fail with status and code; returns nothing.
static void
s_refused (const char *body, headers_t *h, int status, int code, const char *reason)
{
    sl_mcp_rpc_t rpc;
    sl_mcp_error_t err;
    cr_assert_eq (s_parse (body, h, &rpc, &err), -1, "should be refused: %.80s", body);
    cr_expect_eq (err.status, status, "status %d for %.80s", err.status, body);
    cr_expect_eq (err.code, code, "code %d for %.80s", err.code, body);
    cr_expect_str_eq (err.reason, reason, "reason for %.80s", body);
    sl_mcp_rpc_free (&rpc);
}

static const char *s_call =
    "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"get_weather\","
    "\"arguments\":{\"city\":\"Oslo\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
    "\"traceparent\":\"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\",\"tracestate\":\"k=v\"}}}";

Test (sl_mcp_rpc, revisions_by_name)
{
    cr_expect_eq (sl_mcp_rev_parse (sl_str ("2025-06-18")), SL_MCP_REV_2025_06_18);
    cr_expect_eq (sl_mcp_rev_parse (sl_str ("2025-11-25")), SL_MCP_REV_2025_11_25);
    cr_expect_eq (sl_mcp_rev_parse (sl_str ("2026-07-28")), SL_MCP_REV_2026_07_28);
    cr_expect_eq (sl_mcp_rev_parse (sl_str ("2025-03-26")), SL_MCP_REV_UNKNOWN);
    cr_expect_eq (sl_mcp_rev_parse (SL_STR_NULL), SL_MCP_REV_UNKNOWN);
    cr_expect_str_eq (sl_mcp_rev_name (SL_MCP_REV_2025_11_25), "2025-11-25");
    cr_expect_str_eq (sl_mcp_rev_name (SL_MCP_REV_UNKNOWN), "");
    cr_expect (sl_mcp_rev_stateless (SL_MCP_REV_2026_07_28));
    cr_expect_not (sl_mcp_rev_stateless (SL_MCP_REV_2025_11_25));
}

Test (sl_mcp_rpc, stateless_call_with_matching_headers)
{
    headers_t h = { { "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call",
                      "Mcp-Name", "get_weather", NULL } };
    sl_mcp_rpc_t rpc;
    sl_mcp_error_t err;
    cr_assert_eq (s_parse (s_call, &h, &rpc, &err), 0, "%s", err.message);
    cr_expect_eq (rpc.kind, SL_MCP_REQUEST);
    cr_expect_eq (json_integer_value (rpc.id), 7);
    cr_expect_str_eq (rpc.method, "tools/call");
    cr_expect_str_eq (rpc.name, "get_weather");
    cr_expect_eq (rpc.rev, SL_MCP_REV_2026_07_28);
    cr_expect_str_eq (rpc.traceparent, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    cr_expect_str_eq (rpc.tracestate, "k=v");
    sl_mcp_rpc_free (&rpc);
    sl_mcp_rpc_free (&rpc);             //  twice is safe
}

Test (sl_mcp_rpc, base64_name_is_decoded_before_comparing)
{
    //  "get_weather" in the sentinel form.
    headers_t h = { { "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call",
                      "Mcp-Name", "=?base64?Z2V0X3dlYXRoZXI=?=", NULL } };
    sl_mcp_rpc_t rpc;
    sl_mcp_error_t err;
    cr_assert_eq (s_parse (s_call, &h, &rpc, &err), 0, "%s", err.message);
    sl_mcp_rpc_free (&rpc);
    headers_t bad = { { "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call",
                        "Mcp-Name", "=?base64?!!!?=", NULL } };
    s_refused (s_call, &bad, 400, SL_MCP_ERR_HEADER_MISMATCH, "header_mismatch");
    //  "get_weathes": decodes fine, differs.
    headers_t other = { { "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call",
                          "Mcp-Name", "=?base64?Z2V0X3dlYXRoZXM=?=", NULL } };
    s_refused (s_call, &other, 400, SL_MCP_ERR_HEADER_MISMATCH, "header_mismatch");
}

Test (sl_mcp_rpc, every_mirrored_header_missing_or_different_is_a_mismatch)
{
    headers_t cases [] = {
        { { "Mcp-Method", "tools/call", "Mcp-Name", "get_weather", NULL } },              //  no version
        { { "MCP-Protocol-Version", "2026-07-28", "Mcp-Name", "get_weather", NULL } },    //  no method
        { { "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", NULL } },   //  no name
        { { "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list",
            "Mcp-Name", "get_weather", NULL } },                                            //  method differs
        { { "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call",
            "Mcp-Name", "get_weathe", NULL } },                                             //  name differs
        { { "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call",
            "Mcp-Name", "get_weather\x01", NULL } },                                        //  bad character
        { { "MCP-Protocol-Version", "2025-11-25", "Mcp-Method", "tools/call",
            "Mcp-Name", "get_weather", NULL } },                                            //  version differs from _meta
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++)
        s_refused (s_call, &cases [i], 400, SL_MCP_ERR_HEADER_MISMATCH, "header_mismatch");
}

Test (sl_mcp_rpc, stateless_header_needs_the_body_meta)
{
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/list\",\"params\":{}}";
    headers_t h = { { "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list", NULL } };
    s_refused (body, &h, 400, SL_MCP_ERR_HEADER_MISMATCH, "header_mismatch");
}

Test (sl_mcp_rpc, resources_read_mirrors_the_uri)
{
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{"
                       "\"uri\":\"file:///a.txt\",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}";
    headers_t h = { { "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "resources/read",
                      "Mcp-Name", "file:///a.txt", NULL } };
    sl_mcp_rpc_t rpc;
    sl_mcp_error_t err;
    cr_assert_eq (s_parse (body, &h, &rpc, &err), 0, "%s", err.message);
    cr_expect_str_eq (rpc.name, "file:///a.txt");
    sl_mcp_rpc_free (&rpc);
    headers_t bad = { { "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "resources/read",
                        "Mcp-Name", "file:///b.txt", NULL } };
    s_refused (body, &bad, 400, SL_MCP_ERR_HEADER_MISMATCH, "header_mismatch");
}

Test (sl_mcp_rpc, session_revisions_need_no_mirrors)
{
    const char *body = "{\"jsonrpc\":\"2.0\",\"id\":\"x-1\",\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}";
    headers_t h = { { "MCP-Protocol-Version", "2025-11-25", NULL } };
    sl_mcp_rpc_t rpc;
    sl_mcp_error_t err;
    cr_assert_eq (s_parse (body, &h, &rpc, &err), 0, "%s", err.message);
    cr_expect_eq (rpc.rev, SL_MCP_REV_2025_11_25);
    cr_expect_str_eq (json_string_value (rpc.id), "x-1");
    cr_expect_null (rpc.traceparent);
    sl_mcp_rpc_free (&rpc);
    headers_t none = { { NULL } };
    cr_assert_eq (s_parse (body, &none, &rpc, &err), 0, "%s", err.message);
    cr_expect_eq (rpc.rev, SL_MCP_REV_UNKNOWN);
    sl_mcp_rpc_free (&rpc);
    headers_t unknown = { { "MCP-Protocol-Version", "1999-01-01", NULL } };
    s_refused (body, &unknown, 400, SL_MCP_ERR_UNSUPPORTED_VERSION, "bad_version");
}

Test (sl_mcp_rpc, notification_has_no_id)
{
    headers_t h = { { NULL } };
    sl_mcp_rpc_t rpc;
    sl_mcp_error_t err;
    cr_assert_eq (s_parse ("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &h, &rpc, &err), 0);
    cr_expect_eq (rpc.kind, SL_MCP_NOTIFICATION);
    cr_expect_null (rpc.id);
    cr_expect_null (rpc.params);
    sl_mcp_rpc_free (&rpc);
}

Test (sl_mcp_rpc, bad_messages_are_refused)
{
    headers_t h = { { NULL } };
    s_refused ("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", &h, 400, SL_MCP_ERR_INVALID_REQUEST, "bad_request");
    s_refused ("\"ping\"", &h, 400, SL_MCP_ERR_INVALID_REQUEST, "bad_request");
    s_refused ("42", &h, 400, SL_MCP_ERR_INVALID_REQUEST, "bad_request");
    s_refused ("{\"jsonrpc\":\"2.0\",\"id\":1,", &h, 400, SL_MCP_ERR_PARSE, "bad_json");
    s_refused ("", &h, 400, SL_MCP_ERR_PARSE, "bad_json");
    s_refused ("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", &h, 400, SL_MCP_ERR_INVALID_REQUEST, "bad_request");
    s_refused ("{\"id\":1,\"method\":\"ping\"}", &h, 400, SL_MCP_ERR_INVALID_REQUEST, "bad_request");
    s_refused ("{\"jsonrpc\":\"2.0\",\"id\":1}", &h, 400, SL_MCP_ERR_INVALID_REQUEST, "bad_request");
    s_refused ("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", &h, 400, SL_MCP_ERR_INVALID_REQUEST, "bad_request");
    s_refused ("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", &h, 400, SL_MCP_ERR_INVALID_REQUEST, "bad_request");
    s_refused ("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", &h, 400, SL_MCP_ERR_INVALID_REQUEST, "bad_request");
    s_refused ("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", &h, 400, SL_MCP_ERR_INVALID_REQUEST, "bad_request");
    s_refused ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", &h, 400, SL_MCP_ERR_INVALID_REQUEST, "bad_request");
    s_refused ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[1]}", &h, 400, SL_MCP_ERR_INVALID_REQUEST, "bad_request");
    s_refused ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":3}}", &h, 400, SL_MCP_ERR_INVALID_PARAMS, "bad_request");
    s_refused ("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}", &h, 400, SL_MCP_ERR_PARSE, "bad_json");
}

Test (sl_mcp_rpc, oversized_body_is_refused_before_parsing)
{
    size_t n = SL_MCP_MAX_BODY + 1;
    char *body = malloc (n + 1);
    memset (body, ' ', n);
    memcpy (body, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", 40);
    body [n] = 0;
    headers_t h = { { NULL } };
    s_refused (body, &h, 413, SL_MCP_ERR_INVALID_REQUEST, "too_large");
    free (body);
}

//  A ping whose params hold depth nested arrays.
static char *
s_deep (int depth)
{
    char *body = malloc ((size_t) depth * 2 + 128);
    char *p = body + sprintf (body, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":");
    for (int i = 0; i < depth; i++)
        *p++ = '[';
    for (int i = 0; i < depth; i++)
        *p++ = ']';
    strcpy (p, "}}");
    return body;
}

Test (sl_mcp_rpc, deep_json_is_refused)
{
    headers_t h = { { NULL } };
    //  The message object and params are two levels: 62 arrays make 64.
    char *ok = s_deep (SL_MCP_MAX_DEPTH - 2);
    sl_mcp_rpc_t rpc;
    sl_mcp_error_t err;
    cr_expect_eq (s_parse (ok, &h, &rpc, &err), 0, "%s", err.message);
    sl_mcp_rpc_free (&rpc);
    free (ok);
    char *deep = s_deep (SL_MCP_MAX_DEPTH - 1);
    s_refused (deep, &h, 400, SL_MCP_ERR_INVALID_REQUEST, "too_deep");
    free (deep);
    char *deeper = s_deep (10000);      //  past even the scanner's own bound
    s_refused (deeper, &h, 400, SL_MCP_ERR_INVALID_REQUEST, "too_deep");
    free (deeper);
}

Test (sl_mcp_rpc, error_and_result_responses)
{
    headers_t h = { { NULL } };
    sl_mcp_rpc_t rpc;
    sl_mcp_error_t err;
    cr_assert_eq (s_parse ("{\"jsonrpc\":\"2.0\",\"id\":\"q\\\"1\",\"method\":\"ping\"}", &h, &rpc, &err), 0);
    sl_buf_t out = { 0 };
    sl_mcp_error_set (&err, 400, SL_MCP_ERR_INVALID_PARAMS, "unknown_tool", "Unknown tool: %s", "x\"y");
    sl_mcp_error_json (&rpc, &err, &out);
    cr_expect_str_eq (sl_buf_cstr (&out),
                      "{\"jsonrpc\":\"2.0\",\"id\":\"q\\\"1\",\"error\":{\"code\":-32602,\"message\":\"Unknown tool: x\\\"y\"}}");
    sl_buf_reset (&out);
    json_t *result = json_pack ("{s:[]}", "tools");
    sl_mcp_result_json (&rpc, result, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"jsonrpc\":\"2.0\",\"id\":\"q\\\"1\",\"result\":{\"tools\":[]}}");
    json_decref (result);
    sl_buf_reset (&out);
    sl_mcp_error_json (NULL, &err, &out);
    cr_expect (strstr (sl_buf_cstr (&out), "\"id\":null") != NULL);
    sl_buf_free (&out);
    sl_mcp_rpc_free (&rpc);
}

Test (sl_mcp_rpc, a_refusal_after_the_id_answers_it)
{
    headers_t h = { { NULL } };
    sl_mcp_rpc_t rpc;
    sl_mcp_error_t err;
    cr_assert_eq (s_parse ("{\"jsonrpc\":\"1\",\"id\":5,\"method\":\"ping\"}", &h, &rpc, &err), -1);
    sl_buf_t out = { 0 };
    sl_mcp_error_json (&rpc, &err, &out);
    cr_expect (strstr (sl_buf_cstr (&out), "\"id\":5,") != NULL, "%s", sl_buf_cstr (&out));
    sl_buf_free (&out);
    sl_mcp_rpc_free (&rpc);
}

Test (sl_mcp_rpc, unsupported_version_lists_the_supported_ones)
{
    headers_t h = { { "MCP-Protocol-Version", "1900-01-01", NULL } };
    sl_mcp_rpc_t rpc;
    sl_mcp_error_t err;
    cr_assert_eq (s_parse ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", &h, &rpc, &err), -1);
    sl_buf_t out = { 0 };
    sl_mcp_error_json (&rpc, &err, &out);
    cr_expect_str_eq (sl_buf_cstr (&out),
                      "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32022,\"message\":\"Unsupported protocol version\","
                      "\"data\":{\"supported\":[\"2026-07-28\",\"2025-11-25\",\"2025-06-18\"],\"requested\":\"1900-01-01\"}}}");
    sl_buf_free (&out);
    sl_mcp_rpc_free (&rpc);
}

Test (sl_mcp_rpc, a_stateless_result_says_it_is_complete)
{
    headers_t h = { { "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list", NULL } };
    sl_mcp_rpc_t rpc;
    sl_mcp_error_t err;
    cr_assert_eq (s_parse ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\",\"params\":{\"_meta\":"
                           "{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}", &h, &rpc, &err), 0, "%s", err.message);
    sl_buf_t out = { 0 };
    sl_mcp_result_json (&rpc, NULL, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resultType\":\"complete\"}}");
    sl_buf_free (&out);
    sl_mcp_rpc_free (&rpc);
}
