/*  Unit tests: services/keygen/sl_keygen - the default set is made once
    and kept; taps are added with their access; a rotation replaces one key
    and nothing else; damage is reported, not papered over. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bus/sl_keys.h"
#include "services/keygen/sl_keygen.h"
#include "tests/unit/keydir.h"

static void
s_public (const char *dir, const char *name, char *out)
{
    sl_keys_t *keys = sl_keys_new ();
    char *error = NULL;
    cr_assert_geq (sl_keys_load (keys, dir, &error), 0);
    const sl_key_t *k = sl_keys_named (keys, name);
    cr_assert_not_null (k, "%s is there", name);
    memcpy (out, k->public_txt, SL_KEY_TXT_SIZE);
    sl_keys_destroy (&keys);
}

static mode_t
s_mode (const char *dir, const char *file)
{
    char path [512];
    snprintf (path, sizeof path, "%s/%s", dir, file);
    struct stat st;
    cr_assert_eq (stat (path, &st), 0, "%s exists", path);
    return st.st_mode & 0777;
}

Test (sl_keygen, made_once_then_kept)
{
    char base [64], dir [96];
    snprintf (base, sizeof base, "/tmp/sluice-keygen-XXXXXX");
    cr_assert_not_null (mkdtemp (base));
    snprintf (dir, sizeof dir, "%s/a/keys", base);          //  parents are made
    sl_buf_t report = { 0 };
    char *error = NULL;
    cr_assert_eq (sl_keygen_ensure (dir, &report, &error), 0, "%s", error ? error : "");
    cr_expect_not_null (strstr (sl_buf_cstr (&report), "created judge\n"));
    cr_expect_not_null (strstr (sl_buf_cstr (&report), "created tap-meta\n"));
    cr_expect_not_null (strstr (sl_buf_cstr (&report), "created audit\n"), "the audit's key, with the roles'");
    cr_expect_eq (s_mode (dir, "."), 0700, "the directory is private");
    cr_expect_eq (s_mode (dir, "judge.key_secret"), 0600);
    cr_expect_eq (s_mode (dir, "judge.key"), 0644);
    char before [SL_KEY_TXT_SIZE], after [SL_KEY_TXT_SIZE];
    s_public (dir, "judge", before);
    sl_buf_reset (&report);
    cr_assert_eq (sl_keygen_ensure (dir, &report, &error), 0);
    cr_expect_null (strstr (sl_buf_cstr (&report), "created"), "%s", sl_buf_cstr (&report));
    cr_expect_not_null (strstr (sl_buf_cstr (&report), "kept judge\n"));
    s_public (dir, "judge", after);
    cr_expect_str_eq (before, after, "an existing key is kept");
    sl_buf_free (&report);
    keydir_remove (base);
}

Test (sl_keygen, taps_keep_their_access)
{
    char dir [64];
    keydir_make (dir, sizeof dir);
    sl_buf_t report = { 0 };
    char *error = NULL;
    cr_assert_eq (sl_keygen_tap (dir, "alice", SL_ACCESS_METADATA, &report, &error), 0);
    cr_assert_eq (sl_keygen_tap (dir, "alice", SL_ACCESS_METADATA, &report, &error), 0, "kept");
    cr_expect_eq (sl_keygen_tap (dir, "alice", SL_ACCESS_FULL, &report, &error), -1,
                  "a metadata key does not become a full one by asking again");
    cr_expect_not_null (strstr (error, "access metadata"), "%s", error);
    free (error);
    cr_expect_eq (sl_keygen_tap (dir, "judge", SL_ACCESS_FULL, &report, &error), -1, "a stage's name");
    free (error);
    cr_expect_eq (sl_keygen_tap (dir, "../x", SL_ACCESS_FULL, &report, &error), -1, "not a name");
    free (error);
    sl_keys_t *keys = sl_keys_new ();
    cr_assert_eq (sl_keys_load (keys, dir, &error), 9, "the default set and alice");
    cr_expect_eq (sl_keys_named (keys, "alice")->access, SL_ACCESS_METADATA);
    cr_expect_str_eq (sl_keys_named (keys, "alice")->role, "tap");
    sl_keys_destroy (&keys);
    sl_buf_free (&report);
    keydir_remove (dir);
}

Test (sl_keygen, a_rotation_replaces_one_key)
{
    char dir [64];
    keydir_make (dir, sizeof dir);
    char judge [SL_KEY_TXT_SIZE], ingest [SL_KEY_TXT_SIZE], meta [SL_KEY_TXT_SIZE], after [SL_KEY_TXT_SIZE];
    s_public (dir, "judge", judge);
    s_public (dir, "ingest", ingest);
    s_public (dir, "tap-meta", meta);
    sl_buf_t report = { 0 };
    char *error = NULL;
    cr_assert_eq (sl_keygen_rotate (dir, "judge", &report, &error), 0);
    cr_assert_eq (sl_keygen_rotate (dir, "tap-meta", &report, &error), 0);
    s_public (dir, "judge", after);
    cr_expect_str_neq (after, judge, "a new judge key");
    s_public (dir, "ingest", after);
    cr_expect_str_eq (after, ingest, "the others stay");
    s_public (dir, "tap-meta", after);
    cr_expect_str_neq (after, meta);
    bool loose;
    zcert_t *cert = sl_keys_load_secret (dir, "tap-meta", &loose, &error);
    cr_assert_not_null (cert, "the new secret matches the new public key");
    cr_expect_str_eq (zcert_meta (cert, "access"), "metadata", "a rotated tap keeps its access");
    zcert_destroy (&cert);
    cr_expect_eq (s_mode (dir, "judge.key_secret"), 0600);
    cr_expect_eq (sl_keygen_rotate (dir, "nobody", &report, &error), -1, "no such tap");
    free (error);
    //  No temporary file stays behind.
    char cmd [256];
    snprintf (cmd, sizeof cmd, "ls -A '%s' | grep -q '^\\.'", dir);
    cr_expect_neq (system (cmd), 0);
    sl_buf_free (&report);
    keydir_remove (dir);
}

Test (sl_keygen, a_damaged_key_is_reported_and_a_rotation_repairs_it)
{
    char dir [64];
    keydir_make (dir, sizeof dir);
    keydir_write (dir, "emitter.key_secret", "metadata\n    name = \"emitter\"\n");
    sl_buf_t report = { 0 };
    char *error = NULL;
    cr_expect_eq (sl_keygen_ensure (dir, &report, &error), -1, "never silently replaced");
    cr_expect_not_null (strstr (error, "emitter.key_secret"), "%s", error);
    free (error);
    error = NULL;
    cr_assert_eq (sl_keygen_rotate (dir, "emitter", &report, &error), 0);
    cr_expect_eq (sl_keygen_ensure (dir, &report, &error), 0, "%s", error ? error : "");
    //  A public key with no secret: somebody else's directory, left alone.
    char path [256];
    snprintf (path, sizeof path, "%s/judge.key_secret", dir);
    cr_assert_eq (unlink (path), 0);
    cr_expect_eq (sl_keygen_ensure (dir, &report, &error), -1);
    free (error);
    sl_buf_free (&report);
    keydir_remove (dir);
}
