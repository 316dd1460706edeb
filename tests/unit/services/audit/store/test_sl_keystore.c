/*  Unit tests: services/audit/store/sl_keystore, client keys issued
    through the console: created (the key shown once, only its hash
    stored), listed, rotated (the old secret served for its grace, then
    not), revoked (served no more), each change a key event; and what a
    create or rotate request may hold. On SQLite and PostgreSQL
    (store_env.h). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/identity/sl_keyring.h"
#include "services/audit/store/sl_keystore.h"
#include "tests/unit/services/audit/store_env.h"

#define S_T0 1700000000000LL

//  The served set at now, parsed.
static json_t *
s_served (sl_store_t *store, int64_t now)
{
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_keystore_served (store, now, &out), 0, "%s", sl_store_error (store));
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
    char why [SL_KEYSTORE_WHY_MAX];
    sl_keyspec_t spec;
    cr_assert_eq (sl_keyspec_parse (sl_str ("{\"team\":\"payments\",\"user\":\"alice\",\"models\":[\"gpt-*\"],"
                                            "\"limits\":{\"rpm\":60,\"budget\":{\"usd\":5.5}},\"approver\":true}"),
                                    &spec, why), 0, "%s", why);
    sl_keystore_issued_t a, b;
    cr_assert_eq (sl_keystore_create (store, &spec, "console-key:abc", S_T0, &a), 0, "%s", sl_store_error (store));
    cr_expect_eq (strncmp (a.key, "sk-sluice-", 10), 0);
    cr_expect_eq (strncmp (a.id, "payments-", 9), 0, "%s", a.id);
    cr_assert_eq (sl_keystore_create (store, &spec, NULL, S_T0 + 1, &b), 0);
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
    cr_assert_eq (sl_keystore_rotate (store, a.id, 60000, "console", S_T0 + 10, &a2), 0, "%s",
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
    cr_assert_eq (sl_keystore_revoke (store, a.id, "console", S_T0 + 30), 0, "%s", sl_store_error (store));
    served = s_served (store, S_T0 + 31);
    cr_expect_eq (s_serves (served, a.key), 0);
    cr_expect_eq (s_serves (served, a2.key), 0);
    cr_expect_eq (s_serves (served, b.key), 1, "the other key stays");
    json_decref (served);
    cr_expect_eq (sl_keystore_revoke (store, a.id, "console", S_T0 + 32), 1);
    cr_expect_eq (sl_keystore_rotate (store, a.id, 0, "console", S_T0 + 32, &a2), 1);
    cr_expect_eq (sl_keystore_revoke (store, "payments-000000000000", "console", S_T0 + 32), 1, "unknown id");
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
    sl_store_close (&store);
}

static void
s_suite (store_env_t *env)
{
    check_life (env);
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
