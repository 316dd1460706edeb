/*  Unit tests: common/cloud/sl_gcptoken - the source chosen from the
    environment; a token got with a service-account key's grant from a
    real token endpoint on a loopback port (the grant's form and signed
    assertion checked there), from a metadata server stand-in (its path
    and Metadata-Flavor header), or given; the token endpoint's answers
    read and its refusals told to the waiting request. */
#include <criterion/criterion.h>
#include <czmq.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cloud/sl_gcptoken.h"
#include "tests/jwt_fixture.h"
#include "tests/unit/token_server.h"

#define RUN_BOUND_MS 5000
#define EMAIL "sluice@project-1.iam.gserviceaccount.com"

static void
s_clear_env (void)
{
    unsetenv ("GOOGLE_APPLICATION_CREDENTIALS");
    unsetenv ("GOOGLE_OAUTH_ACCESS_TOKEN");
    unsetenv ("GCE_METADATA_HOST");
}

Test (sl_gcptoken, the_source_chosen_in_order)
{
    s_clear_env ();
    sl_gcptoken_config_t c;
    sl_gcptoken_config_from_env (&c, NULL);
    cr_expect_eq (c.kind, SL_GCPTOKEN_METADATA);
    cr_expect_str_eq (c.metadata_host, "metadata.google.internal");
    sl_gcptoken_config_clear (&c);
    setenv ("GCE_METADATA_HOST", "127.0.0.1:8989", 1);
    sl_gcptoken_config_from_env (&c, NULL);
    cr_expect_str_eq (c.metadata_host, "127.0.0.1:8989");
    sl_gcptoken_config_clear (&c);
    setenv ("GOOGLE_APPLICATION_CREDENTIALS", "/etc/adc.json", 1);
    sl_gcptoken_config_from_env (&c, NULL);
    cr_expect_eq (c.kind, SL_GCPTOKEN_KEY_FILE);
    cr_expect_str_eq (c.key_file, "/etc/adc.json");
    sl_gcptoken_config_clear (&c);
    setenv ("GOOGLE_OAUTH_ACCESS_TOKEN", "ya29.given", 1);
    sl_gcptoken_config_from_env (&c, NULL);
    cr_expect_eq (c.kind, SL_GCPTOKEN_GIVEN, "a given token before GOOGLE_APPLICATION_CREDENTIALS");
    cr_expect_str_eq (c.token, "ya29.given");
    sl_gcptoken_config_clear (&c);
    sl_gcptoken_config_from_env (&c, "/etc/provider-key.json");
    cr_expect_eq (c.kind, SL_GCPTOKEN_KEY_FILE, "the provider's credentials_file first");
    cr_expect_str_eq (c.key_file, "/etc/provider-key.json");
    sl_gcptoken_config_clear (&c);
}

Test (sl_gcptoken, answers_read)
{
    char *token;
    int64_t expires;
    char why [300];
    cr_assert_eq (sl_gcptoken_parse (200, SL_STR_LIT ("{\"access_token\":\"ya29.a0Af\",\"expires_in\":3599,"
                                                      "\"token_type\":\"Bearer\"}"), &token, &expires, why, sizeof why), 0);
    cr_expect_str_eq (token, "ya29.a0Af");
    cr_expect_eq (expires, 3599);
    free (token);
    cr_expect_eq (sl_gcptoken_parse (400, SL_STR_LIT ("{\"error\":\"invalid_grant\",\"error_description\":"
                                                      "\"Invalid JWT Signature.\"}"), &token, &expires, why, sizeof why), -1);
    cr_expect_str_eq (why, "the token endpoint refused (HTTP 400): invalid_grant: Invalid JWT Signature.");
    cr_expect_null (token);
    cr_expect_eq (sl_gcptoken_parse (500, SL_STR_LIT ("oops"), &token, &expires, why, sizeof why), -1);
    cr_expect_str_eq (why, "the token endpoint answered HTTP 500");
    cr_expect_eq (sl_gcptoken_parse (200, SL_STR_LIT ("{\"expires_in\":3599}"), &token, &expires, why, sizeof why), -1);
    cr_expect_str_eq (why, "the token endpoint's answer holds no access_token");
    cr_expect_eq (sl_gcptoken_parse (200, SL_STR_LIT ("{\"access_token\":\"t\",\"expires_in\":\"soon\"}"),
                                     &token, &expires, why, sizeof why), -1);
    cr_expect_str_eq (why, "the token endpoint's answer holds no valid expires_in");
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

//  A key file naming the server's /token as its token_uri; the path into path.
static void
s_key_file (const jwt_pair_t *pair, int port, char *path, size_t size)
{
    char uri [64];
    snprintf (uri, sizeof uri, "http://127.0.0.1:%d/token", port);
    json_t *key = json_pack ("{s:s, s:s, s:s, s:s}", "type", "service_account", "private_key", pair->private_pem,
                             "client_email", EMAIL, "token_uri", uri);
    snprintf (path, size, "/tmp/sl-gcptoken-XXXXXX");
    int fd = mkstemp (path);
    cr_assert_geq (fd, 0);
    close (fd);
    cr_assert_eq (json_dump_file (key, path, 0), 0);
    json_decref (key);
}

Test (sl_gcptoken, a_key_files_grant_at_its_token_uri)
{
    zloop_t *loop = zloop_new ();
    sl_curlm_t *curlm = sl_curlm_new (loop);
    token_server_t server;
    token_server_start (&server, loop);
    snprintf (server.answer, sizeof server.answer, "{\"access_token\":\"ya29.first\",\"expires_in\":3599,\"token_type\":\"Bearer\"}");
    jwt_pair_t pair;
    jwt_fixture_make (&pair, true);
    char path [64];
    s_key_file (&pair, server.port, path, sizeof path);
    sl_gcptoken_config_t c = { .kind = SL_GCPTOKEN_KEY_FILE, .key_file = path };
    char why [300];
    sl_gcptoken_t *gcp = sl_gcptoken_new (loop, curlm, &c, NULL, why, sizeof why);
    cr_assert_not_null (gcp, "%s", why);
    const char *token;
    s_wait_t w = { 0 };
    uint64_t id;
    cr_expect_eq (sl_gcptoken_get (gcp, &token, s_told, &w, &id), 1);
    cr_expect_null (token);
    token_server_run (loop, &w.told, 1, RUN_BOUND_MS);
    cr_assert_eq (w.told, 1);
    cr_expect_str_eq (w.error, "");
    cr_assert_eq (sl_gcptoken_get (gcp, &token, s_told, &w, &id), 0);
    cr_expect_str_eq (token, "ya29.first");
    //  What the token endpoint got.
    cr_expect_str_eq (server.method, "POST");
    cr_expect_str_eq (server.path, "/token");
    cr_expect_str_eq (server.content_type, "application/x-www-form-urlencoded");
    const char *prefix = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=";
    cr_assert_eq (strncmp (server.body, prefix, strlen (prefix)), 0, "%s", server.body);
    jwt_t *jwt = NULL;
    cr_assert_eq (jwt_decode (&jwt, server.body + strlen (prefix), (const unsigned char *) pair.public_pem,
                              (int) strlen (pair.public_pem)), 0);
    cr_expect_str_eq (jwt_get_grant (jwt, "iss"), EMAIL);
    char uri [64];
    snprintf (uri, sizeof uri, "http://127.0.0.1:%d/token", server.port);
    cr_expect_str_eq (jwt_get_grant (jwt, "aud"), uri);
    cr_expect_str_eq (jwt_get_grant (jwt, "scope"), SL_GCPTOKEN_SCOPE);
    long iat = jwt_get_grant_int (jwt, "iat");
    cr_expect (labs (iat - (long) time (NULL)) < 60);
    jwt_free (jwt);
    sl_gcptoken_destroy (&gcp);
    unlink (path);
    jwt_fixture_free (&pair);
    token_server_stop (&server);
    sl_curlm_destroy (&curlm);
    zloop_destroy (&loop);
}

Test (sl_gcptoken, a_refusal_told_and_a_bad_key_refused_at_start)
{
    zloop_t *loop = zloop_new ();
    sl_curlm_t *curlm = sl_curlm_new (loop);
    token_server_t server;
    token_server_start (&server, loop);
    server.status = 400;
    snprintf (server.answer, sizeof server.answer, "{\"error\":\"invalid_grant\",\"error_description\":\"Invalid JWT Signature.\"}");
    jwt_pair_t pair;
    jwt_fixture_make (&pair, true);
    char path [64];
    s_key_file (&pair, server.port, path, sizeof path);
    sl_gcptoken_config_t c = { .kind = SL_GCPTOKEN_KEY_FILE, .key_file = path };
    char why [300];
    sl_gcptoken_t *gcp = sl_gcptoken_new (loop, curlm, &c, NULL, why, sizeof why);
    cr_assert_not_null (gcp, "%s", why);
    const char *token;
    s_wait_t w = { 0 };
    uint64_t id;
    cr_expect_eq (sl_gcptoken_get (gcp, &token, s_told, &w, &id), 1);
    token_server_run (loop, &w.told, 1, RUN_BOUND_MS);
    cr_expect_str_eq (w.error, "the token endpoint refused (HTTP 400): invalid_grant: Invalid JWT Signature.");
    sl_gcptoken_destroy (&gcp);
    unlink (path);
    sl_gcptoken_config_t missing = { .kind = SL_GCPTOKEN_KEY_FILE, .key_file = "/nonexistent.json" };
    cr_expect_null (sl_gcptoken_new (loop, curlm, &missing, NULL, why, sizeof why));
    cr_expect_str_eq (why, "the key file /nonexistent.json cannot be read: No such file or directory");
    jwt_fixture_free (&pair);
    token_server_stop (&server);
    sl_curlm_destroy (&curlm);
    zloop_destroy (&loop);
}

Test (sl_gcptoken, the_metadata_server)
{
    zloop_t *loop = zloop_new ();
    sl_curlm_t *curlm = sl_curlm_new (loop);
    token_server_t server;
    token_server_start (&server, loop);
    snprintf (server.answer, sizeof server.answer, "{\"access_token\":\"ya29.gke\",\"expires_in\":1800,\"token_type\":\"Bearer\"}");
    char host [32];
    snprintf (host, sizeof host, "127.0.0.1:%d", server.port);
    sl_gcptoken_config_t c = { .kind = SL_GCPTOKEN_METADATA, .metadata_host = host };
    char why [300];
    sl_gcptoken_t *gcp = sl_gcptoken_new (loop, curlm, &c, NULL, why, sizeof why);
    cr_assert_not_null (gcp);
    token_server_run (loop, &server.requests, 1, RUN_BOUND_MS);
    cr_expect_eq (server.requests, 1, "fetched from the start");
    const char *token;
    uint64_t id;
    s_wait_t w = { 0 };
    if (sl_gcptoken_get (gcp, &token, s_told, &w, &id) == 1)
        token_server_run (loop, &w.told, 1, RUN_BOUND_MS);
    cr_assert_eq (sl_gcptoken_get (gcp, &token, s_told, NULL, &id), 0, "%s", w.error);
    cr_expect_str_eq (token, "ya29.gke");
    cr_expect_str_eq (server.method, "GET");
    cr_expect_str_eq (server.path, SL_GCPTOKEN_METADATA_PATH);
    cr_expect_str_eq (server.metadata_flavor, "Google");
    sl_gcptoken_destroy (&gcp);

    sl_gcptoken_config_t given = { .kind = SL_GCPTOKEN_GIVEN, .token = "ya29.given" };
    gcp = sl_gcptoken_new (loop, curlm, &given, NULL, why, sizeof why);
    cr_assert_eq (sl_gcptoken_get (gcp, &token, s_told, NULL, &id), 0);
    cr_expect_str_eq (token, "ya29.given");
    cr_expect_eq (sl_gcptoken_kind (gcp), SL_GCPTOKEN_GIVEN);
    sl_gcptoken_destroy (&gcp);
    token_server_stop (&server);
    sl_curlm_destroy (&curlm);
    zloop_destroy (&loop);
}
