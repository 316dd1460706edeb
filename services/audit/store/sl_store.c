/*  sl_store.c - backends, values, transactions and migrations (see sl_store.h). */
#include "services/audit/store/sl_store.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/sl_alloc.h"
#include "services/audit/store/sl_embedded.h"
#include "services/audit/store/sl_store_backend.h"

#define SL_STORE_MIGRATIONS "store/migrations/"

//  Every database this build speaks; the first that accepts a target gets it.
static const sl_store_backend_t *s_backends [] = { &sl_store_postgres, &sl_store_sqlite };

struct _sl_store_t {
    const sl_store_backend_t *backend;
    void *conn;
    char *target;                       //  as it may be shown (no password)
    sl_buf_t error;
    bool broken;
    bool in_txn;
};

//  A backend's table must be whole: checked once, at the first open.
static void
s_check_backends (void)
{
    static bool checked;
    if (checked)
        return;
    for (size_t i = 0; i < sizeof s_backends / sizeof s_backends [0]; i++) {
        const sl_store_backend_t *b = s_backends [i];
        assert (b && b->name && b->begin && b->accepts && b->open && b->close && b->exec && b->query && b->script
                && b->reconnect);
        (void) b;
    }
    checked = true;
}

//  --------------------------------------------------------------------------
//  Rows

int64_t
sl_row_int (const sl_row_t *row, int col)
{
    if (col < 0 || col >= row->count)
        return 0;
    const sl_val_t *v = &row->cols [col];
    switch (v->type) {
        case SL_VAL_INT:  return v->i;
        case SL_VAL_REAL: return (int64_t) v->d;
        case SL_VAL_TEXT: {
            char buf [32];
            size_t n = v->n < sizeof buf - 1 ? v->n : sizeof buf - 1;
            memcpy (buf, v->s, n);
            buf [n] = 0;
            return strtoll (buf, NULL, 10);
        }
        default:          return 0;
    }
}

double
sl_row_real (const sl_row_t *row, int col)
{
    if (col < 0 || col >= row->count)
        return 0;
    const sl_val_t *v = &row->cols [col];
    switch (v->type) {
        case SL_VAL_INT:  return (double) v->i;
        case SL_VAL_REAL: return v->d;
        case SL_VAL_TEXT: {
            char buf [64];
            size_t n = v->n < sizeof buf - 1 ? v->n : sizeof buf - 1;
            memcpy (buf, v->s, n);
            buf [n] = 0;
            return strtod (buf, NULL);
        }
        default:          return 0;
    }
}

sl_str_t
sl_row_text (const sl_row_t *row, int col)
{
    if (col < 0 || col >= row->count || row->cols [col].type != SL_VAL_TEXT)
        return SL_STR_NULL;
    return sl_str_n (row->cols [col].s, row->cols [col].n);
}

bool
sl_row_null (const sl_row_t *row, int col)
{
    return col < 0 || col >= row->count || row->cols [col].type == SL_VAL_NULL;
}

//  --------------------------------------------------------------------------
//  Opening

//  The target without its password: postgres://user:secret@host/db and
//  "password=secret" become ***.
static char *
s_redact (const char *target)
{
    sl_buf_t out = { 0 };
    const char *scheme = strstr (target, "://");
    const char *at = scheme ? strchr (scheme + 3, '@') : NULL;
    const char *colon = at ? memchr (scheme + 3, ':', (size_t) (at - scheme - 3)) : NULL;
    if (colon) {
        sl_buf_append (&out, target, (size_t) (colon + 1 - target));
        sl_buf_puts (&out, "***");
        sl_buf_puts (&out, at);
    }
    else {
        const char *p = target;
        const char *pw;
        while ((pw = strstr (p, "password="))) {
            sl_buf_append (&out, p, (size_t) (pw - p) + 9);
            sl_buf_puts (&out, "***");
            p = pw + 9;
            if (*p == '\'') {
                const char *q = strchr (p + 1, '\'');
                p = q ? q + 1 : p + strlen (p);
            }
            else
                p += strcspn (p, " ");
        }
        sl_buf_puts (&out, p);
    }
    char *text = sl_xstrdup (sl_buf_cstr (&out));
    sl_buf_free (&out);
    return text;
}

sl_store_t *
sl_store_open_raw (const char *target, char **error)
{
    s_check_backends ();
    *error = NULL;
    if (!target || !*target) {
        *error = sl_xstrdup ("no store named");
        return NULL;
    }
    const sl_store_backend_t *backend = NULL;
    for (size_t i = 0; !backend && i < sizeof s_backends / sizeof s_backends [0]; i++)
        if (s_backends [i]->accepts (target))
            backend = s_backends [i];
    if (!backend) {
        *error = sl_xstrdup ("no database of this build accepts the store's name");
        return NULL;
    }
    sl_buf_t why = { 0 };
    void *conn = backend->open (target, &why);
    if (!conn) {
        *error = sl_xstrdup (why.len ? sl_buf_cstr (&why) : "cannot open the store");
        sl_buf_free (&why);
        return NULL;
    }
    sl_buf_free (&why);
    sl_store_t *self = sl_xcalloc (1, sizeof *self);
    self->backend = backend;
    self->conn = conn;
    self->target = s_redact (target);
    return self;
}

static int s_migrate (sl_store_t *self);

sl_store_t *
sl_store_open (const char *target, char **error)
{
    sl_store_t *self = sl_store_open_raw (target, error);
    if (self && s_migrate (self)) {
        *error = sl_xstrdup (sl_store_error (self));
        sl_store_close (&self);
    }
    return self;
}

void
sl_store_close (sl_store_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_store_t *self = *self_p;
    if (self->in_txn)
        sl_store_rollback (self);
    self->backend->close (self->conn);
    free (self->target);
    sl_buf_free (&self->error);
    free (self);
    *self_p = NULL;
}

const char *sl_store_kind (sl_store_t *self) { return self->backend->name; }
const char *sl_store_target (sl_store_t *self) { return self->target; }
const char *sl_store_error (sl_store_t *self) { return sl_buf_cstr (&self->error); }
bool sl_store_broken (sl_store_t *self) { return self->broken; }
bool sl_store_in_transaction (sl_store_t *self) { return self->in_txn; }

int
sl_store_reconnect (sl_store_t *self)
{
    sl_buf_reset (&self->error);
    if (self->backend->reconnect (self->conn, &self->error))
        return -1;
    self->broken = false;
    self->in_txn = false;
    return 0;
}

//  --------------------------------------------------------------------------
//  Statements

int
sl_store_exec (sl_store_t *self, const char *sql, const sl_val_t *params, int count, int64_t *changes)
{
    sl_buf_reset (&self->error);
    int64_t n = 0;
    bool broken = false;
    int rc = self->backend->exec (self->conn, sql, params, count, &n, &self->error, &broken);
    self->broken = broken;
    if (changes)
        *changes = rc == 0 ? n : 0;
    return rc;
}

int
sl_store_query (sl_store_t *self, const char *sql, const sl_val_t *params, int count, sl_row_fn *fn, void *arg)
{
    sl_buf_reset (&self->error);
    bool broken = false;
    int rc = self->backend->query (self->conn, sql, params, count, fn, arg, &self->error, &broken);
    self->broken = broken;
    return rc;
}

typedef struct {
    int64_t value;
    bool found;
} s_int_t;

static int
s_first_int (void *arg, const sl_row_t *row)
{
    s_int_t *out = arg;
    out->found = !sl_row_null (row, 0);
    out->value = sl_row_int (row, 0);
    return 1;
}

int
sl_store_query_int (sl_store_t *self, const char *sql, const sl_val_t *params, int count, int64_t def,
                    int64_t *out)
{
    s_int_t v = { def, false };
    int rc = sl_store_query (self, sql, params, count, s_first_int, &v);
    *out = v.found ? v.value : def;
    return rc;
}

int
sl_store_begin (sl_store_t *self)
{
    assert (!self->in_txn);
    if (sl_store_exec (self, self->backend->begin, NULL, 0, NULL))
        return -1;
    self->in_txn = true;
    if (self->backend->lock && sl_store_exec (self, self->backend->lock, NULL, 0, NULL)) {
        sl_store_rollback (self);
        return -1;
    }
    return 0;
}

int
sl_store_commit (sl_store_t *self)
{
    assert (self->in_txn);
    int rc = sl_store_exec (self, "COMMIT", NULL, 0, NULL);
    if (rc) {
        //  A failed commit leaves nothing committed; say why, then clean up.
        sl_buf_t why = { 0 };
        sl_buf_append_str (&why, sl_buf_str (&self->error));
        bool broken = self->broken;
        self->backend->exec (self->conn, "ROLLBACK", NULL, 0, NULL, &self->error, &self->broken);
        sl_buf_reset (&self->error);
        sl_buf_append_str (&self->error, sl_buf_str (&why));
        self->broken = broken;
        sl_buf_free (&why);
    }
    self->in_txn = false;
    return rc;
}

void
sl_store_rollback (sl_store_t *self)
{
    if (!self->in_txn)
        return;
    //  Keep the error that made the caller roll back.
    sl_buf_t ignored = { 0 };
    bool broken = false;
    int64_t n;
    self->backend->exec (self->conn, "ROLLBACK", NULL, 0, &n, &ignored, &broken);
    sl_buf_free (&ignored);
    self->in_txn = false;
}

//  --------------------------------------------------------------------------
//  Migrations

//  The number of a migration file, migrations/NNN_name.sql; 0 if not one.
static int
s_migration_number (const char *name)
{
    size_t prefix = strlen (SL_STORE_MIGRATIONS);
    if (strncmp (name, SL_STORE_MIGRATIONS, prefix) != 0)
        return 0;
    const char *p = name + prefix;
    int n = 0;
    while (*p >= '0' && *p <= '9')
        n = n * 10 + (*p++ - '0');
    return *p == '_' ? n : 0;
}

int
sl_store_latest_version (void)
{
    int latest = 0;
    for (const sl_embedded_t *f = sl_embedded_files; f->name; f++) {
        int n = s_migration_number (f->name);
        if (n > latest)
            latest = n;
    }
    return latest;
}

int
sl_store_version (sl_store_t *self)
{
    int64_t v = 0;
    if (sl_store_query_int (self, "SELECT MAX(version) FROM schema_version", NULL, 0, 0, &v))
        return 0;
    return (int) v;
}

static int
s_migrate (sl_store_t *self)
{
    if (sl_store_exec (self, "CREATE TABLE IF NOT EXISTS schema_version ("
                             "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)",
                       NULL, 0, NULL))
        return -1;
    int current = sl_store_version (self);
    int latest = sl_store_latest_version ();
    if (current > latest) {
        sl_buf_reset (&self->error);
        sl_buf_printf (&self->error, "the store's schema is at version %d, newer than this sluice-audit "
                                     "knows (%d): run a newer sluice-audit", current, latest);
        return -1;
    }
    for (int version = current + 1; version <= latest; version++) {
        const sl_embedded_t *file = NULL;
        for (const sl_embedded_t *f = sl_embedded_files; f->name; f++)
            if (s_migration_number (f->name) == version)
                file = f;
        if (!file) {
            sl_buf_reset (&self->error);
            sl_buf_printf (&self->error, "migration %d is missing from this build", version);
            return -1;
        }
        if (sl_store_begin (self))
            return -1;
        sl_buf_t why = { 0 };
        bool broken = false;
        if (self->backend->script (self->conn, (const char *) file->data, &why, &broken)) {
            sl_store_rollback (self);
            sl_buf_reset (&self->error);
            sl_buf_printf (&self->error, "%s: %s", file->name, sl_buf_cstr (&why));
            sl_buf_free (&why);
            return -1;
        }
        sl_buf_free (&why);
        const char *name = file->name + strlen (SL_STORE_MIGRATIONS);
        sl_val_t params [] = { sl_val_int (version), sl_val_text (name),
                               sl_val_int ((int64_t) time (NULL) * 1000) };
        if (sl_store_exec (self, "INSERT INTO schema_version (version, name, applied_at) VALUES ($1, $2, $3)",
                           params, 3, NULL)
        ||  sl_store_commit (self)) {
            sl_store_rollback (self);
            return -1;
        }
    }
    return 0;
}
