/*  Unit tests: services/keygen/sl_keygen_kube - one Secret per role, each
    holding that role's secret key and no other, and every public key; the
    files it carries are the key directory's, byte for byte, so a pod that
    mounts one loads its key; the audit's alone also carries its signing
    key; bad namespaces and damaged keys write nothing. */
#include <criterion/criterion.h>
#include <sodium.h>
#include <string.h>
#include <unistd.h>

#include "common/bus/sl_keys.h"
#include "common/identity/sl_signkey.h"
#include "services/keygen/sl_keygen.h"
#include "services/keygen/sl_keygen_kube.h"
#include "tests/secretfile.h"
#include "tests/unit/keydir.h"

#define ROLES 6
#define PUBLIC_FILES 8                  //  the six roles, tap and tap-meta

//  The Secret of role in text written out as a directory, as a pod mounts
//  it; returns how many files it held, and how many of them were secret.
static int
s_mount (const char *text, const char *role, const char *mount, int *secrets)
{
    char header [64];
    snprintf (header, sizeof header, "  name: sluice-keys-%s\n", role);
    const char *doc = strstr (text, header);
    cr_assert_not_null (doc, "a Secret for %s", role);
    const char *end = strstr (doc, "\n---\n");
    const char *data = strstr (doc, "\ndata:\n");
    cr_assert (data && (!end || data < end), "%s's Secret has data", role);
    const char *line = data + strlen ("\ndata:\n");
    int files = 0;
    *secrets = 0;
    while (*line == ' ' && (!end || line < end)) {
        const char *colon = strstr (line, ": ");
        const char *eol = strchr (line, '\n');
        cr_assert (colon && eol && colon < eol);
        char file [64], b64 [4096];
        snprintf (file, sizeof file, "%.*s", (int) (colon - line - 2), line + 2);
        snprintf (b64, sizeof b64, "%.*s", (int) (eol - colon - 2), colon + 2);
        secretfile_write (mount, file, b64);
        files++;
        *secrets += strstr (file, "_secret") != NULL;
        line = eol + 1;
    }
    return files;
}

Test (sl_keygen_kube, each_role_mounts_its_own_key_and_every_public_one)
{
    char dir [64];
    keydir_make (dir, sizeof dir);
    sl_buf_t out = { 0 };
    char *error = NULL;
    cr_assert_eq (sl_keygen_kube_secrets (dir, "sluice-prod", &out, &error), 0, "%s", error ? error : "");
    const char *text = sl_buf_cstr (&out);
    int secrets_docs = 0;
    for (const char *p = text; (p = strstr (p, "\nkind: Secret\n")); p++)
        secrets_docs++;
    cr_expect_eq (secrets_docs, ROLES, "one Secret per role");
    cr_expect_not_null (strstr (text, "  namespace: sluice-prod\n"));
    cr_expect_null (strstr (text, "sluice-keys-tap"), "taps are not processes: no Secret of their own");
    for (size_t i = 0; sl_keygen_role (i); i++) {
        const char *role = sl_keygen_role (i);
        char mount [64];
        snprintf (mount, sizeof mount, "/tmp/sluice-mount-XXXXXX");
        cr_assert_not_null (mkdtemp (mount));
        int secrets = 0;
        cr_expect_eq (s_mount (text, role, mount, &secrets), PUBLIC_FILES + 1, "%s: its secret and the public keys",
                      role);
        cr_expect_eq (secrets, 1, "%s's Secret holds one secret key", role);
        //  What the process does with --keys: its own secret, then every public key.
        bool loose;
        zcert_t *cert = sl_keys_load_secret (mount, role, &loose, &error);
        cr_expect_not_null (cert, "%s loads its key from the mounted Secret: %s", role, error ? error : "");
        zcert_destroy (&cert);
        sl_keys_t *keys = sl_keys_new ();
        cr_expect_eq (sl_keys_load (keys, mount, &error), PUBLIC_FILES);
        cr_expect_str_eq (sl_keys_skipped (keys), "", "every public file is whole");
        char own [SL_KEY_TXT_SIZE];
        memcpy (own, sl_keys_named (keys, role)->public_txt, SL_KEY_TXT_SIZE);
        sl_keys_destroy (&keys);
        //  The same key as the directory's.
        keys = sl_keys_new ();
        cr_assert_geq (sl_keys_load (keys, dir, &error), 0);
        cr_expect_str_eq (own, sl_keys_named (keys, role)->public_txt, "%s is the directory's key", role);
        sl_keys_destroy (&keys);
        keydir_remove (mount);
    }
    sl_buf_free (&out);
    keydir_remove (dir);
}

Test (sl_keygen_kube, namespaces_are_rfc1123_labels)
{
    const char *good [] = { "sluice", "a", "team-7", "0abc" };
    const char *bad [] = { "", "Sluice", "-a", "a-", "a_b", "a.b",
                           "a123456789012345678901234567890123456789012345678901234567890123" };
    for (size_t i = 0; i < sizeof good / sizeof good [0]; i++)
        cr_expect (sl_keygen_kube_namespace_valid (good [i]), "%s", good [i]);
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        cr_expect_not (sl_keygen_kube_namespace_valid (bad [i]), "%s", bad [i]);
    cr_expect_not (sl_keygen_kube_namespace_valid (NULL));
    char dir [64];
    keydir_make (dir, sizeof dir);
    sl_buf_t out = { 0 };
    char *error = NULL;
    cr_expect_eq (sl_keygen_kube_secrets (dir, "Bad", &out, &error), -1);
    cr_expect_not_null (error && strstr (error, "namespace"));
    cr_expect_eq (out.len, 0, "nothing written");
    free (error);
    sl_buf_free (&out);
    keydir_remove (dir);
}

Test (sl_keygen_kube, a_missing_or_damaged_role_key_writes_nothing)
{
    char dir [64];
    keydir_make (dir, sizeof dir);
    char path [512];
    snprintf (path, sizeof path, "%s/judge.key_secret", dir);
    cr_assert_eq (unlink (path), 0);
    sl_buf_t out = { 0 };
    char *error = NULL;
    cr_expect_eq (sl_keygen_kube_secrets (dir, "sluice", &out, &error), -1);
    cr_expect_not_null (error && strstr (error, "judge"), "%s", error ? error : "");
    cr_expect_eq (out.len, 0, "no Secret without the judge's key");
    free (error);
    error = NULL;
    keydir_write (dir, "judge.key_secret", "not a certificate\n");
    cr_expect_eq (sl_keygen_kube_secrets (dir, "sluice", &out, &error), -1, "a damaged key is refused");
    cr_expect_eq (out.len, 0);
    free (error);
    sl_buf_free (&out);
    keydir_remove (dir);
}

Test (sl_keygen_kube, the_audits_secret_carries_its_signing_key)
{
    char dir [64];
    keydir_make (dir, sizeof dir);
    sl_buf_t out = { 0 }, report = { 0 };
    char *error = NULL;
    cr_assert_eq (sl_signkey_make (dir, "audit", &report, &error), 0, "%s", error ? error : "");
    cr_assert_eq (sl_keygen_kube_secrets (dir, "sluice", &out, &error), 0, "%s", error ? error : "");
    for (size_t i = 0; sl_keygen_role (i); i++) {
        const char *role = sl_keygen_role (i);
        bool audit = strcmp (role, "audit") == 0;
        char mount [64];
        snprintf (mount, sizeof mount, "/tmp/sluice-mount-XXXXXX");
        cr_assert_not_null (mkdtemp (mount));
        int secrets = 0;
        cr_expect_eq (s_mount (sl_buf_cstr (&out), role, mount, &secrets), PUBLIC_FILES + 1 + (audit ? 2 : 0),
                      "%s", role);
        cr_expect_eq (secrets, audit ? 2 : 1, "%s: the signing key is the audit's alone", role);
        //  What the audit does with --signing-key: the mounted key signs
        //  what the directory's public key checks.
        if (audit) {
            char path [128];
            sl_signkey_t secret, public;
            snprintf (path, sizeof path, "%s/audit.sign_secret", mount);
            cr_expect_eq (sl_signkey_load_secret (&secret, path, &error), 0, "%s", error ? error : "");
            snprintf (path, sizeof path, "%s/audit.sign", dir);
            cr_assert_eq (sl_signkey_load_public (&public, path, &error), 0);
            char sig [SL_SIGNKEY_SIG_HEX];
            sl_signkey_sign (&secret, "checkpoint", 10, sig);
            cr_expect (sl_signkey_check (&public, "checkpoint", 10, sig));
        }
        keydir_remove (mount);
    }
    sl_buf_free (&report);
    sl_buf_free (&out);
    keydir_remove (dir);
}
