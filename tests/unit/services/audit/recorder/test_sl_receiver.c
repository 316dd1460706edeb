/*  Unit tests: services/audit/recorder/sl_receiver (records from one emitter, once
    and in order; what the acknowledgements say). */
#include <criterion/criterion.h>

#include "services/audit/recorder/sl_receiver.h"
#include "common/stages/sl_spool.h"

Test (sl_receiver, takes_each_record_once_in_order_from_where_the_emitter_starts)
{
    sl_receiver_t rx = { 0 };
    sl_msg_t rack;
    sl_receiver_rack (&rx, &rack);
    cr_expect_eq (rack.incarnation, 0, "a hello: it knows no emitter yet");
    //  The emitter starts at its oldest unacknowledged record, 41.
    cr_expect_eq (sl_receiver_offer (&rx, 9, 41), SL_RECEIVER_TAKE);
    cr_expect_eq (sl_receiver_offer (&rx, 9, 42), SL_RECEIVER_TAKE);
    cr_expect_eq (sl_receiver_offer (&rx, 9, 42), SL_RECEIVER_DUPLICATE);
    cr_expect_eq (sl_receiver_offer (&rx, 9, 41), SL_RECEIVER_DUPLICATE);
    cr_expect_eq (sl_receiver_offer (&rx, 9, 0), SL_RECEIVER_DUPLICATE, "numbers start at 1");
    cr_expect_not (sl_receiver_news (&rx), "nothing committed yet");
    sl_receiver_commit (&rx);
    cr_expect (sl_receiver_news (&rx));
    sl_receiver_rack (&rx, &rack);
    cr_expect_eq (rack.type, SL_MSG_RACK);
    cr_expect_eq (rack.incarnation, 9);
    cr_expect_eq (rack.seq, 42);
    cr_expect_eq (rack.kind, SL_RACK_ACK);
    cr_expect_not (sl_receiver_news (&rx));
}

Test (sl_receiver, a_hole_asks_once_for_a_resend)
{
    sl_receiver_t rx = { 0 };
    cr_expect_eq (sl_receiver_offer (&rx, 5, 1), SL_RECEIVER_TAKE);
    sl_receiver_commit (&rx);
    cr_expect_eq (sl_receiver_offer (&rx, 5, 3), SL_RECEIVER_HOLE);
    cr_expect_eq (sl_receiver_offer (&rx, 5, 4), SL_RECEIVER_HOLE);
    sl_msg_t rack;
    sl_receiver_rack (&rx, &rack);
    cr_expect_eq (rack.kind, SL_RACK_RESEND);
    cr_expect_eq (rack.seq, 1);
    cr_expect_eq (sl_receiver_offer (&rx, 5, 5), SL_RECEIVER_HOLE);
    sl_receiver_rack (&rx, &rack);
    cr_expect_eq (rack.kind, SL_RACK_ACK, "asked once, until something comes in order");
    cr_expect_eq (sl_receiver_offer (&rx, 5, 2), SL_RECEIVER_TAKE);
}

Test (sl_receiver, a_rolled_back_batch_is_asked_for_again)
{
    sl_receiver_t rx = { 0 };
    sl_receiver_offer (&rx, 5, 1);
    sl_receiver_commit (&rx);
    cr_expect_eq (sl_receiver_offer (&rx, 5, 2), SL_RECEIVER_TAKE);
    cr_expect_eq (sl_receiver_offer (&rx, 5, 3), SL_RECEIVER_TAKE);
    sl_receiver_abort (&rx);
    sl_msg_t rack;
    sl_receiver_rack (&rx, &rack);
    cr_expect_eq (rack.kind, SL_RACK_RESEND);
    cr_expect_eq (rack.seq, 1);
    cr_expect_eq (sl_receiver_offer (&rx, 5, 2), SL_RECEIVER_TAKE, "taken again when it comes again");
}

Test (sl_receiver, a_new_emitter_incarnation_starts_over)
{
    sl_receiver_t rx = { 0 };
    sl_receiver_offer (&rx, 5, 100);
    sl_receiver_commit (&rx);
    cr_expect_eq (sl_receiver_offer (&rx, 6, 1), SL_RECEIVER_TAKE, "the emitter restarted: its records start at 1");
    sl_receiver_commit (&rx);
    sl_msg_t rack;
    sl_receiver_rack (&rx, &rack);
    cr_expect_eq (rack.incarnation, 6);
    cr_expect_eq (rack.seq, 1);
}
