/*  Unit tests: common/dialects/responses/sl_responses_request - Responses
    requests parsed into the normalized request, forwarded to a Responses
    upstream, and rendered from the other dialects' requests. */
#include "tests/tools_view.h"
#include "tests/unit/request_driver.h"

Test (sl_responses_request, parses_items_into_turns)
{
    sl_job_t r;
    cr_assert_eq (rq_parse (SL_DIALECT_RESPONSES,
        "{\"model\":\"gpt-x\",\"instructions\":\"Be brief.\",\"input\":["
        "{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"see\"},"
        "{\"type\":\"input_image\",\"image_url\":\"data:image/gif;base64,R0lG\"},{\"type\":\"input_file\",\"file_id\":\"f\"}]},"
        "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"sum\"}],"
        "\"encrypted_content\":\"ENC\"},"
        "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"ok\"}]},"
        "{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"run\",\"arguments\":\"{}\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"done\"},"
        "{\"role\":\"developer\",\"content\":\"later\"}],"
        "\"tools\":[{\"type\":\"function\",\"name\":\"run\",\"parameters\":{\"type\":\"object\"},\"strict\":true},"
        "{\"type\":\"web_search\"}],\"text\":{\"format\":{\"type\":\"json_object\"}},"
        "\"reasoning\":{\"effort\":\"medium\"},\"max_output_tokens\":99,\"previous_response_id\":\"resp_1\","
        "\"store\":false}", &r), 0, "%s", sl_buf_cstr (&r.error_message));
    const sl_req_t *q = r.req;
    cr_assert_eq (q->message_count, 5, "instructions, user, one assistant turn, results, developer");
    cr_expect (sl_str_eq (q->messages [0].parts [0].text, "Be brief."));
    cr_expect (sl_str_eq (q->messages [1].parts [1].data, "R0lG"));
    cr_expect_eq (q->messages [1].parts [2].kind, SL_PART_OPAQUE);
    const sl_message_t *a = &q->messages [2];
    cr_assert_eq (a->count, 3, "reasoning, message and call are one turn");
    cr_expect (sl_str_eq (a->parts [0].text, "sum") && sl_str_eq (a->parts [0].signature, "ENC"));
    cr_expect (sl_str_eq (a->parts [2].id, "call_1"), "a call is known by its call_id, not its item id");
    cr_expect (sl_str_eq (q->messages [3].parts [0].name, "run"), "named from its call");
    cr_expect_eq (q->messages [4].role, SL_ROLE_SYSTEM);
    cr_expect (q->tools [0].strict);
    cr_expect (q->tools [1].server.ptr && !q->tools [1].name.ptr);
    cr_expect_eq (q->format, SL_FORMAT_JSON);
    cr_expect (sl_str_eq (q->effort, "medium"));
    cr_expect_eq (q->max_tokens, 99);
    const sl_feature_t *needed = sl_req_mattering (q);
    cr_expect (needed && strcmp (needed->name, "previous_response_id") == 0, "state on OpenAI's servers");
    cr_expect (tools_view_is (sl_buf_cstr (&r.tools), "[{\"name\":\"run\",\"schema\":{\"type\":\"object\"}}]"), "%s", sl_buf_cstr (&r.tools));
    sl_job_clear (&r);
}

Test (sl_responses_request, goes_to_a_responses_upstream_byte_for_byte_but_for_streaming)
{
    sl_job_t r;
    cr_assert_eq (rq_parse (SL_DIALECT_RESPONSES, "{\"model\":\"m\",\"stream\":false,\"input\":\"x\",\"stream\":null}", &r), 0);
    cr_expect_str_eq (sl_buf_cstr (&r.upstream_body), "{\"model\":\"m\",\"stream\":true,\"input\":\"x\",\"stream\":true}",
                      "every stream member is forced");
    sl_job_clear (&r);
}

Test (sl_responses_request, rendered_from_a_gemini_request)
{
    sl_job_t r;
    json_t *up = rq_translate (SL_DIALECT_GEMINI, SL_DIALECT_RESPONSES,
        "{\"systemInstruction\":{\"parts\":[{\"text\":\"Be brief.\"}]},\"contents\":["
        "{\"role\":\"user\",\"parts\":[{\"text\":\"go\"}]},"
        "{\"role\":\"model\",\"parts\":[{\"text\":\"ok\"},{\"functionCall\":{\"name\":\"run\",\"args\":{\"c\":1}}}]},"
        "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"run\",\"response\":{\"output\":\"fine\"}}}]}],"
        "\"tools\":[{\"functionDeclarations\":[{\"name\":\"run\",\"parameters\":{\"type\":\"OBJECT\","
        "\"properties\":{\"c\":{\"type\":\"INTEGER\"}}}}]}],"
        "\"generationConfig\":{\"maxOutputTokens\":77,\"thinkingConfig\":{\"thinkingBudget\":20000}}}", &r);
    cr_assert_not_null (up, "%s", sl_buf_cstr (&r.error_message));
    cr_expect_str_eq (rq_str (up, "instructions"), "Be brief.");
    cr_expect_str_eq (rq_str (up, "input/0/role"), "user");
    cr_expect_str_eq (rq_str (up, "input/1/type"), "message");
    cr_expect_str_eq (rq_str (up, "input/1/content/0/type"), "output_text");
    cr_expect_str_eq (rq_str (up, "input/2/type"), "function_call");
    const char *call_id = rq_str (up, "input/2/call_id");
    cr_expect_str_eq (call_id, "call_1_1", "an id made from the call's place");
    cr_expect_str_eq (rq_str (up, "input/3/type"), "function_call_output");
    cr_expect_str_eq (rq_str (up, "input/3/call_id"), call_id, "the result answers that call");
    cr_expect_str_eq (rq_str (up, "input/3/output"), "fine");
    cr_expect_str_eq (rq_str (up, "tools/0/parameters/type"), "object", "JSON Schema, not Gemini's");
    cr_expect_str_eq (rq_str (up, "tools/0/parameters/properties/c/type"), "integer");
    cr_expect (json_is_false (rq_get (up, "tools/0/strict")), "not strict unless asked");
    cr_expect_eq (json_integer_value (rq_get (up, "max_output_tokens")), 77);
    cr_expect_str_eq (rq_str (up, "reasoning/effort"), "high");
    cr_expect (json_is_false (rq_get (up, "store")) && json_is_true (rq_get (up, "stream")));
    json_decref (up);
    sl_job_clear (&r);
    cr_expect_null (rq_translate (SL_DIALECT_ANTHROPIC, SL_DIALECT_RESPONSES,
        "{\"model\":\"m\",\"max_tokens\":9,\"stop_sequences\":[\"X\"],\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
        &r));
    cr_expect_not_null (strstr (sl_buf_cstr (&r.error_message), "stop sequences"), "%s", sl_buf_cstr (&r.error_message));
    sl_job_clear (&r);
}
