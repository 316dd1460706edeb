/*  Unit tests: services/audit/store/sl_store, the interface both backends
    stand behind (each backend's own: test_sl_store_sqlite.c,
    test_sl_store_pg.c): migrations, values, transactions, rows, and a
    target that names its database and hides its password.

    The suite runs against every backend (STYLE 14): a SQLite file in a
    temporary directory, and a real PostgreSQL server this test starts in
    a temporary directory (tests/pgtmp.h; skipped, with the reason, where
    the server's programs are absent). Each check gets a fresh store: a new
    file, or a new database of the one cluster. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "services/audit/store/sl_store.h"
#include "tests/unit/services/audit/records.h"
#include "tests/unit/services/audit/store_env.h"

typedef store_env_t s_env_t;

//  A fresh, migrated store.
static sl_store_t *
s_fresh (s_env_t *env)
{
    return store_env_fresh (env, "audit");
}

//  --------------------------------------------------------------------------
//  The checks every backend runs

static void
check_migrations (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    cr_expect_eq (sl_store_version (store), sl_store_latest_version ());
    cr_expect_geq (sl_store_latest_version (), 1);
    sl_store_close (&store);
    //  Opening again applies nothing twice.
    char *error = NULL;
    store = sl_store_open (env->target, &error);
    cr_assert_not_null (store, "%s", error ? error : "");
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM schema_version"), sl_store_latest_version ());
    //  A schema from a newer sluice-audit is refused, not run over.
    sl_val_t p [] = { sl_val_int (sl_store_latest_version () + 1), sl_val_text ("999_future.sql"), sl_val_int (1) };
    cr_assert_eq (sl_store_exec (store, "INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, $3)",
                                 p, 3, NULL), 0);
    sl_store_close (&store);
    store = sl_store_open (env->target, &error);
    cr_expect_null (store);
    cr_expect_not_null (error && strstr (error, "newer"), "%s", error ? error : "");
    free (error);
}

typedef struct {
    int rows;
    int64_t i;
    double d;
    char text [64];
    bool null;
} s_vals_t;

static int
s_vals_row (void *arg, const sl_row_t *row)
{
    s_vals_t *v = arg;
    v->rows++;
    v->i = sl_row_int (row, 0);
    v->d = sl_row_real (row, 1);
    sl_str_t t = sl_row_text (row, 2);
    snprintf (v->text, sizeof v->text, "%.*s", (int) t.len, t.ptr ? t.ptr : "");
    v->null = sl_row_null (row, 3);
    return 0;
}

static void
check_values (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    cr_assert_eq (sl_store_exec (store, "CREATE TABLE t (i BIGINT, d DOUBLE PRECISION, s TEXT, n TEXT)",
                                 NULL, 0, NULL), 0, "%s", sl_store_error (store));
    sl_val_t p [] = { sl_val_int (INT64_C (9007199254740993)), sl_val_real (0.25),
                      sl_val_str (SL_STR_LIT ("caf\xc3\xa9 \xe2\x9c\x93")), sl_val_null () };
    int64_t changes = 0;
    cr_assert_eq (sl_store_exec (store, "INSERT INTO t (i, d, s, n) VALUES ($1, $2, $3, $4)", p, 4, &changes), 0,
                  "%s", sl_store_error (store));
    cr_expect_eq (changes, 1);
    s_vals_t v = { 0 };
    cr_assert_eq (sl_store_query (store, "SELECT i, d, s, n FROM t WHERE s = $1 AND i = $2",
                                  (sl_val_t []) { p [2], p [0] }, 2, s_vals_row, &v), 0, "%s", sl_store_error (store));
    cr_expect_eq (v.rows, 1);
    cr_expect_eq (v.i, INT64_C (9007199254740993));
    cr_expect (fabs (v.d - 0.25) < 1e-12);
    cr_expect_str_eq (v.text, "caf\xc3\xa9 \xe2\x9c\x93");
    cr_expect (v.null);
    //  A parameter used twice, and an empty string that is not NULL.
    cr_assert_eq (sl_store_exec (store, "INSERT INTO t (i, d, s, n) VALUES ($1, $3, $2, $2)",
                                 (sl_val_t []) { sl_val_int (5), sl_val_text (""), sl_val_real (5) }, 3, NULL), 0,
                  "%s", sl_store_error (store));
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM t WHERE s = '' AND n IS NOT NULL AND i = 5"), 1);
    //  A failed statement inside a transaction: rolled back, nothing kept.
    cr_assert_eq (sl_store_begin (store), 0);
    cr_assert_eq (sl_store_exec (store, "INSERT INTO t (i) VALUES (1)", NULL, 0, NULL), 0);
    cr_expect_neq (sl_store_exec (store, "INSERT INTO nowhere VALUES (1)", NULL, 0, NULL), 0);
    cr_expect_neq (strlen (sl_store_error (store)), 0);
    cr_expect_not (sl_store_broken (store), "a bad statement is not a broken connection");
    sl_store_rollback (store);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM t WHERE i = 1"), 0);
    sl_store_close (&store);
}

//  A transaction: open until its commit or rollback; what it wrote is
//  seen after the commit, gone after the rollback; a rollback without
//  one is nothing.
static void
check_transactions (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    cr_assert_eq (sl_store_exec (store, "CREATE TABLE t (i BIGINT)", NULL, 0, NULL), 0);
    cr_expect_not (sl_store_in_transaction (store));
    sl_store_rollback (store);
    cr_expect_not (sl_store_in_transaction (store));
    cr_assert_eq (sl_store_begin (store), 0, "%s", sl_store_error (store));
    cr_expect (sl_store_in_transaction (store));
    cr_assert_eq (sl_store_exec (store, "INSERT INTO t VALUES (1)", NULL, 0, NULL), 0);
    cr_assert_eq (sl_store_commit (store), 0, "%s", sl_store_error (store));
    cr_expect_not (sl_store_in_transaction (store));
    cr_assert_eq (sl_store_begin (store), 0);
    cr_assert_eq (sl_store_exec (store, "INSERT INTO t VALUES (2)", NULL, 0, NULL), 0);
    sl_store_rollback (store);
    cr_expect_not (sl_store_in_transaction (store));
    cr_expect_eq (records_count (store, "SELECT SUM(i) FROM t"), 1);
    //  Another connection sees only what is committed; closing with a
    //  transaction open rolls it back.
    char *error = NULL;
    sl_store_t *other = sl_store_open (env->target, &error);
    cr_assert_not_null (other, "%s", error ? error : "");
    cr_assert_eq (sl_store_begin (store), 0);
    cr_assert_eq (sl_store_exec (store, "INSERT INTO t VALUES (4)", NULL, 0, NULL), 0);
    cr_expect_eq (records_count (other, "SELECT SUM(i) FROM t"), 1, "not committed yet");
    sl_store_close (&store);
    cr_expect_null (store);
    sl_store_close (&store);
    cr_expect_eq (records_count (other, "SELECT SUM(i) FROM t"), 1, "rolled back as it closed");
    sl_store_close (&other);
}

typedef struct {
    int64_t i [4];
    double d [4];
    bool null [5];
    char text [8];                      //  column 3, copied: the row is borrowed
    bool text_absent;                   //  a column past the row's end has no text
} s_conv_t;

static int
s_conv_row (void *arg, const sl_row_t *row)
{
    s_conv_t *c = arg;
    for (int col = 0; col < 4; col++) {
        c->i [col] = sl_row_int (row, col);
        c->d [col] = sl_row_real (row, col);
        c->null [col] = sl_row_null (row, col);
    }
    c->null [4] = sl_row_null (row, 9);
    sl_str_t t = sl_row_text (row, 3);
    snprintf (c->text, sizeof c->text, "%.*s", (int) t.len, t.ptr ? t.ptr : "");
    c->text_absent = sl_row_text (row, 9).ptr == NULL;
    return 1;
}

//  A row's columns read as the caller asks, whatever the backend handed
//  out (SQLite: typed; PostgreSQL: text): numbers from text, NULL and
//  a column past the row's end as 0 and absent.
static void
check_rows_read_as_asked (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    s_conv_t c = { 0 };
    cr_assert_eq (sl_store_query (store, "SELECT 42, 2.5, NULL, 'x7'", NULL, 0, s_conv_row, &c), 0, "%s",
                  sl_store_error (store));
    cr_expect_eq (c.i [0], 42);
    cr_expect_eq (c.d [0], 42.0);
    cr_expect_eq (c.i [1], 2, "a real as an integer: its whole part");
    cr_expect_eq (c.d [1], 2.5);
    cr_expect (c.null [2]);
    cr_expect_eq (c.i [2], 0);
    cr_expect_eq (c.i [3], 0, "text that is no number");
    cr_expect_str_eq (c.text, "x7");
    cr_expect (c.null [4], "past the row's end");
    cr_expect (c.text_absent);
    //  One integer: the default when there is no row, or the row's NULL.
    int64_t n = 0;
    cr_assert_eq (sl_store_query_int (store, "SELECT version FROM schema_version WHERE version < 0", NULL, 0, -5, &n),
                  0);
    cr_expect_eq (n, -5);
    cr_assert_eq (sl_store_query_int (store, "SELECT MAX(version) FROM schema_version WHERE version < 0", NULL, 0, -6,
                                      &n), 0);
    cr_expect_eq (n, -6);
    //  A store opened raw is not migrated.
    char *error = NULL;
    sl_store_t *raw = sl_store_open_raw (env->target, &error);
    cr_assert_not_null (raw, "%s", error ? error : "");
    cr_expect_eq (sl_store_version (raw), sl_store_latest_version (), "the fresh store's own");
    sl_store_close (&raw);
    sl_store_close (&store);
}

static void
s_suite (s_env_t *env)
{
    check_migrations (env);
    check_values (env);
    check_transactions (env);
    check_rows_read_as_asked (env);
}

Test (sl_store, the_suite_on_sqlite)
{
    store_env_sqlite (s_suite);
}

Test (sl_store, the_suite_on_postgresql)
{
    store_env_postgres (s_suite);
}

Test (sl_store, targets_pick_their_database_and_hide_passwords)
{
    char *error = NULL;
    sl_store_t *store = sl_store_open_raw ("postgres://audit:s3cret@127.0.0.1:1/none?connect_timeout=1", &error);
    cr_expect_null (store, "nothing listens there");
    cr_assert_not_null (error);
    cr_expect_null (strstr (error, "s3cret"), "the password is never in an error: %s", error);
    free (error);
    error = NULL;
    store = sl_store_open_raw ("host=127.0.0.1 port=1 password=s3cret connect_timeout=1", &error);
    cr_expect_null (store);
    cr_expect_null (error ? strstr (error, "s3cret") : NULL, "%s", error ? error : "");
    free (error);
    char dir [] = "/tmp/sluice-target-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    char path [64];
    snprintf (path, sizeof path, "%s/a.db", dir);
    store = sl_store_open (path, &error);
    cr_assert_not_null (store, "%s", error ? error : "");
    cr_expect_str_eq (sl_store_kind (store), "sqlite");
    cr_expect_str_eq (sl_store_target (store), path);
    sl_store_close (&store);
    unlink (path);
    char wal [80];
    snprintf (wal, sizeof wal, "%s-wal", path);
    unlink (wal);
    snprintf (wal, sizeof wal, "%s-shm", path);
    unlink (wal);
    rmdir (dir);
}
