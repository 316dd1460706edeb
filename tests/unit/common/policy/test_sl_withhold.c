/*  Unit tests: common/policy/sl_withhold (a tool's definition removed from
    a request, which stays valid in every dialect: the normalized request
    and the client's body lose the tool, a choice of it, and a reference
    to it). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_job.h"
#include "common/policy/sl_withhold.h"

//  A request of dialect, parsed.
static sl_req_t *
s_parse (int dialect, const char *body, sl_job_t *job)
{
    sl_endpoint_t ep = { .dialect = dialect, .stream = true, .sse = true, .model = "m" };
    cr_assert_eq (sl_job_parse (&ep, sl_str (body), job), 0, "%s", sl_buf_cstr (&job->error_message));
    return job->req;
}

//  The client's body now, compact.
static char *
s_body (sl_req_t *req)
{
    return json_dumps (req->root, JSON_COMPACT);
}

Test (sl_withhold, chat_completions_loses_the_tool_its_choice_and_then_every_tool_member)
{
    sl_job_t job;
    sl_req_t *req = s_parse (SL_DIALECT_OPENAI,
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"tools\":["
        "{\"type\":\"function\",\"function\":{\"name\":\"bash\"}},{\"type\":\"function\",\"function\":{\"name\":\"read\"}}],"
        "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"bash\"}},\"parallel_tool_calls\":false}", &job);
    cr_assert_eq (req->tool_count, 2);
    cr_expect_eq (sl_withhold_tool (req, SL_STR_LIT ("bash")), 0);
    cr_assert_eq (req->tool_count, 1);
    cr_expect (sl_str_eq (req->tools [0].name, "read"));
    cr_expect_eq (req->tool_choice, SL_CHOICE_UNSET, "a choice of it goes back to the provider's default");
    cr_expect (req->edited);
    char *body = s_body (req);
    cr_expect_null (strstr (body, "bash"), "%s", body);
    cr_expect_null (strstr (body, "tool_choice"), "%s", body);
    cr_expect_not_null (strstr (body, "parallel_tool_calls"), "a tool is left: %s", body);
    free (body);
    cr_expect_eq (sl_withhold_tool (req, SL_STR_LIT ("bash")), -1, "not there any more");
    cr_expect_eq (sl_withhold_tool (req, SL_STR_LIT ("read")), 0);
    body = s_body (req);
    cr_expect_null (strstr (body, "tools"), "no tool left: %s", body);
    cr_expect_null (strstr (body, "parallel_tool_calls"), "%s", body);
    free (body);
    sl_job_clear (&job);
}

Test (sl_withhold, gemini_loses_the_declaration_and_its_allowed_name)
{
    sl_job_t job;
    sl_req_t *req = s_parse (SL_DIALECT_GEMINI,
        "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}],\"tools\":["
        "{\"functionDeclarations\":[{\"name\":\"bash\"}]},{\"functionDeclarations\":[{\"name\":\"read\"}]}],"
        "\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"ANY\",\"allowedFunctionNames\":[\"bash\"]}}}", &job);
    cr_expect_eq (sl_withhold_tool (req, SL_STR_LIT ("bash")), 0);
    char *body = s_body (req);
    cr_expect_str_eq (body, "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}],\"tools\":["
                            "{\"functionDeclarations\":[{\"name\":\"read\"}]}],\"toolConfig\":{}}",
                      "the emptied entry and the calling config without names go");
    free (body);
    sl_job_clear (&job);
}

Test (sl_withhold, a_reference_to_the_tool_becomes_text_saying_it_was_withheld)
{
    sl_job_t job;
    sl_req_t *req = s_parse (SL_DIALECT_ANTHROPIC,
        "{\"model\":\"m\",\"max_tokens\":10,\"tools\":[{\"name\":\"bash\",\"input_schema\":{}},"
        "{\"name\":\"search\",\"input_schema\":{}}],\"messages\":[{\"role\":\"assistant\",\"content\":["
        "{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"search\",\"input\":{}}]},{\"role\":\"user\",\"content\":["
        "{\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":[{\"type\":\"tool_reference\","
        "\"tool_name\":\"bash\"}]}]}]}", &job);
    cr_expect_eq (sl_withhold_tool (req, SL_STR_LIT ("bash")), 0);
    const sl_part_t *result = &req->messages [1].parts [0];
    cr_assert_eq (result->kind, SL_PART_TOOL_RESULT);
    cr_assert_eq (result->content_count, 1);
    cr_expect_eq (result->content [0].kind, SL_PART_TEXT, "no longer a reference");
    cr_expect_not_null (strstr (result->content [0].text.ptr, "the tool bash was withheld"));
    char *body = s_body (req);
    cr_expect_null (strstr (body, "tool_reference"), "%s", body);
    cr_expect_not_null (strstr (body, "{\"type\":\"text\",\"text\":\"[the tool bash was withheld"), "%s", body);
    cr_expect_not_null (strstr (body, "\"name\":\"search\""), "the other tool stays: %s", body);
    free (body);
    sl_job_clear (&job);
}

Test (sl_withhold, a_responses_allowed_tools_list_loses_it_and_goes_when_empty)
{
    sl_job_t job;
    sl_req_t *req = s_parse (SL_DIALECT_RESPONSES,
        "{\"model\":\"m\",\"input\":\"hi\",\"tools\":[{\"type\":\"function\",\"name\":\"bash\"},"
        "{\"type\":\"function\",\"name\":\"read\"}],\"tool_choice\":{\"type\":\"allowed_tools\",\"mode\":\"auto\","
        "\"tools\":[{\"type\":\"function\",\"name\":\"bash\"}]}}", &job);
    cr_expect_eq (sl_withhold_tool (req, SL_STR_LIT ("bash")), 0);
    char *body = s_body (req);
    cr_expect_null (strstr (body, "tool_choice"), "%s", body);
    cr_expect_not_null (strstr (body, "\"name\":\"read\""), "%s", body);
    free (body);
    sl_job_clear (&job);
}
