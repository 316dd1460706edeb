/*  parser.h - large request bodies parsed off the gateway's reactor.

    Preparing a legal 10 MiB request (parse, route, translate) takes 90-120
    ms with the optimized build and 140-330 ms under the sanitizers, idle or
    with streams flowing (jansson builds a tree of every message; the
    costliest shape the request memory bound lets through is a long
    conversation of short turns). Several such requests at once, inside
    the reactor, are longer than a peer may stay silent before it is
    declared dead (SL_HB_DEAD_MS): the gateway stopped answering the
    emitters' heartbeats and reading the ingest's. So a body over
    PARSER_INLINE_BYTES is prepared by one worker thread: the reactor hands
    it a job holding its own copy of the body, and gets the job back
    through the actor's pipe (a reader in the same zloop). The worker
    shares nothing with the reactor but the job it holds, and the routes,
    which nothing changes once the gateway runs; sl_job is a pure
    library. Jobs are done one at a time, in order.

    Smaller bodies are parsed inline: that takes microseconds, and a trip
    through the thread would only add latency.
*/
#ifndef PARSER_H
#define PARSER_H

#include <czmq.h>
#include <stdint.h>

#include "common/dialects/sl_job.h"
#include "common/base/sl_buf.h"

#define PARSER_INLINE_BYTES (256u << 10)    //  bodies up to this are parsed in the reactor

typedef struct _parser_t parser_t;

//  One request to parse. The caller fills the input and may attach its own
//  context (owner, never touched by the worker); the worker fills the output.
typedef struct {
    //  Input
    sl_endpoint_t endpoint;             //  what the path (and query) named
    sl_providers_t *routes;                //  borrowed; never changes while the gateway runs
    sl_buf_t body;                      //  the request body, the job's own copy
    void *owner;                        //  the caller's (the worker never reads it)
    //  Output
    int rc;                             //  0 parsed, -1 refused (parsed.status says why)
    sl_job_t parsed;
    int64_t took_us;                    //  time the parse took
} parser_job_t;

//  A job came back parsed; the callee owns it (parser_job_destroy).
typedef void (parser_done_fn) (void *arg, parser_job_t *job);

//  Start the worker; its results come back in loop.
parser_t *parser_new (zloop_t *loop, parser_done_fn *done, void *arg);
//  Stops the worker; jobs still with it are freed unanswered.
void parser_destroy (parser_t **self_p);
//  Hand a job over (the parser owns it until done gives it back).
void parser_submit (parser_t *self, parser_job_t *job);
//  Parse, route and translate a body (sl_job_prepare).
int parser_parse (const sl_endpoint_t *endpoint, sl_str_t body, sl_providers_t *routes, sl_job_t *out);
//  Parse a job here and now (what the worker does).
void parser_run (parser_job_t *job);
parser_job_t *parser_job_new (void);
void parser_job_destroy (parser_job_t **job_p);

#endif
