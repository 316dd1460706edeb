/*  Unit tests: common/cloud/sl_azauth - Entra ID access tokens as the
    credential source of an attempt: a client secret's token from a real
    token endpoint on a loopback port, one fetch for the calls waiting
    together, a refusal failing the waiting calls with the endpoint's
    error_description (and the next call fetching afresh), a token that
    would add a header refused. */
#include <criterion/criterion.h>
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cloud/sl_azauth.h"
#include "tests/unit/token_server.h"

#define RUN_BOUND_MS 5000

//  What the waiting call does when the source has news: ask again, as
//  sl_upcall_authorized does, from inside the hook.
typedef struct {
    sl_auth_t *auth;
    int told;
    int state;                          //  what asking again inside the hook answered
    char why [400];
} s_call_t;

static int
s_ask (sl_auth_t *auth, sl_buf_t *lines, size_t *count, sl_buf_t *why)
{
    static const sl_auth_request_t req = { .method = "POST", .url = "https://r.openai.azure.com/openai/v1/x" };
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

typedef struct {
    zloop_t *loop;
    sl_curlm_t *curlm;
    token_server_t server;
    char authority [64];
    s_call_t call;
    sl_buf_t lines, why;
    size_t count;
} s_fixture_t;

static sl_auth_t *
s_setup (s_fixture_t *f, int status, const char *answer)
{
    memset (f, 0, sizeof *f);
    f->loop = zloop_new ();
    f->curlm = sl_curlm_new (f->loop);
    token_server_start (&f->server, f->loop);
    f->server.status = status;
    snprintf (f->server.answer, sizeof f->server.answer, "%s", answer);
    snprintf (f->authority, sizeof f->authority, "http://127.0.0.1:%d", f->server.port);
    sl_aztoken_config_t c = { .kind = SL_AZTOKEN_SECRET, .authority = f->authority, .tenant = "contoso.onmicrosoft.com",
                              .client_id = "app-1", .client_secret = "s3cret" };
    char why [300];
    sl_auth_t *auth = sl_azauth_new (f->loop, f->curlm, &c, NULL, s_notified, &f->call, why, sizeof why);
    cr_assert_not_null (auth, "%s", why);
    f->call.auth = auth;
    return auth;
}

static void
s_teardown (s_fixture_t *f)
{
    sl_buf_free (&f->lines);
    sl_buf_free (&f->why);
    token_server_stop (&f->server);
    sl_curlm_destroy (&f->curlm);
    zloop_destroy (&f->loop);
}

Test (sl_azauth, a_client_secrets_token_for_each_attempt_one_fetch_for_all_waiting)
{
    s_fixture_t f;
    sl_auth_t *auth = s_setup (&f, 200, "{\"token_type\":\"Bearer\",\"expires_in\":3599,\"access_token\":\"eyJ.first\"}");
    cr_expect_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_PENDING);
    cr_expect_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_PENDING, "a second call waits too");
    token_server_run (f.loop, &f.call.told, 1, RUN_BOUND_MS);
    cr_assert_eq (f.call.told, 1, "the waiting calls are told once");
    cr_expect_eq (f.call.state, SL_AUTH_READY, "%s", f.call.why);
    cr_expect_eq (f.server.requests, 1, "one grant for the calls waiting together");
    cr_assert_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_READY);
    cr_expect_eq (f.count, 1);
    cr_expect_str_eq (f.lines.data, "Authorization: Bearer eyJ.first");
    cr_expect_str_eq (f.server.path, "/contoso.onmicrosoft.com/oauth2/v2.0/token");
    cr_expect_eq (sl_aztoken_kind (sl_azauth_token (auth)), SL_AZTOKEN_SECRET);
    sl_auth_destroy (&auth);
    cr_expect_null (auth);
    s_teardown (&f);
}

Test (sl_azauth, a_refusal_fails_the_waiting_calls_with_its_description_and_the_next_fetches_again)
{
    s_fixture_t f;
    sl_auth_t *auth = s_setup (&f, 401, "{\"error\":\"invalid_client\",\"error_description\":\"AADSTS7000215: Invalid "
                                        "client secret provided.\"}");
    cr_expect_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_PENDING);
    token_server_run (f.loop, &f.call.told, 1, RUN_BOUND_MS);
    cr_assert_eq (f.call.told, 1);
    cr_expect_eq (f.call.state, SL_AUTH_FAILED, "the waiting call is refused, not left waiting");
    cr_expect_str_eq (f.call.why, "Entra ID access token: the token endpoint refused (HTTP 401): invalid_client: "
                                  "AADSTS7000215: Invalid client secret provided.");
    cr_expect_null (strstr (f.call.why, "s3cret"));
    int before = f.server.requests;
    f.server.status = 200;
    snprintf (f.server.answer, sizeof f.server.answer, "{\"access_token\":\"eyJ.second\",\"expires_in\":3599}");
    cr_expect_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_PENDING, "a later call fetches afresh");
    token_server_run (f.loop, &f.call.told, 2, RUN_BOUND_MS);
    cr_expect_gt (f.server.requests, before);
    cr_expect_eq (f.call.state, SL_AUTH_READY, "%s", f.call.why);
    cr_assert_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_READY);
    cr_expect_str_eq (f.lines.data, "Authorization: Bearer eyJ.second");
    sl_auth_destroy (&auth);
    s_teardown (&f);
}

Test (sl_azauth, a_token_that_would_add_a_header_is_refused)
{
    s_fixture_t f;
    sl_auth_t *auth = s_setup (&f, 200, "{\"access_token\":\"eyJ.x\\r\\nX-Injected: 1\",\"expires_in\":3599}");
    cr_expect_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_PENDING);
    token_server_run (f.loop, &f.call.told, 1, RUN_BOUND_MS);
    cr_expect_eq (f.call.state, SL_AUTH_FAILED);
    cr_expect_str_eq (f.call.why, "the Entra ID access token is not fit for a header");
    cr_expect_eq (s_ask (auth, &f.lines, &f.count, &f.why), SL_AUTH_FAILED);
    cr_expect_eq (f.count, 0, "no line written");
    cr_expect_eq (f.lines.len, 0);
    sl_auth_destroy (&auth);
    s_teardown (&f);
}
