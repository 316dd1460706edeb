/*  Unit tests: common/dialects/openai/sl_openai_request - Chat Completions
    requests parsed into the normalized request, forwarded to an OpenAI
    upstream, and rendered from the other dialects' requests. */
#include "tests/unit/request_driver.h"

Test (sl_openai_request, parses_instructions_images_calls_and_results)
{
    sl_job_t r;
    cr_assert_eq (rq_parse (SL_DIALECT_OPENAI,
        "{\"model\":\"gpt-x\",\"messages\":["
        "{\"role\":\"system\",\"content\":\"Be brief.\"},"
        "{\"role\":\"developer\",\"content\":[{\"type\":\"text\",\"text\":\"Use tools.\"}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What is this?\"},"
        "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AAAA\"}},"
        "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://x.invalid/a.png\"}},"
        "{\"type\":\"input_audio\",\"input_audio\":{\"data\":\"x\",\"format\":\"wav\"}}]},"
        "{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":\"hmm\",\"tool_calls\":["
        "{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"a\",\"arguments\":\"{}\"}},"
        "{\"id\":\"c2\",\"type\":\"function\",\"function\":{\"name\":\"b\",\"arguments\":\"{\\\"x\\\":1}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"c1\",\"content\":\"one\"},"
        "{\"role\":\"tool\",\"tool_call_id\":\"c2\",\"content\":[{\"type\":\"text\",\"text\":\"two\"}]},"
        "{\"role\":\"user\",\"content\":\"and?\"}],"
        "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"a\"}},\"parallel_tool_calls\":false,"
        "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"r\",\"schema\":{\"type\":\"object\"},\"strict\":true}},"
        "\"max_completion_tokens\":50,\"stop\":\"END\",\"seed\":7,\"reasoning_effort\":\"low\",\"user\":\"u1\","
        "\"logprobs\":true,\"audio\":{\"voice\":\"x\"}}", &r), 0, "%s", sl_buf_cstr (&r.error_message));
    const sl_req_t *q = r.req;
    cr_assert_eq (q->message_count, 6, "system, developer, user, assistant, one turn of results, user");
    cr_expect_eq (q->messages [0].role, SL_ROLE_SYSTEM);
    cr_expect_eq (q->messages [1].role, SL_ROLE_SYSTEM, "developer instructions are instructions");
    const sl_message_t *u = &q->messages [2];
    cr_assert_eq (u->count, 4);
    cr_expect (sl_str_eq (u->parts [1].media_type, "image/png") && sl_str_eq (u->parts [1].data, "AAAA"));
    cr_expect (sl_str_eq (u->parts [2].url, "https://x.invalid/a.png"));
    cr_expect_eq (u->parts [3].kind, SL_PART_OPAQUE, "audio is Chat Completions' alone");
    cr_expect (sl_str_eq (u->parts [3].text, "input_audio"));
    const sl_message_t *a = &q->messages [3];
    cr_assert_eq (a->count, 3);
    cr_expect_eq (a->parts [0].kind, SL_PART_THINKING);
    cr_expect (sl_str_eq (a->parts [2].arguments, "{\"x\":1}"));
    const sl_message_t *results = &q->messages [4];
    cr_assert_eq (results->count, 2, "consecutive tool messages are one turn");
    cr_expect (sl_str_eq (results->parts [0].id, "c1") && sl_str_eq (results->parts [0].name, "a"),
               "a result is named from its call");
    cr_expect (sl_str_eq (results->parts [1].name, "b") && sl_str_eq (results->parts [1].content [0].text, "two"));
    cr_expect_eq (q->tool_choice, SL_CHOICE_TOOL);
    cr_expect (sl_str_eq (q->tool_choice_name, "a"));
    cr_expect_eq (q->parallel_tools, 0);
    cr_expect_eq (q->format, SL_FORMAT_SCHEMA);
    cr_expect (q->format_strict);
    cr_expect_eq (q->max_tokens, 50);
    cr_expect (q->stop_count == 1 && sl_str_eq (q->stop [0], "END"));
    cr_expect_eq (q->seed, 7);
    cr_expect (sl_str_eq (q->effort, "low") && sl_str_eq (q->user, "u1"));
    const sl_feature_t *needed = sl_req_mattering (q);
    cr_expect (needed && strcmp (needed->name, "audio") == 0, "audio output matters; logprobs do not");
    cr_expect_str_eq (sl_buf_cstr (&r.last_user), "and?");
    sl_job_clear (&r);
}

Test (sl_openai_request, goes_to_an_openai_upstream_byte_for_byte_but_for_streaming)
{
    const char *body = "{ \"model\" : \"gpt-x\", \"temperature\": 0.7,\n"
                       "  \"messages\": [ {\"role\":\"user\",\"content\":\"caf\\u00e9\"} ],\n"
                       "  \"stream\": false }";
    sl_job_t r;
    cr_assert_eq (rq_parse (SL_DIALECT_OPENAI, body, &r), 0);
    cr_expect_str_eq (sl_buf_cstr (&r.upstream_body),
                      "{ \"model\" : \"gpt-x\", \"temperature\": 0.7,\n"
                      "  \"messages\": [ {\"role\":\"user\",\"content\":\"caf\\u00e9\"} ],\n"
                      "  \"stream\": true ,\"stream_options\":{\"include_usage\":true}}",
                      "the client's bytes; only the stream and usage switches change");
    sl_job_clear (&r);
}

Test (sl_openai_request, rendered_from_an_anthropic_request)
{
    sl_job_t r;
    json_t *up = rq_translate (SL_DIALECT_ANTHROPIC, SL_DIALECT_OPENAI,
        "{\"model\":\"m\",\"max_tokens\":64,\"system\":[{\"type\":\"text\",\"text\":\"Be brief.\"}],\"messages\":["
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"look\"},{\"type\":\"image\",\"source\":"
        "{\"type\":\"base64\",\"media_type\":\"image/jpeg\",\"data\":\"QUJD\"}}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\",\"signature\":\"s\"},"
        "{\"type\":\"text\",\"text\":\"Checking.\"},{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"run\","
        "\"input\":{\"cmd\":\"ls\"}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"is_error\":true,"
        "\"content\":\"no such dir\"},{\"type\":\"text\",\"text\":\"try again\"}]}],"
        "\"tools\":[{\"name\":\"run\",\"description\":\"Runs\",\"input_schema\":{\"type\":\"object\"}}],"
        "\"tool_choice\":{\"type\":\"any\"},\"stop_sequences\":[\"X\"],\"metadata\":{\"user_id\":\"u9\"}}", &r);
    cr_assert_not_null (up, "%s", sl_buf_cstr (&r.error_message));
    cr_expect_str_eq (rq_str (up, "messages/0/role"), "system");
    cr_expect_str_eq (rq_str (up, "messages/0/content"), "Be brief.");
    cr_expect_str_eq (rq_str (up, "messages/1/content/1/image_url/url"), "data:image/jpeg;base64,QUJD");
    cr_expect_str_eq (rq_str (up, "messages/2/content"), "Checking.");
    cr_expect_str_eq (rq_str (up, "messages/2/tool_calls/0/id"), "toolu_1");
    cr_expect_str_eq (rq_str (up, "messages/2/tool_calls/0/function/arguments"), "{\"cmd\":\"ls\"}");
    cr_expect_null (rq_get (up, "messages/2/reasoning_content"), "another provider's thinking is not sent");
    cr_expect_str_eq (rq_str (up, "messages/3/role"), "tool", "the result right after the call");
    cr_expect_str_eq (rq_str (up, "messages/3/tool_call_id"), "toolu_1");
    cr_expect_str_eq (rq_str (up, "messages/3/content"), "Error: no such dir", "the error flag, in words");
    cr_expect_str_eq (rq_str (up, "messages/4/role"), "user");
    cr_expect_str_eq (rq_str (up, "messages/4/content"), "try again", "the turn's text after its results");
    cr_expect_str_eq (rq_str (up, "tools/0/function/name"), "run");
    cr_expect_str_eq (rq_str (up, "tool_choice"), "required");
    cr_expect_eq (json_integer_value (rq_get (up, "max_completion_tokens")), 64);
    cr_expect_str_eq (rq_str (up, "stop/0"), "X");
    cr_expect_str_eq (rq_str (up, "user"), "u9");
    cr_expect (json_is_true (rq_get (up, "stream")) && json_is_true (rq_get (up, "stream_options/include_usage")));
    cr_expect_gt (r.drop_count, 0, "the thinking dropped is named");
    json_decref (up);
    sl_job_clear (&r);
}

Test (sl_openai_request, what_chat_completions_cannot_carry_is_refused)
{
    sl_job_t r;
    cr_expect_null (rq_translate (SL_DIALECT_ANTHROPIC, SL_DIALECT_OPENAI,
        "{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"document\","
        "\"source\":{\"type\":\"text\",\"media_type\":\"text/plain\",\"data\":\"x\"}}]}]}", &r));
    cr_expect_eq (r.status, 400);
    cr_expect_not_null (strstr (sl_buf_cstr (&r.error_message), "document"), "%s", sl_buf_cstr (&r.error_message));
    sl_job_clear (&r);
    cr_expect_null (rq_translate (SL_DIALECT_ANTHROPIC, SL_DIALECT_OPENAI,
        "{\"model\":\"m\",\"max_tokens\":9,\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"shot\",\"input\":{}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":[{\"type\":\"image\","
        "\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"AA\"}}]}]}]}", &r));
    cr_expect_not_null (strstr (sl_buf_cstr (&r.error_message), "an image in a tool result"), "%s",
                        sl_buf_cstr (&r.error_message));
    sl_job_clear (&r);
}
