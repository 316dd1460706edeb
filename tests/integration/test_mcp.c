/*  Integration: the gateway's MCP front over the real processes, with curl
    as the client and a small MCP server of the test's own (mcp_fake.h),
    for each revision family: the session revisions (2025-11-25: the
    gateway's own session with the client and sluice's with the server)
    and the stateless one (2026-07-28: the headers mirror the body).

    A call the policy blocks never reaches the server (its log shows no
    write_file); a result holding an AWS key comes back redacted; the
    server gets sluice's credential, never the client's key, and the call
    leg's span as its parent. Bad input is refused with the spec's errors
    and counted: header/body mismatch, unknown server, unknown tool (after
    one more list), a server that hangs (the routes file's short
    timeout_ms), a server answering more than max_response_bytes, a body
    too deep, another key's session. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/identity/sl_keyring.h"
#include "tests/integration/audit_proc.h"
#include "tests/integration/harness.h"
#include "tests/integration/mcp_fake.h"

#define TIMEOUT_MS 20000
#define TOKEN_ENV "SLUICE_TEST_MCP_TOKEN"
#define TOKEN "fake-server-token"       //  sluice's credential for the server
#define KEY_ENG "sk-mcp-eng-1"          //  team eng: may use the server
#define KEY_ENG2 "sk-mcp-eng-2"         //  team eng too, another key
#define KEY_OPS "sk-mcp-ops-1"          //  team ops: may not
#define KEY_PACED "sk-mcp-paced-1"      //  team eng, one request a minute
#define TRACE_ID "4bf92f3577b34da6a3ce929d0e0e4736"
#define DEPTH_TOO_DEEP 100
#define CLIENT_GIVES_UP_MS 300          //  a client that closes mid-call

static long s_client_timeout_ms = TIMEOUT_MS;

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
    "    message: 'sluice blocked {tool} after an untrusted result (rule {rule})'\n"
    "  - id: no-write\n"
    "    tool: mcp__files__write_file\n"
    "    action: block\n"
    "    message: 'sluice blocked {tool} (rule {rule})'\n"
    "  - id: aws-key\n"
    "    on: request\n"
    "    part: tool_result\n"
    "    redact: {regex: 'AKIA[0-9A-Z]{16}', placeholder: '[REDACTED:aws-key]'}\n"
    "    action: redact\n";

typedef struct {
    sluice_stack_t *stack;
    mcp_fake_t *fake;
    char dir [64];
    int metrics_port;
    bool stateless;
    char session [128];                 //  the gateway's Mcp-Session-Id, once initialized
} s_env_t;

//  --------------------------------------------------------------------------
//  The client

typedef struct {
    int status;
    char session [128];                 //  Mcp-Session-Id of the answer
    char content_type [128];
    sl_buf_t body;
    json_t *json;                       //  the body (or its one SSE event's data), parsed
} s_answer_t;

//  The value of the answer's header name (lower case, with its colon)
//  into out, "" when absent.
static void
s_header_value (const char *lines, const char *name, char *out, size_t size)
{
    out [0] = 0;
    for (const char *line = lines; line && *line; line = strchr (line, '\n') ? strchr (line, '\n') + 1 : NULL)
        if (strncasecmp (line, name, strlen (name)) == 0) {
            const char *v = line + strlen (name);
            while (*v == ' ')
                v++;
            snprintf (out, size, "%.*s", (int) strcspn (v, "\r\n"), v);
            return;
        }
}

//  A request to path (the client's Accept added unless headers say one);
//  the answer's JSON is read from an SSE event's data too.
static void
s_request (s_env_t *env, const char *method, const char *path, const char *body, const char *const *headers,
           s_answer_t *a)
{
    memset (a, 0, sizeof *a);
    const char *all [12];
    int n = 0;
    bool accept = false;
    for (int i = 0; headers && headers [i] && n < 10; i++) {
        all [n++] = headers [i];
        accept |= strncasecmp (headers [i], "Accept:", 7) == 0;
    }
    if (!accept)
        all [n++] = "Accept: application/json, text/event-stream";
    all [n] = NULL;
    sl_buf_t lines = { 0 };
    a->status = http_request_full (env->stack->http_port, method, path, body, all, &a->body, &lines,
                                   (int) s_client_timeout_ms);
    s_header_value (sl_buf_cstr (&lines), "mcp-session-id:", a->session, sizeof a->session);
    s_header_value (sl_buf_cstr (&lines), "content-type:", a->content_type, sizeof a->content_type);
    sl_buf_free (&lines);
    const char *text = sl_buf_cstr (&a->body);
    const char *data = strstr (text, "data: ");
    a->json = json_loads (strncmp (a->content_type, "text/event-stream", 17) == 0 && data ? data + 6 : text,
                          JSON_DISABLE_EOF_CHECK, NULL);
}

static void
s_answer_free (s_answer_t *a)
{
    sl_buf_free (&a->body);
    json_decref (a->json);
    a->json = NULL;
}

//  An MCP request of the client of key: the session's or the revision's
//  headers as the family wants them; name: the tool (Mcp-Name), or NULL.
static void
s_mcp (s_env_t *env, const char *key, const char *path, const char *method, const char *name, const char *params,
       s_answer_t *a)
{
    char auth [96], session [160], mirrored [96], named [160], body [4096];
    snprintf (auth, sizeof auth, "Authorization: Bearer %s", key);
    const char *headers [8] = { auth };
    int n = 1;
    if (env->stateless) {
        snprintf (mirrored, sizeof mirrored, "Mcp-Method: %s", method);
        headers [n++] = "MCP-Protocol-Version: 2026-07-28";
        headers [n++] = mirrored;
        if (name) {
            snprintf (named, sizeof named, "Mcp-Name: %s", name);
            headers [n++] = named;
        }
        //  2026-07-28 carries the revision in params._meta as well.
        json_t *p = json_loads (params ? params : "{}", 0, NULL);
        json_t *meta = json_object_get (p, "_meta");
        if (!meta)
            json_object_set_new (p, "_meta", meta = json_object ());
        json_object_set_new (meta, "io.modelcontextprotocol/protocolVersion", json_string ("2026-07-28"));
        char *text = json_dumps (p, JSON_COMPACT);
        snprintf (body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"%s\",\"params\":%s}", method, text);
        free (text);
        json_decref (p);
    }
    else {
        headers [n++] = "MCP-Protocol-Version: 2025-11-25";
        if (env->session [0]) {
            snprintf (session, sizeof session, "Mcp-Session-Id: %s", env->session);
            headers [n++] = session;
        }
        //  A notification has no id.
        snprintf (body, sizeof body, "{\"jsonrpc\":\"2.0\",%s\"method\":\"%s\",\"params\":%s}",
                  strncmp (method, "notifications/", 14) == 0 ? "" : "\"id\":7,", method, params ? params : "{}");
    }
    s_request (env, "POST", path, body, headers, a);
}

//  tools/call name with arguments; the answer's result (borrowed from a).
static json_t *
s_call (s_env_t *env, const char *name, const char *arguments, s_answer_t *a)
{
    char params [1024];
    snprintf (params, sizeof params, "{\"name\":\"%s\",\"arguments\":%s,\"_meta\":{\"traceparent\":"
              "\"00-" TRACE_ID "-00f067aa0ba902b7-01\"}}", name, arguments);
    s_mcp (env, KEY_ENG, "/mcp/files", "tools/call", name, params, a);
    if (s_client_timeout_ms == TIMEOUT_MS)
        cr_assert_eq (a->status, 200, "tools/call %s: %d %s", name, a->status, sl_buf_cstr (&a->body));
    return json_object_get (a->json, "result");
}

static const char *
s_text (json_t *result)
{
    const char *text = json_string_value (json_object_get (json_array_get (json_object_get (result, "content"), 0),
                                                           "text"));
    return text ? text : "";
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

static void
s_key (sl_buf_t *out, const char *id, const char *key, const char *team, const char *more)
{
    char hex [SL_KEYRING_HEX_SIZE];
    sl_keyring_key_hex (key, hex);
    sl_buf_printf (out, "  - {id: %s, sha256: %s, team: %s%s}\n", id, hex, team, more);
}

//  A stack in front of the fake server; with_audit: its emitter spools
//  records for a sluice-audit.
static void
s_start (s_env_t *env, bool stateless, bool with_audit)
{
    memset (env, 0, sizeof *env);
    env->stateless = stateless;
    snprintf (env->dir, sizeof env->dir, "/tmp/sluice-mcp-XXXXXX");
    cr_assert (mkdtemp (env->dir));
    env->fake = mcp_fake_start (stateless);
    cr_assert (env->fake, "the MCP server starts");
    sl_buf_t keys = { 0 };
    sl_buf_puts (&keys, "teams:\n  - {name: eng}\n  - {name: ops}\nkeys:\n");
    s_key (&keys, "eng1", KEY_ENG, "eng", "");
    s_key (&keys, "eng2", KEY_ENG2, "eng", "");
    s_key (&keys, "ops1", KEY_OPS, "ops", "");
    s_key (&keys, "paced", KEY_PACED, "eng", ", limits: {rpm: 1}");
    cr_assert_eq (harness_write (env->dir, "keys.yaml", sl_buf_cstr (&keys)), 0);
    sl_buf_free (&keys);
    char routes [2048], keys_path [128];
    snprintf (routes, sizeof routes, HARNESS_MOCK_PROVIDERS
              "mcp:\n"
              "  multiplexed: %s\n"
              "  timeout_ms: 1500\n"
              "  max_response_bytes: 65536\n"
              "  servers:\n"
              "    - name: files\n"
              "      url: http://127.0.0.1:%d/mcp\n"
              "      key_env: " TOKEN_ENV "\n"
              "      revision: \"%s\"\n"
              "      teams: [eng]\n", stateless ? "false" : "true", mcp_fake_port (env->fake),
              stateless ? "2026-07-28" : "2025-11-25");
    snprintf (keys_path, sizeof keys_path, "%s/keys.yaml", env->dir);
    const char *gateway_args [] = { "--keys-file", keys_path, NULL };
    setenv (TOKEN_ENV, TOKEN, 1);
    stack_opts_t opts = { .policy_text = s_policy, .routes_text = routes, .gateway_args = gateway_args,
                          .audit_spool = with_audit ? "" : NULL };
    env->stack = stack_start (&opts);
    cr_assert (env->stack, "the stack starts");
    env->metrics_port = atoi (env->stack->metrics [5]);
}

static void
s_stop (s_env_t *env)
{
    mcp_fake_stop (&env->fake);
    cr_expect_eq (stack_stop (env->stack), 0, "every process exits cleanly");
    char path [160];
    snprintf (path, sizeof path, "%s/keys.yaml", env->dir);
    unlink (path);
    rmdir (env->dir);
}

//  What both families share once the client may call: the allowed, the
//  blocked, the redacted call, and an unknown tool.
static void
s_calls (s_env_t *env)
{
    mcp_fake_seen_t seen;
    s_answer_t a;
    //  Allowed: the server gets it, with sluice's credential and the call
    //  leg's span in the client's trace.
    json_t *result = s_call (env, "echo", "{\"text\":\"hello\"}", &a);
    cr_assert_str_eq (s_text (result), "hello", "%s", sl_buf_cstr (&a.body));
    cr_expect (!json_is_true (json_object_get (result, "isError")));
    s_answer_free (&a);
    mcp_fake_seen (env->fake, &seen);
    cr_assert_eq (seen.calls, 1);
    cr_assert_str_eq (seen.last_tool, "echo");
    cr_assert_str_eq (seen.last_auth, "Bearer " TOKEN, "sluice's credential, never the client's key");
    cr_assert (strncmp (seen.last_traceparent, "00-" TRACE_ID "-", 35) == 0, "the client's trace goes on: %s",
               seen.last_traceparent);
    cr_assert (!strstr (seen.last_traceparent, "00f067aa0ba902b7"), "the parent is sluice's span, not the client's");
    if (env->stateless)
        cr_assert_str_eq (seen.last_name_header, "echo", "2026-07-28: Mcp-Name mirrors the tool");

    //  Blocked: a tool result with isError and the notice; the server
    //  never hears of it.
    result = s_call (env, "write_file", "{\"path\":\"/etc/passwd\",\"content\":\"x\"}", &a);
    cr_assert (json_is_true (json_object_get (result, "isError")), "%s", sl_buf_cstr (&a.body));
    cr_assert (strstr (s_text (result), "no-write"), "the notice names the rule: %s", s_text (result));
    s_answer_free (&a);
    mcp_fake_seen (env->fake, &seen);
    cr_assert_eq (seen.writes, 0, "a blocked call never reaches the server");
    cr_assert_eq (seen.calls, 1);

    //  Redacted: the server's result is judged before the client reads it.
    result = s_call (env, "read_secret", "{}", &a);
    cr_assert (strstr (s_text (result), "[REDACTED:aws-key]"), "%s", sl_buf_cstr (&a.body));
    cr_assert (!strstr (sl_buf_cstr (&a.body), MCP_FAKE_SECRET), "the key never reaches the client");
    s_answer_free (&a);

    //  Unknown: listed once more, then the spec's error.
    int lists = seen.lists;
    s_call (env, "nope", "{}", &a);
    cr_assert_eq (s_error_code (&a), -32602, "%s", sl_buf_cstr (&a.body));
    cr_assert (strstr (sl_buf_cstr (&a.body), "Unknown tool: nope"));
    s_answer_free (&a);
    mcp_fake_seen (env->fake, &seen);
    cr_assert_eq (seen.lists, lists + 1, "the server was listed once more");

    //  A server that never answers in time, one that answers too much.
    s_call (env, "hang", "{}", &a);
    cr_assert_eq (s_error_code (&a), -32603, "%s", sl_buf_cstr (&a.body));
    cr_assert (strstr (sl_buf_cstr (&a.body), "in time"), "%s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    s_call (env, "big", "{}", &a);
    cr_assert_eq (s_error_code (&a), -32603, "%s", sl_buf_cstr (&a.body));
    s_answer_free (&a);

    s_call (env, "garbage", "{}", &a);
    cr_assert_eq (s_error_code (&a), -32603, "%s", sl_buf_cstr (&a.body));
    s_answer_free (&a);

    //  A server asking the client for input inside its result: not relayed.
    if (env->stateless) {
        s_call (env, "needs_input", "{}", &a);
        cr_assert_eq (s_error_code (&a), -32603, "%s", sl_buf_cstr (&a.body));
        cr_assert (strstr (sl_buf_cstr (&a.body), "input"), "%s", sl_buf_cstr (&a.body));
        cr_assert (!strstr (sl_buf_cstr (&a.body), "which file"), "%s", sl_buf_cstr (&a.body));
        s_answer_free (&a);
    }

    //  The session's history goes into the legs: after read_secret's
    //  (untrusted) result, the session is tainted. A stateless request has
    //  no history, so nothing taints it.
    result = s_call (env, "echo", "{\"text\":\"exfiltrate\"}", &a);
    if (env->stateless)
        cr_assert_str_eq (s_text (result), "exfiltrate", "%s", sl_buf_cstr (&a.body));
    else {
        cr_assert (json_is_true (json_object_get (result, "isError")), "%s", sl_buf_cstr (&a.body));
        cr_assert (strstr (s_text (result), "tainted-no-exfiltrate"), "%s", s_text (result));
    }
    s_answer_free (&a);

    //  A client that leaves mid-call: the call stops with it.
    s_client_timeout_ms = CLIENT_GIVES_UP_MS;
    s_call (env, "hang", "{}", &a);
    s_answer_free (&a);
    s_client_timeout_ms = TIMEOUT_MS;
    cr_assert_eq (harness_wait_metric (env->metrics_port, "sluice_mcp_requests_total{server=\"files\","
                                       "method=\"tools/call\",outcome=\"client_gone\"}", 1, TIMEOUT_MS), 1);

    cr_assert_eq (s_metric (env, "sluice_mcp_calls_total{server=\"files\",action=\"block\"}"), env->stateless ? 1 : 2);
    cr_assert_geq (s_metric (env, "sluice_mcp_calls_total{server=\"files\",action=\"allow\"}"), 2);
    cr_assert_eq (s_metric (env, "sluice_mcp_errors_total{reason=\"unknown_tool\"}"), 1);
    cr_assert_eq (s_metric (env, "sluice_mcp_errors_total{reason=\"server_timeout\"}"), 1);
    cr_assert_eq (s_metric (env, "sluice_mcp_errors_total{reason=\"server_too_large\"}"), 1);
    cr_assert_geq (s_metric (env, "sluice_mcp_errors_total{reason=\"server_error\"}"), 1);
}

//  Refused before any message is read: unknown server, no key, a team
//  not allowed, GET, a body too deep.
static void
s_refusals (s_env_t *env)
{
    s_answer_t a;
    s_mcp (env, KEY_ENG, "/mcp/nope", "tools/list", NULL, NULL, &a);
    cr_assert_eq (a.status, 404);
    cr_assert (json_object_get (a.json, "error"), "a JSON-RPC error: %s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    s_mcp (env, "sk-nobody", "/mcp/files", "tools/list", NULL, NULL, &a);
    cr_assert_eq (a.status, 401);
    s_answer_free (&a);
    s_mcp (env, KEY_OPS, "/mcp/files", "tools/list", NULL, NULL, &a);
    cr_assert_eq (a.status, 403, "team ops may not use the server");
    cr_assert (json_object_get (a.json, "error"));
    s_answer_free (&a);
    const char *headers [] = { "Authorization: Bearer " KEY_ENG, NULL };
    s_request (env, "GET", "/mcp/files", NULL, headers, &a);
    cr_assert_eq (a.status, 405, "no server-initiated stream");
    s_answer_free (&a);
    const char *page [] = { "Authorization: Bearer " KEY_ENG, "Origin: http://rebound.example", NULL };
    s_request (env, "POST", "/mcp/files", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", page, &a);
    cr_assert_eq (a.status, 403, "a web page of another origin: %s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    sl_buf_t deep = { 0 };
    for (int i = 0; i < DEPTH_TOO_DEEP; i++)
        sl_buf_putc (&deep, '[');
    for (int i = 0; i < DEPTH_TOO_DEEP; i++)
        sl_buf_putc (&deep, ']');
    char params [512];
    snprintf (params, sizeof params, "{\"name\":\"echo\",\"arguments\":{\"text\":%s}}", sl_buf_cstr (&deep));
    sl_buf_free (&deep);
    s_mcp (env, KEY_ENG, "/mcp/files", "tools/call", "echo", params, &a);
    cr_assert_eq (a.status, 400, "too deep: %s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    cr_assert_geq (s_metric (env, "sluice_mcp_errors_total{reason=\"unknown_server\"}"), 1);
    cr_assert_geq (s_metric (env, "sluice_mcp_errors_total{reason=\"too_deep\"}"), 1);
}

Test (mcp, session_revision_list_call_block_redact_and_bad_input, .timeout = 240)
{
    s_env_t env;
    s_start (&env, false, false);
    s_answer_t a;
    s_mcp (&env, KEY_ENG, "/mcp/files", "initialize", NULL,
           "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"curl\",\"version\":\"1\"}}",
           &a);
    cr_assert_eq (a.status, 200, "%s", sl_buf_cstr (&a.body));
    cr_assert_eq (strlen (a.session), 32, "a session id of 32 hex: %s", a.session);
    cr_assert_str_eq (json_string_value (json_object_get (json_object_get (a.json, "result"), "protocolVersion")),
                      "2025-11-25");
    snprintf (env.session, sizeof env.session, "%s", a.session);
    s_answer_free (&a);
    s_mcp (&env, KEY_ENG, "/mcp/files", "notifications/initialized", NULL, NULL, &a);
    cr_assert_eq (a.status, 202, "%s", sl_buf_cstr (&a.body));
    s_answer_free (&a);

    //  The list: what the team may call (write_file is blocked by name).
    s_mcp (&env, KEY_ENG, "/mcp/files", "tools/list", NULL, NULL, &a);
    cr_assert_eq (a.status, 200, "%s", sl_buf_cstr (&a.body));
    const char *body = sl_buf_cstr (&a.body);
    cr_assert (strstr (body, "\"echo\"") && strstr (body, "\"read_secret\""), "%s", body);
    cr_assert (!strstr (body, "\"write_file\""), "a tool the team's rules block by name is not listed: %s", body);
    s_answer_free (&a);

    s_calls (&env);

    //  The server forgot sluice's session: sluice begins a new one, once.
    mcp_fake_seen_t seen;
    mcp_fake_seen (env.fake, &seen);
    mcp_fake_forget (env.fake);
    json_t *result = s_call (&env, "echo", "{\"text\":\"again\"}", &a);
    cr_assert_str_eq (s_text (result), "again", "%s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    mcp_fake_seen_t after;
    mcp_fake_seen (env.fake, &after);
    cr_assert_eq (after.initializes, seen.initializes + 1);

    //  The multiplexed endpoint: every server's tools, named
    //  <server>__<tool>, in a session of its own.
    char own [sizeof env.session];
    snprintf (own, sizeof own, "%s", env.session);
    env.session [0] = 0;
    s_mcp (&env, KEY_ENG, "/mcp", "initialize", NULL, "{\"protocolVersion\":\"2025-06-18\"}", &a);
    cr_assert_eq (a.status, 200, "%s", sl_buf_cstr (&a.body));
    snprintf (env.session, sizeof env.session, "%s", a.session);
    s_answer_free (&a);
    s_mcp (&env, KEY_ENG, "/mcp", "tools/list", NULL, NULL, &a);
    cr_assert (strstr (sl_buf_cstr (&a.body), "\"files__echo\""), "%s", sl_buf_cstr (&a.body));
    cr_assert (!strstr (sl_buf_cstr (&a.body), "write_file"), "%s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    s_mcp (&env, KEY_ENG, "/mcp", "tools/call", NULL, "{\"name\":\"files__echo\",\"arguments\":{\"text\":\"mux\"}}",
           &a);
    cr_assert_str_eq (s_text (json_object_get (a.json, "result")), "mux", "%s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    snprintf (env.session, sizeof env.session, "%s", own);

    //  An SSE-only client gets one event.
    char auth [64], sess [160];
    snprintf (auth, sizeof auth, "Authorization: Bearer %s", KEY_ENG);
    snprintf (sess, sizeof sess, "Mcp-Session-Id: %s", env.session);
    const char *sse [] = { auth, sess, "Accept: text/event-stream", NULL };
    s_request (&env, "POST", "/mcp/files", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}", sse, &a);
    cr_assert_eq (a.status, 200);
    cr_assert (strncmp (a.content_type, "text/event-stream", 17) == 0, "%s", a.content_type);
    cr_assert (json_object_get (a.json, "result"), "%s", sl_buf_cstr (&a.body));
    s_answer_free (&a);

    //  The session is its key's: another key of the same team is told it
    //  does not exist.
    s_mcp (&env, KEY_ENG2, "/mcp/files", "tools/list", NULL, NULL, &a);
    cr_assert_eq (a.status, 404, "another key's session: %s", sl_buf_cstr (&a.body));
    s_answer_free (&a);

    s_refusals (&env);

    //  DELETE ends it.
    const char *del [] = { auth, sess, NULL };
    s_request (&env, "DELETE", "/mcp/files", NULL, del, &a);
    cr_assert_lt (a.status, 300, "%d", a.status);
    s_answer_free (&a);
    s_mcp (&env, KEY_ENG, "/mcp/files", "tools/list", NULL, NULL, &a);
    cr_assert_eq (a.status, 404, "an ended session");
    s_answer_free (&a);
    cr_assert_geq (s_metric (&env, "sluice_mcp_errors_total{reason=\"session_unknown\"}"), 2);
    s_stop (&env);
}

Test (mcp, stateless_revision_discover_call_block_redact_and_header_mismatch, .timeout = 240)
{
    s_env_t env;
    s_start (&env, true, false);
    s_answer_t a;
    s_mcp (&env, KEY_ENG, "/mcp/files", "server/discover", NULL, NULL, &a);
    cr_assert_eq (a.status, 200, "%s", sl_buf_cstr (&a.body));
    cr_assert (strstr (sl_buf_cstr (&a.body), "fake-mcp"), "the server's own identity: %s", sl_buf_cstr (&a.body));
    cr_assert (strstr (sl_buf_cstr (&a.body), "2026-07-28"));
    s_answer_free (&a);

    s_mcp (&env, KEY_ENG, "/mcp/files", "tools/list", NULL, NULL, &a);
    cr_assert_eq (a.status, 200, "%s", sl_buf_cstr (&a.body));
    cr_assert (strstr (sl_buf_cstr (&a.body), "\"echo\""), "%s", sl_buf_cstr (&a.body));
    cr_assert_str_eq (json_string_value (json_object_get (json_object_get (a.json, "result"), "resultType")),
                      "complete");
    cr_assert_str_eq (json_string_value (json_object_get (json_object_get (a.json, "result"), "cacheScope")),
                      "private", "what a client is listed is its own, and never cached");
    s_answer_free (&a);

    s_calls (&env);

    //  Mcp-Name says another tool than the body: 400, HeaderMismatch, and
    //  the server hears nothing of it.
    mcp_fake_seen_t seen, after;
    mcp_fake_seen (env.fake, &seen);
    char auth [64];
    snprintf (auth, sizeof auth, "Authorization: Bearer %s", KEY_ENG);
    const char *headers [] = { auth, "MCP-Protocol-Version: 2026-07-28", "Mcp-Method: tools/call",
                               "Mcp-Name: read_secret", NULL };
    s_request (&env, "POST", "/mcp/files", "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":"
               "{\"name\":\"echo\",\"arguments\":{\"text\":\"x\"},\"_meta\":{"
               "\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}", headers, &a);
    cr_assert_eq (a.status, 400, "%s", sl_buf_cstr (&a.body));
    cr_assert_eq (s_error_code (&a), -32020, "%s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    mcp_fake_seen (env.fake, &after);
    cr_assert_eq (after.calls, seen.calls);
    cr_assert_eq (s_metric (&env, "sluice_mcp_errors_total{reason=\"header_mismatch\"}"), 1);

    s_mcp (&env, KEY_ENG, "/mcp", "tools/list", NULL, NULL, &a);
    cr_assert_eq (a.status, 404, "/mcp is not multiplexed here");
    s_answer_free (&a);

    //  The keys file's limits: one request a minute, the second refused.
    s_mcp (&env, KEY_PACED, "/mcp/files", "tools/list", NULL, NULL, &a);
    cr_assert_eq (a.status, 200, "%s", sl_buf_cstr (&a.body));
    s_answer_free (&a);
    s_mcp (&env, KEY_PACED, "/mcp/files", "tools/list", NULL, NULL, &a);
    cr_assert_eq (a.status, 429, "%s", sl_buf_cstr (&a.body));
    cr_assert_eq (s_error_code (&a), -32000, "%s", sl_buf_cstr (&a.body));
    s_answer_free (&a);

    s_refusals (&env);
    s_stop (&env);
}

//  The first and last chain positions of the audit's record of the
//  stream whose mcp is what (its sid into sid); false when there is none.
static bool
s_leg_places (const audit_proc_t *audit, const char *what, char *sid, size_t size, int64_t *first, int64_t *last)
{
    json_t *list = audit_get (audit, "/api/streams?limit=20");
    json_t *streams = json_object_get (list, "streams");
    bool found = false;
    for (size_t i = 0; i < json_array_size (streams) && !found; i++) {
        const char *id = json_string_value (json_object_get (json_array_get (streams, i), "sid"));
        char path [128];
        snprintf (path, sizeof path, "/api/streams/%s", id ? id : "");
        json_t *stream = audit_get (audit, path);
        const char *mcp = json_string_value (json_object_get (json_object_get (stream, "stream"), "mcp"));
        json_t *chain = json_object_get (stream, "chain");
        if (mcp && strcmp (mcp, what) == 0 && json_array_size (chain)) {
            snprintf (sid, size, "%s", id);
            *first = json_integer_value (json_object_get (json_array_get (chain, 0), "pos"));
            *last = json_integer_value (json_object_get (json_array_get (chain, json_array_size (chain) - 1), "pos"));
            found = true;
        }
        json_decref (stream);
    }
    json_decref (list);
    return found;
}

//  The client has its result once the gateway judged it; the call's two
//  legs still reach the audit, the call leg's records before the result
//  leg's, under the MCP request's identity.
Test (mcp, a_calls_legs_reach_the_audit_in_order, .timeout = 240)
{
    s_env_t env;
    s_start (&env, true, true);
    char store [] = "/tmp/sluice-mcp-audit-XXXXXX";
    cr_assert_not_null (mkdtemp (store));
    const char *store_args [] = { "--data-dir", store, NULL };
    audit_proc_t audit;
    cr_assert (audit_start (env.stack, "audit", store_args, NULL, &audit), "sluice-audit comes up");

    s_answer_t a;
    json_t *result = s_call (&env, "read_secret", "{}", &a);
    cr_assert (strstr (s_text (result), "[REDACTED:aws-key]"), "judged before the client reads it: %s",
               sl_buf_cstr (&a.body));
    s_answer_free (&a);

    cr_assert_geq (audit_wait_streams (&audit, "", 2, TIMEOUT_MS), 2, "the call's legs recorded");
    char call_sid [64] = "", result_sid [64] = "";
    int64_t call_first = 0, call_last = 0, result_first = 0, result_last = 0;
    bool call = false, judged = false;
    //  The result leg's record follows its answer: wait for it (bounded).
    int64_t deadline = zclock_mono () + TIMEOUT_MS;
    while (!(call && judged) && zclock_mono () < deadline) {
        call = s_leg_places (&audit, "tools/call read_secret", call_sid, sizeof call_sid, &call_first, &call_last);
        judged = s_leg_places (&audit, "tools/call read_secret result", result_sid, sizeof result_sid,
                               &result_first, &result_last);
        if (!(call && judged))
            zclock_sleep (50);
    }
    cr_assert (call, "the call leg's record reached the audit");
    cr_assert (judged, "the result leg's record reached the audit, after the client's answer");
    cr_expect_lt (call_last, result_first, "the call leg's records (%lld..%lld) come before the result leg's"
                  " (%lld..%lld)", (long long) call_first, (long long) call_last, (long long) result_first,
                  (long long) result_last);
    char path [128];
    snprintf (path, sizeof path, "/api/streams/%s", result_sid);
    json_t *stream = audit_get (&audit, path);
    json_t *summary = json_object_get (stream, "stream");
    cr_expect_str_eq (json_string_value (json_object_get (summary, "team")), "eng", "the caller's team");
    cr_expect_str_eq (json_string_value (json_object_get (summary, "provider")), "mcp:files");
    json_decref (stream);

    cr_expect_eq (proc_stop (audit.proc, 10000), 0, "sluice-audit stops cleanly");
    free (audit.proc);
    s_stop (&env);
    char cmd [160];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", store);
    cr_expect_eq (system (cmd), 0);
}
