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

#include "../../services/gateway/sl_keyid.h"
#include "../pgtmp.h"
#include "audit_proc.h"
#include "harness.h"

#define REQ_TOOLS "{\"model\":\"mock-tools\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"tidy up\"}]," \
    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\"}}}," \
    "{\"type\":\"function\",\"function\":{\"name\":\"run_shell\",\"parameters\":{\"type\":\"object\"}}}]}"
#define CLIENT_SECRET "sk-audit-SECRET-4711"
#define WAIT_MS 20000

static long
s_now_ms (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

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
    long deadline = s_now_ms () + 15000;
    while (s_now_ms () < deadline) {
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
    pgtmp_t pg;
    char reason [256];
    if (pgtmp_start (&pg, reason, sizeof reason))
        cr_skip_test ("PostgreSQL: %s", reason);
    const char *store [] = { "--dsn", pg.dsn, NULL };
    s_records_streams (store, "postgres");
    pgtmp_stop (&pg);
}
