/*  Unit tests: services/audit/store/sl_monthuse, this month's spend per
    team and key projected to the month's end (spent / the fraction of
    the month gone), beside the budgets: the keys file's (asked of the
    caller) and the console's keys' (their limits); flagged when the
    projection passes one. On SQLite and PostgreSQL (store_env.h). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "services/audit/store/sl_monthuse.h"
#include "tests/unit/services/audit/store_env.h"

#define S_DEC1 1796083200000LL          //  2026-12-01 00:00 UTC
#define S_DAY (86400 * 1000LL)

Test (sl_monthuse, the_month_gone_and_the_projection)
{
    int64_t from, to;
    double e = sl_monthuse_elapsed (S_DEC1 + 15 * S_DAY + 12345, &from, &to);
    cr_expect_eq (from, S_DEC1);
    cr_expect_eq (to, S_DEC1 + 31 * S_DAY, "December has 31 days, to January 1st");
    cr_expect_float_eq (e, (15 * S_DAY + 12345) / (31.0 * S_DAY), 1e-12);
    cr_expect_float_eq (sl_monthuse_project (3.1, 0.5), 6.2, 1e-12);
    cr_expect_float_eq (sl_monthuse_project (3.1, 15.5 / 31), 6.2, 1e-12, "half December gone: twice");
    //  February 2028 (a leap year): 29 days.
    e = sl_monthuse_elapsed (1835395170000LL, &from, &to);     //  2028-02-28 23:59:30
    cr_expect_eq ((to - from) / S_DAY, 29);
    cr_expect_float_eq (e, (27 * S_DAY + 86370000) / (29.0 * S_DAY), 1e-12, "a day and 30 s to go");
    //  A month's first minutes project as its first hour.
    e = sl_monthuse_elapsed (S_DEC1 + 1000, &from, &to);
    cr_expect_float_eq (e, SL_MONTHUSE_MIN_ELAPSED_MS / (31.0 * S_DAY), 1e-12);
}

//  The keys file's budgets: team payments $10 a month, key file-key 1000 tokens.
static bool
s_budget (void *arg, bool team, const char *name, double *usd, int64_t *tokens)
{
    (*(int *) arg)++;
    if (team && strcmp (name, "payments") == 0) {
        *usd = 10;
        return true;
    }
    if (!team && strcmp (name, "file-key") == 0) {
        *tokens = 1000;
        return true;
    }
    return false;
}

static json_t *
s_row (json_t *list, const char *member, const char *name)
{
    size_t i;
    json_t *row;
    json_array_foreach (list, i, row)
        if (strcmp (json_string_value (json_object_get (row, member)) ?: "", name) == 0)
            return row;
    cr_assert_fail ("no %s %s", member, name);
    return NULL;
}

static void
s_suite (store_env_t *env)
{
    sl_store_t *store = store_env_fresh (env, "monthuse");
    //  Half of December gone. This month: payments $3 (1 + 2) and 300
    //  tokens over two keys, ops $6; last month's $100 counts for nothing.
    int64_t now = S_DEC1 + 31 * S_DAY / 2;
    const char *sql [] = {
        "INSERT INTO streams (sid, started_at, team, client_key, usage_in, usage_out, cost_usd_micro) VALUES "
        "('a1', 1796083200000 + 3600000, 'payments', 'file-key', 100, 50, 1000000)",
        "INSERT INTO streams (sid, started_at, team, client_key, usage_in, usage_out, cost_usd_micro) VALUES "
        "('a2', 1796083200000 + 7200000, 'payments', 'payments-0123456789ab', 100, 50, 2000000)",
        "INSERT INTO streams (sid, started_at, team, client_key, usage_in, usage_out, cost_usd_micro) VALUES "
        "('a3', 1796083200000 + 7200000, 'ops', 'ops-0123456789ab', 10, 0, 6000000)",
        "INSERT INTO streams (sid, started_at, team, client_key, usage_in, usage_out, cost_usd_micro) VALUES "
        "('a0', 1796083200000 - 1000, 'payments', 'file-key', 100000, 0, 100000000)",
        "INSERT INTO api_keys (id, sha256, team, user_name, limits, approver, created_at) VALUES "
        "('payments-0123456789ab', 'aa', 'payments', 'alice', '{\"budget\":{\"usd\":5}}', 0, 1)",
        "INSERT INTO api_keys (id, sha256, team, user_name, limits, approver, created_at) VALUES "
        "('ops-0123456789ab', 'bb', 'ops', 'bob', NULL, 0, 1)",
    };
    for (size_t i = 0; i < sizeof sql / sizeof sql [0]; i++)
        cr_assert_eq (sl_store_exec (store, sql [i], NULL, 0, NULL), 0, "%s: %s", sql [i], sl_store_error (store));
    sl_buf_t out = { 0 };
    int asked = 0;
    cr_assert_eq (sl_monthuse_query (store, now, s_budget, &asked, &out), 0, "%s", sl_store_error (store));
    json_t *j = json_loads (sl_buf_cstr (&out), 0, NULL);
    cr_assert_not_null (j, "%s", sl_buf_cstr (&out));
    cr_expect_str_eq (json_string_value (json_object_get (j, "month")), "2026-12");
    cr_expect_float_eq (json_number_value (json_object_get (j, "elapsed")), 0.5, 1e-6);
    json_t *teams = json_object_get (j, "teams"), *keys = json_object_get (j, "keys");
    cr_expect_eq (json_array_size (teams), 2, "%s", env->kind);
    json_t *pay = s_row (teams, "team", "payments");
    cr_expect_float_eq (json_number_value (json_object_get (pay, "spent_usd")), 3.0, 1e-6, "%s", env->kind);
    cr_expect_eq (json_integer_value (json_object_get (pay, "tokens")), 300);
    cr_expect_float_eq (json_number_value (json_object_get (pay, "projected_month_usd")), 6.0, 1e-5);
    cr_expect_eq (json_integer_value (json_object_get (pay, "projected_month_tokens")), 600);
    cr_expect_float_eq (json_number_value (json_object_get (pay, "budget_usd")), 10.0, 1e-9);
    cr_expect (json_is_null (json_object_get (pay, "budget_tokens")));
    cr_expect (json_is_false (json_object_get (pay, "over_budget")), "$6 of $10");
    json_t *ops = s_row (teams, "team", "ops");
    cr_expect (json_is_null (json_object_get (ops, "budget_usd")), "no budget");
    cr_expect (json_is_false (json_object_get (ops, "over_budget")));
    //  Keys: the file's asked of the caller, the console's from their limits.
    cr_expect_eq (json_array_size (keys), 3);
    json_t *fk = s_row (keys, "key", "file-key");
    cr_expect_str_eq (json_string_value (json_object_get (fk, "team")), "payments");
    cr_expect_eq (json_integer_value (json_object_get (fk, "projected_month_tokens")), 300);
    cr_expect_eq (json_integer_value (json_object_get (fk, "budget_tokens")), 1000);
    cr_expect (json_is_false (json_object_get (fk, "over_budget")), "300 of 1000 tokens");
    json_t *ck = s_row (keys, "key", "payments-0123456789ab");
    cr_expect_float_eq (json_number_value (json_object_get (ck, "projected_month_usd")), 4.0, 1e-5);
    cr_expect_float_eq (json_number_value (json_object_get (ck, "budget_usd")), 5.0, 1e-9);
    cr_expect (json_is_false (json_object_get (ck, "over_budget")), "$4 of $5");
    json_decref (j);
    //  A day later payments' key is on course for more than its $5.
    sl_buf_reset (&out);
    cr_assert_eq (sl_store_exec (store, "INSERT INTO streams (sid, started_at, team, client_key, cost_usd_micro) "
                                        "VALUES ('a4', 1796083200000 + 86400000, 'payments', "
                                        "'payments-0123456789ab', 1000000)", NULL, 0, NULL), 0);
    cr_assert_eq (sl_monthuse_query (store, now, s_budget, &asked, &out), 0);
    j = json_loads (sl_buf_cstr (&out), 0, NULL);
    ck = s_row (json_object_get (j, "keys"), "key", "payments-0123456789ab");
    cr_expect_float_eq (json_number_value (json_object_get (ck, "projected_month_usd")), 6.0, 1e-5);
    cr_expect (json_is_true (json_object_get (ck, "over_budget")), "$6 projected past $5");
    cr_expect (json_is_false (json_object_get (s_row (json_object_get (j, "teams"), "team", "payments"),
                                               "over_budget")), "$8 of $10");
    json_decref (j);
    sl_buf_free (&out);
    sl_store_close (&store);
}

Test (sl_monthuse, the_suite_on_sqlite)
{
    store_env_sqlite (s_suite);
}

Test (sl_monthuse, the_suite_on_postgresql)
{
    store_env_postgres (s_suite);
}
