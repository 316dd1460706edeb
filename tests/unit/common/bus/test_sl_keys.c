/*  Unit tests: common/bus/sl_keys - reading a key directory; what is skipped,
    and why a secret is refused. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bus/sl_keys.h"
#include "tests/unit/keydir.h"

Test (sl_keys, the_default_set_loads_with_roles_and_access)
{
    char dir [64];
    keydir_make (dir, sizeof dir);
    sl_keys_t *keys = sl_keys_new ();
    char *error = NULL;
    cr_assert_eq (sl_keys_load (keys, dir, &error), 8, "six roles (five stages and the audit) and two taps");
    cr_expect_str_eq (sl_keys_skipped (keys), "");
    const char *roles [] = { "gateway", "ingest", "aggregator", "judge", "emitter" };
    for (int i = 0; i < 5; i++) {
        const sl_key_t *k = sl_keys_named (keys, roles [i]);
        cr_assert_not_null (k, "%s", roles [i]);
        cr_expect_str_eq (k->role, roles [i]);
        cr_expect_eq (k->access, SL_ACCESS_NONE);
        cr_expect_eq (sl_keys_find (keys, k->public_key), k, "found by its public key");
    }
    cr_expect_eq (sl_keys_named (keys, "tap")->access, SL_ACCESS_FULL);
    cr_expect_eq (sl_keys_named (keys, "tap-meta")->access, SL_ACCESS_METADATA);
    cr_expect_str_eq (sl_keys_named (keys, "tap-meta")->role, "tap");
    uint8_t other [SL_KEY_SIZE] = { 1 };
    cr_expect_null (sl_keys_find (keys, other));
    sl_keys_destroy (&keys);
    sl_keys_destroy (&keys);            //  twice is safe
    keydir_remove (dir);
}

//  Certificates that do not fit are skipped, each with its reason; the
//  others still load.
Test (sl_keys, files_that_do_not_fit_are_skipped_with_a_reason)
{
    char dir [64];
    keydir_make (dir, sizeof dir);
    //  A public certificate copied under another name: the name inside
    //  does not match the file, and its key is already held.
    char judge [512], text [2048];
    snprintf (judge, sizeof judge, "%s/judge.key", dir);
    FILE *f = fopen (judge, "r");
    size_t n = fread (text, 1, sizeof text - 1, f);
    text [n] = 0;
    fclose (f);
    keydir_write (dir, "copy.key", text);
    keydir_write (dir, "garbage.key", "this is not a certificate\n");
    keydir_write (dir, "Bad!Name.key", text);
    keydir_write (dir, ".hidden.key", text);
    keydir_write (dir, "notes.txt", "ignored\n");
    const char *pub = "    public-key = \"rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7\"\n";
    char cert [512];
    snprintf (cert, sizeof cert, "metadata\n    name = \"wizard\"\n    role = \"wizard\"\ncurve\n%s", pub);
    keydir_write (dir, "wizard.key", cert);
    snprintf (cert, sizeof cert, "metadata\n    name = \"emitter2\"\n    role = \"emitter\"\ncurve\n%s", pub);
    keydir_write (dir, "emitter2.key", cert);
    snprintf (cert, sizeof cert, "metadata\n    name = \"short\"\n    role = \"tap\"\ncurve\n"
                                 "    public-key = \"tooshort\"\n");
    keydir_write (dir, "short.key", cert);
    //  A tap key without an access reads as metadata only.
    snprintf (cert, sizeof cert, "metadata\n    name = \"quiet\"\n    role = \"tap\"\ncurve\n%s", pub);
    keydir_write (dir, "quiet.key", cert);

    sl_keys_t *keys = sl_keys_new ();
    char *error = NULL;
    cr_assert_eq (sl_keys_load (keys, dir, &error), 9, "the eight and quiet");
    const char *skipped = sl_keys_skipped (keys);
    cr_expect_not_null (strstr (skipped, "copy.key: its metadata name is not its file name"), "%s", skipped);
    cr_expect_not_null (strstr (skipped, "garbage.key:"), "%s", skipped);
    cr_expect_not_null (strstr (skipped, "Bad!Name.key: not a valid key name"), "%s", skipped);
    cr_expect_not_null (strstr (skipped, "wizard.key: unknown role"), "%s", skipped);
    cr_expect_not_null (strstr (skipped, "emitter2.key: a stage's key must be named after its role"), "%s", skipped);
    cr_expect_not_null (strstr (skipped, "short.key: no valid curve public-key"), "%s", skipped);
    cr_expect_null (strstr (skipped, "hidden"), "dotfiles are not read");
    cr_expect_null (strstr (skipped, "notes"), "only *.key files are read");
    cr_expect_eq (sl_keys_named (keys, "quiet")->access, SL_ACCESS_METADATA);
    cr_expect_null (sl_keys_named (keys, "copy"));
    sl_keys_destroy (&keys);
    keydir_remove (dir);
}

Test (sl_keys, a_directory_that_cannot_be_read_is_an_error)
{
    sl_keys_t *keys = sl_keys_new ();
    char *error = NULL;
    cr_expect_eq (sl_keys_load (keys, "/nonexistent/sluice-keys", &error), -1);
    cr_assert_not_null (error);
    cr_expect_not_null (strstr (error, "/nonexistent/sluice-keys"));
    free (error);
    sl_keys_destroy (&keys);
}

Test (sl_keys, a_secret_loads_only_when_whole_and_its_own)
{
    char dir [64];
    keydir_make (dir, sizeof dir);
    bool loose = true;
    char *error = NULL;
    zcert_t *cert = sl_keys_load_secret (dir, "judge", &loose, &error);
    cr_assert_not_null (cert, "%s", error ? error : "");
    cr_expect_not (loose, "keygen writes secrets 0600");
    cr_expect_str_eq (zcert_meta (cert, "role"), "judge");
    zcert_destroy (&cert);

    //  Missing: the error says how to make it.
    cr_expect_null (sl_keys_load_secret (dir, "nobody", &loose, &error));
    cr_expect_not_null (strstr (error, "sluice-keygen --dir"), "%s", error);
    free (error);
    //  A name that is not one.
    cr_expect_null (sl_keys_load_secret (dir, "../judge", &loose, &error));
    free (error);

    //  A secret key that is not the public key's.
    char path [512], text [2048];
    snprintf (path, sizeof path, "%s/judge.key_secret", dir);
    FILE *f = fopen (path, "r");
    size_t n = fread (text, 1, sizeof text - 1, f);
    text [n] = 0;
    fclose (f);
    char *secret = strstr (text, "secret-key = \"");
    cr_assert_not_null (secret);
    secret [14] = secret [14] == 'a' ? 'b' : 'a';
    keydir_write (dir, "judge.key_secret", text);
    cr_expect_null (sl_keys_load_secret (dir, "judge", &loose, &error));
    cr_expect_not_null (strstr (error, "does not belong"), "%s", error);
    free (error);

    //  Readable by others: loaded, and flagged so the process warns.
    snprintf (path, sizeof path, "%s/ingest.key_secret", dir);
    cr_assert_eq (chmod (path, 0644), 0);
    cert = sl_keys_load_secret (dir, "ingest", &loose, &error);
    cr_expect_not_null (cert);
    cr_expect (loose);
    zcert_destroy (&cert);
    keydir_remove (dir);
}

Test (sl_keys, names)
{
    cr_expect (sl_key_name_valid ("tap-meta"));
    cr_expect (sl_key_name_valid ("alice_2"));
    cr_expect (sl_key_name_valid ("0"));
    cr_expect_not (sl_key_name_valid (""));
    cr_expect_not (sl_key_name_valid ("-x"));
    cr_expect_not (sl_key_name_valid ("Alice"));
    cr_expect_not (sl_key_name_valid ("a/b"));
    cr_expect_not (sl_key_name_valid ("a.key"));
    cr_expect_not (sl_key_name_valid ("abcdefghijklmnopqrstuvwxyz0123456"), "33 characters");
    cr_expect (sl_key_role_is_stage ("emitter"));
    cr_expect_not (sl_key_role_is_stage ("tap"));
    cr_expect_eq (sl_access_parse ("full"), SL_ACCESS_FULL);
    cr_expect_eq (sl_access_parse ("FULL"), SL_ACCESS_METADATA, "anything else is the lesser access");
    cr_expect_eq (sl_access_parse (NULL), SL_ACCESS_METADATA);
}
