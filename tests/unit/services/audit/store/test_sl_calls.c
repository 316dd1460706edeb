/*  Tests of sl_calls: the recorded tool calls, read in pages, read-only,
    on SQLite and PostgreSQL (store_env.h). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/audit/store/sl_calls.h"
#include "tests/unit/services/audit/store_env.h"

#define S_T0 1700000000000LL

//  A stream and its verdicts: n calls of tool at S_T0 + i, every third of
//  team "ops", the rest of "eng"; one request verdict and one text verdict
//  beside them, which are not calls.
static void
s_fill (sl_store_t *store, int n)
{
    cr_assert_eq (sl_store_begin (store), 0);
    for (int i = 0; i < n; i++) {
        char sid [40];
        snprintf (sid, sizeof sid, "%032x", i / 2);    //  two calls a stream
        sl_val_t s [] = { sl_val_text (sid), sl_val_int (S_T0 + i), sl_val_text ("gpt-4o"), sl_val_text ("hi"),
                          sl_val_text (i % 3 ? "eng" : "ops"), sl_val_text ("abcdef012345") };
        cr_assert_eq (sl_store_exec (store, "INSERT INTO streams (sid, started_at, model, last_user, team, policy) "
                                     "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (sid) DO NOTHING", s, 6, NULL),
                      0, "%s", sl_store_error (store));
        sl_val_t v [] = { sl_val_text (sid), sl_val_int (i % 2 ? 7 : 3), sl_val_text ("run_shell"),
                          sl_val_text (i % 5 ? "allow" : "block"), sl_val_text ("{\"command\":\"ls\"}"),
                          sl_val_int (S_T0 + i), sl_val_text (i % 5 ? NULL : "no-rm") };
        cr_assert_eq (sl_store_exec (store, "INSERT INTO verdicts (sid, seq, side, tool, action, checked, rule, "
                                     "arguments, at, probability) VALUES ($1, $2, 'response', $3, $4, 'ran', $7, "
                                     "$5, $6, 0.25)", v, 7, NULL), 0, "%s", sl_store_error (store));
    }
    sl_val_t r [] = { sl_val_text ("00000000000000000000000000000000"), sl_val_int (S_T0) };
    cr_assert_eq (sl_store_exec (store, "INSERT INTO verdicts (sid, seq, side, part, tool, action, checked, at) "
                                 "VALUES ($1, 100, 'request', 'messages[0]', 'run_shell', 'redact', 'ran', $2)",
                                 r, 2, NULL), 0, "%s", sl_store_error (store));
    cr_assert_eq (sl_store_exec (store, "INSERT INTO verdicts (sid, seq, side, action, checked, at) "
                                 "VALUES ($1, 101, 'response', 'allow', 'ran', $2)", r, 2, NULL), 0);
    cr_assert_eq (sl_store_commit (store), 0);
}

typedef struct {
    int64_t count, last_at, ops;
    int64_t stop_after;
    bool in_order;
    bool context;
} s_seen_t;

static int
s_on (void *arg, const sl_calls_row_t *row)
{
    s_seen_t *seen = arg;
    if (row->at < seen->last_at)
        seen->in_order = false;
    seen->last_at = row->at;
    seen->count++;
    if (sl_str_eq (row->team, "ops"))
        seen->ops++;
    seen->context = seen->context && sl_str_eq (row->model, "gpt-4o") && sl_str_eq (row->last_user, "hi")
                    && sl_str_eq (row->policy, "abcdef012345") && sl_str_eq (row->tool, "run_shell")
                    && row->probability == 0.25 && sl_str_eq (row->checked, "ran");
    return seen->stop_after && seen->count >= seen->stop_after;
}

static void
s_suite (store_env_t *env)
{
    sl_store_t *writer = store_env_fresh (env, "calls");
    int n = 2 * SL_CALLS_PAGE + 7;      //  three pages
    s_fill (writer, n);
    char *error = NULL;
    sl_store_t *store = sl_calls_open (env->target, &error);
    cr_assert_not_null (store, "%s", error ? error : "");

    s_seen_t seen = { .in_order = true, .context = true, .last_at = 0 };
    sl_calls_filter_t all = { .from = S_T0, .to = S_T0 + n };
    cr_expect_eq (sl_calls_read (store, &all, s_on, &seen), n);
    cr_expect_eq (seen.count, n, "every call once, across pages, and nothing else");
    cr_expect (seen.in_order);
    cr_expect (seen.context, "each call with its stream's context");

    //  A call's team is its stream's: the team of the stream's first call.
    int64_t of_ops = 0;
    for (int i = 0; i < n; i++)
        of_ops += (2 * (i / 2)) % 3 == 0;
    s_seen_t team = { .in_order = true };
    sl_calls_filter_t ops = { .from = S_T0, .to = S_T0 + n, .team = "ops" };
    cr_expect_eq (sl_calls_read (store, &ops, s_on, &team), of_ops);
    cr_expect_gt (of_ops, 0);
    cr_expect_eq (team.ops, team.count);

    s_seen_t window = { .in_order = true };
    sl_calls_filter_t some = { .from = S_T0 + 10, .to = S_T0 + 20 };
    cr_expect_eq (sl_calls_read (store, &some, s_on, &window), 10);

    s_seen_t stopped = { .stop_after = 3 };
    cr_expect_eq (sl_calls_read (store, &all, s_on, &stopped), 3);

    //  A bound on calls: the oldest, across pages, then the read stops.
    s_seen_t bounded = { .in_order = true };
    sl_calls_filter_t first = { .from = S_T0, .to = S_T0 + n, .limit = SL_CALLS_PAGE + 3 };
    cr_expect_eq (sl_calls_read (store, &first, s_on, &bounded), SL_CALLS_PAGE + 3);
    cr_expect_eq (bounded.count, SL_CALLS_PAGE + 3);
    cr_expect_eq (bounded.last_at, S_T0 + SL_CALLS_PAGE + 2);

    s_seen_t none = { 0 };
    sl_calls_filter_t empty = { .from = 1, .to = 2 };
    cr_expect_eq (sl_calls_read (store, &empty, s_on, &none), 0);

    //  Written while it is read: what a later page finds is read too, once.
    s_seen_t grown = { .in_order = true };
    sl_calls_filter_t later = { .from = S_T0, .to = S_T0 + 10 * n };
    cr_expect_eq (sl_calls_read (store, &later, s_on, &grown), n);

    //  Read-only: the connection refuses to write.
    cr_expect_neq (sl_store_exec (store, "DELETE FROM verdicts", NULL, 0, NULL), 0, "a write must be refused");
    cr_expect_eq (sl_store_query_int (writer, "SELECT COUNT(*) FROM verdicts", NULL, 0, 0, &seen.count), 0);
    cr_expect_eq (seen.count, n + 2, "nothing was deleted");

    sl_buf_t text = { 0 };
    cr_expect_eq (sl_calls_policy_source (store, "abcdef012345", &text), 1, "no such policy");

    //  A backtest over the store: ls now blocked; the recorded blocks stay.
    char *perror = NULL;
    const char *yaml = "rules:\n  - {id: no-ls, tool: run_shell, args: [{pointer: /command, equals: ls}], "
                       "action: block}\n";
    sl_policy_t *policy = sl_policy_parse (yaml, strlen (yaml), "new.yaml", &perror);
    cr_assert_not_null (policy, "%s", perror ? perror : "");
    sl_backtest_t *b = sl_backtest_new (policy, 3);
    cr_expect_eq (sl_calls_backtest (store, &all, b), n);
    int64_t blocked = (n + 4) / 5;
    cr_expect_eq (sl_backtest_count (b, SL_BACKTEST_NEWLY_BLOCKED), n - blocked);
    cr_expect_eq (sl_backtest_count (b, SL_BACKTEST_SAME), blocked);
    sl_backtest_destroy (&b);
    sl_policy_unref (&policy);
    sl_store_close (&store);
    sl_store_close (&writer);
}

static void
s_suite_missing (store_env_t *env)
{
    char path [256];
    snprintf (path, sizeof path, "%s/none.db", env->dir);
    char *error = NULL;
    cr_expect_null (sl_calls_open (path, &error));
    cr_assert_not_null (error);
    cr_expect_not_null (strstr (error, "no such store"), "%s", error);
    free (error);
    FILE *f = fopen (path, "r");
    cr_expect_null (f, "a missing store is never made");
    if (f)
        fclose (f);
}

Test (calls, sqlite)
{
    store_env_sqlite (s_suite);
}

Test (calls, postgres, .timeout = 120)
{
    store_env_postgres (s_suite);
}

Test (calls, a_missing_store_is_an_error_never_made)
{
    store_env_sqlite (s_suite_missing);
}
