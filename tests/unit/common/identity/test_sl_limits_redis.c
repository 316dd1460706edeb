/*  Unit tests: common/identity/sl_limits_redis - the limits store in a
    real redis-server (started by the test on a free loopback port), in a
    zloop as the gateway runs it: admission and refusal, usage at the end,
    and what a missing, stopped or garbage-answering server gives. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <czmq.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/identity/sl_limits_redis.h"
#include "tests/redistmp.h"

#define WAIT_MS 5000
#define NOW 1835395170

static redistmp_t s_redis;

//  Run the loop until the store answers (or WAIT_MS).
typedef struct {
    bool done;
    sl_limits_answer_t answer;
} s_wait_t;

static void
s_done (void *arg, const sl_limits_answer_t *answer)
{
    s_wait_t *w = arg;
    w->done = true;
    w->answer = *answer;
}

static int
s_check (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    return ((s_wait_t *) arg)->done ? -1 : 0;
}

static sl_limits_answer_t
s_ask (zloop_t *loop, sl_limits_store_t *store, const sl_limits_plan_t *plan)
{
    s_wait_t w = { 0 };
    store->admit (store, plan, s_done, &w);
    if (!w.done) {
        int poll = zloop_timer (loop, 2, 0, s_check, &w);
        int stop = zloop_timer (loop, WAIT_MS, 1, s_check, &(s_wait_t) { .done = true });
        zloop_start (loop);
        zloop_timer_end (loop, poll);
        zloop_timer_end (loop, stop);
    }
    cr_assert (w.done, "the store answered within %d ms", WAIT_MS);
    return w.answer;
}

//  Let the loop run a while (writes go out).
static void
s_spin (zloop_t *loop, int ms)
{
    zloop_timer (loop, (size_t) ms, 1, s_check, &(s_wait_t) { .done = true });
    zloop_start (loop);
}

static void
s_teardown (void)
{
    redistmp_stop (&s_redis);
}

TestSuite (sl_limits_redis, .fini = s_teardown);

Test (sl_limits_redis, admits_refuses_and_counts_across_connections)
{
    cr_assert (redistmp_start (&s_redis, 0), "redis-server runs (make deps installs it)");
    zloop_t *loop = zloop_new ();
    char url [64];
    snprintf (url, sizeof url, "redis://127.0.0.1:%d/0", s_redis.port);
    const char *error = NULL;
    sl_limits_store_t *a = sl_limits_redis_new (loop, url, 1000, &error);
    sl_limits_store_t *b = sl_limits_redis_new (loop, url, 1000, &error);   //  a second gateway
    cr_assert_not_null (a, "%s", error);
    sl_limits_spec_t key = { .rpm = 3, .concurrent = 2, .tokens_per_day = 100 };
    sl_limits_subject_t s = { "key:k", &key };
    sl_limits_plan_t plans [4];
    for (int i = 0; i < 4; i++) {
        char stream [16];
        snprintf (stream, sizeof stream, "s%d", i);
        sl_limits_plan (&plans [i], &s, 1, NOW, stream);
    }
    cr_expect_eq (s_ask (loop, a, &plans [0]).outcome, SL_LIMITS_ADMITTED);
    cr_expect_eq (s_ask (loop, b, &plans [1]).outcome, SL_LIMITS_ADMITTED, "the other gateway, the same counters");
    sl_limits_answer_t r = s_ask (loop, a, &plans [2]);
    cr_expect_eq (r.outcome, SL_LIMITS_REFUSED, "two streams at once");
    cr_expect_eq (plans [2].counters [r.refused].kind, SL_LIMIT_CONCURRENT);
    cr_expect_eq (redistmp_integer (&s_redis, "GET sluice:rpm:key:k:30589919"), 2, "a refusal adds nothing to any counter");
    //  A stream ends, with usage: its place frees, its tokens count.
    a->finish (a, &plans [0], 120, 0);
    s_spin (loop, 50);
    cr_expect_eq (redistmp_integer (&s_redis, "ZCARD sluice:conc:key:k"), 1);
    cr_expect_eq (redistmp_integer (&s_redis, "GET sluice:tpd:key:k:20280228"), 120);
    r = s_ask (loop, b, &plans [3]);
    cr_expect_eq (r.outcome, SL_LIMITS_REFUSED, "the day's tokens are spent");
    cr_expect_eq (plans [3].counters [r.refused].kind, SL_LIMIT_TOKENS_PER_DAY);
    cr_expect_eq (r.retry_after, 30, "until midnight UTC");
    cr_expect_gt (redistmp_integer (&s_redis, "TTL sluice:rpm:key:k:30589919"), 0, "counters expire");
    //  A live stream renewed: its place held a lease from the renewal.
    b->renew (b, &plans [1], NOW + SL_LIMITS_RENEW_S);
    s_spin (loop, 50);
    cr_expect_eq (redistmp_integer (&s_redis, "ZSCORE sluice:conc:key:k s1"), NOW + SL_LIMITS_RENEW_S + SL_LIMITS_LEASE_S);
    cr_expect_eq (redistmp_integer (&s_redis, "ZCARD sluice:conc:key:k"), 1);
    sl_limits_store_destroy (&a);
    sl_limits_store_destroy (&b);
    zloop_destroy (&loop);
}

Test (sl_limits_redis, a_missing_or_stopped_server_is_unreachable_never_a_pass)
{
    cr_assert (redistmp_start (&s_redis, 0));
    zloop_t *loop = zloop_new ();
    char url [64];
    snprintf (url, sizeof url, "redis://127.0.0.1:%d", s_redis.port);
    const char *error = NULL;
    sl_limits_store_t *store = sl_limits_redis_new (loop, url, 200, &error);
    sl_limits_spec_t key = { .rpm = 100 };
    sl_limits_subject_t s = { "key:k", &key };
    sl_limits_plan_t plan;
    sl_limits_plan (&plan, &s, 1, NOW, "x");
    cr_expect_eq (s_ask (loop, store, &plan).outcome, SL_LIMITS_ADMITTED);
    //  Stopped: the answer does not come in time.
    kill (s_redis.pid, SIGSTOP);
    sl_limits_answer_t r = s_ask (loop, store, &plan);
    cr_expect_eq (r.outcome, SL_LIMITS_UNREACHABLE);
    cr_expect_not_null (strstr (r.why, "in time"), "%s", r.why);
    //  Gone: the connection is lost, then cannot be made.
    redistmp_stop (&s_redis);
    r = s_ask (loop, store, &plan);
    cr_expect_eq (r.outcome, SL_LIMITS_UNREACHABLE, "%s", r.why);
    s_spin (loop, 50);
    r = s_ask (loop, store, &plan);
    cr_expect_eq (r.outcome, SL_LIMITS_UNREACHABLE);
    cr_expect_not (sl_limits_redis_connected (store));
    sl_limits_store_destroy (&store);
    zloop_destroy (&loop);
    cr_expect_null (sl_limits_redis_new (NULL, "http://x", 100, &error));
    cr_expect_not_null (error);
}

//  A gateway that starts before its Redis: the first connection cannot
//  be made (the attempt is under way when the store is made, and fails in
//  the loop). That is unreachable, and the store connects once the server
//  is there.
Test (sl_limits_redis, a_server_not_there_yet_is_unreachable_then_used)
{
    int port = redistmp_free_port ();
    zloop_t *loop = zloop_new ();
    char url [64];
    snprintf (url, sizeof url, "redis://127.0.0.1:%d/0", port);
    const char *error = NULL;
    sl_limits_store_t *store = sl_limits_redis_new (loop, url, 200, &error);
    cr_assert_not_null (store, "%s", error);
    sl_limits_spec_t key = { .rpm = 100 };
    sl_limits_subject_t s = { "key:k", &key };
    sl_limits_plan_t plan;
    sl_limits_plan (&plan, &s, 1, NOW, "x");
    sl_limits_answer_t r = s_ask (loop, store, &plan);
    cr_expect_eq (r.outcome, SL_LIMITS_UNREACHABLE, "%s", r.why);
    s_spin (loop, 50);
    cr_expect_not (sl_limits_redis_connected (store));
    cr_expect_eq (s_ask (loop, store, &plan).outcome, SL_LIMITS_UNREACHABLE);
    cr_assert (redistmp_start (&s_redis, port));
    sl_limits_answer_t got = { .outcome = SL_LIMITS_UNREACHABLE };
    for (int64_t deadline = zclock_mono () + WAIT_MS;
         got.outcome != SL_LIMITS_ADMITTED && zclock_mono () < deadline;) {
        s_spin (loop, 100);             //  a new attempt at most once a second
        got = s_ask (loop, store, &plan);
    }
    cr_expect_eq (got.outcome, SL_LIMITS_ADMITTED, "once the server is there: %s", got.why ? got.why : "");
    sl_limits_store_destroy (&store);
    zloop_destroy (&loop);
}

//  Once this returns, every reply the store had waiting was handled, and
//  whatever it sent in handling them has run: two admissions of another
//  subject on the same connection, each answered after what was sent
//  before it.
static void
s_barrier (zloop_t *loop, sl_limits_store_t *store)
{
    sl_limits_spec_t spec = { .rpm = 1000 };
    sl_limits_subject_t other = { "key:barrier", &spec };
    for (int i = 0; i < 2; i++) {
        sl_limits_plan_t plan;
        sl_limits_plan (&plan, &other, 1, NOW, "barrier");
        cr_assert_eq (s_ask (loop, store, &plan).outcome, SL_LIMITS_ADMITTED);
    }
}

//  A stall longer than the timeout: the caller is told Redis did not
//  answer (and holds no place), then Redis runs the script and counts the
//  stream. The store takes that back, or the stream would hold a
//  concurrent place for a whole lease.
Test (sl_limits_redis, a_late_admission_is_taken_back)
{
    cr_assert (redistmp_start (&s_redis, 0));
    zloop_t *loop = zloop_new ();
    char url [64];
    snprintf (url, sizeof url, "redis://127.0.0.1:%d", s_redis.port);
    const char *error = NULL;
    sl_limits_store_t *store = sl_limits_redis_new (loop, url, 100, &error);
    cr_assert_not_null (store, "%s", error);
    sl_limits_spec_t key = { .rpm = 10, .concurrent = 2 };
    sl_limits_subject_t s = { "key:k", &key };
    sl_limits_plan_t first, late, last;
    sl_limits_plan (&first, &s, 1, NOW, "s1");
    sl_limits_plan (&late, &s, 1, NOW, "s2");
    sl_limits_plan (&last, &s, 1, NOW, "s3");
    cr_expect_eq (s_ask (loop, store, &first).outcome, SL_LIMITS_ADMITTED);
    //  Stalled: the script waits in the stopped server's socket.
    kill (s_redis.pid, SIGSTOP);
    sl_limits_answer_t r = s_ask (loop, store, &late);
    cr_expect_eq (r.outcome, SL_LIMITS_UNREACHABLE);
    memset (&late, 0, sizeof late);     //  the caller let its plan go with that answer
    kill (s_redis.pid, SIGCONT);
    //  The script runs, answers "counted"; what it counted goes.
    s_barrier (loop, store);
    cr_expect_eq (redistmp_integer (&s_redis, "ZCARD sluice:conc:key:k"), 1, "only the first stream holds a place");
    cr_expect_eq (redistmp_integer (&s_redis, "ZSCORE sluice:conc:key:k s2"), 0, "the late one holds none");
    cr_expect_eq (redistmp_integer (&s_redis, "GET sluice:rpm:key:k:30589919"), 1, "one request counted this minute");
    cr_expect_gt (redistmp_integer (&s_redis, "TTL sluice:rpm:key:k:30589919"), 0, "the counter still expires");
    //  So the second place is free for the next stream.
    cr_expect_eq (s_ask (loop, store, &last).outcome, SL_LIMITS_ADMITTED);
    cr_expect_eq (redistmp_integer (&s_redis, "ZCARD sluice:conc:key:k"), 2);
    sl_limits_store_destroy (&store);
    zloop_destroy (&loop);
}

//  A late refusal counted nothing: nothing is taken back.
Test (sl_limits_redis, a_late_refusal_takes_nothing_back)
{
    cr_assert (redistmp_start (&s_redis, 0));
    zloop_t *loop = zloop_new ();
    char url [64];
    snprintf (url, sizeof url, "redis://127.0.0.1:%d", s_redis.port);
    const char *error = NULL;
    sl_limits_store_t *store = sl_limits_redis_new (loop, url, 100, &error);
    cr_assert_not_null (store, "%s", error);
    sl_limits_spec_t key = { .rpm = 10, .concurrent = 1 };
    sl_limits_subject_t s = { "key:k", &key };
    sl_limits_plan_t first, late;
    sl_limits_plan (&first, &s, 1, NOW, "s1");
    sl_limits_plan (&late, &s, 1, NOW, "s2");
    cr_expect_eq (s_ask (loop, store, &first).outcome, SL_LIMITS_ADMITTED);
    kill (s_redis.pid, SIGSTOP);
    cr_expect_eq (s_ask (loop, store, &late).outcome, SL_LIMITS_UNREACHABLE);
    kill (s_redis.pid, SIGCONT);
    s_barrier (loop, store);
    cr_expect_eq (redistmp_integer (&s_redis, "ZSCORE sluice:conc:key:k s1"), NOW + SL_LIMITS_LEASE_S,
                  "the first stream keeps its place");
    cr_expect_eq (redistmp_integer (&s_redis, "GET sluice:rpm:key:k:30589919"), 1);
    sl_limits_store_destroy (&store);
    zloop_destroy (&loop);
}

//  A server that answers every command with a string: what the script
//  never returns.
static void *
s_garbage (void *arg)
{
    int listener = *(int *) arg;
    int fd = accept (listener, NULL, NULL);
    char buf [65536];
    for (int i = 0; i < 100 && fd >= 0; i++) {
        ssize_t n = recv (fd, buf, sizeof buf, 0);
        if (n <= 0)
            break;
        if (send (fd, "$7\r\ngarbage\r\n", 13, MSG_NOSIGNAL) < 0)
            break;
    }
    if (fd >= 0)
        close (fd);
    return NULL;
}

Test (sl_limits_redis, a_garbage_answer_is_unreachable)
{
    int listener = socket (AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    cr_assert_eq (bind (listener, (struct sockaddr *) &a, sizeof a), 0);
    listen (listener, 1);
    socklen_t len = sizeof a;
    getsockname (listener, (struct sockaddr *) &a, &len);
    pthread_t thread;
    pthread_create (&thread, NULL, s_garbage, &listener);
    zloop_t *loop = zloop_new ();
    char url [64];
    snprintf (url, sizeof url, "redis://127.0.0.1:%d", ntohs (a.sin_port));
    const char *error = NULL;
    sl_limits_store_t *store = sl_limits_redis_new (loop, url, 1000, &error);
    sl_limits_spec_t key = { .rpm = 100 };
    sl_limits_subject_t s = { "key:k", &key };
    sl_limits_plan_t plan;
    sl_limits_plan (&plan, &s, 1, NOW, "x");
    sl_limits_answer_t r = s_ask (loop, store, &plan);
    cr_expect_eq (r.outcome, SL_LIMITS_UNREACHABLE);
    cr_expect_not_null (strstr (r.why, "never returns"), "%s", r.why);
    sl_limits_store_destroy (&store);
    zloop_destroy (&loop);
    shutdown (listener, SHUT_RDWR);
    close (listener);
    pthread_join (thread, NULL);
}

//  Alerts: the thresholds the stores' hook heard.
typedef struct {
    int at [16];
    int64_t used [16];
    size_t count;
} s_heard_t;

static void
s_heard (void *arg, const sl_limits_plan_t *plan, const sl_limits_alert_t *alert)
{
    (void) plan;
    s_heard_t *h = arg;
    if (h->count < 16) {
        h->at [h->count] = alert->at;
        h->used [h->count] = alert->used;
        h->count++;
    }
}

//  Two gateways add a team's usage to the same counter: each threshold
//  is heard once in all, by the one whose addition crossed it, and a
//  stream crossing two hears both.
Test (sl_limits_redis, each_threshold_is_heard_once_across_gateways)
{
    cr_assert (redistmp_start (&s_redis, 0), "redis-server runs (make deps installs it)");
    zloop_t *loop = zloop_new ();
    char url [64];
    snprintf (url, sizeof url, "redis://127.0.0.1:%d/0", s_redis.port);
    const char *error = NULL;
    sl_limits_store_t *a = sl_limits_redis_new (loop, url, 1000, &error);
    sl_limits_store_t *b = sl_limits_redis_new (loop, url, 1000, &error);
    cr_assert_not_null (a, "%s", error);
    cr_assert_not_null (b, "%s", error);
    s_heard_t heard_a = { .count = 0 }, heard_b = { .count = 0 };
    sl_limits_store_alerts (a, s_heard, &heard_a);
    sl_limits_store_alerts (b, s_heard, &heard_b);
    sl_limits_spec_t team = { .budget_tokens = 1000, .alert_at = { 50, 80, 100 }, .alert_count = 3 };
    sl_limits_subject_t s = { "team:t", &team };
    sl_limits_plan_t plan;
    sl_limits_plan (&plan, &s, 1, NOW, "s");
    a->finish (a, &plan, 400, 0);
    s_spin (loop, 50);
    b->finish (b, &plan, 150, 0);           //  550: b crosses 50 %
    s_spin (loop, 50);
    a->finish (a, &plan, 100, 0);           //  650: nothing
    s_spin (loop, 50);
    a->finish (a, &plan, 400, 0);           //  1050: a crosses 80 % and 100 %
    s_spin (loop, 50);
    b->finish (b, &plan, 10, 0);            //  past every threshold
    s_spin (loop, 50);
    cr_expect_eq (redistmp_integer (&s_redis, "GET sluice:btok:team:t:202802"), 1060);
    cr_assert_eq (heard_b.count, 1);
    cr_expect_eq (heard_b.at [0], 50);
    cr_expect_eq (heard_b.used [0], 550);
    cr_assert_eq (heard_a.count, 2);
    cr_expect_eq (heard_a.at [0], 80);
    cr_expect_eq (heard_a.at [1], 100);
    cr_expect_eq (heard_a.used [1], 1050);
    sl_limits_store_destroy (&a);
    sl_limits_store_destroy (&b);
    zloop_destroy (&loop);
}
