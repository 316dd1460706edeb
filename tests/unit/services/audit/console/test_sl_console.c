/*  Unit tests: services/audit/console/sl_console (routing, who may ask,
    answers), over a SQLite store in a temporary directory holding one
    recorded stream (records.h). */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_json.h"
#include "services/audit/console/sl_console.h"
#include "tests/unit/services/audit/console/oidc_fake.h"
#include "tests/unit/services/audit/records.h"

static char s_dir [64];
static sl_store_t *s_store;
static char s_sid [SL_SID_HEX_SIZE];

//  A recorded stream: text, get_weather allowed, run_shell blocked.
static void
s_setup (void)
{
    snprintf (s_dir, sizeof s_dir, "/tmp/sluice-console-XXXXXX");
    cr_assert_not_null (mkdtemp (s_dir));
    char path [128], *error = NULL;
    snprintf (path, sizeof path, "%s/a.db", s_dir);
    s_store = sl_store_open (path, &error);
    cr_assert_not_null (s_store, "%s", error ? error : "");
    const uint8_t sid [SL_SID_SIZE] = { 0xab, 0xcd };
    sl_sid_hex (sid, s_sid);
    records_recorded (s_store, sid);
}

static void
s_teardown (void)
{
    sl_store_close (&s_store);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", s_dir);
    cr_expect_eq (system (cmd), 0);
}

typedef struct {
    const char *query [8][2];
    const char *header [4][2];
} s_args_t;

static const char *
s_query (void *arg, const char *name)
{
    s_args_t *a = arg;
    for (int i = 0; i < 8 && a->query [i][0]; i++)
        if (strcmp (a->query [i][0], name) == 0)
            return a->query [i][1];
    return NULL;
}

static const char *
s_header (void *arg, const char *name)
{
    s_args_t *a = arg;
    for (int i = 0; i < 4 && a->header [i][0]; i++)
        if (strcasecmp (a->header [i][0], name) == 0)
            return a->header [i][1];
    return NULL;
}

static int
s_ask (sl_console_t *c, const char *method, const char *path, s_args_t *args, const char *body, bool loopback,
       sl_console_resp_t *resp)
{
    sl_console_req_t req = { method, path, s_query, s_header, args, sl_str (body), loopback };
    sl_buf_reset (&resp->body);
    resp->status = 0;                   //  a decision sets none: the service answers it later
    sl_console_handle (c, &req, resp);
    return resp->status;
}

Test (sl_console, without_keys_only_this_machine_may_ask, .init = s_setup, .fini = s_teardown)
{
    sl_console_t *c = sl_console_new (s_store, "");
    sl_console_resp_t resp = { 0 };
    s_args_t none = { 0 };
    cr_expect_eq (s_ask (c, "GET", "/api/streams", &none, NULL, true, &resp), 200);
    cr_expect (sl_json_valid (sl_buf_str (&resp.body)));
    cr_expect_not_null (strstr (sl_buf_cstr (&resp.body), s_sid));
    cr_expect_eq (s_ask (c, "GET", "/api/streams", &none, NULL, false, &resp), 403);
    cr_expect_eq (s_ask (c, "GET", "/", &none, NULL, false, &resp), 200, "the page holds no data");
    cr_expect_not_null (strstr (resp.content_type, "text/html"));
    cr_expect_eq (s_ask (c, "GET", "/app.js", &none, NULL, true, &resp), 200);
    cr_expect_not_null (strstr (resp.content_type, "javascript"));
    cr_expect_eq (s_ask (c, "GET", "/../../etc/passwd", &none, NULL, true, &resp), 404);
    cr_expect_eq (s_ask (c, "GET", "/nothing.css", &none, NULL, true, &resp), 404);
    sl_buf_free (&resp.body);
    sl_console_destroy (&c);
}

//  DNS rebinding: a page whose name now answers 127.0.0.1 is a loopback
//  peer, but its requests name its own site.
Test (sl_console, without_keys_a_page_of_another_site_is_refused, .init = s_setup, .fini = s_teardown)
{
    sl_console_t *c = sl_console_new (s_store, "");
    sl_console_resp_t resp = { 0 };
    s_args_t rebound = { .header = { { "Host", "rebound.example:8081" } } };
    cr_expect_eq (s_ask (c, "GET", "/api/streams", &rebound, NULL, true, &resp), 403);
    cr_expect_null (strstr (sl_buf_cstr (&resp.body), s_sid), "no stream shown");
    cr_expect_not_null (strstr (sl_buf_cstr (&resp.body), "Host"), "says why: %s", sl_buf_cstr (&resp.body));
    s_args_t decide = { .header = { { "Host", "rebound.example:8081" }, { "Content-Type", "application/json" } } };
    cr_expect_eq (s_ask (c, "POST", "/api/approvals/0123456789abcdef0123456789abcdef", &decide,
                         "{\"decision\":\"approve\"}", true, &resp), 403);
    cr_expect_neq (resp.kind, SL_CONSOLE_DECIDE, "no decision goes to the judges");
    if (resp.kind == SL_CONSOLE_DECIDE)
        sl_approvals_parsed_clear (&resp.decision);
    s_args_t page = { .header = { { "Host", "127.0.0.1:8081" }, { "Origin", "http://rebound.example:8081" } } };
    cr_expect_eq (s_ask (c, "GET", "/api/streams", &page, NULL, true, &resp), 403);
    cr_expect_not_null (strstr (sl_buf_cstr (&resp.body), "Origin"), "says why: %s", sl_buf_cstr (&resp.body));
    //  kubectl port-forward, and the console's own page.
    s_args_t forwarded = { .header = { { "Host", "localhost:8081" } } };
    cr_expect_eq (s_ask (c, "GET", "/api/streams", &forwarded, NULL, true, &resp), 200);
    cr_expect_not_null (strstr (sl_buf_cstr (&resp.body), s_sid));
    s_args_t own = { .header = { { "Host", "127.0.0.1:8081" }, { "Origin", "http://127.0.0.1:8081" } } };
    cr_expect_eq (s_ask (c, "GET", "/api/streams", &own, NULL, true, &resp), 200);
    sl_console_destroy (&c);
    //  With keys the key is the guard: the console's own name need not be local.
    c = sl_console_new (s_store, "alpha-key");
    s_args_t keyed = { .header = { { "Host", "console.example" }, { "Authorization", "Bearer alpha-key" } } };
    cr_expect_eq (s_ask (c, "GET", "/api/streams", &keyed, NULL, false, &resp), 200);
    sl_buf_free (&resp.body);
    sl_console_destroy (&c);
}

Test (sl_console, keys_open_it_by_bearer_or_by_a_login_session, .init = s_setup, .fini = s_teardown)
{
    sl_console_t *c = sl_console_new (s_store, " alpha-key ,beta-key");
    cr_expect (sl_console_has_keys (c));
    sl_console_resp_t resp = { 0 };
    s_args_t none = { 0 };
    cr_expect_eq (s_ask (c, "GET", "/api/meta", &none, NULL, true, &resp), 401, "a key is needed, loopback too");
    s_args_t bearer = { .header = { { "Authorization", "Bearer beta-key" } } };
    cr_expect_eq (s_ask (c, "GET", "/api/meta", &bearer, NULL, false, &resp), 200);
    s_args_t wrong = { .header = { { "Authorization", "Bearer beta-ke" } } };
    cr_expect_eq (s_ask (c, "GET", "/api/meta", &wrong, NULL, false, &resp), 401);
    //  A login needs JSON and a key; it gives a session cookie.
    s_args_t form = { .header = { { "Content-Type", "application/x-www-form-urlencoded" } } };
    cr_expect_eq (s_ask (c, "POST", "/api/login", &form, "{\"key\":\"alpha-key\"}", false, &resp), 415);
    s_args_t json = { .header = { { "Content-Type", "application/json" } } };
    cr_expect_eq (s_ask (c, "POST", "/api/login", &json, "{\"key\":\"nope\"}", false, &resp), 401);
    cr_expect_eq (s_ask (c, "POST", "/api/login", &json, "{\"key\":\"alpha-key\"}", false, &resp), 200);
    cr_assert_not_null (strstr (resp.cookie, SL_CONSOLE_COOKIE "="));
    cr_expect_not_null (strstr (resp.cookie, "HttpOnly"));
    cr_expect_not_null (strstr (resp.cookie, "SameSite=Strict"));
    cr_expect_null (strstr (resp.cookie, "alpha-key"), "the cookie is not the key");
    char cookie [200];
    snprintf (cookie, sizeof cookie, "other=1; %.*s", (int) strcspn (resp.cookie, ";"), resp.cookie);
    s_args_t session = { .header = { { "Cookie", cookie } } };
    cr_expect_eq (s_ask (c, "GET", "/api/policies", &session, NULL, false, &resp), 200);
    s_args_t forged = { .header = { { "Cookie", SL_CONSOLE_COOKIE "=0000" } } };
    cr_expect_eq (s_ask (c, "GET", "/api/policies", &forged, NULL, false, &resp), 401);
    //  The live feed: the caller streams it.
    cr_expect_eq (s_ask (c, "GET", "/api/live", &session, NULL, false, &resp), 200);
    cr_expect_eq (resp.kind, SL_CONSOLE_LIVE);
    sl_buf_free (&resp.body);
    sl_console_destroy (&c);
}

//  A session's cookie (Cookie header value) from a login's Set-Cookie.
static void
s_login_cookie (sl_console_t *c, const char *key, char *cookie, size_t size)
{
    sl_console_resp_t resp = { 0 };
    s_args_t json = { .header = { { "Content-Type", "application/json" } } };
    char body [64];
    snprintf (body, sizeof body, "{\"key\":\"%s\"}", key);
    cr_assert_eq (s_ask (c, "POST", "/api/login", &json, body, false, &resp), 200);
    snprintf (cookie, size, "%.*s", (int) strcspn (resp.cookie, ";"), resp.cookie);
    sl_buf_free (&resp.body);
}

Test (sl_console, logout_ends_the_session_on_the_server, .init = s_setup, .fini = s_teardown)
{
    sl_console_t *c = sl_console_new (s_store, "alpha-key");
    char mine [200], other [200];
    s_login_cookie (c, "alpha-key", mine, sizeof mine);
    s_login_cookie (c, "alpha-key", other, sizeof other);
    sl_console_resp_t resp = { 0 };
    s_args_t session = { .header = { { "Cookie", mine } } };
    cr_expect_eq (s_ask (c, "GET", "/api/policies", &session, NULL, false, &resp), 200);
    //  Logging out changes something: JSON only (a form elsewhere cannot).
    s_args_t form = { .header = { { "Cookie", mine }, { "Content-Type", "text/plain" } } };
    cr_expect_eq (s_ask (c, "POST", "/api/logout", &form, "{}", false, &resp), 415);
    cr_expect_eq (s_ask (c, "GET", "/api/policies", &session, NULL, false, &resp), 200, "still logged in");
    s_args_t out = { .header = { { "Cookie", mine }, { "Content-Type", "application/json" } } };
    cr_expect_eq (s_ask (c, "POST", "/api/logout", &out, "{}", false, &resp), 200);
    cr_expect_not_null (strstr (resp.cookie, "Max-Age=0"), "the browser forgets it");
    //  The old cookie, replayed (copied before the logout), is refused.
    cr_expect_eq (s_ask (c, "GET", "/api/policies", &session, NULL, false, &resp), 401,
                  "a logged-out session's cookie opens nothing");
    cr_expect_eq (s_ask (c, "GET", "/api/live", &session, NULL, false, &resp), 401);
    cr_expect_eq (s_ask (c, "POST", "/api/logout", &out, "{}", false, &resp), 401, "nor logs out again");
    //  Another session of the same key goes on.
    s_args_t still = { .header = { { "Cookie", other } } };
    cr_expect_eq (s_ask (c, "GET", "/api/policies", &still, NULL, false, &resp), 200);
    sl_buf_free (&resp.body);
    sl_console_destroy (&c);
}

Test (sl_console, answers_the_pages_questions, .init = s_setup, .fini = s_teardown)
{
    sl_console_t *c = sl_console_new (s_store, "");
    sl_console_resp_t resp = { 0 };
    s_args_t by_rule = { .query = { { "action", "block" }, { "tool", "run_shell" } } };
    cr_expect_eq (s_ask (c, "GET", "/api/streams", &by_rule, NULL, true, &resp), 200);
    cr_expect_not_null (strstr (sl_buf_cstr (&resp.body), s_sid));
    s_args_t none = { 0 };
    char path [80];
    snprintf (path, sizeof path, "/api/streams/%s", s_sid);
    cr_expect_eq (s_ask (c, "GET", path, &none, NULL, true, &resp), 200);
    cr_expect_not_null (strstr (sl_buf_cstr (&resp.body), "\"action\":\"block\""));
    cr_expect_not_null (strstr (sl_buf_cstr (&resp.body), "\"mcp\":\"tools/call run_shell\""),
                        "the MCP request the stream stands for: %s", sl_buf_cstr (&resp.body));
    cr_expect_eq (s_ask (c, "GET", "/api/streams/ABCD", &none, NULL, true, &resp), 400);
    cr_expect_eq (s_ask (c, "GET", "/api/streams/0123456789abcdef0123456789abcdef", &none, NULL, true, &resp), 404);
    s_args_t range = { .query = { { "from", "0" }, { "to", "100000" }, { "bucket", "1000" } } };
    cr_expect_eq (s_ask (c, "GET", "/api/stats", &range, NULL, true, &resp), 200);
    cr_expect_not_null (strstr (sl_buf_cstr (&resp.body), "[1000,\"(default)\",\"allow\",1]"), "%s",
                        sl_buf_cstr (&resp.body));
    cr_expect_eq (s_ask (c, "GET", "/api/gaps", &none, NULL, true, &resp), 200);
    //  Usage: by day and team (the stream has none: ""), from the start of from's day.
    s_args_t usage = { .query = { { "from", "500" }, { "to", "100000" }, { "group", "team" } } };
    cr_expect_eq (s_ask (c, "GET", "/api/usage", &usage, NULL, true, &resp), 200);
    cr_expect_not_null (strstr (sl_buf_cstr (&resp.body), "{\"from\":0,\"to\":100000,\"group\":\"team\",\"rows\":"
                                                          "[{\"day\":0,\"team\":\"\",\"requests\":1,"), "%s",
                        sl_buf_cstr (&resp.body));
    s_args_t bad_group = { .query = { { "group", "planet" } } };
    cr_expect_eq (s_ask (c, "GET", "/api/usage", &bad_group, NULL, true, &resp), 400);
    s_args_t by_team = { .query = { { "team", "nobody" } } };
    cr_expect_eq (s_ask (c, "GET", "/api/streams", &by_team, NULL, true, &resp), 200);
    cr_expect_null (strstr (sl_buf_cstr (&resp.body), s_sid), "a team filter that matches no stream");
    cr_expect_eq (s_ask (c, "GET", "/api/nothing", &none, NULL, true, &resp), 404);
    cr_expect_eq (s_ask (c, "DELETE", "/api/streams", &none, NULL, true, &resp), 405);
    sl_buf_free (&resp.body);
    sl_console_destroy (&c);
}

//  --------------------------------------------------------------------------
//  Sign-in and roles

static int64_t
s_clock (void *arg)
{
    (void) arg;
    return (int64_t) time (NULL) * 1000;
}

//  Two pending approvals: team eng's and team ops's.
static const uint8_t s_eng [SL_SID_SIZE] = { 0xe1 }, s_ops [SL_SID_SIZE] = { 0x0f };

static void
s_pending (void)
{
    sl_archive_t *archive = sl_archive_new (s_store, 0);
    sl_record_meta_t meta = records_meta (1000000, 0);
    cr_assert_eq (sl_store_begin (s_store), 0);
    sl_msg_t eng = records_approval (s_eng, "pending", 1000000);
    sl_msg_t ops = records_approval (s_ops, "pending", 1000100);
    ops.team = SL_STR_LIT ("ops");
    cr_assert_eq (sl_archive_apply (archive, &meta, &eng), 1);
    cr_assert_eq (sl_archive_apply (archive, &meta, &ops), 1);
    cr_assert_eq (sl_store_commit (s_store), 0);
    sl_archive_destroy (&archive);
}

//  Sign in through /login and /login/callback with groups: the Cookie
//  header the browser would send after, into cookie ("" when refused).
static void
s_sign_in (sl_console_t *c, oidc_fake_t *op, const char *groups, char *cookie, size_t size)
{
    sl_console_resp_t resp = { 0 };
    s_args_t none = { 0 };
    cr_assert_eq (s_ask (c, "GET", "/login", &none, NULL, false, &resp), 302);
    char state [64], signin [128];
    oidc_fake_authorized (op, sl_buf_cstr (&resp.location), state, sizeof state);
    snprintf (signin, sizeof signin, "%.*s", (int) strcspn (resp.cookie, ";"), resp.cookie);
    op->groups = groups;
    s_args_t back = { .query = { { "code", "good-code" }, { "state", state } }, .header = { { "Cookie", signin } } };
    cr_assert_eq (s_ask (c, "GET", "/login/callback", &back, NULL, false, &resp), 302);
    cookie [0] = 0;
    if (resp.cookie [0])
        snprintf (cookie, size, "%.*s", (int) strcspn (resp.cookie, ";"), resp.cookie);
    sl_buf_free (&resp.body);
    sl_buf_free (&resp.location);
}

static sl_console_t *
s_console_with_sign_in (oidc_fake_t *op, sl_oidc_t **oidc, const char *keys)
{
    oidc_fake_init (op);
    sl_oidc_config_t config = { .issuer = OIDC_FAKE_ISSUER, .client_id = OIDC_FAKE_CLIENT, .client_secret = "s",
                                .redirect_uri = "http://127.0.0.1:8081/login/callback" };
    *oidc = sl_oidc_new (&config);
    cr_assert_not_null (*oidc);
    sl_oidc_set_fetch (*oidc, oidc_fake_fetch, op);
    sl_console_t *c = sl_console_new (s_store, keys);
    sl_console_set_clock (c, s_clock, NULL);
    sl_console_set_oidc (c, *oidc);
    return c;
}

Test (sl_console, a_viewer_sees_streams_without_their_contents, .init = s_setup, .fini = s_teardown)
{
    oidc_fake_t op;
    sl_oidc_t *oidc;
    sl_console_t *c = s_console_with_sign_in (&op, &oidc, "");
    s_pending ();
    char cookie [256];
    s_sign_in (c, &op, NULL, cookie, sizeof cookie);
    cr_assert (*cookie, "signed in");
    s_args_t viewer = { .header = { { "Cookie", cookie } } };
    sl_console_resp_t resp = { 0 };
    cr_expect_eq (s_ask (c, "GET", "/api/me", &viewer, NULL, false, &resp), 200);
    records_expect_in (sl_buf_cstr (&resp.body), "\"role\":\"viewer\"");
    records_expect_in (sl_buf_cstr (&resp.body), "\"email\":\"ann@example.com\"");
    char path [128];
    snprintf (path, sizeof path, "/api/streams/%s", s_sid);
    cr_expect_eq (s_ask (c, "GET", path, &viewer, NULL, false, &resp), 200);
    const char *body = sl_buf_cstr (&resp.body);
    records_expect_in (body, "\"verdicts\"");
    records_expect_in (body, "run_shell");
    records_expect_in (body, "\"redacted\":true");
    cr_expect_null (strstr (body, "rm -rf"), "no argument: %s", body);
    cr_expect_null (strstr (body, "Tidying up"), "no message text");
    cr_expect_null (strstr (body, "tidy up"), "no user message");
    cr_expect_eq (s_ask (c, "GET", "/api/streams", &viewer, NULL, false, &resp), 200);
    cr_expect_null (strstr (sl_buf_cstr (&resp.body), "tidy up"));
    records_expect_in (sl_buf_cstr (&resp.body), s_sid);
    cr_expect_eq (s_ask (c, "GET", "/api/approvals", &viewer, NULL, false, &resp), 200);
    records_expect_in (sl_buf_cstr (&resp.body), "shell");
    cr_expect_null (strstr (sl_buf_cstr (&resp.body), "git push"), "no approval's arguments");
    cr_expect_null (strstr (sl_buf_cstr (&resp.body), "force-push"), "no message quoting them");
    //  Nor through another door.
    s_args_t search = { .query = { { "q", "rm -rf" } }, .header = { { "Cookie", cookie } } };
    cr_expect_eq (s_ask (c, "GET", "/api/streams", &search, NULL, false, &resp), 403);
    records_expect_in (sl_buf_cstr (&resp.body), "auditor");
    snprintf (path, sizeof path, "/api/capture/%s", s_sid);
    cr_expect_eq (s_ask (c, "GET", path, &viewer, NULL, false, &resp), 403);
    //  The live view, its feed redacted as it is sent (sl_live_redact).
    cr_expect_eq (s_ask (c, "GET", "/api/live", &viewer, NULL, false, &resp), 200);
    cr_expect_eq (resp.kind, SL_CONSOLE_LIVE);
    cr_expect_eq (resp.caller.role, SL_CONSOLE_VIEWER);
    cr_expect_eq (s_ask (c, "GET", "/api/policies", &viewer, NULL, false, &resp), 403);
    s_args_t post = { .header = { { "Cookie", cookie }, { "Content-Type", "application/json" } } };
    cr_expect_eq (s_ask (c, "POST", "/api/try", &post, "{}", false, &resp), 403);
    char decide [128];
    snprintf (decide, sizeof decide, "/api/approvals/e1%030d", 0);
    cr_expect_eq (s_ask (c, "POST", decide, &post, "{\"decision\":\"approve\"}", false, &resp), 403);
    cr_expect_neq (resp.kind, SL_CONSOLE_DECIDE);
    //  An auditor sees the contents.
    s_sign_in (c, &op, "[\"sluice-auditor\"]", cookie, sizeof cookie);
    s_args_t auditor = { .header = { { "Cookie", cookie } } };
    snprintf (path, sizeof path, "/api/streams/%s", s_sid);
    cr_expect_eq (s_ask (c, "GET", path, &auditor, NULL, false, &resp), 200);
    records_expect_in (sl_buf_cstr (&resp.body), "rm -rf");
    cr_expect_eq (s_ask (c, "GET", "/api/policies", &auditor, NULL, false, &resp), 403, "admins only");
    sl_buf_free (&resp.body);
    sl_console_destroy (&c);
    sl_oidc_destroy (&oidc);
    jwt_fixture_free (&op.key);
}

Test (sl_console, an_approver_decides_for_its_teams_only, .init = s_setup, .fini = s_teardown)
{
    oidc_fake_t op;
    sl_oidc_t *oidc;
    sl_console_t *c = s_console_with_sign_in (&op, &oidc, "ci-bot:admin:K1");
    s_pending ();
    char cookie [256];
    s_sign_in (c, &op, "[\"sluice-approver:eng\"]", cookie, sizeof cookie);
    sl_console_resp_t resp = { 0 };
    s_args_t pending = { .query = { { "state", "pending" } }, .header = { { "Cookie", cookie } } };
    cr_expect_eq (s_ask (c, "GET", "/api/approvals", &pending, NULL, false, &resp), 200);
    char eng [SL_SID_HEX_SIZE], ops [SL_SID_HEX_SIZE];
    sl_sid_hex (s_eng, eng);
    sl_sid_hex (s_ops, ops);
    records_expect_in (sl_buf_cstr (&resp.body), eng);
    records_expect_in (sl_buf_cstr (&resp.body), "git push");
    cr_expect_null (strstr (sl_buf_cstr (&resp.body), ops), "team ops is not its: %s", sl_buf_cstr (&resp.body));
    s_args_t post = { .header = { { "Cookie", cookie }, { "Content-Type", "application/json" } } };
    char path [128];
    snprintf (path, sizeof path, "/api/approvals/%s", eng);
    s_ask (c, "POST", path, &post, "{\"decision\":\"approve\"}", false, &resp);
    cr_expect_eq (resp.kind, SL_CONSOLE_DECIDE, "%s", sl_buf_cstr (&resp.body));
    cr_expect_str_eq (resp.caller.email, "ann@example.com", "the decision names the person");
    cr_expect_str_eq (resp.caller.sub, "u-ann");
    if (resp.kind == SL_CONSOLE_DECIDE)
        sl_approvals_parsed_clear (&resp.decision);
    snprintf (path, sizeof path, "/api/approvals/%s", ops);
    cr_expect_eq (s_ask (c, "POST", path, &post, "{\"decision\":\"approve\"}", false, &resp), 403);
    cr_expect_neq (resp.kind, SL_CONSOLE_DECIDE);
    records_expect_in (sl_buf_cstr (&resp.body), "team");
    //  An admin key decides for any team, and is named as the key.
    s_args_t admin = { .header = { { "Authorization", "Bearer K1" }, { "Content-Type", "application/json" } } };
    s_ask (c, "POST", path, &admin, "{\"decision\":\"deny\"}", false, &resp);
    cr_expect_eq (resp.kind, SL_CONSOLE_DECIDE);
    cr_expect_str_eq (resp.caller.sub, "key:ci-bot");
    if (resp.kind == SL_CONSOLE_DECIDE)
        sl_approvals_parsed_clear (&resp.decision);
    cr_expect_eq (s_ask (c, "GET", "/api/policies", &admin, NULL, false, &resp), 200);
    sl_buf_free (&resp.body);
    sl_console_destroy (&c);
    sl_oidc_destroy (&oidc);
    jwt_fixture_free (&op.key);
}

Test (sl_console, sign_in_refusals_are_said_and_a_logout_kills_the_cookie, .init = s_setup, .fini = s_teardown)
{
    oidc_fake_t op;
    sl_oidc_t *oidc;
    sl_console_t *c = s_console_with_sign_in (&op, &oidc, "dash:viewer:K2");
    sl_console_resp_t resp = { 0 };
    s_args_t none = { 0 };
    cr_expect_eq (s_ask (c, "GET", "/api/streams", &none, NULL, true, &resp), 401,
                  "with sign-in, this machine is let in no more");
    //  The provider down: the page is told, and keys still work.
    op.down = true;
    cr_expect_eq (s_ask (c, "GET", "/login", &none, NULL, false, &resp), 302);
    cr_expect_eq (strncmp (sl_buf_cstr (&resp.location), "/?signin_error=", 15), 0, "%s",
                  sl_buf_cstr (&resp.location));
    records_expect_in (sl_buf_cstr (&resp.location), "cannot%20be%20reached");
    s_args_t key = { .header = { { "Authorization", "Bearer K2" } } };
    cr_expect_eq (s_ask (c, "GET", "/api/streams", &key, NULL, false, &resp), 200);
    op.down = false;
    //  A replayed state: refused, no cookie.
    cr_assert_eq (s_ask (c, "GET", "/login", &none, NULL, false, &resp), 302);
    char state [64], signin [128];
    oidc_fake_authorized (&op, sl_buf_cstr (&resp.location), state, sizeof state);
    snprintf (signin, sizeof signin, "%.*s", (int) strcspn (resp.cookie, ";"), resp.cookie);
    records_expect_in (resp.cookie, "SameSite=Lax");
    //  The redirect back in another browser (a link sent to sign the
    //  victim in as someone else): refused, and the state still waits.
    s_args_t elsewhere = { .query = { { "code", "good-code" }, { "state", state } } };
    cr_expect_eq (s_ask (c, "GET", "/login/callback", &elsewhere, NULL, false, &resp), 302);
    cr_expect_not (resp.cookie [0], "no session for another browser");
    records_expect_in (sl_buf_cstr (&resp.location), "browser");
    s_args_t back = { .query = { { "code", "good-code" }, { "state", state } }, .header = { { "Cookie", signin } } };
    cr_expect_eq (s_ask (c, "GET", "/login/callback", &back, NULL, false, &resp), 302);
    cr_expect (resp.cookie [0]);
    char cookie [256];
    snprintf (cookie, sizeof cookie, "%.*s", (int) strcspn (resp.cookie, ";"), resp.cookie);
    cr_expect_eq (s_ask (c, "GET", "/login/callback", &back, NULL, false, &resp), 302);
    cr_expect_not (resp.cookie [0], "a replayed state opens nothing");
    records_expect_in (sl_buf_cstr (&resp.location), "signin_error");
    //  Wrong aud: no cookie.
    cr_assert_eq (s_ask (c, "GET", "/login", &none, NULL, false, &resp), 302);
    oidc_fake_authorized (&op, sl_buf_cstr (&resp.location), state, sizeof state);
    snprintf (signin, sizeof signin, "%.*s", (int) strcspn (resp.cookie, ";"), resp.cookie);
    op.aud = "someone-else";
    cr_expect_eq (s_ask (c, "GET", "/login/callback", &back, NULL, false, &resp), 302);
    cr_expect_not (resp.cookie [0]);
    records_expect_in (sl_buf_cstr (&resp.location), "aud");
    op.aud = NULL;
    //  Logout: the session ends here, the provider's end_session is given.
    s_args_t signed_in = { .header = { { "Cookie", cookie }, { "Content-Type", "application/json" } } };
    cr_expect_eq (s_ask (c, "GET", "/api/meta", &signed_in, NULL, false, &resp), 200);
    cr_expect_eq (s_ask (c, "POST", "/api/logout", &signed_in, "{}", false, &resp), 200);
    records_expect_in (sl_buf_cstr (&resp.body), "\"end_session\":\"" OIDC_FAKE_ISSUER "/session/end\"");
    cr_expect_eq (s_ask (c, "GET", "/api/meta", &signed_in, NULL, false, &resp), 401, "the old cookie is dead");
    sl_buf_free (&resp.body);
    sl_buf_free (&resp.location);
    sl_console_destroy (&c);
    sl_oidc_destroy (&oidc);
    jwt_fixture_free (&op.key);
}

//  A provider asked on a reactor: its requests held until the test answers
//  them (with the fake provider's answers).
typedef struct {
    oidc_fake_t *op;
    int count;
    struct {
        char url [256], form [1024];
        sl_oidc_answer_fn *answer;
        void *ctx;
    } held [4];
} s_held_t;

static void
s_held_start (void *arg, const char *url, const char *form, const char *user, const char *password,
              sl_oidc_answer_fn *answer, void *ctx)
{
    (void) user;
    (void) password;
    s_held_t *h = arg;
    cr_assert_lt (h->count, 4);
    snprintf (h->held [h->count].url, sizeof h->held [0].url, "%s", url);
    snprintf (h->held [h->count].form, sizeof h->held [0].form, "%s", form ? form : "");
    h->held [h->count].answer = answer;
    h->held [h->count].ctx = ctx;
    h->count++;
}

//  Answer the oldest request held; its URL must hold want.
static void
s_held_answer (s_held_t *h, const char *want)
{
    cr_assert_gt (h->count, 0, "a request to the provider is held");
    cr_expect_not_null (strstr (h->held [0].url, want), "%s", h->held [0].url);
    sl_buf_t body = { 0 };
    int status = 0;
    char why [SL_OIDC_WHY_MAX] = "";
    char url [256], form [1024];
    snprintf (url, sizeof url, "%s", h->held [0].url);
    snprintf (form, sizeof form, "%s", h->held [0].form);
    sl_oidc_answer_fn *answer = h->held [0].answer;
    void *ctx = h->held [0].ctx;
    memmove (&h->held [0], &h->held [1], (size_t) (h->count - 1) * sizeof h->held [0]);
    h->count--;
    int rc = oidc_fake_fetch (h->op, url, *form ? form : NULL, "u", "p", &status, &body, why);
    answer (ctx, rc, status, &body, why);
    sl_buf_free (&body);
}

typedef struct {
    int calls;
    int status;
    char location [1024];
    char cookie [SL_CONSOLE_COOKIE_MAX];
} s_answered_t;

static void
s_on_answered (void *arg, sl_console_resp_t *resp)
{
    s_answered_t *a = arg;
    a->calls++;
    a->status = resp->status;
    snprintf (a->location, sizeof a->location, "%s", sl_buf_cstr (&resp->location));
    snprintf (a->cookie, sizeof a->cookie, "%s", resp->cookie);
}

Test (sl_console, a_sign_in_waits_for_the_provider_and_is_answered_when_it_has, .init = s_setup,
      .fini = s_teardown)
{
    oidc_fake_t op;
    sl_oidc_t *oidc;
    sl_console_t *c = s_console_with_sign_in (&op, &oidc, "");
    s_held_t held = { .op = &op };
    sl_oidc_set_start (oidc, s_held_start, &held);
    sl_console_resp_t resp = { 0 };
    s_args_t none = { 0 };
    //  /login: nothing to answer until the provider has.
    cr_expect_eq (s_ask (c, "GET", "/login", &none, NULL, false, &resp), 0);
    cr_assert_eq (resp.kind, SL_CONSOLE_WAIT);
    cr_assert_not_null (resp.wait);
    s_answered_t got = { 0 };
    sl_console_wait_on (resp.wait, s_on_answered, &got);
    cr_expect_eq (sl_oidc_running (oidc), 1);
    s_held_answer (&held, "/.well-known/openid-configuration");
    cr_expect_eq (got.calls, 0, "the JWKS is still to come");
    s_held_answer (&held, "/jwks");
    cr_expect_eq (got.calls, 1);
    cr_expect_eq (got.status, 302);
    cr_expect_not_null (strstr (got.location, OIDC_FAKE_ISSUER "/auth?"), "%s", got.location);
    cr_expect_not_null (strstr (got.cookie, "sluice_signin="), "%s", got.cookie);
    cr_expect_eq (sl_oidc_running (oidc), 0);
    //  The callback: the token exchange waits the same way.
    char state [64], signin [128];
    oidc_fake_authorized (&op, got.location, state, sizeof state);
    snprintf (signin, sizeof signin, "%.*s", (int) strcspn (got.cookie, ";"), got.cookie);
    s_args_t back = { .query = { { "code", "good-code" }, { "state", state } }, .header = { { "Cookie", signin } } };
    memset (&resp, 0, sizeof resp);
    cr_expect_eq (s_ask (c, "GET", "/login/callback", &back, NULL, false, &resp), 0);
    cr_assert_eq (resp.kind, SL_CONSOLE_WAIT);
    memset (&got, 0, sizeof got);
    sl_console_wait_on (resp.wait, s_on_answered, &got);
    s_held_answer (&held, "/token");
    cr_expect_eq (got.calls, 1);
    cr_expect_eq (got.status, 302);
    cr_expect_str_eq (got.location, "/");
    cr_expect_not_null (strstr (got.cookie, "HttpOnly"), "a session: %s", got.cookie);
    //  A browser that left (or was refused for the wait) is not answered;
    //  its sign-in goes when the provider's answer comes.
    memset (&resp, 0, sizeof resp);
    cr_expect_eq (s_ask (c, "GET", "/login", &none, NULL, false, &resp), 0);
    cr_assert_eq (resp.kind, SL_CONSOLE_WAIT);
    memset (&got, 0, sizeof got);
    sl_console_wait_on (resp.wait, s_on_answered, &got);
    sl_console_wait_drop (resp.wait);
    op.down = true;
    s_held_answer (&held, "/.well-known/openid-configuration");
    cr_expect_eq (got.calls, 0);
    cr_expect_eq (held.count, 0, "nothing more asked of a provider down");
    cr_expect_eq (sl_oidc_running (oidc), 0);
    sl_buf_free (&resp.body);
    sl_buf_free (&resp.location);
    sl_console_destroy (&c);
    sl_oidc_destroy (&oidc);
    jwt_fixture_free (&op.key);
}
