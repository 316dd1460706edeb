/*  Unit tests: common/llm/sl_llm (LLM judge prompts, bodies, answers). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "common/llm/sl_llm.h"

Test (sl_llm, prompt_template)
{
    sl_buf_t out = { 0 };
    sl_llm_render_prompt ("{tool}({arguments}) for '{last_user}' on {model}; {unknown} {", sl_str ("rm"),
                          sl_str ("{\"p\":1}"), sl_str ("clean up"), SL_STR_NULL, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "rm({\"p\":1}) for 'clean up' on ; {unknown} {");
    sl_buf_free (&out);
}

static json_t *
s_body (int dialect)
{
    sl_llm_spec_t spec;
    sl_llm_spec_defaults (&spec);
    spec.dialect = dialect;
    spec.model = (char *) "judge-m";
    spec.max_tokens = 99;
    sl_buf_t out = { 0 };
    sl_llm_request_body (&spec, sl_str ("is \"this\" safe?"), &out);
    json_t *body = json_loads (sl_buf_cstr (&out), 0, NULL);
    cr_assert_not_null (body, "the body is JSON: %s", sl_buf_cstr (&out));
    sl_buf_free (&out);
    return body;
}

Test (sl_llm, openai_request_body)
{
    json_t *body = s_body (SL_DIALECT_OPENAI);
    cr_expect_str_eq (json_string_value (json_object_get (body, "model")), "judge-m");
    cr_expect_eq (json_integer_value (json_object_get (body, "max_tokens")), 99);
    cr_expect (json_is_false (json_object_get (body, "stream")));
    json_t *msgs = json_object_get (body, "messages");
    cr_assert_eq (json_array_size (msgs), 2);
    cr_expect_str_eq (json_string_value (json_object_get (json_array_get (msgs, 0), "role")), "system");
    cr_expect_str_eq (json_string_value (json_object_get (json_array_get (msgs, 0), "content")),
                      sl_llm_system_prompt);
    cr_expect_str_eq (json_string_value (json_object_get (json_array_get (msgs, 1), "content")),
                      "is \"this\" safe?");
    json_decref (body);
}

Test (sl_llm, anthropic_request_body)
{
    json_t *body = s_body (SL_DIALECT_ANTHROPIC);
    cr_expect_str_eq (json_string_value (json_object_get (body, "system")), sl_llm_system_prompt);
    json_t *msgs = json_object_get (body, "messages");
    cr_assert_eq (json_array_size (msgs), 1);
    cr_expect_str_eq (json_string_value (json_object_get (json_array_get (msgs, 0), "role")), "user");
    cr_expect_null (json_object_get (body, "stream"));
    json_decref (body);
}

//  An OpenAI answer whose message content is text.
static int
s_openai (const char *content, sl_llm_result_t *r)
{
    json_t *body = json_pack ("{s:[{s:{s:s,s:s}}]}", "choices", "message", "role", "assistant", "content", content);
    char *text = json_dumps (body, 0);
    int rc = sl_llm_parse_answer (SL_DIALECT_OPENAI, 200, sl_str (text), r);
    free (text);
    json_decref (body);
    return rc;
}

Test (sl_llm, answers_that_count)
{
    sl_llm_result_t r;
    cr_expect_eq (s_openai ("{\"probability\": 0.25, \"explanation\": \"reads a file\"}", &r), 0);
    cr_expect_eq (r.check, SL_CHK_RAN);
    cr_expect_float_eq (r.probability, 0.25, 1e-9);
    cr_expect_str_eq (r.explanation, "reads a file");
    sl_llm_result_clear (&r);
    cr_expect_eq (s_openai ("```json\n{\"probability\":1}\n```", &r), 0, "a code fence around the JSON");
    cr_expect_float_eq (r.probability, 1.0, 1e-9);
    cr_expect_null (r.explanation);
    sl_llm_result_clear (&r);
    cr_expect_eq (s_openai ("Sure. {\"probability\":0,\"explanation\":\"fine\"} Hope this helps.", &r), 0);
    cr_expect_float_eq (r.probability, 0.0, 1e-9);
    sl_llm_result_clear (&r);
    const char *anthropic = "{\"content\":[{\"type\":\"thinking\",\"thinking\":\"...\"},"
                            "{\"type\":\"text\",\"text\":\"{\\\"probability\\\":0.8}\"}]}";
    cr_expect_eq (sl_llm_parse_answer (SL_DIALECT_ANTHROPIC, 200, sl_str (anthropic), &r), 0);
    cr_expect_float_eq (r.probability, 0.8, 1e-9);
    sl_llm_result_clear (&r);
}

Test (sl_llm, long_explanations_are_clipped_on_a_character)
{
    sl_buf_t content = { 0 };
    sl_buf_puts (&content, "{\"probability\":0.5,\"explanation\":\"");
    for (int i = 0; i < SL_LLM_MAX_EXPLANATION; i++)
        sl_buf_puts (&content, "\xc3\xa9");    //  é, two bytes
    sl_buf_puts (&content, "\"}");
    sl_llm_result_t r;
    cr_expect_eq (s_openai (sl_buf_cstr (&content), &r), 0);
    size_t n = strlen (r.explanation);
    cr_expect_leq (n, SL_LLM_MAX_EXPLANATION);
    cr_expect_eq (n % 2, 0, "no half character at the end");
    sl_llm_result_clear (&r);
    sl_buf_free (&content);
}

Test (sl_llm, garbage_is_an_error_never_a_pass)
{
    const char *contents [] = {
        "I think this call is fine.",
        "{\"probability\": \"low\"}",
        "{\"probability\": 1.5}",
        "{\"probability\": -0.1}",
        "{\"score\": 0.1}",
        "[0.1]",
        "",
    };
    for (size_t i = 0; i < sizeof contents / sizeof contents [0]; i++) {
        sl_llm_result_t r;
        cr_expect_eq (s_openai (contents [i], &r), -1, "content %zu", i);
        cr_expect_eq (r.check, SL_CHK_ERROR);
        cr_expect (isnan (r.probability));
        cr_expect_not_null (r.error);
        sl_llm_result_clear (&r);
    }
    const char *bodies [] = {
        "not json", "{}", "{\"choices\":[]}", "{\"choices\":[{\"message\":{\"content\":null}}]}",
        "{\"choices\":[{\"message\":{\"content\":7}}]}",
    };
    for (size_t i = 0; i < sizeof bodies / sizeof bodies [0]; i++) {
        sl_llm_result_t r;
        cr_expect_eq (sl_llm_parse_answer (SL_DIALECT_OPENAI, 200, sl_str (bodies [i]), &r), -1, "body %zu", i);
        cr_expect_eq (r.check, SL_CHK_ERROR);
        sl_llm_result_clear (&r);
    }
    sl_llm_result_t r;
    cr_expect_eq (sl_llm_parse_answer (SL_DIALECT_OPENAI, 500, sl_str ("{\"error\":{\"message\":\"boom\"}}"), &r), -1);
    cr_expect_not_null (strstr (r.error, "HTTP 500"), "%s", r.error);
    cr_expect_not_null (strstr (r.error, "boom"), "the body's start is kept: %s", r.error);
    sl_llm_result_clear (&r);
    cr_expect_eq (sl_llm_parse_answer (SL_DIALECT_OPENAI, 200, SL_STR_NULL, &r), -1, "no body at all");
    sl_llm_result_clear (&r);
}

Test (sl_llm, spec_defaults)
{
    sl_llm_spec_t spec;
    sl_llm_spec_defaults (&spec);
    cr_expect_eq (spec.timeout_ms, 5000);
    cr_expect_eq (spec.on_error, SL_ACT_BLOCK);
    cr_expect_eq (spec.dialect, SL_DIALECT_OPENAI);
    char *url = sl_llm_default_url (SL_DIALECT_OPENAI, "judge-m");
    cr_expect_str_eq (url, "https://api.openai.com/v1/chat/completions");
    free (url);
    sl_llm_spec_clear (&spec);
}
