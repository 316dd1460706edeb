/*  Unit tests: common/http/sl_hookpost (a webhook's posts: the queue over
    curl). A real HTTP server (sl_httpd) on 127.0.0.1 in the same reactor
    takes the posts: a signed post is signed again at each attempt with
    that attempt's time, a token goes as a bearer, a Retry-After the
    server sends is waited out, an event that never goes through is given
    up after its last attempt, a full queue drops and counts. Each reactor
    run is bounded in time. */
#include <criterion/criterion.h>
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/http/sl_hookpost.h"
#include "common/http/sl_httpd.h"

#define S_DEADLINE_MS 10000             //  a reactor run ends by then, whatever happened
#define S_TICK_MS 5
#define S_MAX_BODY 4096
#define S_MAX_POSTS 8
#define S_SECRET "hook-secret"

//  What the server saw of each post, and what it answers.
typedef struct {
    int posts;
    int64_t at [S_MAX_POSTS];           //  when each arrived (ms)
    char timestamp [S_MAX_POSTS][24];
    char signature [S_MAX_POSTS][80];
    char authorization [S_MAX_POSTS][80];
    char body [S_MAX_POSTS][128];
    int fail_first;                     //  answer 503 to this many posts first
    const char *retry_after;            //  with this Retry-After, or NULL
    sl_hookpost_t *hook;
    int wanted;                         //  the run ends when this many posts came
} s_server_t;

static void
s_copy_header (sl_http_req_t *req, const char *name, char *out, size_t size)
{
    const char *v = sl_http_req_header (req, name);
    snprintf (out, size, "%s", v ? v : "");
}

static void
s_on_request (void *arg, sl_http_req_t *req)
{
    s_server_t *s = arg;
    int i = s->posts++;
    if (i < S_MAX_POSTS) {
        s->at [i] = zclock_mono ();
        s_copy_header (req, "X-Sluice-Timestamp", s->timestamp [i], sizeof s->timestamp [i]);
        s_copy_header (req, "X-Sluice-Signature", s->signature [i], sizeof s->signature [i]);
        s_copy_header (req, "Authorization", s->authorization [i], sizeof s->authorization [i]);
        sl_str_t body = sl_http_req_body (req);
        snprintf (s->body [i], sizeof s->body [i], "%.*s", (int) body.len, body.ptr ? body.ptr : "");
    }
    if (i < s->fail_first) {
        if (s->retry_after)
            sl_http_add_header (req, "Retry-After", s->retry_after);
        sl_http_respond (req, 503, "text/plain", "busy", 4);
    }
    else
        sl_http_respond (req, 200, "text/plain", "ok", 2);
}

static void
s_on_closed (void *arg, sl_http_req_t *req, bool aborted)
{
    (void) arg;
    (void) req;
    (void) aborted;
}

typedef struct {
    sl_httpd_t *httpd;
    s_server_t *server;
} s_run_t;

static int
s_tick (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_run_t *r = arg;
    sl_httpd_run (r->httpd);
    bool settled = sl_hookpost_queued (r->server->hook) == 0;
    return r->server->posts >= r->server->wanted && settled ? -1 : 0;
}

static int
s_deadline (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    (void) arg;
    return -1;
}

//  Start a server and a hook posting to it; push the bodies; run the
//  reactor until `wanted` posts came and the queue is empty (or the
//  deadline). Returns the hook's stats copied; counters filled.
static sl_webhook_stats_t
s_run (s_server_t *server, const char *secret, const char *token, int attempts, size_t max_queue,
       const char **bodies, int count, sl_hookpost_counters_t *counters, int *refused)
{
    zloop_t *loop = zloop_new ();
    sl_httpd_t *httpd = sl_httpd_new (loop, "127.0.0.1", 0, S_MAX_BODY, s_on_request, s_on_closed, server);
    cr_assert_not_null (httpd);
    char url [64];
    snprintf (url, sizeof url, "http://127.0.0.1:%d/hook", sl_httpd_port (httpd));
    sl_hookpost_config_t config = {
        .url = url, .secret = secret, .token = token, .user_agent = "sluice-test", .log_name = "test_hook",
        .what = "a test event", .log_body = true, .timeout_ms = 5000, .tick_ms = 20,
        .queue = { max_queue, attempts, 10, 5000, 2 },
    };
    server->hook = sl_hookpost_new (loop, &config, counters);
    *refused = 0;
    for (int i = 0; i < count; i++)
        if (sl_hookpost_push (server->hook, (sl_str_t) { bodies [i], strlen (bodies [i]) }))
            (*refused)++;
    s_run_t r = { httpd, server };
    zloop_timer (loop, S_TICK_MS, 0, s_tick, &r);
    zloop_timer (loop, S_DEADLINE_MS, 1, s_deadline, NULL);
    zloop_start (loop);
    sl_webhook_stats_t stats = *sl_hookpost_stats (server->hook);
    sl_hookpost_destroy (&server->hook);
    cr_expect_null (server->hook);
    sl_httpd_destroy (&httpd);
    zloop_destroy (&loop);
    return stats;
}

Test (sl_hookpost, each_attempt_is_signed_with_its_own_time_and_retry_after_is_waited)
{
    s_server_t server = { .fail_first = 1, .retry_after = "1", .wanted = 2 };
    sl_counter_t sent = { 0 }, failures = { 0 }, dropped = { 0 }, given_up = { 0 };
    sl_hookpost_counters_t counters = { &sent, &failures, &dropped, &given_up };
    const char *bodies [] = { "{\"type\":\"approval\"}" };
    int refused;
    sl_webhook_stats_t st = s_run (&server, S_SECRET, NULL, 3, 4, bodies, 1, &counters, &refused);
    cr_assert_eq (server.posts, 2, "one refused post, one taken: %d", server.posts);
    cr_expect_eq (refused, 0);
    for (int i = 0; i < 2; i++) {
        cr_expect_str_eq (server.body [i], bodies [0]);
        char want [SL_WEBHOOK_SIGNATURE_HEX], header [80];
        sl_webhook_sign (S_SECRET, atoll (server.timestamp [i]), (sl_str_t) { bodies [0], strlen (bodies [0]) }, want);
        snprintf (header, sizeof header, "sha256=%s", want);
        cr_expect_str_eq (server.signature [i], header, "attempt %d signed over its own timestamp", i + 1);
        cr_expect_str_eq (server.authorization [i], "", "no token given, none sent");
    }
    //  The queue's own backoff is 10 ms: only the server's Retry-After
    //  makes the second attempt wait a second.
    cr_expect_geq (server.at [1] - server.at [0], 900, "retried after %lld ms",
                   (long long) (server.at [1] - server.at [0]));
    cr_expect_eq (st.sent, 1);
    cr_expect_eq (st.failures, 1);
    cr_expect_eq (sent.value, 1, "the caller's counters follow the queue");
    cr_expect_eq (failures.value, 1);
    cr_expect_eq (given_up.value, 0);
}

Test (sl_hookpost, a_token_goes_as_a_bearer_and_nothing_is_signed)
{
    s_server_t server = { .wanted = 1 };
    const char *bodies [] = { "{\"type\":\"verdict\"}" };
    int refused;
    sl_webhook_stats_t st = s_run (&server, NULL, "tok-123", 3, 4, bodies, 1, NULL, &refused);
    cr_assert_eq (server.posts, 1);
    cr_expect_str_eq (server.authorization [0], "Bearer tok-123");
    cr_expect_str_eq (server.signature [0], "");
    cr_expect_str_eq (server.timestamp [0], "");
    cr_expect_eq (st.sent, 1);
}

Test (sl_hookpost, an_event_never_taken_is_given_up_after_its_last_attempt)
{
    s_server_t server = { .fail_first = S_MAX_POSTS, .wanted = 2 };
    sl_counter_t sent = { 0 }, failures = { 0 }, dropped = { 0 }, given_up = { 0 };
    sl_hookpost_counters_t counters = { &sent, &failures, &dropped, &given_up };
    const char *bodies [] = { "{\"n\":1}" };
    int refused;
    sl_webhook_stats_t st = s_run (&server, S_SECRET, NULL, 2, 4, bodies, 1, &counters, &refused);
    cr_expect_eq (server.posts, 2, "two attempts, no third: %d", server.posts);
    cr_expect_eq (st.given_up, 1);
    cr_expect_eq (given_up.value, 1);
    cr_expect_eq (failures.value, 2);
    cr_expect_eq (sent.value, 0);
}

Test (sl_hookpost, a_full_queue_drops_and_counts)
{
    s_server_t server = { .wanted = 2 };
    sl_counter_t dropped = { 0 };
    sl_hookpost_counters_t counters = { NULL, NULL, &dropped, NULL };
    const char *bodies [] = { "{\"n\":1}", "{\"n\":2}", "{\"n\":3}" };
    int refused;
    sl_webhook_stats_t st = s_run (&server, S_SECRET, NULL, 3, 2, bodies, 3, &counters, &refused);
    cr_expect_eq (refused, 1, "the third of a queue of two is refused");
    cr_expect_eq (st.dropped, 1);
    cr_expect_eq (dropped.value, 1);
    cr_expect_eq (server.posts, 2);
    cr_expect_eq (st.sent, 2);
}
