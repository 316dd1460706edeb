/*  Unit tests: common/stages/sl_usage (reported usage merged, or estimated from bytes). */
#include <criterion/criterion.h>

#include "common/stages/sl_usage.h"

static sl_msg_t
s_block (int event, int kind, const char *text)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_BLOCK);
    m.kind = (uint8_t) event;
    m.block = (uint8_t) kind;
    m.text = text ? sl_str (text) : SL_STR_NULL;
    return m;
}

static void
s_init (sl_usage_tally_t *t, uint64_t request_bytes)
{
    sl_msg_t start;
    sl_msg_init (&start, SL_MSG_START);
    start.request_bytes = request_bytes;
    sl_usage_tally_init (t, &start);
}

Test (sl_usage, tokens_of_bytes_round_up)
{
    cr_expect_eq (SL_USAGE_BYTES_PER_TOKEN, 4);
    cr_expect_eq (sl_usage_tokens_of (0), 0);
    cr_expect_eq (sl_usage_tokens_of (1), 1);
    cr_expect_eq (sl_usage_tokens_of (4), 1);
    cr_expect_eq (sl_usage_tokens_of (5), 2);
    cr_expect_eq (sl_usage_tokens_of (4000), 1000);
}

Test (sl_usage, reports_merge_later_fields_over_earlier)
{
    sl_usage_tally_t t;
    s_init (&t, 1000);
    sl_msg_t message = s_block (SL_B_MESSAGE, 0, NULL);
    message.has_usage = true;
    message.usage = (sl_usage_t) { 40, 1, -1, 8, 3, -1 };
    sl_usage_tally_feed (&t, &message);
    sl_msg_t end = s_block (SL_B_END, SL_BK_TEXT, "some text the estimate must not use");
    sl_usage_tally_feed (&t, &end);
    sl_msg_t fin = s_block (SL_B_FINISH, 0, NULL);
    fin.has_usage = true;
    fin.usage = (sl_usage_t) { -1, 25, 65, -1, -1, 4 };
    sl_usage_tally_feed (&t, &fin);
    sl_usage_t u;
    cr_expect_not (sl_usage_tally_result (&t, &u), "reported, not estimated");
    cr_expect_eq (u.input, 40);
    cr_expect_eq (u.output, 25);
    cr_expect_eq (u.total, 65);
    cr_expect_eq (u.cache_read, 8);
    cr_expect_eq (u.cache_write, 3);
    cr_expect_eq (u.reasoning, 4);
}

Test (sl_usage, none_reported_is_estimated_from_request_and_content_bytes)
{
    sl_usage_tally_t t;
    s_init (&t, 400);
    const char *kinds_counted [] = { "12345678", "1234", "{\"path\":\"/tmp\"}" };   //  8 + 4 + 15 bytes
    sl_msg_t text = s_block (SL_B_END, SL_BK_TEXT, kinds_counted [0]);
    sl_msg_t thinking = s_block (SL_B_END, SL_BK_THINKING, kinds_counted [1]);
    sl_msg_t call = s_block (SL_B_END, SL_BK_TOOL_CALL, kinds_counted [2]);
    //  Not counted: deltas (their block's end repeats them whole) and
    //  blocks that are not the model's words.
    sl_msg_t delta = s_block (SL_B_DELTA, SL_BK_TEXT, "12345678");
    sl_msg_t cite = s_block (SL_B_END, SL_BK_CITATION, "https://example.org/a-long-citation");
    sl_msg_t fin = s_block (SL_B_FINISH, 0, NULL);
    fin.has_usage = true;
    fin.usage = (sl_usage_t) { -1, -1, -1, -1, -1, -1 };
    sl_msg_t *all [] = { &delta, &text, &thinking, &call, &cite, &fin };
    for (size_t i = 0; i < sizeof all / sizeof all [0]; i++)
        sl_usage_tally_feed (&t, all [i]);
    sl_usage_t u;
    cr_expect (sl_usage_tally_result (&t, &u), "estimated");
    cr_expect_eq (u.input, 100);
    cr_expect_eq (u.output, 7, "27 bytes, rounded up");
    cr_expect_eq (u.total, 107);
    cr_expect_eq (u.cache_read, -1);
    cr_expect_eq (u.reasoning, -1);
}

Test (sl_usage, a_stream_refused_before_any_content_spent_no_input)
{
    sl_usage_tally_t t;
    s_init (&t, 4000);
    sl_msg_t err;
    sl_msg_init (&err, SL_MSG_ERROR);
    err.status = 429;
    sl_usage_tally_feed (&t, &err);
    sl_usage_t u;
    cr_expect (sl_usage_tally_result (&t, &u));
    cr_expect_eq (u.input, 0);
    cr_expect_eq (u.output, 0);
    //  An error after content: the request was read and answered in part.
    s_init (&t, 4000);
    sl_msg_t text = s_block (SL_B_END, SL_BK_TEXT, "abcd");
    sl_usage_tally_feed (&t, &text);
    sl_usage_tally_feed (&t, &err);
    cr_expect (sl_usage_tally_result (&t, &u));
    cr_expect_eq (u.input, 1000);
    cr_expect_eq (u.output, 1);
}
