/*  Unit tests: services/mock/sl_mock_provider (and the provider modules
    it registers) - the mock refuses what each provider would refuse of a
    conversation with tools, reads the last tool result, and finds the
    provider a path calls. */
#include <criterion/criterion.h>
#include <string.h>

#include "proto/sl_msg.h"
#include "services/mock/sl_mock_provider.h"

typedef struct {
    int dialect;
    const char *body;
    const char *why;                    //  NULL: the provider takes it; else words of the refusal
} s_case_t;

static const s_case_t s_cases [] = {
    //  OpenAI Chat Completions
    { SL_DIALECT_OPENAI, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"tool_calls\":"
      "[{\"id\":\"c\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
      "{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":\"ok\"}]}", NULL },
    { SL_DIALECT_OPENAI, "{\"messages\":[{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":\"ok\"}]}",
      "which no preceding assistant message called" },
    { SL_DIALECT_OPENAI, "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\","
      "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},{\"role\":\"user\",\"content\":\"x\"}]}",
      "must be followed by tool messages" },
    { SL_DIALECT_OPENAI, "{\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"id\":\"c\",\"type\":\"function\","
      "\"function\":{\"name\":\"f\",\"arguments\":{}}}]}]}", "string function.arguments" },
    { SL_DIALECT_OPENAI, "{\"messages\":[{\"role\":\"model\",\"content\":\"x\"}]}", "unknown role" },
    //  Anthropic
    { SL_DIALECT_ANTHROPIC, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"content\":"
      "[{\"type\":\"tool_use\",\"id\":\"t_1\",\"name\":\"f\",\"input\":{}}]},{\"role\":\"user\",\"content\":"
      "[{\"type\":\"tool_result\",\"tool_use_id\":\"t_1\",\"content\":\"ok\"},{\"type\":\"text\",\"text\":\"more\"}]}]}", NULL },
    { SL_DIALECT_ANTHROPIC, "{\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t_1\","
      "\"name\":\"f\",\"input\":{}}]},{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"more\"},"
      "{\"type\":\"tool_result\",\"tool_use_id\":\"t_1\",\"content\":\"ok\"}]}]}", "and come first" },
    { SL_DIALECT_ANTHROPIC, "{\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t:1\","
      "\"name\":\"f\",\"input\":{}}]}]}", "^[a-zA-Z0-9_-]+$" },
    { SL_DIALECT_ANTHROPIC, "{\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\","
      "\"name\":\"f\",\"input\":{}}]},{\"role\":\"user\",\"content\":\"x\"}]}", "without tool_result blocks" },
    { SL_DIALECT_ANTHROPIC, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"\"}]}]}",
      "non-empty" },
    //  Mid-conversation system messages, placed as the API places them
    //  (a tool result, then a system message last: the result is still the last turn's)
    { SL_DIALECT_ANTHROPIC, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"system\",\"content\":"
      "\"Available agent types\"},{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t_1\","
      "\"name\":\"f\",\"input\":{}}]},{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":"
      "\"t_1\",\"content\":\"ok\"}]},{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"now\"}]}]}", NULL },
    { SL_DIALECT_ANTHROPIC, "{\"messages\":[{\"role\":\"system\",\"content\":\"x\"}]}", "cannot be the first" },
    { SL_DIALECT_ANTHROPIC, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"assistant\",\"content\":"
      "\"a\"},{\"role\":\"system\",\"content\":\"s\"}]}", "immediately follow a user message" },
    { SL_DIALECT_ANTHROPIC, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"system\",\"content\":\"s\"},"
      "{\"role\":\"user\",\"content\":\"y\"}]}", "followed by an assistant message" },
    { SL_DIALECT_ANTHROPIC, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"system\",\"content\":\"s\"},"
      "{\"role\":\"system\",\"content\":\"t\"}]}", "followed by an assistant message" },
    { SL_DIALECT_ANTHROPIC, "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"},{\"role\":\"system\",\"content\":"
      "[{\"type\":\"image\",\"source\":{}}]}]}", "text blocks only" },
    { SL_DIALECT_ANTHROPIC, "{\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}", "user, assistant or system" },
    //  Responses
    { SL_DIALECT_RESPONSES, "{\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":\"{}\"},"
      "{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":\"ok\"}]}", NULL },
    { SL_DIALECT_RESPONSES, "{\"input\":[{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":\"ok\"}]}",
      "No tool call found" },
    { SL_DIALECT_RESPONSES, "{\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\",\"name\":\"f\",\"arguments\":{}}]}",
      "string arguments" },
    //  Gemini
    { SL_DIALECT_GEMINI, "{\"contents\":[{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":{}}}]},"
      "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"f\",\"response\":{\"output\":\"ok\"}}}]}]}", NULL },
    { SL_DIALECT_GEMINI, "{\"contents\":[{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":{}}},"
      "{\"functionCall\":{\"name\":\"f\",\"args\":{}}}]},{\"role\":\"user\",\"parts\":[{\"functionResponse\":"
      "{\"name\":\"f\",\"response\":{}}}]}]}", "number of function response parts" },
    { SL_DIALECT_GEMINI, "{\"contents\":[{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"f\",\"args\":{}}}]},"
      "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"g\",\"response\":{}}}]}]}", "naming its function" },
    { SL_DIALECT_GEMINI, "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"x\",\"inlineData\":{}}]}]}", "one of" },
    { SL_DIALECT_GEMINI, "{\"contents\":[{\"role\":\"assistant\",\"parts\":[{\"text\":\"x\"}]}]}", "user or model" },
};

Test (sl_mock_provider, refuses_what_each_provider_refuses)
{
    for (size_t i = 0; i < sizeof s_cases / sizeof s_cases [0]; i++) {
        char why [512] = "";
        int rc = sl_mock_provider_check (s_cases [i].dialect, sl_str (s_cases [i].body), why, sizeof why);
        if (!s_cases [i].why)
            cr_expect_eq (rc, 0, "case %zu taken: %s", i, why);
        else {
            cr_expect_eq (rc, -1, "case %zu refused", i);
            cr_expect_not_null (strstr (why, s_cases [i].why), "case %zu: %s", i, why);
        }
    }
    char why [64];
    cr_expect_eq (sl_mock_provider_check (SL_DIALECT_OPENAI, sl_str ("[]"), why, sizeof why), -1);
    cr_expect_eq (sl_mock_provider_check (SL_DIALECT_NONE, sl_str ("{}"), why, sizeof why), -1);
}

Test (sl_mock_provider, reads_the_last_result_and_names_its_tool)
{
    sl_mock_result_t r;
    for (size_t i = 0; i < sizeof s_cases / sizeof s_cases [0]; i++) {
        if (s_cases [i].why)
            continue;
        cr_assert (sl_mock_provider_result (s_cases [i].dialect, sl_str (s_cases [i].body), &r), "case %zu", i);
        cr_expect_str_eq (r.name, "f", "case %zu", i);
        cr_expect_str_eq (r.text, "ok", "case %zu", i);
    }
    cr_expect_not (sl_mock_provider_result (SL_DIALECT_OPENAI, sl_str ("{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}"), &r));
}

Test (sl_mock_provider, every_module_is_complete_and_an_incomplete_one_is_named)
{
    const char *why = NULL;
    cr_assert_eq (sl_mock_provider_init (&why), 0, "%s", why ? why : "");
    for (size_t i = 0; i < sl_mock_provider_count (); i++) {
        const sl_mock_provider_t *p = sl_mock_provider_at (i);
        cr_expect_eq (sl_mock_provider_check_table (p, &why), 0, "%zu: %s", i, why ? why : "");
        cr_expect_eq (sl_mock_provider_get (p->dialect), p);
    }
    cr_expect_null (sl_mock_provider_get (SL_DIALECT_NONE));
    cr_expect_null (sl_mock_provider_get (SL_DIALECT_MAX));
    sl_mock_provider_t copy = *sl_mock_provider_get (SL_DIALECT_ANTHROPIC);
    copy.check = NULL;
    cr_expect_eq (sl_mock_provider_check_table (&copy, &why), -1);
    cr_expect_str_eq (why, "request check missing");
    copy = *sl_mock_provider_get (SL_DIALECT_ANTHROPIC);
    copy.shape.turns = NULL;
    cr_expect_eq (sl_mock_provider_check_table (&copy, &why), -1);
    cr_expect_str_eq (why, "request shape missing");
    sl_mock_render_t render = *copy.render;
    copy = *sl_mock_provider_get (SL_DIALECT_ANTHROPIC);
    render.bad_request = NULL;
    copy.render = &render;
    cr_expect_eq (sl_mock_provider_check_table (&copy, &why), -1);
    cr_expect_str_eq (why, "error word missing");
}

Test (sl_mock_provider, the_provider_of_a_path_and_the_paths_served)
{
    char model [64] = "unchanged";
    cr_expect_eq (sl_mock_provider_of_path ("/v1/messages", model, sizeof model)->dialect, SL_DIALECT_ANTHROPIC);
    cr_expect_str_eq (model, "unchanged", "the model is in the body");
    cr_expect_eq (sl_mock_provider_of_path ("/v1beta/models/gemini-x:streamGenerateContent", model, sizeof model)->dialect,
                  SL_DIALECT_GEMINI);
    cr_expect_str_eq (model, "gemini-x");
    cr_expect_null (sl_mock_provider_of_path ("/v1beta/models/gemini-x:generateContent", model, sizeof model));
    sl_buf_t paths = { 0 };
    sl_mock_provider_paths (&paths);
    cr_expect_str_eq (sl_buf_cstr (&paths), "POST .../chat/completions, .../messages, .../responses, "
                                            ".../models/{model}:streamGenerateContent, "
                                            ".../model/{model}/converse-stream, "
                                            ".../model/{model}/invoke-with-response-stream, "
                                            ".../publishers/google/models/{model}:streamGenerateContent, "
                                            ".../publishers/anthropic/models/{model}:streamRawPredict and "
                                            ".../openai/.../chat/completions");
    //  A cloud's door at its own path, though its path ends as its
    //  vendor's does.
    cr_expect_eq (sl_mock_provider_of_path ("/v1/projects/p/locations/global/publishers/google/models/"
                                            "gemini-x:streamGenerateContent", model, sizeof model)->dialect,
                  SL_DIALECT_VERTEX);
    cr_expect_str_eq (model, "gemini-x");
    cr_expect_eq (sl_mock_provider_of_path ("/v1/projects/p/locations/us-east5/publishers/anthropic/models/"
                                            "claude-x@20250929:streamRawPredict", model, sizeof model)->dialect,
                  SL_DIALECT_VERTEX_ANTHROPIC);
    cr_expect_str_eq (model, "claude-x@20250929");
    cr_expect_eq (sl_mock_provider_of_path ("/openai/deployments/d/chat/completions", model, sizeof model)->dialect,
                  SL_DIALECT_AZURE);
    cr_expect_eq (sl_mock_provider_of_path ("/openai/v1/chat/completions", model, sizeof model)->dialect,
                  SL_DIALECT_AZURE);
    cr_expect_eq (sl_mock_provider_of_path ("/v1/chat/completions", model, sizeof model)->dialect,
                  SL_DIALECT_OPENAI);
    sl_buf_free (&paths);
}
