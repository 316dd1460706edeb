/*  sl_llm_client.c - LLM judge and decision service requests over libcurl
    multi (see sl_llm_client.h).

    Every ask is a request object on one list. A request is either queued
    in its lane (one lane per rule id, with that rule's concurrency limit)
    or running (its curl handle is in sl_curlm). Deadlines are checked by
    one sweep timer rather than a zloop timer per request: zloop scans its
    timers on every turn, and hundreds of judge calls in flight must not
    cost every other event a scan.

    The two kinds of ask (sl_llm_kind_t) share all of that; they differ in
    the headers sent, the answer read, and their metrics. A decision
    service's answer that says it may be reused (Cache-Control: max-age)
    is kept by content (sl_llm_cache); an ask it answers is reported at
    the next sweep, like any other outcome, never from within the ask.
*/
#include "common/llm/sl_llm_client.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/base/sl_alloc.h"
#include "common/http/sl_curlm.h"
#include "common/base/sl_log.h"
#include "common/dialects/sl_dialect.h"
#include "common/llm/sl_decide.h"
#include "common/llm/sl_llm_cache.h"

#define LLM_SWEEP_MS 20                 //  deadline resolution
#define LLM_CONNECT_SLACK_MS 1000       //  curl's own timeout, a backstop behind ours
#define LLM_KINDS 2                     //  sl_llm_kind_t values
#define LLM_CACHE_CONTROL_MAX 128       //  bytes of a Cache-Control header kept

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
    sl_llm_kind_t kind;
    sl_llm_result_t *ready;             //  an outcome known already (a kept answer): reported
                                        //  at the next sweep; owned
    bool kept;                          //  answered from the kept answers
    char cache_control [LLM_CACHE_CONTROL_MAX];     //  the answer's, "" when none
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

//  What one kind of ask counts.
typedef struct {
    size_t inflight;
    size_t queued;
    sl_counter_t *answered;             //  an LLM judge's answers
    sl_counter_t *allowed;              //  a decision service's allows (cached ones too)
    sl_counter_t *denied;               //  and its denials
    sl_counter_t *cached;               //  asks answered from the kept answers
    sl_counter_t *timeouts;
    sl_counter_t *errors;
    sl_gauge_t *inflight_gauge;
    sl_gauge_t *inflight_peak;
    sl_gauge_t *queued_gauge;
    sl_histo_t *latency;
} s_kind_t;

struct _sl_llm_client_t {
    zloop_t *loop;
    sl_curlm_t *curlm;
    sl_llm_client_done_fn *done;
    sl_llm_client_after_fn *after;
    void *arg;
    s_req_t *reqs;
    s_lane_t *lanes;
    int sweep_timer;                    //  -1 when idle
    sl_llm_cache_t *kept;               //  decision service answers that may be reused
    s_kind_t kinds [LLM_KINDS];
};

static void
s_update_gauges (sl_llm_client_t *self)
{
    for (int k = 0; k < LLM_KINDS; k++) {
        s_kind_t *kind = &self->kinds [k];
        kind->inflight_gauge->value = (int64_t) kind->inflight;
        kind->queued_gauge->value = (int64_t) kind->queued;
        if ((int64_t) kind->inflight > kind->inflight_peak->value)
            kind->inflight_peak->value = (int64_t) kind->inflight;
    }
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
    req->client->kinds [req->kind].queued--;
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
        self->kinds [req->kind].inflight--;
    }
    else
    if (!req->kept)
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
    if (req->ready) {
        sl_llm_result_clear (req->ready);
        free (req->ready);
    }
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

//  Keep the answer's Cache-Control (a decision service's answer may be
//  reused when it says so).
static size_t
s_on_header (char *ptr, size_t size, size_t nmemb, void *arg)
{
    s_req_t *req = arg;
    size_t n = size * nmemb;
    if (n >= 5 && strncmp (ptr, "HTTP/", 5) == 0)
        req->cache_control [0] = 0;     //  a new answer's headers (after a 100 Continue)
    else
        sl_curlm_header (ptr, n, "cache-control", req->cache_control, sizeof req->cache_control);
    return n;
}

static void s_on_done (void *arg, CURL *easy, CURLcode result);
static void s_start_queued (sl_llm_client_t *self);

//  Report an outcome and forget the request.
static void
s_finish (sl_llm_client_t *self, s_req_t *req, const sl_llm_result_t *result)
{
    s_detach (self, req);
    s_kind_t *kind = &self->kinds [req->kind];
    if (result->check == SL_CHK_RAN) {
        if (req->kind == SL_LLM_DECIDE)
            sl_counter_inc (result->allow ? kind->allowed : kind->denied);
        else
            sl_counter_inc (kind->answered);
        if (req->kept)
            sl_counter_inc (kind->cached);
        else
            sl_histo_observe (kind->latency, (double) (zclock_usecs () - (req->deadline_us
                                              - (int64_t) req->timeout_ms * 1000)) / 1e6);
    }
    else {
        sl_counter_inc (result->check == SL_CHK_TIMEOUT ? kind->timeouts : kind->errors);
        if (req->kind == SL_LLM_DECIDE)
            sl_log_warn ("decide_failed", "rule=%s url=%s: %s", req->lane->name, req->url,
                         result->error ? result->error : "?");
        else
            sl_log_warn ("llm_judge_failed", "rule=%s model=%s: %s", req->lane->name, req->model,
                         result->error ? result->error : "?");
    }
    uint64_t ticket = req->ticket;
    s_free (req);
    self->done (self->arg, ticket, result);
}

//  Build the transfer and hand it to curl; on failure the request fails
//  at the next sweep.
//  The headers of a question to an LLM judge: its dialect's, and its
//  credential. -1 (failure set) when it cannot be asked.
static int
s_judge_headers (s_req_t *req)
{
    const char *key = NULL;
    if (req->key_env) {
        key = getenv (req->key_env);
        if (!key || !*key) {
            //  The variable's name is no secret; its value never appears.
            snprintf (req->failure, sizeof req->failure, "the API key variable %.100s is not set", req->key_env);
            return -1;
        }
    }
    const sl_dialect_t *d = sl_dialect_get (req->dialect);
    if (!sl_dialect_asks (d)) {
        snprintf (req->failure, sizeof req->failure, "the judge's API cannot be asked a question");
        return -1;
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
    return 0;
}

//  Build the transfer and hand it to curl; on failure the request fails
//  at the next sweep.
static void
s_start (sl_llm_client_t *self, s_req_t *req)
{
    if (req->kind == SL_LLM_DECIDE) {
        req->headers = curl_slist_append (req->headers, "Content-Type: application/json");
        req->headers = curl_slist_append (req->headers, "Accept: application/json");
    }
    else
    if (s_judge_headers (req))
        return;
    CURL *easy = curl_easy_init ();
    curl_easy_setopt (easy, CURLOPT_URL, req->url);
    curl_easy_setopt (easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt (easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) req->body.len);
    curl_easy_setopt (easy, CURLOPT_POSTFIELDS, req->body.data ? req->body.data : "");
    curl_easy_setopt (easy, CURLOPT_HTTPHEADER, req->headers);
    curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_on_data);
    curl_easy_setopt (easy, CURLOPT_WRITEDATA, req);
    curl_easy_setopt (easy, CURLOPT_HEADERFUNCTION, s_on_header);
    curl_easy_setopt (easy, CURLOPT_HEADERDATA, req);
    curl_easy_setopt (easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, (long) req->timeout_ms + LLM_CONNECT_SLACK_MS);
    if (sl_curlm_add (self->curlm, easy, s_on_done, req)) {
        curl_easy_cleanup (easy);
        snprintf (req->failure, sizeof req->failure, "the HTTP transfer could not be started");
        return;
    }
    req->easy = easy;
    req->lane->running++;
    self->kinds [req->kind].inflight++;
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
            self->kinds [req->kind].queued--;
            s_start (self, req);
            if (req->failure [0])
                break;                  //  reported by the sweep; do not spin here
        }
    s_update_gauges (self);
}

//  A decision service's answer, kept for reuse when it says it may be.
static void
s_read_decision (sl_llm_client_t *self, s_req_t *req, int status, sl_llm_result_t *result)
{
    sl_decide_parse_answer (status, sl_buf_str (&req->answer), result);
    result->max_age_s = sl_decide_max_age (req->cache_control [0] ? req->cache_control : NULL);
    if (result->check == SL_CHK_RAN && result->max_age_s > 0)
        sl_llm_cache_put_until (self->kept, req->lane->name, sl_buf_str (&req->body), result,
                                zclock_usecs () + (int64_t) result->max_age_s * 1000000);
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
        if (req->kind == SL_LLM_DECIDE)
            s_read_decision (self, req, (int) status, &result);
        else
            sl_llm_parse_answer (req->dialect, (int) status, sl_buf_str (&req->answer), &result);
    }
    else
    if (req->answer_too_big)
        sl_llm_result_fail (&result, SL_CHK_ERROR, req->kind == SL_LLM_DECIDE
                            ? "the decision service's answer is over 1 MiB" : "the judge's answer is over 1 MiB");
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
        if (req->ready) {
            sl_llm_result_t *ready = req->ready;
            req->ready = NULL;
            s_finish (self, req, ready);
            sl_llm_result_clear (ready);
            free (ready);
            reported = true;
            next = self->reqs;
        }
        else
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

//  What both kinds count, under their own prefix: failures by outcome,
//  requests in flight and queued, latency of answers.
static void
s_kind_metrics (sl_metrics_t *m, s_kind_t *kind, const char *prefix, const char *what)
{
    char name [64], help [128];
    snprintf (name, sizeof name, "%s_requests_total", prefix);
    snprintf (help, sizeof help, "%s requests by outcome", what);
    kind->timeouts = sl_metrics_counter (m, name, "outcome=\"timeout\"", help);
    kind->errors = sl_metrics_counter (m, name, "outcome=\"error\"", help);
    snprintf (name, sizeof name, "%s_inflight", prefix);
    snprintf (help, sizeof help, "%s requests in flight", what);
    kind->inflight_gauge = sl_metrics_gauge (m, name, NULL, help);
    snprintf (name, sizeof name, "%s_inflight_peak", prefix);
    snprintf (help, sizeof help, "Most %s requests in flight at once", what);
    kind->inflight_peak = sl_metrics_gauge (m, name, NULL, help);
    snprintf (name, sizeof name, "%s_queued", prefix);
    snprintf (help, sizeof help, "%s requests waiting for a concurrency slot", what);
    kind->queued_gauge = sl_metrics_gauge (m, name, NULL, help);
    snprintf (name, sizeof name, "%s_seconds", prefix);
    snprintf (help, sizeof help, "Time from ask to answer of answered %s requests", what);
    kind->latency = sl_metrics_histogram (m, name, NULL, help, sl_metrics_latency_bounds,
                                          sl_metrics_latency_bounds_count);
}

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
    self->kept = sl_llm_cache_new (SL_LLM_CACHE_DEFAULT);
    s_kind_t *j = &self->kinds [SL_LLM_JUDGE];
    s_kind_metrics (m, j, "sluice_llm_judge", "LLM judge");
    j->answered = sl_metrics_counter (m, "sluice_llm_judge_requests_total", "outcome=\"answered\"",
                                      "LLM judge requests by outcome");
    s_kind_t *d = &self->kinds [SL_LLM_DECIDE];
    s_kind_metrics (m, d, "sluice_decide", "decision service");
    d->allowed = sl_metrics_counter (m, "sluice_decide_requests_total", "outcome=\"allow\"",
                                     "decision service requests by outcome");
    d->denied = sl_metrics_counter (m, "sluice_decide_requests_total", "outcome=\"deny\"",
                                    "decision service requests by outcome");
    d->cached = sl_metrics_counter (m, "sluice_decide_cached_total", NULL,
                                    "Decision service asks answered by an answer kept for reuse (Cache-Control); "
                                    "counted by outcome too");
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
    sl_llm_cache_destroy (&self->kept);
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
    req->kind = spec->kind == SL_LLM_DECIDE ? SL_LLM_DECIDE : SL_LLM_JUDGE;
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
    sl_llm_result_t kept = { 0 };
    if (req->kind == SL_LLM_DECIDE
    &&  sl_llm_cache_get_at (self->kept, req->lane->name, ask->body, zclock_usecs (), &kept)) {
        req->ready = sl_xmalloc (sizeof *req->ready);
        *req->ready = kept;             //  reported at the next sweep
        req->kept = true;
    }
    else
    if (req->lane->running < req->lane->limit && !req->lane->head)
        s_start (self, req);
    else {
        if (req->lane->tail)
            req->lane->tail->qnext = req;
        else
            req->lane->head = req;
        req->lane->tail = req;
        self->kinds [req->kind].queued++;
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

