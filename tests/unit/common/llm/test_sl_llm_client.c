/*  Unit tests: common/llm/sl_llm_client (an ask becomes one HTTP POST in
    the reactor and exactly one outcome: the judge's answer, an error, or a
    timeout; the key is sent in the dialect's header; a cancelled ask
    reports nothing). The judge is an sl_httpd server on 127.0.0.1 in the
    same reactor, so nothing leaves the machine; every loop is bounded by a
    deadline. */
#include <criterion/criterion.h>
#include <czmq.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/http/sl_httpd.h"
#include "common/llm/sl_llm_client.h"

#define S_DEADLINE_MS 10000             //  the reactor stops by then, whatever happened
#define S_ASKS_MAX 4

//  The judge: how it answers, and what it was asked.
typedef struct {
    int status;
    const char *body;                   //  NULL: never answers (the ask times out)
    char auth [128];                    //  the Authorization header it got
    char model [64];                    //  the model the body names
    int requests;
} s_judge_t;

//  The test: outcomes by ticket.
typedef struct {
    s_judge_t judge;
    int outcomes;
    int expected;
    uint64_t tickets [S_ASKS_MAX];
    sl_llm_result_t results [S_ASKS_MAX];
    int linger_ms;                      //  after the outcomes expected, how long to watch for more
    int64_t reached;                    //  when they came (zclock_mono), 0 before
    zloop_t *loop;
} s_test_t;

static void
s_on_request (void *arg, sl_http_req_t *req)
{
    s_judge_t *j = arg;
    j->requests++;
    const char *auth = sl_http_req_header (req, "Authorization");
    snprintf (j->auth, sizeof j->auth, "%s", auth ? auth : "");
    json_t *body = json_loadb (sl_http_req_body (req).ptr, sl_http_req_body (req).len, 0, NULL);
    const char *model = json_string_value (json_object_get (body, "model"));
    snprintf (j->model, sizeof j->model, "%s", model ? model : "");
    json_decref (body);
    if (j->body)
        sl_http_respond (req, j->status, "application/json", j->body, strlen (j->body));
}

static void
s_on_closed (void *arg, sl_http_req_t *req, bool aborted)
{
    (void) arg;
    (void) req;
    (void) aborted;
}

static void
s_done (void *arg, uint64_t ticket, const sl_llm_result_t *result)
{
    s_test_t *t = arg;
    if (t->outcomes < S_ASKS_MAX) {
        t->tickets [t->outcomes] = ticket;
        t->results [t->outcomes] = *result;
        t->results [t->outcomes].explanation = result->explanation ? strdup (result->explanation) : NULL;
        t->results [t->outcomes].error = result->error ? strdup (result->error) : NULL;
    }
    t->outcomes++;
}

static void
s_after (void *arg)
{
    (void) arg;
}

static int
s_tick (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_test_t *t = arg;
    if (t->outcomes < t->expected)
        return 0;
    if (!t->reached)
        t->reached = zclock_mono ();
    return zclock_mono () - t->reached >= t->linger_ms ? -1 : 0;
}

static int
s_deadline (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    (void) arg;
    return -1;
}

//  Ask the judge count times (the last cancel_last: cancelled at once),
//  run the reactor until the outcomes expected came, or the deadline.
static void
s_run (s_test_t *t, int timeout_ms, int count, bool cancel_last)
{
    t->loop = zloop_new ();
    sl_httpd_t *httpd = sl_httpd_new (t->loop, "127.0.0.1", 0, 1 << 20, s_on_request, s_on_closed, &t->judge);
    cr_assert_not_null (httpd);
    sl_metrics_t *metrics = sl_metrics_new ();
    sl_llm_client_t *client = sl_llm_client_new (t->loop, metrics, s_done, s_after, t);
    cr_assert_not_null (client);
    sl_llm_spec_t spec;
    sl_llm_spec_defaults (&spec);
    char url [64];
    snprintf (url, sizeof url, "http://127.0.0.1:%d/v1/chat/completions", sl_httpd_port (httpd));
    spec.url = url;
    spec.model = "judge-1";
    spec.api_key_env = "SL_TEST_JUDGE_KEY";
    spec.timeout_ms = timeout_ms;
    setenv ("SL_TEST_JUDGE_KEY", "sk-test", 1);
    const char body [] = "{\"model\":\"judge-1\",\"messages\":[{\"role\":\"user\",\"content\":\"rm -rf /\"}]}";
    for (int i = 0; i < count; i++) {
        sl_llm_ask_t ask = { .ticket = 100 + (uint64_t) i, .rule = "r", .spec = &spec, .body = sl_str (body) };
        cr_assert_eq (sl_llm_client_ask (client, &ask), 0);
    }
    if (cancel_last)
        sl_llm_client_cancel (client, 100 + (uint64_t) count - 1);
    cr_expect_eq (t->outcomes, 0, "never reported from within the ask");
    zloop_timer (t->loop, 5, 0, s_tick, t);
    zloop_timer (t->loop, S_DEADLINE_MS, 1, s_deadline, NULL);
    zloop_start (t->loop);
    sl_llm_client_destroy (&client);
    sl_httpd_destroy (&httpd);
    sl_metrics_destroy (&metrics);
    zloop_destroy (&t->loop);
}

static void
s_clear (s_test_t *t)
{
    for (int i = 0; i < t->outcomes && i < S_ASKS_MAX; i++) {
        free (t->results [i].explanation);
        free (t->results [i].error);
    }
}

Test (sl_llm_client, an_ask_is_one_post_and_one_answer)
{
    s_test_t t = { .expected = 1 };
    t.judge.status = 200;
    t.judge.body = "{\"choices\":[{\"message\":{\"role\":\"assistant\","
                   "\"content\":\"{\\\"probability\\\":0.75,\\\"explanation\\\":\\\"deletes files\\\"}\"}}]}";
    s_run (&t, 5000, 1, false);
    cr_assert_eq (t.outcomes, 1);
    cr_expect_eq (t.tickets [0], 100);
    cr_expect_eq (t.results [0].check, SL_CHK_RAN);
    cr_expect_float_eq (t.results [0].probability, 0.75, 1e-9);
    cr_expect_str_eq (t.results [0].explanation, "deletes files");
    cr_expect_eq (t.judge.requests, 1);
    cr_expect_str_eq (t.judge.auth, "Bearer sk-test", "the key in the dialect's header");
    cr_expect_str_eq (t.judge.model, "judge-1", "the body as given");
    s_clear (&t);
}

Test (sl_llm_client, an_error_answer_and_a_silent_judge_are_outcomes_too)
{
    s_test_t t = { .expected = 1 };
    t.judge.status = 500;
    t.judge.body = "{\"error\":{\"message\":\"boom\"}}";
    s_run (&t, 5000, 1, false);
    cr_assert_eq (t.outcomes, 1);
    cr_expect_eq (t.results [0].check, SL_CHK_ERROR);
    cr_expect_not_null (strstr (t.results [0].error, "500"), "%s", t.results [0].error);
    s_clear (&t);
    s_test_t silent = { .expected = 1 };
    silent.judge.body = NULL;
    s_run (&silent, 200, 1, false);
    cr_assert_eq (silent.outcomes, 1, "a timeout is reported, once");
    cr_expect_eq (silent.results [0].check, SL_CHK_TIMEOUT);
    s_clear (&silent);
}

Test (sl_llm_client, a_cancelled_ask_reports_nothing)
{
    //  The other ask is answered at once: a cancelled one's outcome would
    //  come as soon; the reactor watches a while more for it.
    s_test_t t = { .expected = 1, .linger_ms = 300 };
    t.judge.status = 200;
    t.judge.body = "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"{\\\"probability\\\":0}\"}}]}";
    s_run (&t, 5000, 2, true);
    cr_assert_eq (t.outcomes, 1, "the other ask's outcome only");
    cr_expect_eq (t.tickets [0], 100);
    s_clear (&t);
}
