/*  Unit tests: services/audit/console/sl_console_keys, the keys API
    through the console's router (sl_console_handle): create, list,
    rotate, revoke and the gateways' served set; who may ask; bad input
    (unknown fields, an unknown id, not JSON); every change an entry of
    the hash chain, none made without one. Over a SQLite store in a
    temporary directory (the store itself is tested on both databases in
    test_sl_keystore.c). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/identity/sl_keyring.h"
#include "services/audit/console/sl_console.h"
#include "services/audit/recorder/sl_chain.h"
#include "services/audit/recorder/sl_verify.h"
#include "services/audit/store/sl_keystore.h"
#include "services/audit/store/sl_store.h"

#define S_ADMIN "console-admin-key"
#define S_TOKEN "gateways-keys-token"

static char s_dir [64];
static sl_store_t *s_store;
static sl_chain_t *s_chain;
static int64_t s_now = 1700000000000LL;

static int64_t
s_clock (void *arg)
{
    (void) arg;
    return s_now;
}

static void
s_setup (void)
{
    snprintf (s_dir, sizeof s_dir, "/tmp/sluice-ckeys-XXXXXX");
    cr_assert_not_null (mkdtemp (s_dir));
    char path [128], *error = NULL;
    snprintf (path, sizeof path, "%s/a.db", s_dir);
    s_store = sl_store_open (path, &error);
    cr_assert_not_null (s_store, "%s", error ? error : "");
    s_chain = sl_chain_new (s_store);
    cr_assert_eq (sl_chain_load (s_chain), 0);
}

static void
s_teardown (void)
{
    sl_chain_destroy (&s_chain);
    sl_store_close (&s_store);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    cr_expect_eq (system (cmd), 0);
}

typedef struct {
    const char *header [4][2];
} s_args_t;

static const char *
s_header (void *arg, const char *name)
{
    s_args_t *a = arg;
    for (int i = 0; i < 4 && a->header [i][0]; i++)
        if (strcasecmp (a->header [i][0], name) == 0)
            return a->header [i][1];
    return NULL;
}

static const char *
s_query (void *arg, const char *name)
{
    (void) arg;
    (void) name;
    return NULL;
}

static s_args_t s_admin = { { { "Authorization", "Bearer " S_ADMIN }, { "Content-Type", "application/json" } } };
static s_args_t s_gateway = { { { "Authorization", "Bearer " S_TOKEN } } };
static s_args_t s_nobody = { { { "Content-Type", "application/json" } } };

//  Ask; the answer's JSON into *out (the caller's), status returned.
static int
s_ask (sl_console_t *c, const char *method, const char *path, s_args_t *args, const char *body, json_t **out)
{
    sl_console_req_t req = { method, path, s_query, s_header, args, sl_str (body), false };
    sl_console_resp_t resp = { 0 };
    sl_console_handle (c, &req, &resp);
    json_t *j = json_loadb (resp.body.data ? (const char *) resp.body.data : "", resp.body.len, 0, NULL);
    cr_assert_not_null (j, "%s %s: %.*s", method, path, (int) resp.body.len, resp.body.data ? (char *) resp.body.data : "");
    if (out)
        *out = j;
    else
        json_decref (j);
    sl_buf_free (&resp.body);
    return resp.status;
}

static sl_console_t *
s_console (void)
{
    sl_console_t *c = sl_console_new (s_store, S_ADMIN);
    sl_console_set_clock (c, s_clock, NULL);
    sl_console_set_keys_token (c, S_TOKEN);
    sl_console_set_chain (c, s_chain);
    return c;
}

//  Whether the served set holds key's hash.
static bool
s_served (sl_console_t *c, const char *key)
{
    json_t *j;
    cr_assert_eq (s_ask (c, "GET", "/api/keys/served", &s_gateway, NULL, &j), 200);
    char hex [SL_KEYRING_HEX_SIZE];
    sl_keyring_key_hex (key, hex);
    bool found = false;
    size_t i;
    json_t *e;
    json_array_foreach (json_object_get (j, "keys"), i, e)
        found |= strcmp (json_string_value (json_object_get (e, "sha256")), hex) == 0;
    json_decref (j);
    return found;
}

Test (sl_console_keys, create_list_rotate_revoke, .init = s_setup, .fini = s_teardown)
{
    sl_console_t *c = s_console ();
    json_t *j;
    cr_assert_eq (s_ask (c, "POST", "/api/keys", &s_admin, "{\"team\":\"payments\",\"user\":\"alice\","
                         "\"models\":[\"gpt-*\"],\"limits\":{\"rpm\":60,\"alerts\":{\"at\":[50,80]}},"
                         "\"approver\":false}", &j), 201);
    char id [160], key [64];
    snprintf (id, sizeof id, "%s", json_string_value (json_object_get (j, "id")));
    snprintf (key, sizeof key, "%s", json_string_value (json_object_get (j, "key")));
    json_decref (j);
    cr_expect_eq (strncmp (key, "sk-sluice-", 10), 0);
    cr_expect (s_served (c, key));

    cr_assert_eq (s_ask (c, "GET", "/api/keys", &s_admin, NULL, &j), 200);
    json_t *row = json_array_get (json_object_get (j, "keys"), 0);
    cr_expect_str_eq (json_string_value (json_object_get (row, "id")), id);
    cr_expect_str_eq (json_string_value (json_object_get (row, "user")), "alice");
    //  Its alerts kept, as the gateways are served them.
    json_t *at = json_object_get (json_object_get (json_object_get (row, "limits"), "alerts"), "at");
    cr_expect_eq (json_array_size (at), 2);
    cr_expect_eq (json_integer_value (json_array_get (at, 1)), 80);
    char *text = json_dumps (j, 0);
    cr_expect_null (strstr (text, key), "the key is shown once");
    free (text);
    json_decref (j);

    char path [200];
    snprintf (path, sizeof path, "/api/keys/%s/rotate", id);
    cr_assert_eq (s_ask (c, "POST", path, &s_admin, "{\"grace_seconds\":10}", &j), 200);
    char key2 [64];
    snprintf (key2, sizeof key2, "%s", json_string_value (json_object_get (j, "key")));
    cr_expect_eq (json_integer_value (json_object_get (j, "grace_until")), s_now + 10000);
    json_decref (j);
    cr_expect (s_served (c, key) && s_served (c, key2), "both in the grace");
    s_now += 10000;
    cr_expect (!s_served (c, key) && s_served (c, key2), "the old one after its grace");

    snprintf (path, sizeof path, "/api/keys/%s", id);
    cr_assert_eq (s_ask (c, "DELETE", path, &s_admin, NULL, NULL), 200);
    cr_expect (!s_served (c, key2), "revoked");
    cr_expect_eq (s_ask (c, "DELETE", path, &s_admin, NULL, NULL), 404, "revoked already");

    cr_assert_eq (s_ask (c, "GET", "/api/keys/events", &s_admin, NULL, &j), 200);
    cr_expect_eq (json_array_size (json_object_get (j, "events")), 3);
    json_decref (j);
    sl_console_destroy (&c);

    //  Each change an entry of the chain, which verify finds whole.
    int64_t n = -1;
    cr_assert_eq (sl_store_query_int (s_store, "SELECT COUNT(*) FROM chain WHERE kind = 'key'", NULL, 0, -1, &n), 0);
    cr_expect_eq (n, 3);
    sl_verify_opts_t whole = { 0 };
    sl_verify_t *v = sl_verify_new (s_store, &whole);
    for (int steps = 0; sl_verify_step (v, 100) == 1 && steps < 100; steps++)
        ;
    sl_verify_rows (v);
    cr_expect_eq (sl_verify_report (v)->status, SL_VERIFY_INTACT, "%s", sl_verify_report (v)->detail);
    cr_expect_eq (sl_verify_report (v)->entries, 3);
    sl_verify_destroy (&v);
}

//  A key's hash swapped in the store for one of someone else's: the set
//  holding it is not served; the gateways get the last good set, the
//  chain is broken, naming the key and the column.
Test (sl_console_keys, a_key_swapped_in_the_store_is_not_served, .init = s_setup, .fini = s_teardown)
{
    sl_console_t *c = s_console ();
    json_t *j;
    cr_expect_eq (s_ask (c, "GET", "/api/keys/served", &s_gateway, NULL, NULL), 200, "an empty set is good");
    cr_assert_eq (s_ask (c, "POST", "/api/keys", &s_admin, "{\"team\":\"payments\",\"user\":\"alice\"}", &j), 201);
    char id [160], key [64];
    snprintf (id, sizeof id, "%s", json_string_value (json_object_get (j, "id")));
    snprintf (key, sizeof key, "%s", json_string_value (json_object_get (j, "key")));
    json_decref (j);
    cr_assert_eq (s_ask (c, "POST", "/api/keys", &s_admin, "{\"team\":\"ops\",\"user\":\"bob\"}", &j), 201);
    char bob_id [160], bob [64];
    snprintf (bob_id, sizeof bob_id, "%s", json_string_value (json_object_get (j, "id")));
    snprintf (bob, sizeof bob, "%s", json_string_value (json_object_get (j, "key")));
    json_decref (j);
    cr_assert (s_served (c, key));
    cr_assert (s_served (c, bob));
    cr_expect (!sl_chain_problem (s_chain, NULL, NULL, NULL));

    char mine [SL_KEYRING_KEY_MAX], hex [SL_KEYRING_HEX_SIZE], sql [512];
    sl_keyring_new_key (mine);
    sl_keyring_key_hex (mine, hex);
    snprintf (sql, sizeof sql, "UPDATE api_keys SET sha256 = '%s' WHERE id = '%s'", hex, id);
    cr_assert_eq (sl_store_exec (s_store, sql, NULL, 0, NULL), 0);
    cr_expect (!s_served (c, mine), "the swapped hash is not served");
    cr_expect (!s_served (c, key), "nor the key it replaced: the row differs from its chain entry");
    cr_expect (s_served (c, bob), "the other keys are");
    const char *kind, *detail;
    cr_expect (sl_chain_problem (s_chain, &kind, NULL, &detail), "the chain is broken");
    cr_expect_str_eq (kind, "changed");
    cr_expect_not_null (strstr (detail, id), "%s", detail);
    cr_expect_not_null (strstr (detail, "sha256"), "%s", detail);
    //  A revocation still reaches the gateways while the chain is broken.
    char path [200];
    snprintf (path, sizeof path, "/api/keys/%s", bob_id);
    cr_assert_eq (s_ask (c, "DELETE", path, &s_admin, NULL, NULL), 200);
    cr_expect (!s_served (c, bob), "revoked while a row differs: served no more");
    sl_console_destroy (&c);
}

//  A key issued before grants were chained, not resealed at the audit's
//  start (its store was down then): resealed at the gateways' next
//  fetch, then served.
Test (sl_console_keys, a_key_left_unsealed_at_start_is_resealed_when_fetched, .init = s_setup, .fini = s_teardown)
{
    char why [SL_KEYSTORE_WHY_MAX];
    sl_keyspec_t spec;
    cr_assert_eq (sl_keyspec_parse (sl_str ("{\"team\":\"payments\",\"user\":\"alice\"}"), &spec, why), 0);
    sl_keystore_issued_t k;
    cr_assert_eq (sl_keystore_create (s_store, NULL, &spec, "ci-bot", s_now, &k), 0);
    sl_keyspec_clear (&spec);
    cr_assert_eq (sl_store_exec (s_store, "INSERT INTO key_reseal (id) SELECT id FROM api_keys", NULL, 0, NULL), 0);
    sl_console_t *c = s_console ();
    cr_expect (s_served (c, k.key));
    int64_t n = 0;
    cr_assert_eq (sl_store_query_int (s_store, "SELECT COUNT(*) FROM key_events WHERE action = 'reseal'", NULL, 0,
                                      0, &n), 0);
    cr_expect_eq (n, 1);
    cr_expect (!sl_chain_problem (s_chain, NULL, NULL, NULL));
    sl_console_destroy (&c);
}

//  A console with no chain to enter a change in makes none.
Test (sl_console_keys, no_change_without_the_chain, .init = s_setup, .fini = s_teardown)
{
    sl_console_t *c = sl_console_new (s_store, S_ADMIN);
    json_t *j;
    cr_expect_eq (s_ask (c, "POST", "/api/keys", &s_admin, "{\"team\":\"t\",\"user\":\"u\"}", &j), 503);
    cr_expect_not_null (strstr (json_string_value (json_object_get (j, "error")), "chain"));
    json_decref (j);
    cr_expect_eq (s_ask (c, "DELETE", "/api/keys/t-000000000000", &s_admin, NULL, NULL), 503);
    cr_expect_eq (s_ask (c, "POST", "/api/keys/t-000000000000/rotate", &s_admin, NULL, NULL), 503);
    int64_t n = -1;
    cr_assert_eq (sl_store_query_int (s_store, "SELECT COUNT(*) FROM api_keys", NULL, 0, -1, &n), 0);
    cr_expect_eq (n, 0, "nothing was created");
    sl_console_destroy (&c);
}

Test (sl_console_keys, only_admins_and_the_gateways_token, .init = s_setup, .fini = s_teardown)
{
    sl_console_t *c = s_console ();
    const char *body = "{\"team\":\"t\",\"user\":\"u\"}";
    cr_expect_eq (s_ask (c, "POST", "/api/keys", &s_nobody, body, NULL), 401);
    s_args_t wrong = { { { "Authorization", "Bearer not-a-key" }, { "Content-Type", "application/json" } } };
    cr_expect_eq (s_ask (c, "POST", "/api/keys", &wrong, body, NULL), 401);
    cr_expect_eq (s_ask (c, "GET", "/api/keys", &s_nobody, NULL, NULL), 401);
    //  The gateways' token reads the served set, and nothing else.
    s_args_t token_json = { { { "Authorization", "Bearer " S_TOKEN }, { "Content-Type", "application/json" } } };
    cr_expect_eq (s_ask (c, "POST", "/api/keys", &token_json, body, NULL), 401);
    cr_expect_eq (s_ask (c, "GET", "/api/keys", &s_gateway, NULL, NULL), 401);
    cr_expect_eq (s_ask (c, "GET", "/api/keys/served", &s_nobody, NULL, NULL), 401);
    cr_expect_eq (s_ask (c, "GET", "/api/keys/served", &wrong, NULL, NULL), 401);
    cr_expect_eq (s_ask (c, "GET", "/api/keys/served", &s_admin, NULL, NULL), 200);
    int64_t n = -1;
    cr_assert_eq (sl_store_query_int (s_store, "SELECT COUNT(*) FROM api_keys", NULL, 0, -1, &n), 0);
    cr_expect_eq (n, 0, "nothing was created");
    sl_console_destroy (&c);

    //  Without a token, the served set is for admins only.
    c = sl_console_new (s_store, S_ADMIN);
    sl_console_set_chain (c, s_chain);
    cr_expect_eq (s_ask (c, "GET", "/api/keys/served", &s_gateway, NULL, NULL), 401);
    sl_console_destroy (&c);
}

Test (sl_console_keys, bad_input_is_refused, .init = s_setup, .fini = s_teardown)
{
    sl_console_t *c = s_console ();
    json_t *j;
    cr_expect_eq (s_ask (c, "POST", "/api/keys", &s_admin, "{\"team\":\"t\",\"user\":\"u\",\"role\":\"admin\"}", &j),
                  400);
    cr_expect_not_null (strstr (json_string_value (json_object_get (j, "error")), "unknown field 'role'"));
    json_decref (j);
    cr_expect_eq (s_ask (c, "POST", "/api/keys", &s_admin, "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"rpn\":1}}",
                         NULL), 400);
    //  Alert thresholds as the keys file's: each bad one named.
    cr_expect_eq (s_ask (c, "POST", "/api/keys", &s_admin,
                         "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"alerts\":{\"at\":[80,50]}}}", &j), 400);
    cr_expect_not_null (strstr (json_string_value (json_object_get (j, "error")), "limits.alerts.at must rise"));
    json_decref (j);
    cr_expect_eq (s_ask (c, "POST", "/api/keys", &s_admin,
                         "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"alerts\":{\"at\":[150]}}}", &j), 400);
    cr_expect_not_null (strstr (json_string_value (json_object_get (j, "error")), "from 1 to 100"));
    json_decref (j);
    s_args_t form = { { { "Authorization", "Bearer " S_ADMIN }, { "Content-Type", "text/plain" } } };
    cr_expect_eq (s_ask (c, "POST", "/api/keys", &form, "{\"team\":\"t\",\"user\":\"u\"}", NULL), 415);
    cr_expect_eq (s_ask (c, "POST", "/api/keys/t-000000000000/rotate", &s_admin, NULL, NULL), 404);
    cr_expect_eq (s_ask (c, "POST", "/api/keys/t-000000000000/rotate", &s_admin, "{\"grace\":1}", NULL), 400);
    cr_expect_eq (s_ask (c, "DELETE", "/api/keys/t-000000000000", &s_admin, NULL, NULL), 404);
    cr_expect_eq (s_ask (c, "DELETE", "/api/keys/..%2f", &s_admin, NULL, NULL), 404);
    cr_expect_eq (s_ask (c, "DELETE", "/api/keys", &s_admin, NULL, NULL), 405);
    cr_expect_eq (s_ask (c, "PUT", "/api/keys/t-1", &s_admin, NULL, NULL), 405);
    cr_expect_eq (s_ask (c, "GET", "/api/keys/t-1/rotate", &s_admin, NULL, NULL), 405);
    cr_expect_eq (s_ask (c, "GET", "/api/keysmith", &s_admin, NULL, NULL), 404, "not the keys API");
    int64_t n = -1;
    cr_assert_eq (sl_store_query_int (s_store, "SELECT COUNT(*) FROM key_events", NULL, 0, -1, &n), 0);
    cr_expect_eq (n, 0, "no change recorded");
    sl_console_destroy (&c);
}

//  The Keys page ships with the console, and the console's page loads it.
Test (sl_console_keys, the_keys_page_is_served, .init = s_setup, .fini = s_teardown)
{
    sl_console_t *c = s_console ();
    s_args_t none = { { { NULL, NULL } } };
    sl_console_req_t req = { "GET", "/keys.js", s_query, s_header, &none, SL_STR_NULL, false };
    sl_console_resp_t resp = { 0 };
    sl_console_handle (c, &req, &resp);
    cr_expect_eq (resp.status, 200);
    cr_expect_not_null (strstr (resp.content_type, "javascript"));
    cr_expect_not_null (strstr (sl_buf_cstr (&resp.body), "/api/keys"));
    sl_buf_reset (&resp.body);
    req.path = "/";
    sl_console_handle (c, &req, &resp);
    cr_expect_not_null (strstr (sl_buf_cstr (&resp.body), "src=\"/keys.js\""));
    cr_expect_not_null (strstr (sl_buf_cstr (&resp.body), "#/keys"));
    sl_buf_free (&resp.body);
    sl_console_destroy (&c);
}

//  The keys file's keys are listed beside, read-only, without their hash;
//  the API cannot change them.
Test (sl_console_keys, the_keys_files_keys_show_read_only, .init = s_setup, .fini = s_teardown)
{
    sl_console_t *c = s_console ();
    char hex [SL_KEYRING_HEX_SIZE], text [512];
    sl_keyring_key_hex ("sk-file", hex);
    snprintf (text, sizeof text, "version: 1\nkeys:\n  - id: bob-laptop\n    sha256: %s\n    team: ops\n"
                                 "    user: bob\n    models: [\"gpt-*\"]\n    limits: {rpm: 5, tokens_per_day: 1000, "
                                 "alerts: {at: [50, 80, 100]}}\n", hex);
    char *error = NULL;
    sl_keyring_t *ring = sl_keyring_parse (text, strlen (text), "/tmp/keys.yaml", &error);
    cr_assert_not_null (ring, "%s", error ? error : "");
    sl_console_set_file_keys (c, ring);
    sl_keyring_unref (&ring);           //  the console keeps its own reference
    json_t *j;
    cr_assert_eq (s_ask (c, "GET", "/api/keys", &s_admin, NULL, &j), 200);
    json_t *k = json_array_get (json_object_get (j, "file"), 0);
    cr_assert_not_null (k);
    cr_expect_str_eq (json_string_value (json_object_get (k, "id")), "bob-laptop");
    cr_expect_str_eq (json_string_value (json_object_get (k, "team")), "ops");
    cr_expect (json_is_true (json_object_get (k, "read_only")));
    cr_expect_eq (json_integer_value (json_object_get (json_object_get (k, "limits"), "rpm")), 5);
    json_t *at = json_object_get (json_object_get (json_object_get (k, "limits"), "alerts"), "at");
    cr_expect_eq (json_array_size (at), 3, "its alert thresholds listed");
    cr_expect_eq (json_integer_value (json_array_get (at, 2)), 100);
    cr_expect_str_eq (json_string_value (json_array_get (json_object_get (k, "models"), 0)), "gpt-*");
    char *dump = json_dumps (j, 0);
    cr_expect_null (strstr (dump, hex), "no hash listed");
    free (dump);
    json_decref (j);
    cr_expect_eq (s_ask (c, "DELETE", "/api/keys/bob-laptop", &s_admin, NULL, NULL), 404, "not the API's to revoke");
    cr_expect_eq (s_ask (c, "POST", "/api/keys/bob-laptop/rotate", &s_admin, NULL, NULL), 404);
    sl_console_destroy (&c);
}
