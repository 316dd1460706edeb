/*  Unit tests: common/identity/sl_signkey (an Ed25519 signing key in a
    key directory: made once and kept, read back, a signature made with
    the secret and checked with the public key alone). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/identity/sl_signkey.h"

static char s_dir [] = "/tmp/sl_signkey_XXXXXX";
static char s_public [80], s_secret [80];

static void
s_setup (void)
{
    cr_assert_not_null (mkdtemp (s_dir));
    snprintf (s_public, sizeof s_public, "%s/audit.sign", s_dir);
    snprintf (s_secret, sizeof s_secret, "%s/audit.sign_secret", s_dir);
}

static void
s_teardown (void)
{
    unlink (s_public);
    unlink (s_secret);
    rmdir (s_dir);
}

Test (sl_signkey, a_key_made_once_signs_and_its_public_half_checks, .init = s_setup, .fini = s_teardown)
{
    sl_buf_t report = { 0 };
    char *error = NULL;
    cr_assert_eq (sl_signkey_make (s_dir, "audit", &report, &error), 0, "%s", error ? error : "");
    cr_expect_not_null (strstr (sl_buf_cstr (&report), "created"), "%s", sl_buf_cstr (&report));
    struct stat st;
    cr_assert_eq (stat (s_secret, &st), 0);
    cr_expect_eq (st.st_mode & 0777, 0600, "the secret is the owner's alone");
    sl_signkey_t signer, checker;
    cr_assert_eq (sl_signkey_load_secret (&signer, s_secret, &error), 0, "%s", error ? error : "");
    cr_expect (signer.has_secret);
    cr_assert_eq (sl_signkey_load_public (&checker, s_public, &error), 0, "%s", error ? error : "");
    cr_expect_not (checker.has_secret);
    cr_expect_str_eq (signer.id, checker.id, "one key, one id");
    cr_expect_eq (strlen (checker.id), SL_SIGNKEY_ID_HEX - 1);
    char sig [SL_SIGNKEY_SIG_HEX];
    const char msg [] = "checkpoint 42 head 9f86d081";
    sl_signkey_sign (&signer, msg, sizeof msg - 1, sig);
    cr_expect_eq (strlen (sig), SL_SIGNKEY_SIG_HEX - 1);
    cr_expect (sl_signkey_check (&checker, msg, sizeof msg - 1, sig));
    cr_expect_not (sl_signkey_check (&checker, msg, sizeof msg - 2, sig), "another message");
    sig [0] = sig [0] == '0' ? '1' : '0';
    cr_expect_not (sl_signkey_check (&checker, msg, sizeof msg - 1, sig), "another signature");
    cr_expect_not (sl_signkey_check (&checker, msg, sizeof msg - 1, "zz"), "not a signature");
    //  Made again: the key that exists is kept.
    uint8_t before [SL_SIGNKEY_PUBLIC];
    memcpy (before, checker.public_key, sizeof before);
    sl_buf_reset (&report);
    cr_assert_eq (sl_signkey_make (s_dir, "audit", &report, &error), 0);
    cr_expect_not_null (strstr (sl_buf_cstr (&report), "kept"), "%s", sl_buf_cstr (&report));
    cr_assert_eq (sl_signkey_load_public (&checker, s_public, &error), 0);
    cr_expect_eq (memcmp (before, checker.public_key, sizeof before), 0);
    sl_buf_free (&report);
}

Test (sl_signkey, a_file_that_is_not_a_key_is_refused_with_why, .init = s_setup, .fini = s_teardown)
{
    sl_signkey_t key;
    char *error = NULL;
    cr_expect_eq (sl_signkey_load_public (&key, s_public, &error), -1, "no file");
    cr_assert_not_null (error);
    free (error);
    error = NULL;
    FILE *f = fopen (s_public, "w");
    cr_assert_not_null (f);
    fputs ("not hex at all\n", f);
    fclose (f);
    cr_expect_eq (sl_signkey_load_public (&key, s_public, &error), -1);
    cr_assert_not_null (error);
    free (error);
}
