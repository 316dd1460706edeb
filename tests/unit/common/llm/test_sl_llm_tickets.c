/*  Unit tests: common/llm/sl_llm_tickets (the LLM-judge asks in flight). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/llm/sl_llm_tickets.h"

static void
s_sid (uint8_t sid [SL_SID_SIZE], uint8_t fill)
{
    memset (sid, fill, SL_SID_SIZE);
}

//  Records the tickets a drop cancels.
typedef struct {
    uint64_t tickets [16];
    size_t count;
    sl_llm_tickets_t *table;            //  to look at the table from inside cancel
    size_t left_in_table;
} s_cancelled_t;

static void
s_cancel (void *arg, uint64_t ticket)
{
    s_cancelled_t *c = arg;
    c->tickets [c->count++] = ticket;
    if (c->table)
        c->left_in_table = sl_llm_tickets_count (c->table);
}

Test (sl_llm_tickets, ticket_numbers_are_new_each_time)
{
    sl_llm_tickets_t *t = sl_llm_tickets_new ();
    cr_expect_eq (sl_llm_tickets_next (t), 1);
    cr_expect_eq (sl_llm_tickets_next (t), 2);
    cr_expect_eq (sl_llm_tickets_next (t), 3, "a number given and never added is not given again");
    cr_expect_eq (sl_llm_tickets_count (t), 0, "numbers alone are not asks in flight");
    sl_llm_tickets_destroy (&t);
    cr_expect_null (t);
    sl_llm_tickets_destroy (&t);        //  twice is safe
}

Test (sl_llm_tickets, a_ticket_taken_gives_back_its_stream_and_tag_once)
{
    sl_llm_tickets_t *t = sl_llm_tickets_new ();
    uint8_t a [SL_SID_SIZE], b [SL_SID_SIZE], out [SL_SID_SIZE];
    s_sid (a, 0xaa);
    s_sid (b, 0xbb);
    uint64_t ta = sl_llm_tickets_next (t), tb = sl_llm_tickets_next (t);
    sl_llm_tickets_add (t, ta, a, 7);
    sl_llm_tickets_add (t, tb, b, 3);
    cr_expect_eq (sl_llm_tickets_count (t), 2);

    size_t tag = 0;
    cr_assert (sl_llm_tickets_take (t, tb, out, &tag));
    cr_expect_eq (memcmp (out, b, SL_SID_SIZE), 0);
    cr_expect_eq (tag, 3);
    cr_expect_eq (sl_llm_tickets_count (t), 1);
    cr_expect_not (sl_llm_tickets_take (t, tb, out, &tag), "an outcome comes once");

    memset (out, 0, sizeof out);
    tag = 99;
    cr_expect_not (sl_llm_tickets_take (t, 12345, out, &tag), "never added");
    cr_expect_eq (tag, 99, "nothing written for an unknown ticket");
    cr_expect_eq (out [0], 0);

    cr_assert (sl_llm_tickets_take (t, ta, NULL, NULL), "stream and tag are optional");
    cr_expect_eq (sl_llm_tickets_count (t), 0);
    sl_llm_tickets_destroy (&t);
}

Test (sl_llm_tickets, a_stream_that_goes_drops_and_cancels_its_tickets_only)
{
    sl_llm_tickets_t *t = sl_llm_tickets_new ();
    uint8_t a [SL_SID_SIZE], b [SL_SID_SIZE], out [SL_SID_SIZE];
    s_sid (a, 0xaa);
    s_sid (b, 0xbb);
    sl_llm_tickets_add (t, 1, a, 0);
    sl_llm_tickets_add (t, 2, b, 0);
    sl_llm_tickets_add (t, 3, a, 1);
    sl_llm_tickets_add (t, 4, a, 2);
    sl_llm_tickets_add (t, 5, b, 1);

    s_cancelled_t c = { .table = t };
    cr_expect_eq (sl_llm_tickets_drop_stream (t, a, s_cancel, &c), 3);
    cr_assert_eq (c.count, 3);
    cr_expect_eq (c.tickets [0], 1);
    cr_expect_eq (c.tickets [1], 3);
    cr_expect_eq (c.tickets [2], 4);
    cr_expect_eq (c.left_in_table, 2, "each ticket is out of the table when its cancel runs");
    cr_expect_eq (sl_llm_tickets_count (t), 2);
    cr_expect_not (sl_llm_tickets_take (t, 3, NULL, NULL), "dropped: its outcome is ignored");

    size_t tag;
    cr_assert (sl_llm_tickets_take (t, 5, out, &tag), "the other stream's asks stay");
    cr_expect_eq (memcmp (out, b, SL_SID_SIZE), 0);
    cr_expect_eq (tag, 1);

    cr_expect_eq (sl_llm_tickets_drop_stream (t, a, NULL, NULL), 0, "nothing left of it");
    cr_expect_eq (sl_llm_tickets_drop_stream (t, b, NULL, NULL), 1, "without a cancel, only dropped");
    cr_expect_eq (sl_llm_tickets_count (t), 0);
    sl_llm_tickets_destroy (&t);
}

Test (sl_llm_tickets, the_table_grows_past_its_first_capacity)
{
    sl_llm_tickets_t *t = sl_llm_tickets_new ();
    uint8_t sid [SL_SID_SIZE];
    for (size_t i = 0; i < 100; i++) {
        s_sid (sid, (uint8_t) (i % 4));
        sl_llm_tickets_add (t, sl_llm_tickets_next (t), sid, i);
    }
    cr_expect_eq (sl_llm_tickets_count (t), 100);
    size_t tag;
    for (uint64_t ticket = 100; ticket >= 1; ticket--) {
        cr_assert (sl_llm_tickets_take (t, ticket, sid, &tag), "ticket %llu", (unsigned long long) ticket);
        cr_expect_eq (tag, ticket - 1);
        cr_expect_eq (sid [0], (uint8_t) ((ticket - 1) % 4));
    }
    cr_expect_eq (sl_llm_tickets_count (t), 0);
    sl_llm_tickets_destroy (&t);
}
