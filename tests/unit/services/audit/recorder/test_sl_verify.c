/*  Unit tests: services/audit/recorder/sl_verify, the walk of the chain
    as `sluice-audit verify` and the running audit make it: a range of
    positions or times, the report as text and JSON, a store that cannot
    be read, a checkpoint file's lines against the chain, and the head's
    seal; on SQLite and PostgreSQL (store_env.h). What the walk finds when
    rows, entries, checkpoints or summary rows are edited by hand:
    test_sl_chain.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base/sl_json.h"
#include "common/identity/sl_signkey.h"
#include "services/audit/recorder/sl_archive.h"
#include "services/audit/recorder/sl_chain.h"
#include "services/audit/recorder/sl_checkpoint.h"
#include "services/audit/recorder/sl_verify.h"
#include "tests/unit/services/audit/records.h"
#include "tests/unit/services/audit/store_env.h"

#define T0 1000000                      //  the first stream's time, Unix ms
#define S_APART 100000                  //  between two streams' starts
#define S_ENTRIES 9                     //  entries a stream of records.h adds

typedef store_env_t s_env_t;

//  A fresh store whose rows all count as chained (the records are dated
//  before the migration), holding `streams` streams, each committed in
//  its own transaction, by an archive sealing with key (NULL: none).
static sl_store_t *
s_store (s_env_t *env, int streams, const sl_signkey_t *key)
{
    sl_store_t *store = store_env_fresh (env, "verify");
    cr_assert_eq (sl_store_exec (store, "UPDATE schema_version SET applied_at = 0", NULL, 0, NULL), 0);
    sl_archive_t *archive = sl_archive_new (store, 0);
    sl_chain_set_key (sl_archive_chain (archive), key);
    for (int i = 0; i < streams; i++) {
        uint8_t sid [SL_SID_SIZE] = { 0xa0, (uint8_t) i };
        cr_assert_eq (sl_store_begin (store), 0);
        cr_assert_eq (records_stream (archive, sid, T0 + i * S_APART, "gpt-x", "k1"), S_ENTRIES);
        cr_assert_eq (sl_archive_commit (archive), 0, "%s", sl_store_error (store));
    }
    sl_archive_destroy (&archive);
    return store;
}

//  A walk of opts over the whole range, then the checks verify makes of
//  the whole chain; the report.
static sl_verify_report_t
s_walk (sl_store_t *store, const sl_verify_opts_t *opts)
{
    sl_verify_t *v = sl_verify_new (store, opts);
    for (int steps = 0; sl_verify_step (v, 4) == 1 && steps < 1000; steps++)
        ;
    sl_verify_checkpoints (v);
    sl_verify_head (v);
    sl_verify_report_t r = *sl_verify_report (v);
    sl_verify_destroy (&v);
    return r;
}

static void
s_exec (sl_store_t *store, const char *sql)
{
    cr_assert_eq (sl_store_exec (store, sql, NULL, 0, NULL), 0, "%s: %s", sql, sl_store_error (store));
}

//  --------------------------------------------------------------------------

//  A range by position, and the positions a time range starts and ends at.
static void
check_a_range_of_positions_and_times (s_env_t *env)
{
    sl_store_t *store = s_store (env, 3, NULL);
    int64_t pos = -1;
    cr_assert_eq (sl_verify_pos_at (store, T0 + S_APART, true, &pos), 0);
    cr_expect_eq (pos, S_ENTRIES + 1, "the second stream's first entry");
    cr_assert_eq (sl_verify_pos_at (store, T0 + S_APART, false, &pos), 0);
    cr_expect_eq (pos, S_ENTRIES, "the first stream's last");
    cr_assert_eq (sl_verify_pos_at (store, T0 + 10 * S_APART, true, &pos), 0);
    cr_expect_eq (pos, 0, "none at or after");
    cr_assert_eq (sl_verify_pos_at (store, T0, false, &pos), 0);
    cr_expect_eq (pos, 0, "none before");
    sl_verify_opts_t middle = { .from_pos = S_ENTRIES + 1, .to_pos = 2 * S_ENTRIES };
    sl_verify_report_t r = s_walk (store, &middle);
    cr_expect_eq (r.status, SL_VERIFY_INTACT, "%s: %s", env->kind, r.detail);
    cr_expect_eq (r.start_pos, S_ENTRIES + 1);
    cr_expect_eq (r.checked_pos, 2 * S_ENTRIES);
    cr_expect_eq (r.entries, S_ENTRIES);
    cr_expect_eq (r.checked_at, T0 + S_APART + 250, "the time of the last entry walked");
    //  An edit outside the range is not seen; inside, it is.
    s_exec (store, "UPDATE verdicts SET action = 'allow' WHERE sid LIKE 'a002%' AND seq = 9");
    r = s_walk (store, &middle);
    cr_expect_eq (r.status, SL_VERIFY_INTACT, "%s", r.detail);
    sl_verify_opts_t whole = { 0 };
    r = s_walk (store, &whole);
    cr_expect_eq (r.status, SL_VERIFY_BROKEN);
    cr_expect_eq (r.pos, 2 * S_ENTRIES + 6, "the third stream's blocked verdict");
    sl_store_close (&store);
}

//  The report as `sluice-audit verify` prints it, text and JSON.
static void
check_the_report_in_text_and_json (s_env_t *env)
{
    sl_store_t *store = s_store (env, 2, NULL);
    sl_verify_opts_t whole = { 0 };
    sl_verify_report_t r = s_walk (store, &whole);
    cr_assert_eq (r.status, SL_VERIFY_INTACT, "%s", r.detail);
    sl_buf_t out = { 0 };
    sl_verify_text (&r, &out);
    const char *text = sl_buf_cstr (&out);
    cr_expect_not_null (strstr (text, "chain: intact\n"), "%s", text);
    cr_expect_not_null (strstr (text, "walked: positions 1 to 18 (18 entries; 0 name records retention removed), "
                                      "starting at the first record\n"), "%s", text);
    cr_expect_not_null (strstr (text, "head: seal not checked: no --public-key\n"), "%s", text);
    cr_expect_null (strstr (text, "first problem"), "%s", text);
    sl_buf_reset (&out);
    sl_verify_json (&r, &out);
    cr_expect (sl_json_valid (sl_buf_str (&out)), "%s", sl_buf_cstr (&out));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "{\"status\":\"intact\",\"exit\":0,\"from\":1,\"to\":18,"),
                        "%s", sl_buf_cstr (&out));
    cr_expect_null (strstr (sl_buf_cstr (&out), "\"problem\""));
    //  Broken: the problem first, in both.
    s_exec (store, "DELETE FROM blocks WHERE sid LIKE 'a001%' AND seq = 4");
    r = s_walk (store, &whole);
    cr_assert_eq (r.status, SL_VERIFY_BROKEN);
    sl_buf_reset (&out);
    sl_verify_text (&r, &out);
    text = sl_buf_cstr (&out);
    cr_expect_eq (strncmp (text, "chain: broken\nfirst problem: removed", 36), 0, "%s", text);
    sl_buf_reset (&out);
    sl_verify_json (&r, &out);
    cr_expect (sl_json_valid (sl_buf_str (&out)), "%s", sl_buf_cstr (&out));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "{\"status\":\"broken\",\"exit\":1,\"problem\":{\"kind\":"
                                                    "\"removed\",\"table\":\"blocks\",\"key\":"), "%s",
                        sl_buf_cstr (&out));
    sl_buf_reset (&out);
    sl_verify_problem_json (&r, &out);
    cr_expect (sl_json_valid (sl_buf_str (&out)), "%s", sl_buf_cstr (&out));
    char pos [32];
    snprintf (pos, sizeof pos, "\"pos\":%d,", S_ENTRIES + 3);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), pos), "the block's entry: %s", sl_buf_cstr (&out));
    sl_buf_free (&out);
    sl_store_close (&store);
}

//  A store it cannot read: unreadable (exit 3), never intact; the walk
//  tries again when asked.
static void
check_a_store_it_cannot_read (s_env_t *env)
{
    sl_store_t *store = s_store (env, 1, NULL);
    s_exec (store, "ALTER TABLE chain RENAME TO chain_away");
    sl_verify_opts_t whole = { 0 };
    sl_verify_t *v = sl_verify_new (store, &whole);
    cr_expect_eq (sl_verify_step (v, 100), -1);
    cr_expect_eq (sl_verify_report (v)->status, SL_VERIFY_UNREADABLE);
    sl_buf_t out = { 0 };
    sl_verify_text (sl_verify_report (v), &out);
    cr_expect_eq (strncmp (sl_buf_cstr (&out), "chain: unreadable\n", 18), 0, "%s", sl_buf_cstr (&out));
    sl_buf_free (&out);
    s_exec (store, "ALTER TABLE chain_away RENAME TO chain");
    cr_expect_eq (sl_verify_step (v, 100), 0, "readable again: caught up");
    cr_expect_eq (sl_verify_report (v)->status, SL_VERIFY_INTACT, "%s", sl_verify_report (v)->detail);
    cr_expect_eq (sl_verify_report (v)->checked_pos, S_ENTRIES);
    sl_verify_destroy (&v);
    sl_store_close (&store);
}

typedef struct {
    char hash [SL_CHAIN_HEX];
} s_hash_t;

static int
s_hash_row (void *arg, const sl_row_t *row)
{
    sl_str_t h = sl_row_text (row, 0);
    snprintf (((s_hash_t *) arg)->hash, SL_CHAIN_HEX, "%.*s", (int) h.len, h.ptr ? h.ptr : "");
    return 1;
}

//  Keys in a temporary directory: the audit's, its public half, another.
typedef struct {
    char dir [64];
    sl_signkey_t secret, public, other;
} s_keys_t;

static void
s_keys (s_keys_t *k)
{
    snprintf (k->dir, sizeof k->dir, "/tmp/sluice-verify-XXXXXX");
    cr_assert_not_null (mkdtemp (k->dir));
    sl_buf_t report = { 0 };
    char *error = NULL, path [128];
    cr_assert_eq (sl_signkey_make (k->dir, "audit", &report, &error), 0, "%s", error ? error : "");
    cr_assert_eq (sl_signkey_make (k->dir, "other", &report, &error), 0, "%s", error ? error : "");
    sl_buf_free (&report);
    snprintf (path, sizeof path, "%s/audit.sign_secret", k->dir);
    cr_assert_eq (sl_signkey_load_secret (&k->secret, path, &error), 0);
    snprintf (path, sizeof path, "%s/audit.sign", k->dir);
    cr_assert_eq (sl_signkey_load_public (&k->public, path, &error), 0);
    snprintf (path, sizeof path, "%s/other.sign_secret", k->dir);
    cr_assert_eq (sl_signkey_load_secret (&k->other, path, &error), 0);
}

static void
s_keys_gone (s_keys_t *k)
{
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", k->dir);
    cr_expect_eq (system (cmd), 0);
}

//  A checkpoint of the file (outside the database), signed with key.
static sl_checkpoint_t
s_file_line (sl_store_t *store, int64_t pos, const sl_signkey_t *key)
{
    sl_checkpoint_t cp = { .version = SL_CHECKPOINT_VERSION, .pos = pos, .count = pos, .at = T0 };
    s_hash_t h = { "" };
    sl_val_t p [] = { sl_val_int (pos) };
    cr_assert_eq (sl_store_query (store, "SELECT hash FROM chain WHERE pos = $1", p, 1, s_hash_row, &h), 0);
    snprintf (cp.head, sizeof cp.head, "%s", *h.hash ? h.hash : sl_chain_genesis ());
    snprintf (cp.key_id, sizeof cp.key_id, "%s", key->id);
    sl_buf_t msg = { 0 };
    sl_checkpoint_message (&msg, &cp);
    sl_signkey_sign (key, msg.data, msg.len, cp.signature);
    sl_buf_free (&msg);
    return cp;
}

static sl_verify_report_t
s_with_line (sl_store_t *store, const sl_signkey_t *public, const sl_checkpoint_t *cp)
{
    sl_verify_opts_t opts = { .public_key = public };
    sl_verify_t *v = sl_verify_new (store, &opts);
    for (int steps = 0; sl_verify_step (v, 100) == 1 && steps < 100; steps++)
        ;
    cr_expect_eq (sl_verify_checkpoint (v, cp), 0);
    sl_verify_report_t r = *sl_verify_report (v);
    sl_verify_destroy (&v);
    return r;
}

//  A checkpoint file's line: its head against the chain's, its signature
//  against the key; one past the chain's end is entries removed with the
//  store's checkpoints.
static void
check_a_checkpoint_files_lines (s_env_t *env)
{
    s_keys_t k;
    s_keys (&k);
    sl_store_t *store = s_store (env, 2, &k.secret);
    sl_checkpoint_t cp = s_file_line (store, S_ENTRIES, &k.secret);
    sl_verify_report_t r = s_with_line (store, &k.public, &cp);
    cr_expect_eq (r.status, SL_VERIFY_INTACT, "%s: %s", env->kind, r.detail);
    cr_expect_eq (r.signed_good, 1);
    //  Past the end: the chain was shortened.
    sl_checkpoint_t past = s_file_line (store, 2 * S_ENTRIES, &k.secret);
    s_exec (store, "DELETE FROM chain WHERE pos > 12");
    r = s_with_line (store, &k.public, &past);
    cr_expect_eq (r.status, SL_VERIFY_BROKEN);
    cr_expect_str_eq (r.problem, "removed");
    cr_expect_not_null (strstr (r.detail, "the chain ends at position 12"), "%s", r.detail);
    //  Another key's, or a head that is not the chain's: a bad checkpoint.
    sl_checkpoint_t stranger = s_file_line (store, S_ENTRIES, &k.other);
    r = s_with_line (store, &k.public, &stranger);
    cr_expect_eq (r.status, SL_VERIFY_BAD_CHECKPOINT);
    cr_expect_not_null (strstr (r.detail, "not the key given"), "%s", r.detail);
    sl_checkpoint_t moved = s_file_line (store, S_ENTRIES - 1, &k.secret);
    moved.pos = S_ENTRIES;
    sl_buf_t msg = { 0 };
    sl_checkpoint_message (&msg, &moved);
    sl_signkey_sign (&k.secret, msg.data, msg.len, moved.signature);
    sl_buf_free (&msg);
    r = s_with_line (store, &k.public, &moved);
    cr_expect_eq (r.status, SL_VERIFY_BAD_CHECKPOINT);
    cr_expect_not_null (strstr (r.detail, "another head"), "%s", r.detail);
    sl_store_close (&store);
    s_keys_gone (&k);
}

//  The head: sealed by an audit holding the key; not checked without a
//  public key; written before seals when nothing in the chain is sealed.
static void
check_the_heads_seal (s_env_t *env)
{
    s_keys_t k;
    s_keys (&k);
    sl_store_t *store = s_store (env, 2, &k.secret);
    sl_verify_opts_t with_key = { .public_key = &k.public }, without = { 0 };
    sl_verify_report_t r = s_walk (store, &with_key);
    cr_expect_eq (r.status, SL_VERIFY_INTACT, "%s: %s", env->kind, r.detail);
    cr_expect_str_eq (r.head_seal, "sealed");
    r = s_walk (store, &without);
    cr_expect_str_eq (r.head_seal, "unchecked");
    sl_store_close (&store);
    store = s_store (env, 2, NULL);
    r = s_walk (store, &with_key);
    cr_expect_eq (r.status, SL_VERIFY_INTACT, "%s", r.detail);
    cr_expect_str_eq (r.head_seal, "before_seals");
    sl_store_close (&store);
    s_keys_gone (&k);
}

static void
s_suite (s_env_t *env)
{
    check_a_range_of_positions_and_times (env);
    check_the_report_in_text_and_json (env);
    check_a_store_it_cannot_read (env);
    check_a_checkpoint_files_lines (env);
    check_the_heads_seal (env);
}

Test (sl_verify, the_suite_on_sqlite)
{
    store_env_sqlite (s_suite);
}

Test (sl_verify, the_suite_on_postgresql)
{
    store_env_postgres (s_suite);
}
