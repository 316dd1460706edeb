/*  parser.c - a worker thread that parses large request bodies (see
    parser.h). */
#include "services/gateway/parser.h"

#include <jansson.h>
#include <stdlib.h>

#include "common/base/sl_alloc.h"

struct _parser_t {
    zactor_t *worker;
    zloop_t *loop;
    parser_done_fn *done;
    void *arg;
    zlistx_t *in_flight;                //  jobs with the worker
};

parser_job_t *
parser_job_new (void)
{
    return sl_xcalloc (1, sizeof (parser_job_t));
}

void
parser_job_destroy (parser_job_t **job_p)
{
    if (!job_p || !*job_p)
        return;
    parser_job_t *job = *job_p;
    sl_buf_free (&job->body);
    sl_job_clear (&job->parsed);    //  all empty until parsed
    free (job);
    *job_p = NULL;
}

int
parser_parse (const sl_endpoint_t *endpoint, sl_str_t body, sl_providers_t *routes, sl_job_t *out)
{
    return sl_job_prepare (endpoint, body, routes, out);
}

void
parser_run (parser_job_t *job)
{
    int64_t started = zclock_usecs ();
    job->rc = parser_parse (&job->endpoint, sl_buf_str (&job->body), job->routes, &job->parsed);
    job->took_us = zclock_usecs () - started;
}

//  The worker: jobs in, parsed jobs out, on its pipe.
static void
s_worker (zsock_t *pipe, void *arg)
{
    (void) arg;
    zsock_signal (pipe, 0);
    while (true) {
        char *command = NULL;
        void *job = NULL;
        if (zsock_recv (pipe, "sp", &command, &job) < 0)
            break;
        bool stop = !command || strcmp (command, "$TERM") == 0;
        free (command);
        if (stop)
            break;
        parser_run (job);
        if (zsock_send (pipe, "p", job) < 0)
            break;
    }
}

static int
s_on_result (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    parser_t *self = arg;
    void *job = NULL;
    if (zsock_recv (reader, "p", &job) == 0 && job) {
        void *handle = zlistx_find (self->in_flight, job);
        if (handle)
            zlistx_delete (self->in_flight, handle);
        self->done (self->arg, job);
    }
    return 0;
}

parser_t *
parser_new (zloop_t *loop, parser_done_fn *done, void *arg)
{
    parser_t *self = sl_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->done = done;
    self->arg = arg;
    //  jansson seeds its hash function once, at the first object; do it
    //  here, before a second thread could race for it.
    json_object_seed (0);
    self->in_flight = zlistx_new ();
    self->worker = zactor_new (s_worker, NULL);
    zloop_reader (loop, zactor_sock (self->worker), s_on_result, self);
    return self;
}

void
parser_destroy (parser_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    parser_t *self = *self_p;
    zloop_reader_end (self->loop, zactor_sock (self->worker));
    //  The worker finishes the jobs it holds and stops at $TERM; the
    //  results it sent meanwhile are dropped with the pipe, so the jobs
    //  are freed from our own list once the thread is gone.
    zactor_destroy (&self->worker);
    for (parser_job_t *job = zlistx_first (self->in_flight); job; job = zlistx_next (self->in_flight))
        parser_job_destroy (&job);
    zlistx_destroy (&self->in_flight);
    free (self);
    *self_p = NULL;
}

void
parser_submit (parser_t *self, parser_job_t *job)
{
    zlistx_add_end (self->in_flight, job);
    zsock_send (zactor_sock (self->worker), "sp", "PARSE", job);
}
