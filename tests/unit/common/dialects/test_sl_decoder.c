/*  Unit tests: common/dialects/sl_decoder (the decoder object: a
    provider's error answer read as its stream's errors are). */
#include <criterion/criterion.h>
#include <stdio.h>

#include "common/dialects/sl_decoder.h"

//  The code and message a decoder of dialect reads from body, as "code|message"
//  ("-" for an absent one).
static void
s_read (int dialect, const char *body, char *out, size_t size)
{
    sl_decoder_t *dec = sl_decoder_new (dialect);
    cr_assert_not_null (dec);
    sl_str_t code, message;
    sl_decoder_error_body (dec, sl_str (body), &code, &message);
    snprintf (out, size, "%.*s|%.*s", code.ptr ? (int) code.len : 1, code.ptr ? code.ptr : "-",
              message.ptr ? (int) message.len : 1, message.ptr ? message.ptr : "-");
    sl_decoder_destroy (&dec);
}

Test (sl_decoder, an_error_answer_is_read_in_every_provider_s_shape)
{
    char got [256];
    s_read (SL_DIALECT_OPENAI, "{\"error\":{\"message\":\"no such model\",\"type\":\"invalid_request_error\","
                               "\"param\":null,\"code\":\"model_not_found\"}}", got, sizeof got);
    cr_expect_str_eq (got, "invalid_request_error|no such model", "OpenAI: the type names it");
    s_read (SL_DIALECT_ANTHROPIC, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
                                  "\"message\":\"Overloaded\"}}", got, sizeof got);
    cr_expect_str_eq (got, "overloaded_error|Overloaded", "Anthropic: the inner error, not the envelope");
    s_read (SL_DIALECT_GEMINI, "{\"error\":{\"code\":429,\"message\":\"Quota \\\"exceeded\\\"\","
                               "\"status\":\"RESOURCE_EXHAUSTED\"}}", got, sizeof got);
    cr_expect_str_eq (got, "RESOURCE_EXHAUSTED|Quota \"exceeded\"", "Gemini: the RPC status, unescaped");
    s_read (SL_DIALECT_RESPONSES, "{\"error\":{\"type\":null,\"code\":\"rate_limit_exceeded\","
                                  "\"message\":\"slow\"}}", got, sizeof got);
    cr_expect_str_eq (got, "rate_limit_exceeded|slow", "a code that is a string, when there is no type");
}

Test (sl_decoder, what_an_error_answer_lacks_is_absent)
{
    char got [256];
    s_read (SL_DIALECT_OPENAI, "{\"error\":{\"code\":404,\"message\":\"gone\"}}", got, sizeof got);
    cr_expect_str_eq (got, "-|gone", "a numeric code names nothing: the HTTP status says it");
    s_read (SL_DIALECT_OPENAI, "{\"error\":\"plain words\"}", got, sizeof got);
    cr_expect_str_eq (got, "-|plain words");
    s_read (SL_DIALECT_OPENAI, "{\"detail\":\"not an error object\"}", got, sizeof got);
    cr_expect_str_eq (got, "-|-");
    s_read (SL_DIALECT_OPENAI, "<html>502 Bad Gateway</html>", got, sizeof got);
    cr_expect_str_eq (got, "-|-", "not JSON");
    s_read (SL_DIALECT_OPENAI, "", got, sizeof got);
    cr_expect_str_eq (got, "-|-");
}
