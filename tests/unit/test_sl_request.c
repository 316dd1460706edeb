/*  Unit tests: services/gateway/sl_request. */
#include <criterion/criterion.h>
#include <jansson.h>

#include "../../services/gateway/sl_request.h"

static int
s_parse (const char *body, sl_request_t *r)
{
    return sl_request_parse_openai (sl_str (body), r);
}

Test (sl_request, prepares_the_upstream_body)
{
    sl_request_t r;
    cr_assert_eq (s_parse ("{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"system\",\"content\":\"s\"},"
                           "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]},"
                           "{\"role\":\"assistant\",\"content\":\"a\"}],"
                           "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"object\"}}}]}",
                           &r), 0);
    cr_expect (sl_str_eq (sl_buf_str (&r.model), "m"));
    cr_expect (r.stream);
    cr_expect_not (r.include_usage);
    cr_expect (sl_str_eq (sl_buf_str (&r.last_user), "hello"));
    cr_expect (sl_str_eq (sl_buf_str (&r.tools), "[{\"name\":\"f\",\"schema\":{\"type\":\"object\"}}]"));
    json_t *up = json_loads (sl_buf_cstr (&r.upstream_body), 0, NULL);
    cr_assert_not_null (up);
    cr_expect (json_is_true (json_object_get (up, "stream")));
    cr_expect (json_is_true (json_object_get (json_object_get (up, "stream_options"), "include_usage")),
               "usage is always asked for upstream");
    cr_expect_eq (json_array_size (json_object_get (up, "messages")), 3, "messages untouched");
    json_decref (up);
    sl_request_clear (&r);
}

Test (sl_request, client_usage_option_noted)
{
    sl_request_t r;
    cr_assert_eq (s_parse ("{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                           "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", &r), 0);
    cr_expect (r.include_usage);
    cr_expect (sl_str_eq (sl_buf_str (&r.tools), "[]"));
    sl_request_clear (&r);
}

Test (sl_request, refuses_bad_requests_with_reasons)
{
    struct { const char *body; const char *needle; } cases [] = {
        { "{bad", "not valid JSON" },
        { "[1]", "JSON object" },
        { "{\"messages\":[{}],\"stream\":true}", "'model'" },
        { "{\"model\":\"m\",\"stream\":true}", "'messages'" },
        { "{\"model\":\"m\",\"stream\":\"yes\",\"messages\":[{}]}", "'stream' must be a boolean" },
        { "{\"model\":\"m\",\"messages\":[{}]}", "non-streaming" },
        { "{\"model\":\"m\",\"stream\":true,\"n\":2,\"messages\":[{}]}", "'n'" },
        { "{\"model\":\"m\",\"stream\":true,\"messages\":[{}],\"tools\":{}}", "'tools' must be an array" },
        { "{\"model\":\"m\",\"stream\":true,\"messages\":[{}],\"tools\":[{\"function\":{}}]}", "tools[0]" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_request_t r;
        cr_expect_eq (s_parse (cases [i].body, &r), -1, "case %zu refused", i);
        cr_expect_eq (r.status, 400);
        cr_expect_str_eq (r.error_type, "invalid_request_error");
        cr_expect_not_null (strstr (sl_buf_cstr (&r.error_message), cases [i].needle),
                            "case %zu: '%s' mentions %s", i, sl_buf_cstr (&r.error_message), cases [i].needle);
        sl_request_clear (&r);
    }
}
