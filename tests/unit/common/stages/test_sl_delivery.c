/*  Unit tests: common/stages/sl_delivery (a client stream's frames as the
    gateway delivers them).

    Frames of one stream fed on an injected clock: what is written, what
    is dropped and why, what the acks say, when the stream is silent past
    a bound, and what becomes of the request's job.
*/
#include <criterion/criterion.h>
#include <string.h>

#include "common/stages/sl_delivery.h"

#define S_EXPIRY_MS 5000

static int64_t now_us;                  //  the injected clock
static sl_delivery_t *d;
static sl_codec_t *codec;               //  to read the job kept
static uint8_t sid [SL_SID_SIZE];

static int64_t
s_clock (void *arg)
{
    (void) arg;
    return now_us;
}

static void
s_setup (void)
{
    now_us = 1000000;
    memset (sid, 0x42, SL_SID_SIZE);
    d = sl_delivery_new (sid, S_EXPIRY_MS, s_clock, NULL);
    codec = sl_codec_new ();
}

static void
s_teardown (void)
{
    sl_delivery_destroy (&d);
    sl_codec_destroy (&codec);
}

static void
s_advance_ms (int64_t ms)
{
    now_us += ms * 1000;
}

//  A frame of the stream: epoch, sequence number, flags, body.
static sl_msg_t
s_frame (uint32_t epoch, uint64_t seq, uint32_t flags, const char *body)
{
    sl_msg_t f;
    sl_msg_init (&f, SL_MSG_FRAME);
    memcpy (f.sid, sid, SL_SID_SIZE);
    f.epoch = epoch;
    f.seq = seq;
    f.flags = flags;
    f.body = sl_str (body);
    return f;
}

static sl_delivery_outcome_t
s_feed (uint32_t epoch, uint64_t seq, uint32_t flags, const char *body, sl_delivery_write_t *w)
{
    sl_msg_t f = s_frame (epoch, seq, flags, body);
    sl_delivery_write_t ignored;
    return sl_delivery_feed (d, &f, false, w ? w : &ignored);
}

//  A keep-alive carries the number of the frame that follows it.
static sl_delivery_outcome_t
s_keepalive (uint32_t epoch, uint64_t seq, uint32_t flags, sl_delivery_write_t *w)
{
    return s_feed (epoch, seq, flags | SL_F_KEEPALIVE, "", w);
}

static sl_msg_t
s_ack (bool last)
{
    sl_msg_t ack;
    sl_delivery_ack (d, last, &ack);
    return ack;
}

//  The request's job leaves for an ingest.
static void
s_dispatch (const char *model)
{
    sl_msg_t job;
    sl_msg_init (&job, SL_MSG_REQ);
    memcpy (job.sid, sid, SL_SID_SIZE);
    job.client_dialect = job.upstream_dialect = SL_DIALECT_OPENAI;
    job.reply_to = sl_str ("gateway-1");
    job.model = sl_str (model);
    job.body = sl_str ("{\"messages\":[]}");
    sl_delivery_dispatch (d, &job);
}

TestSuite (sl_delivery, .init = s_setup, .fini = s_teardown);

//  --------------------------------------------------------------------------
//  Order

Test (sl_delivery, frames_in_order_are_written_the_first_opens_the_last_ends)
{
    sl_delivery_write_t w;
    cr_assert_eq (s_feed (0, 0, SL_F_FIRST, "a", &w), SL_DELIVERY_WRITE);
    cr_expect (w.open, "the first frame opens the response");
    cr_expect_not (w.end);
    cr_expect_not (w.whole, "an event stream is written as it comes");
    cr_expect_eq (w.status, 200, "no status named: 200");
    cr_expect_str_eq (w.content_type, "text/event-stream");
    cr_expect_eq (w.body.len, 1);
    cr_expect_eq (memcmp (w.body.ptr, "a", 1), 0);
    cr_expect (sl_delivery_started (d));

    cr_assert_eq (s_feed (0, 1, 0, "b", &w), SL_DELIVERY_WRITE);
    cr_expect_not (w.open, "open once");
    cr_expect_not (w.end);
    cr_expect_eq (memcmp (w.body.ptr, "b", 1), 0);

    cr_assert_eq (s_feed (0, 2, SL_F_LAST, "c", &w), SL_DELIVERY_WRITE);
    cr_expect (w.end, "the last frame ends the response");
    cr_expect_not (w.open);
    cr_expect_eq (sl_delivery_next_seq (d), 3);
}

Test (sl_delivery, a_frame_names_its_status_and_content_type)
{
    sl_msg_t f = s_frame (0, 0, SL_F_FIRST, "{}");
    f.status = 429;
    f.content_type = sl_str ("application/json");
    sl_delivery_write_t w;
    cr_assert_eq (sl_delivery_feed (d, &f, false, &w), SL_DELIVERY_WRITE);
    cr_expect_eq (w.status, 429);
    cr_expect_str_eq (w.content_type, "application/json");
    cr_expect_not (w.whole, "not the last frame: the response goes on");
}

Test (sl_delivery, a_first_and_last_frame_not_an_event_stream_is_the_whole_response)
{
    sl_msg_t f = s_frame (0, 0, SL_F_FIRST | SL_F_LAST, "{\"id\":1}");
    f.content_type = sl_str ("application/json");
    sl_delivery_write_t w;
    cr_assert_eq (sl_delivery_feed (d, &f, false, &w), SL_DELIVERY_WRITE);
    cr_expect (w.whole);
    cr_expect (w.open);
    cr_expect (w.end);

    //  The same, as an event stream: opened, written and ended.
    sl_delivery_destroy (&d);
    d = sl_delivery_new (sid, S_EXPIRY_MS, s_clock, NULL);
    cr_assert_eq (s_feed (0, 0, SL_F_FIRST | SL_F_LAST, "data: x\n\n", &w), SL_DELIVERY_WRITE);
    cr_expect_not (w.whole);
    cr_expect (w.open);
    cr_expect (w.end);

    //  A last frame after others is no whole response, whatever it names.
    sl_delivery_destroy (&d);
    d = sl_delivery_new (sid, S_EXPIRY_MS, s_clock, NULL);
    cr_assert_eq (s_feed (0, 0, SL_F_FIRST, "{", NULL), SL_DELIVERY_WRITE);
    f = s_frame (0, 1, SL_F_LAST, "}");
    f.content_type = sl_str ("application/json");
    cr_assert_eq (sl_delivery_feed (d, &f, false, &w), SL_DELIVERY_WRITE);
    cr_expect (w.end);
    cr_expect_not (w.whole);
}

Test (sl_delivery, a_content_type_too_long_is_not_taken)
{
    char long_type [SL_DELIVERY_CONTENT_TYPE_SIZE + 1];
    memset (long_type, 'x', sizeof long_type - 1);
    long_type [sizeof long_type - 1] = 0;
    sl_msg_t f = s_frame (0, 0, SL_F_FIRST, "");
    f.content_type = sl_str (long_type);
    sl_delivery_write_t w;
    cr_assert_eq (sl_delivery_feed (d, &f, false, &w), SL_DELIVERY_WRITE);
    cr_expect_str_eq (w.content_type, "text/event-stream");
}

Test (sl_delivery, a_duplicate_is_dropped)
{
    cr_assert_eq (s_feed (0, 0, SL_F_FIRST, "a", NULL), SL_DELIVERY_WRITE);
    cr_assert_eq (s_feed (0, 1, 0, "b", NULL), SL_DELIVERY_WRITE);
    cr_expect_eq (s_feed (0, 1, 0, "b", NULL), SL_DELIVERY_DUPLICATE);
    cr_expect_eq (s_feed (0, 0, SL_F_FIRST, "a", NULL), SL_DELIVERY_DUPLICATE);
    cr_expect_eq (sl_delivery_next_seq (d), 2, "a duplicate moves nothing");
    cr_expect_eq (s_feed (0, 2, 0, "c", NULL), SL_DELIVERY_WRITE, "the next one still goes");
}

Test (sl_delivery, a_gap_is_dropped_and_the_replay_fills_it)
{
    cr_assert_eq (s_feed (0, 0, SL_F_FIRST, "a", NULL), SL_DELIVERY_WRITE);
    //  Frame 1 was lost with an instance: 2 and 3 cannot go before it.
    cr_expect_eq (s_feed (0, 2, 0, "c", NULL), SL_DELIVERY_GAP);
    cr_expect_eq (s_feed (0, 3, SL_F_LAST, "d", NULL), SL_DELIVERY_GAP);
    cr_expect_eq (sl_delivery_next_seq (d), 1, "a gap writes nothing");
    cr_expect_eq (s_ack (false).seq, 1, "the ack says how far the client got");
    //  The ingest replays the stream in a new epoch, from 0.
    cr_expect_eq (s_feed (1, 0, SL_F_FIRST, "a", NULL), SL_DELIVERY_DUPLICATE);
    cr_expect_eq (s_feed (1, 1, 0, "b", NULL), SL_DELIVERY_WRITE);
    cr_expect_eq (s_feed (1, 2, 0, "c", NULL), SL_DELIVERY_WRITE);
    sl_delivery_write_t w;
    cr_expect_eq (s_feed (1, 3, SL_F_LAST, "d", &w), SL_DELIVERY_WRITE);
    cr_expect (w.end);
}

//  --------------------------------------------------------------------------
//  Epochs

Test (sl_delivery, frames_of_a_stale_epoch_are_ignored)
{
    cr_assert_eq (s_feed (0, 0, SL_F_FIRST, "a", NULL), SL_DELIVERY_WRITE);
    cr_assert_eq (s_feed (2, 1, 0, "b", NULL), SL_DELIVERY_WRITE);
    uint64_t activity = (uint64_t) s_ack (false).ts;
    //  What an instance of epoch 1 left behind: the next frame expected
    //  (2) and an error at the end, neither reaches the client.
    cr_expect_eq (s_feed (1, 2, 0, "old", NULL), SL_DELIVERY_STALE);
    cr_expect_eq (s_feed (0, 2, SL_F_LAST, "old error", NULL), SL_DELIVERY_STALE);
    cr_expect_eq (s_keepalive (1, 2, 0, NULL), SL_DELIVERY_STALE);
    cr_expect_eq (sl_delivery_next_seq (d), 2);
    cr_expect_eq ((uint64_t) s_ack (false).ts, activity, "stale frames are no activity");
    cr_expect_eq (s_feed (2, 2, 0, "c", NULL), SL_DELIVERY_WRITE, "the newest epoch goes on");
}

Test (sl_delivery, a_replayed_epoch_from_zero_writes_only_what_the_client_has_not_seen)
{
    sl_delivery_write_t w;
    cr_assert_eq (s_feed (0, 0, SL_F_FIRST, "a", NULL), SL_DELIVERY_WRITE);
    cr_assert_eq (s_feed (0, 1, 0, "b", NULL), SL_DELIVERY_WRITE);
    cr_assert_eq (s_feed (0, 2, 0, "c", NULL), SL_DELIVERY_WRITE);
    //  Epoch 1 from sequence 0: 0..2 were written, 3 and 4 are new.
    cr_expect_eq (s_feed (1, 0, SL_F_FIRST, "a", &w), SL_DELIVERY_DUPLICATE);
    cr_expect_eq (s_feed (1, 1, 0, "b", NULL), SL_DELIVERY_DUPLICATE);
    cr_expect_eq (s_feed (1, 2, 0, "c", NULL), SL_DELIVERY_DUPLICATE);
    cr_expect_eq (s_feed (1, 3, 0, "d", &w), SL_DELIVERY_WRITE);
    cr_expect_not (w.open, "the response opened in the first epoch");
    cr_expect_eq (memcmp (w.body.ptr, "d", 1), 0);
    //  The old epoch's frame 4 arrives late: stale, the new one's is written.
    cr_expect_eq (s_feed (0, 4, SL_F_LAST, "e", NULL), SL_DELIVERY_STALE);
    cr_expect_eq (s_feed (1, 4, SL_F_LAST, "e", &w), SL_DELIVERY_WRITE);
    cr_expect (w.end);
    cr_expect_eq (sl_delivery_next_seq (d), 5);
}

//  --------------------------------------------------------------------------
//  Keep-alives

Test (sl_delivery, a_keepalive_is_activity_outside_the_sequence)
{
    sl_delivery_write_t w;
    cr_assert_eq (s_feed (0, 0, SL_F_FIRST, "a", NULL), SL_DELIVERY_WRITE);
    cr_expect_eq (s_keepalive (0, 1, 0, &w), SL_DELIVERY_KEEPALIVE);
    cr_expect_not (w.open);
    cr_expect_eq (s_keepalive (0, 1, 0, NULL), SL_DELIVERY_KEEPALIVE);
    cr_expect_eq (sl_delivery_next_seq (d), 1, "a keep-alive takes no number");
    cr_expect_eq (s_ack (false).ts, 3, "one frame and two keep-alives");
    cr_expect_eq (s_feed (0, 1, 0, "b", NULL), SL_DELIVERY_WRITE);
}

Test (sl_delivery, a_first_keepalive_opens_the_response_once_the_gateway_says_it_did)
{
    sl_delivery_write_t w;
    cr_assert_eq (s_keepalive (0, 0, SL_F_FIRST, &w), SL_DELIVERY_KEEPALIVE);
    cr_expect (w.open, "a judge holds the first block: the client must hear from us");
    cr_expect_str_eq (w.content_type, "text/event-stream");
    cr_expect_eq (w.status, 200);
    cr_expect_not (sl_delivery_started (d), "open only once the status line went out");
    //  The status line could not go out: the next one tries again.
    cr_assert_eq (s_keepalive (0, 0, SL_F_FIRST, &w), SL_DELIVERY_KEEPALIVE);
    cr_expect (w.open);
    sl_delivery_opened (d);
    cr_expect (sl_delivery_started (d));
    cr_assert_eq (s_keepalive (0, 0, SL_F_FIRST, &w), SL_DELIVERY_KEEPALIVE);
    cr_expect_not (w.open);
    //  The first frame after it does not open the response again.
    cr_assert_eq (s_feed (0, 0, SL_F_FIRST, "a", &w), SL_DELIVERY_WRITE);
    cr_expect_not (w.open);
    cr_expect_not (w.whole);
}

//  --------------------------------------------------------------------------
//  Acks

Test (sl_delivery, the_ack_says_frames_written_and_activity)
{
    sl_msg_t ack = s_ack (false);
    cr_expect_eq (ack.type, SL_MSG_ACK);
    cr_expect_eq (memcmp (ack.sid, sid, SL_SID_SIZE), 0);
    cr_expect_eq (ack.seq, 0);
    cr_expect_eq (ack.ts, 0);
    cr_expect_eq (ack.flags, 0);

    s_feed (0, 0, SL_F_FIRST, "a", NULL);     //  written
    s_feed (0, 0, SL_F_FIRST, "a", NULL);     //  duplicate
    s_feed (0, 3, 0, "d", NULL);              //  gap
    s_keepalive (0, 1, 0, NULL);              //  keep-alive
    s_feed (0, 1, 0, "b", NULL);              //  written
    ack = s_ack (false);
    cr_expect_eq (ack.seq, 2, "two frames written");
    cr_expect_eq (ack.ts, 5, "every frame received counts as activity");

    ack = s_ack (true);
    cr_expect_eq (ack.flags, SL_F_LAST);
    cr_expect_eq (ack.seq, 2);
}

//  --------------------------------------------------------------------------
//  ALONE frames

Test (sl_delivery, an_alone_frame_waits_for_the_bytes_before_it)
{
    s_feed (0, 0, SL_F_FIRST, "a", NULL);
    sl_msg_t f = s_frame (0, 1, SL_F_ALONE | SL_F_LAST, "{\"error\":{}}");
    sl_delivery_write_t w;
    cr_assert_eq (sl_delivery_feed (d, &f, true, &w), SL_DELIVERY_HELD);
    cr_expect (sl_delivery_holding (d));
    cr_expect_eq (s_ack (false).ts, 1, "a frame held is not activity yet");
    cr_expect_null (sl_delivery_release (d, true), "the client has not taken the bytes before it");
    sl_msg_t *held = sl_delivery_release (d, false);
    cr_assert_not_null (held, "the client took them: it goes");
    cr_expect_not (held->flags & SL_F_ALONE, "fed again as any frame");
    cr_expect (held->flags & SL_F_LAST);
    cr_expect_not (sl_delivery_holding (d));
    cr_expect_eq (sl_delivery_feed (d, held, true, &w), SL_DELIVERY_WRITE);
    cr_expect (w.end);
    free (held);
}

Test (sl_delivery, an_alone_frame_goes_at_once_when_nothing_is_behind_or_nothing_started)
{
    sl_msg_t f = s_frame (0, 0, SL_F_FIRST | SL_F_ALONE, "x");
    sl_delivery_write_t w;
    cr_expect_eq (sl_delivery_feed (d, &f, true, &w), SL_DELIVERY_WRITE, "no response open yet: nothing before it");
    f = s_frame (0, 1, SL_F_ALONE, "y");
    cr_expect_eq (sl_delivery_feed (d, &f, false, &w), SL_DELIVERY_WRITE, "the client took everything");
    f = s_frame (0, 5, SL_F_ALONE, "z");
    cr_expect_eq (sl_delivery_feed (d, &f, true, &w), SL_DELIVERY_GAP, "only the next frame is held");
    cr_expect_not (sl_delivery_holding (d));
}

Test (sl_delivery, an_alone_frame_waits_at_most_its_bound)
{
    s_feed (0, 0, SL_F_FIRST, "a", NULL);
    sl_msg_t f = s_frame (0, 1, SL_F_ALONE, "first");
    sl_delivery_write_t w;
    cr_assert_eq (sl_delivery_feed (d, &f, true, &w), SL_DELIVERY_HELD);
    //  A replay brings it again meanwhile: the newer copy is held, the
    //  wait still counts from the first.
    s_advance_ms (SL_DELIVERY_ALONE_WAIT_MS - 1);
    f = s_frame (1, 1, SL_F_ALONE, "again");
    cr_assert_eq (sl_delivery_feed (d, &f, true, &w), SL_DELIVERY_HELD);
    cr_expect_null (sl_delivery_release (d, true));
    s_advance_ms (1);
    sl_msg_t *held = sl_delivery_release (d, true);
    cr_assert_not_null (held, "waited long enough, whatever is still behind");
    cr_expect_eq (held->epoch, 1);
    cr_expect_eq (memcmp (held->body.ptr, "again", 5), 0);
    free (held);
}

Test (sl_delivery, an_alone_frame_that_waited_its_bound_goes_when_it_comes_again)
{
    s_feed (0, 0, SL_F_FIRST, "a", NULL);
    sl_msg_t f = s_frame (0, 1, SL_F_ALONE, "x");
    sl_delivery_write_t w;
    cr_assert_eq (sl_delivery_feed (d, &f, true, &w), SL_DELIVERY_HELD);
    s_advance_ms (SL_DELIVERY_ALONE_WAIT_MS);
    cr_expect_eq (sl_delivery_feed (d, &f, true, &w), SL_DELIVERY_WRITE);
    //  The copy held goes later as a duplicate.
    sl_msg_t *held = sl_delivery_release (d, true);
    cr_assert_not_null (held);
    cr_expect_eq (sl_delivery_feed (d, held, true, &w), SL_DELIVERY_DUPLICATE);
    free (held);
}

//  --------------------------------------------------------------------------
//  Silence: expiry and the ingest's grace

Test (sl_delivery, a_stream_nothing_comes_for_expires)
{
    s_advance_ms (S_EXPIRY_MS);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_HEARD, "at the bound, not past it");
    s_advance_ms (1);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_EXPIRED);
}

Test (sl_delivery, frames_and_keepalives_hold_off_expiry_stale_ones_do_not)
{
    s_advance_ms (S_EXPIRY_MS);
    s_feed (1, 0, SL_F_FIRST, "a", NULL);
    s_advance_ms (S_EXPIRY_MS);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_HEARD, "a frame was heard");
    s_keepalive (1, 1, 0, NULL);
    s_advance_ms (S_EXPIRY_MS);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_HEARD, "a keep-alive was heard");
    s_feed (1, 0, 0, "a", NULL);               //  a duplicate is heard too
    s_advance_ms (S_EXPIRY_MS);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_HEARD);
    s_feed (0, 1, 0, "stale", NULL);
    s_advance_ms (1);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_EXPIRED, "a stale frame is not");
}

Test (sl_delivery, the_job_leaving_restarts_the_expiry)
{
    s_advance_ms (S_EXPIRY_MS);                //  the request was judged meanwhile
    s_dispatch ("m");
    s_advance_ms (1);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_HEARD);
    s_advance_ms (S_EXPIRY_MS);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_EXPIRED);
}

Test (sl_delivery, without_an_expiry_a_stream_never_expires)
{
    sl_delivery_destroy (&d);
    d = sl_delivery_new (sid, 0, s_clock, NULL);
    s_advance_ms (1000 * S_EXPIRY_MS);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_HEARD);
}

Test (sl_delivery, an_ingest_declared_dead_has_its_grace)
{
    sl_delivery_destroy (&d);
    d = sl_delivery_new (sid, 0, s_clock, NULL);
    sl_delivery_ingest_dead (d);
    s_advance_ms (SL_DELIVERY_INGEST_GRACE_MS);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_HEARD, "within the grace");
    sl_delivery_ingest_dead (d);                //  declared again: the grace does not restart
    s_advance_ms (1);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_ORPHANED);
}

Test (sl_delivery, an_ingest_that_speaks_again_ends_the_grace)
{
    sl_delivery_ingest_dead (d);
    s_advance_ms (SL_DELIVERY_INGEST_GRACE_MS);
    sl_delivery_ingest_back (d);
    s_advance_ms (SL_DELIVERY_INGEST_GRACE_MS);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_HEARD);
    //  Dead again: a new grace, from now.
    sl_delivery_ingest_dead (d);
    s_advance_ms (SL_DELIVERY_INGEST_GRACE_MS);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_HEARD);
    s_advance_ms (1);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_ORPHANED);
}

Test (sl_delivery, frames_do_not_end_the_grace)
{
    //  Frames of a stream whose ingest is dead come from the stages behind
    //  it; the upstream call is lost all the same.
    sl_delivery_ingest_dead (d);
    s_advance_ms (SL_DELIVERY_INGEST_GRACE_MS);
    s_feed (0, 0, SL_F_FIRST, "a", NULL);
    s_advance_ms (1);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_ORPHANED);
}

Test (sl_delivery, with_a_clock_at_zero_the_grace_still_runs)
{
    sl_delivery_destroy (&d);
    now_us = 0;
    d = sl_delivery_new (sid, 0, s_clock, NULL);
    sl_delivery_ingest_dead (d);
    s_advance_ms (SL_DELIVERY_INGEST_GRACE_MS + 1);
    cr_expect_eq (sl_delivery_silence (d), SL_DELIVERY_ORPHANED);
}

//  --------------------------------------------------------------------------
//  The job

Test (sl_delivery, the_job_is_kept_until_an_ingest_shows_it_has_it)
{
    sl_msg_t out;
    cr_expect_not (sl_delivery_dispatched (d));
    cr_expect_eq (sl_delivery_job (d, codec, &out), -1, "nothing sent yet");
    s_dispatch ("model-a");
    cr_expect (sl_delivery_dispatched (d));
    cr_assert_eq (sl_delivery_job (d, codec, &out), 0);
    cr_expect_eq (out.type, SL_MSG_REQ);
    cr_expect_eq (memcmp (out.sid, sid, SL_SID_SIZE), 0);
    cr_expect (sl_str_eq (out.model, "model-a"));
    s_feed (0, 0, SL_F_FIRST, "", NULL);
    cr_assert_eq (sl_delivery_job (d, codec, &out), -1, "a frame came: an ingest has it");
    cr_expect_eq (sl_delivery_resend (d, codec, &out), -1);
}

Test (sl_delivery, a_keepalive_shows_an_ingest_has_the_job)
{
    sl_msg_t out;
    s_dispatch ("m");
    s_keepalive (0, 0, SL_F_FIRST, NULL);
    cr_expect_eq (sl_delivery_job (d, codec, &out), -1);
}

Test (sl_delivery, a_stale_frame_leaves_the_job_kept)
{
    sl_msg_t out;
    s_feed (1, 0, SL_F_FIRST, "a", NULL);
    s_dispatch ("m");
    cr_assert_eq (s_feed (0, 1, 0, "b", NULL), SL_DELIVERY_STALE);
    cr_expect_eq (sl_delivery_job (d, codec, &out), 0);
}

Test (sl_delivery, the_job_goes_to_another_ingest_a_bounded_number_of_times)
{
    sl_msg_t out;
    s_dispatch ("m");
    for (int i = 0; i < SL_DELIVERY_MAX_RESENDS; i++)
        cr_assert_eq (sl_delivery_resend (d, codec, &out), 0, "resend %d", i + 1);
    cr_expect_eq (sl_delivery_resend (d, codec, &out), -1, "enough ingests tried");
    cr_expect_eq (sl_delivery_job (d, codec, &out), 0, "its own ingest, back, may still have it again");
}
