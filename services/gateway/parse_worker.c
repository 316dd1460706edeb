/*  parse_worker.c - a worker thread that parses large request bodies off
    the gateway's reactor (see parse_worker.h). */
#include "services/gateway/parse_worker.h"

#include <jansson.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"

struct _parse_worker_t {
    zactor_t *worker;
    zloop_t *loop;
    parse_worker_done_fn *done;
    void *arg;
    zlistx_t *in_flight;                //  tasks with the thread
};

parse_worker_task_t *
parse_worker_task_new (void)
{
    return sl_xcalloc (1, sizeof (parse_worker_task_t));
}

void
parse_worker_task_destroy (parse_worker_task_t **task_p)
{
    if (!task_p || !*task_p)
        return;
    parse_worker_task_t *task = *task_p;
    sl_buf_free (&task->body);
    sl_job_clear (&task->parsed);       //  all empty until parsed
    free (task);
    *task_p = NULL;
}

//  Parse, route and translate a task's body (what the thread does).
static void
s_run (parse_worker_task_t *task, sl_toolcache_t *cache)
{
    int64_t started = zclock_usecs ();
    task->rc = sl_job_prepare (&task->endpoint, sl_buf_str (&task->body), task->routes, cache, &task->parsed);
    task->took_us = zclock_usecs () - started;
}

//  The thread: tasks in, parsed tasks out, on its pipe. It runs at a lower
//  priority than the reactor: on a loaded machine the CPU goes first to
//  the thread that answers heartbeats and writes to clients, and a large
//  parse waits (Linux: a thread's nice value is its own).
static void
s_worker (zsock_t *pipe, void *arg)
{
    (void) arg;
    if (setpriority (PRIO_PROCESS, (id_t) syscall (SYS_gettid), PARSE_WORKER_NICE) != 0)
        sl_log_debug ("parse_worker_nice", "the parse worker keeps the reactor's priority");
    //  The thread's own digests of tool definitions: nothing shared with
    //  the reactor's.
    sl_toolcache_t *cache = sl_toolcache_new ();
    zsock_signal (pipe, 0);
    while (true) {
        char *command = NULL;
        void *task = NULL;
        if (zsock_recv (pipe, "sp", &command, &task) < 0)
            break;
        bool stop = !command || strcmp (command, "$TERM") == 0;
        free (command);
        if (stop)
            break;
        s_run (task, cache);
        if (zsock_send (pipe, "p", task) < 0)
            break;
    }
    sl_toolcache_destroy (&cache);
}

static int
s_on_result (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    parse_worker_t *self = arg;
    void *task = NULL;
    if (zsock_recv (reader, "p", &task) == 0 && task) {
        void *handle = zlistx_find (self->in_flight, task);
        if (handle)
            zlistx_delete (self->in_flight, handle);
        self->done (self->arg, task);
    }
    return 0;
}

parse_worker_t *
parse_worker_new (zloop_t *loop, parse_worker_done_fn *done, void *arg)
{
    parse_worker_t *self = sl_xcalloc (1, sizeof *self);
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
parse_worker_destroy (parse_worker_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    parse_worker_t *self = *self_p;
    zloop_reader_end (self->loop, zactor_sock (self->worker));
    //  The thread finishes the tasks it holds and stops at $TERM; the
    //  results it sent meanwhile are dropped with the pipe, so the tasks
    //  are freed from our own list once the thread is gone.
    zactor_destroy (&self->worker);
    for (parse_worker_task_t *task = zlistx_first (self->in_flight); task; task = zlistx_next (self->in_flight))
        parse_worker_task_destroy (&task);
    zlistx_destroy (&self->in_flight);
    free (self);
    *self_p = NULL;
}

void
parse_worker_submit (parse_worker_t *self, parse_worker_task_t *task)
{
    zlistx_add_end (self->in_flight, task);
    zsock_send (zactor_sock (self->worker), "sp", "PARSE", task);
}
