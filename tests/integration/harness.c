/*  harness.c - start, watch and stop sluice processes (see harness.h). */
#include "tests/integration/harness.h"

#include <czmq.h>

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/bus/sl_keys.h"

#define POLL_MS 5

static void
s_pause (void)
{
    struct timespec ts = { 0, POLL_MS * 1000000L };
    nanosleep (&ts, NULL);
}

proc_t *
proc_start (const char *dir, const char *name, const char *const *args)
{
    return proc_start_as (dir, name, name, args);
}

//  The kernel's range of ephemeral ports (what a bind to port 0 or an
//  outgoing connection takes), from /proc; Linux's default when unreadable.
static void
s_ephemeral_range (int *low, int *high)
{
    *low = 32768;
    *high = 60999;
    FILE *f = fopen ("/proc/sys/net/ipv4/ip_local_port_range", "r");
    if (f) {
        if (fscanf (f, "%d %d", low, high) != 2) {
            *low = 32768;
            *high = 60999;
        }
        fclose (f);
    }
}

//  A port picked now and bound later by a process (a cluster's fixed
//  endpoints, so a killed instance comes back on the same one) must not be
//  one the kernel may hand out meanwhile: every outgoing connection of
//  every process takes an ephemeral port. So it comes from below the
//  ephemeral range, at random, checked free with a bind.
#define HARNESS_PORT_FLOOR 10000        //  fixed ports are picked at or above this
#define HARNESS_PORT_TRIES 200
#define HARNESS_PORTS_REMEMBERED 256

int
harness_free_port (void)
{
    int low, high;
    s_ephemeral_range (&low, &high);
    (void) high;
    //  Seeded from the kernel: test processes started together (pids and
    //  seconds that differ by one) must not walk the same sequence.
    static unsigned seed;
    static bool seeded;
    if (!seeded) {
        if (getrandom (&seed, sizeof seed, 0) != (ssize_t) sizeof seed)
            seed = (unsigned) getpid () * 2654435761u ^ (unsigned) time (NULL);
        seeded = true;
    }
    //  A port handed out is not handed out again by this process: it may be
    //  free now only because the process meant to bind it has not yet.
    static int given [HARNESS_PORTS_REMEMBERED];
    static size_t given_count, given_next;
    int span = low - HARNESS_PORT_FLOOR;
    for (int i = 0; span > 0 && i < HARNESS_PORT_TRIES; i++) {
        int port = HARNESS_PORT_FLOOR + (int) (rand_r (&seed) % (unsigned) span);
        bool taken = false;
        for (size_t k = 0; k < given_count && !taken; k++)
            taken = given [k] == port;
        if (taken)
            continue;
        int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK),
                                 .sin_port = htons ((uint16_t) port) };
        int rc = fd >= 0 ? bind (fd, (struct sockaddr *) &a, sizeof a) : -1;
        if (fd >= 0)
            close (fd);
        if (rc == 0) {
            given [given_next++ % HARNESS_PORTS_REMEMBERED] = port;
            if (given_count < HARNESS_PORTS_REMEMBERED)
                given_count++;
            return port;
        }
    }
    //  No room below the ephemeral range: let the kernel pick one.
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    bind (fd, (struct sockaddr *) &a, sizeof a);
    socklen_t len = sizeof a;
    getsockname (fd, (struct sockaddr *) &a, &len);
    close (fd);
    return ntohs (a.sin_port);
}

int
harness_refusing_port (int *holder)
{
    //  Close-on-exec: the processes the harness starts must not inherit it.
    *holder = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    if (*holder < 0
    ||  bind (*holder, (struct sockaddr *) &a, sizeof a)
    ||  getsockname (*holder, (struct sockaddr *) &a, &len))
        return -1;
    return ntohs (a.sin_port);
}

proc_t *
proc_start_as (const char *dir, const char *name, const char *label, const char *const *args)
{
    return proc_start_from (NULL, dir, name, label, args);
}

proc_t *
proc_start_from (const char *bin_dir, const char *dir, const char *name, const char *label,
                 const char *const *args)
{
    if (!bin_dir)
        bin_dir = getenv ("SLUICE_BIN_DIR");
    if (!bin_dir)
        bin_dir = "build/bin";
    proc_t *p = calloc (1, sizeof *p);
    snprintf (p->name, sizeof p->name, "%s", label);
    snprintf (p->log_path, sizeof p->log_path, "%s/%s.log", dir, label);
    char path [512];
    snprintf (path, sizeof path, "%s/sluice-%s", bin_dir, name);
    const char *argv [64];
    int n = 0;
    argv [n++] = path;
    for (int i = 0; args && args [i] && n < 62; i++)
        argv [n++] = args [i];
    argv [n] = NULL;
    pid_t pid = fork ();
    if (pid == 0) {
        //  A test that fails an assertion ends before it stops what it
        //  started: the processes go with it instead of running on.
        prctl (PR_SET_PDEATHSIG, SIGTERM);
        int fd = open (p->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2 (fd, 1);
        dup2 (fd, 2);
        close (fd);
        setpgid (0, 0);
        //  SIGTERM stops a process at once, as the harness (and a test
        //  that died) expects, unless the test asks for a drain with
        //  --drain-ms (a flag wins over the variable).
        setenv ("SLUICE_DRAIN_MS", "0", 0);
        execv (path, (char *const *) argv);
        fprintf (stderr, "cannot exec %s: %s\n", path, strerror (errno));
        _exit (127);
    }
    if (pid < 0) {
        free (p);
        return NULL;
    }
    p->pid = pid;
    return p;
}

bool
proc_wait_log (proc_t *p, const char *needle, const char *after,
               char *value, size_t size, int timeout_ms)
{
    long deadline = zclock_mono () + timeout_ms;
    char line [4096];
    while (zclock_mono () < deadline) {
        FILE *f = fopen (p->log_path, "r");
        while (f && fgets (line, sizeof line, f)) {
            char *hit = strstr (line, needle);
            if (!hit)
                continue;
            if (!after) {
                fclose (f);
                return true;
            }
            char *v = strstr (hit, after);
            if (!v)
                continue;
            v += strlen (after);
            if (value && size) {
                size_t n = strcspn (v, " \"\n");
                if (n >= size)
                    n = size - 1;
                memcpy (value, v, n);
                value [n] = 0;
            }
            fclose (f);
            return true;
        }
        if (f)
            fclose (f);
        //  A process that died will never log it.
        if (waitpid (p->pid, NULL, WNOHANG) == p->pid) {
            p->pid = 0;
            return false;
        }
        s_pause ();
    }
    return false;
}

int
proc_wait_exit (proc_t *p, int timeout_ms)
{
    if (!p || p->pid <= 0)
        return -1;
    long deadline = zclock_mono () + timeout_ms;
    int status;
    while (zclock_mono () < deadline) {
        if (waitpid (p->pid, &status, WNOHANG) == p->pid) {
            p->pid = 0;
            return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
        }
        s_pause ();
    }
    proc_kill (p);
    return -1;
}

int
harness_keygen (const char *dir, char *keys, size_t size)
{
    snprintf (keys, size, "%s/keys", dir);
    const char *args [] = { "--dir", keys, NULL };
    proc_t *p = proc_start (dir, "keygen", args);
    if (!p)
        return -1;
    int rc = proc_wait_exit (p, 15000);
    if (rc != 0)
        proc_dump (p);
    unlink (p->log_path);
    free (p);
    return rc == 0 ? 0 : -1;
}

int
harness_curve (void *zsock, const char *keys, const char *key, const char *server)
{
    bool loose;
    char *error = NULL;
    zcert_t *cert = sl_keys_load_secret (keys, key, &loose, &error);
    if (!cert) {
        fprintf (stderr, "harness: %s\n", error);
        free (error);
        return -1;
    }
    zcert_apply (cert, zsock_resolve (zsock));
    zcert_destroy (&cert);
    if (!server) {
        zsock_set_curve_server (zsock, 1);
        return 0;
    }
    sl_keys_t *all = sl_keys_new ();
    int rc = -1;
    if (sl_keys_load (all, keys, &error) >= 0 && sl_keys_named (all, server)) {
        zsock_set_curve_serverkey_bin (zsock, sl_keys_named (all, server)->public_key);
        rc = 0;
    }
    free (error);
    sl_keys_destroy (&all);
    return rc;
}

int
proc_stop (proc_t *p, int timeout_ms)
{
    if (!p || p->pid <= 0)
        return -1;
    kill (p->pid, SIGTERM);
    long deadline = zclock_mono () + timeout_ms;
    int status;
    while (zclock_mono () < deadline) {
        pid_t r = waitpid (p->pid, &status, WNOHANG);
        if (r == p->pid) {
            p->pid = 0;
            return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
        }
        s_pause ();
    }
    proc_kill (p);
    return -1;
}

void
proc_kill (proc_t *p)
{
    if (p && p->pid > 0) {
        kill (p->pid, SIGKILL);
        waitpid (p->pid, NULL, 0);
        p->pid = 0;
    }
}

void
proc_dump (proc_t *p)
{
    if (!p)
        return;
    FILE *f = fopen (p->log_path, "r");
    char line [4096];
    fprintf (stderr, "---- %s log ----\n", p->name);
    while (f && fgets (line, sizeof line, f))
        fputs (line, stderr);
    if (f)
        fclose (f);
}

//  --------------------------------------------------------------------------

static bool
s_up (proc_t *p, const char *needle, const char *after, char *value, size_t size)
{
    if (p && proc_wait_log (p, needle, after, value, size, 15000))
        return true;
    if (p)
        proc_dump (p);
    return false;
}

int
harness_write (const char *dir, const char *name, const char *text)
{
    //  Written whole under another name, then renamed: a process that
    //  reloads the file never reads half of it.
    char path [512], tmp [520];
    snprintf (path, sizeof path, "%s/%s", dir, name);
    snprintf (tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen (tmp, "w");
    if (!f)
        return -1;
    fputs (text, f);
    if (fclose (f) != 0)
        return -1;
    return rename (tmp, path);
}

bool
harness_read (const char *path, sl_buf_t *out)
{
    sl_buf_reset (out);
    FILE *f = fopen (path, "rb");
    if (f) {
        char chunk [8192];
        size_t n;
        while ((n = fread (chunk, 1, sizeof chunk, f)) > 0)
            sl_buf_append (out, chunk, n);
        fclose (f);
    }
    sl_buf_cstr (out);
    return f != NULL;
}

//  Write text to dir/name, "@MOCK@" replaced by the mock's base URL; the
//  file's path goes to path.
static int
s_write_file (sluice_stack_t *s, const char *name, const char *text, char *path, size_t size)
{
    snprintf (path, size, "%s/%s", s->dir, name);
    char base [64];
    snprintf (base, sizeof base, "http://127.0.0.1:%d", s->mock_port);
    FILE *f = fopen (path, "w");
    if (!f)
        return -1;
    for (const char *p = text; *p; p++)
        if (strncmp (p, "@MOCK@", 6) == 0) {
            fputs (base, f);
            p += 5;
        }
        else
            fputc (*p, f);
    fclose (f);
    return 0;
}

static int
s_write_policy (sluice_stack_t *s, const char *text)
{
    return s_write_file (s, "policy.yaml", text, s->policy_path, sizeof s->policy_path);
}

//  Append a NULL-terminated list to a NULL-terminated argv of size max.
static void
s_append_args (const char **argv, int max, const char *const *extra)
{
    int n = 0;
    while (argv [n])
        n++;
    for (int i = 0; extra && extra [i] && n < max - 1; i++)
        argv [n++] = extra [i];
    argv [n] = NULL;
}

void
harness_mock_urls (mock_urls_t *self, int mock_port, const char **args, size_t room)
{
    size_t n = 0;
    while (args [n])
        n++;
    size_t vendors = 0;
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        //  A cloud's door has no built-in provider, so no option.
        if (!sl_dialect_is_client (d) || !sl_dialect_vendor_first (d) || n + 2 >= room)
            continue;
        const char *host = strstr (d->base_url, "://");
        const char *path = host ? strchr (host + 3, '/') : NULL;
        self->option [vendors][0] = '-';
        self->option [vendors][1] = '-';
        sl_dialect_option (d, SL_DIALECT_BASE_URL_OPTION, self->option [vendors] + 2);
        snprintf (self->url [vendors], sizeof self->url [vendors], "http://127.0.0.1:%d%s", mock_port,
                  path ? path : "");
        args [n++] = self->option [vendors];
        args [n++] = self->url [vendors];
        vendors++;
    }
    args [n] = NULL;
}

sluice_stack_t *
stack_start (const stack_opts_t *opts)
{
    sluice_stack_t *s = calloc (1, sizeof *s);
    snprintf (s->dir, sizeof s->dir, "/tmp/sluice-test-XXXXXX");
    if (!mkdtemp (s->dir)) {
        free (s);
        return NULL;
    }
    char delay [16], port [16], inbox [300], next [300], gateways [300], peer [320];
    if (harness_keygen (s->dir, s->keys, sizeof s->keys)) {
        free (s);
        return NULL;
    }
    //  The emitter connects to the gateway, which starts last: its inbox
    //  port is picked now.
    bool ipc = opts && opts->ipc;
    char binds [4][300];                //  emitter, judge, aggregator, ingest: their inboxes
    static const char *stages [4] = { "emitter", "judge", "aggregator", "ingest" };
    for (int i = 0; i < 4; i++)
        if (ipc)
            snprintf (binds [i], sizeof binds [i], "ipc://%s/%s.ipc", s->dir, stages [i]);
        else
            snprintf (binds [i], sizeof binds [i], "tcp://127.0.0.1:*");
    if (ipc)
        snprintf (s->gateway_inbox, sizeof s->gateway_inbox, "ipc://%s/gateway.ipc", s->dir);
    else
        snprintf (s->gateway_inbox, sizeof s->gateway_inbox, "tcp://127.0.0.1:%d", harness_free_port ());
    snprintf (gateways, sizeof gateways, "%s", s->gateway_inbox);
    snprintf (delay, sizeof delay, "%d", opts ? opts->mock_delay_ms : 0);
    const char *mock_args [32] = { "--host", "127.0.0.1", "--port", "0", "--delay-ms", delay, NULL };
    s_append_args (mock_args, 32, opts ? opts->mock_args : NULL);
    s->mock = proc_start (s->dir, "mock", mock_args);
    if (!s_up (s->mock, "\"listening\"", "http=127.0.0.1:", port, sizeof port))
        goto failed;
    s->mock_port = atoi (port);

    const char *emitter_args [32] = { "--bind", binds [0], "--pub", "tcp://127.0.0.1:*",
                                      "--pub-meta", "tcp://127.0.0.1:*", "--gateways", gateways,
                                      "--keys", s->keys, "--metrics-port", "0", NULL };
    if (opts && opts->audit_spool) {
        const char *audit_args [] = { "--audit", "tcp://127.0.0.1:*", NULL, NULL, NULL };
        if (*opts->audit_spool) {
            audit_args [2] = "--audit-spool";
            audit_args [3] = opts->audit_spool;
        }
        s_append_args (emitter_args, 32, audit_args);
    }
    s_append_args (emitter_args, 32, opts ? opts->emitter_args : NULL);
    s->emitter = proc_start (s->dir, "emitter", emitter_args);
    if ((opts && opts->audit_spool && !s_up (s->emitter, "\"audit_bound\"", "endpoint=", s->audit, sizeof s->audit))
    ||  !s_up (s->emitter, "\"pub_bound\"", "endpoint=", s->pub, sizeof s->pub)
    ||  !s_up (s->emitter, "\"pub_meta_bound\"", "endpoint=", s->pub_meta, sizeof s->pub_meta)
    ||  !s_up (s->emitter, "\"inbox_bound\"", "endpoint=", inbox, sizeof inbox)
    ||  !s_up (s->emitter, "\"started\"", "metrics_port=", s->metrics [4], sizeof s->metrics [4]))
        goto failed;

    snprintf (next, sizeof next, "%s", inbox);
    snprintf (s->inbox [4], sizeof s->inbox [4], "%s", inbox);
    if (opts && opts->policy_text && s_write_policy (s, opts->policy_text))
        goto failed;
    if (opts && opts->routes_text
    &&  s_write_file (s, "routes.yaml", opts->routes_text, s->routes_path, sizeof s->routes_path))
        goto failed;
    const char *routes_args [] = { "--routes", s->routes_path, NULL };
    const char *judge_args [64] = { "--bind", binds [1], "--next", next, "--metrics-port", "0",
                                    "--keys", s->keys, "--approvals-bind", "tcp://127.0.0.1:*",
                                    "--policy", s->policy_path [0] ? s->policy_path
                                              : opts && opts->policy ? opts->policy : "", NULL };
    for (int i = 0, n = 12; opts && opts->judge_args && opts->judge_args [i] && n < 62; i++)
        judge_args [n++] = opts->judge_args [i];
    s->judge = proc_start (s->dir, "judge", judge_args);
    if (!s_up (s->judge, "\"approvals_bound\"", "endpoint=", s->approvals, sizeof s->approvals)
    ||  !s_up (s->judge, "\"inbox_bound\"", "endpoint=", inbox, sizeof inbox)
    ||  !s_up (s->judge, "\"started\"", "metrics_port=", s->metrics [3], sizeof s->metrics [3]))
        goto failed;

    snprintf (next, sizeof next, "%s", inbox);
    snprintf (s->inbox [3], sizeof s->inbox [3], "%s", inbox);
    const char *agg_args [32] = { "--bind", binds [2], "--next", next, "--metrics-port", "0",
                                  "--keys", s->keys, NULL };
    s_append_args (agg_args, 32, opts ? opts->aggregator_args : NULL);
    s->aggregator = proc_start (s->dir, "aggregator", agg_args);
    if (!s_up (s->aggregator, "\"inbox_bound\"", "endpoint=", inbox, sizeof inbox)
    ||  !s_up (s->aggregator, "\"started\"", "metrics_port=", s->metrics [2], sizeof s->metrics [2]))
        goto failed;

    snprintf (next, sizeof next, "%s", inbox);
    snprintf (s->inbox [2], sizeof s->inbox [2], "%s", inbox);
    const char *ingest_args [48] = { "--bind", binds [3], "--next", next, "--metrics-port", "0",
                                     "--keys", s->keys, NULL };
    mock_urls_t urls;
    harness_mock_urls (&urls, s->mock_port, ingest_args, 48);
    s_append_args (ingest_args, 48, s->routes_path [0] ? routes_args : NULL);
    s_append_args (ingest_args, 48, opts ? opts->ingest_args : NULL);
    s->ingest = proc_start (s->dir, "ingest", ingest_args);
    if (!s_up (s->ingest, "\"inbox_bound\"", "endpoint=", inbox, sizeof inbox)
    ||  !s_up (s->ingest, "\"started\"", "metrics_port=", s->metrics [1], sizeof s->metrics [1]))
        goto failed;

    snprintf (next, sizeof next, "%s", inbox);
    snprintf (s->inbox [1], sizeof s->inbox [1], "%s", inbox);
    snprintf (s->inbox [5], sizeof s->inbox [5], "%s", s->gateway_inbox);
    const char *gw_args [32] = { "--http-host", "127.0.0.1", "--http-port", "0", "--bind", s->gateway_inbox,
                                 "--next", next, "--metrics-port", "0", "--keys", s->keys, NULL };
    s_append_args (gw_args, 32, s->routes_path [0] ? routes_args : NULL);
    //  The gateway reads the judge's policy too (its request rules).
    const char *policy = s->policy_path [0] ? s->policy_path : opts && opts->policy ? opts->policy : "";
    const char *policy_args [] = { "--policy", policy, NULL };
    s_append_args (gw_args, 32, *policy ? policy_args : NULL);
    const char *approvals_args [] = { "--judge-approvals", s->approvals, NULL };
    s_append_args (gw_args, 32, opts && opts->gateway_approvals ? approvals_args : NULL);
    s_append_args (gw_args, 32, opts ? opts->gateway_args : NULL);
    s->gateway = proc_start_from (opts ? opts->gateway_bin_dir : NULL, s->dir, "gateway", "gateway", gw_args);
    if (!s_up (s->gateway, "\"listening\"", "http=127.0.0.1:", port, sizeof port)
    ||  !s_up (s->gateway, "\"started\"", "metrics_port=", s->metrics [5], sizeof s->metrics [5]))
        goto failed;
    //  Ready when the emitter has heard from the gateway (frames go only to
    //  a gateway that announced itself).
    char rest [8];
    snprintf (peer, sizeof peer, "endpoint=%s\"", s->gateway_inbox);
    if (!s_up (s->emitter, "\"peer_up\"", peer, rest, sizeof rest))
        goto failed;
    s->http_port = atoi (port);
    return s;

failed:
    stack_stop (s);
    return NULL;
}

int
stack_stop (sluice_stack_t *s)
{
    if (!s)
        return 0;
    //  Front to back, so no process sees its peer vanish mid-request.
    proc_t *order [] = { s->gateway, s->ingest, s->aggregator, s->judge, s->emitter, s->mock };
    int unclean = 0;
    for (int i = 0; i < 6; i++) {
        if (!order [i])
            continue;
        int rc = proc_stop (order [i], 10000);
        if (rc != 0) {
            unclean++;
            fprintf (stderr, "%s exited with %d\n", order [i]->name, rc);
            proc_dump (order [i]);
        }
        unlink (order [i]->log_path);
        free (order [i]);
    }
    if (s->policy_path [0])
        unlink (s->policy_path);
    if (s->routes_path [0])
        unlink (s->routes_path);
    if (s->keys [0]) {
        char cmd [400];
        snprintf (cmd, sizeof cmd, "rm -rf '%s'", s->keys);
        if (system (cmd) != 0)
            fprintf (stderr, "cannot remove %s\n", s->keys);
    }
    rmdir (s->dir);
    free (s);
    return unclean;
}

//  --------------------------------------------------------------------------

static size_t
s_collect (char *ptr, size_t size, size_t nmemb, void *arg)
{
    sl_buf_append ((sl_buf_t *) arg, ptr, size * nmemb);
    return size * nmemb;
}

int
http_request (int port, const char *method, const char *path, const char *body,
              const char *const *headers, sl_buf_t *out, int timeout_ms)
{
    return http_request_full (port, method, path, body, headers, out, NULL, timeout_ms);
}

int
http_request_full (int port, const char *method, const char *path, const char *body,
                   const char *const *headers, sl_buf_t *out, sl_buf_t *out_headers, int timeout_ms)
{
    CURL *easy = curl_easy_init ();
    char url [256];
    snprintf (url, sizeof url, "http://127.0.0.1:%d%s", port, path);
    curl_easy_setopt (easy, CURLOPT_URL, url);
    curl_easy_setopt (easy, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt (easy, CURLOPT_POSTFIELDS, body);
    struct curl_slist *list = curl_slist_append (NULL, "Content-Type: application/json");
    for (int i = 0; headers && headers [i]; i++)
        list = curl_slist_append (list, headers [i]);
    curl_easy_setopt (easy, CURLOPT_HTTPHEADER, list);
    curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_collect);
    curl_easy_setopt (easy, CURLOPT_WRITEDATA, out);
    if (out_headers) {
        curl_easy_setopt (easy, CURLOPT_HEADERFUNCTION, s_collect);
        curl_easy_setopt (easy, CURLOPT_HEADERDATA, out_headers);
    }
    curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, (long) timeout_ms);
    curl_easy_setopt (easy, CURLOPT_NOSIGNAL, 1L);
    long status = 0;
    if (curl_easy_perform (easy) == CURLE_OK)
        curl_easy_getinfo (easy, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all (list);
    curl_easy_cleanup (easy);
    return (int) status;
}

double
metric_value (int port, const char *name)
{
    sl_buf_t out = { 0 };
    double value = -1;
    if (http_request (port, "GET", "/metrics", NULL, NULL, &out, 5000) == 200) {
        const char *text = sl_buf_cstr (&out);
        size_t n = strlen (name);
        for (const char *line = text; line && *line; line = strchr (line, '\n') ? strchr (line, '\n') + 1 : NULL)
            if (strncmp (line, name, n) == 0 && (line [n] == ' ' || line [n] == '{')) {
                const char *v = strchr (line, ' ');
                if (v) {
                    value = atof (v + 1);
                    break;
                }
            }
    }
    sl_buf_free (&out);
    return value;
}

//  Poll a metric until done (v, want) holds or timeout_ms passed.
static double
s_wait_metric (int port, const char *name, double want, int timeout_ms, bool up)
{
    int64_t deadline = zclock_mono () + timeout_ms;
    double v = metric_value (port, name);
    while ((up ? v < want : v > want) && zclock_mono () < deadline) {
        s_pause ();
        v = metric_value (port, name);
    }
    return v;
}

double
harness_wait_metric (int port, const char *name, double want, int timeout_ms)
{
    return s_wait_metric (port, name, want, timeout_ms, true);
}

double
harness_wait_metric_down (int port, const char *name, double want, int timeout_ms)
{
    return s_wait_metric (port, name, want, timeout_ms, false);
}
