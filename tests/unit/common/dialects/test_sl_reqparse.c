/*  Unit tests: common/dialects/sl_reqparse (what the dialects' request
    parsers share: the model and stream members, tool definitions by a
    dialect's description of its list, the members the model does not
    hold, stop sequences). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/dialects/sl_reqparse.h"

static json_t *
s_json (const char *text)
{
    json_t *v = json_loads (text, 0, NULL);
    cr_assert_not_null (v, "%s", text);
    return v;
}

//  Parse a body's "tools" with spec; the refusal's message, or "" when none.
static int
s_tools (const char *body, const sl_reqparse_tools_t *spec, sl_req_t **req, sl_refusal_t *err)
{
    json_t *root = s_json (body);
    *req = sl_req_new (SL_DIALECT_OPENAI, root);
    return sl_reqparse_tools (json_object_get (root, "tools"), spec, *req, err);
}

static int s_reads;

static int
s_read (json_t *def, sl_tool_t *tool, sl_req_t *req, sl_refusal_t *err)
{
    (void) req;
    s_reads++;
    tool->schema = json_object_get (def, "schema");
    if (json_object_get (def, "refuse"))
        return sl_refuse (err, 400, "invalid_request_error", "refused by the dialect");
    return 0;
}

Test (sl_reqparse, tools_are_read_by_the_dialect_s_names)
{
    sl_reqparse_tools_t spec = { .list = "tools", .function_type = "function", .read = s_read };
    sl_req_t *req;
    sl_refusal_t err = { 0 };
    s_reads = 0;
    cr_assert_eq (s_tools ("{\"tools\":[{\"type\":\"function\",\"name\":\"a\",\"description\":\"d\",\"schema\":{}},"
                           "{\"type\":\"web_search\",\"name\":\"ws\"},{\"type\":\"web_search\"}]}", &spec, &req, &err), 0);
    cr_assert_eq (req->tool_count, 2, "an entry without a name is skipped");
    cr_expect (sl_str_eq (req->tools [0].name, "a"));
    cr_expect (sl_str_eq (req->tools [0].description, "d"));
    cr_expect_null (req->tools [0].server.ptr, "its type is the function type");
    cr_expect_not_null (req->tools [0].schema, "the dialect's own reader ran");
    cr_expect (sl_str_eq (req->tools [1].server, "web_search"), "another type: a provider's own tool");
    cr_expect_eq (s_reads, 2);
    sl_req_destroy (&req);
    //  A provider's tools that have no name are kept (Responses).
    spec.unnamed = SL_REQPARSE_UNNAMED_KEEP;
    cr_assert_eq (s_tools ("{\"tools\":[{\"type\":\"web_search\"}]}", &spec, &req, &err), 0);
    cr_assert_eq (req->tool_count, 1);
    cr_expect_null (req->tools [0].name.ptr);
    cr_expect (sl_str_eq (req->tools [0].server, "web_search"));
    sl_req_destroy (&req);
    //  A definition inside a member of each entry (OpenAI's function).
    sl_reqparse_tools_t wrapped = { .list = "tools", .wrapper = "function", .function_type = "function",
                                    .unnamed = SL_REQPARSE_UNNAMED_REFUSE };
    cr_assert_eq (s_tools ("{\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"description\":\"x\"}}]}",
                           &wrapped, &req, &err), 0);
    cr_assert_eq (req->tool_count, 1);
    cr_expect (sl_str_eq (req->tools [0].name, "f"));
    cr_expect (sl_str_eq (req->tools [0].description, "x"));
    sl_req_destroy (&req);
    cr_expect_eq (s_tools ("{}", &wrapped, &req, &err), 0, "no list");
    sl_req_destroy (&req);
    cr_expect_eq (s_tools ("{\"tools\":null}", &wrapped, &req, &err), 0);
    cr_expect_eq (req->tool_count, 0);
    sl_req_destroy (&req);
    sl_buf_free (&err.message);
}

Test (sl_reqparse, a_list_that_is_not_one_is_refused_in_the_parsers_words)
{
    static const struct {
        const char *body;
        sl_reqparse_tools_t spec;
        const char *message;
    } cases [] = {
        { "{\"tools\":{}}", { .list = "tools" }, "'tools' must be an array" },
        { "{\"tools\":[1]}", { .list = "functionDeclarations" }, "functionDeclarations[0] must be an object" },
        { "{\"tools\":[{\"name\":\"a\"},{\"name\":5}]}", { .list = "tools" }, "tools[1].name must be a string" },
        { "{\"tools\":[{\"function\":{}}]}", { .list = "tools", .wrapper = "function",
                                               .unnamed = SL_REQPARSE_UNNAMED_REFUSE },
          "tools[0].function.name must be a string" },
        { "{\"tools\":[7]}", { .list = "tools", .wrapper = "function", .unnamed = SL_REQPARSE_UNNAMED_REFUSE },
          "tools[0].function.name must be a string" },
        { "{\"tools\":[{\"name\":\"a\",\"refuse\":1}]}", { .list = "tools", .read = s_read },
          "refused by the dialect" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_req_t *req;
        sl_refusal_t err = { 0 };
        cr_expect_eq (s_tools (cases [i].body, &cases [i].spec, &req, &err), -1, "%s", cases [i].body);
        cr_expect_eq (err.status, 400);
        cr_expect_str_eq (sl_buf_cstr (&err.message), cases [i].message, "%s", cases [i].body);
        sl_req_destroy (&req);
        sl_buf_free (&err.message);
    }
}

Test (sl_reqparse, model_and_stream_are_checked_alike_in_every_dialect)
{
    const char *bodies [] = { "{}", "{\"model\":\"\"}", "{\"model\":3}" };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies [0]; i++) {
        json_t *root = s_json (bodies [i]);
        sl_req_t *req = sl_req_new (SL_DIALECT_ANTHROPIC, root);
        sl_refusal_t err = { 0 };
        cr_expect_eq (sl_reqparse_model (root, req, &err), -1, "%s", bodies [i]);
        cr_expect_str_eq (sl_buf_cstr (&err.message), "'model' is required and must be a string");
        sl_req_destroy (&req);
        sl_buf_free (&err.message);
    }
    json_t *root = s_json ("{\"model\":\"m\",\"stream\":\"yes\"}");
    sl_req_t *req = sl_req_new (SL_DIALECT_ANTHROPIC, root);
    sl_refusal_t err = { 0 };
    cr_expect_eq (sl_reqparse_model (root, req, &err), 0);
    cr_expect (sl_str_eq (req->model, "m"));
    cr_expect_eq (sl_reqparse_stream (root, req, &err), -1);
    cr_expect_str_eq (sl_buf_cstr (&err.message), "'stream' must be a boolean");
    json_object_set_new (root, "stream", json_true ());
    cr_expect_eq (sl_reqparse_stream (root, req, &err), 0);
    cr_expect (req->stream);
    json_object_set_new (root, "stream", json_null ());
    cr_expect_eq (sl_reqparse_stream (root, req, &err), 0, "null: the default");
    cr_expect_not (req->stream);
    sl_req_destroy (&req);
    sl_buf_free (&err.message);
}

Test (sl_reqparse, members_the_model_does_not_hold_are_noted_once_each)
{
    static const char *const mapped [] = { "model", "messages", NULL };
    static const char *const matters [] = { "audio", NULL };
    static const char *const informative [] = { "store", NULL };
    json_t *root = s_json ("{\"model\":\"m\",\"messages\":[],\"store\":true,\"audio\":{},\"seed\":null,"
                           "\"mine\":1,\"yours\":2}");
    sl_req_t *req = sl_req_new (SL_DIALECT_OPENAI, root);
    sl_reqparse_fields (req, root, mapped, matters, informative);
    cr_assert_eq (req->feature_count, 3, "store, audio and other fields; a null member is not given");
    cr_expect_str_eq (req->features [0].name, "store");
    cr_expect_not (req->features [0].matters);
    cr_expect_str_eq (req->features [1].name, "audio");
    cr_expect (req->features [1].matters);
    cr_expect_str_eq (req->features [2].name, SL_REQ_OTHER_FIELDS, "a client's own keys never name a label");
    cr_expect (sl_reqparse_listed ("model", mapped));
    cr_expect_not (sl_reqparse_listed ("mode", mapped));
    sl_reqparse_fields (req, NULL, mapped, matters, informative);
    cr_expect_eq (req->feature_count, 3, "no object: nothing");
    sl_req_destroy (&req);
}

Test (sl_reqparse, stop_sequences_are_the_strings_of_an_array)
{
    json_t *root = s_json ("{\"stop\":[\"a\",1,\"b\"],\"one\":\"c\"}");
    sl_req_t *req = sl_req_new (SL_DIALECT_OPENAI, root);
    sl_reqparse_stops (req, json_object_get (root, "stop"));
    sl_reqparse_stops (req, json_object_get (root, "one"));
    cr_assert_eq (req->stop_count, 2, "not a number, not a lone string");
    cr_expect (sl_str_eq (req->stop [0], "a"));
    cr_expect (sl_str_eq (req->stop [1], "b"));
    sl_req_destroy (&req);
}
