/*  load.h - many streaming requests at once against a gateway, with
    actions at set times (kill, pause, resume an instance), for the chaos
    and pause tests.

    Every request is an OpenAI chat completion, streaming; a client keeps
    every byte it read and when (ms) each read came, so a test can compare
    the bytes with those of an undisturbed run and measure gaps in the flow.
*/
#ifndef LOAD_H
#define LOAD_H

#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"

typedef struct {
    CURL *easy;
    struct curl_slist *headers;
    sl_buf_t body;                      //  response bytes
    char request [256];
    const char *request_body;           //  a request body of its own instead (borrowed), or NULL
    const char *auth;                   //  a header line with the client's key (borrowed), or NULL
    int64_t start_at;                   //  ms from the start of the run when the request goes
    int64_t timeout_ms;                 //  the client gives up after this long (0: the run's bound)
    int retries;                        //  a 503 is tried again this many times, as SDKs do
    int64_t retry_ms;                   //  after this long
    int attempts;                       //  requests made
    int64_t *arrivals;                  //  ms of every read
    size_t arrival_count;
    size_t arrival_cap;
    long status;
    int port;                           //  the gateway its last attempt went to
    int refused;                        //  attempts refused (or 503), tried again on another gateway
    bool started;                       //  the request went
    bool done;
    CURLcode result;
} load_client_t;

typedef struct {
    int64_t at;                         //  ms from the start of the run
    void (*fn) (void *arg, int round);
    void *arg;
    int round;
} load_action_t;

//  Client-side balancing over several gateways, as a load balancer in
//  front of them does: each request goes to the next live port in turn;
//  a connection refused (a gateway draining, or gone) or a 503 (a
//  draining gateway's answer on a kept-alive connection) is tried again at
//  once on another live port, at most LOAD_REFUSED_TRIES times. Actions
//  change the rotation (a new gateway in, a draining one out).
#define LOAD_PORTS_MAX 4
#define LOAD_REFUSED_TRIES 8
typedef struct {
    int ports [LOAD_PORTS_MAX];
    bool live [LOAD_PORTS_MAX];         //  in the rotation
    int count;                          //  ports declared
    int next;                           //  the rotation's position
} load_balancer_t;

//  n clients asking model for chunks text chunks, each request told apart
//  by its index ("stream <i>"): the same n requests get the same bytes.
load_client_t *load_clients (int n, const char *model, int chunks);
void load_clients_free (load_client_t *clients, int n);
//  Run every request to its end, calling the actions (sorted by time) at
//  their times; bounded by limit_ms. Returns the run's start time (ms).
int64_t load_run (int port, load_client_t *clients, int n, load_action_t *actions, int action_count,
                  int64_t limit_ms);
//  The same over the balancer's live ports.
int64_t load_run_balanced (load_balancer_t *lb, load_client_t *clients, int n, load_action_t *actions,
                           int action_count, int64_t limit_ms);
//  The response is complete: 200 and the OpenAI stream's last event.
bool load_complete (const load_client_t *c);
//  The response ended cleanly with an error: a transfer that finished,
//  and either an HTTP error status with an error body, or a 200 stream
//  whose last event is an error (no [DONE] after it).
bool load_failed_cleanly (const load_client_t *c);
//  The same bytes as the reference, but for keep-alive comments (which
//  come when a stage behind the judge is slow: timing, not content).
bool load_identical (const load_client_t *c, const load_client_t *reference);
//  Print to stderr how a response ended (transfer result, status, bytes
//  against the reference's, its last bytes): for a stream that neither
//  completed nor failed cleanly.
void load_describe (const char *what, int index, const load_client_t *c, const load_client_t *reference);

#endif
