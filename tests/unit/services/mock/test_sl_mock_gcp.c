/*  Unit tests: services/mock/sl_mock_gcp - the mock's token endpoint
    takes the grant sluice's own signer makes with the key it was given
    and refuses one signed with another key, one for another audience,
    an expired one, an HS256 one made with the public key as its secret
    and a malformed form; its metadata server wants Metadata-Flavor; only
    the tokens it issued are taken, until they expire. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cloud/sl_gcpkey.h"
#include "services/mock/sl_mock_gcp.h"
#include "services/mock/sl_mock_provider.h"
#include "tests/jwt_fixture.h"

#define EMAIL "sluice@project-1.iam.gserviceaccount.com"
#define URI "http://127.0.0.1:9/token"
#define SCOPE "https://www.googleapis.com/auth/cloud-platform"

static void
s_key_file (const jwt_pair_t *pair, const char *uri, char *path, size_t size)
{
    json_t *key = json_pack ("{s:s, s:s, s:s, s:s}", "type", "service_account", "private_key", pair->private_pem,
                             "client_email", EMAIL, "token_uri", uri);
    snprintf (path, size, "/tmp/sl-mockgcp-XXXXXX");
    int fd = mkstemp (path);
    cr_assert_geq (fd, 0);
    close (fd);
    cr_assert_eq (json_dump_file (key, path, 0), 0);
    json_decref (key);
}

//  The grant sluice's signer makes with the key in path, at now.
static int
s_grant (sl_mock_gcp_t *mock, const char *path, time_t signed_at, time_t now, sl_buf_t *answer)
{
    char why [300];
    sl_gcpkey_t *key = sl_gcpkey_load (path, why, sizeof why);
    cr_assert_not_null (key, "%s", why);
    char *assertion = sl_gcpkey_assertion (key, SCOPE, signed_at, why, sizeof why);
    cr_assert_not_null (assertion, "%s", why);
    sl_buf_t form = { 0 };
    sl_gcpkey_grant (&form, assertion);
    sl_buf_reset (answer);
    int status = sl_mock_gcp_grant (mock, sl_buf_str (&form), now, answer);
    sl_buf_free (&form);
    free (assertion);
    sl_gcpkey_destroy (&key);
    return status;
}

static void
s_bearer (const sl_buf_t *answer, char *out, size_t size)
{
    json_error_t err;
    json_t *root = json_loadb (answer->data, answer->len, 0, &err);
    cr_assert_not_null (root, "%.*s", (int) answer->len, answer->data);
    snprintf (out, size, "Bearer %s", json_string_value (json_object_get (root, "access_token")));
    json_decref (root);
}

Test (sl_mock_gcp, the_keys_grant_takes_a_token_that_serves_until_it_expires)
{
    jwt_pair_t pair;
    jwt_fixture_make (&pair, true);
    char path [64];
    s_key_file (&pair, URI, path, sizeof path);
    char why [300];
    sl_mock_gcp_t *mock = sl_mock_gcp_new (path, 120, why, sizeof why);
    cr_assert_not_null (mock, "%s", why);
    time_t now = time (NULL);
    sl_buf_t answer = { 0 };
    cr_assert_eq (s_grant (mock, path, now, now, &answer), 200, "%.*s", (int) answer.len, answer.data);
    cr_expect (strstr (sl_buf_cstr (&answer), "\"expires_in\":120") != NULL, "%s", sl_buf_cstr (&answer));
    char bearer [128];
    s_bearer (&answer, bearer, sizeof bearer);
    cr_expect (sl_mock_gcp_accepts (mock, bearer, now));
    cr_expect (sl_mock_gcp_accepts (mock, bearer, now + 119));
    cr_expect_not (sl_mock_gcp_accepts (mock, bearer, now + 120), "expired");
    cr_expect_not (sl_mock_gcp_accepts (mock, "Bearer ya29.made-up", now), "a token it did not issue");
    cr_expect_not (sl_mock_gcp_accepts (mock, NULL, now));
    cr_expect (sl_mock_gcp_accepts (mock, "Bearer " SL_MOCK_BEARER_TOKEN, now), "the given token of the tests");
    cr_expect_eq (sl_mock_gcp_issued (mock), 1);
    sl_buf_free (&answer);
    sl_mock_gcp_destroy (&mock);
    unlink (path);
    jwt_fixture_free (&pair);
}

Test (sl_mock_gcp, grants_refused_as_google_refuses_them)
{
    jwt_pair_t pair, other;
    jwt_fixture_make (&pair, true);
    jwt_fixture_make (&other, true);
    char path [64], other_path [64], elsewhere [64];
    s_key_file (&pair, URI, path, sizeof path);
    s_key_file (&other, URI, other_path, sizeof other_path);
    s_key_file (&pair, "https://oauth2.googleapis.com/token", elsewhere, sizeof elsewhere);
    char why [300];
    sl_mock_gcp_t *mock = sl_mock_gcp_new (path, 0, why, sizeof why);
    cr_assert_not_null (mock, "%s", why);
    time_t now = time (NULL);
    sl_buf_t answer = { 0 };
    cr_expect_eq (s_grant (mock, other_path, now, now, &answer), 400, "another key's signature");
    cr_expect_str_eq (sl_buf_cstr (&answer), "{\"error\":\"invalid_grant\",\"error_description\":\"Invalid JWT "
                                             "Signature.\"}");
    cr_expect_eq (s_grant (mock, elsewhere, now, now, &answer), 400, "another audience");
    cr_expect (strstr (sl_buf_cstr (&answer), "aud") != NULL);
    cr_expect_eq (s_grant (mock, path, now - 7200, now, &answer), 400, "expired");
    cr_expect_eq (s_grant (mock, path, now + 600, now, &answer), 400, "from the future");
    //  HS256 with the public key as the secret: the signature checks out
    //  against that text, the algorithm must not.
    jwt_t *forged = NULL;
    jwt_new (&forged);
    jwt_add_grant (forged, "iss", EMAIL);
    jwt_add_grant (forged, "aud", URI);
    jwt_add_grant (forged, "scope", SCOPE);
    jwt_add_grant_int (forged, "iat", now);
    jwt_add_grant_int (forged, "exp", now + 3600);
    jwt_set_alg (forged, JWT_ALG_HS256, (const unsigned char *) pair.public_pem, (int) strlen (pair.public_pem));
    char *text = jwt_encode_str (forged);
    sl_buf_t form = { 0 };
    sl_gcpkey_grant (&form, text);
    sl_buf_reset (&answer);
    cr_expect_eq (sl_mock_gcp_grant (mock, sl_buf_str (&form), now, &answer), 400, "HS256");
    free (text);
    jwt_free (forged);
    sl_buf_reset (&answer);
    cr_expect_eq (sl_mock_gcp_grant (mock, SL_STR_LIT ("grant_type=password&username=a"), now, &answer), 400);
    cr_expect (strstr (sl_buf_cstr (&answer), "unsupported_grant_type") != NULL);
    sl_buf_reset (&answer);
    cr_expect_eq (sl_mock_gcp_grant (mock, SL_STR_LIT ("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-"
                                                       "bearer&assertion=%zz"), now, &answer), 400);
    cr_expect_eq (sl_mock_gcp_issued (mock), 0, "nothing issued for any of them");
    sl_buf_free (&form);
    sl_buf_free (&answer);
    sl_mock_gcp_destroy (&mock);
    //  Without a key, no grant is taken; a key file that is none is refused.
    mock = sl_mock_gcp_new (NULL, 0, why, sizeof why);
    cr_assert_not_null (mock);
    cr_expect_eq (s_grant (mock, path, now, now, &answer), 400);
    sl_buf_free (&answer);
    sl_mock_gcp_destroy (&mock);
    FILE *f = fopen (other_path, "w");
    fputs ("{\"type\":\"service_account\"}", f);
    fclose (f);
    cr_expect_null (sl_mock_gcp_new (other_path, 0, why, sizeof why));
    cr_expect (strstr (why, other_path) != NULL);
    unlink (path);
    unlink (other_path);
    unlink (elsewhere);
    jwt_fixture_free (&pair);
    jwt_fixture_free (&other);
}

Test (sl_mock_gcp, the_metadata_server_wants_its_header)
{
    char why [300];
    sl_mock_gcp_t *mock = sl_mock_gcp_new (NULL, 0, why, sizeof why);
    time_t now = time (NULL);
    sl_buf_t answer = { 0 };
    cr_expect_eq (sl_mock_gcp_metadata (mock, NULL, now, &answer), 403);
    sl_buf_reset (&answer);
    cr_expect_eq (sl_mock_gcp_metadata (mock, "google", now, &answer), 403);
    sl_buf_reset (&answer);
    cr_assert_eq (sl_mock_gcp_metadata (mock, "Google", now, &answer), 200);
    cr_expect (strstr (sl_buf_cstr (&answer), "\"expires_in\":3599") != NULL);
    char bearer [128];
    s_bearer (&answer, bearer, sizeof bearer);
    cr_expect (sl_mock_gcp_accepts (mock, bearer, now));
    sl_buf_free (&answer);
    sl_mock_gcp_destroy (&mock);
}
