/*  Unit tests: common/base/sl_json (scanner and writer). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/base/sl_json.h"

static bool
s_valid (const char *text)
{
    return sl_json_valid (sl_str (text));
}

Test (sl_json, accepts_valid_documents)
{
    const char *good [] = {
        "{}", "[]", "0", "-0.5e+10", "\"\"", "true", "false", "null",
        " { \"a\" : [1, 2, {\"b\": null}], \"c\": \"x\\ny\\u00e9\\ud83d\\ude00\" } ",
        "[[[[[]]]]]", "{\"k\":{\"k\":{\"k\":[true,false]}}}", NULL
    };
    for (int i = 0; good [i]; i++)
        cr_expect (s_valid (good [i]), "should be valid: %s", good [i]);
}

Test (sl_json, rejects_malformed_documents)
{
    const char *bad [] = {
        "", "{", "}", "[1,]", "{\"a\":}", "{\"a\" 1}", "{a:1}", "01", "1.", "-", ".5",
        "\"unterminated", "\"bad \\x escape\"", "\"ctrl \x01 char\"", "tru", "nul",
        "[1] [2]", "{\"a\":1,}", "[}", "{]", "\"\\u12G4\"", NULL
    };
    for (int i = 0; bad [i]; i++)
        cr_expect (!s_valid (bad [i]), "should be invalid: %s", bad [i]);
}

Test (sl_json, bounds_nesting_depth)
{
    char deep [SL_JSON_MAX_DEPTH * 2 + 3];
    size_t n = 0;
    for (int i = 0; i < SL_JSON_MAX_DEPTH; i++)
        deep [n++] = '[';
    for (int i = 0; i < SL_JSON_MAX_DEPTH; i++)
        deep [n++] = ']';
    deep [n] = 0;
    cr_expect (s_valid (deep), "depth at the limit is accepted");
    memmove (deep + 1, deep, n + 1);
    deep [0] = '[';
    deep [n + 1] = ']';
    deep [n + 2] = 0;
    cr_expect (!s_valid (deep), "one level deeper is rejected");
}

Test (sl_json, iterates_object_members)
{
    sl_str_t obj = sl_str ("{\"a\":1, \"b\" : \"two\", \"c\":[3,{\"d\":4}] }");
    sl_json_iter_t it;
    cr_assert_eq (sl_json_object (&it, obj), 0);
    sl_str_t k, v;
    cr_assert_eq (sl_json_next_member (&it, &k, &v), 1);
    cr_expect (sl_str_eq (k, "a") && sl_str_eq (v, "1"));
    cr_assert_eq (sl_json_next_member (&it, &k, &v), 1);
    cr_expect (sl_str_eq (k, "b") && sl_str_eq (v, "\"two\""));
    cr_assert_eq (sl_json_next_member (&it, &k, &v), 1);
    cr_expect (sl_str_eq (v, "[3,{\"d\":4}]"));
    cr_expect_eq (sl_json_next_member (&it, &k, &v), 0);
    cr_expect_eq (sl_json_next_member (&it, &k, &v), 0, "stays at the end");
}

Test (sl_json, reports_malformed_members)
{
    sl_json_iter_t it;
    sl_str_t k, v;
    cr_assert_eq (sl_json_object (&it, sl_str ("{\"a\":1 \"b\":2}")), 0);
    cr_expect_eq (sl_json_next_member (&it, &k, &v), 1);
    cr_expect_eq (sl_json_next_member (&it, &k, &v), -2);
    cr_expect_eq (sl_json_object (&it, sl_str ("[1]")), -2);
    cr_expect_eq (sl_json_array (&it, sl_str ("{}")), -2);
}

Test (sl_json, finds_keys_and_escaped_keys)
{
    sl_str_t v;
    cr_expect_eq (sl_json_find (sl_str ("{\"x\":1,\"y\":[2]}"), "y", &v), 1);
    cr_expect (sl_str_eq (v, "[2]"));
    cr_expect_eq (sl_json_find (sl_str ("{\"x\":1}"), "z", &v), 0);
    cr_expect_eq (sl_json_find (sl_str ("{\"\\u0079\":7}"), "y", &v), 1, "escaped key");
    cr_expect (sl_str_eq (v, "7"));
}

Test (sl_json, decodes_strings)
{
    sl_buf_t scratch = { 0 };
    sl_str_t out;
    cr_assert_eq (sl_json_str (sl_str ("\"plain\""), &scratch, &out), 0);
    cr_expect (sl_str_eq (out, "plain"));
    cr_expect_eq (scratch.len, 0, "plain strings are not copied");
    cr_assert_eq (sl_json_str (sl_str ("\"a\\\"b\\\\c\\/d\\n\\t\\u00e9\\ud83d\\ude00\""), &scratch, &out), 0);
    cr_expect (sl_str_eq (out, "a\"b\\c/d\n\t\xc3\xa9\xf0\x9f\x98\x80"));
    cr_assert_eq (sl_json_str (sl_str ("\"lone \\ud800 surrogate\""), &scratch, &out), 0);
    cr_expect (sl_str_eq (out, "lone \xef\xbf\xbd surrogate"));
    cr_expect_eq (sl_json_str (sl_str ("42"), &scratch, &out), -2);
    cr_expect_eq (sl_json_str (sl_str ("\"open"), &scratch, &out), -2);
    sl_buf_free (&scratch);
}

Test (sl_json, reads_numbers_and_literals)
{
    int64_t i;
    double d;
    bool b;
    cr_expect (sl_json_i64 (sl_str ("-42"), &i) == 0 && i == -42);
    cr_expect (sl_json_i64 (sl_str ("3.0"), &i) == 0 && i == 3);
    cr_expect_eq (sl_json_i64 (sl_str ("3.5"), &i), -2);
    cr_expect_eq (sl_json_i64 (sl_str ("99999999999999999999"), &i), -2);
    cr_expect (sl_json_f64 (sl_str ("0.25"), &d) == 0 && d == 0.25);
    cr_expect (sl_json_bool (sl_str (" true "), &b) == 0 && b);
    cr_expect_eq (sl_json_bool (sl_str ("1"), &b), -2);
    cr_expect (sl_json_is_null (sl_str ("null")));
    cr_expect_eq (sl_json_type (sl_str ("  [1]")), SL_JSON_ARRAY);
    cr_expect_eq (sl_json_type (sl_str ("-1")), SL_JSON_NUMBER);
}

Test (sl_json, writes_escaped_strings)
{
    sl_buf_t out = { 0 };
    const char raw [] = "q\"b\\n\n\x01\xc3\xa9";
    sl_json_put_str (&out, raw, sizeof raw - 1);
    cr_expect_str_eq (sl_buf_cstr (&out), "\"q\\\"b\\\\n\\n\\u0001\xc3\xa9\"");
    //  What we write, we read back.
    sl_buf_t back = { 0 };
    cr_assert_eq (sl_json_unescape (sl_buf_str (&out), &back), 0);
    cr_expect_eq (back.len, sizeof raw - 1);
    cr_expect (memcmp (back.data, raw, back.len) == 0);
    sl_buf_free (&out);
    sl_buf_free (&back);
}

//  The closed form of a cut-off text, or "(-2)".
static const char *
s_closed (const char *partial)
{
    static char out [256];
    sl_buf_t buf = { 0 };
    sl_buf_puts (&buf, "keep:");
    int rc = sl_json_close (sl_str (partial), &buf);
    if (rc == 0)
        snprintf (out, sizeof out, "%s", sl_buf_cstr (&buf) + 5);
    else {
        cr_expect_eq (rc, -2);
        cr_expect_str_eq (sl_buf_cstr (&buf), "keep:", "out is left as it was");
        snprintf (out, sizeof out, "(-2)");
    }
    sl_buf_free (&buf);
    return out;
}

Test (sl_json, closes_cut_off_text_keeping_what_it_said)
{
    const char *cases [][2] = {
        //  A string cut inside is kept up to the cut.
        { "{\"command\":\"rm -rf /tm", "{\"command\":\"rm -rf /tm\"}" },
        { "{\"command\":\"", "{\"command\":\"\"}" },
        { "[\"ab", "[\"ab\"]" },
        { "\"top lev", "\"top lev\"" },
        //  A key without its value, a number or literal cut inside: dropped.
        { "{\"a\":1,\"comm", "{\"a\":1}" },
        { "{\"a\":1,\"b\"", "{\"a\":1}" },
        { "{\"a\":1,\"b\":", "{\"a\":1}" },
        { "{\"a\":[1,{\"b\":tr", "{\"a\":[1,{}]}" },
        { "{\"n\":12", "{}" },
        { "[1,2", "[1]" },
        { "{\"a\":\"x\",", "{\"a\":\"x\"}" },
        { "{\"a\":{\"b\":[]},\"c\":{", "{\"a\":{\"b\":[]},\"c\":{}}" },
        { "{", "{}" },
        { "  {\"a\":true , ", "{\"a\":true}" },
        //  Escapes and UTF-8 broken by the cut are dropped, whole ones kept.
        { "{\"s\":\"a\\", "{\"s\":\"a\"}" },
        { "{\"s\":\"a\\u00", "{\"s\":\"a\"}" },
        { "{\"s\":\"a\\u00e9", "{\"s\":\"a\\u00e9\"}" },
        { "{\"s\":\"a\\ud83d", "{\"s\":\"a\"}" },
        { "{\"s\":\"a\\ud83d\\ude00", "{\"s\":\"a\\ud83d\\ude00\"}" },
        { "{\"s\":\"a\\\"b", "{\"s\":\"a\\\"b\"}" },
        { "{\"s\":\"\xc3\xa9\xe2\x82", "{\"s\":\"\xc3\xa9\"}" },
        //  Whole values are copied.
        { " {\"a\":1} ", "{\"a\":1}" },
        { "[]", "[]" },
        //  Not the beginning of a value, or malformed in what would be kept.
        { "", "(-2)" },
        { "   ", "(-2)" },
        { "12", "12" },
        { "tru", "(-2)" },
        { "x{", "(-2)" },
        { "{\"a\":1}}", "(-2)" },
        { "{\"a\":1} {", "(-2)" },
        { "{\"a\":\"ctrl\x01", "(-2)" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++)
        cr_expect_str_eq (s_closed (cases [i][0]), cases [i][1], "closing [%s]", cases [i][0]);
}

Test (sl_json, closes_every_prefix_of_a_document_into_one_value)
{
    const char *doc = "{\"cmd\":\"rm -rf /\",\"n\":[1,22,{\"x\":null,\"y\":\"\\u00e9\\n\"}],\"ok\":false}";
    size_t len = strlen (doc);
    for (size_t n = 1; n <= len; n++) {
        sl_buf_t buf = { 0 };
        cr_expect_eq (sl_json_close (sl_str_n (doc, n), &buf), 0, "prefix of %zu bytes", n);
        cr_expect (sl_json_valid (sl_buf_str (&buf)), "closed: %s", sl_buf_cstr (&buf));
        cr_expect_eq (sl_json_type (sl_buf_str (&buf)), SL_JSON_OBJECT);
        sl_buf_free (&buf);
    }
}

Test (sl_json, closing_refuses_nesting_past_the_bound)
{
    char deep [SL_JSON_MAX_DEPTH + 2];
    memset (deep, '[', sizeof deep - 1);
    deep [sizeof deep - 1] = 0;
    cr_expect_str_eq (s_closed (deep), "(-2)");
}

Test (sl_json, stats_count_every_value_without_allocating)
{
    sl_json_stats_t st;
    const char *doc = " {\"a\": [1, -2.5e3, \"xy\", true, null, {}], \"bc\": {\"d\": []}} ";
    cr_assert_eq (sl_json_stats (sl_str (doc), &st), 0);
    cr_expect_eq (st.objects, 3);
    cr_expect_eq (st.arrays, 2);
    cr_expect_eq (st.members, 3);
    cr_expect_eq (st.key_bytes, 4);
    cr_expect_eq (st.elements, 6);
    cr_expect_eq (st.strings, 1);
    cr_expect_eq (st.string_bytes, 2);
    cr_expect_eq (st.numbers, 2);
    cr_expect_eq (st.literals, 2);
    cr_expect_eq (st.longest, 2);
    //  Where it went wrong, and why.
    cr_expect_eq (sl_json_stats (sl_str ("[1, 2,, 3]"), &st), -2);
    cr_expect_eq (st.error_at, 6);
    cr_expect_not (st.too_deep);
    cr_expect_eq (sl_json_stats (sl_str ("{} {}"), &st), -2);
    cr_expect_eq (sl_json_stats (sl_str ("[1"), &st), -2);
    cr_expect_eq (st.error_at, 2);
    char deep [SL_JSON_MAX_DEPTH + 2];
    memset (deep, '[', sizeof deep);
    cr_expect_eq (sl_json_stats (sl_str_n (deep, sizeof deep), &st), -2);
    cr_expect (st.too_deep);
    //  It accepts exactly what the validating scanner accepts.
    const char *docs [] = { "{}", "[[]]", "\"s\"", "1", "{\"a\":}", "[1,]", "nul", "  ", "{\"a\":1,}", NULL };
    for (int i = 0; docs [i]; i++)
        cr_expect_eq (sl_json_stats (sl_str (docs [i]), &st) == 0, sl_json_valid (sl_str (docs [i])), "%s", docs [i]);
}

Test (sl_json, stats_count_the_deepest_nesting)
{
    sl_json_stats_t st;
    cr_assert_eq (sl_json_stats (sl_str ("7"), &st), 0);
    cr_expect_eq (st.depth, 0);
    cr_assert_eq (sl_json_stats (sl_str ("{\"a\":[1,{\"b\":[]}],\"c\":{}}"), &st), 0);
    cr_expect_eq (st.depth, 4);
    cr_assert_eq (sl_json_stats (sl_str ("[[],[[[]]]]"), &st), 0);
    cr_expect_eq (st.depth, 4);
}
