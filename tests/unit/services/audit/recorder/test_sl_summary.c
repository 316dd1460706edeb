/*  Unit tests: services/audit/recorder/sl_summary, the rows later records
    update (streams, approvals, policies) against what the chain's entries
    carried: compared in bounded steps, the first difference named by
    table, key and column, a row no record made, rows older than the chain
    left alone; on SQLite and PostgreSQL (store_env.h). Column by column
    through verify: test_sl_chain.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "services/audit/recorder/sl_archive.h"
#include "services/audit/recorder/sl_summary.h"
#include "tests/unit/services/audit/records.h"
#include "tests/unit/services/audit/store_env.h"

#define T0 1000000                      //  the first stream's time, Unix ms

typedef store_env_t s_env_t;

//  Two streams and an approval (pending, then approved), committed.
static sl_store_t *
s_store (s_env_t *env)
{
    sl_store_t *store = store_env_fresh (env, "summary");
    sl_archive_t *archive = sl_archive_new (store, 0);
    cr_assert_eq (sl_store_begin (store), 0);
    for (int i = 0; i < 2; i++) {
        uint8_t sid [SL_SID_SIZE] = { 0xa0, (uint8_t) i };
        cr_assert_eq (records_stream (archive, sid, T0 + i * 1000, "gpt-x", "k1"), 9);
    }
    const uint8_t id [SL_SID_SIZE] = { 0xe1 };
    sl_record_meta_t meta = records_meta (T0 + 5000, 0);
    sl_msg_t pending = records_approval (id, "pending", T0 + 5000);
    sl_msg_t approved = records_approval (id, "approved", T0 + 6000);
    cr_assert_eq (sl_archive_apply (archive, &meta, &pending), 1);
    cr_assert_eq (sl_archive_apply (archive, &meta, &approved), 1);
    cr_assert_eq (sl_archive_commit (archive), 0, "%s", sl_store_error (store));
    sl_archive_destroy (&archive);
    return store;
}

//  Steps of max rows until done or a problem; the steps that said more.
static int
s_compare (sl_summary_t *s, int max, sl_summary_problem_t *problem)
{
    int more = 0, rc;
    while ((rc = sl_summary_step (s, max, problem)) == 1 && more < 1000)
        more++;
    cr_expect_eq (rc, 0);
    return more;
}

static void
check_every_row_in_bounded_steps (s_env_t *env)
{
    sl_store_t *store = s_store (env);
    sl_summary_t *s = sl_summary_new (store, 0);
    sl_summary_problem_t problem;
    int more = s_compare (s, 1, &problem);
    cr_expect_str_eq (problem.table, "", "%s: %s", env->kind, problem.detail);
    cr_expect_eq (sl_summary_compared (s), 3, "two streams and an approval");
    cr_expect_geq (more, 2, "a row a step: more was due between them");
    sl_summary_destroy (&s);
    //  All at once.
    s = sl_summary_new (store, 0);
    cr_expect_eq (s_compare (s, 100, &problem), 0);
    cr_expect_eq (sl_summary_compared (s), 3);
    sl_summary_destroy (&s);
    sl_store_close (&store);
}

static void
check_a_changed_column_is_named (s_env_t *env)
{
    sl_store_t *store = s_store (env);
    cr_assert_eq (sl_store_exec (store, "UPDATE streams SET model = 'cheaper' WHERE sid LIKE 'a001%'", NULL, 0, NULL),
                  0);
    sl_summary_t *s = sl_summary_new (store, 0);
    sl_summary_problem_t problem;
    s_compare (s, 100, &problem);
    cr_expect_str_eq (problem.kind, "changed");
    cr_expect_str_eq (problem.table, "streams");
    cr_expect_not_null (strstr (problem.key, "sid=a001"), "%s", problem.key);
    cr_expect_not_null (strstr (problem.detail, "model"), "%s", problem.detail);
    cr_expect_gt (problem.pos, 9, "the second stream's start: %lld", (long long) problem.pos);
    sl_summary_destroy (&s);
    //  An approval's decider.
    cr_assert_eq (sl_store_exec (store, "UPDATE streams SET model = 'gpt-x'", NULL, 0, NULL), 0);
    cr_assert_eq (sl_store_exec (store, "UPDATE approvals SET approver = 'mallory'", NULL, 0, NULL), 0);
    s = sl_summary_new (store, 0);
    s_compare (s, 100, &problem);
    cr_expect_str_eq (problem.table, "approvals");
    cr_expect_not_null (strstr (problem.detail, "approver"), "%s", problem.detail);
    sl_summary_destroy (&s);
    sl_store_close (&store);
}

//  A streams row no record made is inserted, unless it is older than the
//  chain (a store kept before it began).
static void
check_a_row_no_record_made (s_env_t *env)
{
    sl_store_t *store = s_store (env);
    cr_assert_eq (sl_store_exec (store, "INSERT INTO streams (sid, started_at) VALUES "
                                        "('ffffffffffffffffffffffffffffffff', 999000)", NULL, 0, NULL), 0);
    sl_summary_t *s = sl_summary_new (store, 0);
    sl_summary_problem_t problem;
    s_compare (s, 100, &problem);
    cr_expect_str_eq (problem.kind, "inserted");
    cr_expect_str_eq (problem.table, "streams");
    cr_expect_not_null (strstr (problem.key, "sid=ffff"), "%s", problem.key);
    sl_summary_destroy (&s);
    s = sl_summary_new (store, T0);
    s_compare (s, 100, &problem);
    cr_expect_str_eq (problem.table, "", "dated before the chain: %s", problem.detail);
    cr_expect_eq (sl_summary_compared (s), 3, "not compared");
    sl_summary_destroy (&s);
    //  A store that cannot be read: -1, and a later step tries again.
    cr_assert_eq (sl_store_exec (store, "ALTER TABLE approvals RENAME TO approvals_away", NULL, 0, NULL), 0);
    s = sl_summary_new (store, T0);
    int rc = 1;
    for (int steps = 0; rc == 1 && steps < 100; steps++)
        rc = sl_summary_step (s, 1, &problem);
    cr_expect_eq (rc, -1);
    cr_assert_eq (sl_store_exec (store, "ALTER TABLE approvals_away RENAME TO approvals", NULL, 0, NULL), 0);
    cr_expect_eq (s_compare (s, 100, &problem), 0);
    cr_expect_str_eq (problem.table, "");
    sl_summary_destroy (&s);
    sl_store_close (&store);
}

static void
s_suite (s_env_t *env)
{
    check_every_row_in_bounded_steps (env);
    check_a_changed_column_is_named (env);
    check_a_row_no_record_made (env);
}

Test (sl_summary, the_suite_on_sqlite)
{
    store_env_sqlite (s_suite);
}

Test (sl_summary, the_suite_on_postgresql)
{
    store_env_postgres (s_suite);
}
