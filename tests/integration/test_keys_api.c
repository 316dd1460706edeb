/*  Integration: keys without editing files - the console's keys API
    (sluice-audit) and two gateways fetching the keys it issued
    (--keys-url, SLUICE_KEYS_TOKEN), through the real programs on
    loopback, on SQLite and on PostgreSQL:

    - before the audit answers, a gateway with a keys URL and no file
      lets nobody in (fail closed); on loopback, once it answers that no
      key was ever issued, everyone (as without keys), and from the first
      key issued only keys;
    - a key created through POST /api/keys works at both gateways;
    - rotated: the new secret works at both, the old one still does (its
      grace);
    - revoked: refused at both gateways from their next fetch (the time
      it took is printed, next to --watch-ms);
    - the audit gone: the last good set stays in force at both gateways
      (a live key works, the revoked one stays refused);
    - a key's hash swapped in the store for one of someone else's
      behind the running audit's back: that key is let in at no gateway
      (the last good set stays served), and verify names the api_keys
      row and its column;
    - every change an entry of the hash chain: `sluice-audit verify`
      finds the store intact, then names the key event a test edited
      behind the audit's back;
    - sluice-keys create, list (the keys file's keys beside, read-only)
      and revoke --console, and refused without a console key.

    Every wait is bounded. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/identity/sl_keyring.h"
#include "services/audit/store/sl_store.h"
#include "tests/integration/audit_proc.h"
#include "tests/integration/cluster.h"
#include "tests/integration/harness.h"
#include "tests/keyfile_fixture.h"
#include "tests/pgtmp.h"

#define CHAT "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
#define CONSOLE_KEY "console-admin-key-for-the-test"
#define KEYS_TOKEN "gateways-keys-token-for-the-test"
#define WATCH_MS "300"
#define GATEWAYS 2
#define WAIT_MS 20000                   //  the longest a change may take to reach a gateway here
#define POLL_US 50000
#define REQUEST_MS 10000

//  One streamed request to gateway port with key: its status.
static int
s_ask (int port, const char *key)
{
    char auth [160];
    snprintf (auth, sizeof auth, "Authorization: Bearer %s", key);
    const char *headers [] = { auth, "Content-Type: application/json", NULL };
    sl_buf_t out = { 0 };
    int status = http_request (port, "POST", "/v1/chat/completions", CHAT, headers, &out, REQUEST_MS);
    sl_buf_free (&out);
    return status;
}

//  Poll every gateway until key gets want there; the ms it took, -1 when
//  some gateway did not within WAIT_MS.
static long
s_wait_all (cluster_t *c, const char *key, int want)
{
    long start = zclock_mono (), deadline = start + WAIT_MS;
    for (int g = 0; g < GATEWAYS; g++) {
        int got = 0;
        while ((got = s_ask (c->http_port [g], key)) != want && zclock_mono () < deadline)
            usleep (POLL_US);
        if (got != want) {
            fprintf (stderr, "keys_api: gateway %d answered %d, not %d\n", g, got, want);
            return -1;
        }
    }
    return zclock_mono () - start;
}

//  A console call with the admin key: status, the answer's JSON in *out.
static int
s_console (const audit_proc_t *a, const char *method, const char *path, const char *body, json_t **out)
{
    const char *headers [] = { "Authorization: Bearer " CONSOLE_KEY, "Content-Type: application/json", NULL };
    sl_buf_t got = { 0 };
    int status = http_request (a->console_port, method, path, body, headers, &got, REQUEST_MS);
    *out = json_loadb (got.data ? got.data : "", got.len, 0, NULL);
    sl_buf_free (&got);
    return status;
}

//  sluice-audit verify --json on the store: its exit status, the report.
static int
s_verify (const char *dir, const char *const *store, json_t **report)
{
    const char *args [] = { "verify", "--json", store [0], store [1], NULL };
    proc_t *v = proc_start_as (dir, "audit", "verify", args);
    cr_assert_not_null (v);
    int status = proc_wait_exit (v, 30000);
    *report = NULL;
    FILE *f = fopen (v->log_path, "r");
    char line [8192];
    while (f && fgets (line, sizeof line, f))
        if (strncmp (line, "{\"status\"", 9) == 0)
            *report = json_loads (line, 0, NULL);
    if (f)
        fclose (f);
    if (!*report)
        proc_dump (v);
    free (v);
    return status;
}

static const char *
s_problem (json_t *report, const char *key)
{
    json_t *v = json_object_get (json_object_get (report, "problem"), key);
    return json_is_string (v) ? json_string_value (v) : "";
}

static int
s_hash_row (void *arg, const sl_row_t *row)
{
    sl_str_t h = sl_row_text (row, 0);
    snprintf (arg, SL_KEYRING_HEX_SIZE, "%.*s", (int) h.len, h.ptr ? h.ptr : "");
    return 1;
}

//  The store the audit writes, opened beside it.
static sl_store_t *
s_open (const char *const *store, const char *label)
{
    char target [512];
    if (strcmp (store [0], "--data-dir") == 0)
        snprintf (target, sizeof target, "%s/audit.db", store [1]);
    else
        snprintf (target, sizeof target, "%s", store [1]);
    char *error = NULL;
    sl_store_t *db = sl_store_open (target, &error);
    cr_assert_not_null (db, "%s: %s", label, error ? error : "");
    free (error);
    return db;
}

//  Key id's hash in the store swapped for the hash of a key of someone
//  else's, behind the running audit's back: that key is let in at no
//  gateway, nor is id's own key (its row differs from its chain entry,
//  so it is served to none), and verify names the row and the column.
//  Then put back: id's key works again.
static void
s_key_swapped (cluster_t *c, const char *dir, const char *const *store, const char *id, const char *key,
               const char *label)
{
    char mine [SL_KEYRING_KEY_MAX], hex [SL_KEYRING_HEX_SIZE], sql [512];
    sl_keyring_new_key (mine);
    sl_keyring_key_hex (mine, hex);
    sl_store_t *db = s_open (store, label);
    sl_val_t p [] = { sl_val_text (hex), sl_val_text (id) };
    char was [SL_KEYRING_HEX_SIZE] = "";
    sl_val_t q [] = { sl_val_text (id) };
    cr_assert_eq (sl_store_query (db, "SELECT sha256 FROM api_keys WHERE id = $1", q, 1, s_hash_row, was), 0);
    cr_assert_eq (sl_store_exec (db, "UPDATE api_keys SET sha256 = $1 WHERE id = $2", p, 2, NULL), 0, "%s",
                  sl_store_error (db));
    usleep (4 * atoi (WATCH_MS) * 1000);
    for (int g = 0; g < GATEWAYS; g++) {
        cr_expect_eq (s_ask (c->http_port [g], mine), 401, "%s: a hash swapped into the store lets nobody in", label);
        cr_expect_eq (s_ask (c->http_port [g], key), 401, "%s: nor the key whose row was changed", label);
    }
    json_t *r;
    char want [200];
    snprintf (want, sizeof want, "id=%s", id);
    cr_expect_eq (s_verify (dir, store, &r), 1, "%s: a swapped hash: exit 1", label);
    cr_expect_str_eq (s_problem (r, "kind"), "changed", "%s", label);
    cr_expect_str_eq (s_problem (r, "table"), "api_keys", "%s", label);
    cr_expect_str_eq (s_problem (r, "key"), want, "%s", label);
    cr_expect_not_null (strstr (s_problem (r, "detail"), "sha256"), "%s: %s", label, s_problem (r, "detail"));
    json_decref (r);
    snprintf (sql, sizeof sql, "UPDATE api_keys SET sha256 = '%s' WHERE id = '%s'", was, id);
    cr_assert_eq (sl_store_exec (db, sql, NULL, 0, NULL), 0, "%s", sl_store_error (db));
    sl_store_close (&db);
    cr_expect_geq (s_wait_all (c, key, 200), 0, "%s: put back, the key is served again", label);
}

//  The key events in the chain, verified, then one edited behind the
//  audit's back (the audit stopped): verify names it.
static void
s_key_events_chained (const char *dir, const char *const *store, const char *label)
{
    sl_store_t *db = s_open (store, label);
    int64_t keys = -1;
    cr_assert_eq (sl_store_query_int (db, "SELECT COUNT(*) FROM chain WHERE kind = 'key'", NULL, 0, -1, &keys), 0);
    cr_expect_eq (keys, 4, "%s: create, rotate, create, revoke in the chain", label);

    json_t *r;
    cr_expect_eq (s_verify (dir, store, &r), 0, "%s: intact", label);
    cr_expect_str_eq (json_string_value (json_object_get (r, "status")), "intact", "%s", label);
    json_decref (r);

    cr_assert_eq (sl_store_exec (db, "UPDATE key_events SET by_whom = 'someone else' WHERE pos = 1", NULL, 0, NULL),
                  0, "%s", sl_store_error (db));
    sl_store_close (&db);
    cr_expect_eq (s_verify (dir, store, &r), 1, "%s: an edited key event: exit 1", label);
    cr_expect_str_eq (s_problem (r, "kind"), "changed", "%s", label);
    cr_expect_str_eq (s_problem (r, "table"), "key_events", "%s", label);
    cr_expect_str_eq (s_problem (r, "key"), "pos=1", "%s", label);
    json_decref (r);
}

static void
s_keys_across_gateways (const char *const *store, const char *label)
{
    char port [16], url [96];
    snprintf (port, sizeof port, "%d", harness_free_port ());
    snprintf (url, sizeof url, "http://127.0.0.1:%s/api/keys/served", port);
    setenv ("SLUICE_KEYS_TOKEN", KEYS_TOKEN, 1);
    setenv ("SLUICE_CONSOLE_KEYS", CONSOLE_KEY, 1);
    const char *gateway_args [] = { "--keys-url", url, "--watch-ms", WATCH_MS, NULL };
    cluster_opts_t opts = { .count = { 1, 1, 1, 1 }, .slots = { 1, 1, 1, 1 }, .gateways = GATEWAYS,
                            .gateway_args = gateway_args };
    cluster_t *c = cluster_start (&opts);
    cr_assert_not_null (c);

    //  No audit yet: nobody gets in.
    cr_expect_eq (s_ask (c->http_port [0], "sk-sluice-anything"), 401);

    char emitters [64];
    snprintf (emitters, sizeof emitters, "tcp://127.0.0.1:%d", harness_free_port ());
    const char *extra [] = { "--console-port", port, NULL };
    audit_proc_t a;
    cr_assert (audit_start_at (c->dir, c->keys, emitters, "audit", store, extra, &a), "%s: the audit starts", label);
    cr_assert_eq (a.console_port, atoi (port));
    //  On loopback, with no key issued yet: open, as without keys.
    cr_expect_geq (s_wait_all (c, "sk-sluice-anything", 200), 0, "%s: open until the first key", label);

    //  Create: works at both gateways.
    json_t *j;
    cr_assert_eq (s_console (&a, "POST", "/api/keys", "{\"team\":\"payments\",\"user\":\"alice\"}", &j), 201);
    char id [160], key [80], rotated [80];
    snprintf (id, sizeof id, "%s", json_string_value (json_object_get (j, "id")));
    snprintf (key, sizeof key, "%s", json_string_value (json_object_get (j, "key")));
    json_decref (j);
    long took = s_wait_all (c, key, 200);
    cr_assert_geq (took, 0, "%s: a created key works at every gateway", label);
    fprintf (stderr, "keys_api (%s): a created key worked at %d gateways after %ld ms\n", label, GATEWAYS, took);
    cr_expect_geq (s_wait_all (c, "sk-sluice-anything", 401), 0, "%s: keys checked from the first", label);

    //  Rotate: both secrets work in the grace.
    char path [256];
    snprintf (path, sizeof path, "/api/keys/%s/rotate", id);
    cr_assert_eq (s_console (&a, "POST", path, "{\"grace_seconds\":600}", &j), 200);
    snprintf (rotated, sizeof rotated, "%s", json_string_value (json_object_get (j, "key")));
    json_decref (j);
    cr_expect_geq (s_wait_all (c, rotated, 200), 0, "%s: the new secret works", label);
    for (int g = 0; g < GATEWAYS; g++)
        cr_expect_eq (s_ask (c->http_port [g], key), 200, "%s: the old secret in its grace", label);

    //  A second key, to outlive the audit.
    cr_assert_eq (s_console (&a, "POST", "/api/keys", "{\"team\":\"ops\",\"user\":\"bob\"}", &j), 201);
    char other [80], other_id [160];
    snprintf (other, sizeof other, "%s", json_string_value (json_object_get (j, "key")));
    snprintf (other_id, sizeof other_id, "%s", json_string_value (json_object_get (j, "id")));
    json_decref (j);
    cr_expect_geq (s_wait_all (c, other, 200), 0);

    //  Revoke: refused at both gateways, the grace ended with it.
    snprintf (path, sizeof path, "/api/keys/%s", id);
    cr_assert_eq (s_console (&a, "DELETE", path, NULL, &j), 200);
    json_decref (j);
    took = s_wait_all (c, rotated, 401);
    cr_expect_geq (took, 0, "%s: a revoked key is refused at every gateway", label);
    fprintf (stderr, "keys_api (%s): a revoked key was refused at %d gateways after %ld ms (--watch-ms %s)\n",
             label, GATEWAYS, took, WATCH_MS);
    for (int g = 0; g < GATEWAYS; g++)
        cr_expect_eq (s_ask (c->http_port [g], key), 401, "%s: the old secret went with it", label);

    //  A key's hash swapped in the store: no one gets in with it.
    snprintf (path, sizeof path, "%s", other_id);
    s_key_swapped (c, c->dir, store, path, other, label);

    //  Every change is a key event.
    cr_assert_eq (s_console (&a, "GET", "/api/keys/events", NULL, &j), 200);
    cr_expect_eq (json_array_size (json_object_get (j, "events")), 4, "create, rotate, create, revoke");
    json_decref (j);

    //  The audit gone: the last good set stays.
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    usleep (3 * atoi (WATCH_MS) * 1000);
    for (int g = 0; g < GATEWAYS; g++) {
        cr_expect_eq (s_ask (c->http_port [g], other), 200, "%s: a live key works with the audit away", label);
        cr_expect_eq (s_ask (c->http_port [g], rotated), 401, "%s: a revoked key stays refused", label);
    }
    s_key_events_chained (c->dir, store, label);
    unsetenv ("SLUICE_KEYS_TOKEN");
    unsetenv ("SLUICE_CONSOLE_KEYS");
    cr_expect_eq (cluster_stop (c), 0);
}

Test (keys_api, keys_issued_by_the_console_reach_every_gateway_sqlite, .timeout = 180)
{
    char dir [64];
    strcpy (dir, "/tmp/sluice-keysapi-XXXXXX");
    cr_assert_not_null (mkdtemp (dir));
    const char *store [] = { "--data-dir", dir, NULL };
    s_keys_across_gateways (store, "sqlite");
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}

Test (keys_api, keys_issued_by_the_console_reach_every_gateway_postgresql, .timeout = 180)
{
    pgtmp_t pg = { 0 };
    char reason [256];
    if (pgtmp_start (&pg, reason, sizeof reason))
        cr_skip_test ("PostgreSQL: %s", reason);
    const char *store [] = { "--dsn", pg.dsn, NULL };
    s_keys_across_gateways (store, "postgres");
    pgtmp_stop (&pg);
}

//  --------------------------------------------------------------------------
//  sluice-keys create, list and revoke --console

//  Run sluice-keys with args and SLUICE_CONSOLE_KEY=key: its exit status,
//  its output into out.
static int
s_keys_cli (const char *key, const char *args, sl_buf_t *out)
{
    const char *bin = getenv ("SLUICE_BIN_DIR") ? getenv ("SLUICE_BIN_DIR") : "build/bin";
    char cmd [1024];
    snprintf (cmd, sizeof cmd, "SLUICE_CONSOLE_KEY='%s' timeout 30 '%s/sluice-keys' %s 2>/dev/null", key, bin, args);
    FILE *f = popen (cmd, "r");
    cr_assert_not_null (f);
    char buf [4096];
    size_t n;
    while ((n = fread (buf, 1, sizeof buf, f)) > 0)
        sl_buf_append (out, buf, n);
    int status = pclose (f);
    return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

Test (keys_api, sluice_keys_creates_lists_and_revokes_through_the_console, .timeout = 120)
{
    char dir [64], keys [300];
    strcpy (dir, "/tmp/sluice-keyscli-XXXXXX");
    cr_assert_not_null (mkdtemp (dir));
    cr_assert_eq (harness_keygen (dir, keys, sizeof keys), 0);
    char emitters [64];
    snprintf (emitters, sizeof emitters, "tcp://127.0.0.1:%d", harness_free_port ());
    const char *store [] = { "--data-dir", dir, NULL };
    //  The gateways' keys file, whose keys the list shows read-only.
    char file [4096] = "keys:\n", file_path [128];
    keyfile_entry (file, sizeof file, "bob-laptop", "sk-test-file-key", "ops", "bob", NULL);
    cr_assert_eq (harness_write (dir, "keys.yaml", file), 0);
    snprintf (file_path, sizeof file_path, "%s/keys.yaml", dir);
    const char *extra [] = { "--keys-file", file_path, NULL };
    setenv ("SLUICE_CONSOLE_KEYS", CONSOLE_KEY, 1);
    audit_proc_t a;
    bool up = audit_start_at (dir, keys, emitters, "audit", store, extra, &a);
    unsetenv ("SLUICE_CONSOLE_KEYS");
    cr_assert (up);
    char console [64], args [512];
    snprintf (console, sizeof console, "http://127.0.0.1:%d/", a.console_port);

    sl_buf_t out = { 0 };
    snprintf (args, sizeof args, "create --console %s --team payments --user alice --models 'gpt-*,claude-*' "
                                 "--rpm 60 --approver", console);
    cr_assert_eq (s_keys_cli (CONSOLE_KEY, args, &out), 0);
    char key [80] = "", id [160] = "";
    cr_assert_eq (sscanf (sl_buf_cstr (&out), "%79s %159s", key, id), 2, "%s", sl_buf_cstr (&out));
    cr_expect_eq (strncmp (key, "sk-sluice-", 10), 0);
    cr_expect_eq (strncmp (id, "payments-", 9), 0);

    sl_buf_reset (&out);
    snprintf (args, sizeof args, "list --console %s", console);
    cr_assert_eq (s_keys_cli (CONSOLE_KEY, args, &out), 0);
    json_t *j = json_loads (sl_buf_cstr (&out), 0, NULL);
    json_t *row = json_array_get (json_object_get (j, "keys"), 0);
    cr_expect_str_eq (json_string_value (json_object_get (row, "id")), id);
    cr_expect (json_is_true (json_object_get (row, "approver")));
    cr_expect_eq (json_integer_value (json_object_get (json_object_get (row, "limits"), "rpm")), 60);
    cr_expect_str_eq (json_string_value (json_array_get (json_object_get (row, "models"), 1)), "claude-*");
    cr_expect_null (strstr (sl_buf_cstr (&out), key), "the key is not listed");
    json_t *filed = json_array_get (json_object_get (j, "file"), 0);
    cr_expect_str_eq (json_string_value (json_object_get (filed, "id")), "bob-laptop");
    cr_expect (json_is_true (json_object_get (filed, "read_only")));
    json_decref (j);

    //  Not a console key: refused, nothing changed.
    sl_buf_reset (&out);
    snprintf (args, sizeof args, "revoke --console %s %s", console, id);
    cr_expect_eq (s_keys_cli ("not-a-console-key", args, &out), 1);
    sl_buf_reset (&out);
    snprintf (args, sizeof args, "create --console %s --team t --user u", console);
    cr_expect_eq (s_keys_cli ("not-a-console-key", args, &out), 1);
    cr_expect_eq (sl_buf_str (&out).len, 0, "no key printed");

    sl_buf_reset (&out);
    snprintf (args, sizeof args, "revoke --console %s %s", console, id);
    cr_expect_eq (s_keys_cli (CONSOLE_KEY, args, &out), 0);
    sl_buf_reset (&out);
    cr_expect_eq (s_keys_cli (CONSOLE_KEY, args, &out), 1, "an unknown id (revoked already): refused");
    sl_buf_reset (&out);
    snprintf (args, sizeof args, "revoke --console %s 'not an id'", console);
    cr_expect_eq (s_keys_cli (CONSOLE_KEY, args, &out), 2);
    sl_buf_free (&out);

    json_t *events = NULL;
    cr_assert_eq (s_console (&a, "GET", "/api/keys/events", NULL, &events), 200);
    cr_expect_eq (json_array_size (json_object_get (events, "events")), 2, "create, revoke");
    json_decref (events);
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}
