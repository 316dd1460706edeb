/*  Unit tests: services/audit/store/sl_store_sqlite, the SQLite backend,
    through its table of operations (sl_store_backend.h): a file in WAL
    mode, parameters by number, the statement cache, the rowid key of a
    migration, and which failures are the store's (a store that is busy
    or cannot be written: try again later) and which the statement's.
    What every backend does alike: test_sl_store.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "services/audit/store/sl_store_backend.h"

static char s_dir [64];
static char s_path [128];

static void
s_setup (void)
{
    snprintf (s_dir, sizeof s_dir, "/tmp/sluice-sqlite-XXXXXX");
    cr_assert_not_null (mkdtemp (s_dir));
    snprintf (s_path, sizeof s_path, "%s/a.db", s_dir);
}

static void
s_teardown (void)
{
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    cr_expect_eq (system (cmd), 0);
}

static const sl_store_backend_t *s_b = &sl_store_sqlite;

static void *
s_open (void)
{
    sl_buf_t error = { 0 };
    void *conn = s_b->open (s_path, &error);
    cr_assert_not_null (conn, "%s", sl_buf_cstr (&error));
    sl_buf_free (&error);
    return conn;
}

//  One statement that must work.
static void
s_exec (void *conn, const char *sql, const sl_val_t *params, int count, int64_t *changes)
{
    sl_buf_t error = { 0 };
    bool broken = true;
    cr_assert_eq (s_b->exec (conn, sql, params, count, changes, &error, &broken), 0, "%s: %s", sql,
                  sl_buf_cstr (&error));
    cr_expect_not (broken);
    sl_buf_free (&error);
}

//  The rows of a query, as text: "a|b\n" per row, NULL as "-".
typedef struct {
    char text [512];
    int rows;
    int stop_after;                     //  0: never stop
} s_rows_t;

static int
s_row (void *arg, const sl_row_t *row)
{
    s_rows_t *r = arg;
    size_t n = strlen (r->text);
    for (int i = 0; i < row->count; i++) {
        char col [64];
        const sl_val_t *v = &row->cols [i];
        switch (v->type) {
            case SL_VAL_INT:  snprintf (col, sizeof col, "i:%lld", (long long) v->i); break;
            case SL_VAL_REAL: snprintf (col, sizeof col, "r:%g", v->d); break;
            case SL_VAL_TEXT: snprintf (col, sizeof col, "t:%.*s", (int) v->n, v->s); break;
            default:          snprintf (col, sizeof col, "-"); break;
        }
        n += (size_t) snprintf (r->text + n, sizeof r->text - n, "%s%s", i ? "|" : "", col);
    }
    snprintf (r->text + n, sizeof r->text - n, "\n");
    r->rows++;
    return r->stop_after && r->rows == r->stop_after;
}

static s_rows_t
s_query (void *conn, const char *sql, const sl_val_t *params, int count)
{
    s_rows_t r = { .text = "" };
    sl_buf_t error = { 0 };
    bool broken = true;
    cr_assert_eq (s_b->query (conn, sql, params, count, s_row, &r, &error, &broken), 0, "%s: %s", sql,
                  sl_buf_cstr (&error));
    cr_expect_not (broken);
    sl_buf_free (&error);
    return r;
}

Test (sl_store_sqlite, a_file_in_wal_mode_and_values_of_every_type, .init = s_setup, .fini = s_teardown)
{
    cr_expect (s_b->accepts (s_path), "a path is SQLite's");
    cr_expect (s_b->accepts ("anything"), "whatever PostgreSQL did not take");
    void *conn = s_open ();
    cr_expect_eq (access (s_path, F_OK), 0, "made when absent");
    cr_expect_str_eq (s_query (conn, "PRAGMA journal_mode", NULL, 0).text, "t:wal\n",
                      "readers do not block the writer");
    cr_expect_str_eq (s_query (conn, "PRAGMA synchronous", NULL, 0).text, "i:1\n", "NORMAL");
    s_exec (conn, "CREATE TABLE t (i BIGINT, d DOUBLE PRECISION, s TEXT, n TEXT)", NULL, 0, NULL);
    sl_val_t p [] = { sl_val_int (-7), sl_val_real (0.5), sl_val_str (sl_str_n ("a\0b", 3)), sl_val_null () };
    int64_t changes = 0;
    s_exec (conn, "INSERT INTO t VALUES ($1, $2, $3, $4)", p, 4, &changes);
    cr_expect_eq (changes, 1);
    s_rows_t r = s_query (conn, "SELECT i, d, length(CAST(s AS BLOB)), n FROM t", NULL, 0);
    cr_expect_str_eq (r.text, "i:-7|r:0.5|i:3|-\n", "text is bound with its length, NUL and all");
    //  Parameters by number, in any order, one the statement does not use.
    sl_val_t q [] = { sl_val_text ("first"), sl_val_text ("second"), sl_val_int (99) };
    cr_expect_str_eq (s_query (conn, "SELECT $2, $1", q, 3).text, "t:second|t:first\n");
    cr_expect_str_eq (s_query (conn, "SELECT $1, $1 || $2", q, 3).text, "t:first|t:firstsecond\n");
    //  Changes counted; a callback that stops ends the query, not as a failure.
    for (int i = 0; i < 3; i++)
        s_exec (conn, "INSERT INTO t (i) VALUES ($1)", (sl_val_t []) { sl_val_int (i) }, 1, NULL);
    s_exec (conn, "UPDATE t SET s = 'x' WHERE i >= 0", NULL, 0, &changes);
    cr_expect_eq (changes, 3);
    s_rows_t one = { .text = "", .stop_after = 1 };
    sl_buf_t error = { 0 };
    bool broken = true;
    cr_expect_eq (s_b->query (conn, "SELECT i FROM t WHERE i >= 0 ORDER BY i", NULL, 0, s_row, &one, &error,
                              &broken), 0);
    cr_expect_eq (one.rows, 1);
    cr_expect_str_eq (one.text, "i:0\n");
    //  The statement is ready again after it was stopped.
    cr_expect_eq (s_query (conn, "SELECT i FROM t WHERE i >= 0 ORDER BY i", NULL, 0).rows, 3);
    cr_expect_eq (s_b->reconnect (conn, &error), 0, "a file does not go away like a server");
    sl_buf_free (&error);
    s_b->close (conn);
}

Test (sl_store_sqlite, statements_are_kept_and_found_again, .init = s_setup, .fini = s_teardown)
{
    void *conn = s_open ();
    //  More statements than the cache holds, each run twice, in two
    //  orders: each answers its own question, however often it was
    //  replaced in its slot.
    enum { N = 700 };
    for (int round = 0; round < 2; round++)
        for (int k = 0; k < N; k++) {
            int i = round ? N - 1 - k : k;
            char sql [64], want [32];
            snprintf (sql, sizeof sql, "SELECT %d + $1", i);
            snprintf (want, sizeof want, "i:%d\n", i + 1000);
            s_rows_t r = s_query (conn, sql, (sl_val_t []) { sl_val_int (1000) }, 1);
            cr_assert_str_eq (r.text, want, "%s", sql);
        }
    s_b->close (conn);
}

Test (sl_store_sqlite, a_rowid_key_becomes_the_rowid, .init = s_setup, .fini = s_teardown)
{
    void *conn = s_open ();
    sl_buf_t error = { 0 };
    bool broken = true;
    cr_assert_eq (s_b->script (conn, "CREATE TABLE k (id BIGINT /*rowid*/ PRIMARY KEY, v TEXT);\n"
                                     "CREATE TABLE plain (id BIGINT PRIMARY KEY, v TEXT);", &error, &broken), 0,
                  "%s", sl_buf_cstr (&error));
    cr_expect_not (broken);
    //  INTEGER PRIMARY KEY is the rowid: a row without a key gets the next
    //  one. A BIGINT key is a column of its own (SQLite even lets it be
    //  NULL), with an index beside the table.
    s_exec (conn, "INSERT INTO k (v) VALUES ('a')", NULL, 0, NULL);
    s_exec (conn, "INSERT INTO plain (v) VALUES ('a')", NULL, 0, NULL);
    cr_expect_str_eq (s_query (conn, "SELECT id, id = rowid FROM k", NULL, 0).text, "i:1|i:1\n");
    cr_expect_str_eq (s_query (conn, "SELECT id FROM plain", NULL, 0).text, "-\n");
    cr_expect_str_eq (s_query (conn, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'k'",
                               NULL, 0).text, "i:0\n");
    cr_expect_str_eq (s_query (conn, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' "
                                     "AND tbl_name = 'plain'", NULL, 0).text, "i:1\n");
    //  A script that fails says why.
    sl_buf_reset (&error);
    cr_expect_eq (s_b->script (conn, "CREATE TABLE k (x TEXT);", &error, &broken), -1);
    cr_expect_not_null (strstr (sl_buf_cstr (&error), "already exists"), "%s", sl_buf_cstr (&error));
    cr_expect_not (broken);
    sl_buf_free (&error);
    s_b->close (conn);
}

Test (sl_store_sqlite, a_bad_statement_is_not_a_broken_store_a_busy_one_is, .init = s_setup, .fini = s_teardown)
{
    void *conn = s_open ();
    sl_buf_t error = { 0 };
    bool broken = true;
    cr_expect_eq (s_b->exec (conn, "INSERT INTO nowhere VALUES (1)", NULL, 0, NULL, &error, &broken), -1);
    cr_expect_not_null (strstr (sl_buf_cstr (&error), "nowhere"), "%s", sl_buf_cstr (&error));
    cr_expect_not (broken, "the statement's fault: asking again would fail again");
    s_exec (conn, "CREATE TABLE t (i INTEGER)", NULL, 0, NULL);
    //  Another writer holds the write lock past the busy timeout: the
    //  store's fault, worth asking again later.
    void *other = s_open ();
    s_exec (other, s_b->begin, NULL, 0, NULL);
    s_exec (other, "INSERT INTO t VALUES (1)", NULL, 0, NULL);
    sl_buf_reset (&error);
    broken = false;
    cr_expect_eq (s_b->exec (conn, s_b->begin, NULL, 0, NULL, &error, &broken), -1);
    cr_expect (broken, "busy: %s", sl_buf_cstr (&error));
    s_exec (other, "COMMIT", NULL, 0, NULL);
    s_exec (conn, s_b->begin, NULL, 0, NULL);
    s_exec (conn, "COMMIT", NULL, 0, NULL);
    s_b->close (other);
    s_b->close (conn);
    //  A file that cannot be made names itself.
    sl_buf_reset (&error);
    char missing [160];
    snprintf (missing, sizeof missing, "%s/no/such/dir/a.db", s_dir);
    cr_expect_null (s_b->open (missing, &error));
    cr_expect_not_null (strstr (sl_buf_cstr (&error), missing), "%s", sl_buf_cstr (&error));
    sl_buf_free (&error);
}
