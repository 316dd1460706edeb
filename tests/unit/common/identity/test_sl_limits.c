/*  Unit tests: common/identity/sl_limits - the windows of UTC minutes,
    days and months (month lengths, leap years, the year's turn), the plan
    a request's subjects make, and the store of one process admitting,
    refusing and counting usage. */
#include <criterion/criterion.h>
#include <stdio.h>
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

//  Alerts: what the store's hook heard.
typedef struct {
    int kind [16], at [16];
    int64_t used [16], limit [16];
    char key [16][SL_LIMITS_KEY_MAX];
    size_t count;
} s_heard_t;

static void
s_heard (void *arg, const sl_limits_plan_t *plan, const sl_limits_alert_t *alert)
{
    s_heard_t *h = arg;
    if (h->count >= 16)
        return;
    const sl_limits_counter_t *c = &plan->counters [alert->counter];
    h->kind [h->count] = c->kind;
    h->at [h->count] = alert->at;
    h->used [h->count] = alert->used;
    h->limit [h->count] = alert->limit;
    snprintf (h->key [h->count], SL_LIMITS_KEY_MAX, "%s", c->key);
    h->count++;
}

Test (sl_limits, a_threshold_is_crossed_once_when_usage_reaches_it)
{
    sl_limits_spec_t spec = { .alert_at = { 50, 80, 100 }, .alert_count = 3 };
    int at [SL_LIMITS_ALERTS_MAX];
    cr_expect_eq (sl_limits_crossed (&spec, 0, 499, 1000, at), 0, "below 50 %");
    cr_assert_eq (sl_limits_crossed (&spec, 499, 500, 1000, at), 1, "reaching 50 % exactly crosses it");
    cr_expect_eq (at [0], 50);
    cr_expect_eq (sl_limits_crossed (&spec, 500, 790, 1000, at), 0, "50 % is behind, 80 % ahead");
    cr_assert_eq (sl_limits_crossed (&spec, 10, 1200, 1000, at), 3, "one addition past all three");
    cr_expect_eq (at [0], 50);
    cr_expect_eq (at [1], 80);
    cr_expect_eq (at [2], 100);
    cr_expect_eq (sl_limits_crossed (&spec, 1200, 1500, 1000, at), 0, "past 100 %, nothing more");
    //  A mark rounds up: 50 % of 3 tokens is reached at 2.
    cr_expect_eq (sl_limits_crossed (&spec, 0, 1, 3, at), 0);
    cr_expect_eq (sl_limits_crossed (&spec, 1, 2, 3, at), 1);
    //  The largest limits do not overflow.
    int64_t big = INT64_MAX / 2;
    cr_assert_eq (sl_limits_crossed (&spec, big / 2 - 1, big / 2 + 1, big, at), 1);
    cr_expect_eq (at [0], 50);
    cr_expect_eq (sl_limits_crossed (&spec, 0, 1000, 0, at), 0, "no limit, no alert");
    sl_limits_spec_t none = { .tokens_per_day = 10 };
    cr_expect_eq (sl_limits_crossed (&none, 0, 10, 10, at), 0, "no thresholds, no alert");
}

Test (sl_limits, the_store_reports_each_crossing_once_per_day_and_month)
{
    sl_limits_store_t *store = sl_limits_memory_new ();
    s_heard_t heard = { .count = 0 };
    sl_limits_store_alerts (store, s_heard, &heard);
    sl_limits_spec_t team = { .tokens_per_day = 100, .budget_tokens = 1000, .alert_at = { 50, 80, 100 },
                              .alert_count = 3 };
    sl_limits_subject_t s = { "team:payments", &team };
    sl_limits_plan_t plan;
    sl_limits_plan (&plan, &s, 1, T_FEB28 - 60, "a");
    store->finish (store, &plan, 40, 0);
    cr_expect_eq (heard.count, 0, "40 of 100 a day: below 50 %");
    store->finish (store, &plan, 10, 0);
    cr_assert_eq (heard.count, 1, "50 of 100 a day");
    cr_expect_eq (heard.kind [0], SL_LIMIT_TOKENS_PER_DAY);
    cr_expect_eq (heard.at [0], 50);
    cr_expect_eq (heard.used [0], 50);
    cr_expect_eq (heard.limit [0], 100);
    cr_expect_str_eq (heard.key [0], "sluice:tpd:team:payments:20280228");
    for (int i = 0; i < 5; i++)
        store->finish (store, &plan, 5, 0);
    cr_expect_eq (heard.count, 1, "more requests past 50 % and below 80 %: nothing more");
    //  One stream past 80 % and 100 % of the day, and 50 % of the month (530 of 1000).
    store->finish (store, &plan, 455, 0);
    cr_assert_eq (heard.count, 4);
    cr_expect_eq (heard.kind [1], SL_LIMIT_TOKENS_PER_DAY);
    cr_expect_eq (heard.at [1], 80);
    cr_expect_eq (heard.at [2], 100);
    cr_expect_eq (heard.kind [3], SL_LIMIT_BUDGET_TOKENS);
    cr_expect_eq (heard.at [3], 50);
    cr_expect_eq (heard.used [3], 530);
    store->finish (store, &plan, 10, 0);
    cr_expect_eq (heard.count, 4, "every day threshold has fired this day");
    //  The next day: the day's thresholds again (the month's counter goes on).
    sl_limits_plan (&plan, &s, 1, T_FEB28 + 60, "b");
    store->finish (store, &plan, 60, 0);
    cr_assert_eq (heard.count, 5, "a new day re-arms the day's 50 %");
    cr_expect_eq (heard.kind [4], SL_LIMIT_TOKENS_PER_DAY);
    cr_expect_eq (heard.at [4], 50);
    cr_expect_str_eq (heard.key [4], "sluice:tpd:team:payments:20280229");
    cr_expect_eq (sl_limits_memory_value (store, plan.counters [1].key, plan.now), 600);
    sl_limits_store_destroy (&store);
}

Test (sl_limits, a_new_month_re_arms_the_budget_thresholds)
{
    sl_limits_store_t *store = sl_limits_memory_new ();
    s_heard_t heard = { .count = 0 };
    sl_limits_store_alerts (store, s_heard, &heard);
    sl_limits_spec_t key = { .budget_usd = 1.0, .alert_at = { 80 }, .alert_count = 1 };
    sl_limits_subject_t s = { "key:alice", &key };
    sl_limits_plan_t plan;
    sl_limits_plan (&plan, &s, 1, T_NEWYEAR - 10, "a");
    store->finish (store, &plan, 0, 900000);
    store->finish (store, &plan, 0, 50000);
    cr_assert_eq (heard.count, 1, "80 %% of a dollar, once in December");
    cr_expect_eq (heard.kind [0], SL_LIMIT_BUDGET_USD);
    cr_expect_eq (heard.used [0], 900000);
    cr_expect_eq (heard.limit [0], 1000000);
    sl_limits_plan (&plan, &s, 1, T_NEWYEAR + 1, "b");
    store->finish (store, &plan, 0, 800000);
    cr_assert_eq (heard.count, 2, "and once again in January");
    cr_expect_str_eq (heard.key [1], "sluice:busd:key:alice:202801");
    sl_limits_store_destroy (&store);
}

static int64_t s_used [SL_LIMIT_KIND_MAX];

static void
s_on_used (void *arg, const sl_limits_plan_t *plan, int counter, int64_t used)
{
    (void) arg;
    s_used [plan->counters [counter].kind] = used;
}

Test (sl_limits, the_store_tells_what_each_counter_of_usage_holds)
{
    sl_limits_store_t *store = sl_limits_memory_new ();
    sl_limits_store_used (store, s_on_used, NULL);
    memset (s_used, 0, sizeof s_used);
    sl_limits_spec_t team = { .rpm = 10, .budget_tokens = 1000, .budget_usd = 1.0 };
    sl_limits_subject_t s = { "team:payments", &team };
    sl_limits_plan_t plan;
    sl_limits_plan (&plan, &s, 1, T_FEB28, "a");
    store->finish (store, &plan, 300, 250000);
    store->finish (store, &plan, 100, 0);
    cr_expect_eq (s_used [SL_LIMIT_BUDGET_TOKENS], 400, "the month's tokens after both");
    cr_expect_eq (s_used [SL_LIMIT_BUDGET_USD], 250000, "nothing added, nothing told");
    cr_expect_eq (s_used [SL_LIMIT_RPM], 0, "requests are not usage");
    sl_limits_store_destroy (&store);
}
