/*  Unit tests: common/otel/sl_span (copies, order, last value wins, and
    the bounds: long strings cut on a character, attributes and array
    items past the limit counted). Read back through the JSON encoding. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/otel/sl_otlp_impl.h"
#include "common/otel/sl_span_impl.h"

static const uint8_t s_trace [SL_TRACE_ID_SIZE] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };
static const uint8_t s_id [SL_SPAN_ID_SIZE] = { 1, 2, 3, 4, 5, 6, 7, 8 };
static const uint8_t s_zero [SL_SPAN_ID_SIZE] = { 0 };
static const sl_otlp_resource_t s_resource = { "t", NULL, "0" };

static char *
s_json (sl_span_t *span)
{
    sl_buf_t out = { 0 };
    sl_otlp_json_codec.encode (&s_resource, &span, 1, &out);
    char *text = strdup (sl_buf_cstr (&out));
    sl_buf_free (&out);
    return text;
}

Test (sl_span, copies_what_is_set)
{
    char key [] = "k", value [] = "value", name [] = "name";
    sl_span_t *span = sl_span_new (name, s_trace, s_id, s_zero, SL_SPAN_INTERNAL, 5);
    sl_span_set_str (span, key, sl_str (value));
    memset (value, 'X', 5);
    memset (name, 'Y', 4);
    char *text = s_json (span);
    cr_expect_not_null (strstr (text, "{\"key\":\"k\",\"value\":{\"stringValue\":\"value\"}}"), "%s", text);
    cr_expect_not_null (strstr (text, "\"name\":\"name\""), "%s", text);
    cr_expect_null (strstr (text, "parentSpanId"), "an all-zero parent is no parent: %s", text);
    free (text);
    sl_span_destroy (&span);
    sl_span_destroy (&span);
    cr_expect_null (span);
}

Test (sl_span, a_key_set_twice_keeps_its_place_and_last_value)
{
    sl_span_t *span = sl_span_new ("s", s_trace, s_id, NULL, SL_SPAN_INTERNAL, 1);
    sl_span_set_str (span, "first", SL_STR_LIT ("a"));
    sl_span_set_int (span, "second", 1);
    sl_span_set_int (span, "first", 2);
    sl_span_add_str (span, "second", SL_STR_LIT ("x"));
    sl_span_add_str (span, "second", SL_STR_LIT ("y"));
    char *text = s_json (span);
    cr_expect_not_null (strstr (text, "\"attributes\":[{\"key\":\"first\",\"value\":{\"intValue\":\"2\"}},"
                                      "{\"key\":\"second\",\"value\":{\"arrayValue\":{\"values\":"
                                      "[{\"stringValue\":\"x\"},{\"stringValue\":\"y\"}]}}}]"), "%s", text);
    free (text);
    sl_span_destroy (&span);
}

Test (sl_span, ends_never_before_it_starts)
{
    sl_span_t *span = sl_span_new ("s", s_trace, s_id, NULL, SL_SPAN_INTERNAL, 100);
    sl_span_end (span, 50);
    char *text = s_json (span);
    cr_expect_not_null (strstr (text, "\"endTimeUnixNano\":\"100\""), "%s", text);
    free (text);
    sl_span_destroy (&span);
}

Test (sl_span, long_strings_cut_on_a_character)
{
    size_t size = SL_SPAN_STR_MAX + 10;
    char *big = malloc (size);
    //  "é" (2 bytes) repeated, then one byte: the bound falls inside a character.
    memset (big, 'a', size);
    for (size_t i = 1; i + 1 < size; i += 2) {
        big [i] = (char) 0xc3;
        big [i + 1] = (char) 0xa9;
    }
    sl_span_t *span = sl_span_new ("s", s_trace, s_id, NULL, SL_SPAN_INTERNAL, 1);
    sl_span_set_str (span, "big", sl_str_n (big, size));
    sl_span_set_str (span, "small", SL_STR_LIT ("ok"));
    cr_expect_eq (span->attrs [0].v.str.len, SL_SPAN_STR_MAX - 1, "cut before the character the bound splits");
    cr_expect_eq (span->truncated, 1);
    char *text = s_json (span);
    cr_expect_not_null (strstr (text, "{\"key\":\"" SL_SPAN_TRUNCATED_KEY "\",\"value\":{\"intValue\":\"1\"}}"), "the cut is said");
    free (text);
    free (big);
    sl_span_destroy (&span);
}

Test (sl_span, ill_formed_utf8_repaired)
{
    sl_span_t *span = sl_span_new ("s", s_trace, s_id, NULL, SL_SPAN_INTERNAL, 1);
    sl_span_set_str (span, "k", SL_STR_LIT ("a\xff" "b"));
    cr_expect_str_eq (span->attrs [0].v.str.ptr, "a\xef\xbf\xbd" "b");
    cr_expect_eq (span->truncated, 0, "a repair is no cut");
    sl_span_destroy (&span);
}

Test (sl_span, attributes_and_items_past_the_bound_counted)
{
    sl_span_t *span = sl_span_new ("s", s_trace, s_id, NULL, SL_SPAN_INTERNAL, 1);
    char key [32];
    for (int i = 0; i < SL_SPAN_ATTRS_MAX + 3; i++) {
        snprintf (key, sizeof key, "k%d", i);
        sl_span_set_int (span, key, i);
    }
    sl_span_set_int (span, "k0", -1);   //  a key already there still takes its new value
    for (int i = 0; i < SL_SPAN_ARRAY_MAX + 2; i++)
        sl_span_add_str (span, "k1", SL_STR_LIT ("x"));
    cr_expect_eq (span->attr_count, SL_SPAN_ATTRS_MAX);
    char *text = s_json (span);
    cr_expect_not_null (strstr (text, "\"droppedAttributesCount\":3"), "attributes left out: OTLP's count");
    cr_expect_not_null (strstr (text, "{\"key\":\"k0\",\"value\":{\"intValue\":\"-1\"}}"));
    cr_expect_eq (span->attrs [1].v.arr.count, SL_SPAN_ARRAY_MAX);
    cr_expect_not_null (strstr (text, "{\"key\":\"" SL_SPAN_TRUNCATED_KEY "\",\"value\":{\"intValue\":\"2\"}}"),
                        "array items left out");
    free (text);
    sl_span_destroy (&span);
}

Test (sl_span, error_and_tracestate_replaced)
{
    sl_span_t *span = sl_span_new ("s", s_trace, s_id, NULL, SL_SPAN_INTERNAL, 1);
    sl_span_set_tracestate (span, SL_STR_LIT ("a=1"));
    sl_span_set_tracestate (span, SL_STR_LIT ("b=2"));
    sl_span_set_error (span, SL_STR_LIT ("one"));
    sl_span_set_error (span, SL_STR_LIT ("two"));
    char *text = s_json (span);
    cr_expect_not_null (strstr (text, "\"traceState\":\"b=2\""), "%s", text);
    cr_expect_not_null (strstr (text, "\"status\":{\"message\":\"two\",\"code\":2}"), "%s", text);
    free (text);
    sl_span_destroy (&span);
}
