/*  Unit tests: common/stages/sl_jsonv (streaming JSON validation).

    The reference is sl_json_valid on the whole text: for every prefix of a
    text, fed in any split, COMPLETE must mean "valid as it stands", and
    INVALID must never be reported for a prefix of a valid text.
*/
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/stages/sl_jsonv.h"

#define RANDOM_TEXTS 400                //  generated texts per property
#define MUTATIONS 4                     //  mutated copies of each

static const char *s_valid [] = {
    "{}", "[]", "{\"a\":1}", " { \"a\" : [ 1 , 2.5e-3 , -0 , true , false , null ] } ",
    "\"\\u00e9\\n\\\"x\\\"\"", "0", "-12.5E+7", "true", "null", "[[[]],{}]",
    "{\"k\":{\"k\":{\"k\":\"v\"}}}", "\"{\\\"a\\\":1}\"", "  7  ", "[\"\\/\\b\\f\\r\\t\"]",
};

static const char *s_invalid [] = {
    "{", "}", "{\"a\"}", "{\"a\":}", "[1,]", "[1 2]", "01", "1.", "-", "1e", "tru", "nul",
    "\"abc", "\"\\x\"", "\"\\u12g4\"", "{} {}", "{\"a\":1,}", "[}", "{]", "\"a\nb\"", "+1",
    ".5", "{'a':1}", "[1]x", "{\"a\" 1}", "NaN",
};

//  Status of text fed in pieces cut at the given points.
static sl_jsonv_status_t
s_feed_split (sl_jsonv_t *v, const char *text, size_t len, const size_t *cuts, size_t ncuts)
{
    sl_jsonv_reset (v);
    size_t at = 0;
    for (size_t i = 0; i < ncuts; i++) {
        sl_jsonv_feed (v, text + at, cuts [i] - at);
        at = cuts [i];
    }
    return sl_jsonv_feed (v, text + at, len - at);
}

//  Check every prefix of text against the reference, byte by byte.
static void
s_check_prefixes (sl_jsonv_t *v, const char *text, size_t len)
{
    bool whole_valid = sl_json_valid (sl_str_n (text, len));
    sl_jsonv_reset (v);
    bool seen_invalid = false;
    for (size_t i = 0; i < len; i++) {
        sl_jsonv_status_t st = sl_jsonv_feed (v, text + i, 1);
        bool valid = sl_json_valid (sl_str_n (text, i + 1));
        cr_assert_eq (st == SL_JSONV_COMPLETE, valid, "prefix %zu of '%.*s': status %d", i + 1,
                      (int) len, text, st);
        if (seen_invalid)
            cr_assert_eq (st, SL_JSONV_INVALID, "invalid is sticky");
        seen_invalid = st == SL_JSONV_INVALID;
        if (whole_valid)
            cr_assert_neq (st, SL_JSONV_INVALID, "a prefix of a valid text is never invalid: '%.*s'",
                           (int) len, text);
    }
    cr_assert_eq (sl_jsonv_size (v), len);
}

Test (sl_jsonv, known_texts_match_the_reference_at_every_prefix)
{
    sl_jsonv_t *v = sl_jsonv_new ();
    for (size_t i = 0; i < sizeof s_valid / sizeof s_valid [0]; i++) {
        s_check_prefixes (v, s_valid [i], strlen (s_valid [i]));
        cr_expect_eq (sl_jsonv_status (v), SL_JSONV_COMPLETE, "%s", s_valid [i]);
    }
    for (size_t i = 0; i < sizeof s_invalid / sizeof s_invalid [0]; i++) {
        s_check_prefixes (v, s_invalid [i], strlen (s_invalid [i]));
        cr_expect_neq (sl_jsonv_status (v), SL_JSONV_COMPLETE, "%s", s_invalid [i]);
    }
    sl_jsonv_destroy (&v);
    sl_jsonv_destroy (&v);
    cr_expect_null (v, "destroy twice is safe");
}

Test (sl_jsonv, empty_and_whitespace_are_empty)
{
    sl_jsonv_t *v = sl_jsonv_new ();
    cr_expect_eq (sl_jsonv_status (v), SL_JSONV_EMPTY);
    cr_expect_eq (sl_jsonv_feed (v, " \n\t\r ", 5), SL_JSONV_EMPTY);
    cr_expect_eq (sl_jsonv_type (v), SL_JSON_BAD);
    cr_expect_eq (sl_jsonv_feed (v, "{", 1), SL_JSONV_PARTIAL);
    cr_expect_eq (sl_jsonv_type (v), SL_JSON_OBJECT);
    sl_jsonv_destroy (&v);
}

Test (sl_jsonv, top_level_type_is_reported)
{
    sl_jsonv_t *v = sl_jsonv_new ();
    const struct { const char *text; sl_json_type_t type; } cases [] = {
        { "{}", SL_JSON_OBJECT }, { "[1]", SL_JSON_ARRAY }, { "\"s\"", SL_JSON_STRING },
        { "-1", SL_JSON_NUMBER }, { "true", SL_JSON_TRUE }, { "false", SL_JSON_FALSE },
        { "null", SL_JSON_NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_jsonv_reset (v);
        cr_expect_eq (sl_jsonv_feed (v, cases [i].text, strlen (cases [i].text)), SL_JSONV_COMPLETE);
        cr_expect_eq (sl_jsonv_type (v), cases [i].type, "%s", cases [i].text);
    }
    sl_jsonv_destroy (&v);
}

Test (sl_jsonv, complete_object_followed_by_more_is_invalid)
{
    sl_jsonv_t *v = sl_jsonv_new ();
    cr_expect_eq (sl_jsonv_feed (v, "{\"a\":1}", 7), SL_JSONV_COMPLETE);
    cr_expect_eq (sl_jsonv_feed (v, "  ", 2), SL_JSONV_COMPLETE, "whitespace keeps it complete");
    cr_expect_eq (sl_jsonv_feed (v, "{", 1), SL_JSONV_INVALID);
    cr_expect_eq (sl_jsonv_feed (v, "}", 1), SL_JSONV_INVALID, "sticky");
    sl_jsonv_destroy (&v);
}

Test (sl_jsonv, a_number_is_complete_as_it_stands)
{
    sl_jsonv_t *v = sl_jsonv_new ();
    cr_expect_eq (sl_jsonv_feed (v, "12", 2), SL_JSONV_COMPLETE);
    cr_expect_eq (sl_jsonv_feed (v, "3", 1), SL_JSONV_COMPLETE);
    cr_expect_eq (sl_jsonv_feed (v, ".", 1), SL_JSONV_PARTIAL);
    cr_expect_eq (sl_jsonv_feed (v, "5e", 2), SL_JSONV_PARTIAL);
    cr_expect_eq (sl_jsonv_feed (v, "-", 1), SL_JSONV_PARTIAL);
    cr_expect_eq (sl_jsonv_feed (v, "2", 1), SL_JSONV_COMPLETE);
    cr_expect_eq (sl_jsonv_feed (v, " x", 2), SL_JSONV_INVALID);
    sl_jsonv_destroy (&v);
}

Test (sl_jsonv, nesting_is_bounded_like_the_scanner)
{
    sl_jsonv_t *v = sl_jsonv_new ();
    for (int depth = SL_JSON_MAX_DEPTH - 1; depth <= SL_JSON_MAX_DEPTH + 1; depth++) {
        char *text = malloc ((size_t) depth * 2 + 1);
        memset (text, '[', (size_t) depth);
        memset (text + depth, ']', (size_t) depth);
        sl_jsonv_reset (v);
        sl_jsonv_status_t st = sl_jsonv_feed (v, text, (size_t) depth * 2);
        bool valid = sl_json_valid (sl_str_n (text, (size_t) depth * 2));
        cr_expect_eq (st == SL_JSONV_COMPLETE, valid, "depth %d", depth);
        cr_expect_eq (st == SL_JSONV_INVALID, !valid, "depth %d", depth);
        free (text);
    }
    sl_jsonv_destroy (&v);
}

//  A small random JSON generator (fixed seed), for the properties below.
static void
s_gen_value (sl_buf_t *out, int depth, unsigned *seed)
{
    int pick = rand_r (seed) % (depth > 4 ? 5 : 8);
    static const char *atoms [] = { "true", "false", "null", "0", "-3.25e+2", "17", "\"\\u00e9t\\u00e9\"" };
    switch (pick) {
        case 0: case 1: case 2: case 3: case 4:
            if (pick < 4) {
                sl_buf_puts (out, atoms [rand_r (seed) % 7]);
                break;
            }
            sl_buf_puts (out, "\"s");
            for (int i = rand_r (seed) % 6; i > 0; i--)
                sl_buf_puts (out, (const char *[]) { "a", "\\\"", "\\\\", " ", "\\n", "\\/" } [rand_r (seed) % 6]);
            sl_buf_putc (out, '"');
            break;
        case 5: case 6: {
            sl_buf_putc (out, '{');
            for (int i = rand_r (seed) % 4, first = 1; i > 0; i--, first = 0) {
                if (!first)
                    sl_buf_puts (out, rand_r (seed) % 2 ? "," : " , ");
                sl_buf_printf (out, "\"k%d\"%s", i, rand_r (seed) % 2 ? ":" : " :\n");
                s_gen_value (out, depth + 1, seed);
            }
            sl_buf_putc (out, '}');
            break;
        }
        default: {
            sl_buf_putc (out, '[');
            for (int i = rand_r (seed) % 4, first = 1; i > 0; i--, first = 0) {
                if (!first)
                    sl_buf_putc (out, ',');
                s_gen_value (out, depth + 1, seed);
            }
            sl_buf_putc (out, ']');
            break;
        }
    }
}

Test (sl_jsonv, random_texts_in_random_splits_agree_with_the_reference)
{
    sl_jsonv_t *v = sl_jsonv_new ();
    unsigned seed = 20240607;
    sl_buf_t text = { 0 };
    for (int n = 0; n < RANDOM_TEXTS; n++) {
        sl_buf_reset (&text);
        s_gen_value (&text, 0, &seed);
        for (int m = 0; m <= MUTATIONS; m++) {
            if (m > 0 && text.len) {
                //  Mutate: change, drop or duplicate one byte.
                size_t at = (size_t) rand_r (&seed) % text.len;
                int how = rand_r (&seed) % 3;
                if (how == 0)
                    text.data [at] = "{}[]\",:0a \\-e."[rand_r (&seed) % 14];
                else
                if (how == 1) {
                    memmove (text.data + at, text.data + at + 1, text.len - at - 1);
                    text.len--;
                }
                else {
                    sl_buf_putc (&text, 0);
                    memmove (text.data + at + 1, text.data + at, text.len - at - 1);
                }
            }
            size_t cuts [8], ncuts = text.len ? (size_t) rand_r (&seed) % 8 : 0;
            for (size_t i = 0; i < ncuts; i++)
                cuts [i] = (size_t) rand_r (&seed) % (text.len + 1);
            //  Sort the cut points (insertion sort; at most 8).
            for (size_t i = 1; i < ncuts; i++)
                for (size_t j = i; j > 0 && cuts [j - 1] > cuts [j]; j--) {
                    size_t t = cuts [j];
                    cuts [j] = cuts [j - 1];
                    cuts [j - 1] = t;
                }
            sl_jsonv_status_t st = s_feed_split (v, text.data, text.len, cuts, ncuts);
            bool valid = sl_json_valid (sl_buf_str (&text));
            cr_assert_eq (st == SL_JSONV_COMPLETE, valid, "text %d/%d '%.*s'", n, m,
                          (int) text.len, text.data);
            if (m == 0)
                cr_assert (valid, "the generator makes valid JSON: '%.*s'", (int) text.len, text.data);
            if (m == 0 || n % 40 == 0)
                s_check_prefixes (v, text.data, text.len);
        }
    }
    sl_buf_free (&text);
    sl_jsonv_destroy (&v);
}
