/*  Unit tests: common/cloud/sl_gcpkey - a service-account key file read
    and checked (each fault named, never the key), the JWT-bearer grant's
    assertion: RS256 with the key (verified here with its public key),
    header alg RS256, claims iss, scope, aud (the key's token_uri), iat
    and exp one hour later; and the grant's form. google-auth-library's
    own assertion is compared in tests/integration/test_cloud.c. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/base/sl_buf.h"
#include "common/cloud/sl_gcpkey.h"
#include "tests/jwt_fixture.h"

#define EMAIL "sluice@project-1.iam.gserviceaccount.com"
#define TOKEN_URI "https://oauth2.googleapis.com/token"

//  A key file's JSON as Google's console writes it, with the fixture's key.
static char *
s_key_json (const jwt_pair_t *pair, const char *type, const char *token_uri)
{
    json_t *key = json_pack ("{s:s, s:s, s:s, s:s, s:s, s:s}",
                             "type", type, "project_id", "project-1", "private_key_id", "0123abcd",
                             "private_key", pair->private_pem, "client_email", EMAIL, "token_uri", token_uri);
    char *text = json_dumps (key, 0);
    json_decref (key);
    return text;
}

Test (sl_gcpkey, the_assertion_google_expects)
{
    jwt_pair_t pair;
    jwt_fixture_make (&pair, true);
    char *json = s_key_json (&pair, "service_account", TOKEN_URI);
    char why [300];
    sl_gcpkey_t *key = sl_gcpkey_parse (sl_str (json), why, sizeof why);
    cr_assert_not_null (key, "%s", why);
    cr_expect_str_eq (sl_gcpkey_email (key), EMAIL);
    cr_expect_str_eq (sl_gcpkey_token_uri (key), TOKEN_URI);
    char *assertion = sl_gcpkey_assertion (key, "https://www.googleapis.com/auth/cloud-platform", 1700000000, why, sizeof why);
    cr_assert_not_null (assertion, "%s", why);
    jwt_t *jwt = NULL;
    cr_assert_eq (jwt_decode (&jwt, assertion, (const unsigned char *) pair.public_pem, (int) strlen (pair.public_pem)), 0,
                  "signed with the key");
    cr_expect_eq (jwt_get_alg (jwt), JWT_ALG_RS256);
    cr_expect_str_eq (jwt_get_grant (jwt, "iss"), EMAIL);
    cr_expect_str_eq (jwt_get_grant (jwt, "scope"), "https://www.googleapis.com/auth/cloud-platform");
    cr_expect_str_eq (jwt_get_grant (jwt, "aud"), TOKEN_URI);
    cr_expect_eq (jwt_get_grant_int (jwt, "iat"), 1700000000);
    cr_expect_eq (jwt_get_grant_int (jwt, "exp"), 1700003600);
    cr_expect_null (jwt_get_grant (jwt, "sub"));
    jwt_free (jwt);
    //  Another key does not verify it.
    jwt_pair_t other;
    jwt_fixture_make (&other, true);
    cr_expect_neq (jwt_decode (&jwt, assertion, (const unsigned char *) other.public_pem, (int) strlen (other.public_pem)), 0);
    jwt_fixture_free (&other);

    sl_buf_t form = { 0 };
    sl_gcpkey_grant (&form, assertion);
    char want [4096];
    snprintf (want, sizeof want, "grant_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3Agrant-type%%3Ajwt-bearer&assertion=%s", assertion);
    cr_expect_str_eq (sl_buf_cstr (&form), want, "a JWT's characters need no escaping");
    sl_buf_free (&form);
    free (assertion);
    sl_gcpkey_destroy (&key);
    sl_gcpkey_destroy (&key);
    free (json);
    jwt_fixture_free (&pair);
}

Test (sl_gcpkey, faulty_keys_named)
{
    jwt_pair_t pair;
    jwt_fixture_make (&pair, true);
    char why [300];
    char *user = s_key_json (&pair, "authorized_user", TOKEN_URI);
    cr_expect_null (sl_gcpkey_parse (sl_str (user), why, sizeof why));
    cr_expect_str_eq (why, "the key is not a service account's (\"type\": \"service_account\")");
    char *ftp = s_key_json (&pair, "service_account", "ftp://x/token");
    cr_expect_null (sl_gcpkey_parse (sl_str (ftp), why, sizeof why));
    cr_expect_str_eq (why, "the key's token_uri is not an http(s) URL");
    cr_expect_null (sl_gcpkey_parse (SL_STR_LIT ("{\"type\":\"service_account\",\"client_email\":\"a\"}"), why, sizeof why));
    cr_expect_str_eq (why, "the key lacks client_email, private_key or token_uri");
    cr_expect_null (sl_gcpkey_parse (SL_STR_LIT ("{\"type\":\"service_account\",\"client_email\":\"a\","
                                                 "\"token_uri\":\"https://t\",\"private_key\":\"not a key\"}"),
                                     why, sizeof why));
    cr_expect_str_eq (why, "the key's private_key is not a PEM private key");
    cr_expect_null (sl_gcpkey_parse (SL_STR_LIT ("[1]"), why, sizeof why));
    cr_expect_str_eq (why, "the key is not a JSON object");
    cr_expect_null (sl_gcpkey_load ("/nonexistent/key.json", why, sizeof why));
    cr_expect_str_eq (why, "the key file /nonexistent/key.json cannot be read: No such file or directory");
    //  A file with a faulty key: the file named, nothing of its contents.
    char path [] = "/tmp/sl-gcpkey-XXXXXX";
    int fd = mkstemp (path);
    cr_assert_geq (fd, 0);
    cr_assert_eq (write (fd, user, strlen (user)), (ssize_t) strlen (user));
    close (fd);
    cr_expect_null (sl_gcpkey_load (path, why, sizeof why));
    cr_expect (strstr (why, path) && strstr (why, "not a service account's"), "%s", why);
    cr_expect_null (strstr (why, "PRIVATE KEY"));
    unlink (path);
    free (user);
    free (ftp);
    jwt_fixture_free (&pair);
}

Test (sl_gcpkey, a_key_that_cannot_sign_rs256)
{
    //  An EC key in a PEM is read, but cannot sign RS256.
    jwt_pair_t ec;
    jwt_fixture_make (&ec, false);
    char *json = s_key_json (&ec, "service_account", TOKEN_URI);
    char why [300];
    sl_gcpkey_t *key = sl_gcpkey_parse (sl_str (json), why, sizeof why);
    cr_assert_not_null (key, "%s", why);
    char *assertion = sl_gcpkey_assertion (key, "s", 1700000000, why, sizeof why);
    cr_expect_null (assertion);
    cr_expect (strstr (why, "cannot sign RS256"), "%s", why);
    free (assertion);
    sl_gcpkey_destroy (&key);
    free (json);
    jwt_fixture_free (&ec);
}
