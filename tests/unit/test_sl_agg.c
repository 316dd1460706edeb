/*  Unit tests: services/aggregator/sl_agg (the block state machine). */
#include <criterion/criterion.h>

#include "../../services/aggregator/sl_agg.h"
#include "recorder.h"

static sl_agg_t *agg;
static recorder_t rec;

static void
s_setup (void)
{
    agg = sl_agg_new ();
    memset (&rec, 0, sizeof rec);
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    start.model = sl_str ("m");
    sl_agg_feed (agg, &start, recorder_emit, &rec);
}

static void
s_teardown (void)
{
    sl_agg_destroy (&agg);
    recorder_clear (&rec);
}

static void
s_delta (int kind, int index, const char *id, const char *name, const char *text)
{
    sl_msg_t d = recorder_msg (SL_MSG_DELTA, kind);
    d.index = index;
    d.id = sl_str (id);
    d.name = sl_str (name);
    if (kind == SL_D_FINISH)
        d.finish_raw = sl_str (text);
    else
        d.text = sl_str (text);
    sl_agg_feed (agg, &d, recorder_emit, &rec);
}

static void
s_end (void)
{
    sl_msg_t e = recorder_msg (SL_MSG_END, 0);
    sl_agg_feed (agg, &e, recorder_emit, &rec);
}

//  The block_end messages, in order.
static sl_msg_t *
s_block_end (int n)
{
    for (size_t i = 0; i < rec.count; i++)
        if (rec.msgs [i]->type == SL_MSG_BLOCK && rec.msgs [i]->kind == SL_B_END && n-- == 0)
            return rec.msgs [i];
    return NULL;
}

static sl_msg_t *
s_find (int type, int kind)
{
    for (size_t i = 0; i < rec.count; i++)
        if (rec.msgs [i]->type == type && (kind < 0 || rec.msgs [i]->kind == kind))
            return rec.msgs [i];
    return NULL;
}

TestSuite (sl_agg, .init = s_setup, .fini = s_teardown);

Test (sl_agg, text_then_two_tool_calls)
{
    s_delta (SL_D_TEXT, -1, NULL, NULL, "Hel");
    s_delta (SL_D_TEXT, -1, NULL, NULL, "lo");
    s_delta (SL_D_TOOL_CALL, 0, "c1", "f", "");
    s_delta (SL_D_TOOL_CALL, 0, NULL, NULL, "{\"a\":");
    s_delta (SL_D_TOOL_CALL, 0, NULL, NULL, "1}");
    s_delta (SL_D_TOOL_CALL, 1, "c2", "g", "{}");
    s_delta (SL_D_FINISH, -1, NULL, NULL, "tool_calls");
    s_delta (SL_D_DONE, -1, NULL, NULL, NULL);
    s_end ();

    sl_msg_t *text = s_block_end (0), *call1 = s_block_end (1), *call2 = s_block_end (2);
    cr_assert (text && call1 && call2);
    cr_expect_eq (text->block, SL_BK_TEXT);
    cr_expect (sl_str_eq (text->text, "Hello"));
    cr_expect_eq (text->index, 0);
    cr_expect_eq (call1->block, SL_BK_TOOL_CALL);
    cr_expect_eq (call1->index, 1);
    cr_expect (sl_str_eq (call1->id, "c1") && sl_str_eq (call1->name, "f"));
    cr_expect (sl_str_eq (call1->text, "{\"a\":1}"));
    cr_expect (call1->flags & SL_F_ARGS_VALID);
    cr_expect_eq (call2->index, 2);
    cr_expect (sl_str_eq (call2->id, "c2"));
    sl_msg_t *fin = s_find (SL_MSG_BLOCK, SL_B_FINISH);
    cr_assert_not_null (fin);
    cr_expect_eq (fin->finish, SL_FIN_TOOL_CALLS);
    cr_expect (sl_str_eq (fin->finish_raw, "tool_calls"));
    cr_expect_eq (rec.msgs [rec.count - 1]->type, SL_MSG_END, "end is last");
    for (size_t i = 0; i < rec.count; i++)
        cr_expect_eq (rec.msgs [i]->seq, i, "sequence numbers contiguous");
    cr_expect_eq (sl_agg_streams (agg), 0, "stream state freed at end");
}

Test (sl_agg, same_index_new_id_is_a_new_call)
{
    s_delta (SL_D_TOOL_CALL, 0, "a", "f", "{}");
    s_delta (SL_D_TOOL_CALL, 0, "b", "g", "{}");
    s_delta (SL_D_DONE, -1, NULL, NULL, NULL);
    cr_assert_not_null (s_block_end (1));
    cr_expect (sl_str_eq (s_block_end (1)->id, "b"));
}

Test (sl_agg, empty_arguments_become_an_empty_object)
{
    s_delta (SL_D_TOOL_CALL, 0, "a", "f", "");
    s_delta (SL_D_DONE, -1, NULL, NULL, NULL);
    cr_assert_not_null (s_block_end (0));
    cr_expect (sl_str_eq (s_block_end (0)->text, "{}"));
    cr_expect (s_block_end (0)->flags & SL_F_ARGS_VALID);
}

Test (sl_agg, invalid_arguments_not_flagged_valid)
{
    s_delta (SL_D_TOOL_CALL, 0, "a", "f", "{\"a\":");
    s_delta (SL_D_DONE, -1, NULL, NULL, NULL);
    cr_expect_not (s_block_end (0)->flags & SL_F_ARGS_VALID);
}

Test (sl_agg, error_closes_open_block_incomplete)
{
    s_delta (SL_D_TOOL_CALL, 0, "a", "f", "{\"a\":");
    sl_msg_t err = recorder_msg (SL_MSG_ERROR, 0);
    err.code = sl_str ("server_error");
    sl_agg_feed (agg, &err, recorder_emit, &rec);
    s_end ();
    cr_assert_not_null (s_block_end (0));
    cr_expect (s_block_end (0)->flags & SL_F_INCOMPLETE);
    cr_expect_not (s_block_end (0)->flags & SL_F_ARGS_VALID);
    cr_expect_not_null (s_find (SL_MSG_ERROR, -1));
    cr_expect_null (s_find (SL_MSG_BLOCK, SL_B_FINISH), "no finish after an error");
}

Test (sl_agg, finish_normalized)
{
    cr_expect_eq (sl_agg_normalize_finish (sl_str ("stop")), SL_FIN_STOP);
    cr_expect_eq (sl_agg_normalize_finish (sl_str ("length")), SL_FIN_LENGTH);
    cr_expect_eq (sl_agg_normalize_finish (sl_str ("tool_calls")), SL_FIN_TOOL_CALLS);
    cr_expect_eq (sl_agg_normalize_finish (sl_str ("content_filter")), SL_FIN_CONTENT_FILTER);
    cr_expect_eq (sl_agg_normalize_finish (SL_STR_NULL), SL_FIN_NONE);
}

Test (sl_agg, stale_epoch_and_unknown_stream_dropped)
{
    sl_msg_t d = recorder_msg (SL_MSG_DELTA, SL_D_TEXT);
    d.text = sl_str ("x");
    memset (d.sid, 0x22, SL_SID_SIZE);
    sl_agg_feed (agg, &d, recorder_emit, &rec);
    cr_expect_eq (sl_agg_dropped (agg), 1);
    size_t before = rec.count;
    //  A new epoch restarts the stream; the old epoch is then stale.
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    start.epoch = 1;
    sl_agg_feed (agg, &start, recorder_emit, &rec);
    cr_expect_eq (rec.count, before + 1);
    cr_expect_eq (rec.msgs [before]->seq, 0, "numbering restarts with the epoch");
    sl_msg_t old = recorder_msg (SL_MSG_DELTA, SL_D_TEXT);
    old.text = sl_str ("x");
    sl_agg_feed (agg, &old, recorder_emit, &rec);
    cr_expect_eq (sl_agg_dropped (agg), 2);
}
