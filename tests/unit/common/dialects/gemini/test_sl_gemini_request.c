/*  Unit tests: common/dialects/gemini/sl_gemini_request - Gemini requests
    parsed into the normalized request, forwarded to a Gemini upstream,
    and rendered from the other dialects' requests. */
#include "tests/tools_view.h"
#include "tests/unit/request_driver.h"

Test (sl_gemini_request, calls_without_ids_get_ids_and_results_find_their_calls)
{
    sl_job_t r;
    cr_assert_eq (rq_parse (SL_DIALECT_GEMINI,
        "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"both\"},{\"inlineData\":{\"mimeType\":\"image/png\","
        "\"data\":\"AAA\"}},{\"inlineData\":{\"mimeType\":\"application/pdf\",\"data\":\"BBB\"}}]},"
        "{\"role\":\"model\",\"parts\":[{\"text\":\"hm\",\"thought\":true,\"thoughtSignature\":\"TS\"},"
        "{\"functionCall\":{\"name\":\"f\",\"args\":{\"n\":1}},\"thoughtSignature\":\"CS\"},"
        "{\"functionCall\":{\"name\":\"f\",\"args\":{\"n\":2}}},{\"functionCall\":{\"id\":\"given\",\"name\":\"g\"}}]},"
        "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"f\",\"response\":{\"output\":\"one\"}}},"
        "{\"functionResponse\":{\"name\":\"f\",\"response\":{\"error\":\"two failed\"}}},"
        "{\"functionResponse\":{\"id\":\"given\",\"name\":\"g\",\"response\":{\"a\":1,\"b\":2}}}]}],"
        "\"tools\":[{\"functionDeclarations\":[{\"name\":\"f\",\"parameters\":{\"type\":\"OBJECT\"}}]},{\"googleSearch\":{}}],"
        "\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"ANY\",\"allowedFunctionNames\":[\"f\"]}},"
        "\"generationConfig\":{\"thinkingConfig\":{\"thinkingBudget\":0},\"responseMimeType\":\"application/json\","
        "\"responseSchema\":{\"type\":\"OBJECT\"}},\"cachedContent\":\"c/1\"}", &r), 0, "%s",
        sl_buf_cstr (&r.error_message));
    const sl_req_t *q = r.req;
    cr_expect (sl_str_eq (q->model, "gem-1"), "the model is the path's");
    cr_expect_eq (q->messages [0].parts [2].kind, SL_PART_OPAQUE, "a PDF is Gemini's alone here");
    const sl_message_t *m = &q->messages [1];
    cr_expect (m->parts [0].kind == SL_PART_THINKING && sl_str_eq (m->parts [0].signature, "TS"));
    cr_expect (sl_str_eq (m->parts [1].id, "call_1_1") && sl_str_eq (m->parts [2].id, "call_1_2"));
    cr_expect (sl_str_eq (m->parts [1].signature, "CS"));
    cr_expect (sl_str_eq (m->parts [3].id, "given"));
    const sl_message_t *results = &q->messages [2];
    cr_expect (sl_str_eq (results->parts [0].id, "call_1_1"), "the first response answers the first call");
    cr_expect (sl_str_eq (results->parts [1].id, "call_1_2"), "the second the second");
    cr_expect (results->parts [1].is_error && sl_str_eq (results->parts [1].content [0].text, "two failed"));
    cr_expect (sl_str_eq (results->parts [2].id, "given"));
    cr_expect (sl_str_eq (results->parts [2].content [0].text, "{\"a\":1,\"b\":2}"), "a response of its own shape");
    cr_expect (tools_view_is (sl_buf_cstr (&r.tools), "[{\"name\":\"f\",\"schema\":{\"type\":\"OBJECT\"}}]"), "the judge reads the schema as declared: %s", sl_buf_cstr (&r.tools));
    char *schema = json_dumps (q->tools [0].schema, JSON_COMPACT);
    cr_expect_str_eq (schema, "{\"type\":\"object\"}", "crossing, it is JSON Schema");
    free (schema);
    cr_expect (q->tools [1].server.ptr);
    cr_expect_eq (q->tool_choice, SL_CHOICE_TOOL);
    cr_expect (q->thinking_off);
    cr_expect_eq (q->format, SL_FORMAT_SCHEMA);
    const sl_feature_t *needed = sl_req_mattering (q);
    cr_expect (needed && strcmp (needed->name, "cachedContent") == 0);
    sl_job_clear (&r);
}

Test (sl_gemini_request, goes_to_a_gemini_upstream_as_it_came)
{
    const char *body = "{ \"contents\": [ {\"parts\": [ {\"text\": \"hi\"} ]} ] }";
    sl_job_t r;
    cr_assert_eq (rq_parse (SL_DIALECT_GEMINI, body, &r), 0);
    cr_expect_str_eq (sl_buf_cstr (&r.upstream_body), body, "streaming is the URL's business");
    sl_job_clear (&r);
}

Test (sl_gemini_request, rendered_from_a_chat_completions_request)
{
    sl_job_t r;
    json_t *up = rq_translate (SL_DIALECT_OPENAI, SL_DIALECT_GEMINI,
        "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"see\"},{\"type\":\"image_url\",\"image_url\":"
        "{\"url\":\"data:image/webp;base64,UklG\"}}]},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_9\",\"type\":\"function\","
        "\"function\":{\"name\":\"run\",\"arguments\":\"{\\\"c\\\":\\\"ls\\\"}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_9\",\"content\":\"failed\"}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"run\",\"parameters\":{\"type\":\"object\"}}}],"
        "\"tool_choice\":\"required\",\"stop\":[\"a\",\"b\"],\"reasoning_effort\":\"low\",\"max_tokens\":10,\"user\":\"u\"}", &r);
    cr_assert_not_null (up, "%s", sl_buf_cstr (&r.error_message));
    cr_expect_null (rq_get (up, "model"), "the model goes in the URL");
    cr_expect_str_eq (rq_str (up, "systemInstruction/parts/0/text"), "Be brief.");
    cr_expect_str_eq (rq_str (up, "contents/0/parts/1/inlineData/mimeType"), "image/webp");
    cr_expect_str_eq (rq_str (up, "contents/1/role"), "model");
    cr_expect_str_eq (rq_str (up, "contents/1/parts/0/functionCall/name"), "run");
    cr_expect_str_eq (rq_str (up, "contents/1/parts/0/functionCall/args/c"), "ls");
    cr_expect_str_eq (rq_str (up, "contents/2/parts/0/functionResponse/name"), "run",
                      "named from its call in the request's own history");
    cr_expect_str_eq (rq_str (up, "contents/2/parts/0/functionResponse/response/output"), "failed");
    cr_expect_str_eq (rq_str (up, "tools/0/functionDeclarations/0/parametersJsonSchema/type"), "object");
    cr_expect_str_eq (rq_str (up, "toolConfig/functionCallingConfig/mode"), "ANY");
    cr_expect_eq (json_array_size (rq_get (up, "generationConfig/stopSequences")), 2);
    cr_expect_eq (json_integer_value (rq_get (up, "generationConfig/maxOutputTokens")), 10);
    cr_expect_eq (json_integer_value (rq_get (up, "generationConfig/thinkingConfig/thinkingBudget")), 2048,
                  "low's budget (sl_effort.h)");
    cr_expect_gt (r.drop_count, 0, "the user id has no place: dropped, named");
    json_decref (up);
    sl_job_clear (&r);
    //  A result whose call is not in the request cannot be named.
    cr_expect_null (rq_translate (SL_DIALECT_OPENAI, SL_DIALECT_GEMINI,
        "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"tool_call_id\":\"nowhere\",\"content\":\"x\"}]}", &r));
    cr_expect_not_null (strstr (sl_buf_cstr (&r.error_message), "whose call is not in the request"), "%s",
                        sl_buf_cstr (&r.error_message));
    sl_job_clear (&r);
    cr_expect_null (rq_translate (SL_DIALECT_OPENAI, SL_DIALECT_GEMINI,
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\",\"image_url\":"
        "{\"url\":\"https://x.invalid/a.png\"}}]}]}", &r));
    cr_expect_not_null (strstr (sl_buf_cstr (&r.error_message), "an image by URL"));
    sl_job_clear (&r);
}
