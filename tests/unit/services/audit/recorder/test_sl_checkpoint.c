/*  Unit tests: services/audit/recorder/sl_checkpoint, signed checkpoints
    of the audit's chain: what a signature covers, JSON lines written and
    read back, the newest of a checkpoint file (signed with the key, the
    file's tail only), and checkpoints in the store (linked, a cut taking
    an earlier one's place), on SQLite and PostgreSQL (store_env.h). How
    verify and the running audit use them: test_sl_chain.c,
    test_sl_verify.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/identity/sl_signkey.h"
#include "services/audit/recorder/sl_checkpoint.h"
#include "tests/unit/services/audit/store_env.h"

#define S_HEAD_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define S_HEAD_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

//  Two signing keys in a temporary directory, and the public half of the first.
typedef struct {
    char dir [64];
    sl_signkey_t secret, public, other;
} s_keys_t;

static void
s_keys (s_keys_t *k)
{
    snprintf (k->dir, sizeof k->dir, "/tmp/sluice-cp-XXXXXX");
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

static sl_checkpoint_t
s_cp (int64_t pos, int64_t count, const char *head)
{
    sl_checkpoint_t cp = { .version = SL_CHECKPOINT_VERSION, .pos = pos, .count = count, .at = 1000 * pos };
    snprintf (cp.head, sizeof cp.head, "%s", head);
    return cp;
}

//  Sign cp as sl_checkpoint_write does, without a store.
static void
s_sign (sl_checkpoint_t *cp, const sl_signkey_t *key)
{
    snprintf (cp->key_id, sizeof cp->key_id, "%s", key->id);
    sl_buf_t msg = { 0 };
    sl_checkpoint_message (&msg, cp);
    sl_signkey_sign (key, msg.data, msg.len, cp->signature);
    sl_buf_free (&msg);
}

Test (sl_checkpoint, a_signature_covers_every_field)
{
    s_keys_t k;
    s_keys (&k);
    sl_checkpoint_t cp = s_cp (7, 7, S_HEAD_A);
    cr_expect_eq (sl_checkpoint_check (&cp, &k.public), SL_CHECKPOINT_UNSIGNED);
    s_sign (&cp, &k.secret);
    cr_expect_eq (sl_checkpoint_check (&cp, &k.public), SL_CHECKPOINT_GOOD);
    cr_expect_eq (sl_checkpoint_check (&cp, &k.secret), SL_CHECKPOINT_GOOD, "the secret key checks too");
    cr_expect_eq (sl_checkpoint_check (&cp, NULL), SL_CHECKPOINT_UNCHECKED);
    cr_expect_eq (sl_checkpoint_check (&cp, &k.other), SL_CHECKPOINT_OTHER_KEY);
    //  Any field changed after signing: a bad signature.
    sl_checkpoint_t changed [6];
    for (int i = 0; i < 6; i++)
        changed [i] = cp;
    changed [0].pos++;
    changed [1].count--;
    changed [2].head [0] = 'b';
    changed [3].at++;
    changed [4].cut = true;
    changed [5].version = 1;
    for (int i = 0; i < 6; i++)
        cr_expect_eq (sl_checkpoint_check (&changed [i], &k.public), SL_CHECKPOINT_BAD, "field %d", i);
    //  Another key's id named: not the key given, whatever the signature.
    sl_checkpoint_t renamed = cp;
    snprintf (renamed.key_id, sizeof renamed.key_id, "%s", k.other.id);
    cr_expect_eq (sl_checkpoint_check (&renamed, &k.public), SL_CHECKPOINT_OTHER_KEY);
    s_keys_gone (&k);
}

Test (sl_checkpoint, a_json_line_reads_back_as_written)
{
    s_keys_t k;
    s_keys (&k);
    sl_checkpoint_t cp = s_cp (42, 10, S_HEAD_B);
    cp.cut = true;
    s_sign (&cp, &k.secret);
    sl_buf_t line = { 0 };
    sl_checkpoint_json (&cp, &line);
    sl_checkpoint_t back;
    cr_assert_eq (sl_checkpoint_parse (sl_buf_str (&line), &back), 0, "%s", sl_buf_cstr (&line));
    cr_expect_eq (back.version, cp.version);
    cr_expect_eq (back.pos, 42);
    cr_expect_eq (back.count, 10);
    cr_expect_eq (back.at, 42000);
    cr_expect (back.cut);
    cr_expect_str_eq (back.head, S_HEAD_B);
    cr_expect_str_eq (back.key_id, k.secret.id);
    cr_expect_str_eq (back.signature, cp.signature);
    cr_expect_eq (sl_checkpoint_check (&back, &k.public), SL_CHECKPOINT_GOOD, "the signature holds after the trip");
    //  Unsigned: null key and signature.
    sl_buf_reset (&line);
    sl_checkpoint_t plain = s_cp (3, 3, S_HEAD_A);
    sl_checkpoint_json (&plain, &line);
    cr_expect_not_null (strstr (sl_buf_cstr (&line), "\"key_id\":null,\"signature\":null"), "%s", sl_buf_cstr (&line));
    cr_assert_eq (sl_checkpoint_parse (sl_buf_str (&line), &back), 0);
    cr_expect_eq (sl_checkpoint_check (&back, &k.public), SL_CHECKPOINT_UNSIGNED);
    //  A line of version 1 (no version field) reads as version 1.
    cr_assert_eq (sl_checkpoint_parse (SL_STR_LIT ("{\"pos\":5,\"count\":5,\"head\":\"" S_HEAD_A "\",\"at\":1}"),
                                       &back), 0);
    cr_expect_eq (back.version, 1);
    //  Not a checkpoint: no position. A head too long for its place is
    //  "?", never a shorter text that might match.
    cr_expect_eq (sl_checkpoint_parse (SL_STR_LIT ("{\"head\":\"" S_HEAD_A "\"}"), &back), -1);
    cr_expect_eq (sl_checkpoint_parse (SL_STR_LIT ("not json"), &back), -1);
    cr_expect_eq (sl_checkpoint_parse (SL_STR_LIT ("{\"pos\":1,\"head\":\"" S_HEAD_A "x\"}"), &back), 0);
    cr_expect_str_eq (back.head, "?");
    sl_buf_free (&line);
    s_keys_gone (&k);
}

Test (sl_checkpoint, the_newest_in_a_file_is_the_highest_signed_with_the_key)
{
    s_keys_t k;
    s_keys (&k);
    char path [128];
    snprintf (path, sizeof path, "%s/checkpoints.jsonl", k.dir);
    sl_checkpoint_t cp;
    bool found = true;
    cr_expect_eq (sl_checkpoint_newest_in_file (path, &k.public, &cp, &found), 0, "no file: none, not a failure");
    cr_expect_not (found);
    cr_assert_eq (sl_checkpoint_appendable (path), 0);
    struct stat st;
    cr_assert_eq (stat (path, &st), 0, "made when absent");
    cr_expect_eq (st.st_mode & 0777, 0640);
    //  Siblings append out of order by a little; another key's line and an
    //  unsigned one come after the newest signed one.
    sl_checkpoint_t a = s_cp (20, 20, S_HEAD_A), b = s_cp (30, 10, S_HEAD_B), c = s_cp (25, 5, S_HEAD_A);
    sl_checkpoint_t stranger = s_cp (99, 69, S_HEAD_B), plain = s_cp (98, 68, S_HEAD_A);
    s_sign (&a, &k.secret);
    s_sign (&b, &k.secret);
    s_sign (&c, &k.secret);
    s_sign (&stranger, &k.other);
    sl_checkpoint_t *lines [] = { &a, &b, &c, &stranger, &plain };
    for (size_t i = 0; i < 5; i++)
        cr_assert_eq (sl_checkpoint_append (path, lines [i]), 0);
    cr_assert_eq (sl_checkpoint_newest_in_file (path, &k.public, &cp, &found), 0);
    cr_expect (found);
    cr_expect_eq (cp.pos, 30, "the highest position signed with the key");
    //  Without a key: every line whose signature is not bad, unsigned too.
    cr_assert_eq (sl_checkpoint_newest_in_file (path, NULL, &cp, &found), 0);
    cr_expect_eq (cp.pos, 99);
    //  A line changed after it was signed: no checkpoint to a reader
    //  holding the key.
    sl_checkpoint_t forged = b;
    forged.pos = 40;
    cr_assert_eq (sl_checkpoint_append (path, &forged), 0);
    cr_assert_eq (sl_checkpoint_newest_in_file (path, &k.public, &cp, &found), 0);
    cr_expect_eq (cp.pos, 30, "a line whose signature does not hold is no checkpoint");
    //  A long file: only its tail is read, its first (partial) line skipped.
    FILE *f = fopen (path, "a");
    cr_assert_not_null (f);
    for (int i = 0; i < 2000; i++)
        fprintf (f, "{\"note\":\"padding line %04d, not a checkpoint\"}\n", i);
    fclose (f);
    cr_assert_eq (sl_checkpoint_newest_in_file (path, &k.public, &cp, &found), 0);
    cr_expect_not (found, "the checkpoints are more than 64 KiB back: not read");
    sl_checkpoint_t late = s_cp (50, 20, S_HEAD_B);
    s_sign (&late, &k.secret);
    cr_assert_eq (sl_checkpoint_append (path, &late), 0);
    cr_assert_eq (sl_checkpoint_newest_in_file (path, &k.public, &cp, &found), 0);
    cr_expect (found);
    cr_expect_eq (cp.pos, 50);
    //  A file that cannot be written.
    char dir_path [160];
    snprintf (dir_path, sizeof dir_path, "%s/no/such/dir/cp.jsonl", k.dir);
    cr_expect_eq (sl_checkpoint_appendable (dir_path), -1);
    cr_expect_eq (sl_checkpoint_append (dir_path, &late), -1);
    s_keys_gone (&k);
}

//  --------------------------------------------------------------------------
//  In the store

typedef struct {
    sl_checkpoint_t cps [8];
    int count;
} s_rows_t;

static int
s_cp_row (void *arg, const sl_row_t *row)
{
    s_rows_t *r = arg;
    sl_checkpoint_from_row (&r->cps [r->count++], row);
    return r->count == 8;
}

static void
check_in_the_store (store_env_t *env)
{
    s_keys_t k;
    s_keys (&k);
    sl_store_t *store = store_env_fresh (env, "checkpoint");
    int64_t before = -1;
    cr_assert_eq (sl_checkpoint_before (store, 100, &before), 0);
    cr_expect_eq (before, 0, "none yet");
    sl_checkpoint_t a = s_cp (10, 10, S_HEAD_A), b = s_cp (30, 20, S_HEAD_B);
    cr_assert_eq (sl_checkpoint_write (store, &k.secret, &a), 0, "%s", sl_store_error (store));
    cr_expect_str_eq (a.key_id, k.secret.id, "signed as it was written");
    cr_expect_eq (sl_checkpoint_check (&a, &k.public), SL_CHECKPOINT_GOOD);
    cr_assert_eq (sl_checkpoint_write (store, NULL, &b), 0);
    cr_expect_str_eq (b.signature, "", "no key: unsigned");
    cr_assert_eq (sl_checkpoint_before (store, 30, &before), 0);
    cr_expect_eq (before, 10, "the one a checkpoint at 30 counts from");
    cr_assert_eq (sl_checkpoint_before (store, 31, &before), 0);
    cr_expect_eq (before, 30);
    //  Read back as written.
    s_rows_t r = { .count = 0 };
    cr_assert_eq (sl_store_query (store, "SELECT " SL_CHECKPOINT_COLUMNS " FROM checkpoints ORDER BY pos", NULL, 0,
                                  s_cp_row, &r), 0, "%s", sl_store_error (store));
    cr_assert_eq (r.count, 2);
    cr_expect_eq (r.cps [0].pos, 10);
    cr_expect_eq (r.cps [0].count, 10);
    cr_expect_eq (r.cps [0].version, SL_CHECKPOINT_VERSION);
    cr_expect_str_eq (r.cps [0].head, S_HEAD_A);
    cr_expect_eq (sl_checkpoint_check (&r.cps [0], &k.public), SL_CHECKPOINT_GOOD, "%s: the row's signature holds",
                  env->kind);
    cr_expect_eq (sl_checkpoint_check (&r.cps [1], &k.public), SL_CHECKPOINT_UNSIGNED);
    //  A cut at the position of an earlier checkpoint takes its place.
    sl_checkpoint_t cut = s_cp (30, 20, S_HEAD_B);
    cut.cut = true;
    cr_assert_eq (sl_checkpoint_write (store, &k.secret, &cut), 0, "%s", sl_store_error (store));
    r.count = 0;
    cr_assert_eq (sl_store_query (store, "SELECT " SL_CHECKPOINT_COLUMNS " FROM checkpoints ORDER BY pos", NULL, 0,
                                  s_cp_row, &r), 0);
    cr_assert_eq (r.count, 2, "one row a position");
    cr_expect (r.cps [1].cut);
    cr_expect_eq (sl_checkpoint_check (&r.cps [1], &k.public), SL_CHECKPOINT_GOOD);
    sl_store_close (&store);
    s_keys_gone (&k);
}

Test (sl_checkpoint, in_the_store_on_sqlite)
{
    store_env_sqlite (check_in_the_store);
}

Test (sl_checkpoint, in_the_store_on_postgresql)
{
    store_env_postgres (check_in_the_store);
}
