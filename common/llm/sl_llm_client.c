/*  sl_llm_client.c - LLM judge requests over libcurl multi (see sl_llm_client.h).

    Every ask is a request object on one list. A request is either queued
    in its lane (one lane per rule id, with that rule's concurrency limit)
    or running (its curl handle is in sl_curlm). Deadlines are checked by
    one sweep timer rather than a zloop timer per request: zloop scans its
    timers on every turn, and hundreds of judge calls in flight must not
    cost every other event a scan.
*/
#include "common/llm/sl_llm_client.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/sl_alloc.h"
#include "common/http/sl_curlm.h"
#include "common/base/sl_log.h"
#include "common/dialects/sl_dialect.h"

#define LLM_SWEEP_MS 20                 //  deadline resolution
#define LLM_CONNECT_SLACK_MS 1000       //  curl's own timeout, a backstop behind ours

typedef struct _s_lane_t s_lane_t;
typedef struct _s_req_t s_req_t;

//  One rule's judge: its concurrency limit and the asks waiting for it.
struct _s_lane_t {
    char *name;                         //  rule id
    int limit;                          //  from the newest ask
    int running;
    s_req_t *head, *tail;               //  FIFO of queued requests
    s_lane_t *next;
};

struct _s_req_t {
    sl_llm_client_t *client;
    uint64_t ticket;
    s_lane_t *lane;
    int dialect;                        //  the API asked: its credential, headers, answers
    char *url;
    char *model;                        //  for logs
    char *key_env;                      //  variable holding the key, or NULL
    int timeout_ms;
    int64_t deadline_us;
    char failure [160];                 //  set: fail at the next sweep with this
    sl_buf_t body;
    sl_buf_t answer;
    bool answer_too_big;
    CURL *easy;                         //  NULL while queued
    struct curl_slist *headers;
    s_req_t *prev, *next;               //  all requests
    s_req_t *qnext;                     //  lane queue
};

struct _sl_llm_client_t {
    zloop_t *loop;
    sl_curlm_t *curlm;
    sl_llm_client_done_fn *done;
    sl_llm_client_after_fn *after;
    void *arg;
    s_req_t *reqs;
    s_lane_t *lanes;
    size_t inflight;
    size_t queued;
    int sweep_timer;                    //  -1 when idle
    sl_counter_t *answered;
    sl_counter_t *timeouts;
    sl_counter_t *errors;
    sl_gauge_t *inflight_gauge;
    sl_gauge_t *inflight_peak;
    sl_gauge_t *queued_gauge;
    sl_histo_t *latency;
};

static void
s_update_gauges (sl_llm_client_t *self)
{
    self->inflight_gauge->value = (int64_t) self->inflight;
    self->queued_gauge->value = (int64_t) self->queued;
    if ((int64_t) self->inflight > self->inflight_peak->value)
        self->inflight_peak->value = (int64_t) self->inflight;
}

//  --------------------------------------------------------------------------
//  Requests

static s_lane_t *
s_lane (sl_llm_client_t *self, const char *name, int limit)
{
    s_lane_t *lane = self->lanes;
    while (lane && strcmp (lane->name, name) != 0)
        lane = lane->next;
    if (!lane) {
        lane = sl_xcalloc (1, sizeof *lane);
        lane->name = sl_xstrdup (name);
        lane->next = self->lanes;
        self->lanes = lane;
    }
    lane->limit = limit > 0 ? limit : 1;
    return lane;
}

static void
s_unqueue (s_req_t *req)
{
    s_lane_t *lane = req->lane;
    s_req_t **link = &lane->head;
    s_req_t *prev = NULL;
    while (*link && *link != req) {
        prev = *link;
        link = &(*link)->qnext;
    }
    if (!*link)
        return;
    *link = req->qnext;
    if (lane->tail == req)
        lane->tail = prev;
    req->qnext = NULL;
    req->client->queued--;
}

//  Take a request off every list and stop its transfer; the caller frees it.
static void
s_detach (sl_llm_client_t *self, s_req_t *req)
{
    if (req->easy) {
        sl_curlm_remove (self->curlm, req->easy);
        curl_easy_cleanup (req->easy);
        req->easy = NULL;
        req->lane->running--;
        self->inflight--;
    }
    else
        s_unqueue (req);
    if (req->prev)
        req->prev->next = req->next;
    else
        self->reqs = req->next;
    if (req->next)
        req->next->prev = req->prev;
    s_update_gauges (self);
}

static void
s_free (s_req_t *req)
{
    curl_slist_free_all (req->headers);
    sl_buf_free (&req->body);
    sl_buf_free (&req->answer);
    free (req->url);
    free (req->model);
    free (req->key_env);
    free (req);
}

static size_t
s_on_data (char *ptr, size_t size, size_t nmemb, void *arg)
{
    s_req_t *req = arg;
    size_t n = size * nmemb;
    if (req->answer.len + n > SL_LLM_MAX_ANSWER) {
        req->answer_too_big = true;
        return 0;                       //  ends the transfer with an error
    }
    sl_buf_append (&req->answer, ptr, n);
    return n;
}

static void s_on_done (void *arg, CURL *easy, CURLcode result);
static void s_start_queued (sl_llm_client_t *self);

//  Report an outcome and forget the request.
static void
s_finish (sl_llm_client_t *self, s_req_t *req, const sl_llm_result_t *result)
{
    s_detach (self, req);
    if (result->check == SL_CHK_RAN) {
        sl_counter_inc (self->answered);
        sl_histo_observe (self->latency, (double) (zclock_usecs () - (req->deadline_us
                                          - (int64_t) req->timeout_ms * 1000)) / 1e6);
    }
    else {
        sl_counter_inc (result->check == SL_CHK_TIMEOUT ? self->timeouts : self->errors);
        sl_log_warn ("llm_judge_failed", "rule=%s model=%s: %s", req->lane->name, req->model,
                     result->error ? result->error : "?");
    }
    uint64_t ticket = req->ticket;
    s_free (req);
    self->done (self->arg, ticket, result);
}

//  Build the transfer and hand it to curl; on failure the request fails
//  at the next sweep.
static void
s_start (sl_llm_client_t *self, s_req_t *req)
{
    const char *key = NULL;
    if (req->key_env) {
        key = getenv (req->key_env);
        if (!key || !*key) {
            //  The variable's name is no secret; its value never appears.
            snprintf (req->failure, sizeof req->failure, "the API key variable %.100s is not set", req->key_env);
            return;
        }
    }
    const sl_dialect_t *d = sl_dialect_get (req->dialect);
    if (!sl_dialect_asks (d)) {
        snprintf (req->failure, sizeof req->failure, "the judge's API cannot be asked a question");
        return;
    }
    req->headers = curl_slist_append (req->headers, "Content-Type: application/json");
    if (key) {
        //  The dialect's credential header ("Authorization: Bearer <key>").
        sl_buf_t line = { 0 };
        sl_buf_printf (&line, "%s: %s%s", d->credential, d->scheme, key);
        req->headers = curl_slist_append (req->headers, sl_buf_cstr (&line));
        //  Do not leave the key lying in freed memory.
        memset (line.data, 0, line.len);
        sl_buf_free (&line);
    }
    for (const char *const *h = d->headers; *h; h++)
        req->headers = curl_slist_append (req->headers, *h);
    CURL *easy = curl_easy_init ();
    curl_easy_setopt (easy, CURLOPT_URL, req->url);
    curl_easy_setopt (easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt (easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) req->body.len);
    curl_easy_setopt (easy, CURLOPT_POSTFIELDS, req->body.data ? req->body.data : "");
    curl_easy_setopt (easy, CURLOPT_HTTPHEADER, req->headers);
    curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_on_data);
    curl_easy_setopt (easy, CURLOPT_WRITEDATA, req);
    curl_easy_setopt (easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, (long) req->timeout_ms + LLM_CONNECT_SLACK_MS);
    if (sl_curlm_add (self->curlm, easy, s_on_done, req)) {
        curl_easy_cleanup (easy);
        snprintf (req->failure, sizeof req->failure, "the HTTP transfer could not be started");
        return;
    }
    req->easy = easy;
    req->lane->running++;
    self->inflight++;
    s_update_gauges (self);
}

//  Start queued requests while their lanes have room.
static void
s_start_queued (sl_llm_client_t *self)
{
    for (s_lane_t *lane = self->lanes; lane; lane = lane->next)
        while (lane->head && lane->running < lane->limit) {
            s_req_t *req = lane->head;
            lane->head = req->qnext;
            if (!lane->head)
                lane->tail = NULL;
            req->qnext = NULL;
            self->queued--;
            s_start (self, req);
            if (req->failure [0])
                break;                  //  reported by the sweep; do not spin here
        }
    s_update_gauges (self);
}

static void
s_on_done (void *arg, CURL *easy, CURLcode code)
{
    (void) easy;
    s_req_t *req = arg;
    sl_llm_client_t *self = req->client;
    sl_llm_result_t result = { 0 };
    if (code == CURLE_OK) {
        long status = 0;
        curl_easy_getinfo (req->easy, CURLINFO_RESPONSE_CODE, &status);
        sl_llm_parse_answer (req->dialect, (int) status, sl_buf_str (&req->answer), &result);
    }
    else
    if (req->answer_too_big)
        sl_llm_result_fail (&result, SL_CHK_ERROR, "the judge's answer is over 1 MiB");
    else
    if (code == CURLE_OPERATION_TIMEDOUT)
        sl_llm_result_fail (&result, SL_CHK_TIMEOUT, "no answer in time (HTTP timeout)");
    else {
        sl_buf_t why = { 0 };
        sl_buf_printf (&why, "transport error: %s", curl_easy_strerror (code));
        sl_llm_result_fail (&result, SL_CHK_ERROR, sl_buf_cstr (&why));
        sl_buf_free (&why);
    }
    s_finish (self, req, &result);
    sl_llm_result_clear (&result);
    s_start_queued (self);
}

//  Fail what is past its deadline or could not start.
static int
s_on_sweep (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_llm_client_t *self = arg;
    int64_t now = zclock_usecs ();
    bool reported = false;
    s_req_t *req = self->reqs;
    while (req) {
        s_req_t *next = req->next;
        if (req->failure [0] || now >= req->deadline_us) {
            sl_llm_result_t result = { 0 };
            if (req->failure [0])
                sl_llm_result_fail (&result, SL_CHK_ERROR, req->failure);
            else {
                char why [96];
                snprintf (why, sizeof why, "no answer within %d ms%s", req->timeout_ms,
                          req->easy ? "" : " (still queued behind the concurrency limit)");
                sl_llm_result_fail (&result, SL_CHK_TIMEOUT, why);
            }
            s_finish (self, req, &result);
            sl_llm_result_clear (&result);
            reported = true;
            //  Reporting may cancel other requests: start over.
            next = self->reqs;
        }
        req = next;
    }
    s_start_queued (self);
    if (!self->reqs && self->sweep_timer >= 0) {
        zloop_timer_end (self->loop, self->sweep_timer);
        self->sweep_timer = -1;
    }
    if (reported && self->after)
        self->after (self->arg);
    return 0;
}

static void
s_after_curl (void *arg)
{
    sl_llm_client_t *self = arg;
    if (self->after)
        self->after (self->arg);
}

//  --------------------------------------------------------------------------
//  API

sl_llm_client_t *
sl_llm_client_new (zloop_t *loop, sl_metrics_t *m, sl_llm_client_done_fn *done,
                sl_llm_client_after_fn *after, void *arg)
{
    sl_llm_client_t *self = sl_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->curlm = sl_curlm_new (loop);
    self->done = done;
    self->after = after;
    self->arg = arg;
    self->sweep_timer = -1;
    sl_curlm_set_after (self->curlm, s_after_curl, self);
    self->answered = sl_metrics_counter (m, "sluice_llm_judge_requests_total", "outcome=\"answered\"",
                                         "LLM judge requests by outcome");
    self->timeouts = sl_metrics_counter (m, "sluice_llm_judge_requests_total", "outcome=\"timeout\"",
                                         "LLM judge requests by outcome");
    self->errors = sl_metrics_counter (m, "sluice_llm_judge_requests_total", "outcome=\"error\"",
                                       "LLM judge requests by outcome");
    self->inflight_gauge = sl_metrics_gauge (m, "sluice_llm_judge_inflight", NULL,
                                             "LLM judge requests in flight");
    self->inflight_peak = sl_metrics_gauge (m, "sluice_llm_judge_inflight_peak", NULL,
                                            "Most LLM judge requests in flight at once");
    self->queued_gauge = sl_metrics_gauge (m, "sluice_llm_judge_queued", NULL,
                                           "LLM judge requests waiting for a concurrency slot");
    self->latency = sl_metrics_histogram (m, "sluice_llm_judge_seconds", NULL,
                                          "Time from ask to answer of answered LLM judge requests",
                                          sl_metrics_latency_bounds, sl_metrics_latency_bounds_count);
    return self;
}

void
sl_llm_client_destroy (sl_llm_client_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_llm_client_t *self = *self_p;
    while (self->reqs) {
        s_req_t *req = self->reqs;
        s_detach (self, req);
        s_free (req);
    }
    while (self->lanes) {
        s_lane_t *next = self->lanes->next;
        free (self->lanes->name);
        free (self->lanes);
        self->lanes = next;
    }
    if (self->sweep_timer >= 0)
        zloop_timer_end (self->loop, self->sweep_timer);
    sl_curlm_destroy (&self->curlm);
    free (self);
    *self_p = NULL;
}

int
sl_llm_client_ask (sl_llm_client_t *self, const sl_llm_ask_t *ask)
{
    const sl_llm_spec_t *spec = ask->spec;
    if (!spec || !spec->url)
        return -1;
    s_req_t *req = sl_xcalloc (1, sizeof *req);
    req->client = self;
    req->ticket = ask->ticket;
    req->lane = s_lane (self, ask->rule ? ask->rule : "", spec->concurrency);
    req->dialect = spec->dialect;
    req->url = sl_xstrdup (spec->url);
    req->model = sl_xstrdup (spec->model ? spec->model : "");
    req->key_env = spec->api_key_env ? sl_xstrdup (spec->api_key_env) : NULL;
    req->timeout_ms = spec->timeout_ms;
    req->deadline_us = zclock_usecs () + (int64_t) spec->timeout_ms * 1000;
    sl_buf_append_str (&req->body, ask->body);
    req->next = self->reqs;
    if (self->reqs)
        self->reqs->prev = req;
    self->reqs = req;
    if (req->lane->running < req->lane->limit && !req->lane->head)
        s_start (self, req);
    else {
        if (req->lane->tail)
            req->lane->tail->qnext = req;
        else
            req->lane->head = req;
        req->lane->tail = req;
        self->queued++;
        s_update_gauges (self);
    }
    if (self->sweep_timer < 0)
        self->sweep_timer = zloop_timer (self->loop, LLM_SWEEP_MS, 0, s_on_sweep, self);
    return 0;
}

void
sl_llm_client_cancel (sl_llm_client_t *self, uint64_t ticket)
{
    for (s_req_t *req = self->reqs; req; req = req->next)
        if (req->ticket == ticket) {
            s_detach (self, req);
            s_free (req);
            return;
        }
}

