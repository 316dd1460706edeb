/*  store_env.h - a fresh audit store per check, on SQLite or PostgreSQL,
    for the audit's unit suites that run against every backend (STYLE 14):
    a SQLite file in a temporary directory, or a new database of a real
    PostgreSQL cluster started for the test (tests/pgtmp.h; the test is
    skipped, with the reason, where the server's programs are absent).
    Header-only: each suite includes it once. */
#ifndef STORE_ENV_H
#define STORE_ENV_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "services/audit/store/sl_store.h"
#include "tests/pgtmp.h"

typedef struct {
    const char *kind;                   //  "sqlite" or "postgres"
    pgtmp_t pg;                         //  the PostgreSQL cluster, when kind is postgres
    char dir [64];                      //  SQLite files
    int made;                           //  stores made so far
    char target [512];
} store_env_t;

//  A fresh, migrated store: file or database <name>-<n>.
static inline sl_store_t *
store_env_fresh (store_env_t *env, const char *name)
{
    char *error = NULL;
    env->made++;
    if (strcmp (env->kind, "sqlite") == 0)
        snprintf (env->target, sizeof env->target, "%s/%s-%d.db", env->dir, name, env->made);
    else {
        sl_store_t *admin = sl_store_open_raw (env->pg.dsn, &error);
        cr_assert_not_null (admin, "%s", error ? error : "");
        char sql [64];
        snprintf (sql, sizeof sql, "CREATE DATABASE %s%d", name, env->made);
        cr_assert_eq (sl_store_exec (admin, sql, NULL, 0, NULL), 0, "%s", sl_store_error (admin));
        sl_store_close (&admin);
        snprintf (env->target, sizeof env->target, "host=%s port=%d user=sluice dbname=%s%d",
                  env->pg.dir, env->pg.port, name, env->made);
    }
    sl_store_t *store = sl_store_open (env->target, &error);
    cr_assert_not_null (store, "%s: %s", env->kind, error ? error : "");
    cr_expect_str_eq (sl_store_kind (store), env->kind);
    return store;
}

//  Run suite on SQLite files in a temporary directory, removed after.
static inline void
store_env_sqlite (void (*suite) (store_env_t *env))
{
    store_env_t env = { .kind = "sqlite" };
    snprintf (env.dir, sizeof env.dir, "/tmp/sluice-store-XXXXXX");
    cr_assert_not_null (mkdtemp (env.dir));
    suite (&env);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", env.dir);
    cr_expect_eq (system (cmd), 0);
}

//  Run suite on a temporary PostgreSQL cluster (skipped where there is none).
static inline void
store_env_postgres (void (*suite) (store_env_t *env))
{
    store_env_t env = { .kind = "postgres" };
    char reason [256];
    if (pgtmp_start (&env.pg, reason, sizeof reason))
        cr_skip_test ("PostgreSQL: %s", reason);
    suite (&env);
    pgtmp_stop (&env.pg);
}

#endif
