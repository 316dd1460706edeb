/*  parse_worker.h - a worker thread that parses requests off the gateway's
    reactor: a large request body is prepared by sl_job_prepare (the
    parsing itself, a pure library) on this thread, not in the loop.

    Preparing a legal 10 MiB request (parse, route, translate) takes 90-120
    ms with the optimized build and 140-330 ms under the sanitizers, idle or
    with streams flowing (jansson builds a tree of every message; the
    costliest shape the request memory bound lets through is a long
    conversation of short turns). Several such requests at once, inside
    the reactor, are longer than a peer may stay silent before it is
    declared dead (SL_HB_DEAD_MS): the gateway stopped answering the
    emitters' heartbeats and reading the ingest's. So a body over
    PARSE_WORKER_INLINE_BYTES is prepared by one worker thread: the reactor
    hands it a task holding its own copy of the body, and gets the task
    back through the actor's pipe (a reader in the same zloop). The worker
    shares nothing with the reactor but the task it holds, and the routes,
    which nothing changes once the gateway runs; sl_job is a pure
    library. Tasks are done one at a time, in order.

    Smaller bodies are parsed inline: that takes microseconds, and a trip
    through the thread would only add latency.
*/
#ifndef PARSE_WORKER_H
#define PARSE_WORKER_H

#include <czmq.h>
#include <stdint.h>

#include "common/dialects/sl_job.h"
#include "common/base/sl_buf.h"

#define PARSE_WORKER_INLINE_BYTES (256u << 10)  //  bodies up to this are parsed in the reactor
#define PARSE_WORKER_NICE 10            //  the worker thread's nice value: below the reactor's

typedef struct _parse_worker_t parse_worker_t;

//  One request body to parse. The caller fills the input and may attach its
//  own context (owner, never touched by the worker); the worker fills the
//  output.
typedef struct {
    //  Input
    sl_endpoint_t endpoint;             //  what the path (and query) named
    sl_providers_t *routes;             //  borrowed; never changes while the gateway runs
    sl_buf_t body;                      //  the request body, the task's own copy
    void *owner;                        //  the caller's (the worker never reads it)
    void *caller;                       //  the caller's too: who sent the request
    //  Output
    int rc;                             //  0 parsed, -1 refused (parsed.status says why)
    sl_job_t parsed;
    int64_t took_us;                    //  time the parse took
} parse_worker_task_t;

//  A task came back parsed; the callee owns it (parse_worker_task_destroy).
typedef void (parse_worker_done_fn) (void *arg, parse_worker_task_t *task);

//  Start the worker thread; its results come back in loop.
parse_worker_t *parse_worker_new (zloop_t *loop, parse_worker_done_fn *done, void *arg);
//  Stops the thread; tasks still with it are freed unanswered.
void parse_worker_destroy (parse_worker_t **self_p);
//  Hand a task over (the worker owns it until done gives it back).
void parse_worker_submit (parse_worker_t *self, parse_worker_task_t *task);
parse_worker_task_t *parse_worker_task_new (void);
void parse_worker_task_destroy (parse_worker_task_t **task_p);

#endif
