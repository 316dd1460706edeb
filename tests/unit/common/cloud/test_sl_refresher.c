/*  Unit tests: common/cloud/sl_refresher - a credential's refresh in the
    reactor: waiters told once, after the fetch, never from within their
    own call; a refresh ahead of expiry while the current one serves; a
    failure told to the waiters and tried again while a valid one serves,
    at once on the next need when none is left; cancelled waits never
    told. Real zloop timers, every run bounded. */
#include <criterion/criterion.h>
#include <czmq.h>
#include <string.h>

#include "common/cloud/sl_refresher.h"

#define RUN_BOUND_MS 3000

typedef struct {
    sl_refresher_t *r;
    int fetches;
    const char *fail_at_once;           //  the fetch fails inside its call with this
} s_source_t;

typedef struct {
    int told;
    char error [256];
    bool inside;                        //  told from within sl_refresher_need
} s_waiter_t;

static bool s_in_need;

static void
s_fetch (void *arg)
{
    s_source_t *src = arg;
    src->fetches++;
    if (src->fail_at_once)
        sl_refresher_failed (src->r, src->fail_at_once);
}

static void
s_told (void *arg, const char *error)
{
    s_waiter_t *w = arg;
    w->told++;
    w->inside |= s_in_need;
    snprintf (w->error, sizeof w->error, "%s", error ? error : "");
}

static int
s_need (sl_refresher_t *r, s_waiter_t *w, uint64_t *id)
{
    s_in_need = true;
    int rc = sl_refresher_need (r, s_told, w, id);
    s_in_need = false;
    return rc;
}

//  Run the loop until *flag turns true, or for ms when flag is NULL.
typedef struct {
    const bool *flag;
    const int *count;
    int want;
} s_until_t;

static int
s_on_check (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_until_t *u = arg;
    return u->count && *u->count >= u->want ? -1 : 0;
}

static int
s_on_deadline (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    (void) arg;
    return -1;
}

static void
s_run (zloop_t *loop, const int *count, int want, int ms)
{
    s_until_t u = { NULL, count, want };
    int check = zloop_timer (loop, 5, 0, s_on_check, &u);
    int deadline = zloop_timer (loop, (size_t) ms, 1, s_on_deadline, NULL);
    zloop_start (loop);
    zloop_timer_end (loop, check);
    zloop_timer_end (loop, deadline);
}

Test (sl_refresher, waiters_told_once_after_the_fetch)
{
    zloop_t *loop = zloop_new ();
    s_source_t src = { 0 };
    src.r = sl_refresher_new (loop, NULL, s_fetch, &src);
    s_waiter_t a = { 0 }, b = { 0 };
    uint64_t ia, ib;
    cr_expect_eq (s_need (src.r, &a, &ia), 1);
    cr_expect_eq (s_need (src.r, &b, &ib), 1);
    cr_expect_eq (src.fetches, 1, "one fetch for both");
    cr_expect_not (sl_refresher_valid (src.r));
    sl_refresher_fetched (src.r, zclock_time () + 3600 * 1000);
    cr_expect_eq (a.told, 0, "not from within fetched");
    s_run (loop, &b.told, 1, RUN_BOUND_MS);
    cr_expect_eq (a.told, 1);
    cr_expect_eq (b.told, 1);
    cr_expect_str_eq (a.error, "");
    s_waiter_t c = { 0 };
    uint64_t ic;
    cr_expect_eq (s_need (src.r, &c, &ic), 0, "held now");
    cr_expect_eq (src.fetches, 1);
    sl_refresher_destroy (&src.r);
    zloop_destroy (&loop);
}

Test (sl_refresher, refreshed_ahead_while_the_current_serves)
{
    zloop_t *loop = zloop_new ();
    s_source_t src = { 0 };
    sl_refresher_timing_t timing = { .margin_ms = 10000, .grace_ms = 1000 };
    src.r = sl_refresher_new (loop, &timing, s_fetch, &src);
    sl_refresher_kick (src.r);
    cr_expect_eq (src.fetches, 1);
    //  Expires in 10.2 s: fetched again in 0.2 s, valid meanwhile.
    sl_refresher_fetched (src.r, zclock_time () + 10200);
    s_waiter_t w = { 0 };
    uint64_t id;
    cr_expect_eq (s_need (src.r, &w, &id), 0);
    s_run (loop, &src.fetches, 2, RUN_BOUND_MS);
    cr_expect_eq (src.fetches, 2, "fetched ahead of expiry");
    cr_expect_eq (s_need (src.r, &w, &id), 0, "the current one still serves during the refresh");
    cr_expect_eq (w.told, 0);
    sl_refresher_destroy (&src.r);
    zloop_destroy (&loop);
}

Test (sl_refresher, a_failure_told_then_tried_again_at_the_next_need)
{
    zloop_t *loop = zloop_new ();
    s_source_t src = { .fail_at_once = "the token file /x cannot be read" };
    src.r = sl_refresher_new (loop, NULL, s_fetch, &src);
    s_waiter_t w = { 0 };
    uint64_t id;
    cr_expect_eq (s_need (src.r, &w, &id), 1, "a failure inside the fetch is not told from need");
    cr_expect_eq (w.told, 0);
    s_run (loop, &w.told, 1, RUN_BOUND_MS);
    cr_expect_eq (w.told, 1);
    cr_expect_not (w.inside);
    cr_expect_str_eq (w.error, "the token file /x cannot be read");
    cr_expect_str_eq (sl_refresher_error (src.r), "the token file /x cannot be read");
    //  No credential left: the next request tries again at once.
    src.fail_at_once = NULL;
    s_waiter_t w2 = { 0 };
    cr_expect_eq (s_need (src.r, &w2, &id), 1);
    cr_expect_eq (src.fetches, 2);
    sl_refresher_fetched (src.r, 0);
    s_run (loop, &w2.told, 1, RUN_BOUND_MS);
    cr_expect_str_eq (w2.error, "");
    cr_expect_str_eq (sl_refresher_error (src.r), "");
    cr_expect_eq (sl_refresher_failures (src.r), 1);
    sl_refresher_destroy (&src.r);
    zloop_destroy (&loop);
}

Test (sl_refresher, a_failed_refresh_retried_after_a_backoff)
{
    zloop_t *loop = zloop_new ();
    s_source_t src = { 0 };
    sl_refresher_timing_t timing = { .margin_ms = 60000 };
    src.r = sl_refresher_new (loop, &timing, s_fetch, &src);
    sl_refresher_kick (src.r);
    sl_refresher_fetched (src.r, zclock_time () + 600 * 1000);
    sl_refresher_kick (src.r);                  //  a refresh, which fails
    cr_expect_eq (src.fetches, 2);
    sl_refresher_failed (src.r, "STS answered HTTP 503");
    s_waiter_t w = { 0 };
    uint64_t id;
    cr_expect_eq (s_need (src.r, &w, &id), 0, "the current one serves on");
    s_run (loop, &src.fetches, 3, RUN_BOUND_MS);
    cr_expect_eq (src.fetches, 3, "tried again after the first backoff (1 s)");
    sl_refresher_destroy (&src.r);
    zloop_destroy (&loop);
}

Test (sl_refresher, a_short_lived_credential_is_not_fetched_in_a_loop)
{
    zloop_t *loop = zloop_new ();
    s_source_t src = { 0 };
    sl_refresher_timing_t timing = { .margin_ms = 60000, .grace_ms = 1000 };
    src.r = sl_refresher_new (loop, &timing, s_fetch, &src);
    sl_refresher_kick (src.r);
    //  10 s of life, under the 60 s margin: fetched again in 5 s, not now.
    sl_refresher_fetched (src.r, zclock_time () + 10000);
    s_run (loop, &src.fetches, 2, 500);
    cr_expect_eq (src.fetches, 1);
    cr_expect (sl_refresher_valid (src.r));
    sl_refresher_destroy (&src.r);
    zloop_destroy (&loop);
}

Test (sl_refresher, a_cancelled_wait_is_never_told)
{
    zloop_t *loop = zloop_new ();
    s_source_t src = { 0 };
    src.r = sl_refresher_new (loop, NULL, s_fetch, &src);
    s_waiter_t a = { 0 }, b = { 0 };
    uint64_t ia, ib;
    s_need (src.r, &a, &ia);
    s_need (src.r, &b, &ib);
    sl_refresher_cancel (src.r, ia);
    sl_refresher_cancel (src.r, 12345);
    sl_refresher_fetched (src.r, 0);
    s_run (loop, &b.told, 1, RUN_BOUND_MS);
    cr_expect_eq (a.told, 0);
    cr_expect_eq (b.told, 1);
    sl_refresher_destroy (&src.r);
    zloop_destroy (&loop);
}

Test (sl_refresher, near_its_expiry_a_credential_is_not_used)
{
    zloop_t *loop = zloop_new ();
    s_source_t src = { 0 };
    sl_refresher_timing_t timing = { .grace_ms = 30000, .margin_ms = 60000 };
    src.r = sl_refresher_new (loop, &timing, s_fetch, &src);
    sl_refresher_kick (src.r);
    sl_refresher_fetched (src.r, zclock_time () + 20000);     //  inside the grace
    cr_expect_not (sl_refresher_valid (src.r));
    s_waiter_t w = { 0 };
    uint64_t id;
    cr_expect_eq (s_need (src.r, &w, &id), 1, "waits for a fresh one");
    sl_refresher_destroy (&src.r);
    zloop_destroy (&loop);
}
