/*  service_fixture.h - a service without sockets for unit tests of what
    wires itself into one (reload watches): its stderr captured into a
    file whose JSON log lines a test counts, and its loop run until a
    condition holds (bounded).

    Header-only, like the other unit-test helpers. One fixture at a time:
    a suite's init calls service_fixture_start, its fini _stop.
*/
#ifndef SERVICE_FIXTURE_H
#define SERVICE_FIXTURE_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/service/sl_service.h"

#define SERVICE_FIXTURE_DEADLINE_MS 10000   //  a loop waiting for an event gives up after this
#define SERVICE_FIXTURE_POLL_MS 5           //  and looks whether it came this often

static struct {
    char dir [64];                      //  a temporary directory for the test's files
    char log [128];                     //  stderr, where the log lines go
    int saved_stderr;
    sl_service_t *svc;
} service_fixture;

//  A service named "test", its stderr going to a file in a new directory.
static inline void
service_fixture_start (const char *name)
{
    snprintf (service_fixture.dir, sizeof service_fixture.dir, "/tmp/sluice-%s-XXXXXX", name);
    cr_assert_not_null (mkdtemp (service_fixture.dir));
    snprintf (service_fixture.log, sizeof service_fixture.log, "%s/stderr", service_fixture.dir);
    fflush (stderr);
    service_fixture.saved_stderr = dup (STDERR_FILENO);
    FILE *log = fopen (service_fixture.log, "w");
    cr_assert_not_null (log);
    dup2 (fileno (log), STDERR_FILENO);
    fclose (log);
    char *argv [] = { "sluice-test", NULL };
    int code;
    service_fixture.svc = sl_service_new ("test", NULL, "off", 1, argv, &code);
    cr_assert_not_null (service_fixture.svc);
}

//  Ends the service, gives stderr back and removes the directory (and the
//  files the test named in it).
static inline void
service_fixture_stop (const char *const *files)
{
    sl_service_destroy (&service_fixture.svc);
    dup2 (service_fixture.saved_stderr, STDERR_FILENO);
    close (service_fixture.saved_stderr);
    for (size_t i = 0; files && files [i]; i++)
        unlink (files [i]);
    unlink (service_fixture.log);
    rmdir (service_fixture.dir);
}

//  Lines logged with this event whose message holds text ("" for any).
static inline int
service_fixture_logged (const char *event, const char *text)
{
    FILE *f = fopen (service_fixture.log, "r");
    cr_assert_not_null (f);
    char line [4096];
    int count = 0;
    while (fgets (line, sizeof line, f)) {
        json_t *obj = json_loads (line, 0, NULL);
        const char *e = json_string_value (json_object_get (obj, "event"));
        const char *msg = json_string_value (json_object_get (obj, "msg"));
        if (e && strcmp (e, event) == 0 && strstr (msg ? msg : "", text))
            count++;
        json_decref (obj);
    }
    fclose (f);
    return count;
}

//  A counter of the service's (unlabelled).
static inline uint64_t
service_fixture_metric (const char *name)
{
    return sl_metrics_counter (sl_service_metrics (service_fixture.svc), name, NULL, "")->value;
}

//  Replace a file with text. Each text a test writes to one file should
//  have its own length, so that every write is a change whatever the
//  clock's resolution.
static inline void
service_fixture_write (const char *path, const char *text)
{
    FILE *f = fopen (path, "w");
    cr_assert_not_null (f);
    fputs (text, f);
    fclose (f);
}

typedef bool (service_fixture_until_fn) (void *arg);

typedef struct {
    service_fixture_until_fn *until;
    void *arg;
} service_fixture_wait_t;

static int
service_fixture_on_poll (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    service_fixture_wait_t *wait = arg;
    return wait->until (wait->arg) ? -1 : 0;
}

static int
service_fixture_on_deadline (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    (void) arg;
    return -1;
}

//  Run the service's loop until until (arg) holds, or the deadline.
static inline void
service_fixture_run_until (service_fixture_until_fn *until, void *arg)
{
    service_fixture_wait_t wait = { until, arg };
    zloop_t *loop = sl_service_loop (service_fixture.svc);
    int poll = zloop_timer (loop, SERVICE_FIXTURE_POLL_MS, 0, service_fixture_on_poll, &wait);
    int deadline = zloop_timer (loop, SERVICE_FIXTURE_DEADLINE_MS, 1, service_fixture_on_deadline, NULL);
    zloop_start (loop);
    zloop_timer_end (loop, poll);
    zloop_timer_end (loop, deadline);
}

#endif
