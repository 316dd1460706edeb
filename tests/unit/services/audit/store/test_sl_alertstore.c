/*  Unit tests: services/audit/store/sl_alertstore, the budget alerts the
    gateways post: what a post may hold (its id the crossing's), each
    recorded once (a second post of its id refused), listed newest first,
    and each an entry of the hash chain (verify names an alert edited,
    deleted or inserted). On SQLite and PostgreSQL (store_env.h). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/identity/sl_limits.h"
#include "services/audit/recorder/sl_chain.h"
#include "services/audit/recorder/sl_verify.h"
#include "services/audit/store/sl_alertstore.h"
#include "tests/unit/services/audit/store_env.h"

#define S_T0 1700000000000LL

//  A crossing's body as a gateway posts it, its id computed.
static void
s_body (char *out, size_t size, const char *subject, const char *limit, int threshold, const char *period,
        const char *window, double used)
{
    char id [SL_LIMITS_ALERT_ID_HEX + 1];
    sl_limits_alert_id (subject, limit, threshold, window, id);
    snprintf (out, size, "{\"type\":\"limits_alert\",\"id\":\"%s\",\"at\":%lld,\"team\":\"payments\","
                         "\"key\":\"payments-0123456789ab\",\"user\":\"alice\",\"subject\":\"%s\",\"limit\":\"%s\","
                         "\"threshold\":%d,\"used\":%.6f,\"max\":10.0,\"period\":\"%s\",\"window\":\"%s\"}",
              id, S_T0 - 5, subject, limit, threshold, used, period, window);
}

static sl_alert_t
s_parsed (const char *body)
{
    sl_alert_t a;
    char why [SL_ALERTSTORE_WHY_MAX];
    cr_assert_eq (sl_alert_parse (sl_str (body), &a, why), 0, "%s: %s", body, why);
    return a;
}

static json_t *
s_list (sl_store_t *store, int64_t since, int limit)
{
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_alertstore_list (store, since, limit, &out), 0, "%s", sl_store_error (store));
    json_t *j = json_loads (sl_buf_cstr (&out), 0, NULL);
    cr_assert (json_is_array (j), "%s", sl_buf_cstr (&out));
    sl_buf_free (&out);
    return j;
}

//  Three alerts recorded through a chain: 80% and 100% of a key's
//  month, 50% of a team's day.
static sl_store_t *
s_alerts_chained (store_env_t *env)
{
    sl_store_t *store = store_env_fresh (env, "alerts");
    sl_chain_t *chain = sl_chain_new (store);
    cr_assert_eq (sl_chain_load (chain), 0, "%s", sl_store_error (store));
    char body [1024];
    struct { const char *subject, *limit; int at; const char *period, *window; } c [] = {
        { "key:payments-0123456789ab", "budget_usd", 80, "month", "202612" },
        { "key:payments-0123456789ab", "budget_usd", 100, "month", "202612" },
        { "team:payments", "tokens_per_day", 50, "day", "20261202" },
    };
    for (int i = 0; i < 3; i++) {
        s_body (body, sizeof body, c [i].subject, c [i].limit, c [i].at, c [i].period, c [i].window, 8.5 + i);
        sl_alert_t a = s_parsed (body);
        int64_t pos = 0;
        cr_assert_eq (sl_alertstore_record (store, chain, &a, S_T0 + i, &pos), 0, "%s", sl_store_error (store));
        cr_expect_eq (pos, i + 1);
        //  The same crossing again (a post whose answer was lost, or
        //  another gateway's): refused, nothing written, nothing pending.
        cr_expect_eq (sl_alertstore_record (store, chain, &a, S_T0 + 10 + i, &pos), 1);
        cr_expect_eq (sl_chain_pending (chain), 0);
        sl_alert_clear (&a);
    }
    cr_expect_eq (sl_chain_head_pos (chain), 3);
    sl_chain_destroy (&chain);
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

static void
check_recorded (store_env_t *env)
{
    sl_store_t *store = s_alerts_chained (env);
    json_t *list = s_list (store, 0, 0);
    cr_assert_eq (json_array_size (list), 3, "%s: once each", env->kind);
    json_t *newest = json_array_get (list, 0), *oldest = json_array_get (list, 2);
    cr_expect_str_eq (json_string_value (json_object_get (newest, "subject")), "team:payments");
    cr_expect_str_eq (json_string_value (json_object_get (newest, "period")), "day");
    cr_expect_str_eq (json_string_value (json_object_get (newest, "window")), "20261202");
    cr_expect_str_eq (json_string_value (json_object_get (oldest, "limit")), "budget_usd");
    cr_expect_str_eq (json_string_value (json_object_get (oldest, "key")), "payments-0123456789ab");
    cr_expect_str_eq (json_string_value (json_object_get (oldest, "user")), "alice");
    cr_expect_eq (json_integer_value (json_object_get (oldest, "threshold")), 80);
    cr_expect_eq (json_number_value (json_object_get (oldest, "used")), 8.5);
    cr_expect_eq (json_number_value (json_object_get (oldest, "max")), 10.0);
    cr_expect_eq (json_integer_value (json_object_get (oldest, "at")), S_T0);
    cr_expect_eq (json_integer_value (json_object_get (oldest, "crossed_at")), S_T0 - 5);
    json_decref (list);
    //  since and limit
    list = s_list (store, S_T0 + 1, 0);
    cr_expect_eq (json_array_size (list), 2);
    json_decref (list);
    list = s_list (store, 0, 1);
    cr_expect_eq (json_array_size (list), 1);
    json_decref (list);
    //  One entry each, kind "alert", ref the row's pos; verify finds them whole.
    for (int i = 1; i <= 3; i++) {
        char ref [8];
        snprintf (ref, sizeof ref, "%d", i);
        sl_val_t p [] = { sl_val_int (i), sl_val_text (ref) };
        int64_t n = 0;
        cr_assert_eq (sl_store_query_int (store, "SELECT COUNT(*) FROM chain WHERE pos = $1 AND kind = 'alert' "
                                                 "AND ref = $2 AND rows_named = 1", p, 2, 0, &n), 0);
        cr_expect_eq (n, 1, "%s: entry %d", env->kind, i);
    }
    sl_verify_report_t r = s_verify (store);
    cr_expect_eq (r.status, SL_VERIFY_INTACT, "%s: %s", env->kind, r.detail);
    cr_expect_eq (r.entries, 3);
    sl_store_close (&store);
}

//  An alert edited, deleted or inserted afterwards: verify names it.
static void
check_tampered (store_env_t *env)
{
    static const struct {
        const char *sql;
        const char *problem, *key;
    } cases [] = {
        { "UPDATE alerts SET threshold = 50 WHERE pos = 1", "changed", "pos=1" },
        { "UPDATE alerts SET used_value = 1.5 WHERE pos = 2", "changed", "pos=2" },
        { "UPDATE alerts SET team = NULL WHERE pos = 2", "changed", "pos=2" },
        { "DELETE FROM alerts WHERE pos = 3", "removed", "pos=3" },
        { "INSERT INTO alerts (pos, id, at, crossed_at, subject, limit_kind, threshold, used_value, max_value, "
          "period, win) VALUES (4, '0123456789abcdef0123456789abcdef', 1700000000100, 1700000000100, "
          "'team:ops', 'budget_usd', 100, 10, 10, 'month', '202612')", "inserted", "pos=4" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_store_t *store = s_alerts_chained (env);
        s_exec (store, cases [i].sql);
        sl_verify_report_t r = s_verify (store);
        cr_expect_eq (r.status, SL_VERIFY_BROKEN, "%s case %zu: %s", env->kind, i, r.detail);
        cr_expect_str_eq (r.problem, cases [i].problem, "%s case %zu: %s", env->kind, i, r.detail);
        cr_expect_str_eq (r.table, "alerts", "%s case %zu: %s", env->kind, i, r.detail);
        cr_expect_str_eq (r.key, cases [i].key, "%s case %zu: %s", env->kind, i, r.detail);
        sl_store_close (&store);
    }
}

static void
s_suite (store_env_t *env)
{
    check_recorded (env);
    check_tampered (env);
}

Test (sl_alertstore, the_suite_on_sqlite)
{
    store_env_sqlite (s_suite);
}

Test (sl_alertstore, the_suite_on_postgresql)
{
    store_env_postgres (s_suite);
}

Test (sl_alertstore, a_post_is_checked)
{
    char good [1024], day [1024];
    s_body (good, sizeof good, "key:k", "budget_usd", 80, "month", "202612", 8);
    s_body (day, sizeof day, "team:t", "tokens_per_day", 50, "day", "20261202", 500);
    sl_alert_t a = s_parsed (good);
    cr_expect_str_eq (a.team, "payments");
    cr_expect_eq (a.threshold, 80);
    sl_alert_clear (&a);
    a = s_parsed (day);
    sl_alert_clear (&a);
    //  Each a change of the good body: what it replaces, with what.
    static const struct {
        const char *from, *to, *why;
    } cases [] = {
        { "\"type\":\"limits_alert\"", "\"type\":\"other\"", "type" },
        { "\"threshold\":80", "\"threshold\":81", "id must be the crossing's" },
        { "\"window\":\"202612\"", "\"window\":\"202611\"", "id must be the crossing's" },
        { "\"subject\":\"key:k\"", "\"subject\":\"key:j\"", "id must be the crossing's" },
        { "\"threshold\":80", "\"threshold\":0", "threshold" },
        { "\"threshold\":80", "\"threshold\":\"80\"", "threshold" },
        { "\"limit\":\"budget_usd\"", "\"limit\":\"rpm\"", "limit must be" },
        { "\"period\":\"month\"", "\"period\":\"day\"", "period must be day for tokens_per_day" },
        { "\"period\":\"month\"", "\"period\":\"year\"", "period must be" },
        { "\"window\":\"202612\"", "\"window\":\"2026-12\"", "window must be the month" },
        { "\"max\":10.0", "\"max\":-1", "used and max" },
        { "\"used\":8.000000", "\"used\":\"8\"", "used and max" },
        { "\"at\":", "\"at\":-", "at must be" },
        { "\"user\":\"alice\"", "\"user\":\"a\\nb\"", "user must be text" },
        { "\"team\":\"payments\"", "\"team\":3", "team must be text" },
        { "\"user\":\"alice\"", "\"user\":\"alice\",\"content\":\"x\"", "unknown field 'content'" },
        { "\"user\":\"alice\"", "\"user\":\"alice\",\"user\":\"bob\"", "JSON object" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char body [1100];
        const char *at = strstr (good, cases [i].from);
        cr_assert_not_null (at, "%s", cases [i].from);
        snprintf (body, sizeof body, "%.*s%s%s", (int) (at - good), good, cases [i].to, at + strlen (cases [i].from));
        char why [SL_ALERTSTORE_WHY_MAX];
        int rc = sl_alert_parse (sl_str (body), &a, why);
        cr_expect_eq (rc, -1, "accepted: %s", body);
        cr_expect_not_null (strstr (why, cases [i].why), "%s: %s", body, why);
        sl_alert_clear (&a);
    }
    //  A team's alert has no key or user: null or absent.
    char bare [1024], body [1100];
    s_body (bare, sizeof bare, "team:t", "budget_tokens", 100, "month", "202612", 10);
    const char *k = strstr (bare, "\"key\":\"payments-0123456789ab\"");
    snprintf (body, sizeof body, "%.*s\"key\":null%s", (int) (k - bare), bare,
              k + strlen ("\"key\":\"payments-0123456789ab\""));
    a = s_parsed (body);
    cr_expect_null (a.key);
    sl_alert_clear (&a);
}
