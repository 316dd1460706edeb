/*  Unit tests: common/http/sl_sse (WHATWG event stream rules, one case
    each, plus splits and limits). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/http/sl_sse.h"

//  Events collected as "type|data|id\n" lines.
static int
s_collect (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    sl_buf_t *out = arg;
    sl_buf_append_str (out, type);
    sl_buf_putc (out, '|');
    sl_buf_append_str (out, data);
    sl_buf_putc (out, '|');
    sl_buf_append_str (out, id);
    sl_buf_putc (out, '\n');
    return 0;
}

//  Parse text in one read (step 0) or in reads of step bytes; then finish.
static char *
s_parse (const char *text, size_t len, size_t step, bool finish)
{
    static sl_buf_t out;
    sl_buf_reset (&out);
    sl_sse_t *sse = sl_sse_new (0);
    if (step == 0)
        step = len ? len : 1;
    for (size_t i = 0; i < len; i += step)
        cr_assert_eq (sl_sse_feed (sse, text + i, len - i < step ? len - i : step, s_collect, &out), 0);
    if (finish)
        cr_assert_eq (sl_sse_finish (sse, s_collect, &out), 0);
    sl_sse_destroy (&sse);
    return (char *) sl_buf_cstr (&out);
}

static char *
s_strict (const char *text)
{
    return s_parse (text, strlen (text), 0, false);
}

Test (sl_sse, line_ends_lf_cr_crlf)
{
    cr_expect_str_eq (s_strict ("data: a\n\n"), "message|a|\n");
    cr_expect_str_eq (s_strict ("data: a\r\r"), "message|a|\n");
    cr_expect_str_eq (s_strict ("data: a\r\n\r\n"), "message|a|\n");
    cr_expect_str_eq (s_strict ("data: a\r\ndata: b\rdata: c\n\n"), "message|a\nb\nc|\n");
}

Test (sl_sse, cr_then_lf_across_reads_is_one_line_end)
{
    const char *text = "data: a\r\n\r\ndata: b\r\n\r\n";
    //  Split right after every CR: the LF starting the next read must not
    //  count as an (empty) line of its own.
    sl_buf_t out = { 0 };
    sl_sse_t *sse = sl_sse_new (0);
    const char *p = text;
    while (*p) {
        const char *cr = strchr (p, '\r');
        size_t n = cr ? (size_t) (cr - p) + 1 : strlen (p);
        sl_sse_feed (sse, p, n, s_collect, &out);
        p += n;
    }
    cr_expect_str_eq (sl_buf_cstr (&out), "message|a|\nmessage|b|\n");
    //  And a lone CR at the end of a read followed by data: two line ends.
    sl_buf_reset (&out);
    sl_sse_reset (sse);
    sl_sse_feed (sse, "data: x\r", 8, s_collect, &out);
    sl_sse_feed (sse, "\rdata: y\n\n", 10, s_collect, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "message|x|\nmessage|y|\n");
    sl_sse_destroy (&sse);
    sl_buf_free (&out);
}

Test (sl_sse, one_leading_bom_is_stripped)
{
    cr_expect_str_eq (s_strict ("\xEF\xBB\xBF" "data: a\n\n"), "message|a|\n");
    //  A second BOM is part of the field name: an unknown field.
    cr_expect_str_eq (s_strict ("\xEF\xBB\xBF\xEF\xBB\xBF" "data: a\n\n"), "");
    //  Split inside the BOM.
    const char *t = "\xEF\xBB\xBF" "data: b\n\n";
    cr_expect_str_eq (s_parse (t, strlen (t), 1, false), "message|b|\n");
}

Test (sl_sse, comments_are_ignored)
{
    cr_expect_str_eq (s_strict (": keep-alive\ndata: a\n: more\n\n"), "message|a|\n");
    cr_expect_str_eq (s_strict (":\n\n"), "");
}

Test (sl_sse, field_split_at_first_colon_one_space_removed)
{
    cr_expect_str_eq (s_strict ("data:a:b\n\n"), "message|a:b|\n");
    cr_expect_str_eq (s_strict ("data:  two spaces\n\n"), "message| two spaces|\n");
    cr_expect_str_eq (s_strict ("data:\n\n"), "message||\n");
}

Test (sl_sse, line_without_colon_is_field_with_empty_value)
{
    cr_expect_str_eq (s_strict ("data\n\n"), "message||\n");
    cr_expect_str_eq (s_strict ("data\ndata\n\n"), "message|\n|\n");
    cr_expect_str_eq (s_strict ("event\ndata: x\n\n"), "message|x|\n", "empty event name");
}

Test (sl_sse, data_lines_joined_by_lf)
{
    cr_expect_str_eq (s_strict ("data: 1\ndata: 2\ndata: 3\n\n"), "message|1\n2\n3|\n");
}

Test (sl_sse, empty_data_buffer_not_dispatched_and_resets_type)
{
    cr_expect_str_eq (s_strict ("event: ping\n\ndata: a\n\n"), "message|a|\n");
    cr_expect_str_eq (s_strict ("\n\n\n"), "");
}

Test (sl_sse, event_type)
{
    cr_expect_str_eq (s_strict ("event: add\ndata: 1\n\ndata: 2\n\n"), "add|1|\nmessage|2|\n");
}

Test (sl_sse, id_rules)
{
    cr_expect_str_eq (s_strict ("id: 7\ndata: a\n\ndata: b\n\n"), "message|a|7\nmessage|b|7\n",
                      "last event id persists");
    const char with_nul [] = "id: 8\ndata: a\n\nid: x\0y\ndata: b\n\n";
    cr_expect_str_eq (s_parse (with_nul, sizeof with_nul - 1, 0, false),
                      "message|a|8\nmessage|b|8\n", "id with NUL ignored");
    cr_expect_str_eq (s_strict ("id: 9\ndata: a\n\nid\ndata: b\n\n"), "message|a|9\nmessage|b|\n",
                      "empty id resets");
}

Test (sl_sse, retry_digits_only)
{
    sl_buf_t out = { 0 };
    sl_sse_t *sse = sl_sse_new (0);
    sl_sse_feed (sse, "retry: 1500\n\n", 13, s_collect, &out);
    cr_expect_eq (sl_sse_retry (sse), 1500);
    sl_sse_feed (sse, "retry: 15x\n\nretry: -1\n\nretry:\n\n", 30, s_collect, &out);
    cr_expect_eq (sl_sse_retry (sse), 1500, "non-digit values ignored");
    sl_sse_destroy (&sse);
    sl_buf_free (&out);
}

Test (sl_sse, unknown_fields_ignored)
{
    cr_expect_str_eq (s_strict ("foo: bar\ndata: a\nDATA: b\n\n"), "message|a|\n");
}

Test (sl_sse, strict_without_final_blank_line_pends)
{
    cr_expect_str_eq (s_strict ("data: a\n"), "");
    cr_expect_str_eq (s_strict ("data: a"), "");
}

Test (sl_sse, finish_leniency_dispatches_pending_event)
{
    cr_expect_str_eq (s_parse ("data: a\n", 8, 0, true), "message|a|\n");
    cr_expect_str_eq (s_parse ("event: e\ndata: {\"x\":1}", 22, 0, true), "e|{\"x\":1}|\n",
                      "unterminated last line");
    cr_expect_str_eq (s_parse ("data: a\r\n", 9, 0, true), "message|a|\n");
    cr_expect_str_eq (s_parse ("", 0, 0, true), "");
}

Test (sl_sse, finish_turns_a_bare_json_trailer_into_an_error_event)
{
    const char *t = "data: {\"a\":1}\n\n{\n  \"error\": {\n    \"code\": 499\n  }\n}\n";
    cr_expect_str_eq (s_parse (t, strlen (t), 0, true),
                      "message|{\"a\":1}|\nerror|{\n  \"error\": {\n    \"code\": 499\n  }\n}|\n");
    //  Unknown fields that are not JSON stay ignored.
    cr_expect_str_eq (s_parse ("data: a\n\nfoo: bar\n", 18, 0, true), "message|a|\n");
}

Test (sl_sse, same_events_for_every_split)
{
    const char *t = "\xEF\xBB\xBF: hi\r\nevent: a\r\ndata: 1\r\ndata: 2\r\n\r\nid: 5\ndata: {\"k\": \"v\"}\n\n"
                    "data:x\r\rdata: last";
    char whole [512];
    snprintf (whole, sizeof whole, "%s", s_parse (t, strlen (t), 0, true));
    for (size_t step = 1; step < strlen (t); step++)
        cr_expect_str_eq (s_parse (t, strlen (t), step, true), whole, "step %zu", step);
}

Test (sl_sse, limits_end_the_stream)
{
    sl_buf_t out = { 0 };
    sl_sse_t *sse = sl_sse_new (16);
    cr_expect_eq (sl_sse_feed (sse, "data: 0123456789abcdef", 22, s_collect, &out), -1);
    cr_expect_str_eq (sl_sse_error (sse), "line over the size limit");
    sl_sse_reset (sse);
    cr_expect_eq (sl_sse_feed (sse, "data: 12345\ndata: 12345\ndata: 12345\n", 36, s_collect, &out), -1);
    cr_expect_str_eq (sl_sse_error (sse), "event data over the size limit");
    sl_sse_destroy (&sse);
    sl_buf_free (&out);
}

static int
s_stop (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    (void) arg;
    (void) type;
    (void) data;
    (void) id;
    return 7;
}

Test (sl_sse, callback_can_stop_parsing)
{
    sl_sse_t *sse = sl_sse_new (0);
    cr_expect_eq (sl_sse_feed (sse, "data: a\n\ndata: b\n\n", 18, s_stop, NULL), 7);
    sl_sse_destroy (&sse);
}

Test (sl_sse, only_the_last_lf_of_the_data_buffer_is_removed)
{
    cr_expect_str_eq (s_strict ("data: a\ndata:\n\n"), "message|a\n|\n");
    cr_expect_str_eq (s_strict ("data:\ndata:\n\n"), "message|\n|\n");
}

Test (sl_sse, event_type_applies_to_one_event)
{
    cr_expect_str_eq (s_strict ("event: a\nevent: b\ndata: 1\n\ndata: 2\n\n"), "b|1|\nmessage|2|\n",
                      "the last event line wins, and only for its event");
}

Test (sl_sse, field_names_are_case_sensitive_and_exact)
{
    cr_expect_str_eq (s_strict ("Data: x\ndata : y\n data: z\ndata: w\n\n"), "message|w|\n");
}

Test (sl_sse, id_value_keeps_colons_and_retry_takes_long_values)
{
    cr_expect_str_eq (s_strict ("id: a:b\ndata: x\n\n"), "message|x|a:b\n");
    sl_buf_t out = { 0 };
    sl_sse_t *sse = sl_sse_new (0);
    sl_sse_feed (sse, "retry: 3600000000\n\n", 19, s_collect, &out);
    cr_expect_eq (sl_sse_retry (sse), 3600000000L);
    sl_sse_destroy (&sse);
    sl_buf_free (&out);
}

Test (sl_sse, trailing_json_survives_blank_lines_but_not_a_later_event)
{
    const char *t = "data: a\n\n{\"error\":{\"code\":1}}\n\n\n";
    cr_expect_str_eq (s_parse (t, strlen (t), 0, true), "message|a|\nerror|{\"error\":{\"code\":1}}|\n");
    //  Junk followed by a real event was junk, not a trailing body.
    t = "{\"x\":1}\ndata: b\n\n";
    cr_expect_str_eq (s_parse (t, strlen (t), 0, true), "message|b|\n");
    //  Junk that is not one JSON value is not reported.
    t = "data: a\n\n{\"x\":1}\n{\"y\":2}\n";
    cr_expect_str_eq (s_parse (t, strlen (t), 0, true), "message|a|\n");
}

Test (sl_sse, many_empty_data_lines_are_bounded_too)
{
    sl_buf_t out = { 0 };
    sl_sse_t *sse = sl_sse_new (64);
    int rc = 0;
    for (int i = 0; i < 100 && rc == 0; i++)
        rc = sl_sse_feed (sse, "data\n", 5, s_collect, &out);
    cr_expect_eq (rc, -1, "an event of 100 empty lines is over 64 bytes");
    cr_expect_str_eq (sl_sse_error (sse), "event data over the size limit");
    sl_sse_destroy (&sse);
    sl_buf_free (&out);
}

Test (sl_sse, unknown_lines_do_not_accumulate_without_bound)
{
    sl_buf_t out = { 0 };
    sl_sse_t *sse = sl_sse_new (64);
    //  Far more unknown-field bytes than the limit: ignored, never an error.
    for (int i = 0; i < 1000; i++)
        cr_assert_eq (sl_sse_feed (sse, "{\"padding\": 1234567890}\n", 24, s_collect, &out), 0);
    cr_expect_eq (sl_sse_finish (sse, s_collect, &out), 0);
    cr_expect_str_eq (sl_buf_cstr (&out), "", "an oversized trailer is not reported");
    sl_sse_destroy (&sse);
    sl_buf_free (&out);
}

Test (sl_sse, a_line_split_over_many_reads_is_bounded)
{
    sl_buf_t out = { 0 };
    sl_sse_t *sse = sl_sse_new (32);
    int rc = 0;
    for (int i = 0; i < 10 && rc == 0; i++)
        rc = sl_sse_feed (sse, "data: 0123456", 13, s_collect, &out);
    cr_expect_eq (rc, -1);
    cr_expect_str_eq (sl_sse_error (sse), "line over the size limit");
    sl_sse_destroy (&sse);
    sl_buf_free (&out);
}
