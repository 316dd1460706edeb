/*  Unit tests: services/audit/store/sl_store_pg, the PostgreSQL backend,
    on a real server this test starts in a temporary directory
    (tests/pgtmp.h; skipped, with the reason, where its programs are
    absent): which targets are its, results as text, the statement cache,
    a connection the server ended (broken, then reconnected), the write
    lock every writing transaction takes. What every backend does alike:
    test_sl_store.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "services/audit/store/sl_store.h"
#include "services/audit/store/sl_store_backend.h"
#include "tests/pgtmp.h"

static const sl_store_backend_t *s_b = &sl_store_postgres;

Test (sl_store_pg, its_targets_are_dsns_and_no_path)
{
    const char *dsns [] = { "postgres://audit@db:5432/audit", "postgresql://db/audit", "host=/run/postgresql",
                            "dbname=audit user=sluice", "  host=db", "sslmode=require host=db" };
    for (size_t i = 0; i < sizeof dsns / sizeof dsns [0]; i++)
        cr_expect (s_b->accepts (dsns [i]), "%s", dsns [i]);
    const char *paths [] = { "/var/lib/sluice/audit/audit.db", "audit.db", "./host=x", "=x", "Host=db", "" };
    for (size_t i = 0; i < sizeof paths / sizeof paths [0]; i++)
        cr_expect_not (s_b->accepts (paths [i]), "%s", paths [i]);
    //  Nothing listens: the reason, and never the password.
    sl_buf_t error = { 0 };
    cr_expect_null (s_b->open ("host=127.0.0.1 port=1 password=s3cret connect_timeout=1", &error));
    cr_expect_not_null (strstr (sl_buf_cstr (&error), "postgres:"), "%s", sl_buf_cstr (&error));
    cr_expect_null (strstr (sl_buf_cstr (&error), "s3cret"), "%s", sl_buf_cstr (&error));
    sl_buf_free (&error);
}

//  --------------------------------------------------------------------------
//  On a server

static pgtmp_t s_pg;

static void
s_start (void)
{
    char reason [256];
    if (pgtmp_start (&s_pg, reason, sizeof reason))
        cr_skip_test ("PostgreSQL: %s", reason);
}

static void
s_stop (void)
{
    pgtmp_stop (&s_pg);
}

static sl_store_t *
s_open (void)
{
    char *error = NULL;
    sl_store_t *store = sl_store_open_raw (s_pg.dsn, &error);
    cr_assert_not_null (store, "%s", error ? error : "");
    cr_expect_str_eq (sl_store_kind (store), "postgres");
    return store;
}

static int64_t
s_int (sl_store_t *store, const char *sql)
{
    int64_t n = -1;
    cr_assert_eq (sl_store_query_int (store, sql, NULL, 0, -1, &n), 0, "%s: %s", sql, sl_store_error (store));
    return n;
}

static void
s_exec (sl_store_t *store, const char *sql)
{
    cr_assert_eq (sl_store_exec (store, sql, NULL, 0, NULL), 0, "%s: %s", sql, sl_store_error (store));
}

typedef struct {
    sl_val_type_t types [4];
    char text [4][64];
    int count;
} s_cols_t;

static int
s_cols (void *arg, const sl_row_t *row)
{
    s_cols_t *c = arg;
    c->count = row->count < 4 ? row->count : 4;
    for (int i = 0; i < c->count; i++) {
        c->types [i] = row->cols [i].type;
        sl_str_t t = sl_row_text (row, i);
        snprintf (c->text [i], sizeof c->text [i], "%.*s", (int) t.len, t.ptr ? t.ptr : "");
    }
    return 1;
}

Test (sl_store_pg, results_come_as_text_and_read_as_their_numbers, .init = s_start, .fini = s_stop)
{
    sl_store_t *store = s_open ();
    s_exec (store, "CREATE TABLE t (i BIGINT, d DOUBLE PRECISION, s TEXT, n TEXT)");
    sl_val_t p [] = { sl_val_int (INT64_C (-9007199254740993)), sl_val_real (0.1), sl_val_text ("caf\xc3\xa9"),
                      sl_val_null () };
    cr_assert_eq (sl_store_exec (store, "INSERT INTO t VALUES ($1, $2, $3, $4)", p, 4, NULL), 0, "%s",
                  sl_store_error (store));
    s_cols_t c = { 0 };
    cr_assert_eq (sl_store_query (store, "SELECT i, d, s, n FROM t", NULL, 0, s_cols, &c), 0);
    cr_assert_eq (c.count, 4);
    cr_expect_eq (c.types [0], SL_VAL_TEXT, "numbers come back as text");
    cr_expect_str_eq (c.text [0], "-9007199254740993");
    cr_expect_str_eq (c.text [2], "caf\xc3\xa9");
    cr_expect_eq (c.types [3], SL_VAL_NULL);
    cr_expect_eq (s_int (store, "SELECT i FROM t"), INT64_C (-9007199254740993), "read as the number written");
    //  A real goes as text precise enough to come back the same.
    cr_expect_eq (s_int (store, "SELECT COUNT(*) FROM t WHERE d = 0.1"), 1);
    //  More parameters than a statement may have: refused before the server.
    enum { TOO_MANY = 769 };
    sl_val_t many [TOO_MANY];
    for (int i = 0; i < TOO_MANY; i++)
        many [i] = sl_val_int (i);
    cr_expect_eq (sl_store_exec (store, "SELECT 1", many, TOO_MANY, NULL), -1);
    cr_expect_str_eq (sl_store_error (store), "too many parameters");
    //  More statements than the cache holds, each found again.
    for (int round = 0; round < 2; round++)
        for (int k = 0; k < 300; k++) {
            char sql [64];
            snprintf (sql, sizeof sql, "SELECT %d + $1::bigint", k);
            int64_t n = -1;
            cr_assert_eq (sl_store_query_int (store, sql, (sl_val_t []) { sl_val_int (1000) }, 1, -1, &n), 0,
                          "%s: %s", sql, sl_store_error (store));
            cr_assert_eq (n, k + 1000, "%s", sql);
        }
    sl_store_close (&store);
}

Test (sl_store_pg, a_connection_the_server_ended_is_broken_then_reconnected, .init = s_start,
      .fini = s_stop)
{
    sl_store_t *store = s_open (), *admin = s_open ();
    s_exec (store, "CREATE TABLE t (i BIGINT)");
    //  A statement prepared on the old session.
    cr_assert_eq (sl_store_exec (store, "INSERT INTO t VALUES ($1)", (sl_val_t []) { sl_val_int (1) }, 1, NULL), 0);
    int64_t pid = s_int (store, "SELECT pg_backend_pid()");
    sl_val_t p [] = { sl_val_int (pid) };
    //  Ended as an administrator ends it, waiting (up to 10 s) until it is gone.
    int64_t ended = 0;
    cr_assert_eq (sl_store_query_int (admin, "SELECT CASE WHEN pg_terminate_backend ($1::integer, 10000) THEN 1 "
                                             "ELSE 0 END", p, 1, 0, &ended), 0, "%s", sl_store_error (admin));
    cr_assert_eq (ended, 1);
    cr_expect_eq (sl_store_exec (store, "INSERT INTO t VALUES ($1)", (sl_val_t []) { sl_val_int (2) }, 1, NULL), -1);
    cr_expect (sl_store_broken (store), "the connection, not the statement: %s", sl_store_error (store));
    cr_assert_eq (sl_store_reconnect (store), 0, "%s", sl_store_error (store));
    cr_expect_not (sl_store_broken (store));
    //  The session is new: its statements are prepared again.
    cr_expect_eq (sl_store_exec (store, "INSERT INTO t VALUES ($1)", (sl_val_t []) { sl_val_int (3) }, 1, NULL), 0,
                  "%s", sl_store_error (store));
    cr_expect_eq (s_int (store, "SELECT SUM(i) FROM t"), 4);
    cr_expect_neq (s_int (store, "SELECT pg_backend_pid()"), pid);
    //  A failed statement is not a broken connection; it ends the
    //  transaction (the caller rolls back).
    cr_assert_eq (sl_store_begin (store), 0);
    cr_expect_eq (sl_store_exec (store, "INSERT INTO nowhere VALUES (1)", NULL, 0, NULL), -1);
    cr_expect_not (sl_store_broken (store));
    cr_expect_eq (sl_store_exec (store, "INSERT INTO t VALUES (10)", NULL, 0, NULL), -1, "the transaction is over");
    sl_store_rollback (store);
    cr_expect_eq (s_int (store, "SELECT SUM(i) FROM t"), 4);
    sl_store_close (&admin);
    sl_store_close (&store);
}

Test (sl_store_pg, a_writing_transaction_holds_the_stores_write_lock, .init = s_start,
      .fini = s_stop)
{
    sl_store_t *writer = s_open (), *other = s_open ();
    const char *held = "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND granted";
    cr_expect_eq (s_int (other, held), 0);
    cr_assert_eq (sl_store_begin (writer), 0, "%s", sl_store_error (writer));
    cr_expect_eq (s_int (other, held), 1, "taken by the begin, before any statement");
    cr_assert_eq (sl_store_commit (writer), 0);
    cr_expect_eq (s_int (other, held), 0, "let go with the commit");
    cr_assert_eq (sl_store_begin (writer), 0);
    sl_store_rollback (writer);
    cr_expect_eq (s_int (other, held), 0, "and with a rollback");
    sl_store_close (&other);
    sl_store_close (&writer);
}
