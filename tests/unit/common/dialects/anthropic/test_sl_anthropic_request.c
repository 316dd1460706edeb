/*  Unit tests: common/dialects/anthropic/sl_anthropic_request - Messages
    requests parsed into the normalized request, forwarded to an Anthropic
    upstream, and rendered from the other dialects' requests. */
#include "tests/unit/request_driver.h"
#include "tests/shapes/claude_code.h"

Test (sl_anthropic_request, parses_system_blocks_results_and_thinking)
{
    sl_job_t r;
    cr_assert_eq (rq_parse (SL_DIALECT_ANTHROPIC,
        "{\"model\":\"claude-x\",\"max_tokens\":256,"
        "\"system\":[{\"type\":\"text\",\"text\":\"Be brief.\",\"cache_control\":{\"type\":\"ephemeral\"}}],"
        "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"},"
        "{\"type\":\"document\",\"source\":{}}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"t\",\"signature\":\"SIG\"},"
        "{\"type\":\"redacted_thinking\",\"data\":\"RED\"},{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"shot\","
        "\"input\":{\"w\":2}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"is_error\":true,"
        "\"content\":[{\"type\":\"text\",\"text\":\"bad\"},{\"type\":\"image\",\"source\":{\"type\":\"url\","
        "\"url\":\"https://x.invalid/s.png\"}}]}]}],"
        "\"tools\":[{\"name\":\"shot\",\"input_schema\":{\"type\":\"object\"}},"
        "{\"type\":\"web_search_20250305\",\"name\":\"web_search\"}],"
        "\"tool_choice\":{\"type\":\"any\",\"disable_parallel_tool_use\":true},"
        "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2048},\"top_k\":5,"
        "\"metadata\":{\"user_id\":\"u7\"},\"mcp_servers\":[]}", &r), 0, "%s", sl_buf_cstr (&r.error_message));
    const sl_req_t *q = r.req;
    cr_assert_eq (q->message_count, 4);
    cr_expect_eq (q->messages [0].role, SL_ROLE_SYSTEM);
    cr_expect (sl_str_eq (q->messages [0].parts [0].text, "Be brief."));
    const sl_message_t *a = &q->messages [2];
    cr_assert_eq (a->count, 3);
    cr_expect (a->parts [0].kind == SL_PART_THINKING && sl_str_eq (a->parts [0].signature, "SIG"));
    cr_expect (a->parts [1].kind == SL_PART_REDACTED && sl_str_eq (a->parts [1].text, "RED"));
    cr_expect (sl_str_eq (a->parts [2].arguments, "{\"w\":2}"), "input as JSON text");
    const sl_part_t *result = &q->messages [3].parts [0];
    cr_expect (result->is_error && sl_str_eq (result->name, "shot"));
    cr_assert_eq (result->content_count, 2);
    cr_expect (sl_str_eq (result->content [1].url, "https://x.invalid/s.png"));
    cr_expect_eq (q->messages [1].parts [1].kind, SL_PART_OPAQUE, "documents are Anthropic's alone");
    cr_expect (sl_str_eq (q->tools [1].server, "web_search_20250305"), "a server tool");
    cr_expect_eq (q->tool_choice, SL_CHOICE_REQUIRED);
    cr_expect_eq (q->parallel_tools, 0);
    cr_expect_eq (q->budget, 2048);
    cr_expect_eq (q->top_k, 5);
    cr_expect (sl_str_eq (q->user, "u7"));
    const sl_feature_t *needed = sl_req_mattering (q);
    cr_expect (needed && strcmp (needed->name, "mcp_servers") == 0);
    bool cache = false;
    for (size_t i = 0; i < q->feature_count; i++)
        cache |= strcmp (q->features [i].name, "cache_control") == 0 && !q->features [i].matters;
    cr_expect (cache, "cache_control is noted, only informative");
    cr_expect_str_eq (sl_buf_cstr (&r.last_user), "hi", "a turn of tool results is not what the user said");
    sl_job_clear (&r);
}

Test (sl_anthropic_request, goes_to_an_anthropic_upstream_byte_for_byte_but_for_streaming)
{
    sl_job_t r;
    cr_assert_eq (rq_parse (SL_DIALECT_ANTHROPIC, "{\"model\": \"c\", \"max_tokens\": 9,\n \"messages\": "
                            "[{\"role\": \"user\", \"content\": \"hi\"}]}", &r), 0);
    cr_expect_str_eq (sl_buf_cstr (&r.upstream_body), "{\"model\": \"c\", \"max_tokens\": 9,\n \"messages\": "
                      "[{\"role\": \"user\", \"content\": \"hi\"}],\"stream\":true}");
    sl_job_clear (&r);
}

Test (sl_anthropic_request, rendered_from_a_chat_completions_request)
{
    sl_job_t r;
    json_t *up = rq_translate (SL_DIALECT_OPENAI, SL_DIALECT_ANTHROPIC,
        "{\"model\":\"m\",\"temperature\":1.5,\"messages\":["
        "{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"go\"},"
        "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":["
        "{\"id\":\"call:1\",\"type\":\"function\",\"function\":{\"name\":\"a\",\"arguments\":\"{\\\"x\\\":1}\"}},"
        "{\"id\":\"call:2\",\"type\":\"function\",\"function\":{\"name\":\"b\",\"arguments\":\"{}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call:1\",\"content\":\"one\"},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call:2\",\"content\":\"two\"},"
        "{\"role\":\"user\",\"content\":\"more\"}],"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"a\",\"parameters\":{\"type\":\"object\"}}},"
        "{\"type\":\"function\",\"function\":{\"name\":\"b\"}}],\"parallel_tool_calls\":false}", &r);
    cr_assert_not_null (up, "%s", sl_buf_cstr (&r.error_message));
    cr_expect_str_eq (rq_str (up, "system"), "Be brief.", "instructions at the top");
    cr_expect_eq (json_array_size (rq_get (up, "messages")), 3, "user, assistant, user: the turns alternate");
    cr_expect_eq (json_array_size (rq_get (up, "messages/1/content")), 2, "no empty text block");
    cr_expect_str_eq (rq_str (up, "messages/1/content/0/id"), "call_1", "an id the API takes");
    cr_expect_eq (json_integer_value (rq_get (up, "messages/1/content/0/input/x")), 1);
    cr_expect_str_eq (rq_str (up, "messages/2/content/0/type"), "tool_result");
    cr_expect_str_eq (rq_str (up, "messages/2/content/0/tool_use_id"), "call_1", "the same id as its call");
    cr_expect_str_eq (rq_str (up, "messages/2/content/1/tool_use_id"), "call_2");
    cr_expect_str_eq (rq_str (up, "messages/2/content/2/text"), "more", "the user's text after the results");
    cr_expect_str_eq (rq_str (up, "tools/1/input_schema/type"), "object", "a tool without a schema gets one");
    cr_expect (json_is_true (rq_get (up, "tool_choice/disable_parallel_tool_use")));
    cr_expect_eq (json_integer_value (rq_get (up, "max_tokens")), SL_XLATE_MAX_TOKENS, "required: a default");
    cr_expect_float_eq (json_real_value (rq_get (up, "temperature")), 1.0, 1e-9, "within the API's range");
    cr_expect (json_is_true (rq_get (up, "stream")));
    json_decref (up);
    sl_job_clear (&r);
}

Test (sl_anthropic_request, thinking_and_what_cannot_cross)
{
    sl_job_t r;
    //  Effort becomes a thinking budget; sampling goes, as the API wants.
    json_t *up = rq_translate (SL_DIALECT_OPENAI, SL_DIALECT_ANTHROPIC,
        "{\"model\":\"m\",\"reasoning_effort\":\"high\",\"temperature\":0.2,\"max_completion_tokens\":32000,"
        "\"messages\":[{\"role\":\"user\",\"content\":\"think\"}]}", &r);
    cr_assert_not_null (up);
    cr_expect_str_eq (rq_str (up, "thinking/type"), "enabled");
    cr_expect_lt (json_integer_value (rq_get (up, "thinking/budget_tokens")), 32000);
    cr_expect_null (rq_get (up, "temperature"));
    json_decref (up);
    sl_job_clear (&r);
    //  A signature of this provider goes back; a tag says whose it is.
    up = rq_translate (SL_DIALECT_GEMINI, SL_DIALECT_ANTHROPIC,
        "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"q\"}]},{\"role\":\"model\",\"parts\":["
        "{\"text\":\"mine\",\"thought\":true,\"thoughtSignature\":\"sluice:anthropic:ABC\"},"
        "{\"text\":\"theirs\",\"thought\":true,\"thoughtSignature\":\"GEMINI-SIG\"},{\"text\":\"answer\"}]},"
        "{\"role\":\"user\",\"parts\":[{\"text\":\"and?\"}]}]}", &r);
    cr_assert_not_null (up);
    cr_expect_str_eq (rq_str (up, "messages/1/content/0/type"), "thinking");
    cr_expect_str_eq (rq_str (up, "messages/1/content/0/signature"), "ABC");
    cr_expect_str_eq (rq_str (up, "messages/1/content/1/text"), "answer", "Gemini's own thinking dropped");
    json_decref (up);
    sl_job_clear (&r);
    cr_expect_null (rq_translate (SL_DIALECT_OPENAI, SL_DIALECT_ANTHROPIC,
        "{\"model\":\"m\",\"response_format\":{\"type\":\"json_object\"},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
        &r));
    cr_expect_not_null (strstr (sl_buf_cstr (&r.error_message), "JSON output without a schema"), "%s",
                        sl_buf_cstr (&r.error_message));
    sl_job_clear (&r);
    //  A JSON schema is structured output: output_config.format.
    up = rq_translate (SL_DIALECT_OPENAI, SL_DIALECT_ANTHROPIC,
        "{\"model\":\"m\",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"r\",\"schema\":"
        "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}}},\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
        &r);
    cr_assert_not_null (up, "%s", sl_buf_cstr (&r.error_message));
    cr_expect_str_eq (rq_str (up, "output_config/format/type"), "json_schema");
    cr_expect_str_eq (rq_str (up, "output_config/format/schema/properties/a/type"), "string");
    json_decref (up);
    sl_job_clear (&r);
}

//  What today's Claude Code sends (tests/shapes/claude_code.h).
static char *
s_claude_code (void)
{
    static char body [2048];
    snprintf (body, sizeof body, CLAUDE_CODE_REQUEST_FMT, "claude-opus-4-8");
    return body;
}

Test (sl_anthropic_request, a_system_message_among_the_turns_is_instructions_at_its_place)
{
    sl_job_t r;
    cr_assert_eq (rq_parse (SL_DIALECT_ANTHROPIC, s_claude_code (), &r), 0, "%s", sl_buf_cstr (&r.error_message));
    const sl_req_t *q = r.req;
    cr_assert_eq (q->message_count, 5);
    static const int roles [] = { SL_ROLE_SYSTEM, SL_ROLE_USER, SL_ROLE_SYSTEM, SL_ROLE_ASSISTANT, SL_ROLE_USER };
    for (size_t i = 0; i < 5; i++)
        cr_expect_eq (q->messages [i].role, roles [i], "message %zu", i);
    cr_expect (sl_str_eq (q->messages [2].parts [0].text, CLAUDE_CODE_SYSTEM_MESSAGE));
    cr_expect (q->thinking_adaptive);
    cr_expect (sl_str_eq (q->effort, "high"));
    cr_expect_null (sl_req_mattering (q), "nothing the answer depends on is left out");
    cr_expect_str_eq (sl_buf_cstr (&r.last_user), "list files", "a system message is not what the user said");
    //  Same dialect: the body goes as it came.
    cr_expect_not_null (strstr (sl_buf_cstr (&r.upstream_body), "{\"role\":\"system\",\"content\":\"Available"));
    sl_job_clear (&r);
}

Test (sl_anthropic_request, claude_codes_request_crosses_to_every_other_dialect)
{
    sl_job_t r;
    //  Chat Completions: a system message at its place, the effort as it is.
    json_t *up = rq_translate (SL_DIALECT_ANTHROPIC, SL_DIALECT_OPENAI, s_claude_code (), &r);
    cr_assert_not_null (up, "%s", sl_buf_cstr (&r.error_message));
    cr_expect_str_eq (rq_str (up, "messages/0/role"), "system");
    cr_expect_str_eq (rq_str (up, "messages/1/role"), "user");
    cr_expect_str_eq (rq_str (up, "messages/2/role"), "system");
    cr_expect_str_eq (rq_str (up, "messages/2/content"), CLAUDE_CODE_SYSTEM_MESSAGE);
    cr_expect_str_eq (rq_str (up, "messages/3/role"), "assistant");
    cr_expect_str_eq (rq_str (up, "reasoning_effort"), "high");
    cr_expect (rq_dropped (&r, "context_management"), "context management is only informative: dropped, counted");
    json_decref (up);
    sl_job_clear (&r);
    //  Responses: the leading instructions, a developer message at its place.
    up = rq_translate (SL_DIALECT_ANTHROPIC, SL_DIALECT_RESPONSES, s_claude_code (), &r);
    cr_assert_not_null (up, "%s", sl_buf_cstr (&r.error_message));
    cr_expect_str_eq (rq_str (up, "instructions"), "You are a coding agent.");
    cr_expect_str_eq (rq_str (up, "input/0/role"), "user");
    cr_expect_str_eq (rq_str (up, "input/1/role"), "developer");
    cr_expect_str_eq (rq_str (up, "input/1/content"), CLAUDE_CODE_SYSTEM_MESSAGE);
    cr_expect_str_eq (rq_str (up, "reasoning/effort"), "high");
    json_decref (up);
    sl_job_clear (&r);
    //  Gemini: one system instruction (its place is lost), the effort's budget.
    up = rq_translate (SL_DIALECT_ANTHROPIC, SL_DIALECT_GEMINI, s_claude_code (), &r);
    cr_assert_not_null (up, "%s", sl_buf_cstr (&r.error_message));
    cr_expect_str_eq (rq_str (up, "systemInstruction/parts/0/text"), "You are a coding agent.");
    cr_expect_str_eq (rq_str (up, "systemInstruction/parts/1/text"), CLAUDE_CODE_SYSTEM_MESSAGE);
    cr_expect_str_eq (rq_str (up, "contents/0/role"), "user");
    cr_expect_str_eq (rq_str (up, "contents/1/role"), "model");
    cr_expect_eq (json_integer_value (rq_get (up, "generationConfig/thinkingConfig/thinkingBudget")), 24576);
    json_decref (up);
    sl_job_clear (&r);
}

Test (sl_anthropic_request, thinking_left_to_the_model_crosses_as_each_dialect_says_it)
{
    sl_job_t r;
    const char *adaptive = "{\"model\":\"c\",\"max_tokens\":100,\"thinking\":{\"type\":\"adaptive\"},"
                           "\"messages\":[{\"role\":\"user\",\"content\":\"q\"}]}";
    json_t *up = rq_translate (SL_DIALECT_ANTHROPIC, SL_DIALECT_GEMINI, adaptive, &r);
    cr_assert_not_null (up);
    cr_expect_eq (json_integer_value (rq_get (up, "generationConfig/thinkingConfig/thinkingBudget")), -1,
                  "Gemini's dynamic thinking");
    json_decref (up);
    sl_job_clear (&r);
    up = rq_translate (SL_DIALECT_ANTHROPIC, SL_DIALECT_OPENAI, adaptive, &r);
    cr_assert_not_null (up);
    cr_expect_null (rq_get (up, "reasoning_effort"), "the provider's default effort");
    cr_expect (rq_dropped (&r, "adaptive thinking"), "and the loss is said");
    json_decref (up);
    sl_job_clear (&r);
    //  And back: Gemini's -1 is adaptive thinking for Messages.
    up = rq_translate (SL_DIALECT_GEMINI, SL_DIALECT_ANTHROPIC,
        "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"q\"}]}],"
        "\"generationConfig\":{\"temperature\":0.5,\"thinkingConfig\":{\"thinkingBudget\":-1}}}", &r);
    cr_assert_not_null (up);
    cr_expect_str_eq (rq_str (up, "thinking/type"), "adaptive");
    cr_expect_null (rq_get (up, "temperature"), "no temperature with thinking");
    json_decref (up);
    sl_job_clear (&r);
    //  Efforts past what a provider takes are clamped, and said.
    up = rq_translate (SL_DIALECT_ANTHROPIC, SL_DIALECT_GEMINI,
        "{\"model\":\"c\",\"max_tokens\":100,\"output_config\":{\"effort\":\"max\"},"
        "\"messages\":[{\"role\":\"user\",\"content\":\"q\"}]}", &r);
    cr_assert_not_null (up);
    cr_expect_eq (json_integer_value (rq_get (up, "generationConfig/thinkingConfig/thinkingBudget")), 24576);
    cr_expect_gt (r.drop_count, 0);
    json_decref (up);
    sl_job_clear (&r);
    up = rq_translate (SL_DIALECT_ANTHROPIC, SL_DIALECT_OPENAI,
        "{\"model\":\"c\",\"max_tokens\":100,\"output_config\":{\"effort\":\"max\"},"
        "\"messages\":[{\"role\":\"user\",\"content\":\"q\"}]}", &r);
    cr_assert_not_null (up);
    cr_expect_str_eq (rq_str (up, "reasoning_effort"), "xhigh");
    json_decref (up);
    sl_job_clear (&r);
}
