/*  bench_client.h - many concurrent streaming chat requests, measured.

    Runs `total` requests with at most `concurrency` in flight (libcurl
    multi in a zloop, like the ingest), parses each response's server-sent
    events as they arrive and records: time to the first event per stream,
    events per stream, and for chunks whose content is a send stamp
    ("t<microseconds> ", written by the mock's mock-paced scenario) the
    time from the mock's send to our receipt.
*/
#ifndef BENCH_CLIENT_H
#define BENCH_CLIENT_H

#include <stdint.h>

#include "services/bench/bench_stats.h"

typedef struct {
    const char *url;                    //  full URL of the completions endpoint
    const char *body;                   //  request JSON
    int concurrency;                    //  streams in flight at once
    int ramp_ms;                        //  0: the first concurrency streams start at once;
                                        //  else one every ramp_ms until that many run
    int total;                          //  streams in all
    int timeout_ms;                     //  bound on the whole run
    void (*tick) (void *arg);           //  called every 100 ms during the run
    void *tick_arg;
} bench_run_t;

typedef struct {
    int ok;                             //  streams that ended with [DONE]
    int failed;                         //  errors, timeouts, missing [DONE]
    uint64_t events;                    //  data events received, [DONE] excluded
    int64_t elapsed_us;                 //  first start to last end
    bench_samples_t ttfb_us;            //  per stream
    bench_samples_t chunk_us;           //  per stamped chunk
} bench_result_t;

//  Run; 0 when every stream completed, -1 otherwise (result filled anyway).
int bench_run (const bench_run_t *run, bench_result_t *result);
void bench_result_free (bench_result_t *result);

#endif
