/*  Unit tests: common/cloud/sl_aztoken - the Entra ID source chosen from
    the environment (and what to set when it is missing or partial); the
    token endpoint's URL and the form of each grant; a token got with a
    client secret and with a federated token from a real token endpoint on
    a loopback port (the form checked there), the federated token file
    read again at each fetch, a refresh ahead of expiry while the old
    token serves, and a refusal told with its error_description. */
#include <criterion/criterion.h>
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cloud/sl_aztoken.h"
#include "tests/unit/token_server.h"

#define RUN_BOUND_MS 5000
#define TENANT "72f988bf-86f1-41af-91ab-2d7cd011db47"
#define CLIENT "0a1b2c3d-aaaa-bbbb-cccc-0123456789ab"
#define SCOPE_ENCODED "https%3A%2F%2Fcognitiveservices.azure.com%2F.default"

static void
s_clear_env (void)
{
    unsetenv ("AZURE_TENANT_ID");
    unsetenv ("AZURE_CLIENT_ID");
    unsetenv ("AZURE_CLIENT_SECRET");
    unsetenv ("AZURE_FEDERATED_TOKEN_FILE");
    unsetenv ("AZURE_AUTHORITY_HOST");
}

typedef struct {
    int told;
    char error [300];
} s_wait_t;

static void
s_told (void *arg, const char *error)
{
    s_wait_t *w = arg;
    w->told++;
    snprintf (w->error, sizeof w->error, "%s", error ? error : "");
}

Test (sl_aztoken, the_source_chosen_from_the_environment_and_what_to_set)
{
    s_clear_env ();
    sl_aztoken_config_t c;
    char why [300];
    cr_expect_eq (sl_aztoken_config_from_env (&c, why, sizeof why), -1);
    cr_expect (strstr (why, "AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET") != NULL, "%s", why);
    cr_expect (strstr (why, "AZURE_FEDERATED_TOKEN_FILE") != NULL, "%s", why);
    setenv ("AZURE_CLIENT_SECRET", "s3cret", 1);
    cr_expect_eq (sl_aztoken_config_from_env (&c, why, sizeof why), -1);
    cr_expect_str_eq (why, "AZURE_CLIENT_SECRET is set but AZURE_TENANT_ID and AZURE_CLIENT_ID is not: set both");
    cr_expect_null (strstr (why, "s3cret"));
    setenv ("AZURE_TENANT_ID", TENANT, 1);
    cr_expect_eq (sl_aztoken_config_from_env (&c, why, sizeof why), -1);
    cr_expect_str_eq (why, "AZURE_CLIENT_SECRET is set but AZURE_CLIENT_ID is not: set it");
    setenv ("AZURE_CLIENT_ID", CLIENT, 1);
    cr_assert_eq (sl_aztoken_config_from_env (&c, why, sizeof why), 0, "%s", why);
    cr_expect_eq (c.kind, SL_AZTOKEN_SECRET);
    cr_expect_str_eq (c.authority, SL_AZTOKEN_AUTHORITY);
    cr_expect_str_eq (c.tenant, TENANT);
    cr_expect_str_eq (c.client_id, CLIENT);
    cr_expect_str_eq (c.client_secret, "s3cret");
    sl_aztoken_config_clear (&c);
    //  A client secret first, as the Azure SDKs; the authority's slash cut.
    setenv ("AZURE_FEDERATED_TOKEN_FILE", "/var/run/secrets/azure/tokens/azure-identity-token", 1);
    setenv ("AZURE_AUTHORITY_HOST", "https://login.microsoftonline.us/", 1);
    cr_assert_eq (sl_aztoken_config_from_env (&c, why, sizeof why), 0, "%s", why);
    cr_expect_eq (c.kind, SL_AZTOKEN_SECRET);
    cr_expect_str_eq (c.authority, "https://login.microsoftonline.us");
    sl_aztoken_config_clear (&c);
    unsetenv ("AZURE_CLIENT_SECRET");
    cr_assert_eq (sl_aztoken_config_from_env (&c, why, sizeof why), 0, "%s", why);
    cr_expect_eq (c.kind, SL_AZTOKEN_WORKLOAD);
    cr_expect_str_eq (c.token_file, "/var/run/secrets/azure/tokens/azure-identity-token");
    cr_expect_null (c.client_secret);
    sl_aztoken_config_clear (&c);
    unsetenv ("AZURE_TENANT_ID");
    cr_expect_eq (sl_aztoken_config_from_env (&c, why, sizeof why), -1);
    cr_expect_str_eq (why, "AZURE_FEDERATED_TOKEN_FILE is set but AZURE_TENANT_ID is not: set it");
    s_clear_env ();
}

Test (sl_aztoken, the_endpoint_and_the_form_of_each_grant)
{
    sl_aztoken_config_t c = { .kind = SL_AZTOKEN_SECRET, .authority = "https://login.microsoftonline.com",
                              .tenant = TENANT, .client_id = CLIENT, .client_secret = "a~b&c=d+e" };
    sl_buf_t out = { 0 };
    cr_assert_eq (sl_aztoken_url (&c, &out), 0);
    cr_expect_str_eq (sl_buf_cstr (&out), "https://login.microsoftonline.com/" TENANT "/oauth2/v2.0/token");
    sl_buf_reset (&out);
    sl_aztoken_form (&c, NULL, &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "grant_type=client_credentials&client_id=" CLIENT "&scope=" SCOPE_ENCODED
                                          "&client_secret=a~b%26c%3Dd%2Be");
    sl_buf_reset (&out);
    c.kind = SL_AZTOKEN_WORKLOAD;
    sl_aztoken_form (&c, "eyJ.pod.sig", &out);
    cr_expect_str_eq (sl_buf_cstr (&out), "grant_type=client_credentials&client_id=" CLIENT "&scope=" SCOPE_ENCODED
                                          "&client_assertion_type=urn%3Aietf%3Aparams%3Aoauth%3Aclient-assertion-type"
                                          "%3Ajwt-bearer&client_assertion=eyJ.pod.sig");
    //  A tenant that would change the path, or an authority that is no URL.
    const char *bad [] = { "", "../x", "a/b", "a?b", "a b", ".", "..", NULL };
    for (size_t i = 0; bad [i]; i++) {
        sl_buf_reset (&out);
        c.tenant = (char *) bad [i];
        cr_expect_eq (sl_aztoken_url (&c, &out), -1, "tenant '%s'", bad [i]);
        cr_expect_eq (out.len, 0);
    }
    c.tenant = "contoso.onmicrosoft.com";
    c.authority = "login.microsoftonline.com";
    cr_expect_eq (sl_aztoken_url (&c, &out), -1);
    sl_buf_free (&out);
}

typedef struct {
    zloop_t *loop;
    sl_curlm_t *curlm;
    token_server_t server;
    char authority [64];
    char file [64];
} s_fixture_t;

static void
s_setup (s_fixture_t *f)
{
    memset (f, 0, sizeof *f);
    f->loop = zloop_new ();
    f->curlm = sl_curlm_new (f->loop);
    token_server_start (&f->server, f->loop);
    snprintf (f->authority, sizeof f->authority, "http://127.0.0.1:%d", f->server.port);
}

static void
s_teardown (s_fixture_t *f)
{
    if (*f->file)
        unlink (f->file);
    token_server_stop (&f->server);
    sl_curlm_destroy (&f->curlm);
    zloop_destroy (&f->loop);
}

static void
s_answer (token_server_t *server, const char *token, int expires_in)
{
    snprintf (server->answer, sizeof server->answer,
              "{\"token_type\":\"Bearer\",\"expires_in\":%d,\"ext_expires_in\":%d,\"access_token\":\"%s\"}",
              expires_in, expires_in, token);
}

static void
s_write (const char *path, const char *text)
{
    FILE *f = fopen (path, "w");
    cr_assert_not_null (f);
    fputs (text, f);
    fclose (f);
}

Test (sl_aztoken, a_client_secrets_token_from_the_endpoint)
{
    s_fixture_t f;
    s_setup (&f);
    s_answer (&f.server, "eyJ0eXAi.first", 3599);
    sl_aztoken_config_t c = { .kind = SL_AZTOKEN_SECRET, .authority = f.authority, .tenant = TENANT,
                              .client_id = CLIENT, .client_secret = "s3cret" };
    char why [300];
    sl_aztoken_t *az = sl_aztoken_new (f.loop, f.curlm, &c, NULL, why, sizeof why);
    cr_assert_not_null (az, "%s", why);
    const char *token;
    s_wait_t w = { 0 };
    uint64_t id;
    cr_expect_eq (sl_aztoken_get (az, &token, s_told, &w, &id), 1);
    cr_expect_null (token);
    token_server_run (f.loop, &w.told, 1, RUN_BOUND_MS);
    cr_assert_eq (w.told, 1);
    cr_expect_str_eq (w.error, "");
    cr_assert_eq (sl_aztoken_get (az, &token, s_told, &w, &id), 0);
    cr_expect_str_eq (token, "eyJ0eXAi.first");
    cr_expect_str_eq (f.server.method, "POST");
    cr_expect_str_eq (f.server.path, "/" TENANT "/oauth2/v2.0/token");
    cr_expect_str_eq (f.server.content_type, "application/x-www-form-urlencoded;charset=utf-8");
    cr_expect_str_eq (f.server.body, "grant_type=client_credentials&client_id=" CLIENT "&scope=" SCOPE_ENCODED
                                     "&client_secret=s3cret");
    cr_expect_eq (sl_aztoken_kind (az), SL_AZTOKEN_SECRET);
    sl_aztoken_destroy (&az);
    //  What cannot be used is refused when made.
    sl_aztoken_config_t bad = c;
    bad.tenant = "../common";
    cr_expect_null (sl_aztoken_new (f.loop, f.curlm, &bad, NULL, why, sizeof why));
    cr_expect (strstr (why, "AZURE_TENANT_ID") != NULL, "%s", why);
    bad = c;
    bad.client_secret = NULL;
    cr_expect_null (sl_aztoken_new (f.loop, f.curlm, &bad, NULL, why, sizeof why));
    cr_expect_str_eq (why, "no client secret");
    s_teardown (&f);
}

Test (sl_aztoken, workload_identity_reads_the_file_again_at_each_refresh)
{
    s_fixture_t f;
    s_setup (&f);
    snprintf (f.file, sizeof f.file, "/tmp/sl-aztoken-XXXXXX");
    int fd = mkstemp (f.file);
    cr_assert_geq (fd, 0);
    close (fd);
    s_write (f.file, "eyJ.pod-token-1.sig\n");
    //  A token expiring in 12 s with a 10 s margin: fetched again in ~2 s.
    s_answer (&f.server, "eyJ0eXAi.first", 12);
    sl_aztoken_config_t c = { .kind = SL_AZTOKEN_WORKLOAD, .authority = f.authority, .tenant = TENANT,
                              .client_id = CLIENT, .token_file = f.file };
    sl_refresher_timing_t timing = { .margin_ms = 10000, .grace_ms = 1000 };
    char why [300];
    sl_aztoken_t *az = sl_aztoken_new (f.loop, f.curlm, &c, &timing, why, sizeof why);
    cr_assert_not_null (az, "%s", why);
    const char *token;
    s_wait_t w = { 0 };
    uint64_t id;
    if (sl_aztoken_get (az, &token, s_told, &w, &id) == 1)
        token_server_run (f.loop, &w.told, 1, RUN_BOUND_MS);
    cr_assert_eq (sl_aztoken_get (az, &token, s_told, NULL, &id), 0, "%s", w.error);
    cr_expect_str_eq (token, "eyJ0eXAi.first");
    cr_expect (strstr (f.server.body, "&client_assertion=eyJ.pod-token-1.sig") != NULL, "%s", f.server.body);
    cr_expect (strstr (f.server.body, "client_secret") == NULL, "%s", f.server.body);
    //  The kubelet rotates the file; the next fetch sends the new token.
    s_write (f.file, "eyJ.pod-token-2.sig");
    s_answer (&f.server, "eyJ0eXAi.second", 3599);
    token_server_run (f.loop, &f.server.requests, 2, RUN_BOUND_MS);
    cr_assert_eq (f.server.requests, 2, "fetched again ahead of expiry");
    cr_expect_eq (sl_aztoken_get (az, &token, s_told, NULL, &id), 0, "no request waits for a refresh");
    for (int i = 0; i < 100 && strcmp (token, "eyJ0eXAi.second") != 0; i++) {
        token_server_run (f.loop, &f.server.requests, 3, 20);
        cr_assert_eq (sl_aztoken_get (az, &token, s_told, NULL, &id), 0);
    }
    cr_expect_str_eq (token, "eyJ0eXAi.second");
    cr_expect (strstr (f.server.body, "&client_assertion=eyJ.pod-token-2.sig") != NULL, "%s", f.server.body);
    sl_aztoken_destroy (&az);
    s_teardown (&f);
}

Test (sl_aztoken, a_refusal_told_with_its_description_and_a_missing_file)
{
    s_fixture_t f;
    s_setup (&f);
    f.server.status = 401;
    snprintf (f.server.answer, sizeof f.server.answer,
              "{\"error\":\"invalid_client\",\"error_description\":\"AADSTS7000215: Invalid client secret provided.\","
              "\"error_codes\":[7000215]}");
    sl_aztoken_config_t c = { .kind = SL_AZTOKEN_SECRET, .authority = f.authority, .tenant = TENANT,
                              .client_id = CLIENT, .client_secret = "wrong" };
    char why [300];
    sl_aztoken_t *az = sl_aztoken_new (f.loop, f.curlm, &c, NULL, why, sizeof why);
    cr_assert_not_null (az, "%s", why);
    const char *token;
    s_wait_t w = { 0 };
    uint64_t id;
    cr_expect_eq (sl_aztoken_get (az, &token, s_told, &w, &id), 1);
    token_server_run (f.loop, &w.told, 1, RUN_BOUND_MS);
    cr_expect_str_eq (w.error, "the token endpoint refused (HTTP 401): invalid_client: AADSTS7000215: Invalid client "
                               "secret provided.");
    sl_aztoken_destroy (&az);
    //  A federated token file that is not there: said, nothing sent.
    int before = f.server.requests;
    sl_aztoken_config_t wl = { .kind = SL_AZTOKEN_WORKLOAD, .authority = f.authority, .tenant = TENANT,
                               .client_id = CLIENT, .token_file = "/nonexistent/azure-identity-token" };
    az = sl_aztoken_new (f.loop, f.curlm, &wl, NULL, why, sizeof why);
    cr_assert_not_null (az, "%s", why);
    w = (s_wait_t) { 0 };
    cr_expect_eq (sl_aztoken_get (az, &token, s_told, &w, &id), 1);
    token_server_run (f.loop, &w.told, 1, RUN_BOUND_MS);
    cr_expect_str_eq (w.error, "the federated token file /nonexistent/azure-identity-token "
                               "(AZURE_FEDERATED_TOKEN_FILE) cannot be read: No such file or directory");
    cr_expect_eq (f.server.requests, before);
    sl_aztoken_destroy (&az);
    s_teardown (&f);
}
