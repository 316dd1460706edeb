/*  Unit tests: services/mock/sl_mock_entra - the mock as Entra ID's token
    endpoint: a client secret's and a federated token's grants taken, each
    wrong part refused as Entra ID refuses it, the tokens issued taken
    until they expire, and a configuration that does not hold together
    refused. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "services/mock/sl_mock_entra.h"

#define TENANT "contoso.onmicrosoft.com"
#define PATH "/" TENANT "/oauth2/v2.0/token"
#define SCOPE "scope=https%3A%2F%2Fcognitiveservices.azure.com%2F.default"
#define SECRET_FORM "grant_type=client_credentials&client_id=app-1&" SCOPE "&client_secret=s3cret"
#define ASSERTION_TYPE "client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type%3Ajwt-bearer"

static sl_mock_entra_t *
s_entra (const char *secret, const char *assertion, int64_t ttl_s)
{
    const sl_mock_entra_config_t c = { TENANT, "app-1", secret, assertion, ttl_s };
    char why [200];
    sl_mock_entra_t *e = sl_mock_entra_new (&c, why, sizeof why);
    cr_assert_not_null (e, "%s", why);
    return e;
}

//  The grant's status; the answer's error (or access_token) into out.
static int
s_grant (sl_mock_entra_t *e, const char *path, const char *form, time_t now, char *out, size_t size)
{
    sl_buf_t answer = { 0 };
    int status = sl_mock_entra_grant (e, path, sl_str (form), now, &answer);
    json_t *root = json_loadb (answer.data, answer.len, 0, NULL);
    cr_assert_not_null (root, "%s", sl_buf_cstr (&answer));
    const char *field = status == 200 ? json_string_value (json_object_get (root, "access_token"))
                                      : json_string_value (json_object_get (root, "error"));
    const char *description = json_string_value (json_object_get (root, "error_description"));
    snprintf (out, size, "%s%s%s", field ? field : "", description ? " " : "", description ? description : "");
    if (status == 200) {
        cr_expect_str_eq (json_string_value (json_object_get (root, "token_type")), "Bearer");
        cr_expect (json_is_integer (json_object_get (root, "expires_in")));
    }
    json_decref (root);
    sl_buf_free (&answer);
    return status;
}

Test (sl_mock_entra, a_client_secrets_grant_and_its_token_until_it_expires)
{
    sl_mock_entra_t *e = s_entra ("s3cret", NULL, 60);
    cr_expect (sl_mock_entra_configured (e));
    cr_expect (sl_mock_entra_is_token_path (PATH));
    cr_expect_not (sl_mock_entra_is_token_path ("/oauth2/v2.0/token"));
    cr_expect_not (sl_mock_entra_is_token_path ("/token"));
    char token [300], auth [320];
    cr_assert_eq (s_grant (e, PATH, SECRET_FORM, 1000, token, sizeof token), 200, "%s", token);
    cr_expect_eq (strncmp (token, SL_MOCK_ENTRA_TOKEN_PREFIX, strlen (SL_MOCK_ENTRA_TOKEN_PREFIX)), 0);
    snprintf (auth, sizeof auth, "Bearer %s", token);
    cr_expect (sl_mock_entra_accepts (e, auth, 1059));
    cr_expect_not (sl_mock_entra_accepts (e, auth, 1060), "expired");
    cr_expect_not (sl_mock_entra_accepts (e, token, 1000), "not a bearer");
    cr_expect_not (sl_mock_entra_accepts (e, "Bearer mock-cloud-token", 1000));
    cr_expect_not (sl_mock_entra_accepts (e, NULL, 1000));
    cr_expect_eq (sl_mock_entra_issued (e), 1);
    sl_mock_entra_destroy (&e);
    cr_expect_null (e);
}

Test (sl_mock_entra, each_wrong_part_refused_as_entra_id_refuses_it)
{
    sl_mock_entra_t *e = s_entra ("s3cret", "eyJ.pod.sig", 0);
    char out [600];
    cr_expect_eq (s_grant (e, "/other-tenant/oauth2/v2.0/token", SECRET_FORM, 1000, out, sizeof out), 400);
    cr_expect (strstr (out, "invalid_request AADSTS90002: Tenant 'other-tenant' not found") == out, "%s", out);
    cr_expect_eq (s_grant (e, PATH, "grant_type=password&client_id=app-1&" SCOPE "&client_secret=s3cret", 1000, out,
                           sizeof out), 400);
    cr_expect (strstr (out, "unsupported_grant_type AADSTS70003") == out, "%s", out);
    cr_expect_eq (s_grant (e, PATH, "grant_type=client_credentials&client_id=app-2&" SCOPE "&client_secret=s3cret",
                           1000, out, sizeof out), 400);
    cr_expect (strstr (out, "unauthorized_client AADSTS700016: Application with identifier 'app-2'") == out, "%s", out);
    cr_expect_eq (s_grant (e, PATH, "grant_type=client_credentials&client_id=app-1&scope=openid&client_secret=s3cret",
                           1000, out, sizeof out), 400);
    cr_expect (strstr (out, "invalid_scope AADSTS1002012") == out, "%s", out);
    cr_expect_eq (s_grant (e, PATH, "grant_type=client_credentials&client_id=app-1&" SCOPE "&client_secret=wrong",
                           1000, out, sizeof out), 401);
    cr_expect (strstr (out, "invalid_client AADSTS7000215: Invalid client secret provided.") == out, "%s", out);
    cr_expect_eq (s_grant (e, PATH, "grant_type=client_credentials&client_id=app-1&" SCOPE, 1000, out, sizeof out),
                  401);
    cr_expect (strstr (out, "invalid_client AADSTS7000218") == out, "%s", out);
    //  Workload identity: the federated token it was given, of the right type.
    cr_expect_eq (s_grant (e, PATH, "grant_type=client_credentials&client_id=app-1&" SCOPE "&" ASSERTION_TYPE
                           "&client_assertion=eyJ.pod.sig", 1000, out, sizeof out), 200, "%s", out);
    cr_expect_eq (s_grant (e, PATH, "grant_type=client_credentials&client_id=app-1&" SCOPE "&" ASSERTION_TYPE
                           "&client_assertion=eyJ.other.sig", 1000, out, sizeof out), 401);
    cr_expect (strstr (out, "invalid_client AADSTS700213") == out, "%s", out);
    cr_expect_eq (s_grant (e, PATH, "grant_type=client_credentials&client_id=app-1&" SCOPE
                           "&client_assertion_type=x&client_assertion=eyJ.pod.sig", 1000, out, sizeof out), 400);
    cr_expect (strstr (out, "invalid_request AADSTS50027") == out, "%s", out);
    cr_expect_eq (sl_mock_entra_issued (e), 1);
    sl_mock_entra_destroy (&e);
    //  Given only an assertion, a secret is refused; given only a secret,
    //  an assertion is.
    e = s_entra (NULL, "eyJ.pod.sig", 0);
    cr_expect_eq (s_grant (e, PATH, SECRET_FORM, 1000, out, sizeof out), 401);
    sl_mock_entra_destroy (&e);
    e = s_entra ("s3cret", NULL, 0);
    cr_expect_eq (s_grant (e, PATH, "grant_type=client_credentials&client_id=app-1&" SCOPE "&" ASSERTION_TYPE
                           "&client_assertion=eyJ.pod.sig", 1000, out, sizeof out), 401);
    sl_mock_entra_destroy (&e);
}

Test (sl_mock_entra, unconfigured_it_takes_nothing_and_a_config_must_hold_together)
{
    const sl_mock_entra_config_t off = { 0 };
    char why [200];
    sl_mock_entra_t *e = sl_mock_entra_new (&off, why, sizeof why);
    cr_assert_not_null (e);
    cr_expect_not (sl_mock_entra_configured (e));
    char out [600];
    cr_expect_eq (s_grant (e, PATH, SECRET_FORM, 1000, out, sizeof out), 400);
    cr_expect_eq (sl_mock_entra_issued (e), 0);
    sl_mock_entra_destroy (&e);
    const sl_mock_entra_config_t bad [] = {
        { NULL, "app-1", "s3cret", NULL, 0 },       //  no tenant
        { TENANT, "app-1", NULL, NULL, 0 },         //  nothing to take
        { TENANT, NULL, "s3cret", NULL, 0 },        //  no client
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
        why [0] = 0;
        cr_expect_null (sl_mock_entra_new (&bad [i], why, sizeof why), "config %zu", i);
        cr_expect_neq (why [0], 0);
    }
}
