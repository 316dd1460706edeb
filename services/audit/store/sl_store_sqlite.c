/*  sl_store_sqlite.c - the SQLite backend of the audit store.

    One file, in WAL mode (readers, such as `sluice-audit export`, do not
    block the writer) with synchronous=NORMAL: a commit survives the
    process being killed (the WAL is in the kernel's hands), not a power
    cut before the next checkpoint. Statements are prepared once and kept
    (the audit runs the same few thousands of times a second). Parameters
    are named $1, $2, ... and bound by name. A migration's
    BIGINT key marked rowid becomes INTEGER, the rowid (sl_store.h).
*/
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "services/audit/store/sl_store_backend.h"

#define S_CACHE_SLOTS 256               //  prepared statements kept (a power of two)
#define S_CACHE_WAYS 4                  //  slots a statement may take, from its hash on
#define S_MAX_COLUMNS 64
#define S_BUSY_TIMEOUT_MS 5000
#define S_ROWID_DECL "BIGINT /*rowid*/"  //  a migration's 64-bit key that may be the rowid
#define S_ROWID_TYPE "INTEGER"          //  SQLite's rowid alias (64-bit)

typedef struct {
    char *sql;
    sqlite3_stmt *stmt;
    //  The statement's index of each parameter $1, $2, ... (0: unused),
    //  found once: looking a name up is linear in the parameters, which a
    //  multi-row INSERT has hundreds of.
    int *at;
    int count;
} s_slot_t;

typedef struct {
    sqlite3 *db;
    s_slot_t cache [S_CACHE_SLOTS];
} s_conn_t;

static bool
s_accepts (const char *target)
{
    (void) target;
    return true;                        //  a path: whatever PostgreSQL did not take
}

static void
s_error (sl_buf_t *error, s_conn_t *c, bool *broken)
{
    int code = sqlite3_errcode (c->db) & 0xff;
    sl_buf_puts (error, sqlite3_errmsg (c->db));
    if (broken)
        *broken = code == SQLITE_BUSY || code == SQLITE_LOCKED || code == SQLITE_IOERR
               || code == SQLITE_FULL || code == SQLITE_CANTOPEN;
}

static void *
s_open (const char *target, sl_buf_t *error)
{
    s_conn_t *c = sl_xcalloc (1, sizeof *c);
    if (sqlite3_open_v2 (target, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                         NULL) != SQLITE_OK) {
        sl_buf_printf (error, "%s: %s", target, c->db ? sqlite3_errmsg (c->db) : "cannot open");
        sqlite3_close (c->db);
        free (c);
        return NULL;
    }
    sqlite3_busy_timeout (c->db, S_BUSY_TIMEOUT_MS);
    char *why = NULL;
    if (sqlite3_exec (c->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL, &why)
        != SQLITE_OK) {
        sl_buf_printf (error, "%s: %s", target, why ? why : "cannot set WAL mode");
        sqlite3_free (why);
        sqlite3_close (c->db);
        free (c);
        return NULL;
    }
    return c;
}

static void
s_close (void *conn)
{
    s_conn_t *c = conn;
    for (int i = 0; i < S_CACHE_SLOTS; i++) {
        sqlite3_finalize (c->cache [i].stmt);
        free (c->cache [i].sql);
        free (c->cache [i].at);
    }
    sqlite3_close (c->db);
    free (c);
}

static uint32_t
s_hash (const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t) *s) * 16777619u;
    return h;
}

//  Where each $N of the slot's statement is bound.
static void
s_map_params (s_slot_t *slot)
{
    int n = sqlite3_bind_parameter_count (slot->stmt);
    slot->count = 0;
    slot->at = sl_xcalloc ((size_t) (n > 0 ? n : 1), sizeof *slot->at);
    for (int i = 1; i <= n; i++) {
        const char *name = sqlite3_bind_parameter_name (slot->stmt, i);
        long k = name && name [0] == '$' ? strtol (name + 1, NULL, 10) : 0;
        if (k >= 1 && k <= n) {
            slot->at [k - 1] = i;
            if (k > slot->count)
                slot->count = (int) k;
        }
    }
}

//  The slot of sql's statement, prepared once and reset for reuse; NULL on
//  error. A statement may sit in any of S_CACHE_WAYS slots from its hash:
//  two statements of the same record that share a hash would otherwise
//  evict each other and be parsed again on every record.
static s_slot_t *
s_prepare (s_conn_t *c, const char *sql, sl_buf_t *error, bool *broken)
{
    uint32_t h = s_hash (sql);
    s_slot_t *slot = NULL;
    for (int way = 0; way < S_CACHE_WAYS; way++) {
        s_slot_t *at = &c->cache [(h + (uint32_t) way) & (S_CACHE_SLOTS - 1)];
        if (at->sql && strcmp (at->sql, sql) == 0) {
            sqlite3_reset (at->stmt);
            sqlite3_clear_bindings (at->stmt);
            return at;
        }
        if (!at->sql && !slot)
            slot = at;
    }
    //  No free way: the first one is replaced.
    if (!slot)
        slot = &c->cache [h & (S_CACHE_SLOTS - 1)];
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2 (c->db, sql, -1, &stmt, NULL) != SQLITE_OK) {
        s_error (error, c, broken);
        return NULL;
    }
    sqlite3_finalize (slot->stmt);
    free (slot->sql);
    free (slot->at);
    slot->sql = sl_xstrdup (sql);
    slot->stmt = stmt;
    s_map_params (slot);
    return slot;
}

static int
s_bind (s_conn_t *c, const s_slot_t *slot, const sl_val_t *params, int count, sl_buf_t *error)
{
    sqlite3_stmt *stmt = slot->stmt;
    for (int i = 0; i < count; i++) {
        int at = i < slot->count ? slot->at [i] : 0;
        if (at == 0)
            continue;                   //  a parameter the statement does not use
        const sl_val_t *v = &params [i];
        int rc;
        switch (v->type) {
            case SL_VAL_INT:  rc = sqlite3_bind_int64 (stmt, at, v->i); break;
            case SL_VAL_REAL: rc = sqlite3_bind_double (stmt, at, v->d); break;
            case SL_VAL_TEXT: rc = sqlite3_bind_text64 (stmt, at, v->s ? v->s : "", v->n, SQLITE_STATIC,
                                                        SQLITE_UTF8); break;
            default:          rc = sqlite3_bind_null (stmt, at); break;
        }
        if (rc != SQLITE_OK) {
            s_error (error, c, NULL);
            return -1;
        }
    }
    return 0;
}

static int
s_run (void *conn, const char *sql, const sl_val_t *params, int count, sl_row_fn *fn, void *arg,
       int64_t *changes, sl_buf_t *error, bool *broken)
{
    s_conn_t *c = conn;
    *broken = false;
    s_slot_t *slot = s_prepare (c, sql, error, broken);
    if (!slot || s_bind (c, slot, params, count, error))
        return -1;
    sqlite3_stmt *stmt = slot->stmt;
    sl_val_t cols [S_MAX_COLUMNS];
    int rc;
    while ((rc = sqlite3_step (stmt)) == SQLITE_ROW) {
        if (!fn)
            continue;
        int n = sqlite3_column_count (stmt);
        if (n > S_MAX_COLUMNS)
            n = S_MAX_COLUMNS;
        for (int i = 0; i < n; i++) {
            switch (sqlite3_column_type (stmt, i)) {
                case SQLITE_INTEGER:
                    cols [i] = sl_val_int (sqlite3_column_int64 (stmt, i));
                    break;
                case SQLITE_FLOAT:
                    cols [i] = sl_val_real (sqlite3_column_double (stmt, i));
                    break;
                case SQLITE_NULL:
                    cols [i] = sl_val_null ();
                    break;
                default: {
                    const char *text = (const char *) sqlite3_column_text (stmt, i);
                    cols [i] = (sl_val_t) { .type = SL_VAL_TEXT, .s = text ? text : "",
                                            .n = (size_t) sqlite3_column_bytes (stmt, i) };
                    break;
                }
            }
        }
        sl_row_t row = { cols, n };
        if (fn (arg, &row)) {
            rc = SQLITE_DONE;
            break;
        }
    }
    if (rc != SQLITE_DONE) {
        s_error (error, c, broken);
        sqlite3_reset (stmt);
        return -1;
    }
    if (changes)
        *changes = sqlite3_changes (c->db);
    sqlite3_reset (stmt);
    sqlite3_clear_bindings (stmt);      //  no pointer into the caller's text stays behind
    return 0;
}

static int
s_exec (void *conn, const char *sql, const sl_val_t *params, int count, int64_t *changes,
        sl_buf_t *error, bool *broken)
{
    return s_run (conn, sql, params, count, NULL, NULL, changes, error, broken);
}

static int
s_query (void *conn, const char *sql, const sl_val_t *params, int count, sl_row_fn *fn, void *arg,
         sl_buf_t *error, bool *broken)
{
    return s_run (conn, sql, params, count, fn, arg, NULL, error, broken);
}

//  The script with every S_ROWID_DECL as S_ROWID_TYPE: only INTEGER
//  PRIMARY KEY is the rowid in SQLite (and INTEGER is 32-bit elsewhere).
static void
s_map_types (sl_buf_t *out, const char *sql)
{
    const char *at;
    while ((at = strstr (sql, S_ROWID_DECL))) {
        sl_buf_append (out, sql, (size_t) (at - sql));
        sl_buf_puts (out, S_ROWID_TYPE);
        sql = at + strlen (S_ROWID_DECL);
    }
    sl_buf_puts (out, sql);
}

static int
s_script (void *conn, const char *sql, sl_buf_t *error, bool *broken)
{
    s_conn_t *c = conn;
    char *why = NULL;
    *broken = false;
    sl_buf_t mapped = { 0 };
    s_map_types (&mapped, sql);
    int rc = sqlite3_exec (c->db, sl_buf_cstr (&mapped), NULL, NULL, &why);
    sl_buf_free (&mapped);
    if (rc != SQLITE_OK) {
        sl_buf_puts (error, why ? why : "script failed");
        sqlite3_free (why);
        return -1;
    }
    return 0;
}

static int
s_reconnect (void *conn, sl_buf_t *error)
{
    (void) conn;
    (void) error;
    return 0;                           //  a file does not go away like a server
}

const sl_store_backend_t sl_store_sqlite = {
    .name = "sqlite",
    //  IMMEDIATE: the write lock at the start (a deferred transaction that
    //  read first could not write after another writer committed).
    .begin = "BEGIN IMMEDIATE",
    .lock = NULL,
    .accepts = s_accepts,
    .open = s_open,
    .close = s_close,
    .exec = s_exec,
    .query = s_query,
    .script = s_script,
    .reconnect = s_reconnect
};
