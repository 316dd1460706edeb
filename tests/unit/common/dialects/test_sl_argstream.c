/*  Unit tests: common/dialects/sl_argstream (JSON text from partial values
    keyed by JSON path). Every document built is checked to be valid JSON. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"
#include "common/dialects/sl_argstream.h"

typedef struct {
    const char *path;
    const char *value;                  //  raw JSON token
    bool more;
} s_put_t;

//  Feed the values and end; returns the whole document (static buffer).
static const char *
s_build (const s_put_t *puts, size_t count)
{
    static sl_buf_t out;
    sl_buf_reset (&out);
    sl_argstream_t *a = sl_argstream_new ();
    sl_argstream_begin (a);
    for (size_t i = 0; i < count; i++)
        cr_assert_eq (sl_argstream_put (a, sl_str (puts [i].path), sl_str (puts [i].value),
                                        puts [i].more, &out), 0, "put %zu (%s)", i, puts [i].path);
    sl_argstream_end (a, &out);
    sl_argstream_destroy (&a);
    cr_expect (sl_json_valid (sl_buf_str (&out)), "valid JSON: %s", sl_buf_cstr (&out));
    return sl_buf_cstr (&out);
}

#define BUILD(...) s_build ((const s_put_t []) { __VA_ARGS__ }, \
                            sizeof ((const s_put_t []) { __VA_ARGS__ }) / sizeof (s_put_t))

Test (sl_argstream, nothing_is_an_empty_object)
{
    sl_buf_t out = { 0 };
    sl_argstream_t *a = sl_argstream_new ();
    sl_argstream_begin (a);
    cr_expect_not (sl_argstream_open (a));
    sl_argstream_end (a, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "{}");
    sl_argstream_destroy (&a);
    sl_argstream_destroy (&a);
    sl_buf_free (&out);
}

Test (sl_argstream, string_in_pieces)
{
    cr_expect_str_eq (BUILD ({ "$.location", "\"Bos\"", true }, { "$.location", "\"ton\"", true },
                             { "$.location", "\"\"", false }),
                      "{\"location\":\"Boston\"}");
}

Test (sl_argstream, escapes_pass_through_unchanged)
{
    cr_expect_str_eq (BUILD ({ "$.cmd", "\"echo \\\"a\\u00e9\\n\"", false }),
                      "{\"cmd\":\"echo \\\"a\\u00e9\\n\"}");
}

Test (sl_argstream, members_numbers_booleans_null)
{
    cr_expect_str_eq (BUILD ({ "$.a", "1.5e3", false }, { "$.b", "true", false },
                             { "$.c", "null", false }, { "$.d", "\"x\"", false }),
                      "{\"a\":1.5e3,\"b\":true,\"c\":null,\"d\":\"x\"}");
}

Test (sl_argstream, nested_objects_open_and_close_as_paths_move)
{
    cr_expect_str_eq (BUILD ({ "$.user.name", "\"Ann\"", false }, { "$.user.age", "7", false },
                             { "$.tags[0]", "\"a\"", false }, { "$.tags[1]", "\"b\"", false },
                             { "$.deep.x.y", "1", false }, { "$.z", "0", false }),
                      "{\"user\":{\"name\":\"Ann\",\"age\":7},\"tags\":[\"a\",\"b\"],"
                      "\"deep\":{\"x\":{\"y\":1}},\"z\":0}");
}

Test (sl_argstream, arrays_of_objects_and_gaps)
{
    cr_expect_str_eq (BUILD ({ "$.items[0].id", "1", false }, { "$.items[0].name", "\"p\"", true },
                             { "$.items[0].name", "\"q\"", false }, { "$.items[1].id", "2", false },
                             { "$.items[3]", "4", false }),
                      "{\"items\":[{\"id\":1,\"name\":\"pq\"},{\"id\":2},null,4]}");
    cr_expect_str_eq (BUILD ({ "$.m[0][1]", "5", false }), "{\"m\":[[null,5]]}");
}

Test (sl_argstream, bracket_names_and_quoting)
{
    cr_expect_str_eq (BUILD ({ "$['a b']", "1", false }, { "$[\"c.d\"]", "2", false },
                             { "$.q\"x", "3", false }),
                      "{\"a b\":1,\"c.d\":2,\"q\\\"x\":3}");
}

Test (sl_argstream, an_open_string_closes_when_the_path_moves)
{
    cr_expect_str_eq (BUILD ({ "$.a", "\"x\"", true }, { "$.b", "\"y\"", true }),
                      "{\"a\":\"x\",\"b\":\"y\"}");
}

Test (sl_argstream, bad_paths_and_backward_moves_are_refused_without_trace)
{
    sl_buf_t out = { 0 };
    sl_argstream_t *a = sl_argstream_new ();
    sl_argstream_begin (a);
    cr_expect_eq (sl_argstream_put (a, sl_str ("location"), sl_str ("1"), false, &out), -2, "no $");
    cr_expect_eq (sl_argstream_put (a, sl_str ("$"), sl_str ("1"), false, &out), -2, "the root");
    cr_expect_eq (sl_argstream_put (a, sl_str ("$[0]"), sl_str ("1"), false, &out), -2, "root array");
    cr_expect_eq (sl_argstream_put (a, sl_str ("$.a[x]"), sl_str ("1"), false, &out), -2);
    cr_expect_eq (sl_argstream_put (a, sl_str ("$.a"), sl_str ("{}"), false, &out), -2, "not a scalar");
    cr_expect_eq (sl_argstream_put (a, sl_str ("$.a"), sl_str ("\"open"), false, &out), -2);
    cr_expect_eq (out.len, 0);
    cr_expect_eq (sl_argstream_put (a, sl_str ("$.l[1]"), sl_str ("1"), false, &out), 0);
    size_t len = out.len;
    cr_expect_eq (sl_argstream_put (a, sl_str ("$.l[0]"), sl_str ("2"), false, &out), -2, "backwards");
    cr_expect_eq (sl_argstream_put (a, sl_str ("$.l.k"), sl_str ("2"), false, &out), -2, "name in array");
    cr_expect_eq (out.len, len, "nothing written by refused values");
    sl_argstream_end (a, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"l\":[null,1]}");
    //  As deep as allowed (the leaf inside MAX_DEPTH containers), then deeper.
    sl_buf_t path = { 0 };
    sl_buf_putc (&path, '$');
    for (int i = 0; i <= SL_ARGSTREAM_MAX_DEPTH; i++)
        sl_buf_puts (&path, ".a");
    sl_buf_reset (&out);
    sl_argstream_begin (a);
    cr_expect_eq (sl_argstream_put (a, sl_buf_str (&path), sl_str ("1"), false, &out), 0);
    sl_argstream_end (a, &out);
    cr_expect (sl_json_valid (sl_buf_str (&out)));
    sl_buf_puts (&path, ".a");
    sl_buf_reset (&out);
    sl_argstream_begin (a);
    cr_expect_eq (sl_argstream_put (a, sl_buf_str (&path), sl_str ("1"), false, &out), -2);
    sl_buf_free (&path);
    sl_argstream_destroy (&a);
    sl_buf_free (&out);
}

Test (sl_argstream, an_open_string_takes_only_string_pieces)
{
    sl_buf_t out = { 0 };
    sl_argstream_t *a = sl_argstream_new ();
    sl_argstream_begin (a);
    cr_expect_eq (sl_argstream_put (a, sl_str ("$.a"), sl_str ("\"x\""), true, &out), 0);
    cr_expect_eq (sl_argstream_put (a, sl_str ("$.a"), sl_str ("1"), false, &out), -2);
    cr_expect_eq (sl_argstream_put (a, sl_str ("$.a"), sl_str ("\"y\""), false, &out), 0);
    sl_argstream_end (a, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"a\":\"xy\"}");
    sl_argstream_destroy (&a);
    sl_buf_free (&out);
}

Test (sl_argstream, begin_starts_a_new_document)
{
    sl_buf_t out = { 0 };
    sl_argstream_t *a = sl_argstream_new ();
    sl_argstream_begin (a);
    sl_argstream_put (a, sl_str ("$.x.y"), sl_str ("\"s"), false, &out);
    sl_buf_reset (&out);
    sl_argstream_begin (a);
    sl_argstream_put (a, sl_str ("$.z"), sl_str ("1"), false, &out);
    sl_argstream_end (a, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "{\"z\":1}");
    sl_argstream_destroy (&a);
    sl_buf_free (&out);
}
