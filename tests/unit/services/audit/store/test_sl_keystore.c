/*  Unit tests: services/audit/store/sl_keystore, client keys issued
    through the console: created (the key shown once, only its hash
    stored), listed, rotated (the old secret served for its grace, then
    not), revoked (served no more), each change a key event and an entry
    of the hash chain (verify names a key event edited, deleted or
    inserted); and what a create or rotate request may hold. On SQLite and
    PostgreSQL (store_env.h). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/identity/sl_keyring.h"
#include "services/audit/recorder/sl_chain.h"
#include "services/audit/recorder/sl_verify.h"
#include "services/audit/store/sl_keystore.h"
#include "tests/unit/services/audit/store_env.h"

#define S_T0 1700000000000LL

//  The served set at now, parsed.
static json_t *
s_served (sl_store_t *store, int64_t now)
{
    sl_buf_t out = { 0 };
    sl_keystore_problem_t problem;
    cr_assert_eq (sl_keystore_served (store, now, &out, &problem), 0, "%s %s", sl_store_error (store),
                  problem.detail);
    json_t *j = json_loads (sl_buf_cstr (&out), 0, NULL);
    cr_assert_not_null (j, "%s", sl_buf_cstr (&out));
    sl_buf_free (&out);
    return j;
}

//  How many served entries carry the hash of key.
static int
s_serves (json_t *served, const char *key)
{
    char hex [SL_KEYRING_HEX_SIZE];
    sl_keyring_key_hex (key, hex);
    size_t i;
    json_t *e;
    int n = 0;
    json_array_foreach (json_object_get (served, "keys"), i, e)
        n += strcmp (json_string_value (json_object_get (e, "sha256")), hex) == 0;
    return n;
}

static json_t *
s_list (sl_store_t *store, int64_t now)
{
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_keystore_list (store, now, &out), 0, "%s", sl_store_error (store));
    json_t *j = json_loads (sl_buf_cstr (&out), 0, NULL);
    cr_assert (json_is_array (j), "%s", sl_buf_cstr (&out));
    sl_buf_free (&out);
    return j;
}

static void
check_life (store_env_t *env)
{
    sl_store_t *store = store_env_fresh (env, "keys");
    sl_chain_t *chain = sl_chain_new (store);
    cr_assert_eq (sl_chain_load (chain), 0, "%s", sl_store_error (store));
    char why [SL_KEYSTORE_WHY_MAX];
    sl_keyspec_t spec;
    cr_assert_eq (sl_keyspec_parse (sl_str ("{\"team\":\"payments\",\"user\":\"alice\",\"models\":[\"gpt-*\"],"
                                            "\"limits\":{\"rpm\":60,\"budget\":{\"usd\":5.5}},\"approver\":true}"),
                                    &spec, why), 0, "%s", why);
    sl_keystore_issued_t a, b;
    cr_assert_eq (sl_keystore_create (store, chain, &spec, "console-key:abc", S_T0, &a), 0, "%s", sl_store_error (store));
    cr_expect_eq (strncmp (a.key, "sk-sluice-", 10), 0);
    cr_expect_eq (strncmp (a.id, "payments-", 9), 0, "%s", a.id);
    cr_assert_eq (sl_keystore_create (store, chain, &spec, NULL, S_T0 + 1, &b), 0);
    cr_expect_str_neq (a.key, b.key);
    sl_keyspec_clear (&spec);

    //  Only hashes are stored: no column holds the key.
    int64_t n = -1;
    sl_val_t k [] = { sl_val_text (a.key) };
    cr_assert_eq (sl_store_query_int (store, "SELECT COUNT(*) FROM api_keys WHERE sha256 = $1 OR id = $1 "
                                             "OR user_name = $1", k, 1, -1, &n), 0);
    cr_expect_eq (n, 0);

    json_t *served = s_served (store, S_T0 + 2);
    cr_expect_eq (json_array_size (json_object_get (served, "keys")), 2);
    cr_expect_eq (s_serves (served, a.key), 1);
    json_t *first = json_array_get (json_object_get (served, "keys"), 0);
    cr_expect (json_is_true (json_object_get (first, "approver")));
    cr_expect_str_eq (json_string_value (json_array_get (json_object_get (first, "models"), 0)), "gpt-*");
    cr_expect_eq (json_integer_value (json_object_get (json_object_get (first, "limits"), "rpm")), 60);
    json_decref (served);

    //  Rotate a: both secrets served within the grace, the new one only after.
    sl_keystore_issued_t a2;
    cr_assert_eq (sl_keystore_rotate (store, chain, a.id, 60000, "console", S_T0 + 10, &a2), 0, "%s",
                  sl_store_error (store));
    cr_expect_str_eq (a2.id, a.id, "the id stays");
    cr_expect_str_neq (a2.key, a.key);
    served = s_served (store, S_T0 + 20);
    cr_expect_eq (s_serves (served, a.key), 1, "the old secret in its grace");
    cr_expect_eq (s_serves (served, a2.key), 1);
    json_decref (served);
    served = s_served (store, S_T0 + 10 + 60000);
    cr_expect_eq (s_serves (served, a.key), 0, "the grace is over");
    cr_expect_eq (s_serves (served, a2.key), 1);
    json_decref (served);
    json_t *list = s_list (store, S_T0 + 20);
    cr_expect_eq (json_array_size (list), 2);
    json_t *row = json_array_get (list, 1);
    cr_expect_str_eq (json_string_value (json_object_get (row, "id")), a.id, "newest first");
    cr_expect_eq (json_integer_value (json_object_get (row, "grace_until")), S_T0 + 10 + 60000);
    cr_expect_null (json_object_get (row, "sha256"), "no hash listed");
    json_decref (list);

    //  Revoke a: neither secret served, at once; a second revoke or a rotate is no key.
    cr_assert_eq (sl_keystore_revoke (store, chain, a.id, "console", S_T0 + 30), 0, "%s", sl_store_error (store));
    served = s_served (store, S_T0 + 31);
    cr_expect_eq (s_serves (served, a.key), 0);
    cr_expect_eq (s_serves (served, a2.key), 0);
    cr_expect_eq (s_serves (served, b.key), 1, "the other key stays");
    json_decref (served);
    cr_expect_eq (sl_keystore_revoke (store, chain, a.id, "console", S_T0 + 32), 1);
    cr_expect_eq (sl_keystore_rotate (store, chain, a.id, 0, "console", S_T0 + 32, &a2), 1);
    cr_expect_eq (sl_keystore_revoke (store, chain, "payments-000000000000", "console", S_T0 + 32), 1, "unknown id");
    list = s_list (store, S_T0 + 40);
    row = json_array_get (list, 1);
    cr_expect_str_eq (json_string_value (json_object_get (row, "state")), "revoked");
    cr_expect_eq (json_integer_value (json_object_get (row, "revoked_at")), S_T0 + 30);
    json_decref (list);

    //  Every change an event, newest first, with who asked.
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_keystore_events (store, 0, &out), 0);
    json_t *events = json_loads (sl_buf_cstr (&out), 0, NULL);
    cr_assert_eq (json_array_size (events), 4, "%s", sl_buf_cstr (&out));
    const char *actions [] = { "revoke", "rotate", "create", "create" };
    for (size_t i = 0; i < 4; i++)
        cr_expect_str_eq (json_string_value (json_object_get (json_array_get (events, i), "action")), actions [i]);
    cr_expect_str_eq (json_string_value (json_object_get (json_array_get (events, 3), "by")), "console-key:abc");
    cr_expect_null (strstr (sl_buf_cstr (&out), a.key), "no key in the events");
    json_decref (events);
    sl_buf_free (&out);
    sl_chain_destroy (&chain);
    sl_store_close (&store);
}

//  A store where a key was created, rotated and revoked through chain.
static sl_store_t *
s_keys_chained (store_env_t *env, char key [SL_KEYSTORE_KEY_MAX])
{
    sl_store_t *store = store_env_fresh (env, "keychain");
    sl_chain_t *chain = sl_chain_new (store);
    cr_assert_eq (sl_chain_load (chain), 0, "%s", sl_store_error (store));
    char why [SL_KEYSTORE_WHY_MAX];
    sl_keyspec_t spec;
    cr_assert_eq (sl_keyspec_parse (sl_str ("{\"team\":\"payments\",\"user\":\"alice\",\"models\":[\"gpt-*\"],"
                                            "\"limits\":{\"rpm\":60},\"approver\":true}"), &spec, why), 0, "%s", why);
    sl_keystore_issued_t a, a2;
    cr_assert_eq (sl_keystore_create (store, chain, &spec, "alice <a@x> (sub-1)", S_T0, &a), 0, "%s",
                  sl_store_error (store));
    sl_keyspec_clear (&spec);
    cr_assert_eq (sl_keystore_rotate (store, chain, a.id, 1000, "ci-bot", S_T0 + 10, &a2), 0, "%s",
                  sl_store_error (store));
    cr_assert_eq (sl_keystore_revoke (store, chain, a.id, "ci-bot", S_T0 + 20), 0, "%s", sl_store_error (store));
    //  Nothing is pending after a refused change (no such key).
    cr_expect_eq (sl_keystore_revoke (store, chain, a.id, "ci-bot", S_T0 + 30), 1);
    cr_expect_eq (sl_chain_pending (chain), 0);
    cr_expect_eq (sl_chain_head_pos (chain), 3);
    sl_chain_destroy (&chain);
    snprintf (key, SL_KEYSTORE_KEY_MAX, "%s", a2.key);
    return store;
}

static sl_verify_report_t
s_verify (sl_store_t *store)
{
    sl_verify_opts_t whole = { 0 };
    sl_verify_t *v = sl_verify_new (store, &whole);
    for (int steps = 0; sl_verify_step (v, 100) == 1 && steps < 100; steps++)
        ;
    sl_verify_rows (v);
    sl_verify_report_t r = *sl_verify_report (v);
    sl_verify_destroy (&v);
    return r;
}

static void
s_exec (sl_store_t *store, const char *sql)
{
    cr_assert_eq (sl_store_exec (store, sql, NULL, 0, NULL), 0, "%s: %s", sql, sl_store_error (store));
}

//  Each change one entry (kind "key", ref the event's pos), in order; the
//  key events hold neither the key nor its hash (the entries carry the
//  hash: the grant); verify finds it whole.
static void
check_chained (store_env_t *env)
{
    char key [SL_KEYSTORE_KEY_MAX], hex [SL_KEYRING_HEX_SIZE];
    sl_store_t *store = s_keys_chained (env, key);
    sl_keyring_key_hex (key, hex);
    const char *want [] = { "1", "2", "3" };
    for (int i = 0; i < 3; i++) {
        sl_val_t p [] = { sl_val_int (i + 1), sl_val_text (want [i]) };
        int64_t n = 0;
        cr_assert_eq (sl_store_query_int (store, "SELECT COUNT(*) FROM chain WHERE pos = $1 AND kind = 'key' "
                                                 "AND ref = $2 AND rows_named = 1 AND seal IS NULL", p, 2, 0, &n), 0);
        cr_expect_eq (n, 1, "%s: entry %d", env->kind, i + 1);
    }
    sl_val_t h [] = { sl_val_text (hex) };
    int64_t n = -1;
    cr_assert_eq (sl_store_query_int (store, "SELECT COUNT(*) FROM key_events WHERE detail LIKE '%' || $1 || '%' "
                                             "OR key_id = $1", h, 1, 0, &n), 0);
    cr_expect_eq (n, 0, "no hash in the key events");
    sl_verify_report_t r = s_verify (store);
    cr_expect_eq (r.status, SL_VERIFY_INTACT, "%s: %s", env->kind, r.detail);
    cr_expect_eq (r.entries, 3);
    sl_store_close (&store);
}

//  A key event edited, deleted or inserted afterwards: verify names it.
static void
check_tampered (store_env_t *env)
{
    static const struct {
        const char *sql;
        const char *problem, *key;
    } cases [] = {
        { "UPDATE key_events SET by_whom = 'nobody' WHERE pos = 1", "changed", "pos=1" },
        { "UPDATE key_events SET detail = '{\"team\":\"payments\",\"user\":\"bob\",\"models\":null,"
          "\"limits\":null,\"approver\":true}' WHERE pos = 1", "changed", "pos=1" },
        { "DELETE FROM key_events WHERE pos = 3", "removed", "pos=3" },
        { "INSERT INTO key_events (pos, at, key_id, action, by_whom) "
          "VALUES (4, 1700000000100, 'payments-0123456789ab', 'create', 'ci-bot')", "inserted", "pos=4" },
    };
    static const struct {
        const char *sql;
        const char *problem, *key;
    } keys [] = {
        //  A key written straight into the table, with no key event.
        { "INSERT INTO api_keys (id, sha256, team, user_name, approver, created_at) VALUES ('ops-0123456789ab', "
          "'0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef', 'ops', 'mallory', 1, 1700000000100)",
          "inserted", "id=ops-0123456789ab" },
        //  A revoked key put back in force.
        { "UPDATE api_keys SET revoked_at = NULL", "changed", NULL },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char key [SL_KEYSTORE_KEY_MAX];
        sl_store_t *store = s_keys_chained (env, key);
        s_exec (store, cases [i].sql);
        sl_verify_report_t r = s_verify (store);
        cr_expect_eq (r.status, SL_VERIFY_BROKEN, "%s case %zu: %s", env->kind, i, r.detail);
        cr_expect_str_eq (r.problem, cases [i].problem, "%s case %zu: %s", env->kind, i, r.detail);
        cr_expect_str_eq (r.table, "key_events", "%s case %zu: %s", env->kind, i, r.detail);
        cr_expect_str_eq (r.key, cases [i].key, "%s case %zu: %s", env->kind, i, r.detail);
        sl_store_close (&store);
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys [0]; i++) {
        char key [SL_KEYSTORE_KEY_MAX];
        sl_store_t *store = s_keys_chained (env, key);
        s_exec (store, keys [i].sql);
        sl_verify_report_t r = s_verify (store);
        cr_expect_eq (r.status, SL_VERIFY_BROKEN, "%s key case %zu: %s", env->kind, i, r.detail);
        cr_expect_str_eq (r.problem, keys [i].problem, "%s key case %zu: %s", env->kind, i, r.detail);
        cr_expect_str_eq (r.table, "api_keys", "%s key case %zu: %s", env->kind, i, r.detail);
        if (keys [i].key)
            cr_expect_str_eq (r.key, keys [i].key, "%s key case %zu: %s", env->kind, i, r.detail);
        else
            cr_expect_eq (strncmp (r.key, "id=payments-", 12), 0, "%s key case %zu: %s", env->kind, i, r.key);
        sl_store_close (&store);
    }
}

//  Keys a (rotated, its old secret in its grace), b and c (revoked),
//  each change through chain; their ids into ids.
static sl_store_t *
s_keys_granted (store_env_t *env, char ids [3][SL_KEYSTORE_ID_MAX])
{
    sl_store_t *store = store_env_fresh (env, "keygrants");
    sl_chain_t *chain = sl_chain_new (store);
    cr_assert_eq (sl_chain_load (chain), 0, "%s", sl_store_error (store));
    static const char *specs [] = {
        "{\"team\":\"payments\",\"user\":\"alice\",\"models\":[\"gpt-*\"],\"limits\":{\"rpm\":60},\"approver\":true}",
        "{\"team\":\"search\",\"user\":\"bob\",\"models\":[\"claude-*\"]}",
        "{\"team\":\"search\",\"user\":\"carol\"}",
    };
    for (int i = 0; i < 3; i++) {
        char why [SL_KEYSTORE_WHY_MAX];
        sl_keyspec_t spec;
        cr_assert_eq (sl_keyspec_parse (sl_str (specs [i]), &spec, why), 0, "%s", why);
        sl_keystore_issued_t k;
        cr_assert_eq (sl_keystore_create (store, chain, &spec, "ci-bot", S_T0 + i, &k), 0, "%s",
                      sl_store_error (store));
        snprintf (ids [i], SL_KEYSTORE_ID_MAX, "%s", k.id);
        sl_keyspec_clear (&spec);
    }
    sl_keystore_issued_t a2;
    cr_assert_eq (sl_keystore_rotate (store, chain, ids [0], 3600000, "ci-bot", S_T0 + 10, &a2), 0);
    cr_assert_eq (sl_keystore_revoke (store, chain, ids [2], "ci-bot", S_T0 + 20), 0);
    sl_chain_destroy (&chain);
    return store;
}

//  A key's row edited (its hash swapped for another, its models, its
//  team, its approver flag, the secret in its grace), deleted or
//  inserted: verify names the row and the first column that differs, and
//  no key set holding such a row in force is served.
static void
check_grants (store_env_t *env)
{
    static const char *other = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    static const struct {
        const char *sql;                //  %s: the key's id
        int key;                        //  which key (ids), -1: the row inserted
        const char *problem, *column;
        bool served;                    //  the set is served all the same (the row is not in force)
    } cases [] = {
        { "UPDATE api_keys SET sha256 = '%s' WHERE id = '%s'", 0, "changed", "sha256", false },
        { "UPDATE api_keys SET sha256 = '%s' WHERE id = '%s'", 1, "changed", "sha256", false },
        { "UPDATE api_keys SET prev_sha256 = '%s' WHERE id = '%s'", 0, "changed", "prev_sha256", false },
        { "UPDATE api_keys SET models = '[\"*\"]' WHERE id = '%2$s'", 1, "changed", "models", false },
        { "UPDATE api_keys SET models = NULL WHERE id = '%2$s'", 1, "changed", "models", false },
        { "UPDATE api_keys SET team = 'payments' WHERE id = '%2$s'", 1, "changed", "team", false },
        { "UPDATE api_keys SET limits = NULL WHERE id = '%2$s'", 0, "changed", "limits", false },
        { "UPDATE api_keys SET approver = 1 WHERE id = '%2$s'", 1, "changed", "approver", false },
        { "UPDATE api_keys SET sha256 = '%s' WHERE id = '%s'", 2, "changed", "sha256", true },
        { "DELETE FROM api_keys WHERE id = '%2$s'", 1, "removed", "", true },
        { "INSERT INTO api_keys (id, sha256, team, user_name, approver, created_at) VALUES ('ops-0123456789ab', "
          "'%s', 'ops', 'mallory', 1, 1700000000100)", -1, "inserted", "", false },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char ids [3][SL_KEYSTORE_ID_MAX];
        sl_store_t *store = s_keys_granted (env, ids);
        const char *id = cases [i].key < 0 ? "ops-0123456789ab" : ids [cases [i].key];
        sl_keystore_problem_t p;
        cr_assert_eq (sl_keystore_check (store, NULL, &p), 0, "%s case %zu before: %s", env->kind, i, p.detail);
        json_decref (s_served (store, S_T0 + 30));
        char sql [512], want [SL_KEYSTORE_ID_MAX + 8];
        snprintf (sql, sizeof sql, cases [i].sql, other, id);
        s_exec (store, sql);
        snprintf (want, sizeof want, "id=%s", id);

        cr_expect_eq (sl_keystore_check (store, NULL, &p), 1, "%s case %zu", env->kind, i);
        cr_expect_str_eq (p.kind, cases [i].problem, "%s case %zu: %s", env->kind, i, p.detail);
        cr_expect_str_eq (p.id, id, "%s case %zu: %s", env->kind, i, p.detail);
        cr_expect_str_eq (p.column, cases [i].column, "%s case %zu: %s", env->kind, i, p.detail);

        sl_verify_report_t r = s_verify (store);
        cr_expect_eq (r.status, SL_VERIFY_BROKEN, "%s case %zu: %s", env->kind, i, r.detail);
        cr_expect_str_eq (r.problem, cases [i].problem, "%s case %zu: %s", env->kind, i, r.detail);
        cr_expect_str_eq (r.table, "api_keys", "%s case %zu: %s", env->kind, i, r.detail);
        cr_expect_str_eq (r.key, want, "%s case %zu: %s", env->kind, i, r.detail);
        if (*cases [i].column)
            cr_expect_not_null (strstr (r.detail, cases [i].column), "%s case %zu: %s", env->kind, i, r.detail);

        sl_buf_t out = { 0 };
        int rc = sl_keystore_served (store, S_T0 + 30, &out, &p);
        if (cases [i].served)
            cr_expect_eq (rc, 0, "%s case %zu: %s", env->kind, i, p.detail);
        else {
            cr_expect_eq (rc, 1, "%s case %zu: served", env->kind, i);
            //  The set without the row, the others in it.
            json_t *set = json_loadb (out.data ? (const char *) out.data : "", out.len, 0, NULL);
            cr_assert_not_null (set, "%s case %zu: %.*s", env->kind, i, (int) out.len, out.data ? (char *) out.data : "");
            size_t k, others = 0;
            json_t *e;
            json_array_foreach (json_object_get (set, "keys"), k, e) {
                cr_expect_str_neq (json_string_value (json_object_get (e, "id")), id,
                                   "%s case %zu: the row that differs is left out", env->kind, i);
                others++;
            }
            cr_expect_gt (others, 0, "%s case %zu: the other keys are served", env->kind, i);
            json_decref (set);
            cr_expect_str_eq (p.id, id, "%s case %zu: %s", env->kind, i, p.detail);
            cr_expect_str_eq (p.column, cases [i].column, "%s case %zu: %s", env->kind, i, p.detail);
        }
        sl_buf_free (&out);
        sl_store_close (&store);
    }
}

//  Keys issued before grants were chained (here: without a chain, listed
//  for their reseal as migration 012 lists them): not served until
//  resealed; resealed once each, a key event "reseal" by the migration;
//  one edited since its create is not resealed, and the set not served.
static void
check_reseal (store_env_t *env)
{
    sl_store_t *store = store_env_fresh (env, "keyreseal");
    char why [SL_KEYSTORE_WHY_MAX];
    sl_keyspec_t spec;
    cr_assert_eq (sl_keyspec_parse (sl_str ("{\"team\":\"payments\",\"user\":\"alice\",\"models\":[\"gpt-*\"],"
                                            "\"limits\":{\"rpm\":60}}"), &spec, why), 0, "%s", why);
    sl_keystore_issued_t a, b;
    cr_assert_eq (sl_keystore_create (store, NULL, &spec, "ci-bot", S_T0, &a), 0);
    cr_assert_eq (sl_keystore_create (store, NULL, &spec, "ci-bot", S_T0 + 1, &b), 0);
    sl_keyspec_clear (&spec);
    s_exec (store, "INSERT INTO key_reseal (id) SELECT id FROM api_keys");
    sl_keystore_problem_t p;
    int64_t pending = 0;
    cr_expect_eq (sl_keystore_check (store, &pending, &p), 0, "%s: %s", env->kind, p.detail);
    cr_expect_eq (pending, 2);
    sl_buf_t out = { 0 };
    cr_expect_eq (sl_keystore_served (store, S_T0 + 2, &out, &p), 1, "%s: served unsealed", env->kind);

    sl_chain_t *chain = sl_chain_new (store);
    cr_assert_eq (sl_chain_load (chain), 0);
    int resealed = 0, refused = 0;
    cr_assert_eq (sl_keystore_reseal (store, chain, S_T0 + 5, &resealed, &refused, &p), 0, "%s",
                  sl_store_error (store));
    cr_expect_eq (resealed, 2);
    cr_expect_eq (refused, 0);
    cr_expect_eq (sl_keystore_check (store, &pending, &p), 0, "%s: %s", env->kind, p.detail);
    cr_expect_eq (pending, 0);
    json_t *served = s_served (store, S_T0 + 6);
    cr_expect_eq (s_serves (served, a.key), 1);
    json_decref (served);
    int64_t n = 0;
    cr_assert_eq (sl_store_query_int (store, "SELECT COUNT(*) FROM key_events WHERE action = 'reseal' "
                                             "AND by_whom = '" SL_KEYSTORE_RESEAL_BY "'", NULL, 0, 0, &n), 0);
    cr_expect_eq (n, 2, "recorded as resealed by the migration");
    cr_assert_eq (sl_keystore_reseal (store, chain, S_T0 + 7, &resealed, &refused, &p), 0);
    cr_expect_eq (resealed, 0, "once");

    //  One edited before its reseal: left out, the set refused.
    char sql [256];
    snprintf (sql, sizeof sql, "INSERT INTO key_reseal (id) VALUES ('%s')", b.id);
    s_exec (store, sql);
    snprintf (sql, sizeof sql, "UPDATE api_keys SET user_name = 'mallory' WHERE id = '%s'", b.id);
    s_exec (store, sql);
    cr_assert_eq (sl_keystore_reseal (store, chain, S_T0 + 8, &resealed, &refused, &p), 0);
    cr_expect_eq (resealed, 0);
    cr_expect_eq (refused, 1);
    cr_expect_str_eq (p.id, b.id);
    sl_buf_reset (&out);
    cr_expect_eq (sl_keystore_served (store, S_T0 + 9, &out, &p), 1, "%s: the set served", env->kind);
    cr_expect_str_eq (p.id, b.id);
    sl_buf_free (&out);
    sl_chain_destroy (&chain);
    sl_store_close (&store);
}

static void
s_suite (store_env_t *env)
{
    check_life (env);
    check_chained (env);
    check_tampered (env);
    check_grants (env);
    check_reseal (env);
}

Test (sl_keystore, the_suite_on_sqlite)
{
    store_env_sqlite (s_suite);
}

Test (sl_keystore, the_suite_on_postgresql)
{
    store_env_postgres (s_suite);
}

Test (sl_keystore, a_create_request_is_checked)
{
    static const struct {
        const char *body;
        const char *why;                //  a part of the reason, NULL: accepted
    } cases [] = {
        { "{\"team\":\"t\",\"user\":\"u\"}", NULL },
        { "{\"team\":\"t\",\"user\":\"u\",\"models\":null,\"limits\":{}}", NULL },
        { "{\"team\":\"t\",\"user\":\"u\",\"colour\":1}", "unknown field 'colour'" },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"rpm\":1,\"rps\":2}}", "unknown field 'rps' in limits" },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"budget\":{\"eur\":2}}}", "in limits.budget" },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"rpm\":-1}}", "limits.rpm" },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"rpm\":1.5}}", "limits.rpm" },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"budget\":{\"usd\":-1}}}", "usd" },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"alerts\":{\"at\":[50,80,100]}}}", NULL },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"alerts\":{}}}", NULL },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"alerts\":[50]}}", "limits.alerts must be an object" },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"alerts\":{\"at\":[50],\"to\":1}}}",
          "unknown field 'to' in limits.alerts" },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"alerts\":{\"at\":50}}}", "limits.alerts.at must be a list" },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"alerts\":{\"at\":[0]}}}", "from 1 to 100" },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"alerts\":{\"at\":[101]}}}", "from 1 to 100" },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"alerts\":{\"at\":[50.5]}}}", "from 1 to 100" },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"alerts\":{\"at\":[\"50\"]}}}", "from 1 to 100" },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"alerts\":{\"at\":[80,50]}}}", "must rise (50 after 80)" },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"alerts\":{\"at\":[50,50]}}}", "must rise (50 after 50)" },
        { "{\"team\":\"t\",\"user\":\"u\",\"limits\":{\"alerts\":{\"at\":[1,2,3,4,5,6,7,8,9]}}}", "at most 8" },
        { "{\"team\":\"t\",\"user\":\"u\",\"models\":[]}", "models" },
        { "{\"team\":\"t\",\"user\":\"u\",\"models\":[3]}", "models" },
        { "{\"team\":\"t\",\"user\":\"u\",\"approver\":\"yes\"}", "approver" },
        { "{\"team\":\"a b\",\"user\":\"u\"}", "team" },
        { "{\"user\":\"u\"}", "team" },
        { "{\"team\":\"t\"}", "user" },
        { "{\"team\":\"t\",\"user\":\"a\\nb\"}", "user" },
        { "{\"team\":\"t\",\"team\":\"u\",\"user\":\"u\"}", "JSON object" },
        { "[1]", "JSON object" },
        { "", "JSON object" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char why [SL_KEYSTORE_WHY_MAX];
        sl_keyspec_t spec;
        int rc = sl_keyspec_parse (sl_str (cases [i].body), &spec, why);
        if (!cases [i].why)
            cr_expect_eq (rc, 0, "%s: %s", cases [i].body, why);
        else {
            cr_expect_eq (rc, -1, "%s accepted", cases [i].body);
            cr_expect_not_null (strstr (why, cases [i].why), "%s: %s", cases [i].body, why);
        }
        sl_keyspec_clear (&spec);
    }
    int64_t grace;
    char why [SL_KEYSTORE_WHY_MAX];
    cr_expect_eq (sl_keystore_parse_rotate (sl_str (""), &grace, why), 0);
    cr_expect_eq (grace, SL_KEYSTORE_GRACE_MS);
    cr_expect_eq (sl_keystore_parse_rotate (sl_str ("{\"grace_seconds\":5}"), &grace, why), 0);
    cr_expect_eq (grace, 5000);
    cr_expect_eq (sl_keystore_parse_rotate (sl_str ("{\"grace\":5}"), &grace, why), -1);
    cr_expect_eq (sl_keystore_parse_rotate (sl_str ("{\"grace_seconds\":-5}"), &grace, why), -1);
}
