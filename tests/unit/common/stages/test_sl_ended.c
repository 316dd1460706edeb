/*  test_sl_ended.c - streams ended early, remembered to end them again.
*/
#include <criterion/criterion.h>
#include <string.h>

#include "common/stages/sl_ended.h"

static void
s_sid (uint8_t *sid, uint8_t b)
{
    memset (sid, b, SL_SID_SIZE);
}

Test (sl_ended, a_loss_of_the_remembered_epoch_is_answered_in_the_next)
{
    sl_ended_t *e = sl_ended_new (8, 1000);
    uint8_t sid [SL_SID_SIZE];
    s_sid (sid, 1);
    cr_expect_eq (sl_ended_put (e, sid, 3, sl_str ("START"), "client_cancelled", "gone", 499, 0), 0);
    sl_ended_stream_t s;
    cr_expect_not (sl_ended_lost (e, sid, 2, &s, 10), "an older epoch");
    cr_expect_not (sl_ended_lost (e, sid, 4, &s, 10), "a newer one");
    uint8_t other [SL_SID_SIZE];
    s_sid (other, 2);
    cr_expect_not (sl_ended_lost (e, other, 3, &s, 10), "another stream");
    cr_assert (sl_ended_lost (e, sid, 3, &s, 10));
    cr_expect_eq (s.epoch, 4);
    cr_expect (sl_str_eq (s.start, "START"));
    cr_expect (sl_str_eq (s.code, "client_cancelled"));
    cr_expect (sl_str_eq (s.message, "gone"));
    cr_expect_eq (s.status, 499);
    cr_expect_not (sl_ended_lost (e, sid, 3, &s, 20), "answered once per epoch");
    cr_expect (sl_ended_lost (e, sid, 4, &s, 20));
    cr_expect_eq (s.epoch, 5);
    sl_ended_destroy (&e);
    cr_expect_null (e);
}

Test (sl_ended, each_stream_is_kept_for_its_time_from_its_last_answer)
{
    sl_ended_t *e = sl_ended_new (8, 1000);
    uint8_t a [SL_SID_SIZE], b [SL_SID_SIZE];
    s_sid (a, 1);
    s_sid (b, 2);
    sl_ended_put (e, a, 0, sl_str ("A"), "x", "y", 499, 0);
    sl_ended_put (e, b, 0, sl_str ("B"), "x", "y", 499, 500);
    sl_ended_expire (e, 1000);
    cr_expect_eq (sl_ended_count (e), 2, "not past its time yet");
    sl_ended_stream_t s;
    cr_expect (sl_ended_lost (e, a, 0, &s, 900), "an answer keeps it from then on");
    sl_ended_expire (e, 1600);
    cr_expect_eq (sl_ended_count (e), 1);
    cr_expect (sl_ended_lost (e, a, 1, &s, 1600));
    cr_expect_not (sl_ended_lost (e, b, 0, &s, 1600), "b is forgotten");
    //  Past its time it is not answered, even before a sweep.
    cr_expect_not (sl_ended_lost (e, a, 2, &s, 2601));
    sl_ended_destroy (&e);
}

Test (sl_ended, over_the_bound_the_oldest_is_forgotten_first)
{
    sl_ended_t *e = sl_ended_new (3, 100000);
    uint8_t sid [SL_SID_SIZE];
    for (int i = 0; i < 3; i++) {
        s_sid (sid, (uint8_t) (i + 1));
        cr_expect_eq (sl_ended_put (e, sid, 0, sl_str ("S"), "c", "m", 499, 10 * i), 0);
    }
    //  The same stream again takes no more room.
    s_sid (sid, 2);
    cr_expect_eq (sl_ended_put (e, sid, 1, sl_str ("S"), "c", "m", 499, 30), 0);
    s_sid (sid, 4);
    cr_expect_eq (sl_ended_put (e, sid, 0, sl_str ("S"), "c", "m", 499, 40), 1, "one forgotten for it");
    cr_expect_eq (sl_ended_count (e), 3);
    sl_ended_stream_t s;
    s_sid (sid, 1);
    cr_expect_not (sl_ended_lost (e, sid, 0, &s, 50), "the oldest went");
    s_sid (sid, 2);
    cr_expect (sl_ended_lost (e, sid, 1, &s, 50), "kept at its latest epoch");
    s_sid (sid, 3);
    cr_expect (sl_ended_lost (e, sid, 0, &s, 50));
    sl_ended_destroy (&e);
}
