/*  Unit tests: common/otel/sl_otlp_proto (OTLP protobuf, checked against
    bytes worked out by hand from opentelemetry-proto's field numbers). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/base/sl_version.h"
#include "common/otel/sl_otlp_impl.h"

static const uint8_t s_trace [SL_TRACE_ID_SIZE] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t s_id [SL_SPAN_ID_SIZE] = { 1, 2, 3, 4, 5, 6, 7, 8 };
static const uint8_t s_parent [SL_SPAN_ID_SIZE] = { 8, 7, 6, 5, 4, 3, 2, 1 };
static const sl_otlp_resource_t s_resource = { "a", NULL, SL_VERSION };

static void
s_encode (sl_span_t *span, sl_buf_t *out)
{
    sl_otlp_proto_codec.encode (&s_resource, &span, 1, out);
}

static bool
s_has (const sl_buf_t *out, const uint8_t *bytes, size_t size)
{
    return memmem (out->data, out->len, bytes, size) != NULL;
}

Test (sl_otlp_proto, a_small_span_byte_for_byte)
{
    sl_span_t *span = sl_span_new ("s", s_trace, s_id, NULL, SL_SPAN_INTERNAL, 1);
    sl_span_end (span, 2);
    sl_buf_t out = { 0 };
    s_encode (span, &out);
    const uint8_t expect [] = {
        0x12, 0x33,                                     //  ScopeSpans.spans, 51 bytes
        0x0a, 0x10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
        0x12, 0x08, 1, 2, 3, 4, 5, 6, 7, 8,
        0x2a, 0x01, 's',                                //  name
        0x30, 0x01,                                     //  kind INTERNAL
        0x39, 1, 0, 0, 0, 0, 0, 0, 0,                   //  start, fixed64
        0x41, 2, 0, 0, 0, 0, 0, 0, 0                    //  end
    };
    cr_expect (s_has (&out, expect, sizeof expect));
    //  ExportTraceServiceRequest.resource_spans { resource { attributes } ... }
    cr_expect_eq ((uint8_t) out.data [0], 0x0a);
    const uint8_t name_attr [] = { 0x0a, 0x0c, 's', 'e', 'r', 'v', 'i', 'c', 'e', '.', 'n', 'a', 'm', 'e',
                                   0x12, 0x03, 0x0a, 0x01, 'a' };
    cr_expect (s_has (&out, name_attr, sizeof name_attr), "service.name in the resource");
    const uint8_t scope [] = { 0x0a, 0x06, 's', 'l', 'u', 'i', 'c', 'e' };
    cr_expect (s_has (&out, scope, sizeof scope), "the scope's name");
    cr_expect_null (memmem (out.data, out.len, "service.instance.id", 19), "no instance given, none sent");
    sl_buf_free (&out);
    sl_span_destroy (&span);
}

Test (sl_otlp_proto, attribute_types)
{
    sl_span_t *span = sl_span_new ("s", s_trace, s_id, NULL, SL_SPAN_SERVER, 1);
    sl_span_set_int (span, "n", -1);
    sl_span_set_double (span, "d", 0.5);
    sl_span_set_bool (span, "b", true);
    sl_span_set_str (span, "t", SL_STR_LIT ("v"));
    sl_span_add_str (span, "a", SL_STR_LIT ("x"));
    sl_span_add_str (span, "a", SL_STR_LIT ("y"));
    sl_buf_t out = { 0 };
    s_encode (span, &out);
    const uint8_t n [] = { 0x4a, 0x10, 0x0a, 0x01, 'n', 0x12, 0x0b,
                           0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
    const uint8_t d [] = { 0x4a, 0x0e, 0x0a, 0x01, 'd', 0x12, 0x09, 0x21, 0, 0, 0, 0, 0, 0, 0xe0, 0x3f };
    const uint8_t b [] = { 0x4a, 0x07, 0x0a, 0x01, 'b', 0x12, 0x02, 0x10, 0x01 };
    const uint8_t t [] = { 0x4a, 0x08, 0x0a, 0x01, 't', 0x12, 0x03, 0x0a, 0x01, 'v' };
    const uint8_t a [] = { 0x4a, 0x11, 0x0a, 0x01, 'a', 0x12, 0x0c, 0x2a, 0x0a,
                           0x0a, 0x03, 0x0a, 0x01, 'x', 0x0a, 0x03, 0x0a, 0x01, 'y' };
    cr_expect (s_has (&out, n, sizeof n), "int64 as a two's complement varint");
    cr_expect (s_has (&out, d, sizeof d), "double as fixed64");
    cr_expect (s_has (&out, b, sizeof b));
    cr_expect (s_has (&out, t, sizeof t));
    cr_expect (s_has (&out, a, sizeof a), "a string array");
    sl_buf_free (&out);
    sl_span_destroy (&span);
}

Test (sl_otlp_proto, parent_tracestate_and_error)
{
    sl_span_t *span = sl_span_new ("s", s_trace, s_id, s_parent, SL_SPAN_CLIENT, 1);
    sl_span_set_tracestate (span, SL_STR_LIT ("k=v"));
    sl_span_set_error (span, SL_STR_LIT ("no"));
    sl_buf_t out = { 0 };
    s_encode (span, &out);
    const uint8_t parent [] = { 0x22, 0x08, 8, 7, 6, 5, 4, 3, 2, 1 };
    const uint8_t state [] = { 0x1a, 0x03, 'k', '=', 'v' };
    const uint8_t status [] = { 0x7a, 0x06, 0x12, 0x02, 'n', 'o', 0x18, 0x02 };
    const uint8_t kind [] = { 0x30, 0x03 };
    cr_expect (s_has (&out, parent, sizeof parent));
    cr_expect (s_has (&out, state, sizeof state));
    cr_expect (s_has (&out, status, sizeof status), "status ERROR (2) with its message");
    cr_expect (s_has (&out, kind, sizeof kind));
    sl_buf_free (&out);
    sl_span_destroy (&span);

    span = sl_span_new ("s", s_trace, s_id, NULL, SL_SPAN_CLIENT, 1);
    s_encode (span, &out);
    cr_expect (!s_has (&out, (const uint8_t []) { 0x22, 0x08 }, 2), "a root has no parent_span_id");
    cr_expect (!s_has (&out, (const uint8_t []) { 0x7a }, 1), "an unset status is left out");
    sl_buf_free (&out);
    sl_span_destroy (&span);
}

Test (sl_otlp_proto, long_messages_get_long_lengths)
{
    //  A name of 200 bytes: its length is a two-byte varint (c8 01).
    char name [201];
    memset (name, 'x', 200);
    name [200] = 0;
    sl_span_t *span = sl_span_new (name, s_trace, s_id, NULL, SL_SPAN_INTERNAL, 1);
    sl_buf_t out = { 0 };
    s_encode (span, &out);
    cr_expect (s_has (&out, (const uint8_t []) { 0x2a, 0xc8, 0x01, 'x' }, 4));
    sl_buf_free (&out);
    sl_span_destroy (&span);
}

static int
s_response (const uint8_t *bytes, size_t size, int64_t *rejected)
{
    return sl_otlp_proto_codec.response (sl_str_n (bytes, size), rejected);
}

Test (sl_otlp_proto, responses)
{
    int64_t rejected = -1;
    cr_expect_eq (s_response (NULL, 0, &rejected), 0, "empty: all accepted");
    cr_expect_eq (rejected, 0);
    cr_expect_eq (s_response ((const uint8_t []) { 0x0a, 0x02, 0x08, 0x05 }, 4, &rejected), 0);
    cr_expect_eq (rejected, 5, "partial_success.rejected_spans");
    cr_expect_eq (s_response ((const uint8_t []) { 0x0a, 0x03, 0x12, 0x01, 'x' }, 5, &rejected), 0);
    cr_expect_eq (rejected, 0, "a message alone rejects nothing");
    cr_expect_eq (s_response ((const uint8_t []) { 0x0a, 0x05, 0x08 }, 3, &rejected), -2, "cut short");
    cr_expect_eq (s_response ((const uint8_t []) { 0xff, 0xff, 0xff, 0xff }, 4, &rejected), -2, "garbage");
    cr_expect_eq (s_response ((const uint8_t []) { '<', 'h', 't', 'm', 'l', '>' }, 6, &rejected), -2, "an HTML page");
}
