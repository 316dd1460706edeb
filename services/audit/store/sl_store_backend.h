/*  sl_store_backend.h - what a database module gives sl_store.

    One table of operations per database (sl_store_sqlite, sl_store_postgres),
    registered in sl_store.c; every entry is required and checked there.
    A backend keeps its connection in an opaque pointer and reports errors
    through the error buffer it is handed (text, never a credential).
*/
#ifndef SL_STORE_BACKEND_H
#define SL_STORE_BACKEND_H

#include "services/audit/store/sl_store.h"

typedef struct {
    const char *name;                   //  "sqlite", "postgres"
    //  The statement that opens a write transaction, and one run right
    //  after it that takes the store's one write lock (NULL: the begin
    //  took it). Several writers may share a store (two audits during a
    //  rolling update): each holds the lock from its first statement, so
    //  they append to the chain in turn, never from a stale head.
    const char *begin;
    const char *lock;
    //  Whether target names a database of this kind.
    bool (*accepts) (const char *target);
    //  Connect; NULL with the reason in error.
    void *(*open) (const char *target, sl_buf_t *error);
    void (*close) (void *conn);
    //  One statement with parameters; *changes gets the rows changed.
    //  0 ok, -1 failed (reason in error; *broken when the connection is).
    int (*exec) (void *conn, const char *sql, const sl_val_t *params, int count, int64_t *changes,
                 sl_buf_t *error, bool *broken);
    int (*query) (void *conn, const char *sql, const sl_val_t *params, int count, sl_row_fn *fn, void *arg,
                  sl_buf_t *error, bool *broken);
    //  Several statements without parameters (a migration), with its
    //  declared types mapped to the backend's (a rowid key: sl_store.h).
    int (*script) (void *conn, const char *sql, sl_buf_t *error, bool *broken);
    //  Connect again after the connection broke; 0 ok.
    int (*reconnect) (void *conn, sl_buf_t *error);
} sl_store_backend_t;

extern const sl_store_backend_t sl_store_sqlite;
extern const sl_store_backend_t sl_store_postgres;

#endif
