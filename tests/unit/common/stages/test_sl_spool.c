/*  Unit tests: common/stages/sl_spool (the emitter's records for the
    audit): what is spooled, numbering, go-back-N delivery, acknowledgement,
    audits that come and go, the bound and its gap record. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/stages/sl_spool.h"

#define S_INC 0x5eed

static sl_msg_t
s_msg (sl_msg_type_t type, uint8_t sid_byte, uint64_t seq)
{
    sl_msg_t m;
    sl_msg_init (&m, type);
    memset (m.sid, sid_byte, SL_SID_SIZE);
    m.seq = seq;
    //  What the type must carry (SL_FIELDS_<TYPE>), to be a message at all.
    if (type == SL_MSG_VERDICT)
        m.action = SL_ACT_ALLOW;
    if (type == SL_MSG_ERROR)
        m.code = SL_STR_LIT ("upstream_error");
    if (type == SL_MSG_POLICY) {
        m.instance = SL_STR_LIT ("judge-1");
        m.policy = SL_STR_LIT ("allow-all");
    }
    return m;
}

//  The REC messages of a batch: their numbers into seqs, count returned.
static int
s_decode (sl_buf_t *batch, uint64_t *seqs, int max, sl_msg_t *last_inner)
{
    sl_codec_t *codec = sl_codec_new ();
    sl_codec_t *inner = sl_codec_new ();
    size_t offset = 0;
    sl_msg_t rec;
    int n = 0;
    while (sl_codec_decode (codec, batch->data, batch->len, &offset, &rec) == 0) {
        cr_assert_eq (rec.type, SL_MSG_REC);
        cr_expect_eq (rec.incarnation, S_INC);
        cr_expect (sl_str_eq (rec.instance, "emitter-1"));
        size_t at = 0;
        sl_msg_t m;
        cr_assert_eq (sl_codec_decode (inner, rec.body.ptr, rec.body.len, &at, &m), 0, "the record holds a message");
        if (last_inner)
            *last_inner = m;
        if (n < max)
            seqs [n] = rec.seq;
        n++;
    }
    sl_codec_destroy (&codec);
    sl_codec_destroy (&inner);
    return n;
}

static sl_msg_t
s_rack (uint64_t inc, uint64_t seq, int kind)
{
    sl_msg_t r;
    sl_msg_init (&r, SL_MSG_RACK);
    r.incarnation = inc;
    r.seq = seq;
    r.kind = (uint8_t) kind;
    return r;
}

Test (sl_spool, spools_what_the_audit_needs_and_nothing_else)
{
    sl_msg_t m = s_msg (SL_MSG_START, 1, 0);
    cr_expect (sl_spool_wants (&m));
    uint8_t kinds [] = { SL_B_MESSAGE, SL_B_START, SL_B_DELTA, SL_B_END, SL_B_FINISH, SL_B_KEEPALIVE };
    bool wanted [] = { true, false, false, true, true, false };
    for (size_t i = 0; i < sizeof kinds; i++) {
        m = s_msg (SL_MSG_BLOCK, 1, 1);
        m.kind = kinds [i];
        cr_expect_eq (sl_spool_wants (&m), wanted [i], "block event %s", sl_block_event_name (kinds [i]));
    }
    sl_msg_type_t yes [] = { SL_MSG_VERDICT, SL_MSG_ERROR, SL_MSG_END, SL_MSG_POLICY };
    sl_msg_type_t no [] = { SL_MSG_HB, SL_MSG_FRAME, SL_MSG_LOST, SL_MSG_DELTA };
    for (size_t i = 0; i < 4; i++) {
        m = s_msg (yes [i], 1, 1);
        cr_expect (sl_spool_wants (&m), "%s", sl_msg_type_name (yes [i]));
        m = s_msg (no [i], 1, 1);
        cr_expect_not (sl_spool_wants (&m), "%s", sl_msg_type_name (no [i]));
    }
}

Test (sl_spool, delivers_in_order_and_forgets_what_is_committed)
{
    sl_spool_t *spool = sl_spool_new (1 << 20, "emitter-1", S_INC);
    for (uint64_t i = 0; i < 10; i++) {
        sl_msg_t m = s_msg (i == 0 ? SL_MSG_START : SL_MSG_VERDICT, 1, i);
        cr_assert_eq (sl_spool_add (spool, &m, 0, 1000 + (int64_t) i), 0);
    }
    cr_expect_eq (sl_spool_records (spool), 10);
    sl_buf_t batch = { 0 };
    sl_str_t peer;
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 0), 0, "no audit yet: nothing goes");
    //  An audit says hello (it knows no incarnation of ours).
    sl_msg_t hello = s_rack (0, 0, SL_RACK_ACK);
    sl_spool_on_rack (spool, SL_STR_LIT ("A"), &hello, 10);
    cr_expect (sl_spool_connected (spool, 10));
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 10), 10);
    cr_expect (sl_str_eq (peer, "A"));
    uint64_t seqs [16];
    cr_assert_eq (s_decode (&batch, seqs, 16, NULL), 10);
    for (int i = 0; i < 10; i++)
        cr_expect_eq (seqs [i], (uint64_t) i + 1, "numbered from 1");
    sl_buf_reset (&batch);
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 11), 0, "all in flight");
    //  Committed up to 6: those are forgotten.
    sl_msg_t ack = s_rack (S_INC, 6, SL_RACK_ACK);
    sl_spool_on_rack (spool, SL_STR_LIT ("A"), &ack, 20);
    cr_expect_eq (sl_spool_records (spool), 4);
    cr_expect_eq (sl_spool_stats (spool)->acked, 6);
    //  New records go out after the ones in flight.
    sl_msg_t m = s_msg (SL_MSG_END, 1, 10);
    sl_spool_add (spool, &m, 0, 2000);
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 21), 1);
    cr_assert_eq (s_decode (&batch, seqs, 16, NULL), 1);
    cr_expect_eq (seqs [0], 11);
    //  An acknowledgement of what was never sent frees nothing more.
    ack = s_rack (S_INC, 99, SL_RACK_ACK);
    sl_spool_on_rack (spool, SL_STR_LIT ("A"), &ack, 22);
    cr_expect_eq (sl_spool_records (spool), 0);
    cr_expect_eq (sl_spool_stats (spool)->acked, 11);
    sl_buf_free (&batch);
    sl_spool_destroy (&spool);
}

Test (sl_spool, sends_again_what_no_audit_committed)
{
    sl_spool_t *spool = sl_spool_new (1 << 20, "emitter-1", S_INC);
    for (uint64_t i = 0; i < 5; i++) {
        sl_msg_t m = s_msg (SL_MSG_VERDICT, 2, i);
        sl_spool_add (spool, &m, 0, 1);
    }
    sl_buf_t batch = { 0 };
    sl_str_t peer;
    uint64_t seqs [8];
    sl_msg_t hello = s_rack (0, 0, SL_RACK_ACK);
    sl_spool_on_rack (spool, SL_STR_LIT ("A"), &hello, 0);
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 0), 5);
    sl_msg_t ack = s_rack (S_INC, 2, SL_RACK_ACK);
    sl_spool_on_rack (spool, SL_STR_LIT ("A"), &ack, 100);
    //  No progress for the resend time: everything unacknowledged again.
    sl_spool_tick (spool, 100 + SL_SPOOL_RESEND_MS - 1);
    sl_buf_reset (&batch);
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 100 + SL_SPOOL_RESEND_MS - 1), 0, "not yet");
    sl_msg_t beat = s_rack (S_INC, 2, SL_RACK_ACK);
    sl_spool_on_rack (spool, SL_STR_LIT ("A"), &beat, 100 + SL_SPOOL_RESEND_MS);
    sl_spool_tick (spool, 100 + SL_SPOOL_RESEND_MS + 1);
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 100 + SL_SPOOL_RESEND_MS + 1), 3);
    cr_assert_eq (s_decode (&batch, seqs, 8, NULL), 3);
    cr_expect_eq (seqs [0], 3);
    cr_expect_eq (sl_spool_stats (spool)->resent, 3);
    //  The audit asks for a resend (it found a gap in what it got).
    sl_msg_t resend = s_rack (S_INC, 3, SL_RACK_RESEND);
    sl_spool_on_rack (spool, SL_STR_LIT ("A"), &resend, 5000);
    sl_buf_reset (&batch);
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 5000), 2);
    cr_assert_eq (s_decode (&batch, seqs, 8, NULL), 2);
    cr_expect_eq (seqs [0], 4);
    //  A send that failed puts the records back.
    sl_spool_unsend (spool, 2, false);
    sl_buf_reset (&batch);
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 5001), 2);
    sl_buf_free (&batch);
    sl_spool_destroy (&spool);
}

Test (sl_spool, a_new_audit_takes_over_and_gets_everything_unacknowledged)
{
    sl_spool_t *spool = sl_spool_new (1 << 20, "emitter-1", S_INC);
    for (uint64_t i = 0; i < 4; i++) {
        sl_msg_t m = s_msg (SL_MSG_VERDICT, 3, i);
        sl_spool_add (spool, &m, 0, 1);
    }
    sl_buf_t batch = { 0 };
    sl_str_t peer;
    sl_msg_t hello = s_rack (0, 0, SL_RACK_ACK);
    sl_spool_on_rack (spool, SL_STR_LIT ("A"), &hello, 0);
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 0), 4);
    sl_msg_t ack = s_rack (S_INC, 1, SL_RACK_ACK);
    sl_spool_on_rack (spool, SL_STR_LIT ("A"), &ack, 10);
    //  A standby audit's acknowledgement counts; it does not take over.
    sl_msg_t standby = s_rack (S_INC, 2, SL_RACK_ACK);
    sl_spool_on_rack (spool, SL_STR_LIT ("B"), &standby, 11);
    cr_expect_eq (sl_spool_records (spool), 2);
    sl_buf_reset (&batch);
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 12), 0);
    //  The audit restarts (kill -9): its new connection says hello.
    sl_msg_t again = s_rack (0, 0, SL_RACK_ACK);
    sl_spool_on_rack (spool, SL_STR_LIT ("C"), &again, 20);
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 20), 2);
    cr_expect (sl_str_eq (peer, "C"));
    uint64_t seqs [4];
    cr_assert_eq (s_decode (&batch, seqs, 4, NULL), 2);
    cr_expect_eq (seqs [0], 3);
    //  An audit that stops speaking is dead; nothing is sent until one speaks.
    sl_spool_tick (spool, 20 + SL_SPOOL_PEER_DEAD_MS + 1);
    cr_expect_not (sl_spool_connected (spool, 20 + SL_SPOOL_PEER_DEAD_MS + 1));
    sl_buf_reset (&batch);
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 20 + SL_SPOOL_PEER_DEAD_MS + 2), 0);
    sl_msg_t back = s_rack (S_INC, 2, SL_RACK_ACK);
    sl_spool_on_rack (spool, SL_STR_LIT ("C"), &back, 5000);
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 5000), 2, "all unacknowledged, again");
    sl_buf_free (&batch);
    sl_spool_destroy (&spool);
}

Test (sl_spool, past_its_bound_it_counts_the_loss_and_says_so)
{
    sl_spool_t *spool = sl_spool_new (2000, "emitter-1", S_INC);
    char text [300];
    memset (text, 'x', sizeof text);
    int kept = 0, lost = 0;
    for (int i = 0; i < 20; i++) {
        sl_msg_t m = s_msg (SL_MSG_VERDICT, (uint8_t) (i < 10 ? 4 : 5), (uint64_t) i);
        m.text = sl_str_n (text, sizeof text);
        if (sl_spool_add (spool, &m, 0, 100 + i) == 0)
            kept++;
        else
            lost++;
    }
    cr_expect_gt (kept, 0);
    cr_expect_gt (lost, 0);
    cr_expect_eq (sl_spool_stats (spool)->dropped, (uint64_t) lost);
    cr_expect_leq (sl_spool_bytes (spool), 2000);
    //  An audit takes everything; the next record is preceded by the gap.
    sl_buf_t batch = { 0 };
    sl_str_t peer;
    sl_msg_t hello = s_rack (0, 0, SL_RACK_ACK);
    sl_spool_on_rack (spool, SL_STR_LIT ("A"), &hello, 0);
    size_t n = sl_spool_take (spool, &batch, &peer, 0);
    cr_expect_eq (n, (size_t) kept);
    sl_msg_t ack = s_rack (S_INC, (uint64_t) kept, SL_RACK_ACK);
    sl_spool_on_rack (spool, SL_STR_LIT ("A"), &ack, 1);
    sl_msg_t m = s_msg (SL_MSG_END, 5, 99);
    cr_expect_eq (sl_spool_add (spool, &m, 0, 500), 0);
    sl_buf_reset (&batch);
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 2), 2, "the gap, then the record");
    //  The gap: how many, since when, which streams.
    sl_codec_t *codec = sl_codec_new ();
    sl_codec_t *inner = sl_codec_new ();
    size_t offset = 0, at = 0;
    sl_msg_t rec, gap;
    cr_assert_eq (sl_codec_decode (codec, batch.data, batch.len, &offset, &rec), 0);
    cr_assert_eq (sl_codec_decode (inner, rec.body.ptr, rec.body.len, &at, &gap), 0);
    cr_expect_eq (gap.type, SL_MSG_GAP);
    cr_expect_eq (gap.count, (uint64_t) lost);
    cr_expect_eq (gap.ts, 100 + kept, "the first loss");
    cr_expect_eq (gap.body.len % SL_SID_SIZE, 0);
    cr_expect_geq (gap.body.len / SL_SID_SIZE, 1);
    cr_expect_eq ((uint8_t) gap.body.ptr [gap.body.len - 1], 5, "the streams it names");
    cr_expect_eq (sl_spool_stats (spool)->gaps, 1);
    sl_codec_destroy (&codec);
    sl_codec_destroy (&inner);
    sl_buf_free (&batch);
    sl_spool_destroy (&spool);
}

Test (sl_spool, the_window_bounds_what_is_in_flight)
{
    sl_spool_t *spool = sl_spool_new (64u << 20, "emitter-1", S_INC);
    for (int i = 0; i < SL_SPOOL_WINDOW + 100; i++) {
        sl_msg_t m = s_msg (SL_MSG_END, 6, (uint64_t) i);
        sl_spool_add (spool, &m, 0, 1);
    }
    sl_buf_t batch = { 0 };
    sl_str_t peer;
    sl_msg_t hello = s_rack (0, 0, SL_RACK_ACK);
    sl_spool_on_rack (spool, SL_STR_LIT ("A"), &hello, 0);
    size_t total = 0, n;
    for (int i = 0; i < 10000 && (n = sl_spool_take (spool, &batch, &peer, 0)); i++) {
        cr_expect_leq (batch.len, SL_SPOOL_BATCH_BYTES + 256);
        total += n;
        sl_buf_reset (&batch);
    }
    cr_expect_eq (total, SL_SPOOL_WINDOW);
    sl_msg_t ack = s_rack (S_INC, 100, SL_RACK_ACK);
    sl_spool_on_rack (spool, SL_STR_LIT ("A"), &ack, 1);
    cr_expect_eq (sl_spool_take (spool, &batch, &peer, 1), 100, "room for as many as were acknowledged");
    sl_buf_free (&batch);
    sl_spool_destroy (&spool);
}
