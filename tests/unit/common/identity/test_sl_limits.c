/*  Unit tests: common/identity/sl_limits - the windows of UTC minutes,
    days and months (month lengths, leap years, the year's turn), the plan
    a request's subjects make, and the store of one process admitting,
    refusing and counting usage. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/identity/sl_limits.h"

//  2028-02-28 23:59:30 UTC (2028 is a leap year).
#define T_FEB28 1835395170
//  2027-12-31 23:59:59 UTC.
#define T_NEWYEAR 1830297599

static sl_limits_answer_t s_last;

static void
s_done (void *arg, const sl_limits_answer_t *answer)
{
    (void) arg;
    s_last = *answer;
}

static const sl_limits_answer_t *
s_ask (sl_limits_store_t *store, const sl_limits_plan_t *plan)
{
    memset (&s_last, 0xff, sizeof s_last);
    store->admit (store, plan, s_done, NULL);
    return &s_last;
}

Test (sl_limits, windows_are_utc_minutes_days_and_months)
{
    sl_limits_windows_t w;
    sl_limits_windows (T_FEB28, &w);
    cr_expect_eq (w.day, 20280228);
    cr_expect_eq (w.month, 202802);
    cr_expect_eq (w.minute_end - T_FEB28, 30, "the next minute in 30 s");
    cr_expect_eq (w.day_end - T_FEB28, 30, "the next day too");
    cr_expect_eq (w.month_end - T_FEB28, 30 + 86400, "a leap February has a 29th");
    sl_limits_windows (T_FEB28 + 86400, &w);
    cr_expect_eq (w.day, 20280229);
    sl_limits_windows (T_FEB28 + 2 * 86400, &w);
    cr_expect_eq (w.day, 20280301);
    cr_expect_eq (w.month, 202803);
    sl_limits_windows (T_NEWYEAR, &w);
    cr_expect_eq (w.day, 20271231);
    cr_expect_eq (w.month, 202712);
    cr_expect_eq (w.month_end, T_NEWYEAR + 1, "December ends at the year's turn");
    sl_limits_windows (T_NEWYEAR + 1, &w);
    cr_expect_eq (w.day, 20280101);
    cr_expect_eq (w.month, 202801);
    sl_limits_windows (0, &w);
    cr_expect_eq (w.day, 19700101);
}

Test (sl_limits, a_plan_has_a_counter_for_every_limit_set)
{
    sl_limits_spec_t key = { .rpm = 60, .concurrent = 2 };
    sl_limits_spec_t team = { .tokens_per_day = 1000, .budget_tokens = 50000, .budget_usd = 12.5 };
    sl_limits_subject_t subjects [] = { { "key:alice", &key }, { "team:payments", &team }, { "team:none", NULL } };
    sl_limits_plan_t plan;
    sl_limits_plan (&plan, subjects, 3, T_FEB28, "ab12");
    cr_assert_eq (plan.count, 5);
    cr_expect_str_eq (plan.counters [0].key, "sluice:rpm:key:alice:30589919");
    cr_expect_eq (plan.counters [0].retry_at - T_FEB28, 30);
    cr_expect_str_eq (plan.counters [1].key, "sluice:conc:key:alice");
    cr_expect_str_eq (plan.counters [2].key, "sluice:tpd:team:payments:20280228");
    cr_expect_str_eq (plan.counters [3].key, "sluice:btok:team:payments:202802");
    cr_expect_str_eq (plan.counters [4].key, "sluice:busd:team:payments:202802");
    cr_expect_eq (plan.counters [4].limit, 12500000, "micro-dollars");
    cr_expect_eq (plan.counters [2].add, 0, "usage is added at the end, not on admission");
    cr_expect_eq (plan.subject_count, 2, "a subject without limits has no counters");
    cr_expect_str_eq (sl_limits_kind_name (plan.counters [2].kind), "tokens_per_day");
}

Test (sl_limits, requests_a_minute_are_refused_past_the_limit_until_the_next_minute)
{
    sl_limits_store_t *store = sl_limits_memory_new ();
    sl_limits_spec_t key = { .rpm = 3 };
    sl_limits_subject_t s = { "key:k", &key };
    sl_limits_plan_t plan;
    for (int i = 0; i < 3; i++) {
        sl_limits_plan (&plan, &s, 1, T_FEB28, "s");
        cr_expect_eq (s_ask (store, &plan)->outcome, SL_LIMITS_ADMITTED, "request %d", i);
    }
    sl_limits_plan (&plan, &s, 1, T_FEB28 + 5, "s");
    const sl_limits_answer_t *a = s_ask (store, &plan);
    cr_expect_eq (a->outcome, SL_LIMITS_REFUSED);
    cr_expect_eq (a->refused, 0);
    cr_expect_eq (a->retry_after, 25, "the minute ends in 25 s");
    cr_expect_eq (sl_limits_memory_value (store, plan.counters [0].key, T_FEB28 + 5), 3, "a refusal counts nothing");
    sl_limits_plan (&plan, &s, 1, T_FEB28 + 30, "s");
    cr_expect_eq (s_ask (store, &plan)->outcome, SL_LIMITS_ADMITTED, "a new minute");
    sl_limits_store_destroy (&store);
    sl_limits_store_destroy (&store);
}

Test (sl_limits, streams_at_once_hold_their_place_until_they_end_or_their_lease_does)
{
    sl_limits_store_t *store = sl_limits_memory_new ();
    sl_limits_spec_t key = { .concurrent = 2 };
    sl_limits_subject_t s = { "key:k", &key };
    sl_limits_plan_t a, b, c;
    sl_limits_plan (&a, &s, 1, T_FEB28, "a");
    sl_limits_plan (&b, &s, 1, T_FEB28, "b");
    sl_limits_plan (&c, &s, 1, T_FEB28, "c");
    cr_expect_eq (s_ask (store, &a)->outcome, SL_LIMITS_ADMITTED);
    cr_expect_eq (s_ask (store, &b)->outcome, SL_LIMITS_ADMITTED);
    cr_expect_eq (s_ask (store, &c)->outcome, SL_LIMITS_REFUSED, "a third at once");
    store->finish (store, &a, 0, 0);
    cr_expect_eq (s_ask (store, &c)->outcome, SL_LIMITS_ADMITTED, "a's place is free");
    //  A gateway that died never ends b and c: their leases do.
    sl_limits_plan_t d;
    sl_limits_plan (&d, &s, 1, T_FEB28 + SL_LIMITS_LEASE_S, "d");
    cr_expect_eq (s_ask (store, &d)->outcome, SL_LIMITS_ADMITTED);
    sl_limits_store_destroy (&store);
}

//  A stream longer than a lease keeps its place while its gateway renews
//  it; once renewing stops (the gateway died), the place goes a lease later.
Test (sl_limits, a_renewed_stream_keeps_its_place_past_the_lease)
{
    sl_limits_store_t *store = sl_limits_memory_new ();
    sl_limits_spec_t key = { .concurrent = 1 };
    sl_limits_subject_t s = { "key:k", &key };
    sl_limits_plan_t a, later, last;
    sl_limits_plan (&a, &s, 1, T_FEB28, "a");
    cr_expect_eq (s_ask (store, &a)->outcome, SL_LIMITS_ADMITTED);
    int64_t t = T_FEB28;
    for (int i = 0; i < 4; i++) {
        t += SL_LIMITS_RENEW_S;
        store->renew (store, &a, t);
    }
    sl_limits_plan (&later, &s, 1, T_FEB28 + SL_LIMITS_LEASE_S + 1, "b");
    cr_expect_eq (s_ask (store, &later)->outcome, SL_LIMITS_REFUSED, "a is still under way past its first lease");
    cr_expect_eq (sl_limits_memory_value (store, later.counters [0].key, later.now), 1);
    sl_limits_plan (&last, &s, 1, t + SL_LIMITS_LEASE_S, "c");
    cr_expect_eq (s_ask (store, &last)->outcome, SL_LIMITS_ADMITTED, "a lease after the last renewal, a is gone");
    sl_limits_store_destroy (&store);
}

Test (sl_limits, tokens_a_day_and_budgets_a_month_stop_the_next_request)
{
    sl_limits_store_t *store = sl_limits_memory_new ();
    sl_limits_spec_t team = { .tokens_per_day = 1000, .budget_usd = 0.01 };
    sl_limits_subject_t s = { "team:t", &team };
    sl_limits_plan_t plan;
    sl_limits_plan (&plan, &s, 1, T_FEB28, "x");
    cr_expect_eq (s_ask (store, &plan)->outcome, SL_LIMITS_ADMITTED);
    //  The stream under way spends past the day's tokens: it is not cut;
    //  the next request is refused until the day ends.
    store->finish (store, &plan, 1200, sl_limits_usd_micro (1000, 200, 2.5, 10.0));
    sl_limits_plan (&plan, &s, 1, T_FEB28 + 10, "y");
    const sl_limits_answer_t *a = s_ask (store, &plan);
    cr_expect_eq (a->outcome, SL_LIMITS_REFUSED);
    cr_expect_eq (plan.counters [a->refused].kind, SL_LIMIT_TOKENS_PER_DAY);
    cr_expect_eq (a->retry_after, 20, "until midnight UTC");
    //  The next day the tokens are new; the money is the month's: 4.5 mills of 10.
    sl_limits_plan (&plan, &s, 1, T_FEB28 + 40, "z");
    cr_expect_eq (s_ask (store, &plan)->outcome, SL_LIMITS_ADMITTED);
    cr_expect_eq (sl_limits_memory_value (store, plan.counters [1].key, T_FEB28 + 40), 4500);
    store->finish (store, &plan, 10, sl_limits_usd_micro (100000, 100000, 2.5, 10.0));
    sl_limits_plan (&plan, &s, 1, T_FEB28 + 50, "w");
    a = s_ask (store, &plan);
    cr_expect_eq (a->outcome, SL_LIMITS_REFUSED);
    cr_expect_eq (plan.counters [a->refused].kind, SL_LIMIT_BUDGET_USD);
    cr_expect_eq (a->retry_after, 30 + 86400 - 50, "until March");
    cr_expect_eq (sl_limits_usd_micro (1000000, 0, 2.5, 10.0), 2500000);
    sl_limits_store_destroy (&store);
}
