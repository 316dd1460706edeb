/*  Unit tests: common/base/sl_utf8 (checking and repairing UTF-8, in text and
    in JSON text), and the JSON writer that relies on it. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/base/sl_utf8.h"

#define R SL_UTF8_REPLACEMENT

static bool
s_valid (const char *s)
{
    return sl_utf8_valid (s, strlen (s));
}

Test (sl_utf8, accepts_well_formed_text)
{
    const char *good [] = {
        "", "plain ascii, long enough to take the eight-byte path",
        "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80 emoji", "\xef\xbf\xbd",
        "\xed\x9f\xbf", "\xee\x80\x80", "\xf4\x8f\xbf\xbf", "\xe0\xa0\x80", "\xf0\x90\x80\x80", NULL
    };
    for (int i = 0; good [i]; i++)
        cr_expect (s_valid (good [i]), "should be valid: %s", good [i]);
}

Test (sl_utf8, rejects_every_kind_of_ill_formed_byte)
{
    const char *bad [] = {
        "\x80", "abc\xbf", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xf0\x80\x80\xaf",  //  overlong
        "\xed\xa0\x80", "\xed\xbf\xbf",                                                  //  surrogates
        "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff", "\xfe",                          //  too large
        "\xc3", "\xe2\x82", "\xf0\x9f\x98", "a long ascii prefix then a cut \xe2\x82",   //  cut short
        NULL
    };
    for (int i = 0; bad [i]; i++)
        cr_expect (!s_valid (bad [i]), "should be invalid: case %d", i);
}

static const char *
s_repair (sl_buf_t *out, const char *in)
{
    sl_buf_reset (out);
    sl_utf8_repair (out, in, strlen (in));
    return sl_buf_cstr (out);
}

Test (sl_utf8, repairs_maximal_subparts_with_one_replacement_each)
{
    sl_buf_t out = { 0 };
    cr_expect_str_eq (s_repair (&out, "ok caf\xc3\xa9"), "ok caf\xc3\xa9");
    cr_expect_str_eq (s_repair (&out, "a\xffz"), "a" R "z");
    //  A cut sequence is one subpart; a lead that cannot continue is one.
    cr_expect_str_eq (s_repair (&out, "\xe2\x82z"), R "z");
    cr_expect_str_eq (s_repair (&out, "\xf0\x9f\x98"), R);
    cr_expect_str_eq (s_repair (&out, "\xe0\x80\xaf"), R R R);
    cr_expect_str_eq (s_repair (&out, "\xed\xa0\x80x"), R R R "x");
    cr_expect_str_eq (s_repair (&out, "\xc3\xc3\xa9"), R "\xc3\xa9");
    cr_expect_str_eq (s_repair (&out, "0123456789abcdef\x80"), "0123456789abcdef" R);
    cr_expect (sl_utf8_valid (out.data, out.len));
    sl_buf_free (&out);
}

static const char *
s_repair_json (sl_buf_t *out, const char *in)
{
    sl_buf_reset (out);
    sl_utf8_repair_json (out, in, strlen (in));
    cr_expect (sl_utf8_json_clean (out->data, out->len), "repaired text is clean: %s", sl_buf_cstr (out));
    return sl_buf_cstr (out);
}

Test (sl_utf8, json_lone_surrogate_escapes)
{
    sl_buf_t out = { 0 };
    const char *clean [] = {
        "{\"a\":\"\\ud83d\\ude00\"}", "\"\\u00e9\\n\\\\ud800\"", "{\"k\":[1,2,\"x\"]}", "[\"\\uD83D\\uDE00\"]", NULL
    };
    for (int i = 0; clean [i]; i++) {
        cr_expect (sl_utf8_json_clean (clean [i], strlen (clean [i])), "clean: %s", clean [i]);
        cr_expect_str_eq (s_repair_json (&out, clean [i]), clean [i]);
    }
    cr_expect (!sl_utf8_json_clean ("\"\\ud800\"", 8));
    cr_expect_str_eq (s_repair_json (&out, "\"a\\ud800b\""), "\"a\\ufffdb\"");
    cr_expect_str_eq (s_repair_json (&out, "\"\\udc00\\ud83d\""), "\"\\ufffd\\ufffd\"");
    //  A high half followed by another high half: the second may pair up.
    cr_expect_str_eq (s_repair_json (&out, "\"\\uD800\\uD83D\\uDE00\""), "\"\\ufffd\\uD83D\\uDE00\"");
    //  An escaped backslash is not the start of an escape.
    cr_expect_str_eq (s_repair_json (&out, "\"\\\\ud800\""), "\"\\\\ud800\"");
    //  Bytes and escapes together; a backslash before a raw byte.
    cr_expect_str_eq (s_repair_json (&out, "{\"id\":\"x\xff\\ud800\\\xfe\"}"),
                      "{\"id\":\"x" R "\\ufffd\\" R "\"}");
    //  A \u that is not an escape does not hide the bytes after it.
    cr_expect_str_eq (s_repair_json (&out, "\\u\\\xf5\xa7xyz"), "\\u\\" R R "xyz");
    //  Cut escapes at the end are copied: they are not surrogates.
    cr_expect_str_eq (s_repair_json (&out, "\"\\ud8"), "\"\\ud8");
    sl_buf_free (&out);
}

Test (sl_utf8, json_writer_never_writes_ill_formed_text)
{
    sl_buf_t out = { 0 };
    sl_json_put_str (&out, "id\xff\xc3\xa9\xed\xa0\x80\"\n", 10);
    cr_expect_str_eq (sl_buf_cstr (&out), "\"id" R "\xc3\xa9" R R R "\\\"\\n\"");
    cr_expect (sl_utf8_json_clean (out.data, out.len));
    //  The worst case fits what the writer reserves.
    char all [256];
    for (int i = 0; i < 256; i++)
        all [i] = (char) i;
    sl_buf_reset (&out);
    sl_json_put_str (&out, all, sizeof all);
    cr_expect (sl_utf8_valid (out.data, out.len));
    cr_expect (sl_json_valid (sl_buf_str (&out)));
    sl_buf_free (&out);
}

Test (sl_utf8, raw_json_values_are_repaired_when_embedded)
{
    sl_buf_t out = { 0 };
    sl_json_put_raw (&out, sl_str ("{\"cmd\":\"ls \\ud800 \xff\"}"));
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"cmd\":\"ls \\ufffd " R "\"}");
    sl_buf_reset (&out);
    sl_json_put_raw (&out, sl_str ("{\"ok\":\"\xe2\x82\xac\"}"));
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"ok\":\"\xe2\x82\xac\"}");
    sl_buf_reset (&out);
    sl_json_put_raw (&out, SL_STR_NULL);
    cr_expect_eq (out.len, 0);
    sl_buf_free (&out);
}
