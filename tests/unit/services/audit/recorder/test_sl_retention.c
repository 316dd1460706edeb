/*  Unit tests: services/audit/recorder/sl_retention, the store kept to
    its age and size in bounded steps; on SQLite and PostgreSQL
    (store_env.h). What retention does to the chain (its entries, the
    cut, its signed checkpoint): test_sl_chain.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "services/audit/recorder/sl_archive.h"
#include "services/audit/recorder/sl_retention.h"
#include "tests/unit/services/audit/records.h"
#include "tests/unit/services/audit/store_env.h"

typedef store_env_t s_env_t;

//  A fresh, migrated store.
static sl_store_t *
s_fresh (s_env_t *env)
{
    return store_env_fresh (env, "audit");
}

//  By age: streams started before now - max_age go, in steps, with
//  everything recorded of them. By size: the oldest go until the store
//  holds at most max_bytes.
static void
check_by_age_then_by_size (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    sl_archive_t *archive = sl_archive_new (store, 0);
    cr_assert_eq (sl_store_begin (store), 0);
    for (int i = 0; i < 30; i++) {
        uint8_t sid [SL_SID_SIZE] = { (uint8_t) i, 7 };
        cr_expect_eq (records_stream (archive, sid, 1000 * (i + 1), "m", "k"), 9);
    }
    cr_assert_eq (sl_store_commit (store), 0);
    //  By age: streams started before now - max_age go, in steps.
    sl_retention_t by_age = { .max_age_ms = 20000, .batch = 4 };
    int pruned = 0, total = 0;
    bool more = true;
    for (int step = 0; step < 20 && more; step++) {
        cr_assert_eq (sl_retention_step (store, &by_age, 30500, &pruned, &more), 0, "%s", sl_store_error (store));
        total += pruned;
    }
    cr_expect_eq (total, 10, "streams started before 10500 ms");
    cr_expect_not (more);
    cr_expect_eq (records_count (store, "SELECT MIN(started_at) FROM streams"), 11000);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM events WHERE sid NOT IN (SELECT sid FROM streams)"), 0,
                  "nothing of them is left");
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM verdicts WHERE sid NOT IN (SELECT sid FROM streams)"), 0);
    //  By size: the oldest go until the store holds at most max_bytes.
    int64_t size = 0;
    cr_assert_eq (sl_retention_size (store, &size), 0);
    int64_t each = size / 20;
    sl_retention_t by_size = { .max_bytes = each * 5 + each / 2, .batch = 100 };
    more = true;
    for (int step = 0; step < 20 && more; step++)
        cr_assert_eq (sl_retention_step (store, &by_size, 30500, &pruned, &more), 0, "%s", sl_store_error (store));
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM streams"), 5, "%lld bytes each", (long long) each);
    cr_expect_eq (records_count (store, "SELECT MIN(started_at) FROM streams"), 26000, "the newest stay");
    sl_archive_destroy (&archive);
    sl_store_close (&store);
}

static void
s_suite (s_env_t *env)
{
    check_by_age_then_by_size (env);
}

Test (sl_retention, the_suite_on_sqlite)
{
    store_env_sqlite (s_suite);
}

Test (sl_retention, the_suite_on_postgresql)
{
    store_env_postgres (s_suite);
}
