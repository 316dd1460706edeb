/*  bench_client.c - the load generator's HTTP side (see bench_client.h). */
#include "services/bench/bench_client.h"

#include <czmq.h>                      //  zclock_usecs: the monotonic clock the mock stamps chunks with
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/http/sl_curlm.h"
#include "common/http/sl_sse.h"

#define BENCH_TICK_MS 100

typedef struct _s_runner_t s_runner_t;

typedef struct {
    s_runner_t *runner;
    CURL *easy;
    struct curl_slist *headers;
    sl_sse_t *sse;
    int64_t started;
    bool first;                         //  first event seen
    bool done;                          //  [DONE] seen
} s_stream_t;

struct _s_runner_t {
    const bench_run_t *run;
    bench_result_t *result;
    zloop_t *loop;
    sl_curlm_t *curlm;
    int started;
    int finished;
    int ramped;                         //  streams the ramp started
    s_stream_t **live;                  //  streams in flight, to free at a timeout
    int live_count;
};

static void
s_stream_free (s_stream_t *s)
{
    s_runner_t *r = s->runner;
    for (int i = 0; i < r->live_count; i++)
        if (r->live [i] == s) {
            r->live [i] = r->live [--r->live_count];
            break;
        }
    curl_easy_cleanup (s->easy);
    curl_slist_free_all (s->headers);
    sl_sse_destroy (&s->sse);
    free (s);
}

static void s_start_next (s_runner_t *r);

static int
s_on_event (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    (void) type;
    (void) id;
    s_stream_t *s = arg;
    bench_result_t *res = s->runner->result;
    int64_t now = zclock_usecs ();
    if (!s->first) {
        s->first = true;
        bench_samples_add (&res->ttfb_us, (double) (now - s->started));
    }
    if (sl_str_eq (data, "[DONE]")) {
        s->done = true;
        return 0;
    }
    res->events++;
    //  A stamped chunk's content is "t<microseconds> ".
    static const char needle [] = "\"content\":\"t";
    const char *hit = memmem (data.ptr, data.len, needle, sizeof needle - 1);
    if (hit) {
        const char *p = hit + sizeof needle - 1;
        const char *end = data.ptr + data.len;
        int64_t stamp = 0;
        int digits = 0;
        while (p < end && *p >= '0' && *p <= '9' && digits < 19) {
            stamp = stamp * 10 + (*p++ - '0');
            digits++;
        }
        if (digits && p < end && *p == ' ')
            bench_samples_add (&res->chunk_us, (double) (now - stamp));
    }
    return 0;
}

static size_t
s_on_body (char *ptr, size_t size, size_t nmemb, void *arg)
{
    s_stream_t *s = arg;
    size_t n = size * nmemb;
    return sl_sse_feed (s->sse, ptr, n, s_on_event, s) == 0 ? n : 0;
}

static void
s_on_done (void *arg, CURL *easy, CURLcode result)
{
    s_stream_t *s = arg;
    s_runner_t *r = s->runner;
    long status = 0;
    curl_easy_getinfo (easy, CURLINFO_RESPONSE_CODE, &status);
    if (result == CURLE_OK && status == 200 && s->done)
        r->result->ok++;
    else
        r->result->failed++;
    s_stream_free (s);
    r->finished++;
    if (r->started < r->run->total)
        s_start_next (r);
}

static void
s_start_next (s_runner_t *r)
{
    s_stream_t *s = sl_xcalloc (1, sizeof *s);
    s->runner = r;
    s->sse = sl_sse_new (0);
    s->easy = curl_easy_init ();
    s->headers = curl_slist_append (NULL, "Content-Type: application/json");
    curl_easy_setopt (s->easy, CURLOPT_URL, r->run->url);
    curl_easy_setopt (s->easy, CURLOPT_POSTFIELDS, r->run->body);
    curl_easy_setopt (s->easy, CURLOPT_HTTPHEADER, s->headers);
    curl_easy_setopt (s->easy, CURLOPT_WRITEFUNCTION, s_on_body);
    curl_easy_setopt (s->easy, CURLOPT_WRITEDATA, s);
    curl_easy_setopt (s->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (s->easy, CURLOPT_TCP_NODELAY, 1L);
    s->started = zclock_usecs ();
    r->started++;
    r->live = sl_xrealloc (r->live, (size_t) (r->live_count + 1) * sizeof (s_stream_t *));
    r->live [r->live_count++] = s;
    sl_curlm_add (r->curlm, s->easy, s_on_done, s);
}

static int
s_on_tick (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_runner_t *r = arg;
    if (r->run->tick)
        r->run->tick (r->run->tick_arg);
    return r->finished >= r->run->total ? -1 : 0;
}

//  The ramp: one more stream, until the run's concurrency is reached.
static int
s_on_ramp (zloop_t *loop, int timer_id, void *arg)
{
    s_runner_t *r = arg;
    if (r->ramped < r->run->concurrency && r->started < r->run->total) {
        r->ramped++;
        s_start_next (r);
    }
    if (r->ramped >= r->run->concurrency || r->started >= r->run->total)
        zloop_timer_end (loop, timer_id);
    return 0;
}

static int
s_on_timeout (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    (void) arg;
    return -1;
}

//  Stop the loop as soon as the last stream is done, not at the next tick.
static void
s_after (void *arg)
{
    s_runner_t *r = arg;
    if (r->finished >= r->run->total)
        zloop_timer (r->loop, 1, 1, s_on_timeout, r);
}

int
bench_run (const bench_run_t *run, bench_result_t *result)
{
    memset (result, 0, sizeof *result);
    s_runner_t r = { .run = run, .result = result };
    r.loop = zloop_new ();
    r.curlm = sl_curlm_new (r.loop);
    sl_curlm_set_after (r.curlm, s_after, &r);
    int64_t t0 = zclock_usecs ();
    if (run->ramp_ms > 0)
        zloop_timer (r.loop, (size_t) run->ramp_ms, 0, s_on_ramp, &r);
    else
        for (int i = 0; i < run->concurrency && r.started < run->total; i++)
            s_start_next (&r);
    zloop_timer (r.loop, BENCH_TICK_MS, 0, s_on_tick, &r);
    zloop_timer (r.loop, (size_t) run->timeout_ms, 1, s_on_timeout, &r);
    zloop_start (r.loop);
    result->elapsed_us = zclock_usecs () - t0;
    //  Streams still running at the timeout count as failed.
    result->failed += run->total - r.finished;
    sl_curlm_destroy (&r.curlm);
    while (r.live_count)
        s_stream_free (r.live [0]);
    free (r.live);
    zloop_destroy (&r.loop);
    return result->failed ? -1 : 0;
}

void
bench_result_free (bench_result_t *result)
{
    bench_samples_free (&result->ttfb_us);
    bench_samples_free (&result->chunk_us);
}
