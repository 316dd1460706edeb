/*  Unit tests: common/cloud/sl_gcpauth - Google's access tokens as the
    credential source of an attempt: a key file's token from a real token
    endpoint on a loopback port, the metadata server's, one fetch for the
    calls waiting together, a refusal failing the waiting calls with the
    endpoint's reason (and the next call fetching afresh), a token that
    would add a header refused, a bad key file refused when made. */
#include <criterion/criterion.h>
#include <czmq.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cloud/sl_gcpauth.h"
#include "tests/jwt_fixture.h"
#include "tests/unit/token_server.h"

#define RUN_BOUND_MS 5000
#define EMAIL "sluice@project-1.iam.gserviceaccount.com"

//  What the waiting call does when the source has news: ask again, as
//  sl_upcall_authorized does, from inside the hook.
typedef struct {
    sl_auth_t *auth;
    int told;
    int state;                          //  what asking again inside the hook answered
    char why [300];
} s_call_t;

static int
s_ask (sl_auth_t *auth, sl_buf_t *lines, size_t *count, sl_buf_t *why)
{
    static const sl_auth_request_t req = { .method = "POST", .url = "https://us-east5-aiplatform.googleapis.com/v1/x" };
    sl_buf_reset (lines);
    sl_buf_reset (why);
    *count = 0;
    return sl_auth_authorize (auth, &req, lines, count, why);
}

static void
s_notified (void *arg)
{
    s_call_t *c = arg;
    sl_buf_t lines = { 0 }, why = { 0 };
    size_t count;
    c->state = s_ask (c->auth, &lines, &count, &why);
    snprintf (c->why, sizeof c->why, "%s", why.len ? sl_buf_cstr (&why) : "");
    sl_buf_free (&lines);
    sl_buf_free (&why);
    c->told++;
}

static void
s_key_file (const jwt_pair_t *pair, int port, char *path, size_t size)
{
    char uri [64];
    snprintf (uri, sizeof uri, "http://127.0.0.1:%d/token", port);
    json_t *key = json_pack ("{s:s, s:s, s:s, s:s}", "type", "service_account", "private_key", pair->private_pem,
                             "client_email", EMAIL, "token_uri", uri);
    snprintf (path, size, "/tmp/sl-gcpauth-XXXXXX");
    int fd = mkstemp (path);
    cr_assert_geq (fd, 0);
    close (fd);
    cr_assert_eq (json_dump_file (key, path, 0), 0);
    json_decref (key);
}

typedef struct {
    zloop_t *loop;
    sl_curlm_t *curlm;
    token_server_t server;
    jwt_pair_t pair;
    char path [64];
    s_call_t call;
    sl_buf_t lines, why;
    size_t count;
} s_fixture_t;

static void
s_setup (s_fixture_t *f, int status, const char *answer)
{
    memset (f, 0, sizeof *f);
    f->loop = zloop_new ();
    f->curlm = sl_curlm_new (f->loop);
    token_server_start (&f->server, f->loop);
    f->server.status = status;
    snprintf (f->server.answer, sizeof f->server.answer, "%s", answer);
    jwt_fixture_make (&f->pair, true);
    s_key_file (&f->pair, f->server.port, f->path, sizeof f->path);
}

static sl_auth_t *
s_key_source (s_fixture_t *f)
{
    sl_gcptoken_config_t c = { .kind = SL_GCPTOKEN_KEY_FILE, .key_file = f->path };
    char why [300];
    sl_auth_t *auth = sl_gcpauth_new (f->loop, f->curlm, &c, NULL, s_notified, &f->call, why, sizeof why);
    cr_assert_not_null (auth, "%s", why);
    f->call.auth = auth;
    return auth;
}

static void
s_teardown (s_fixture_t *f)
{
    sl_buf_free (&f->lines);
    sl_buf_free (&f->why);
    unlink (f->path);
    jwt_fixture_free (&f->pair);
    token_server_stop (&f->server);
    sl_curlm_destroy (&f->curlm);
    zloop_destroy (&f->loop);
}

Test (sl_gcpauth, a_key_files_token_for_each_attempt_one_fetch_for_all_waiting)
{
    s_fixture_t f;
    s_setup (&f, 200, "{\"access_token\":\"ya29.first\",\"expires_in\":3599,\"token_type\":\"Bearer\"}");
    sl_auth_t *auth = s_key_source (&f);
    cr_expect_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_PENDING);
    cr_expect_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_PENDING, "a second call waits too");
    token_server_run (f.loop, &f.call.told, 1, RUN_BOUND_MS);
    cr_assert_eq (f.call.told, 1, "the waiting calls are told once");
    cr_expect_eq (f.call.state, SL_AUTH_READY, "%s", f.call.why);
    cr_expect_eq (f.server.requests, 1, "one grant for the calls waiting together");
    cr_assert_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_READY);
    cr_expect_eq (f.count, 1);
    cr_expect_str_eq (f.lines.data, "Authorization: Bearer ya29.first");
    cr_expect_str_eq (f.server.path, "/token");
    cr_expect (strstr (f.server.body, "assertion=") != NULL);
    sl_auth_destroy (&auth);
    cr_expect_null (auth);
    s_teardown (&f);
}

Test (sl_gcpauth, a_refusal_fails_the_waiting_calls_and_the_next_fetches_again)
{
    s_fixture_t f;
    s_setup (&f, 400, "{\"error\":\"invalid_grant\",\"error_description\":\"Invalid JWT Signature.\"}");
    sl_auth_t *auth = s_key_source (&f);
    cr_expect_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_PENDING);
    token_server_run (f.loop, &f.call.told, 1, RUN_BOUND_MS);
    cr_assert_eq (f.call.told, 1);
    cr_expect_eq (f.call.state, SL_AUTH_FAILED, "the waiting call is refused, not left waiting");
    cr_expect_str_eq (f.call.why, "Google access token: the token endpoint refused (HTTP 400): invalid_grant: "
                                  "Invalid JWT Signature.");
    int before = f.server.requests;
    f.server.status = 200;
    snprintf (f.server.answer, sizeof f.server.answer, "{\"access_token\":\"ya29.second\",\"expires_in\":3599}");
    cr_expect_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_PENDING, "a later call fetches afresh");
    token_server_run (f.loop, &f.call.told, 2, RUN_BOUND_MS);
    cr_expect_gt (f.server.requests, before);
    cr_expect_eq (f.call.state, SL_AUTH_READY, "%s", f.call.why);
    cr_assert_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_READY);
    cr_expect_str_eq (f.lines.data, "Authorization: Bearer ya29.second");
    sl_auth_destroy (&auth);
    s_teardown (&f);
}

Test (sl_gcpauth, a_token_that_would_add_a_header_is_refused)
{
    s_fixture_t f;
    s_setup (&f, 200, "{\"access_token\":\"ya29.x\\r\\nX-Injected: 1\",\"expires_in\":3599}");
    sl_auth_t *auth = s_key_source (&f);
    cr_expect_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_PENDING);
    token_server_run (f.loop, &f.call.told, 1, RUN_BOUND_MS);
    cr_expect_eq (f.call.state, SL_AUTH_FAILED);
    cr_expect_str_eq (f.call.why, "the Google access token is not fit for a header");
    cr_expect_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_FAILED);
    cr_expect_eq (f.count, 0, "no line written");
    cr_expect_eq (f.lines.len, 0);
    sl_auth_destroy (&auth);
    s_teardown (&f);
}

Test (sl_gcpauth, the_metadata_servers_token_and_a_bad_key_file)
{
    s_fixture_t f;
    s_setup (&f, 200, "{\"access_token\":\"ya29.gke\",\"expires_in\":1800,\"token_type\":\"Bearer\"}");
    char host [32];
    snprintf (host, sizeof host, "127.0.0.1:%d", f.server.port);
    sl_gcptoken_config_t c = { .kind = SL_GCPTOKEN_METADATA, .metadata_host = host };
    char why [300];
    sl_auth_t *auth = sl_gcpauth_new (f.loop, f.curlm, &c, NULL, s_notified, &f.call, why, sizeof why);
    cr_assert_not_null (auth);
    f.call.auth = auth;
    token_server_run (f.loop, &f.server.requests, 1, RUN_BOUND_MS);
    if (s_ask (auth, &f.lines, &f.count, &f.why) == SL_AUTH_PENDING)
        token_server_run (f.loop, &f.call.told, 1, RUN_BOUND_MS);
    cr_assert_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_READY);
    cr_expect_str_eq (f.lines.data, "Authorization: Bearer ya29.gke");
    cr_expect_str_eq (f.server.metadata_flavor, "Google");
    cr_expect_str_eq (f.server.path, SL_GCPTOKEN_METADATA_PATH);
    sl_auth_destroy (&auth);
    //  No metadata server there: the refusal says what else to set.
    f.server.status = 404;
    snprintf (f.server.answer, sizeof f.server.answer, "Not Found");
    auth = sl_gcpauth_new (f.loop, f.curlm, &c, NULL, s_notified, &f.call, why, sizeof why);
    cr_assert_not_null (auth);
    f.call.auth = auth;
    f.call.told = 0;
    cr_expect_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_PENDING);
    token_server_run (f.loop, &f.call.told, 1, RUN_BOUND_MS);
    cr_expect_eq (f.call.state, SL_AUTH_FAILED);
    cr_expect_str_eq (f.call.why, "Google access token: the token endpoint answered HTTP 404 (no key file: set "
                                  "credentials_file, GOOGLE_APPLICATION_CREDENTIALS or token_env off Google Cloud)");
    sl_auth_destroy (&auth);
    //  A key file that is no key: refused when the source is made, named.
    FILE *file = fopen (f.path, "w");
    cr_assert_not_null (file);
    fputs ("{\"type\":\"authorized_user\"}", file);
    fclose (file);
    sl_gcptoken_config_t bad = { .kind = SL_GCPTOKEN_KEY_FILE, .key_file = f.path };
    cr_expect_null (sl_gcpauth_new (f.loop, f.curlm, &bad, NULL, s_notified, &f.call, why, sizeof why));
    cr_expect (strstr (why, f.path) != NULL, "%s", why);
    s_teardown (&f);
}
