/*  sl_store.h - the audit's database: SQLite or PostgreSQL, one interface.

    sluice-audit keeps its records in SQLite by default (one file, WAL
    mode) and in PostgreSQL when given a DSN (libpq). Both run the same
    SQL: the schema comes from the same migrations, and every query is
    written once, with numbered parameters ($1, $2, ...), in the subset of
    SQL both speak (ON CONFLICT, CASE, COALESCE, integer arithmetic,
    lower() and LIKE ... ESCAPE; no GREATEST, no ILIKE, no RETURNING).

    Each database is a backend module (sl_store_backend.h: open, close,
    exec, query, script), registered in sl_store.c, where every entry of
    its table is checked. sl_store_open picks the one that accepts the
    target: "postgres://...", "postgresql://..." or a "key=value" DSN for
    PostgreSQL, anything else is the path of a SQLite file.

    Values: parameters are sl_val_t (NULL, integer, real, text); a row
    hands its columns out through sl_row_* (a backend may keep them as
    text: the accessors convert). Text is what the caller gives: the store
    does not repair it (the audit makes its text valid UTF-8 without NUL
    bytes first, which PostgreSQL requires).

    Migrations: the files store/migrations/NNN_name.sql built into the program
    (sl_embedded.h), applied in order, each once, in a transaction, and
    recorded in schema_version. A store whose schema is newer than this
    program knows is refused. One type is mapped per backend: a BIGINT
    primary key marked by the SQL comment "rowid" right after the type
    (S_ROWID_DECL in sl_store_sqlite.c) is a 64-bit key on both; on
    SQLite it becomes INTEGER PRIMARY KEY, the table's rowid itself (a
    BIGINT key there is a second index every insert pays for).

    Credentials: a PostgreSQL DSN may hold a password; it is never logged,
    stored or shown (sl_store_target gives the DSN without it).
*/
#ifndef SL_STORE_H
#define SL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

typedef enum {
    SL_VAL_NULL = 0,
    SL_VAL_INT,
    SL_VAL_REAL,
    SL_VAL_TEXT
} sl_val_type_t;

//  A parameter or a column. Text is borrowed (s, n).
typedef struct {
    sl_val_type_t type;
    int64_t i;
    double d;
    const char *s;
    size_t n;
} sl_val_t;

static inline sl_val_t
sl_val_int (int64_t i)
{
    return (sl_val_t) { .type = SL_VAL_INT, .i = i };
}

static inline sl_val_t
sl_val_real (double d)
{
    return (sl_val_t) { .type = SL_VAL_REAL, .d = d };
}

//  Text, or NULL when s.ptr is NULL.
static inline sl_val_t
sl_val_str (sl_str_t s)
{
    return s.ptr ? (sl_val_t) { .type = SL_VAL_TEXT, .s = s.ptr, .n = s.len } : (sl_val_t) { .type = SL_VAL_NULL };
}

static inline sl_val_t
sl_val_text (const char *s)
{
    return sl_val_str (sl_str (s));
}

static inline sl_val_t
sl_val_null (void)
{
    return (sl_val_t) { .type = SL_VAL_NULL };
}

//  A row of a result: its columns, borrowed for the callback.
typedef struct {
    const sl_val_t *cols;
    int count;
} sl_row_t;

//  A column as an integer (text is parsed; NULL and bad text are 0).
int64_t sl_row_int (const sl_row_t *row, int col);
double sl_row_real (const sl_row_t *row, int col);
//  A column as text (ptr NULL for NULL; numbers are not converted).
sl_str_t sl_row_text (const sl_row_t *row, int col);
bool sl_row_null (const sl_row_t *row, int col);

//  Called for each row; return non-zero to stop early.
typedef int (sl_row_fn) (void *arg, const sl_row_t *row);

typedef struct _sl_store_t sl_store_t;

//  Open (and create, for SQLite) the store named by target, then bring its
//  schema up to date. NULL with *error (the caller's to free).
sl_store_t *sl_store_open (const char *target, char **error);
//  The same without migrating (for tools that only read, and tests).
sl_store_t *sl_store_open_raw (const char *target, char **error);
void sl_store_close (sl_store_t **self_p);
//  "sqlite" or "postgres".
const char *sl_store_kind (sl_store_t *self);
//  The target as it may be shown: a PostgreSQL password replaced by ***.
const char *sl_store_target (sl_store_t *self);
//  Run one statement; *changes (may be NULL) gets the rows it changed.
//  0 ok, -1 failed (sl_store_error says why).
int sl_store_exec (sl_store_t *self, const char *sql, const sl_val_t *params, int count, int64_t *changes);
//  Run a query, fn once per row. 0 ok (also when fn stopped it), -1 failed.
int sl_store_query (sl_store_t *self, const char *sql, const sl_val_t *params, int count,
                    sl_row_fn *fn, void *arg);
//  One integer: the first column of the first row (default when no row).
int sl_store_query_int (sl_store_t *self, const char *sql, const sl_val_t *params, int count,
                        int64_t def, int64_t *out);
//  Open a write transaction holding the store's one write lock (writers
//  sharing a store take turns; the lock ends with the commit or rollback).
int sl_store_begin (sl_store_t *self);
int sl_store_commit (sl_store_t *self);
//  Roll back the open transaction (nothing when none is open).
void sl_store_rollback (sl_store_t *self);
bool sl_store_in_transaction (sl_store_t *self);
//  Why the last call failed ("" when it did not).
const char *sl_store_error (sl_store_t *self);
//  True when the last failure was the connection, not the statement (the
//  database went away): retrying the same work later may succeed.
bool sl_store_broken (sl_store_t *self);
//  Try to connect again after a broken connection; 0 ok.
int sl_store_reconnect (sl_store_t *self);
//  The schema version the store is at, and the newest this program has.
int sl_store_version (sl_store_t *self);
int sl_store_latest_version (void);

#endif
