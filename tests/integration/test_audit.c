/*  Integration: sluice-audit beside a running stack.

    - Streams through the stack appear in the store with their verdicts,
      on SQLite and on PostgreSQL (a cluster the test starts; skipped with
      the reason where the server's programs are absent); the client's key
      is there as its id, never itself.
    - kill -9 of sluice-audit under load, then a restart: every stream is
      recorded exactly once (the emitter kept the records in its spool and
      sent them again; the store wrote each once).
    - Past the emitter's spool bound, the loss is counted at the emitter
      and shows in the store as a gap.
    - Retention prunes by age and by size.
    - The webhook gets each blocked verdict, after retries; the export
      writes one line per stream; console keys guard the API. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "common/identity/sl_keyid.h"
#include "tests/pgtmp.h"
#include "tests/integration/audit_proc.h"
#include "tests/integration/cluster.h"
#include "tests/integration/harness.h"

#define REQ_TOOLS "{\"model\":\"mock-tools\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"tidy up\"}]," \
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\"}}}," \
    "{\"type\":\"function\",\"function\":{\"name\":\"run_shell\",\"parameters\":{\"type\":\"object\"}}}]}"
#define CLIENT_SECRET "sk-audit-SECRET-4711"
#define WAIT_MS 20000

static sluice_stack_t *
s_stack (const char *spool)
{
    stack_opts_t opts = { .policy = "deploy/policy.yaml", .mock_delay_ms = 1, .audit_spool = spool };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack comes up");
    return s;
}

static int
s_request (sluice_stack_t *s, const char *path, const char *body, const char *const *headers)
{
    sl_buf_t out = { 0 };
    int status = http_request (s->http_port, "POST", path, body, headers, &out, 20000);
    sl_buf_free (&out);
    return status;
}

static void
s_rm (const char *dir)
{
    char cmd [400];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}

//  --------------------------------------------------------------------------

static const char *
s_str (json_t *o, const char *key)
{
    json_t *v = json_object_get (o, key);
    return json_is_string (v) ? json_string_value (v) : "";
}

//  Streams through the stack, recorded with their verdicts, in the store
//  named by store_args.
static void
s_records_streams (const char *const *store_args, const char *store_kind)
{
    sluice_stack_t *s = s_stack ("");
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store_args, NULL, &a), "sluice-audit comes up");
    const char *auth [] = { "Authorization: Bearer " CLIENT_SECRET, NULL };
    cr_assert_eq (s_request (s, "/v1/chat/completions", REQ_TOOLS, auth), 200);
    cr_assert_eq (s_request (s, "/v1/messages",
                             "{\"model\":\"mock-tools\",\"max_tokens\":100,\"stream\":true,"
                             "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", NULL), 200);
    cr_assert_eq (s_request (s, "/v1/chat/completions",
                             "{\"model\":\"mock-error\",\"stream\":true,\"messages\":[{\"role\":\"user\","
                             "\"content\":\"hi\"}]}", NULL), 200);
    cr_assert_eq (s_request (s, "/v1/chat/completions",
                             "{\"model\":\"mock-text\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
                             NULL), 200);
    int ended = audit_wait_streams (&a, "state=ended", 4, WAIT_MS);
    cr_expect_eq (ended, 4, "every stream recorded to its end");
    //  The blocked call, found by rule: its arguments, the rule, the notice.
    cr_expect_eq (audit_wait_streams (&a, "rule=no-rm-rf&action=block&tool=run_shell", 2, WAIT_MS), 2);
    char id [SL_KEY_ID_SIZE];
    sl_key_id (CLIENT_SECRET, strlen (CLIENT_SECRET), id);
    char query [64];
    snprintf (query, sizeof query, "/api/streams?rule=no-rm-rf&key=%s", id);
    json_t *list = audit_get (&a, query);
    cr_assert_not_null (list);
    json_t *first = json_array_get (json_object_get (list, "streams"), 0);
    cr_assert_not_null (first);
    char path [128];
    snprintf (path, sizeof path, "/api/streams/%s", s_str (first, "sid"));
    json_t *stream = audit_get (&a, path);
    cr_assert_not_null (stream, "%s", path);
    json_t *verdicts = json_object_get (stream, "verdicts");
    cr_expect_eq (json_array_size (verdicts), 2, "get_weather and run_shell judged");
    bool blocked = false;
    for (size_t i = 0; i < json_array_size (verdicts); i++) {
        json_t *v = json_array_get (verdicts, i);
        if (strcmp (s_str (v, "tool"), "run_shell") == 0) {
            blocked = strcmp (s_str (v, "action"), "block") == 0 && strcmp (s_str (v, "rule"), "no-rm-rf") == 0;
            cr_expect_str_eq (s_str (v, "arguments"), "{\"command\":\"rm -rf /\"}");
            cr_expect_neq (strlen (s_str (v, "reason")), 0);
        }
    }
    cr_expect (blocked, "run_shell blocked by no-rm-rf");
    json_t *blocks = json_object_get (stream, "blocks");
    bool notice = false;
    for (size_t i = 0; i < json_array_size (blocks); i++)
        notice |= json_is_true (json_object_get (json_array_get (blocks, i), "replaced"))
               && strstr (s_str (json_array_get (blocks, i), "content"), "sluice blocked a call to run_shell");
    cr_expect (notice, "the notice the client got is recorded");
    json_t *row = json_object_get (stream, "stream");
    cr_expect_str_eq (s_str (row, "model"), "mock-tools");
    cr_expect_neq (strlen (s_str (row, "provider")), 0);
    cr_expect_str_eq (s_str (row, "tools"), "get_weather,run_shell");
    cr_expect_str_eq (s_str (row, "client_key"), id);
    cr_expect_str_eq (s_str (row, "client"), "openai");
    json_decref (stream);
    json_decref (list);
    //  The client's key: its id, not the key.
    snprintf (query, sizeof query, "key=%s", id);
    cr_expect_eq (audit_wait_streams (&a, query, 1, WAIT_MS), 1, "the stream is found by the key's id");
    //  Every dialect and the error.
    cr_expect_eq (audit_wait_streams (&a, "state=error", 1, WAIT_MS), 1, "the failed stream");
    json_t *meta = audit_get (&a, "/api/meta");
    cr_expect_str_eq (s_str (meta, "store"), store_kind);
    json_decref (meta);
    //  The judge's policy, from its report (every 5 s).
    json_t *policies = NULL;
    long deadline = zclock_mono () + 15000;
    while (zclock_mono () < deadline) {
        json_decref (policies);
        policies = audit_get (&a, "/api/policies");
        if (policies && json_array_size (json_object_get (policies, "policies")) > 0)
            break;
        usleep (100000);
    }
    json_t *p = json_array_get (json_object_get (policies, "policies"), 0);
    cr_expect_not_null (p, "the judge reported its policy");
    if (p) {
        cr_expect_not_null (strstr (s_str (p, "source"), "no-rm-rf"), "its rules");
        cr_expect_eq (strlen (s_str (p, "policy")), 12, "its id");
    }
    json_decref (policies);
    cr_expect_eq (proc_stop (a.proc, 10000), 0, "sluice-audit stops cleanly");
    //  The key never reached the audit (nor its log).
    FILE *f = fopen (a.proc->log_path, "r");
    char line [4096];
    while (f && fgets (line, sizeof line, f))
        cr_expect_null (strstr (line, CLIENT_SECRET));
    if (f)
        fclose (f);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
}

Test (audit, streams_are_recorded_with_their_verdicts_sqlite, .timeout = 90)
{
    char dir [] = "/tmp/sluice-audit-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    const char *store [] = { "--data-dir", dir, NULL };
    s_records_streams (store, "sqlite");
    //  Nowhere in the file either.
    char cmd [600];
    snprintf (cmd, sizeof cmd, "grep -c -a '%s' '%s/audit.db' '%s/audit.db-wal' >/dev/null 2>&1", CLIENT_SECRET, dir, dir);
    cr_expect_neq (system (cmd), 0, "the client's key is not in the store");
    s_rm (dir);
}

Test (audit, streams_are_recorded_with_their_verdicts_postgresql, .timeout = 120)
{
    pgtmp_t pg = { 0 };
    char reason [256];
    if (pgtmp_start (&pg, reason, sizeof reason))
        cr_skip_test ("PostgreSQL: %s", reason);
    const char *store [] = { "--dsn", pg.dsn, NULL };
    s_records_streams (store, "postgres");
    pgtmp_stop (&pg);
}

//  --------------------------------------------------------------------------
//  kill -9 under load

typedef struct {
    sluice_stack_t *stack;
    int total;
    volatile int done;                  //  requests answered so far
    int failed;
} s_load_t;

static void *
s_load (void *arg)
{
    s_load_t *l = arg;
    for (int i = 0; i < l->total; i++) {
        if (s_request (l->stack, "/v1/chat/completions", REQ_TOOLS, NULL) != 200)
            l->failed++;
        __atomic_add_fetch (&l->done, 1, __ATOMIC_SEQ_CST);
    }
    return NULL;
}

static int
s_done (s_load_t *l)
{
    return __atomic_load_n (&l->done, __ATOMIC_SEQ_CST);
}

//  Wait until the load has answered at least n requests (bounded).
static void
s_wait_load (s_load_t *l, int n, int timeout_ms)
{
    long deadline = zclock_mono () + timeout_ms;
    while (s_done (l) < n && zclock_mono () < deadline)
        usleep (5000);
}

Test (audit, kill_minus_nine_mid_load_records_every_stream_once, .timeout = 180)
{
    enum { STREAMS = 60 };
    char dir [] = "/tmp/sluice-audit-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    const char *store [] = { "--data-dir", dir, NULL };
    stack_opts_t opts = { .policy = "deploy/policy.yaml", .mock_delay_ms = 5, .audit_spool = "" };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store, NULL, &a));
    s_load_t load = { .stack = s, .total = STREAMS };
    pthread_t thread;
    cr_assert_eq (pthread_create (&thread, NULL, s_load, &load), 0);
    //  Mid-load: some streams recorded, more coming.
    int before = audit_wait_streams (&a, "", 10, WAIT_MS);
    cr_expect_geq (before, 10);
    kill (a.proc->pid, SIGKILL);
    waitpid (a.proc->pid, NULL, 0);
    a.proc->pid = 0;
    long killed_at = zclock_mono ();
    //  While it is down, the emitter holds what it cannot deliver.
    double held = 0;
    int at_kill = s_done (&load);
    s_wait_load (&load, at_kill + 10 < STREAMS ? at_kill + 10 : STREAMS, WAIT_MS);
    held = metric_value (atoi (s->metrics [4]), "sluice_audit_spool_records");
    cr_expect_gt (held, 0, "records wait in the emitter's spool while the audit is down");
    audit_proc_t b;
    cr_assert (audit_start (s, "audit-again", store, NULL, &b), "sluice-audit starts again on its store");
    long restarted_at = zclock_mono ();
    pthread_join (thread, NULL);
    cr_expect_eq (load.failed, 0, "the clients never noticed");
    int recorded = audit_wait_streams (&b, "state=ended", STREAMS, 60000);
    cr_expect_eq (recorded, STREAMS, "every stream recorded");
    //  Exactly once: one row each, and counts made of the ledger.
    json_t *list = audit_get (&b, "/api/streams?limit=1000");
    json_t *streams = json_object_get (list, "streams");
    cr_expect_eq (json_array_size (streams), STREAMS, "no stream twice");
    int wrong = 0;
    for (size_t i = 0; i < json_array_size (streams); i++) {
        json_t *st = json_array_get (streams, i);
        if (json_integer_value (json_object_get (st, "calls")) != 2
        ||  json_integer_value (json_object_get (st, "blocks")) != 3
        ||  json_integer_value (json_object_get (st, "blocked")) != 1)
            wrong++;
    }
    cr_expect_eq (wrong, 0, "each stream's verdicts and blocks once");
    json_decref (list);
    double dups = audit_metric (&b, "sluice_audit_duplicates_total");
    double resent = metric_value (atoi (s->metrics [4]), "sluice_audit_records_resent_total");
    fprintf (stderr, "audit: kill -9 with %d streams recorded, %.0f records held while down (%ld ms), "
             "%.0f resent, %.0f delivered twice and written once\n", before, held, restarted_at - killed_at,
             resent, dups);
    cr_expect_eq (metric_value (atoi (s->metrics [4]), "sluice_audit_records_lost_total"), 0);
    cr_expect_eq (proc_stop (b.proc, 10000), 0);
    free (a.proc);
    free (b.proc);
    cr_expect_eq (stack_stop (s), 0);
    s_rm (dir);
}

//  --------------------------------------------------------------------------
//  The bound, and the gap

Test (audit, past_the_spool_bound_the_loss_is_counted_and_shown, .timeout = 90)
{
    char dir [] = "/tmp/sluice-audit-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    sluice_stack_t *s = s_stack ("3000");
    int emitter_metrics = atoi (s->metrics [4]);
    //  No audit yet: the spool fills, then records are lost.
    for (int i = 0; i < 5; i++)
        cr_assert_eq (s_request (s, "/v1/chat/completions", REQ_TOOLS, NULL), 200);
    double lost = metric_value (emitter_metrics, "sluice_audit_records_lost_total");
    cr_expect_gt (lost, 0, "the loss is counted at the emitter");
    cr_expect_leq (metric_value (emitter_metrics, "sluice_audit_spool_bytes"), 3000 + 1024);
    cr_expect_eq (metric_value (emitter_metrics, "sluice_audit_spool_capacity_bytes"), 3000,
                  "the spool's size, beside its use");
    const char *store [] = { "--data-dir", dir, NULL };
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store, NULL, &a));
    //  What the spool kept arrives; the loss arrives as a gap.
    json_t *gaps = NULL;
    long deadline = zclock_mono () + WAIT_MS;
    while (zclock_mono () < deadline) {
        //  The gap record goes out before the next record that fits.
        cr_assert_eq (s_request (s, "/v1/chat/completions", REQ_TOOLS, NULL), 200);
        json_decref (gaps);
        gaps = audit_get (&a, "/api/gaps");
        if (gaps && json_integer_value (json_object_get (gaps, "lost")) > 0)
            break;
        usleep (100000);
    }
    cr_assert_not_null (gaps);
    json_decref (gaps);
    //  Every loss the emitter counted reaches the store, once the spool
    //  has room for the gap record (the audit takes what it holds).
    double counted = -1, shown = -2;
    deadline = zclock_mono () + WAIT_MS;
    while (zclock_mono () < deadline) {
        counted = metric_value (emitter_metrics, "sluice_audit_records_lost_total");
        gaps = audit_get (&a, "/api/gaps");
        shown = gaps ? (double) json_integer_value (json_object_get (gaps, "lost")) : -2;
        json_decref (gaps);
        if (shown == counted && metric_value (emitter_metrics, "sluice_audit_spool_records") == 0)
            break;
        cr_assert_eq (s_request (s, "/v1/chat/completions", REQ_TOOLS, NULL), 200);
        usleep (100000);
    }
    cr_expect_geq (counted, lost);
    cr_expect_eq (shown, counted, "the store shows as many lost as the emitter counted");
    cr_expect_geq (audit_wait_streams (&a, "state=lost", 1, WAIT_MS), 1, "the streams it cost are marked");
    cr_expect_gt (audit_metric (&a, "sluice_audit_records_lost_total"), 0);
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
    s_rm (dir);
}

//  --------------------------------------------------------------------------
//  Retention

Test (audit, retention_prunes_by_age_and_by_size, .timeout = 90)
{
    char dir [] = "/tmp/sluice-audit-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    sluice_stack_t *s = s_stack ("");
    const char *store [] = { "--data-dir", dir, NULL };
    const char *by_age [] = { "--retain", "3s", "--prune-ms", "200", NULL };
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store, by_age, &a));
    for (int i = 0; i < 3; i++)
        cr_assert_eq (s_request (s, "/v1/chat/completions", REQ_TOOLS, NULL), 200);
    cr_expect_eq (audit_wait_streams (&a, "state=ended", 3, WAIT_MS), 3, "recorded first");
    long deadline = zclock_mono () + 15000;
    int left = 3;
    while (left > 0 && zclock_mono () < deadline) {
        usleep (100000);
        json_t *j = audit_get (&a, "/api/streams");
        left = j ? (int) json_array_size (json_object_get (j, "streams")) : -1;
        json_decref (j);
    }
    cr_expect_eq (left, 0, "streams older than 3 s are gone");
    cr_expect_geq (audit_metric (&a, "sluice_audit_pruned_streams_total"), 3);
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    //  By size: the oldest go, the newest stay.
    const char *by_size [] = { "--retain", "0", "--retain-bytes", "4000", "--prune-ms", "200", NULL };
    cr_assert (audit_start (s, "audit-size", store, by_size, &a));
    for (int i = 0; i < 8; i++)
        cr_assert_eq (s_request (s, "/v1/chat/completions", REQ_TOOLS, NULL), 200);
    deadline = zclock_mono () + 15000;
    double bytes = -1;
    while (zclock_mono () < deadline) {
        usleep (100000);
        bytes = audit_metric (&a, "sluice_audit_store_bytes");
        if (bytes >= 0 && bytes <= 4000 && audit_metric (&a, "sluice_audit_pruned_streams_total") > 0)
            break;
    }
    cr_expect_leq (bytes, 4000, "the store keeps to its size");
    cr_expect_gt (audit_metric (&a, "sluice_audit_pruned_streams_total"), 0);
    int kept = audit_wait_streams (&a, "", 1, 5000);
    cr_expect_geq (kept, 1, "the newest stay");
    cr_expect_lt (kept, 8);
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
    s_rm (dir);
}

//  --------------------------------------------------------------------------
//  The webhook: a receiver that fails once, then takes everything

typedef struct {
    int fd;
    int port;
    int requests;
    char bodies [2][8192];
    char auth [256];
    volatile bool stop;
} s_hook_t;

static void *
s_hook_serve (void *arg)
{
    s_hook_t *h = arg;
    while (!h->stop) {
        fd_set set;
        FD_ZERO (&set);
        FD_SET (h->fd, &set);
        struct timeval tv = { 0, 100000 };
        if (select (h->fd + 1, &set, NULL, NULL, &tv) <= 0)
            continue;
        int c = accept (h->fd, NULL, NULL);
        if (c < 0)
            continue;
        char req [16384];
        size_t got = 0;
        long deadline = zclock_mono () + 5000;
        //  Head, then as much body as Content-Length says.
        while (got < sizeof req - 1 && zclock_mono () < deadline) {
            ssize_t n = recv (c, req + got, sizeof req - 1 - got, 0);
            if (n <= 0)
                break;
            got += (size_t) n;
            req [got] = 0;
            char *end = strstr (req, "\r\n\r\n");
            char *len = strcasestr (req, "Content-Length:");
            if (end && len && got >= (size_t) (end + 4 - req) + (size_t) atoi (len + 15))
                break;
        }
        int i = h->requests++;
        char *body = strstr (req, "\r\n\r\n");
        if (i < 2 && body)
            snprintf (h->bodies [i], sizeof h->bodies [i], "%s", body + 4);
        char *auth = strcasestr (req, "Authorization:");
        if (auth)
            snprintf (h->auth, sizeof h->auth, "%.*s", (int) strcspn (auth, "\r"), auth);
        const char *answer = i == 0 ? "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                                    : "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        ssize_t sent = send (c, answer, strlen (answer), MSG_NOSIGNAL);
        (void) sent;
        close (c);
    }
    return NULL;
}

Test (audit, the_webhook_gets_each_blocked_verdict_after_retries, .timeout = 90)
{
    s_hook_t hook = { 0 };
    hook.fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    socklen_t len = sizeof addr;
    cr_assert_eq (bind (hook.fd, (struct sockaddr *) &addr, sizeof addr), 0);
    cr_assert_eq (listen (hook.fd, 16), 0);
    getsockname (hook.fd, (struct sockaddr *) &addr, &len);
    hook.port = ntohs (addr.sin_port);
    pthread_t thread;
    cr_assert_eq (pthread_create (&thread, NULL, s_hook_serve, &hook), 0);
    char url [64];
    snprintf (url, sizeof url, "http://127.0.0.1:%d/hook", hook.port);
    setenv ("SLUICE_AUDIT_WEBHOOK_TOKEN", "siem-token-1", 1);
    char dir [] = "/tmp/sluice-audit-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    sluice_stack_t *s = s_stack ("");
    const char *store [] = { "--data-dir", dir, NULL };
    const char *extra [] = { "--webhook", url, NULL };
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store, extra, &a));
    cr_assert_eq (s_request (s, "/v1/chat/completions", REQ_TOOLS, NULL), 200);
    long deadline = zclock_mono () + WAIT_MS;
    while (audit_metric (&a, "sluice_audit_webhook_sent_total") < 1 && zclock_mono () < deadline)
        usleep (50000);
    cr_expect_eq (audit_metric (&a, "sluice_audit_webhook_sent_total"), 1, "one blocked verdict, posted once");
    cr_expect_eq (audit_metric (&a, "sluice_audit_webhook_failures_total"), 1, "the 503 was tried again");
    cr_expect_eq (hook.requests, 2);
    for (int i = 0; i < 2; i++) {
        json_t *j = json_loads (hook.bodies [i], 0, NULL);
        cr_assert_not_null (j, "JSON: %s", hook.bodies [i]);
        cr_expect_str_eq (s_str (j, "type"), "verdict");
        cr_expect_str_eq (s_str (j, "tool"), "run_shell");
        cr_expect_str_eq (s_str (j, "action"), "block");
        cr_expect_str_eq (s_str (j, "rule"), "no-rm-rf");
        cr_expect_str_eq (s_str (j, "model"), "mock-tools");
        cr_expect_str_eq (s_str (j, "arguments"), "{\"command\":\"rm -rf /\"}");
        json_decref (j);
    }
    cr_expect_str_eq (hook.auth, "Authorization: Bearer siem-token-1");
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    hook.stop = true;
    pthread_join (thread, NULL);
    close (hook.fd);
    cr_expect_eq (stack_stop (s), 0);
    s_rm (dir);
}

//  --------------------------------------------------------------------------
//  Export, and who may ask

Test (audit, export_writes_a_line_per_stream_and_keys_guard_the_console, .timeout = 90)
{
    char dir [] = "/tmp/sluice-audit-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    setenv ("SLUICE_CONSOLE_KEYS", "console-key-1, console-key-2", 1);
    sluice_stack_t *s = s_stack ("");
    const char *store [] = { "--data-dir", dir, NULL };
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store, NULL, &a));
    unsetenv ("SLUICE_CONSOLE_KEYS");
    for (int i = 0; i < 3; i++)
        cr_assert_eq (s_request (s, "/v1/chat/completions", REQ_TOOLS, NULL), 200);
    sl_buf_t body = { 0 };
    cr_expect_eq (http_request (a.console_port, "GET", "/api/streams", NULL, NULL, &body, 5000), 401,
                  "no key, no data");
    const char *wrong [] = { "Authorization: Bearer console-key-3", NULL };
    sl_buf_reset (&body);
    cr_expect_eq (http_request (a.console_port, "GET", "/api/streams", NULL, wrong, &body, 5000), 401);
    const char *right [] = { "Authorization: Bearer console-key-2", NULL };
    int listed = 0;
    long deadline = zclock_mono () + WAIT_MS;
    while (listed < 3 && zclock_mono () < deadline) {
        sl_buf_reset (&body);
        cr_assert_eq (http_request (a.console_port, "GET", "/api/streams?state=ended", NULL, right, &body, 5000), 200);
        json_t *j = json_loadb (body.data, body.len, 0, NULL);
        listed = (int) json_array_size (json_object_get (j, "streams"));
        json_decref (j);
        usleep (50000);
    }
    cr_expect_eq (listed, 3);
    sl_buf_reset (&body);
    cr_expect_eq (http_request (a.console_port, "GET", "/", NULL, NULL, &body, 5000), 200, "the page itself");
    cr_expect_not_null (strstr (sl_buf_cstr (&body), "<html"));
    sl_buf_free (&body);
    //  sluice-audit export, beside the running audit (WAL: it reads while
    //  the audit writes).
    const char *args [] = { "export", "--since", "1h", "--data-dir", dir, NULL };
    proc_t *e = proc_start_as (s->dir, "audit", "export", args);
    cr_assert_not_null (e);
    cr_expect_eq (proc_wait_exit (e, 15000), 0);
    FILE *f = fopen (e->log_path, "r");
    char line [65536];
    int lines = 0;
    while (f && fgets (line, sizeof line, f)) {
        if (strncmp (line, "{\"stream\":", 10) != 0)
            continue;
        json_error_t jerr;
        json_t *j = json_loads (line, 0, &jerr);
        cr_expect_not_null (j, "a JSON line: %s at %d: %.300s", jerr.text, jerr.position,
                            line + (jerr.position > 100 ? jerr.position - 100 : 0));
        cr_expect_eq (json_array_size (json_object_get (j, "verdicts")), 2);
        json_decref (j);
        lines++;
    }
    if (f)
        fclose (f);
    cr_expect_eq (lines, 3, "one line per stream");
    unlink (e->log_path);
    free (e);
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
    s_rm (dir);
}

//  --------------------------------------------------------------------------
//  A stream replayed on another emitter after a crash is recorded once

typedef struct {
    int port;
    int status;
} s_one_t;

static void *
s_one (void *arg)
{
    s_one_t *one = arg;
    sl_buf_t out = { 0 };
    one->status = http_request (one->port, "POST", "/v1/chat/completions", REQ_TOOLS, NULL, &out, 30000);
    sl_buf_free (&out);
    return NULL;
}

Test (audit, a_stream_replayed_on_another_emitter_is_recorded_once, .timeout = 180)
{
    enum { STREAMS = 16 };
    cluster_opts_t opts = { .count = { 1, 1, 1, 2 }, .mock_delay_ms = 60, .policy = "deploy/policy.yaml",
                            .audit = true };
    cluster_t *c = cluster_start (&opts);
    cr_assert_not_null (c, "the cluster comes up");
    char emitters [128], dir [] = "/tmp/sluice-audit-XXXXXX";
    snprintf (emitters, sizeof emitters, "tcp://127.0.0.1:%d,tcp://127.0.0.1:%d", c->audit_port [0],
              c->audit_port [1]);
    cr_assert_not_null (mkdtemp (dir));
    const char *store [] = { "--data-dir", dir, NULL };
    audit_proc_t a;
    cr_assert (audit_start_at (c->dir, c->keys, emitters, "audit", store, NULL, &a));
    s_one_t ones [STREAMS];
    pthread_t threads [STREAMS];
    for (int i = 0; i < STREAMS; i++) {
        ones [i] = (s_one_t) { c->http_port [0], 0 };
        cr_assert_eq (pthread_create (&threads [i], NULL, s_one, &ones [i]), 0);
    }
    //  Every stream started, none ended: an emitter dies with streams on it.
    int started = audit_wait_streams (&a, "state=live", STREAMS, WAIT_MS);
    json_t *ended = audit_get (&a, "/api/streams?state=ended");
    size_t ended_before = json_array_size (json_object_get (ended, "streams"));
    json_decref (ended);
    cluster_kill (c, CL_EMITTER, 0);
    cr_assert_eq (cluster_start_instance (c, CL_EMITTER, 0, true), 0, "the emitter comes back");
    for (int i = 0; i < STREAMS; i++) {
        pthread_join (threads [i], NULL);
        cr_expect_eq (ones [i].status, 200, "the clients never noticed");
    }
    cr_expect_eq (audit_wait_streams (&a, "state=ended", STREAMS, 60000), STREAMS, "every stream recorded to its end");
    json_t *list = audit_get (&a, "/api/streams?limit=1000");
    json_t *streams = json_object_get (list, "streams");
    cr_expect_eq (json_array_size (streams), STREAMS, "no stream twice");
    int wrong = 0;
    for (size_t i = 0; i < json_array_size (streams); i++) {
        json_t *st = json_array_get (streams, i);
        if (json_integer_value (json_object_get (st, "calls")) != 2
        ||  json_integer_value (json_object_get (st, "blocks")) != 3)
            wrong++;
    }
    cr_expect_eq (wrong, 0, "each stream's verdicts and blocks once, after the replay too");
    json_decref (list);
    double dups = audit_metric (&a, "sluice_audit_duplicates_total");
    fprintf (stderr, "audit: an emitter killed with %d streams started and %zu ended: %.0f records came again "
             "from the replays and were written once\n", started, ended_before, dups);
    cr_expect_gt (dups, 0, "the replayed streams' records came again");
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    cr_expect_eq (cluster_stop (c), 0);
    s_rm (dir);
}

//  --------------------------------------------------------------------------
//  A store that goes away and comes back

Test (audit, a_postgresql_store_that_goes_away_loses_nothing, .timeout = 180)
{
    enum { BEFORE = 3, DURING = 5 };
    pgtmp_t pg = { 0 };
    char reason [256];
    if (pgtmp_start (&pg, reason, sizeof reason))
        cr_skip_test ("PostgreSQL: %s", reason);
    sluice_stack_t *s = s_stack ("");
    const char *store [] = { "--dsn", pg.dsn, NULL };
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store, NULL, &a));
    for (int i = 0; i < BEFORE; i++)
        cr_assert_eq (s_request (s, "/v1/chat/completions", REQ_TOOLS, NULL), 200);
    cr_expect_eq (audit_wait_streams (&a, "state=ended", BEFORE, WAIT_MS), BEFORE);
    //  The database goes away; the clients go on; the records wait.
    cr_assert_eq (pgtmp_pause (&pg, true), 0, "PostgreSQL stops");
    for (int i = 0; i < DURING; i++)
        cr_assert_eq (s_request (s, "/v1/chat/completions", REQ_TOOLS, NULL), 200);
    long deadline = zclock_mono () + WAIT_MS;
    while (audit_metric (&a, "sluice_audit_store_up") != 0 && zclock_mono () < deadline)
        usleep (50000);
    cr_expect_eq (audit_metric (&a, "sluice_audit_store_up"), 0, "the audit knows its store is away");
    cr_expect_gt (metric_value (atoi (s->metrics [4]), "sluice_audit_spool_records"), 0,
                  "the emitter holds the records meanwhile");
    cr_assert_eq (pgtmp_pause (&pg, false), 0, "PostgreSQL starts again");
    cr_expect_eq (audit_wait_streams (&a, "state=ended", BEFORE + DURING, 30000), BEFORE + DURING,
                  "every stream recorded once it is back");
    json_t *list = audit_get (&a, "/api/streams?limit=100");
    json_t *streams = json_object_get (list, "streams");
    cr_expect_eq (json_array_size (streams), BEFORE + DURING);
    for (size_t i = 0; i < json_array_size (streams); i++)
        cr_expect_eq (json_integer_value (json_object_get (json_array_get (streams, i), "calls")), 2);
    json_decref (list);
    cr_expect_eq (audit_metric (&a, "sluice_audit_records_rejected_total"), 0, "nothing set aside");
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
    pgtmp_stop (&pg);
}
