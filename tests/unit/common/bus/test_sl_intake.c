/*  Unit tests: common/bus/sl_intake, the streams a stage takes in. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/bus/sl_intake.h"

static sl_msg_t
s_msg (int stream, int type, uint32_t epoch, uint64_t seq)
{
    sl_msg_t m;
    sl_msg_init (&m, type);
    memset (m.sid, 0x5A, SL_SID_SIZE);
    m.sid [0] = (uint8_t) stream;
    m.epoch = epoch;
    m.seq = seq;
    return m;
}

static sl_intake_verdict_t
s_admit (sl_intake_t *in, int stream, int type, uint32_t epoch, uint64_t seq, const char *from, int64_t now)
{
    sl_msg_t m = s_msg (stream, type, epoch, seq);
    return sl_intake_admit (in, &m, sl_str (from), now);
}

Test (sl_intake, messages_pass_in_order_and_duplicates_are_skipped)
{
    sl_intake_t *in = sl_intake_new (0, 0);
    cr_expect_eq (s_admit (in, 1, SL_MSG_START, 0, 0, "a", 0), SL_INTAKE_PASS);
    cr_expect_eq (sl_intake_open (in), 1);
    cr_expect_eq (s_admit (in, 1, SL_MSG_DELTA, 0, 1, "a", 0), SL_INTAKE_PASS);
    cr_expect_eq (s_admit (in, 1, SL_MSG_DELTA, 0, 1, "a", 0), SL_INTAKE_SKIP, "a duplicate");
    cr_expect_eq (s_admit (in, 1, SL_MSG_START, 0, 0, "a", 0), SL_INTAKE_SKIP, "a duplicate start");
    //  A keep-alive carries the next number without taking it.
    sl_msg_t ka = s_msg (1, SL_MSG_BLOCK, 0, 2);
    ka.kind = SL_B_KEEPALIVE;
    cr_expect_eq (sl_intake_admit (in, &ka, sl_str ("a"), 0), SL_INTAKE_PASS);
    cr_expect_eq (sl_intake_admit (in, &ka, sl_str ("a"), 0), SL_INTAKE_PASS, "as often as it comes");
    cr_expect_eq (s_admit (in, 1, SL_MSG_BLOCK, 0, 2, "a", 0), SL_INTAKE_PASS);
    cr_expect_eq (s_admit (in, 1, SL_MSG_END, 0, 3, "a", 0), SL_INTAKE_PASS);
    cr_expect_eq (sl_intake_open (in), 0, "an ended stream is not open");
    cr_expect_eq (s_admit (in, 1, SL_MSG_DELTA, 0, 4, "a", 0), SL_INTAKE_SKIP, "nothing after the end");
    //  A stream never started here is the stage's to drop.
    cr_expect_eq (s_admit (in, 9, SL_MSG_DELTA, 0, 5, "a", 0), SL_INTAKE_PASS);
    sl_intake_destroy (&in);
    sl_intake_destroy (&in);
}

Test (sl_intake, a_gap_breaks_the_stream_until_a_newer_epoch)
{
    sl_intake_t *in = sl_intake_new (0, 0);
    s_admit (in, 1, SL_MSG_START, 0, 0, "a", 0);
    cr_expect_eq (s_admit (in, 1, SL_MSG_DELTA, 0, 2, "b", 0), SL_INTAKE_GAP, "seq 1 never came");
    cr_expect_eq (s_admit (in, 1, SL_MSG_DELTA, 0, 3, "b", 0), SL_INTAKE_SKIP, "the rest of the epoch");
    cr_expect_eq (s_admit (in, 1, SL_MSG_END, 0, 4, "b", 0), SL_INTAKE_SKIP);
    cr_expect_eq (sl_intake_open (in), 1, "still held: the stage has its start");
    //  The lost notice goes to whoever sent the message after the gap.
    sl_str_t origin;
    uint32_t epoch;
    cr_assert (sl_intake_origin (in, (uint8_t []) { 1, 0x5A, 0x5A, 0x5A, 0x5A, 0x5A, 0x5A, 0x5A, 0x5A, 0x5A,
                                                    0x5A, 0x5A, 0x5A, 0x5A, 0x5A, 0x5A }, &origin, &epoch));
    cr_expect (sl_str_eq (origin, "b"));
    cr_expect_eq (epoch, 0);
    //  The re-send restarts it in place.
    cr_expect_eq (s_admit (in, 1, SL_MSG_START, 1, 0, "a", 0), SL_INTAKE_PASS);
    cr_expect_eq (s_admit (in, 1, SL_MSG_DELTA, 1, 1, "a", 0), SL_INTAKE_PASS);
    cr_expect_eq (s_admit (in, 1, SL_MSG_DELTA, 0, 5, "a", 0), SL_INTAKE_SKIP, "an older epoch");
    cr_expect_eq (sl_intake_open (in), 1);
    //  A newer epoch whose start never came is broken from its start.
    cr_expect_eq (s_admit (in, 1, SL_MSG_DELTA, 2, 3, "a", 0), SL_INTAKE_GAP);
    cr_expect_eq (s_admit (in, 1, SL_MSG_DELTA, 2, 4, "a", 0), SL_INTAKE_SKIP);
    cr_expect_eq (sl_intake_open (in), 1);
    sl_intake_destroy (&in);
}

Test (sl_intake, starts_beyond_the_bound_are_refused)
{
    sl_intake_t *in = sl_intake_new (2, 0);
    cr_expect_eq (s_admit (in, 1, SL_MSG_START, 0, 0, "a", 0), SL_INTAKE_PASS);
    cr_expect_eq (s_admit (in, 2, SL_MSG_START, 0, 0, "a", 0), SL_INTAKE_PASS);
    cr_expect_eq (s_admit (in, 3, SL_MSG_START, 0, 0, "a", 0), SL_INTAKE_REFUSE);
    cr_expect_eq (s_admit (in, 3, SL_MSG_DELTA, 0, 1, "a", 0), SL_INTAKE_SKIP, "the rest of a refused stream");
    cr_expect_eq (sl_intake_open (in), 2);
    //  A re-send of a stream held here takes no new room.
    cr_expect_eq (s_admit (in, 2, SL_MSG_START, 1, 0, "a", 0), SL_INTAKE_PASS);
    cr_expect_eq (sl_intake_open (in), 2);
    //  Room again once one ends; a refused stream's re-send may then start.
    s_admit (in, 1, SL_MSG_END, 0, 1, "a", 0);
    cr_expect_eq (s_admit (in, 3, SL_MSG_START, 1, 0, "a", 0), SL_INTAKE_PASS);
    cr_expect_eq (s_admit (in, 4, SL_MSG_START, 0, 0, "a", 0), SL_INTAKE_REFUSE);
    cr_expect_eq (sl_intake_open (in), 2);
    sl_intake_destroy (&in);
}

typedef struct {
    int count;
    uint8_t last_sid;
    uint32_t last_epoch;
    char origin [8];
} s_expired_t;

static void
s_on_expired (void *arg, const uint8_t *sid, uint32_t epoch, sl_str_t origin)
{
    s_expired_t *e = arg;
    e->count++;
    e->last_sid = sid [0];
    e->last_epoch = epoch;
    snprintf (e->origin, sizeof e->origin, "%.*s", (int) origin.len, origin.ptr);
}

Test (sl_intake, a_silent_stream_expires_once_and_is_forgotten)
{
    sl_intake_t *in = sl_intake_new (0, 1000);
    s_expired_t seen = { 0 };
    s_admit (in, 1, SL_MSG_START, 3, 0, "a", 0);
    s_admit (in, 2, SL_MSG_START, 0, 0, "b", 0);
    s_admit (in, 2, SL_MSG_DELTA, 0, 1, "c", 900);
    cr_expect_eq (sl_intake_expire (in, 1000, s_on_expired, &seen), 0, "not silent long enough");
    cr_expect_eq (sl_intake_expire (in, 1001, s_on_expired, &seen), 1);
    cr_expect_eq (seen.last_sid, 1);
    cr_expect_eq (seen.last_epoch, 3);
    cr_expect_str_eq (seen.origin, "a");
    cr_expect_eq (sl_intake_open (in), 1);
    cr_expect_eq (sl_intake_expire (in, 1500, s_on_expired, &seen), 0, "once");
    cr_expect_eq (s_admit (in, 1, SL_MSG_DELTA, 3, 1, "a", 1500), SL_INTAKE_SKIP, "more of an expired stream");
    cr_expect_eq (sl_intake_expire (in, 1901, s_on_expired, &seen), 1, "the other one, last heard at 900");
    cr_expect_str_eq (seen.origin, "c", "from the instance that last sent it");
    cr_expect_eq (sl_intake_open (in), 0);
    //  Remembered for the grace (a `lost` for it still finds its origin), then forgotten.
    sl_str_t origin;
    uint32_t epoch;
    sl_msg_t one = s_msg (1, SL_MSG_END, 3, 0);
    cr_expect (sl_intake_origin (in, one.sid, &origin, &epoch));
    sl_intake_expire (in, 1001 + SL_INTAKE_GRACE_MS + 1, s_on_expired, &seen);
    cr_expect_not (sl_intake_origin (in, one.sid, &origin, &epoch));
    cr_expect_eq (seen.count, 2);
    sl_intake_destroy (&in);
}

Test (sl_intake, a_stream_an_earlier_stage_refused_passes_whatever_the_bound)
{
    sl_intake_t *in = sl_intake_new (1, 0);
    cr_expect_eq (s_admit (in, 1, SL_MSG_START, 0, 0, "a", 0), SL_INTAKE_PASS);
    sl_msg_t refused = s_msg (2, SL_MSG_START, 0, 0);
    refused.flags = SL_F_REFUSED;
    cr_expect_eq (sl_intake_admit (in, &refused, sl_str ("a"), 0), SL_INTAKE_PASS,
                  "its error and end follow: it is passed on, not refused again");
    cr_expect_eq (s_admit (in, 2, SL_MSG_ERROR, 0, 1, "a", 0), SL_INTAKE_PASS);
    cr_expect_eq (s_admit (in, 2, SL_MSG_END, 0, 2, "a", 0), SL_INTAKE_PASS);
    cr_expect_eq (sl_intake_open (in), 1);
    sl_intake_destroy (&in);
}

typedef struct {
    int count;
    int streams [4];
    char origins [4][8];
} s_seen_t;

static void
s_collect (void *arg, const uint8_t *sid, uint32_t epoch, sl_str_t origin)
{
    (void) epoch;
    s_seen_t *seen = arg;
    if (seen->count < 4) {
        seen->streams [seen->count] = sid [0];
        snprintf (seen->origins [seen->count], sizeof seen->origins [0], "%.*s", (int) origin.len, origin.ptr);
    }
    seen->count++;
}

Test (sl_intake, each_open_visits_the_streams_held_with_their_origins)
{
    sl_intake_t *in = sl_intake_new (0, 0);
    s_admit (in, 1, SL_MSG_START, 0, 0, "a", 0);
    s_admit (in, 2, SL_MSG_START, 0, 0, "b", 0);
    s_admit (in, 2, SL_MSG_END, 0, 1, "b", 0);      //  ended: not held
    s_admit (in, 3, SL_MSG_START, 0, 0, "c", 0);
    s_admit (in, 3, SL_MSG_DELTA, 0, 5, "c", 0);    //  broken by a gap: still held
    s_seen_t seen = { 0 };
    sl_intake_each_open (in, s_collect, &seen);
    cr_expect_eq (seen.count, 2);
    cr_expect_eq (sl_intake_open (in), 2);
    int mask = 0;
    for (int i = 0; i < seen.count && i < 4; i++) {
        mask |= 1 << seen.streams [i];
        cr_expect_str_eq (seen.origins [i], seen.streams [i] == 1 ? "a" : "c");
    }
    cr_expect_eq (mask, (1 << 1) | (1 << 3), "streams 1 and 3, not the ended 2");
    sl_intake_destroy (&in);
}
