/*  otel_receiver.c - the OTLP receiver of tests/otel for a test (see
    otel_receiver.h). */
#include "tests/integration/otel_receiver.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <czmq.h>

#include "common/base/sl_buf.h"
#include "tests/integration/harness.h"

#define RECEIVER_READY_MS 15000         //  node's start on a loaded machine
#define RECEIVER_ARGS_MAX 24
#define POLL_NS (20 * 1000000L)

//  The one receiver a test process runs, killed at exit whatever happens.
static pid_t s_running = -1;

static void
s_kill_running (void)
{
    if (s_running > 0) {
        kill (-s_running, SIGKILL);
        waitpid (s_running, NULL, 0);
        s_running = -1;
    }
}

void
otel_receiver_skip_without_node (void)
{
    if (access (OTEL_RECEIVER_DIR "/node_modules/@opentelemetry/otlp-transformer/package.json", R_OK) != 0)
        cr_skip_test ("the receiver's packages are not installed in " OTEL_RECEIVER_DIR "/node_modules "
                      "(make otel-deps; it needs npm and the npm registry)");
    if (system ("node --version > /dev/null 2>&1") != 0)
        cr_skip_test ("node is not installed (make sdk-deps installs Debian's nodejs and npm)");
}

void
otel_receiver_start (otel_receiver_t *self, const char *mode, const char *const *extra)
{
    otel_receiver_skip_without_node ();
    memset (self, 0, sizeof *self);
    snprintf (self->dir, sizeof self->dir, "/tmp/sluice-otlp-XXXXXX");
    cr_assert_not_null (mkdtemp (self->dir));
    snprintf (self->out, sizeof self->out, "%s/received.jsonl", self->dir);
    char log [600], port_text [16];
    snprintf (log, sizeof log, "%s/receiver.log", self->dir);
    self->port = harness_free_port ();
    cr_assert_gt (self->port, 0);
    snprintf (port_text, sizeof port_text, "%d", self->port);
    const char *argv [RECEIVER_ARGS_MAX] = { "node", OTEL_RECEIVER_DIR "/receiver.mjs", "--port", port_text,
                                             "--out", self->out, "--mode", mode };
    int argc = 8;
    for (int i = 0; extra && extra [i] && argc < RECEIVER_ARGS_MAX - 2; i++)
        argv [argc++] = extra [i];
    argv [argc] = NULL;
    self->pid = fork ();
    cr_assert_geq (self->pid, 0);
    if (self->pid == 0) {
        setpgid (0, 0);
        int fd = open (log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2 (fd, 1);
        dup2 (fd, 2);
        execvp ("node", (char *const *) argv);
        _exit (127);
    }
    setpgid (self->pid, self->pid);
    s_running = self->pid;
    atexit (s_kill_running);
    //  Ready when it says so (bounded).
    int64_t deadline = zclock_mono () + RECEIVER_READY_MS;
    sl_buf_t text = { 0 };
    while (zclock_mono () < deadline) {
        sl_buf_reset (&text);
        if (harness_read (log, &text) && strstr (sl_buf_cstr (&text), "listening"))
            break;
        nanosleep (&(struct timespec) { 0, POLL_NS }, NULL);
    }
    bool ready = text.data && strstr (sl_buf_cstr (&text), "listening");
    if (!ready)
        fprintf (stderr, "receiver log: %s\n", text.data ? sl_buf_cstr (&text) : "");
    sl_buf_free (&text);
    cr_assert (ready, "the receiver listens");
}

void
otel_receiver_kill (otel_receiver_t *self)
{
    if (self->pid > 0 && self->pid == s_running)
        s_kill_running ();
    self->pid = -1;
}

char *
otel_receiver_received (otel_receiver_t *self)
{
    sl_buf_t text = { 0 };
    harness_read (self->out, &text);
    char *copy = strdup (text.data ? sl_buf_cstr (&text) : "");
    sl_buf_free (&text);
    return copy;
}
