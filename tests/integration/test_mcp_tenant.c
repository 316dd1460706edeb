/*  Integration: the gateway's MCP front bounded per tenant, over the real
    processes, with a client of the test's own (libcurl, one connection
    kept alive) and the MCP server of mcp_fake.h speaking 2025-11-25.

      - 10,000 initialize requests from one key: admitted under the key's
        limits (rpm), its sessions capped (--mcp-sessions-per-key) and its
        team's (--mcp-sessions-per-team); another key still gets a session
        and calls in it, the gateway stays healthy and small (the release
        gateway's peak RSS);
      - one untrusted result, then more harmless calls than the session's
        history holds: the session is still tainted;
      - stateless (2026-07-28) clients of two keys: each its own upstream
        session with the server, never one for both;
      - two users of tokens signed by one key: neither may use the
        other's session. */
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/identity/sl_keyring.h"
#include "tests/integration/harness.h"
#include "tests/integration/mcp_fake.h"
#include "tests/jwt_fixture.h"

#define TIMEOUT_MS 20000
#define TOKEN_ENV "SLUICE_TEST_MCP_TOKEN"
#define KEY_FLOOD "sk-tenant-flood"     //  team red, rpm 200: the attacker
#define KEY_RED "sk-tenant-red"         //  team red, no limits of its own
#define KEY_ENG "sk-tenant-eng"         //  team eng
#define KEY_ENG2 "sk-tenant-eng-2"      //  team eng, another key
#define FLOOD_REQUESTS 10000
#define FLOOD_RPM 200
#define PER_KEY 20                      //  --mcp-sessions-per-key
#define PER_TEAM 30                     //  --mcp-sessions-per-team
#define FLOOD_RSS_GROWTH_KB (4 * 1024)  //  the release gateway's peak RSS may grow this much (10,000 sessions: 9 MiB)
#define HISTORY_CALLS 32                //  SL_MCP_HISTORY_MAX: harmless calls after the untrusted one

static const char *s_policy =
    "version: 1\n"
    "default: allow\n"
    "trust:\n"
    "  untrusted: [read_secret]\n"
    "rules:\n"
    "  - id: tainted-no-exfiltrate\n"
    "    tool: mcp__files__echo\n"
    "    tainted: true\n"
    "    args: [{pointer: /text, regex: exfiltrate}]\n"
    "    action: block\n"
    "    message: 'sluice blocked {tool} after an untrusted result (rule {rule})'\n";

typedef struct {
    sluice_stack_t *stack;
    mcp_fake_t *fake;
    CURL *curl;                         //  one client connection, kept alive
    char dir [64];
    int metrics_port;
} s_env_t;

typedef struct {
    long status;
    char session [128];                 //  Mcp-Session-Id of the answer
    sl_buf_t body;
    json_t *json;
} s_answer_t;

//  --------------------------------------------------------------------------
//  The client

static size_t
s_collect (char *data, size_t size, size_t n, void *arg)
{
    sl_buf_append (arg, data, size * n);
    return size * n;
}

static size_t
s_header (char *data, size_t size, size_t n, void *arg)
{
    s_answer_t *a = arg;
    const char *name = "mcp-session-id:";
    size_t len = size * n;
    if (len > strlen (name) && strncasecmp (data, name, strlen (name)) == 0) {
        const char *v = data + strlen (name);
        while (*v == ' ')
            v++;
        snprintf (a->session, sizeof a->session, "%.*s", (int) strcspn (v, "\r\n"), v);
    }
    return len;
}

//  POST one JSON-RPC message to /mcp/files with credential (a key or a
//  token); session: the Mcp-Session-Id, or NULL; stateless: 2026-07-28's
//  headers (and params._meta), else 2025-11-25's.
static void
s_post (s_env_t *env, const char *credential, const char *session, bool stateless, const char *method,
        const char *name, const char *params, s_answer_t *a)
{
    memset (a, 0, sizeof *a);
    sl_buf_t auth = { 0 }, line = { 0 }, body = { 0 };
    sl_buf_printf (&auth, "Authorization: Bearer %s", credential);
    struct curl_slist *headers = curl_slist_append (NULL, "Content-Type: application/json");
    headers = curl_slist_append (headers, "Accept: application/json, text/event-stream");
    headers = curl_slist_append (headers, sl_buf_cstr (&auth));
    json_t *p = json_loads (params ? params : "{}", 0, NULL);
    if (stateless) {
        headers = curl_slist_append (headers, "MCP-Protocol-Version: 2026-07-28");
        sl_buf_printf (&line, "Mcp-Method: %s", method);
        headers = curl_slist_append (headers, sl_buf_cstr (&line));
        if (name) {
            sl_buf_reset (&line);
            sl_buf_printf (&line, "Mcp-Name: %s", name);
            headers = curl_slist_append (headers, sl_buf_cstr (&line));
        }
        json_object_set_new (p, "_meta", json_pack ("{s:s}", "io.modelcontextprotocol/protocolVersion",
                                                    "2026-07-28"));
    }
    else {
        headers = curl_slist_append (headers, "MCP-Protocol-Version: 2025-11-25");
        if (session) {
            sl_buf_reset (&line);
            sl_buf_printf (&line, "Mcp-Session-Id: %s", session);
            headers = curl_slist_append (headers, sl_buf_cstr (&line));
        }
    }
    char *text = json_dumps (p, JSON_COMPACT);
    sl_buf_printf (&body, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"%s\",\"params\":%s}", method, text);
    free (text);
    json_decref (p);
    char url [128];
    snprintf (url, sizeof url, "http://127.0.0.1:%d/mcp/files", env->stack->http_port);
    curl_easy_setopt (env->curl, CURLOPT_URL, url);
    curl_easy_setopt (env->curl, CURLOPT_POSTFIELDS, sl_buf_cstr (&body));
    curl_easy_setopt (env->curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt (env->curl, CURLOPT_WRITEFUNCTION, s_collect);
    curl_easy_setopt (env->curl, CURLOPT_WRITEDATA, &a->body);
    curl_easy_setopt (env->curl, CURLOPT_HEADERFUNCTION, s_header);
    curl_easy_setopt (env->curl, CURLOPT_HEADERDATA, a);
    curl_easy_setopt (env->curl, CURLOPT_TIMEOUT_MS, (long) TIMEOUT_MS);
    curl_easy_setopt (env->curl, CURLOPT_NOSIGNAL, 1L);
    if (curl_easy_perform (env->curl) == CURLE_OK)
        curl_easy_getinfo (env->curl, CURLINFO_RESPONSE_CODE, &a->status);
    curl_slist_free_all (headers);
    a->json = json_loads (sl_buf_cstr (&a->body), 0, NULL);
    sl_buf_free (&auth);
    sl_buf_free (&line);
    sl_buf_free (&body);
}

static void
s_answer_free (s_answer_t *a)
{
    sl_buf_free (&a->body);
    json_decref (a->json);
    a->json = NULL;
}

static void
s_initialize (s_env_t *env, const char *credential, s_answer_t *a)
{
    s_post (env, credential, NULL, false, "initialize", NULL,
            "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}",
            a);
}

//  tools/call echo text in session (or stateless); the result's first text.
static const char *
s_echo (s_env_t *env, const char *credential, const char *session, bool stateless, const char *text,
        s_answer_t *a)
{
    char params [256];
    snprintf (params, sizeof params, "{\"name\":\"echo\",\"arguments\":{\"text\":\"%s\"}}", text);
    s_post (env, credential, session, stateless, "tools/call", "echo", params, a);
    cr_assert_eq (a->status, 200, "%s", sl_buf_cstr (&a->body));
    json_t *result = json_object_get (a->json, "result");
    const char *said = json_string_value (json_object_get (json_array_get (json_object_get (result, "content"), 0),
                                                           "text"));
    return said ? said : "";
}

static int
s_error_code (const s_answer_t *a)
{
    return (int) json_integer_value (json_object_get (json_object_get (a->json, "error"), "code"));
}

static double
s_metric (s_env_t *env, const char *series)
{
    return metric_value (env->metrics_port, series);
}

//  --------------------------------------------------------------------------
//  The stack

//  keys: the keys file; pem: a public key written beside it as idp.pem
//  (its jwt section's), or NULL.
static void
s_start (s_env_t *env, const char *keys, const char *pem, const char *const *more_args, const char *gateway_bin_dir)
{
    memset (env, 0, sizeof *env);
    snprintf (env->dir, sizeof env->dir, "/tmp/sluice-mcpt-XXXXXX");
    cr_assert (mkdtemp (env->dir));
    env->fake = mcp_fake_start (false);
    cr_assert (env->fake, "the MCP server starts");
    if (pem)
        cr_assert_eq (harness_write (env->dir, "idp.pem", pem), 0);
    cr_assert_eq (harness_write (env->dir, "keys.yaml", keys), 0);
    char routes [2048], keys_path [128];
    snprintf (routes, sizeof routes, HARNESS_MOCK_PROVIDERS
              "mcp:\n"
              "  servers:\n"
              "    - name: files\n"
              "      url: http://127.0.0.1:%d/mcp\n"
              "      key_env: " TOKEN_ENV "\n"
              "      revision: \"2025-11-25\"\n", mcp_fake_port (env->fake));
    snprintf (keys_path, sizeof keys_path, "%s/keys.yaml", env->dir);
    const char *args [16] = { "--keys-file", keys_path };
    size_t n = 2;
    for (size_t i = 0; more_args && more_args [i] && n < 15; i++)
        args [n++] = more_args [i];
    args [n] = NULL;
    setenv (TOKEN_ENV, "fake-server-token", 1);
    stack_opts_t opts = { .policy_text = s_policy, .routes_text = routes, .gateway_args = args,
                          .gateway_bin_dir = gateway_bin_dir };
    env->stack = stack_start (&opts);
    cr_assert (env->stack, "the stack starts");
    env->metrics_port = atoi (env->stack->metrics [5]);
    env->curl = curl_easy_init ();
}

static void
s_stop (s_env_t *env)
{
    curl_easy_cleanup (env->curl);
    mcp_fake_stop (&env->fake);
    cr_expect_eq (stack_stop (env->stack), 0, "every process exits cleanly");
    const char *files [] = { "keys.yaml", "idp.pem", NULL };
    for (int i = 0; files [i]; i++) {
        char path [160];
        snprintf (path, sizeof path, "%s/%s", env->dir, files [i]);
        unlink (path);
    }
    rmdir (env->dir);
}

static void
s_key (sl_buf_t *out, const char *id, const char *key, const char *team, const char *more)
{
    char hex [SL_KEYRING_HEX_SIZE];
    sl_keyring_key_hex (key, hex);
    sl_buf_printf (out, "  - {id: %s, sha256: %s, team: %s%s}\n", id, hex, team, more);
}

static long
s_peak_rss_kb (pid_t pid)
{
    char path [64], line [256];
    snprintf (path, sizeof path, "/proc/%d/status", (int) pid);
    FILE *f = fopen (path, "r");
    long kb = -1;
    while (f && fgets (line, sizeof line, f))
        if (strncmp (line, "VmHWM:", 6) == 0)
            kb = atol (line + 6);
    if (f)
        fclose (f);
    return kb;
}

//  --------------------------------------------------------------------------
//  The flood

//  The attack: one key sends 10,000 initialize requests as fast as one
//  connection carries them. Measured on the release gateway (the
//  sanitizers' quarantine would make its memory meaningless).
Test (mcp_tenant, initialize_flood_from_one_key_leaves_other_keys_a_session, .timeout = 240)
{
    sl_buf_t keys = { 0 };
    sl_buf_puts (&keys, "teams:\n  - {name: red}\n  - {name: eng}\nkeys:\n");
    char limits [64];
    snprintf (limits, sizeof limits, ", limits: {rpm: %d}", FLOOD_RPM);
    s_key (&keys, "flood", KEY_FLOOD, "red", limits);
    s_key (&keys, "red2", KEY_RED, "red", "");
    s_key (&keys, "eng1", KEY_ENG, "eng", "");
    char per_key [16], per_team [16];
    snprintf (per_key, sizeof per_key, "%d", PER_KEY);
    snprintf (per_team, sizeof per_team, "%d", PER_TEAM);
    const char *args [] = { "--mcp-sessions-per-key", per_key, "--mcp-sessions-per-team", per_team, NULL };
    const char *release = getenv ("SLUICE_RELEASE_BIN_DIR");
    s_env_t env;
    s_start (&env, sl_buf_cstr (&keys), NULL, args, release ? release : "build/bin");
    sl_buf_free (&keys);
    long rss_before = s_peak_rss_kb (env.stack->gateway->pid);

    int ok = 0, limited = 0, capped = 0, other = 0;
    s_answer_t a;
    for (int i = 0; i < FLOOD_REQUESTS; i++) {
        s_initialize (&env, KEY_FLOOD, &a);
        const char *message = json_string_value (json_object_get (json_object_get (a.json, "error"), "message"));
        if (a.status == 200 && strlen (a.session) == 32)
            ok++;
        else
        if (a.status == 429 && s_error_code (&a) == -32000 && message && strstr (message, "--mcp-sessions-per-key"))
            capped++;
        else
        if (a.status == 429 && s_error_code (&a) == -32000)
            limited++;
        else
        if (other++ == 0)
            cr_expect_fail ("initialize %d: %ld %s", i, a.status, sl_buf_cstr (&a.body));
        s_answer_free (&a);
    }
    long rss_after = s_peak_rss_kb (env.stack->gateway->pid);
    fprintf (stderr, "%d initialize requests of one key: %d sessions, %d over the key's sessions, %d over its rpm, "
                     "%d else; the release gateway's peak RSS %ld kB before, %ld kB after\n",
             FLOOD_REQUESTS, ok, capped, limited, other, rss_before, rss_after);
    cr_expect_eq (ok, PER_KEY, "the key gets its share of sessions, no more");
    cr_expect_gt (capped, 0, "then is told its sessions are full");
    //  rpm counts a UTC minute: the flood may span two of them.
    cr_expect_geq (limited, FLOOD_REQUESTS - 2 * FLOOD_RPM, "and initialize is admitted under its rpm");
    cr_expect_eq (other, 0);
    cr_expect_eq (s_metric (&env, "sluice_mcp_errors_total{reason=\"sessions_key_full\"}"), capped);
    cr_expect_eq (s_metric (&env, "sluice_mcp_errors_total{reason=\"limited\"}"), limited);

    //  Another key of its team: what the team's cap leaves.
    int red_ok = 0;
    for (int i = 0; i < PER_TEAM; i++) {
        s_initialize (&env, KEY_RED, &a);
        if (a.status == 200) {
            red_ok++;
            if (red_ok == 1) {
                //  A session ended gives its place back.
                char session [128];
                snprintf (session, sizeof session, "%s", a.session);
                s_answer_free (&a);
                char line [160];
                snprintf (line, sizeof line, "Mcp-Session-Id: %s", session);
                const char *del [] = { "Authorization: Bearer " KEY_RED, line, NULL };
                sl_buf_t out = { 0 };
                cr_expect_eq (http_request (env.stack->http_port, "DELETE", "/mcp/files", NULL, del, &out,
                                            TIMEOUT_MS), 204);
                sl_buf_free (&out);
                continue;
            }
        }
        else {
            cr_expect_eq (a.status, 429, "%s", sl_buf_cstr (&a.body));
            cr_expect_eq (s_error_code (&a), -32000, "%s", sl_buf_cstr (&a.body));
            cr_expect (strstr (sl_buf_cstr (&a.body), "--mcp-sessions-per-team"), "%s", sl_buf_cstr (&a.body));
        }
        s_answer_free (&a);
    }
    cr_expect_eq (red_ok, PER_TEAM - PER_KEY + 1, "the team's share, one given back on the way");
    cr_expect_eq (s_metric (&env, "sluice_mcp_errors_total{reason=\"sessions_team_full\"}"), PER_TEAM - red_ok);

    //  Another team's key: a session, and a call in it.
    s_initialize (&env, KEY_ENG, &a);
    cr_expect_eq (a.status, 200, "another key still gets a session: %s", sl_buf_cstr (&a.body));
    char session [128];
    snprintf (session, sizeof session, "%s", a.session);
    s_answer_free (&a);
    cr_expect_str_eq (s_echo (&env, KEY_ENG, session, false, "still here", &a), "still here");
    s_answer_free (&a);

    //  Healthy, and holding what the caps allow.
    sl_buf_t health = { 0 };
    cr_expect_eq (http_request (env.metrics_port, "GET", "/healthz", NULL, NULL, &health, TIMEOUT_MS), 200);
    sl_buf_free (&health);
    cr_expect_eq (s_metric (&env, "sluice_mcp_sessions"), PER_TEAM + 1);
    cr_expect_gt (rss_after, 0);
    cr_expect_lt (rss_after - rss_before, FLOOD_RSS_GROWTH_KB, "peak RSS grew %ld kB", rss_after - rss_before);
    s_stop (&env);
}

//  --------------------------------------------------------------------------
//  Taint, history, stateless clients, tokens

//  Keys eng1 and eng2 of team eng; with pem, tokens signed by it too.
static void
s_start_plain (s_env_t *env, const char *pem)
{
    sl_buf_t keys = { 0 };
    if (pem)
        sl_buf_puts (&keys, "jwt:\n  keys: [idp.pem]\n  issuer: https://idp.test\n  audience: sluice\n");
    sl_buf_puts (&keys, "teams:\n  - {name: eng}\nkeys:\n");
    s_key (&keys, "eng1", KEY_ENG, "eng", "");
    s_key (&keys, "eng2", KEY_ENG2, "eng", "");
    s_start (env, sl_buf_cstr (&keys), pem, NULL, NULL);
    sl_buf_free (&keys);
}

Test (mcp_tenant, taint_outlives_the_history_window, .timeout = 240)
{
    s_env_t env;
    s_start_plain (&env, NULL);
    s_answer_t a;
    s_initialize (&env, KEY_ENG, &a);
    cr_assert_eq (a.status, 200, "%s", sl_buf_cstr (&a.body));
    char session [128];
    snprintf (session, sizeof session, "%s", a.session);
    s_answer_free (&a);
    s_post (&env, KEY_ENG, session, false, "tools/call", "read_secret", "{\"name\":\"read_secret\",\"arguments\":{}}",
            &a);
    cr_assert_eq (a.status, 200, "%s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    //  More harmless calls than the session's history keeps.
    for (int i = 0; i < HISTORY_CALLS; i++) {
        cr_assert_str_eq (s_echo (&env, KEY_ENG, session, false, "harmless", &a), "harmless");
        s_answer_free (&a);
    }
    const char *said = s_echo (&env, KEY_ENG, session, false, "exfiltrate", &a);
    cr_expect (json_is_true (json_object_get (json_object_get (a.json, "result"), "isError")),
               "still tainted after %d calls: %s", HISTORY_CALLS, sl_buf_cstr (&a.body));
    cr_expect (strstr (said, "tainted-no-exfiltrate"), "%s", said);
    s_answer_free (&a);
    mcp_fake_seen_t seen;
    mcp_fake_seen (env.fake, &seen);
    cr_expect_str_eq (seen.last_arguments, "{\"text\":\"harmless\"}", "the blocked call never reached the server");
    //  Another session of the key is not tainted by this one's.
    s_initialize (&env, KEY_ENG, &a);
    snprintf (session, sizeof session, "%s", a.session);
    s_answer_free (&a);
    cr_expect_str_eq (s_echo (&env, KEY_ENG, session, false, "exfiltrate", &a), "exfiltrate");
    s_answer_free (&a);
    s_stop (&env);
}

Test (mcp_tenant, stateless_clients_of_two_keys_never_share_an_upstream_session, .timeout = 240)
{
    s_env_t env;
    s_start_plain (&env, NULL);
    s_answer_t a;
    mcp_fake_seen_t seen;
    cr_assert_str_eq (s_echo (&env, KEY_ENG, NULL, true, "one", &a), "one", "%s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    mcp_fake_seen (env.fake, &seen);
    char first [MCP_FAKE_TEXT_MAX];
    snprintf (first, sizeof first, "%s", seen.last_session);
    cr_assert (*first, "sluice calls the server in a session of its own");
    cr_assert_str_eq (s_echo (&env, KEY_ENG2, NULL, true, "two", &a), "two", "%s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    mcp_fake_seen (env.fake, &seen);
    cr_expect_str_neq (seen.last_session, first, "another key's calls go in another upstream session");
    char second [MCP_FAKE_TEXT_MAX];
    snprintf (second, sizeof second, "%s", seen.last_session);
    //  Each key keeps its own.
    cr_assert_str_eq (s_echo (&env, KEY_ENG, NULL, true, "three", &a), "three");
    s_answer_free (&a);
    mcp_fake_seen (env.fake, &seen);
    cr_expect_str_eq (seen.last_session, first);
    cr_assert_str_eq (s_echo (&env, KEY_ENG2, NULL, true, "four", &a), "four");
    s_answer_free (&a);
    mcp_fake_seen (env.fake, &seen);
    cr_expect_str_eq (seen.last_session, second);
    cr_expect_eq (seen.initializes, 2, "one upstream session per key");
    s_stop (&env);
}

Test (mcp_tenant, token_sessions_are_their_users_not_their_signing_keys, .timeout = 240)
{
    jwt_pair_t idp;
    jwt_fixture_make (&idp, true);
    s_env_t env;
    s_start_plain (&env, idp.public_pem);
    long now = (long) time (NULL);
    char *erin = jwt_fixture_token (&idp, JWT_ALG_RS256, NULL, "erin", "eng", "sluice", now + 600, 0,
                                    "https://idp.test");
    char *frank = jwt_fixture_token (&idp, JWT_ALG_RS256, NULL, "frank", "eng", "sluice", now + 600, 0,
                                     "https://idp.test");
    s_answer_t a;
    s_initialize (&env, erin, &a);
    cr_assert_eq (a.status, 200, "%s", sl_buf_cstr (&a.body));
    char session [128];
    snprintf (session, sizeof session, "%s", a.session);
    s_answer_free (&a);
    s_post (&env, erin, session, false, "tools/list", NULL, NULL, &a);
    cr_expect_eq (a.status, 200, "erin's own session: %s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    //  frank's token is signed by the same key (key id "jwt"), team eng too.
    s_post (&env, frank, session, false, "tools/list", NULL, NULL, &a);
    cr_expect_eq (a.status, 404, "another user's session: %s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    s_post (&env, frank, session, false, "tools/call", "echo", "{\"name\":\"echo\",\"arguments\":{\"text\":\"x\"}}",
            &a);
    cr_expect_eq (a.status, 404, "%s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    char line [160], auth [8192];
    snprintf (line, sizeof line, "Mcp-Session-Id: %s", session);
    snprintf (auth, sizeof auth, "Authorization: Bearer %s", frank);
    const char *del [] = { auth, line, NULL };
    sl_buf_t out = { 0 };
    cr_expect_eq (http_request (env.stack->http_port, "DELETE", "/mcp/files", NULL, del, &out, TIMEOUT_MS), 404,
                  "nor may he end it");
    sl_buf_free (&out);
    s_post (&env, erin, session, false, "tools/list", NULL, NULL, &a);
    cr_expect_eq (a.status, 200, "erin's session lives on: %s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    free (erin);
    free (frank);
    jwt_fixture_free (&idp);
    s_stop (&env);
}
