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

//  n streams of records.h, a second apart from t0, their ids told apart
//  by tag, committed.
static void
s_streams (sl_store_t *store, int n, int64_t t0, uint8_t tag)
{
    sl_archive_t *archive = sl_archive_new (store, 0);
    cr_assert_eq (sl_store_begin (store), 0);
    for (int i = 0; i < n; i++) {
        uint8_t sid [SL_SID_SIZE] = { (uint8_t) i, tag };
        cr_assert_eq (records_stream (archive, sid, t0 + 1000 * i, "m", "k"), 9);
    }
    cr_assert_eq (sl_archive_commit (archive), 0, "%s", sl_store_error (store));
    sl_archive_destroy (&archive);
}

//  Nothing due: nothing deleted, no more, no cut; a step deletes at most
//  its batch and says when more is due.
static void
check_steps_are_bounded (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    s_streams (store, 10, 1000, 0x7e);
    sl_checkpoint_t cut = { .pos = -1 };
    sl_retention_t keep_all = { .max_age_ms = 1000000, .batch = 3, .cut = &cut };
    int pruned = -1;
    bool more = true;
    cr_assert_eq (sl_retention_step (store, &keep_all, 20000, &pruned, &more), 0, "%s", sl_store_error (store));
    cr_expect_eq (pruned, 0);
    cr_expect_not (more);
    cr_expect_eq (cut.pos, 0, "no cut without a chain");
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM streams"), 10);
    //  All ten are due: three a step.
    sl_retention_t by_age = { .max_age_ms = 1, .batch = 3 };
    int steps = 0, total = 0;
    more = true;
    while (more && steps < 20) {
        cr_assert_eq (sl_retention_step (store, &by_age, 20000, &pruned, &more), 0, "%s", sl_store_error (store));
        cr_expect_leq (pruned, 3, "never more than the batch");
        total += pruned;
        steps++;
    }
    cr_expect_eq (total, 10);
    cr_expect_eq (steps, 4, "3, 3, 3, then 1 and nothing more due");
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM streams"), 0);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM blocks"), 0, "with everything recorded of them");
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM events"), 0);
    sl_store_close (&store);
}

//  By age, the judges' policy reports and the gaps go too; recent ones stay.
static void
check_old_reports_and_gaps_go (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    sl_archive_t *archive = sl_archive_new (store, 0);
    cr_assert_eq (sl_store_begin (store), 0);
    for (int i = 0; i < 2; i++) {
        int64_t at = i ? 50000 : 1000;
        sl_record_meta_t meta = records_meta (at, 0);
        sl_msg_t p = records_msg (SL_MSG_POLICY, (const uint8_t *) "policy\0\0\0\0\0\0\0\0\0", 0);
        p.instance = i ? SL_STR_LIT ("judge-new") : SL_STR_LIT ("judge-old");
        p.policy = SL_STR_LIT ("aaaaaaaaaaaa");
        p.text = SL_STR_LIT ("rules: []\n");
        p.ts = at;
        cr_assert_eq (sl_archive_apply (archive, &meta, &p), 1, "%s", sl_store_error (store));
        sl_msg_t g = records_msg (SL_MSG_GAP, (const uint8_t *) "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 0);
        g.count = 3;
        g.ts = at;
        meta.rseq = 100 + (uint64_t) i;
        cr_assert_eq (sl_archive_apply (archive, &meta, &g), 1, "%s", sl_store_error (store));
    }
    cr_assert_eq (sl_archive_commit (archive), 0, "%s", sl_store_error (store));
    sl_retention_t by_age = { .max_age_ms = 20000, .batch = 10 };
    int pruned = 0;
    bool more = true;
    cr_assert_eq (sl_retention_step (store, &by_age, 60000, &pruned, &more), 0, "%s", sl_store_error (store));
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM policies WHERE judge = 'judge-old'"), 0);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM policies WHERE judge = 'judge-new'"), 1);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM gaps"), 1);
    cr_expect_eq (records_count (store, "SELECT at FROM gaps"), 50000);
    sl_archive_destroy (&archive);
    sl_store_close (&store);
}

//  The size is the store's own count of what it holds; a step that fails
//  deletes nothing (it is rolled back whole).
static void
check_size_and_a_failed_step (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    int64_t empty = -1, some = -1, more_bytes = -1;
    cr_assert_eq (sl_retention_size (store, &empty), 0);
    cr_expect_eq (empty, 0);
    s_streams (store, 2, 1000, 0x7e);
    cr_assert_eq (sl_retention_size (store, &some), 0);
    cr_expect_eq (some, records_count (store, "SELECT SUM(bytes) FROM streams"));
    cr_expect_gt (some, 2 * 96, "the text kept and a little per row");
    s_streams (store, 4, 5000, 0x7f);
    cr_assert_eq (sl_retention_size (store, &more_bytes), 0);
    cr_expect_gt (more_bytes, some, "more streams, more bytes");
    //  The blocks table gone: the step fails after choosing its streams,
    //  and none of them is deleted.
    cr_assert_eq (sl_store_exec (store, "ALTER TABLE blocks RENAME TO blocks_away", NULL, 0, NULL), 0);
    sl_retention_t by_age = { .max_age_ms = 1, .batch = 10 };
    int pruned = -1;
    bool more = true;
    cr_expect_eq (sl_retention_step (store, &by_age, 60000, &pruned, &more), -1);
    cr_expect_not (sl_store_in_transaction (store), "rolled back");
    cr_assert_eq (sl_store_exec (store, "ALTER TABLE blocks_away RENAME TO blocks", NULL, 0, NULL), 0);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM streams"), 6);
    cr_expect_eq (records_count (store, "SELECT COUNT(*) FROM events"), 6 * 9, "nothing of them deleted");
    sl_store_close (&store);
}

static void
s_suite (s_env_t *env)
{
    check_by_age_then_by_size (env);
    check_steps_are_bounded (env);
    check_old_reports_and_gaps_go (env);
    check_size_and_a_failed_step (env);
}

Test (sl_retention, the_suite_on_sqlite)
{
    store_env_sqlite (s_suite);
}

Test (sl_retention, the_suite_on_postgresql)
{
    store_env_postgres (s_suite);
}
