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
