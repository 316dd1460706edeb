/*  Unit tests: services/audit/recorder/sl_chain (the canonical form, the chain the
    archive writes, seals and what a writer finds at its head), sl_verify
    (what it finds when rows are edited by hand, checkpoints' links, the
    head's seal), sl_summary (the rows later records update), sl_checkpoint
    (signatures) and retention's cut, on SQLite and on a temporary
    PostgreSQL (tests/pgtmp.h; skipped where it is absent). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/identity/sl_signkey.h"
#include "services/audit/recorder/sl_archive.h"
#include "services/audit/recorder/sl_chain.h"
#include "services/audit/recorder/sl_checkpoint.h"
#include "services/audit/store/sl_query.h"
#include "services/audit/recorder/sl_retention.h"
#include "services/audit/store/sl_store.h"
#include "services/audit/recorder/sl_verify.h"
#include "tests/pgtmp.h"
#include "tests/unit/services/audit/store_env.h"

#define T0 1000000                      //  the records' times, Unix ms

typedef store_env_t s_env_t;

//  A fresh store whose rows all count as chained (the records here are
//  dated before the migration: the rows check covers them all).
static sl_store_t *
s_fresh (s_env_t *env)
{
    sl_store_t *store = store_env_fresh (env, "chain");
    cr_assert_eq (sl_store_exec (store, "UPDATE schema_version SET applied_at = 0", NULL, 0, NULL), 0);
    return store;
}

static sl_msg_t
s_msg (sl_msg_type_t type, uint8_t tag, uint64_t seq)
{
    sl_msg_t m;
    sl_msg_init (&m, type);
    memset (m.sid, tag, SL_SID_SIZE);
    m.seq = seq;
    return m;
}

//  One stream: start, a block, a verdict that blocks, finish, end; and a
//  gap and a policy report. In one transaction, committed.
static void
s_records (sl_archive_t *archive, sl_store_t *store, uint8_t tag, int64_t t0)
{
    sl_record_meta_t meta = { SL_STR_LIT ("emitter-1"), 7, (uint64_t) t0, 0, t0 };
    cr_assert_eq (sl_store_begin (store), 0);
    sl_msg_t m = s_msg (SL_MSG_START, tag, 0);
    m.model = SL_STR_LIT ("gpt-4o");
    m.key_id = SL_STR_LIT ("k1");
    m.team = SL_STR_LIT ("red");
    m.user = SL_STR_LIT ("ana");
    m.last_user = SL_STR_LIT ("tidy up my disk");
    m.tools = SL_STR_LIT ("[{\"name\":\"run_shell\"}]");
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1);
    m = s_msg (SL_MSG_BLOCK, tag, 3);
    m.kind = SL_B_END;
    m.block = SL_BK_TEXT;
    m.text = SL_STR_LIT ("Let me tidy up.");
    meta.at = t0 + 1;
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1);
    m = s_msg (SL_MSG_VERDICT, tag, 5);
    m.index = 1;
    m.name = SL_STR_LIT ("run_shell");
    m.action = SL_ACT_BLOCK;
    m.check = SL_CHK_RAN;
    m.rule = SL_STR_LIT ("no-rm-rf");
    m.probability = 0.8125;
    m.latency_us = 900;
    m.text = SL_STR_LIT ("{\"command\":\"rm -rf /\"}");
    meta.at = t0 + 2;
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1);
    m = s_msg (SL_MSG_BLOCK, tag, 6);
    m.kind = SL_B_FINISH;
    m.finish = SL_FIN_STOP;
    m.has_usage = true;
    m.usage = (sl_usage_t) { 40, 25, 65, -1, -1, -1 };
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1);
    m = s_msg (SL_MSG_END, tag, 7);
    meta.at = t0 + 3;
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1);
    //  Delivered again: known, not chained twice.
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 0);
    uint8_t lost [SL_SID_SIZE];
    memset (lost, tag, sizeof lost);
    m = s_msg (SL_MSG_GAP, tag, 0);
    m.count = 3;
    m.body = (sl_str_t) { (const char *) lost, sizeof lost };
    meta.rseq = (uint64_t) t0 + 9;
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1);
    m = s_msg (SL_MSG_POLICY, tag, 0);
    m.instance = SL_STR_LIT ("judge-1");
    m.policy = SL_STR_LIT ("0123456789ab");
    m.text = SL_STR_LIT ("rules: []");
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1);
    cr_assert_eq (sl_archive_commit (archive), 0, "%s", sl_store_error (store));
}

#define S_RECORDS 7                     //  entries s_records adds

//  An approval of tag: waiting, then approved by bob. Committed.
static void
s_approvals (sl_archive_t *archive, sl_store_t *store, uint8_t tag, int64_t t0)
{
    sl_record_meta_t meta = { SL_STR_LIT ("emitter-1"), 7, (uint64_t) t0, 0, t0 };
    cr_assert_eq (sl_store_begin (store), 0);
    sl_msg_t m = s_msg (SL_MSG_APPROVAL, tag, 0);
    m.code = SL_STR_LIT ("pending");
    m.stream = SL_STR_LIT ("a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1");
    m.index = 1;
    m.name = SL_STR_LIT ("run_shell");
    m.text = SL_STR_LIT ("{\"command\":\"git push --force\"}");
    m.rule = SL_STR_LIT ("ask-push");
    m.digest = SL_STR_LIT ("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    m.key_id = SL_STR_LIT ("k1");
    m.team = SL_STR_LIT ("red");
    m.user = SL_STR_LIT ("ana");
    m.instance = SL_STR_LIT ("judge-1");
    m.ts = t0;
    m.expires = t0 + 300000;
    m.body = SL_STR_LIT ("{\"approvers\":[\"team:red\"]}");
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1);
    m.code = SL_STR_LIT ("approved");
    m.approver = SL_STR_LIT ("bob@red");
    m.reason = SL_STR_LIT ("once");
    //  A decision's details (the memory it gave, self_approved) replace
    //  the pending record's in the row.
    m.body = SL_STR_LIT ("{\"remember_minutes\":60,\"self_approved\":false}");
    m.ts = t0 + 10;
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1);
    cr_assert_eq (sl_archive_commit (archive), 0, "%s", sl_store_error (store));
}

//  The whole walk: entries, rows, checkpoints, the head, the summary rows.
static sl_verify_status_t
s_verify (sl_store_t *store, const sl_signkey_t *key, sl_verify_report_t *out)
{
    sl_verify_opts_t opts = { .public_key = key };
    sl_verify_t *v = sl_verify_new (store, &opts);
    int steps = 0;
    while (sl_verify_step (v, 3) == 1 && steps++ < 1000)
        ;
    sl_verify_rows (v);
    sl_verify_checkpoints (v);
    sl_verify_head (v);
    for (steps = 0; sl_verify_summaries_step (v, 2) == 1 && steps < 1000; steps++)
        ;
    *out = *sl_verify_report (v);
    sl_verify_destroy (&v);
    return out->status;
}

//  The walk finds problem first, at the table's row whose key has key.
static void
s_expect_problem (sl_store_t *store, const char *problem, const char *table, const char *key)
{
    sl_verify_report_t r;
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_BROKEN, "%s %s", table, key);
    cr_expect_str_eq (r.problem, problem);
    cr_expect_str_eq (r.table, table);
    cr_expect (strstr (r.key, key), "%s: %s", key, r.key);
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

//  --------------------------------------------------------------------------

static void
check_intact_then_edits (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    //  The chain's key is SQLite's rowid: no second index per entry.
    if (strcmp (env->kind, "sqlite") == 0)
        cr_expect_eq (s_int (store, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' "
                                    "AND tbl_name = 'chain' AND name LIKE 'sqlite_autoindex%'"), 0);
    sl_archive_t *archive = sl_archive_new (store, 0);
    s_records (archive, store, 0xa1, T0);
    s_records (archive, store, 0xb2, T0 + 100);
    sl_chain_t *chain = sl_archive_chain (archive);
    cr_expect_eq (sl_chain_head_pos (chain), 2 * S_RECORDS);
    cr_expect_eq (s_int (store, "SELECT COUNT(*) FROM chain"), 2 * S_RECORDS);
    sl_verify_report_t r;
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_INTACT, "%s: %s", env->kind, r.detail);
    cr_expect_eq (r.entries, 2 * S_RECORDS);
    cr_expect_eq (r.checked_pos, 2 * S_RECORDS);

    //  A rolled-back batch leaves no entry and no hole.
    cr_assert_eq (sl_store_begin (store), 0);
    sl_msg_t m = s_msg (SL_MSG_END, 0xc3, 1);
    sl_record_meta_t meta = { SL_STR_LIT ("emitter-1"), 7, 1, 0, T0 + 500 };
    cr_assert_eq (sl_archive_apply (archive, &meta, &m), 1);
    sl_archive_rollback (archive);
    cr_expect_eq (sl_chain_head_pos (chain), 2 * S_RECORDS);
    s_records (archive, store, 0xc3, T0 + 600);
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_INTACT, "%s: %s", env->kind, r.detail);

    //  A verdict's action changed by hand: named.
    s_exec (store, "UPDATE verdicts SET action = 'allow' WHERE sid LIKE 'b2%' AND seq = 5");
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_BROKEN);
    cr_expect_str_eq (r.problem, "changed");
    cr_expect_str_eq (r.table, "verdicts");
    cr_expect (strstr (r.key, "sid=b2b2") && strstr (r.key, "seq=5"), "%s", r.key);
    cr_expect_eq (r.pos, S_RECORDS + 3);
    cr_expect_eq (r.checked_pos, S_RECORDS + 2, "verified up to the record before");
    s_exec (store, "UPDATE verdicts SET action = 'block' WHERE sid LIKE 'b2%' AND seq = 5");
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_INTACT, "%s", r.detail);

    //  A summary record's data changed in the chain itself.
    s_exec (store, "UPDATE chain SET data = REPLACE(data, '\"stop\"', '\"length\"') WHERE kind = 'finish' "
                   "AND sid LIKE 'a1%'");
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_BROKEN);
    cr_expect_str_eq (r.problem, "changed");
    cr_expect_eq (r.pos, 4);
    sl_archive_destroy (&archive);
    sl_store_close (&store);

    //  A block deleted: removed, named.
    store = s_fresh (env);
    archive = sl_archive_new (store, 0);
    s_records (archive, store, 0xa1, T0);
    s_exec (store, "DELETE FROM blocks WHERE seq = 3");
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_BROKEN);
    cr_expect_str_eq (r.problem, "removed");
    cr_expect_str_eq (r.table, "blocks");
    cr_expect_eq (r.pos, 2);
    sl_archive_destroy (&archive);
    sl_store_close (&store);

    //  A verdict inserted: no entry names it.
    store = s_fresh (env);
    archive = sl_archive_new (store, 0);
    s_records (archive, store, 0xa1, T0);
    s_exec (store, "INSERT INTO verdicts (sid, seq, action, checked, at) "
                   "VALUES ('a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1', 42, 'allow', 'ran', 1000010)");
    s_expect_problem (store, "inserted", "verdicts", "seq=42");
    //  Moving the migration's time on does not hide it: the first entry's time bounds it.
    s_exec (store, "UPDATE schema_version SET applied_at = 99999999999999");
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_BROKEN);
    cr_expect_str_eq (r.problem, "inserted");

    s_exec (store, "UPDATE schema_version SET applied_at = 0");
    s_exec (store, "DELETE FROM verdicts WHERE seq = 42");
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_INTACT, "%s", r.detail);

    //  Rows found through the entry their events row names: a ledger row
    //  naming no entry, one naming another record's entry, a block where
    //  the record at its seq chained a verdict.
    s_exec (store, "INSERT INTO events (sid, seq, sub, type, at) "
                   "VALUES ('a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1', 40, 0, 'end', 1000010)");
    s_expect_problem (store, "inserted", "events", "seq=40");
    s_exec (store, "UPDATE events SET chain_pos = 1 WHERE seq = 40");
    s_expect_problem (store, "inserted", "events", "seq=40");
    s_exec (store, "DELETE FROM events WHERE seq = 40");
    s_exec (store, "INSERT INTO blocks (sid, seq, idx, kind, content, at) "
                   "VALUES ('a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1', 5, 1, 'text', 'hello', 1000010)");
    s_expect_problem (store, "inserted", "blocks", "seq=5");
    s_exec (store, "DELETE FROM blocks WHERE seq = 5");
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_INTACT, "%s", r.detail);

    //  The console finds the stream's entries through its events rows.
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_query_stream (store, "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1", &out), 0);
    const char *chain_json = strstr (sl_buf_cstr (&out), "\"chain\":[");
    cr_assert_not_null (chain_json);
    int entries = 0;
    for (const char *at = chain_json; (at = strstr (at, "\"pos\":")); at++)
        entries++;
    cr_expect_eq (entries, 5, "start, block, verdict, finish, end: %s", chain_json);
    sl_buf_free (&out);

    //  An entry that does not follow the one before: inserted there.
    s_exec (store, "UPDATE chain SET prev = '0000000000000000' WHERE pos = 3");
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_BROKEN);
    cr_expect_str_eq (r.problem, "inserted");
    cr_expect_eq (r.pos, 3);
    //  From a later position: the walk takes the hash before it as it stands.
    sl_verify_opts_t from = { .from_pos = 4 };
    sl_verify_t *v = sl_verify_new (store, &from);
    for (int steps = 0; sl_verify_step (v, 3) == 1 && steps < 1000; steps++)
        ;
    cr_expect_eq (sl_verify_report (v)->status, SL_VERIFY_INTACT, "%s", sl_verify_report (v)->detail);
    cr_expect_eq (sl_verify_report (v)->start_pos, 4);
    cr_expect_eq (sl_verify_report (v)->checked_pos, S_RECORDS);
    sl_verify_destroy (&v);
    s_exec (store, "UPDATE chain SET prev = (SELECT substr(hash, 1, 16) FROM chain c WHERE c.pos = 2) "
                   "WHERE pos = 3");
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_INTACT, "%s", r.detail);

    //  An entry removed from the middle of the chain.
    s_exec (store, "DELETE FROM chain WHERE pos = 6");
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_BROKEN);
    cr_expect_str_eq (r.problem, "removed");
    cr_expect_eq (r.pos, 6);
    sl_archive_destroy (&archive);
    sl_store_close (&store);
}

static void
check_checkpoints_and_retention (s_env_t *env)
{
    char dir [64];
    snprintf (dir, sizeof dir, "/tmp/sluice-sign-XXXXXX");
    cr_assert_not_null (mkdtemp (dir));
    sl_buf_t report = { 0 };
    char *error = NULL;
    cr_assert_eq (sl_signkey_make (dir, "audit", &report, &error), 0, "%s", error ? error : "");
    char path [128];
    sl_signkey_t secret, public;
    snprintf (path, sizeof path, "%s/audit.sign_secret", dir);
    cr_assert_eq (sl_signkey_load_secret (&secret, path, &error), 0);
    snprintf (path, sizeof path, "%s/audit.sign", dir);
    cr_assert_eq (sl_signkey_load_public (&public, path, &error), 0);
    cr_expect_str_eq (secret.id, public.id);

    sl_store_t *store = s_fresh (env);
    sl_archive_t *archive = sl_archive_new (store, 0);
    sl_chain_t *chain = sl_archive_chain (archive);
    sl_chain_set_key (chain, &secret);
    s_records (archive, store, 0xa1, T0);
    sl_checkpoint_t cp = { .pos = sl_chain_head_pos (chain), .count = S_RECORDS, .at = T0 + 10 };
    snprintf (cp.head, sizeof cp.head, "%s", sl_chain_head_hash (chain));
    cr_assert_eq (sl_checkpoint_write (store, &secret, &cp), 0, "%s", sl_store_error (store));
    cr_expect_eq (sl_checkpoint_check (&cp, &public), SL_CHECKPOINT_GOOD);
    cr_expect_eq (sl_checkpoint_check (&cp, NULL), SL_CHECKPOINT_UNCHECKED);
    sl_verify_report_t r;
    cr_expect_eq (s_verify (store, &public, &r), SL_VERIFY_INTACT, "%s", r.detail);
    cr_expect_eq (r.signed_good, 1);
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_INTACT, "%s", r.detail);
    cr_expect_eq (r.unchecked, 1, "signed but not checked is said so");
    cr_expect_eq (r.signed_good, 0);

    //  One byte of the signature flipped: a bad checkpoint, exit 2.
    s_exec (store, "UPDATE checkpoints SET signature = CASE WHEN substr(signature, 1, 1) = '0' "
                   "THEN '1' || substr(signature, 2) ELSE '0' || substr(signature, 2) END");
    cr_expect_eq (s_verify (store, &public, &r), SL_VERIFY_BAD_CHECKPOINT);
    cr_expect_str_eq (r.problem, "checkpoint");
    cr_expect_eq (r.pos, S_RECORDS);
    s_exec (store, "DELETE FROM checkpoints");

    //  An unsigned checkpoint naming another head.
    sl_checkpoint_t other = { .pos = 3, .count = 3, .at = T0 };
    snprintf (other.head, sizeof other.head, "%s", sl_chain_genesis ());
    cr_assert_eq (sl_checkpoint_write (store, NULL, &other), 0);
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_BAD_CHECKPOINT);
    cr_expect_eq (r.unsigned_count, 1);
    s_exec (store, "DELETE FROM checkpoints");
    //  Unsigned with a key given: its signature was taken away.
    snprintf (other.head, sizeof other.head, "%s", sl_chain_head_hash (chain));
    other.pos = other.count = sl_chain_head_pos (chain);
    cr_assert_eq (sl_checkpoint_write (store, NULL, &other), 0);
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_INTACT, "%s", r.detail);
    cr_expect_eq (s_verify (store, &public, &r), SL_VERIFY_BAD_CHECKPOINT);
    s_exec (store, "DELETE FROM checkpoints");

    //  Retention: the first stream goes (its records straddle the second's
    //  start), the chain is cut before the first kept entry, signed.
    s_records (archive, store, 0xb2, T0 + 100000);
    s_records (archive, store, 0xc3, T0 + 200000);
    sl_checkpoint_t cut;
    sl_retention_t policy = { .max_age_ms = 150000, .batch = 10, .chain = chain, .key = &secret, .cut = &cut };
    int pruned = 0;
    bool more = true;
    cr_assert_eq (sl_retention_step (store, &policy, T0 + 300000, &pruned, &more), 0, "%s", sl_store_error (store));
    cr_expect_eq (pruned, 2);
    cr_expect_eq (cut.pos, 2 * S_RECORDS, "cut before stream c3's first entry: %lld", (long long) cut.pos);
    cr_expect (cut.cut);
    cr_expect_eq (s_verify (store, &public, &r), SL_VERIFY_INTACT, "%s: %s", env->kind, r.detail);
    cr_expect (r.from_cut);
    cr_expect_eq (r.start_pos, cut.pos + 1);
    cr_expect_eq (r.signed_good, 1);
    //  New records go on from the cut.
    s_records (archive, store, 0xd4, T0 + 400000);
    cr_expect_eq (s_verify (store, &public, &r), SL_VERIFY_INTACT, "%s", r.detail);
    //  A new archive on the same store reads its head.
    sl_archive_t *again = sl_archive_new (store, 0);
    cr_assert_eq (sl_chain_load (sl_archive_chain (again)), 0);
    cr_expect_eq (sl_chain_head_pos (sl_archive_chain (again)), sl_chain_head_pos (chain));
    cr_expect_str_eq (sl_chain_head_hash (sl_archive_chain (again)), sl_chain_head_hash (chain));
    sl_archive_destroy (&again);
    sl_archive_destroy (&archive);
    sl_store_close (&store);
    sl_buf_free (&report);
    snprintf (path, sizeof path, "rm -rf '%s'", dir);
    cr_expect_eq (system (path), 0);
}

//  Two writers on one store (two audits during a rolling update), in
//  turn: each appends after the other's entries, never from the head it
//  last committed itself; one intact chain.
static void
check_two_writers_make_one_chain (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    char *error = NULL;
    sl_store_t *other = sl_store_open (env->target, &error);
    cr_assert_not_null (other, "%s", error ? error : "");
    sl_archive_t *a = sl_archive_new (store, 0);
    sl_archive_t *b = sl_archive_new (other, 0);
    s_records (a, store, 0xa1, T0);
    s_records (b, other, 0xb2, T0 + 100);
    s_records (a, store, 0xc3, T0 + 200);
    s_records (b, other, 0xd4, T0 + 300);
    cr_expect_eq (sl_chain_head_pos (sl_archive_chain (b)), 4 * S_RECORDS);
    cr_expect_eq (s_int (store, "SELECT COUNT(*) FROM chain"), 4 * S_RECORDS, "no entry lost");
    sl_verify_report_t r;
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_INTACT, "%s: %s", env->kind, r.detail);
    sl_archive_destroy (&b);
    sl_archive_destroy (&a);
    sl_store_close (&other);
    sl_store_close (&store);
}

//  --------------------------------------------------------------------------
//  Whoever holds the database

typedef struct {
    char dir [64];
    sl_signkey_t secret, public;
} s_keys_t;

static void
s_keys (s_keys_t *k)
{
    snprintf (k->dir, sizeof k->dir, "/tmp/sluice-sign-XXXXXX");
    cr_assert_not_null (mkdtemp (k->dir));
    sl_buf_t report = { 0 };
    char *error = NULL, path [128];
    cr_assert_eq (sl_signkey_make (k->dir, "audit", &report, &error), 0, "%s", error ? error : "");
    sl_buf_free (&report);
    snprintf (path, sizeof path, "%s/audit.sign_secret", k->dir);
    cr_assert_eq (sl_signkey_load_secret (&k->secret, path, &error), 0);
    snprintf (path, sizeof path, "%s/audit.sign", k->dir);
    cr_assert_eq (sl_signkey_load_public (&k->public, path, &error), 0);
}

static void
s_keys_gone (s_keys_t *k)
{
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", k->dir);
    cr_expect_eq (system (cmd), 0);
}

//  An archive on its own connection to the store (another audit), its
//  chain sealing with key (NULL: none, as whoever has only the database).
static sl_archive_t *
s_writer (s_env_t *env, sl_store_t **store, const sl_signkey_t *key)
{
    char *error = NULL;
    *store = sl_store_open (env->target, &error);
    cr_assert_not_null (*store, "%s", error ? error : "");
    sl_archive_t *archive = sl_archive_new (*store, 0);
    sl_chain_set_key (sl_archive_chain (archive), key);
    return archive;
}

//  A signed checkpoint at the chain's head, linked to the one before.
static sl_checkpoint_t
s_checkpoint (sl_store_t *store, sl_chain_t *chain, const sl_signkey_t *key)
{
    int64_t before = 0;
    sl_checkpoint_t cp = { .pos = sl_chain_head_pos (chain), .at = T0 };
    cr_assert_eq (sl_checkpoint_before (store, cp.pos, &before), 0);
    cp.count = cp.pos - before;
    snprintf (cp.head, sizeof cp.head, "%s", sl_chain_head_hash (chain));
    cr_assert_eq (sl_checkpoint_write (store, key, &cp), 0, "%s", sl_store_error (store));
    return cp;
}

static void
s_expect_chain_problem (sl_chain_t *chain, const char *kind, int64_t pos)
{
    const char *k = NULL, *detail = NULL;
    int64_t at = 0;
    cr_expect (sl_chain_problem (chain, &k, &at, &detail), "the writer finds %s at %lld", kind, (long long) pos);
    cr_expect_str_eq (k ? k : "", kind, "%s", detail ? detail : "");
    cr_expect_eq (at, pos, "%s", detail ? detail : "");
}

//  Two audits holding the key take turns on one store: neither takes the
//  other's entries for a stranger's. Someone without the key appends
//  records with sluice's own code (right hashes, no seal): the next
//  writer with the key says so, and seals nothing more; verify, given
//  the public key, finds the head unsealed.
static void
check_seals_tell_siblings_from_strangers (s_env_t *env)
{
    s_keys_t k;
    s_keys (&k);
    sl_store_t *store = s_fresh (env), *other, *third;
    sl_archive_t *a = sl_archive_new (store, 0);
    sl_chain_set_key (sl_archive_chain (a), &k.secret);
    sl_archive_t *b = s_writer (env, &other, &k.secret);
    s_records (a, store, 0xa1, T0);
    s_records (b, other, 0xb2, T0 + 100);
    s_records (a, store, 0xc3, T0 + 200);
    cr_expect_not (sl_chain_problem (sl_archive_chain (a), NULL, NULL, NULL), "a sibling's entries are sealed");
    cr_expect_not (sl_chain_problem (sl_archive_chain (b), NULL, NULL, NULL));
    sl_verify_report_t r;
    cr_expect_eq (s_verify (store, &k.public, &r), SL_VERIFY_INTACT, "%s: %s", env->kind, r.detail);
    cr_expect_str_eq (r.head_seal, "sealed");
    cr_expect_eq (s_int (store, "SELECT COUNT(*) FROM chain WHERE seal IS NOT NULL"), 3, "one seal a transaction");

    sl_archive_t *x = s_writer (env, &third, NULL);
    s_records (x, third, 0xd4, T0 + 300);
    cr_expect_eq (s_verify (store, &k.public, &r), SL_VERIFY_BROKEN, "verify: the head has no seal");
    cr_expect_str_eq (r.problem, "inserted");
    cr_expect_eq (r.pos, 3 * S_RECORDS + 1, "after the last seal: %s", r.detail);
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_INTACT, "without the key the hashes alone hold");
    //  b last wrote before a's c3: from a's seal on, not b's own head.
    s_records (b, other, 0xe5, T0 + 400);
    s_expect_chain_problem (sl_archive_chain (b), "inserted", 3 * S_RECORDS + 1);
    cr_expect_eq (s_int (store, "SELECT COUNT(*) FROM chain WHERE pos > 4 * 7 AND seal IS NOT NULL"), 0,
                  "nothing sealed over it");
    cr_expect_eq (s_verify (store, &k.public, &r), SL_VERIFY_BROKEN);
    cr_expect_str_eq (r.problem, "inserted");
    sl_archive_destroy (&x);
    sl_archive_destroy (&b);
    sl_archive_destroy (&a);
    sl_store_close (&third);
    sl_store_close (&other);
    sl_store_close (&store);
    s_keys_gone (&k);
}

//  The writer remembers the head it left: the chain shortened or its
//  head rewritten behind its back is found at its next transaction, key
//  or not.
static void
check_the_writer_finds_its_head_gone (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    sl_archive_t *a = sl_archive_new (store, 0);
    s_records (a, store, 0xa1, T0);
    s_records (a, store, 0xb2, T0 + 100);
    s_exec (store, "DELETE FROM chain WHERE pos > 7");
    s_records (a, store, 0xc3, T0 + 200);
    s_expect_chain_problem (sl_archive_chain (a), "removed", S_RECORDS + 1);
    sl_archive_destroy (&a);
    sl_store_close (&store);

    store = s_fresh (env);
    a = sl_archive_new (store, 0);
    s_records (a, store, 0xa1, T0);
    s_exec (store, "UPDATE chain SET hash = '0000000000000000000000000000000000000000000000000000000000000000' "
                   "WHERE pos = 7");
    s_records (a, store, 0xb2, T0 + 100);
    s_expect_chain_problem (sl_archive_chain (a), "changed", S_RECORDS);
    sl_archive_destroy (&a);
    sl_store_close (&store);
}

//  At start, the newest checkpoint known (the file's: outside the
//  database) against the store: the chain must reach it with its hash,
//  and a head past it must be sealed; a store written before seals
//  (its newest checkpoint of version 1) is taken as it is.
static void
check_start_against_the_newest_checkpoint (s_env_t *env)
{
    s_keys_t k;
    s_keys (&k);
    sl_store_t *store = s_fresh (env), *third;
    sl_archive_t *a = sl_archive_new (store, 0);
    sl_chain_set_key (sl_archive_chain (a), &k.secret);
    s_records (a, store, 0xa1, T0);
    s_records (a, store, 0xb2, T0 + 100);
    sl_checkpoint_t cp = s_checkpoint (store, sl_archive_chain (a), &k.secret);
    sl_chain_t *c = sl_chain_new (store);
    sl_chain_set_key (c, &k.secret);
    cr_assert_eq (sl_chain_start (c, &cp), 0);
    cr_expect_not (sl_chain_problem (c, NULL, NULL, NULL), "intact");
    sl_chain_destroy (&c);
    //  Records appended by someone without the key, past the checkpoint.
    sl_archive_t *x = s_writer (env, &third, NULL);
    s_records (x, third, 0xd4, T0 + 300);
    c = sl_chain_new (store);
    sl_chain_set_key (c, &k.secret);
    cr_assert_eq (sl_chain_start (c, &cp), 0);
    s_expect_chain_problem (c, "inserted", 2 * S_RECORDS + 1);
    sl_chain_destroy (&c);
    sl_checkpoint_t old = cp;
    old.version = 1;
    c = sl_chain_new (store);
    sl_chain_set_key (c, &k.secret);
    cr_assert_eq (sl_chain_start (c, &old), 0);
    cr_expect_not (sl_chain_problem (c, NULL, NULL, NULL), "written before seals: not proven, not refused");
    sl_chain_destroy (&c);
    //  Shortened, the newest checkpoints with it: the checkpoint (from
    //  the file) names a position past the end.
    s_exec (store, "DELETE FROM chain WHERE pos > 7");
    s_exec (store, "DELETE FROM checkpoints");
    c = sl_chain_new (store);
    sl_chain_set_key (c, &k.secret);
    cr_assert_eq (sl_chain_start (c, &cp), 0);
    s_expect_chain_problem (c, "removed", S_RECORDS + 1);
    sl_chain_destroy (&c);
    sl_archive_destroy (&x);
    sl_archive_destroy (&a);
    sl_store_close (&third);
    sl_store_close (&store);
    s_keys_gone (&k);
}

//  Each checkpoint names the one before it (pos - count): one removed
//  from between two others is found.
static void
check_checkpoints_are_linked (s_env_t *env)
{
    s_keys_t k;
    s_keys (&k);
    sl_store_t *store = s_fresh (env);
    sl_archive_t *a = sl_archive_new (store, 0);
    sl_chain_set_key (sl_archive_chain (a), &k.secret);
    for (int i = 0; i < 3; i++) {
        s_records (a, store, (uint8_t) (0xa1 + i), T0 + 100 * i);
        sl_checkpoint_t cp = s_checkpoint (store, sl_archive_chain (a), &k.secret);
        cr_expect_eq (cp.count, S_RECORDS, "since the checkpoint before");
    }
    sl_verify_report_t r;
    cr_expect_eq (s_verify (store, &k.public, &r), SL_VERIFY_INTACT, "%s: %s", env->kind, r.detail);
    cr_expect_eq (r.checkpoints, 3);
    cr_expect_str_eq (r.head_seal, "sealed");
    s_exec (store, "DELETE FROM checkpoints WHERE pos = 14");
    cr_expect_eq (s_verify (store, &k.public, &r), SL_VERIFY_BROKEN, "a checkpoint removed from between two");
    cr_expect_str_eq (r.problem, "removed");
    cr_expect_str_eq (r.table, "checkpoints");
    cr_expect_eq (r.pos, 2 * S_RECORDS);
    sl_archive_destroy (&a);
    sl_store_close (&store);
    s_keys_gone (&k);
}

//  The rows later records update (streams, approvals, policies) against
//  what the chain's entries carried: a column edited by hand is named,
//  and a row no record made.
static void
check_summary_rows_match_the_chain (s_env_t *env)
{
    sl_store_t *store = s_fresh (env);
    sl_archive_t *archive = sl_archive_new (store, 0);
    s_records (archive, store, 0xa1, T0);
    s_approvals (archive, store, 0xa1, T0 + 5);
    s_records (archive, store, 0xb2, T0 + 100);
    sl_verify_report_t r;
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_INTACT, "%s: %s", env->kind, r.detail);
    cr_expect_eq (r.summaries, 4, "two streams, an approval, a policy");
    static const struct {
        const char *edit, *undo, *table, *key, *column;
    } edits [] = {
        { "UPDATE streams SET team = 'blue' WHERE sid LIKE 'a1%'", "UPDATE streams SET team = 'red'",
          "streams", "sid=a1a1", "team" },
        { "UPDATE streams SET user_name = 'eve' WHERE sid LIKE 'b2%'", "UPDATE streams SET user_name = 'ana'",
          "streams", "sid=b2b2", "user_name" },
        { "UPDATE streams SET client_key = 'k9' WHERE sid LIKE 'b2%'", "UPDATE streams SET client_key = 'k1'",
          "streams", "sid=b2b2", "client_key" },
        { "UPDATE streams SET finish = 'length' WHERE sid LIKE 'a1%'", "UPDATE streams SET finish = 'stop'",
          "streams", "sid=a1a1", "finish" },
        { "UPDATE streams SET ended_at = NULL, duration_ms = NULL WHERE sid LIKE 'b2%'",
          "UPDATE streams SET ended_at = 1000103, duration_ms = 3 WHERE sid LIKE 'b2%'", "streams", "sid=b2b2",
          "ended_at" },
        { "UPDATE streams SET last_user = 'hello' WHERE sid LIKE 'a1%'",
          "UPDATE streams SET last_user = 'tidy up my disk'", "streams", "sid=a1a1", "last_user" },
        { "UPDATE approvals SET approver = 'mallory'", "UPDATE approvals SET approver = 'bob@red'",
          "approvals", "id=a1a1", "approver" },
        { "UPDATE approvals SET state = 'denied'", "UPDATE approvals SET state = 'approved'",
          "approvals", "id=a1a1", "state" },
        { "UPDATE approvals SET team = 'blue'", "UPDATE approvals SET team = 'red'", "approvals", "id=a1a1", "team" },
        { "UPDATE policies SET source = 'rules: [{allow: all}]'", "UPDATE policies SET source = 'rules: []'",
          "policies", "judge=judge-1", "source" },
    };
    for (size_t i = 0; i < sizeof edits / sizeof edits [0]; i++) {
        s_exec (store, edits [i].edit);
        cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_BROKEN, "%s: %s", env->kind, edits [i].edit);
        cr_expect_str_eq (r.problem, "changed", "%s", edits [i].edit);
        cr_expect_str_eq (r.table, edits [i].table, "%s", edits [i].edit);
        cr_expect (strstr (r.key, edits [i].key), "%s: %s", edits [i].edit, r.key);
        cr_expect (strstr (r.detail, edits [i].column), "%s: %s", edits [i].edit, r.detail);
        s_exec (store, edits [i].undo);
        cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_INTACT, "%s: %s", edits [i].undo, r.detail);
    }
    //  Rows no record made.
    s_exec (store, "INSERT INTO streams (sid, started_at) VALUES ('ffffffffffffffffffffffffffffffff', 1000050)");
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_BROKEN);
    cr_expect_str_eq (r.problem, "inserted");
    cr_expect_str_eq (r.table, "streams");
    s_exec (store, "DELETE FROM streams WHERE sid = 'ffffffffffffffffffffffffffffffff'");
    s_exec (store, "INSERT INTO approvals (id, state, stream, digest, created_at, updated_at, approver) VALUES "
                   "('eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee', 'approved', 'x', 'y', 1000050, 1000060, 'mallory')");
    cr_expect_eq (s_verify (store, NULL, &r), SL_VERIFY_BROKEN);
    cr_expect_str_eq (r.problem, "inserted");
    cr_expect_str_eq (r.table, "approvals");
    sl_archive_destroy (&archive);
    sl_store_close (&store);
}

static void
s_suite (s_env_t *env)
{
    check_intact_then_edits (env);
    check_checkpoints_and_retention (env);
    check_two_writers_make_one_chain (env);
    check_seals_tell_siblings_from_strangers (env);
    check_the_writer_finds_its_head_gone (env);
    check_start_against_the_newest_checkpoint (env);
    check_checkpoints_are_linked (env);
    check_summary_rows_match_the_chain (env);
}

Test (sl_chain, canonical_form_is_by_declared_type)
{
    //  A number as PostgreSQL hands it back (text) encodes as the number.
    sl_buf_t a = { 0 }, b = { 0 };
    sl_val_t written [] = { sl_val_text ("s"), sl_val_int (5), sl_val_int (0), sl_val_text ("end"),
                            sl_val_int (1234) };
    sl_val_t as_text [] = { sl_val_text ("s"), sl_val_text ("5"), sl_val_text ("0"), sl_val_text ("end"),
                            sl_val_text ("1234") };
    sl_row_t row = { as_text, 5 };
    sl_chain_canon_row (&a, SL_CHAIN_EVENTS, written, 5);
    sl_chain_canon_row_of (&b, SL_CHAIN_EVENTS, &row, 0);
    cr_expect_eq (a.len, b.len);
    cr_expect (memcmp (a.data, b.data, a.len) == 0);
    //  Absent and empty text differ; so do two values and their concatenation.
    sl_buf_t c = { 0 }, d = { 0 };
    sl_chain_canon_data (&c, SL_STR_NULL);
    sl_chain_canon_data (&d, SL_STR_LIT (""));
    cr_expect (c.len != d.len || memcmp (c.data, d.data, c.len) != 0);
    sl_buf_reset (&c);
    sl_buf_reset (&d);
    sl_chain_canon_begin (&c, 1, "end", "ab", 7);
    sl_chain_canon_begin (&d, 1, "enda", "b", 7);
    cr_expect (c.len != d.len || memcmp (c.data, d.data, c.len) != 0);
    char h1 [SL_CHAIN_HEX], h2 [SL_CHAIN_HEX];
    sl_chain_hash (sl_chain_genesis (), sl_buf_str (&c), h1);
    sl_chain_hash (sl_chain_genesis (), sl_buf_str (&d), h2);
    cr_expect_str_neq (h1, h2);
    cr_expect_eq (strlen (h1), 64);
    sl_buf_free (&a);
    sl_buf_free (&b);
    sl_buf_free (&c);
    sl_buf_free (&d);
}

Test (sl_chain, the_suite_on_sqlite)
{
    store_env_sqlite (s_suite);
}

Test (sl_chain, the_suite_on_postgresql)
{
    store_env_postgres (s_suite);
}
