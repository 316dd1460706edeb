/*  sl_store_pg.c - the PostgreSQL backend of the audit store (libpq).

    A target is a PostgreSQL DSN: a URI (postgres://user@host:5432/db) or
    key=value pairs (host=/run/postgresql dbname=audit). The password, if
    the DSN holds one, is libpq's business: never logged.

    Statements are prepared once per connection and kept. Parameters go
    as text for numbers (the server infers their types from the SQL) and
    in binary for text (its binary form is its bytes: no copy to add a
    NUL). Results come as text; sl_row_int and friends convert. A failed
    statement inside a transaction aborts it, as PostgreSQL does: the
    caller rolls back. When the connection itself is gone the error says
    so (broken), and sl_store_reconnect resets it.
*/
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "services/audit/store/sl_store_backend.h"

#define S_CACHE_SLOTS 256               //  prepared statements kept (a power of two)
#define S_MAX_COLUMNS 64
#define S_MAX_PARAMS 768               //  the chain's multi-row INSERT: 64 entries of 11
#define S_NUM_SIZE 32                   //  a number as text
//  The advisory lock every writing transaction takes (any fixed number the
//  database's other users do not take: "sluice" in ASCII).
#define S_WRITE_LOCK_KEY "115108117105099101"

typedef struct {
    char *sql;
    char name [24];
} s_slot_t;

typedef struct {
    PGconn *pg;
    s_slot_t cache [S_CACHE_SLOTS];
    unsigned long prepared;             //  statements prepared (names them)
} s_conn_t;

static bool
s_accepts (const char *target)
{
    if (strncmp (target, "postgres://", 11) == 0 || strncmp (target, "postgresql://", 13) == 0)
        return true;
    //  key=value pairs: an identifier, then '='.
    const char *p = target;
    while (*p == ' ')
        p++;
    const char *key = p;
    while ((*p >= 'a' && *p <= 'z') || *p == '_')
        p++;
    return p > key && *p == '=';
}

static void
s_quiet (void *arg, const char *message)
{
    (void) arg;
    (void) message;                     //  NOTICEs ("already exists, skipping") are not errors
}

static void *
s_open (const char *target, sl_buf_t *error)
{
    PGconn *pg = PQconnectdb (target);
    if (!pg || PQstatus (pg) != CONNECTION_OK) {
        const char *why = pg ? PQerrorMessage (pg) : "out of memory";
        size_t n = strlen (why);
        while (n && (why [n - 1] == '\n' || why [n - 1] == ' '))
            n--;
        sl_buf_printf (error, "postgres: %.*s", (int) n, why);
        PQfinish (pg);
        return NULL;
    }
    PQsetNoticeProcessor (pg, s_quiet, NULL);
    s_conn_t *c = sl_xcalloc (1, sizeof *c);
    c->pg = pg;
    PGresult *res = PQexec (pg, "SET client_min_messages = warning");
    PQclear (res);
    return c;
}

static void
s_forget_statements (s_conn_t *c)
{
    for (int i = 0; i < S_CACHE_SLOTS; i++) {
        free (c->cache [i].sql);
        c->cache [i].sql = NULL;
    }
}

static void
s_close (void *conn)
{
    s_conn_t *c = conn;
    s_forget_statements (c);
    PQfinish (c->pg);
    free (c);
}

static void
s_error (sl_buf_t *error, s_conn_t *c, PGresult *res, bool *broken)
{
    const char *why = res ? PQresultErrorMessage (res) : PQerrorMessage (c->pg);
    if (!why || !*why)
        why = PQerrorMessage (c->pg);
    size_t n = strlen (why);
    while (n && (why [n - 1] == '\n' || why [n - 1] == ' '))
        n--;
    sl_buf_append (error, why, n);
    if (broken)
        *broken = PQstatus (c->pg) != CONNECTION_OK;
}

static uint32_t
s_hash (const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t) *s) * 16777619u;
    return h;
}

//  The name of the prepared statement for sql; NULL on error.
static const char *
s_prepare (s_conn_t *c, const char *sql, sl_buf_t *error, bool *broken)
{
    s_slot_t *slot = &c->cache [s_hash (sql) & (S_CACHE_SLOTS - 1)];
    if (slot->sql && strcmp (slot->sql, sql) == 0)
        return slot->name;
    if (slot->sql) {
        char drop [48];
        snprintf (drop, sizeof drop, "DEALLOCATE %s", slot->name);
        PQclear (PQexec (c->pg, drop));
        free (slot->sql);
        slot->sql = NULL;
    }
    char name [24];
    snprintf (name, sizeof name, "sl_%lu", ++c->prepared);
    PGresult *res = PQprepare (c->pg, name, sql, 0, NULL);
    if (PQresultStatus (res) != PGRES_COMMAND_OK) {
        s_error (error, c, res, broken);
        PQclear (res);
        return NULL;
    }
    PQclear (res);
    slot->sql = sl_xstrdup (sql);
    snprintf (slot->name, sizeof slot->name, "%s", name);
    return slot->name;
}

static int
s_run (void *conn, const char *sql, const sl_val_t *params, int count, sl_row_fn *fn, void *arg,
       int64_t *changes, sl_buf_t *error, bool *broken)
{
    s_conn_t *c = conn;
    *broken = false;
    if (count > S_MAX_PARAMS) {
        sl_buf_puts (error, "too many parameters");
        return -1;
    }
    const char *name = s_prepare (c, sql, error, broken);
    if (!name)
        return -1;
    const char *values [S_MAX_PARAMS];
    int lengths [S_MAX_PARAMS];
    int formats [S_MAX_PARAMS];
    char numbers [S_MAX_PARAMS][S_NUM_SIZE];
    for (int i = 0; i < count; i++) {
        const sl_val_t *v = &params [i];
        lengths [i] = 0;
        formats [i] = 0;
        switch (v->type) {
            case SL_VAL_INT:
                snprintf (numbers [i], S_NUM_SIZE, "%lld", (long long) v->i);
                values [i] = numbers [i];
                break;
            case SL_VAL_REAL:
                snprintf (numbers [i], S_NUM_SIZE, "%.17g", v->d);
                values [i] = numbers [i];
                break;
            case SL_VAL_TEXT:
                values [i] = v->s ? v->s : "";
                lengths [i] = (int) v->n;
                formats [i] = 1;        //  binary: the bytes as they are
                break;
            default:
                values [i] = NULL;
                break;
        }
    }
    PGresult *res = PQexecPrepared (c->pg, name, count, values, lengths, formats, 0);
    ExecStatusType status = PQresultStatus (res);
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
        s_error (error, c, res, broken);
        PQclear (res);
        return -1;
    }
    if (changes) {
        const char *tuples = PQcmdTuples (res);
        *changes = tuples && *tuples ? strtoll (tuples, NULL, 10) : 0;
    }
    if (fn && status == PGRES_TUPLES_OK) {
        int rows = PQntuples (res);
        int n = PQnfields (res);
        if (n > S_MAX_COLUMNS)
            n = S_MAX_COLUMNS;
        sl_val_t cols [S_MAX_COLUMNS];
        for (int r = 0; r < rows; r++) {
            for (int i = 0; i < n; i++)
                cols [i] = PQgetisnull (res, r, i)
                         ? sl_val_null ()
                         : (sl_val_t) { .type = SL_VAL_TEXT, .s = PQgetvalue (res, r, i),
                                        .n = (size_t) PQgetlength (res, r, i) };
            sl_row_t row = { cols, n };
            if (fn (arg, &row))
                break;
        }
    }
    PQclear (res);
    return 0;
}

static int
s_exec (void *conn, const char *sql, const sl_val_t *params, int count, int64_t *changes,
        sl_buf_t *error, bool *broken)
{
    //  Transaction control needs no plan.
    if (count == 0 && (strcmp (sql, "BEGIN") == 0 || strcmp (sql, "COMMIT") == 0 || strcmp (sql, "ROLLBACK") == 0)) {
        s_conn_t *c = conn;
        *broken = false;
        PGresult *res = PQexec (c->pg, sql);
        if (PQresultStatus (res) != PGRES_COMMAND_OK) {
            s_error (error, c, res, broken);
            PQclear (res);
            return -1;
        }
        PQclear (res);
        if (changes)
            *changes = 0;
        return 0;
    }
    return s_run (conn, sql, params, count, NULL, NULL, changes, error, broken);
}

static int
s_query (void *conn, const char *sql, const sl_val_t *params, int count, sl_row_fn *fn, void *arg,
         sl_buf_t *error, bool *broken)
{
    return s_run (conn, sql, params, count, fn, arg, NULL, error, broken);
}

static int
s_script (void *conn, const char *sql, sl_buf_t *error, bool *broken)
{
    s_conn_t *c = conn;
    *broken = false;
    PGresult *res = PQexec (c->pg, sql);
    if (PQresultStatus (res) != PGRES_COMMAND_OK && PQresultStatus (res) != PGRES_TUPLES_OK) {
        s_error (error, c, res, broken);
        PQclear (res);
        return -1;
    }
    PQclear (res);
    return 0;
}

static int
s_reconnect (void *conn, sl_buf_t *error)
{
    s_conn_t *c = conn;
    PQreset (c->pg);
    s_forget_statements (c);            //  a new session holds no prepared statement
    if (PQstatus (c->pg) != CONNECTION_OK) {
        s_error (error, c, NULL, NULL);
        return -1;
    }
    PQsetNoticeProcessor (c->pg, s_quiet, NULL);
    PQclear (PQexec (c->pg, "SET client_min_messages = warning"));
    return 0;
}

const sl_store_backend_t sl_store_postgres = {
    .name = "postgres",
    .begin = "BEGIN",
    //  A transaction-scoped advisory lock, released by the commit or the
    //  rollback; the key is the store's own (S_WRITE_LOCK_KEY).
    .lock = "SELECT pg_advisory_xact_lock (" S_WRITE_LOCK_KEY ")",
    .accepts = s_accepts,
    .open = s_open,
    .close = s_close,
    .exec = s_exec,
    .query = s_query,
    .script = s_script,
    .reconnect = s_reconnect
};
