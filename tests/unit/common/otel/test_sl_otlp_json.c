/*  Unit tests: common/otel/sl_otlp_json (OTLP/JSON as the OTLP/HTTP
    specification maps the protobuf messages: hex ids, int64 as strings,
    enums as integers, lowerCamelCase names). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/base/sl_version.h"
#include "common/otel/sl_otlp_impl.h"

static const uint8_t s_trace [SL_TRACE_ID_SIZE] = {
    0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36
};
static const uint8_t s_id [SL_SPAN_ID_SIZE] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };
static const uint8_t s_parent [SL_SPAN_ID_SIZE] = { 0x53, 0x99, 0x5c, 0x3f, 0x42, 0xcd, 0x8a, 0xd8 };
static const sl_otlp_resource_t s_resource = { "sluice-emitter", "e1", "9.9.9" };

static char *
s_encode (sl_span_t *span)
{
    sl_buf_t out = { 0 };
    sl_otlp_json_codec.encode (&s_resource, &span, 1, &out);
    cr_expect (sl_json_valid (sl_buf_str (&out)), "valid JSON: %s", sl_buf_cstr (&out));
    char *text = strdup (sl_buf_cstr (&out));
    sl_buf_free (&out);
    return text;
}

Test (sl_otlp_json, a_small_span_whole)
{
    sl_span_t *span = sl_span_new ("chat", s_trace, s_id, NULL, SL_SPAN_SERVER, 1700000000000000001ull);
    sl_span_end (span, 1700000000000000002ull);
    char *text = s_encode (span);
    cr_expect_str_eq (text,
        "{\"resourceSpans\":[{\"resource\":{\"attributes\":["
        "{\"key\":\"service.name\",\"value\":{\"stringValue\":\"sluice-emitter\"}},"
        "{\"key\":\"service.instance.id\",\"value\":{\"stringValue\":\"e1\"}},"
        "{\"key\":\"service.version\",\"value\":{\"stringValue\":\"9.9.9\"}}]},"
        "\"scopeSpans\":[{\"scope\":{\"name\":\"sluice\",\"version\":\"9.9.9\"},\"spans\":["
        "{\"traceId\":\"4bf92f3577b34da6a3ce929d0e0e4736\",\"spanId\":\"00f067aa0ba902b7\","
        "\"name\":\"chat\",\"kind\":2,\"startTimeUnixNano\":\"1700000000000000001\","
        "\"endTimeUnixNano\":\"1700000000000000002\",\"attributes\":[]}]}]}]}");
    free (text);
    sl_span_destroy (&span);
}

Test (sl_otlp_json, attribute_types_and_arrays)
{
    sl_span_t *span = sl_span_new ("s", s_trace, s_id, NULL, SL_SPAN_INTERNAL, 1);
    sl_span_set_str (span, "t", SL_STR_LIT ("a \"quoted\"\nline"));
    sl_span_set_int (span, "n", INT64_MIN);
    sl_span_set_double (span, "d", 0.25);
    sl_span_set_bool (span, "b", false);
    sl_span_add_str (span, "a", SL_STR_LIT ("stop"));
    sl_span_add_str (span, "a", SL_STR_LIT ("length"));
    char *text = s_encode (span);
    cr_expect_not_null (strstr (text, "{\"key\":\"t\",\"value\":{\"stringValue\":\"a \\\"quoted\\\"\\nline\"}}"), "%s", text);
    cr_expect_not_null (strstr (text, "{\"key\":\"n\",\"value\":{\"intValue\":\"-9223372036854775808\"}}"), "%s", text);
    cr_expect_not_null (strstr (text, "{\"key\":\"d\",\"value\":{\"doubleValue\":0.25}}"), "%s", text);
    cr_expect_not_null (strstr (text, "{\"key\":\"b\",\"value\":{\"boolValue\":false}}"), "%s", text);
    cr_expect_not_null (strstr (text, "{\"key\":\"a\",\"value\":{\"arrayValue\":{\"values\":["
                                      "{\"stringValue\":\"stop\"},{\"stringValue\":\"length\"}]}}}"), "%s", text);
    free (text);
    sl_span_destroy (&span);
}

Test (sl_otlp_json, parent_tracestate_and_error)
{
    sl_span_t *span = sl_span_new ("v", s_trace, s_id, s_parent, SL_SPAN_CLIENT, 1);
    sl_span_set_tracestate (span, SL_STR_LIT ("vendor=1"));
    sl_span_set_error (span, SL_STR_LIT ("judge down"));
    char *text = s_encode (span);
    cr_expect_not_null (strstr (text, "\"traceState\":\"vendor=1\",\"parentSpanId\":\"53995c3f42cd8ad8\""), "%s", text);
    cr_expect_not_null (strstr (text, "\"kind\":3"), "%s", text);
    cr_expect_not_null (strstr (text, "\"status\":{\"message\":\"judge down\",\"code\":2}"), "%s", text);
    free (text);
    sl_span_destroy (&span);
}

Test (sl_otlp_json, doubles_json_cannot_hold)
{
    sl_span_t *span = sl_span_new ("s", s_trace, s_id, NULL, SL_SPAN_INTERNAL, 1);
    sl_span_set_double (span, "inf", INFINITY);
    sl_span_set_double (span, "nan", NAN);
    char *text = s_encode (span);
    cr_expect_not_null (strstr (text, "{\"doubleValue\":\"Infinity\"}"), "%s", text);
    cr_expect_not_null (strstr (text, "{\"doubleValue\":\"NaN\"}"), "%s", text);
    free (text);
    sl_span_destroy (&span);
}

static int
s_response (const char *body, int64_t *rejected)
{
    return sl_otlp_json_codec.response (sl_str (body), rejected);
}

Test (sl_otlp_json, responses)
{
    int64_t rejected = -1;
    cr_expect_eq (s_response ("", &rejected), 0);
    cr_expect_eq (rejected, 0);
    cr_expect_eq (s_response ("{}", &rejected), 0);
    cr_expect_eq (rejected, 0);
    cr_expect_eq (s_response ("{\"partialSuccess\":{\"rejectedSpans\":\"3\",\"errorMessage\":\"x\"}}", &rejected), 0);
    cr_expect_eq (rejected, 3, "int64 as a string");
    cr_expect_eq (s_response ("{\"partialSuccess\":{\"rejectedSpans\":4}}", &rejected), 0);
    cr_expect_eq (rejected, 4, "int64 as a number");
    cr_expect_eq (s_response ("{\"partialSuccess\":{}}", &rejected), 0);
    cr_expect_eq (rejected, 0);
    cr_expect_eq (s_response ("this is not json", &rejected), -2);
    cr_expect_eq (s_response ("{\"partialSuccess\":{\"rejectedSpans\":\"many\"}}", &rejected), -2);
    cr_expect_eq (s_response ("{\"partialSuccess\":{\"rejectedSpans\":-1}}", &rejected), -2);
    cr_expect_eq (s_response ("[1,2]", &rejected), -2);
    cr_expect_eq (s_response ("{\"partialSuccess\":", &rejected), -2);
}
