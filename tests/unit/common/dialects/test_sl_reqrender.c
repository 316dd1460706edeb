/*  Unit tests: common/dialects/sl_reqrender (what the dialects' request
    renderers share: tools as each format declares them, arguments as an
    object, a message's blocks with the results first, turns of one role
    joined, the body written). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_reqrender.h"
#include "proto/sl_msg.h"

//  A value's compact JSON text, for comparison (the value is released).
static char *
s_text (json_t *value)
{
    char *text = json_dumps (value, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref (value);
    return text;
}

static void
s_expect_json (json_t *value, const char *expected)
{
    char *text = s_text (value);
    cr_expect_str_eq (text, expected);
    free (text);
}

//  A request with two tools: one with a schema and strict, one bare.
static sl_req_t *
s_tools_req (void)
{
    sl_req_t *req = sl_req_new (SL_DIALECT_OPENAI, NULL);
    sl_tool_t *t = sl_req_add_tool (req);
    t->name = SL_STR_LIT ("get");
    t->description = SL_STR_LIT ("gets");
    t->schema = sl_req_own (req, json_pack ("{s:s}", "type", "object"));
    t->strict = true;
    sl_req_add_tool (req)->name = SL_STR_LIT ("bare");
    return req;
}

Test (sl_reqrender, tools_are_declared_as_each_format_names_them)
{
    sl_req_t *req = s_tools_req ();
    sl_xlate_t x = { 0 };
    static const sl_reqrender_tools_t flat = { .schema = "input_schema", .no_schema = "{\"type\":\"object\"}",
                                               .own = "theirs" };
    json_t *list = json_array ();
    cr_assert_eq (sl_reqrender_tools (req, &flat, &x, list), 0);
    s_expect_json (list, "[{\"name\":\"get\",\"description\":\"gets\",\"input_schema\":{\"type\":\"object\"}},"
                         "{\"name\":\"bare\",\"input_schema\":{\"type\":\"object\"}}]");
    static const sl_reqrender_tools_t wrapped = { .type = "function", .wrapper = "function", .schema = "parameters",
                                                  .strict = SL_REQRENDER_STRICT_WHEN, .own = "theirs" };
    list = json_array ();
    cr_assert_eq (sl_reqrender_tools (req, &wrapped, &x, list), 0);
    s_expect_json (list, "[{\"type\":\"function\",\"function\":{\"name\":\"get\",\"description\":\"gets\","
                         "\"parameters\":{\"type\":\"object\"},\"strict\":true}},"
                         "{\"type\":\"function\",\"function\":{\"name\":\"bare\"}}]");
    static const sl_reqrender_tools_t nested = { .wrapper = "toolSpec", .schema = "inputSchema.json",
                                                 .strict = SL_REQRENDER_STRICT_ALWAYS, .own = "theirs" };
    list = json_array ();
    cr_assert_eq (sl_reqrender_tools (req, &nested, &x, list), 0);
    s_expect_json (list, "[{\"toolSpec\":{\"name\":\"get\",\"description\":\"gets\","
                         "\"inputSchema\":{\"json\":{\"type\":\"object\"}},\"strict\":true}},"
                         "{\"toolSpec\":{\"name\":\"bare\",\"strict\":false}}]");
    //  A provider's own tool cannot cross.
    sl_req_add_tool (req)->server = SL_STR_LIT ("web_search_20250305");
    x.from = "anthropic";
    x.to = "openai";
    list = json_array ();
    cr_expect_eq (sl_reqrender_tools (req, &flat, &x, list), -1);
    cr_expect_eq (x.status, 400);
    cr_expect_not_null (strstr (sl_buf_cstr (&x.message), "a provider's own tool cannot cross"));
    cr_expect_not_null (strstr (sl_buf_cstr (&x.message), ": theirs"));
    json_decref (list);
    sl_xlate_clear (&x);
    sl_req_destroy (&req);
}

Test (sl_reqrender, arguments_that_are_not_an_object_become_one_and_are_noted)
{
    sl_xlate_t x = { 0 };
    sl_part_t call = { .kind = SL_PART_TOOL_CALL, .arguments = SL_STR_LIT ("{\"a\":1}") };
    s_expect_json (sl_reqrender_args (&call, &x), "{\"a\":1}");
    cr_expect_eq (x.drop_count, 0);
    s_expect_json (sl_reqrender_args_text (&call), "\"{\\\"a\\\":1}\"");
    call.arguments = SL_STR_LIT ("[1]");
    s_expect_json (sl_reqrender_args (&call, &x), "{}");
    cr_expect_eq (x.drop_count, 1);
    call.arguments = SL_STR_NULL;
    s_expect_json (sl_reqrender_args (&call, &x), "{}");
    s_expect_json (sl_reqrender_args_text (&call), "\"{}\"");
    cr_expect_eq (x.drop_count, 1, "noted once");
    sl_xlate_clear (&x);
}

//  A part as {"k": kind}; an OPAQUE part is refused.
static int
s_part (const sl_req_t *req, const sl_part_t *part, sl_xlate_t *x, json_t **out)
{
    (void) req;
    if (part->kind == SL_PART_OPAQUE)
        return sl_reqrender_refuse_part (x, part, "Format");
    if (part->kind != SL_PART_REFUSAL)
        *out = json_pack ("{s:i}", "k", part->kind);
    return 0;
}

Test (sl_reqrender, a_message_s_blocks_have_its_results_first)
{
    sl_req_t *req = sl_req_new (SL_DIALECT_OPENAI, NULL);
    sl_message_t *m = sl_req_add_message (req, SL_ROLE_USER);
    sl_req_add_part (m, SL_PART_TEXT);
    sl_req_add_part (m, SL_PART_TOOL_RESULT);
    sl_req_add_part (m, SL_PART_REFUSAL);         //  goes nowhere
    sl_req_add_part (m, SL_PART_TOOL_RESULT);
    sl_xlate_t x = { .from = "a", .to = "b" };
    json_t *blocks;
    cr_assert_eq (sl_reqrender_blocks (req, m, s_part, &x, &blocks), 0);
    s_expect_json (blocks, "[{\"k\":4},{\"k\":4},{\"k\":1}]");
    sl_req_add_part (m, SL_PART_OPAQUE)->text = SL_STR_LIT ("audio");
    cr_expect_eq (sl_reqrender_blocks (req, m, s_part, &x, &blocks), -1);
    cr_expect_null (blocks);
    cr_expect_str_eq (sl_buf_cstr (&x.message), "audio cannot cross from a a client to the b upstream this model "
                                                "is routed to: the client's dialect has it, Format does not");
    sl_xlate_clear (&x);
    sl_req_destroy (&req);
}

static bool
s_is_result (json_t *block)
{
    return json_object_get (block, "r") != NULL;
}

Test (sl_reqrender, turns_of_one_role_are_joined_with_the_results_first)
{
    json_t *turns = json_array ();
    sl_reqrender_turn (turns, "user", "content", json_pack ("[{s:i},{s:i}]", "r", 1, "t", 1), s_is_result);
    sl_reqrender_turn (turns, "user", "content", json_pack ("[{s:i},{s:i}]", "t", 2, "r", 2), s_is_result);
    sl_reqrender_turn (turns, "model", "content", json_pack ("[{s:i}]", "t", 3), s_is_result);
    s_expect_json (turns, "[{\"role\":\"user\",\"content\":[{\"r\":1},{\"r\":2},{\"t\":1},{\"t\":2}]},"
                          "{\"role\":\"model\",\"content\":[{\"t\":3}]}]");
}

Test (sl_reqrender, the_body_is_written_only_when_nothing_was_refused)
{
    sl_buf_t out = { 0 };
    json_t *root = json_pack ("{s:f,s:s}", "t", 0.7, "m", "x");
    cr_expect_eq (sl_reqrender_end (root, 0, &out), 0);
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"t\":0.7,\"m\":\"x\"}", "compact, numbers as they read");
    sl_buf_reset (&out);
    cr_expect_eq (sl_reqrender_end (json_object (), -1, &out), -1);
    cr_expect_eq (out.len, 0);
    sl_buf_free (&out);
}

Test (sl_reqrender, numbers_are_set_only_when_given)
{
    json_t *o = json_object ();
    sl_reqrender_real (o, "t", NAN);
    sl_reqrender_real (o, "p", 0.5);
    sl_reqrender_int (o, "k", -1);
    sl_reqrender_int (o, "n", 0);
    json_object_set_new (o, "s", sl_reqrender_strs ((sl_str_t []) { SL_STR_LIT ("a"), SL_STR_NULL }, 2));
    json_object_set_new (o, "e", sl_reqrender_str (SL_STR_NULL));
    s_expect_json (o, "{\"p\":0.5,\"n\":0,\"s\":[\"a\",\"\"],\"e\":\"\"}");
}

Test (sl_reqrender, a_schema_format_has_a_name_and_a_schema_always)
{
    sl_req_t *req = sl_req_new (SL_DIALECT_OPENAI, NULL);
    s_expect_json (sl_reqrender_schema_format (req, NULL), "{\"name\":\"response\",\"schema\":{}}");
    req->format_name = SL_STR_LIT ("answer");
    req->format_schema = sl_req_own (req, json_pack ("{s:s}", "type", "object"));
    s_expect_json (sl_reqrender_schema_format (req, "json_schema"),
                   "{\"type\":\"json_schema\",\"name\":\"answer\",\"schema\":{\"type\":\"object\"}}");
    sl_req_destroy (&req);
}
