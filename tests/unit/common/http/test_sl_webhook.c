/*  Unit tests: common/http/sl_webhook (the queue, backoff, bound). */
#include <criterion/criterion.h>

#include "common/http/sl_webhook.h"

static sl_webhook_opts_t s_opts = { .max_queue = 3, .max_attempts = 3, .base_ms = 500, .max_ms = 4000,
                                    .concurrency = 2 };

Test (sl_webhook, backoff_doubles_up_to_its_bound)
{
    cr_expect_eq (sl_webhook_backoff (&s_opts, 1), 500);
    cr_expect_eq (sl_webhook_backoff (&s_opts, 2), 1000);
    cr_expect_eq (sl_webhook_backoff (&s_opts, 3), 2000);
    cr_expect_eq (sl_webhook_backoff (&s_opts, 4), 4000);
    cr_expect_eq (sl_webhook_backoff (&s_opts, 30), 4000);
}

Test (sl_webhook, events_are_tried_until_taken_then_given_up)
{
    sl_webhook_t *w = sl_webhook_new (&s_opts);
    cr_assert_eq (sl_webhook_push (w, SL_STR_LIT ("{\"a\":1}"), 0), 0);
    cr_assert_eq (sl_webhook_push (w, SL_STR_LIT ("{\"b\":2}"), 0), 0);
    sl_webhook_event_t *a = sl_webhook_next (w, 0);
    sl_webhook_event_t *b = sl_webhook_next (w, 0);
    cr_assert_not_null (a);
    cr_assert_not_null (b);
    cr_expect (sl_str_eq (sl_webhook_body (a), "{\"a\":1}"));
    cr_expect_null (sl_webhook_next (w, 0), "at most two in flight");
    cr_expect_not (sl_webhook_done (w, a, true, 0, 10), "taken: gone");
    cr_expect (sl_webhook_done (w, b, false, 0, 10), "failed: again later");
    cr_expect_eq (sl_webhook_next_due (w), 510);
    cr_expect_null (sl_webhook_next (w, 509));
    b = sl_webhook_next (w, 510);
    cr_assert_not_null (b);
    cr_expect_eq (sl_webhook_attempt (b), 2);
    cr_expect (sl_webhook_done (w, b, false, 2000, 600), "a Retry-After within the bound is waited");
    cr_expect_eq (sl_webhook_next_due (w), 2600);
    b = sl_webhook_next (w, 2600);
    cr_expect_not (sl_webhook_done (w, b, false, 0, 2700), "the last attempt failed: given up");
    const sl_webhook_stats_t *st = sl_webhook_stats (w);
    cr_expect_eq (st->sent, 1);
    cr_expect_eq (st->failures, 3);
    cr_expect_eq (st->given_up, 1);
    cr_expect_eq (sl_webhook_queued (w), 0);
    cr_expect_eq (sl_webhook_next_due (w), -1);
    sl_webhook_destroy (&w);
}

Test (sl_webhook, a_full_queue_drops_and_counts)
{
    sl_webhook_t *w = sl_webhook_new (&s_opts);
    for (int i = 0; i < 3; i++)
        cr_expect_eq (sl_webhook_push (w, SL_STR_LIT ("{}"), 0), 0);
    cr_expect_eq (sl_webhook_push (w, SL_STR_LIT ("{}"), 0), -1);
    cr_expect_eq (sl_webhook_stats (w)->dropped, 1);
    cr_expect_eq (sl_webhook_queued (w), 3);
    sl_webhook_destroy (&w);
}
