/*  Integration: the official MCP TypeScript SDK as sluice's MCP client and
    as the MCP server behind it (tests/mcp, pinned; make mcp-deps), for both
    revision families: @modelcontextprotocol/sdk 1.x with sessions
    (initialize, Mcp-Session-Id: the client speaks 2025-11-25 to sluice,
    sluice 2025-06-18 to the server) and @modelcontextprotocol/client and
    server 2.x, stateless (2026-07-28 both ways).

    First each family's client and server directly, no sluice between
    them: the fixtures work, and a client of one family cannot pass on a
    server of the other. Then, through the gateway's /mcp/<server> with a
    sluice key, under one policy, for each family:

      list        the server's four tools are listed
      allowed     echo answers its text; the server's log has the call
      blocked     write_file under /etc: a result with isError and the
                  notice; the server's log never has the call
      rewritten   write_file under /home: the server's log has the path
                  the rewrite rule set, the client gets "written"
      asked       echo of a text the policy asks a person about: the call
                  waits, is listed at /v1/approvals, approved there by an
                  approver's key, and then reaches the server
      redacted    read_secret: the AWS key in its result is replaced by the
                  placeholder before the client sees it
      withheld    a second server of the family serves echo with a changed
                  description: echo is pinned for the team, so its changed
                  definition is not listed and a call of it is blocked
                  (the server's log never has it)

    Skipped, saying why, when node or the packages are missing, or when
    this build's routes file has no mcp section. */
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/integration/mcp_node.h"
#include "tests/keyfile_fixture.h"

#define MCP_RUN_MS 60000                //  one client's scenario, node's start included
#define MCP_ASK_SEEN_MS 30000           //  for an asked call to be listed at /v1/approvals
#define MCP_POLL_MS 200                 //  between two looks at the approvals
#define MCP_HTTP_MS 10000               //  one request to the approvals API
#define MCP_TEXT_MAX 4096
#define MCP_KEY "sk-mcp-client"
#define MCP_APPROVER "sk-mcp-approver"
#define MCP_TEAM "eng"
#define MCP_SECRET "AKIAIOSFODNN7EXAMPLE"   //  what read_secret returns (tests/mcp/server.mjs)
#define MCP_REDACTED "[REDACTED:aws-key]"
#define MCP_REWRITTEN "/tmp/sluice-rewritten.txt"
#define MCP_ASK_TEXT "please ask a person first"
#define MCP_ECHO_DESCRIPTION "Returns the text it is given."     //  echo's definition, unchanged
#define MCP_ECHO_SCHEMA \
    "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\",\"description\":\"The text to return.\"}}," \
    "\"required\":[\"text\"]}"
#define MCP_DECIDE "{\"decision\":\"approve\",\"comment\":\"the MCP test approves\"}"

//  The policy: one rule per scenario, the pins of tools-pins.yaml's kind.
#define MCP_POLICY \
    "version: 1\n" \
    "default: allow\n" \
    "rules:\n" \
    "  - id: no-write-etc\n" \
    "    tool: write_file\n" \
    "    args: [{pointer: /path, prefix: /etc/}]\n" \
    "    action: block\n" \
    "    message: \"sluice blocked a call to {tool}: it writes under /etc (rule {rule}).\"\n" \
    "  - id: home-to-tmp\n" \
    "    tool: write_file\n" \
    "    args: [{pointer: /path, prefix: /home/}]\n" \
    "    action: rewrite\n" \
    "    set: {/path: " MCP_REWRITTEN "}\n" \
    "  - id: ask-echo\n" \
    "    tool: echo\n" \
    "    args: [{pointer: /text, contains: 'ask a person'}]\n" \
    "    action: ask\n" \
    "    message: \"sluice blocked a call to {tool}: it was not approved ({reason}).\"\n" \
    "    ask: {timeout_ms: 60000, on_timeout: block, message: \"the MCP test asks to echo {arguments}\"}\n" \
    "  - id: call-to-changed-definition\n" \
    "    definition: changed\n" \
    "    action: block\n" \
    "    message: \"sluice blocked a call to {tool}: its definition is not the one pinned ({reason}).\"\n" \
    "  - id: aws-key\n" \
    "    on: request\n" \
    "    part: tool_result\n" \
    "    redact: {regex: 'AKIA[0-9A-Z]{16}', placeholder: '" MCP_REDACTED "'}\n" \
    "    action: redact\n" \
    "  - id: pinned-definition-changed\n" \
    "    on: request\n" \
    "    part: tool\n" \
    "    definition: changed\n" \
    "    action: withhold\n" \
    "pins: %s/pins.yaml\n"

static const char *s_families [] = { "v1", "v2" };
static const char *s_revisions [] = { "2025-06-18", "2026-07-28" };   //  what sluice speaks to each
static const char *s_client_revisions [] = { "2025-11-25", "2026-07-28" };   //  what each client speaks

static void
s_skip_unless_node (void)
{
    const char *missing = mcp_node_missing ();
    if (missing) {
        fprintf (stderr, "mcp_sdk: skipped: %s\n", missing);
        cr_skip_test ("%s", missing);
    }
}

//  --------------------------------------------------------------------------
//  The fixtures, directly

Test (mcp_sdk, each_family_directly, .timeout = 120)
{
    s_skip_unless_node ();
    char dir [] = "/tmp/sluice-mcp-direct-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    mcp_server_t servers [2];
    for (int f = 0; f < 2; f++) {
        char log [300], label [32], text [MCP_TEXT_MAX];
        snprintf (log, sizeof log, "%s/%s.calls", dir, s_families [f]);
        cr_assert_eq (mcp_server_start (&servers [f], dir, s_families [f], false, log), 0, "%s server", s_families [f]);
        int status;
        snprintf (label, sizeof label, "%s-echo", s_families [f]);
        json_t *line = mcp_client_run (dir, label, s_families [f], servers [f].url, NULL, "echo",
                                       "{\"text\":\"hello directly\"}", MCP_RUN_MS, &status);
        cr_assert_not_null (line, "%s: the client printed its line", s_families [f]);
        cr_expect_eq (status, 0);
        cr_expect_str_eq (json_string_value (json_object_get (line, "protocol")), s_client_revisions [f]);
        cr_expect_eq (json_array_size (json_object_get (line, "tools")), 4);
        mcp_client_texts (line, text, sizeof text);
        cr_expect_str_eq (text, "hello directly");
        cr_expect_eq (mcp_server_calls (&servers [f], "echo", text, sizeof text), 1);
        cr_expect_str_eq (text, "{\"text\":\"hello directly\"}");
        json_decref (line);
    }
    //  Each family's client on the other's server: a protocol error, no call.
    for (int f = 0; f < 2; f++) {
        int status;
        char label [32];
        snprintf (label, sizeof label, "%s-on-other", s_families [f]);
        json_t *line = mcp_client_run (dir, label, s_families [f], servers [1 - f].url, NULL, "echo",
                                       "{\"text\":\"wrong revision\"}", MCP_RUN_MS, &status);
        cr_expect_eq (status, 1, "a %s client on a %s server fails", s_families [f], s_families [1 - f]);
        cr_expect_not_null (json_object_get (line, "error"));
        json_decref (line);
        cr_expect_eq (mcp_server_calls (&servers [1 - f], "echo", NULL, 0), 1, "no call reached it");
    }
    for (int f = 0; f < 2; f++) {
        mcp_server_stop (&servers [f]);
        unlink (servers [f].log);
        unlink (servers [f].out);
    }
    char cmd [400];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}

//  --------------------------------------------------------------------------
//  Through sluice

typedef struct {
    char dir [64];
    mcp_server_t servers [2][2];        //  [family][0 unchanged, 1 changed]
    sluice_stack_t *s;
    char *policy;
} mcp_rig_t;

//  The routes file: the mock's providers, and the four servers: v1, v2
//  and their changed twins v1c, v2c.
static char *
s_routes (const mcp_rig_t *rig)
{
    char *text = malloc (8192);
    int n = snprintf (text, 8192, "%s", HARNESS_MOCK_PROVIDERS "routes:\n" HARNESS_MOCK_DIALECT_ROUTES
                                         "mcp:\n  servers:\n");
    for (int f = 0; f < 2; f++)
        for (int c = 0; c < 2; c++)
            n += snprintf (text + n, 8192 - (size_t) n, "    - { name: %s%s, url: \"%s\", revision: \"%s\" }\n",
                           s_families [f], c ? "c" : "", rig->servers [f][c].url, s_revisions [f]);
    return text;
}

//  Pin echo's unchanged definition for the team under each server's name
//  (mcp__<server>__echo) with the real program, from an OpenAI request
//  that defines them.
static void
s_pin (const char *dir)
{
    char body [8192], path [300], cmd [1024];
    int n = snprintf (body, sizeof body, "{\"model\":\"mock-text\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
                                         "\"tools\":[");
    for (int f = 0; f < 2; f++)
        for (int c = 0; c < 2; c++)
            n += snprintf (body + n, sizeof body - (size_t) n,
                           "%s{\"type\":\"function\",\"function\":{\"name\":\"mcp__%s%s__echo\",\"description\":\""
                           MCP_ECHO_DESCRIPTION "\",\"parameters\":" MCP_ECHO_SCHEMA "}}",
                           f || c ? "," : "", s_families [f], c ? "c" : "");
    snprintf (body + n, sizeof body - (size_t) n, "]}");
    cr_assert_eq (harness_write (dir, "request.json", body), 0);
    snprintf (path, sizeof path, "%s/request.json", dir);
    const char *bin = getenv ("SLUICE_BIN_DIR");
    snprintf (cmd, sizeof cmd, "%s/sluice-tools pin --team " MCP_TEAM " --out %s/pins.next --from %s --dialect openai "
              "2>/dev/null && mv %s/pins.next %s/pins.yaml", bin ? bin : "build/asan/bin", dir, path, dir, dir);
    cr_assert_eq (system (cmd), 0, "sluice-tools pin: %s", cmd);
    unlink (path);
}

static void
s_rig_start (mcp_rig_t *rig)
{
    memset (rig, 0, sizeof *rig);
    snprintf (rig->dir, sizeof rig->dir, "/tmp/sluice-mcp-sdk-XXXXXX");
    cr_assert_not_null (mkdtemp (rig->dir));
    for (int f = 0; f < 2; f++)
        for (int c = 0; c < 2; c++) {
            char log [300];
            snprintf (log, sizeof log, "%s/%s%s.calls", rig->dir, s_families [f], c ? "c" : "");
            cr_assert_eq (mcp_server_start (&rig->servers [f][c], rig->dir, s_families [f], c == 1, log), 0,
                          "the %s server came up", s_families [f]);
        }
    char *routes = s_routes (rig);
    s_pin (rig->dir);
    char keys [2048] = "keys:\n", keys_path [300];
    keyfile_entry (keys, sizeof keys, "mcp-client", MCP_KEY, MCP_TEAM, "alice", NULL);
    keyfile_entry (keys, sizeof keys, "mcp-approver", MCP_APPROVER, MCP_TEAM, "bob", "    approver: true\n");
    cr_assert_eq (harness_write (rig->dir, "keys.yaml", keys), 0);
    snprintf (keys_path, sizeof keys_path, "%s/keys.yaml", rig->dir);
    size_t size = sizeof MCP_POLICY + sizeof rig->dir;
    rig->policy = malloc (size);
    snprintf (rig->policy, size, MCP_POLICY, rig->dir);
    const char *gateway_args [] = { "--keys-file", keys_path, NULL };
    stack_opts_t opts = { .policy_text = rig->policy, .mock_delay_ms = 1, .routes_text = routes,
                          .gateway_args = gateway_args, .gateway_approvals = true };
    rig->s = stack_start (&opts);
    free (routes);
    cr_assert_not_null (rig->s, "the stack came up");
}

static void
s_rig_stop (mcp_rig_t *rig)
{
    cr_expect_eq (stack_stop (rig->s), 0);
    for (int f = 0; f < 2; f++)
        for (int c = 0; c < 2; c++)
            mcp_server_stop (&rig->servers [f][c]);
    free (rig->policy);
    char cmd [200];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", rig->dir);
    cr_expect_eq (system (cmd), 0);
}

//  sluice's endpoint of a server.
static void
s_url (const mcp_rig_t *rig, const char *server, char *url, size_t size)
{
    snprintf (url, size, "http://127.0.0.1:%d/mcp/%s", rig->s->http_port, server);
}

//  One scenario of family f's client through sluice on server; its line
//  (the caller's), asserted present; *text its call's texts.
static json_t *
s_through (mcp_rig_t *rig, int f, const char *server, const char *label, const char *tool, const char *args,
           char *text, size_t size)
{
    char url [160], name [64];
    s_url (rig, server, url, sizeof url);
    snprintf (name, sizeof name, "%s-%s", s_families [f], label);
    int status;
    json_t *line = mcp_client_run (rig->dir, name, s_families [f], url, MCP_KEY, tool, args, MCP_RUN_MS, &status);
    cr_assert_not_null (line, "%s %s: the client printed its line", s_families [f], label);
    cr_expect_eq (status, 0, "%s %s: no protocol error: %s", s_families [f], label,
                  json_string_value (json_object_get (line, "error")));
    if (text)
        mcp_client_texts (line, text, size);
    return line;
}

static bool
s_is_error (json_t *line)
{
    return json_is_true (json_object_get (json_object_get (line, "call"), "isError"));
}

//  The approval an asked call waits for, listed by an approver's key: its
//  id into id. True when one showed within MCP_ASK_SEEN_MS.
static bool
s_wait_approval (int port, char *id, size_t size)
{
    const char *headers [] = { "Authorization: Bearer " MCP_APPROVER, NULL };
    sl_buf_t out = { 0 };
    bool found = false;
    int64_t deadline = zclock_mono () + MCP_ASK_SEEN_MS;
    while (!found && zclock_mono () < deadline) {
        sl_buf_reset (&out);
        if (http_request (port, "GET", "/v1/approvals", NULL, headers, &out, MCP_HTTP_MS) == 200) {
            json_t *list = json_loads (sl_buf_cstr (&out), 0, NULL);
            json_t *first = json_array_get (json_object_get (list, "approvals"), 0);
            const char *got = json_string_value (json_object_get (first, "id"));
            if (got) {
                snprintf (id, size, "%s", got);
                found = true;
            }
            json_decref (list);
        }
        if (!found)
            usleep (MCP_POLL_MS * 1000);
    }
    sl_buf_free (&out);
    return found;
}

static void
s_family_through_sluice (mcp_rig_t *rig, int f)
{
    const char *fam = s_families [f];
    mcp_server_t *server = &rig->servers [f][0], *changed = &rig->servers [f][1];
    char text [MCP_TEXT_MAX], args [MCP_TEXT_MAX], changed_name [8];
    snprintf (changed_name, sizeof changed_name, "%sc", fam);

    //  list, and allowed: the call reaches the server.
    json_t *line = s_through (rig, f, fam, "allowed", "echo", "{\"text\":\"hello through sluice\"}", text, sizeof text);
    cr_expect_str_eq (json_string_value (json_object_get (line, "protocol")), s_client_revisions [f]);
    const char *tools [] = { "echo", "write_file", "read_secret", "fetch_page" };
    for (size_t i = 0; i < sizeof tools / sizeof tools [0]; i++)
        cr_expect (mcp_client_lists (line, tools [i]), "%s: %s is listed", fam, tools [i]);
    cr_expect_not (s_is_error (line));
    cr_expect_str_eq (text, "hello through sluice", "%s: echo answered", fam);
    cr_expect_eq (mcp_server_calls (server, "echo", args, sizeof args), 1, "%s: echo reached the server", fam);
    cr_expect_str_eq (args, "{\"text\":\"hello through sluice\"}");
    json_decref (line);

    //  blocked: the notice with isError; the server never saw it.
    line = s_through (rig, f, fam, "blocked", "write_file", "{\"path\":\"/etc/passwd\",\"content\":\"x\"}",
                      text, sizeof text);
    cr_expect (s_is_error (line), "%s: the blocked call's result has isError", fam);
    cr_expect_not_null (strstr (text, "it writes under /etc (rule no-write-etc)"), "%s: the notice: %s", fam, text);
    cr_expect_eq (mcp_server_calls (server, "write_file", NULL, 0), 0, "%s: the blocked call never reached the server",
                  fam);
    json_decref (line);

    //  rewritten: the server got the rewritten path.
    line = s_through (rig, f, fam, "rewritten", "write_file", "{\"path\":\"/home/alice/notes.txt\",\"content\":\"x\"}",
                      text, sizeof text);
    cr_expect_not (s_is_error (line));
    cr_expect_str_eq (text, "written");
    cr_expect_eq (mcp_server_calls (server, "write_file", args, sizeof args), 1, "%s: the rewritten call arrived", fam);
    cr_expect_str_eq (args, "{\"content\":\"x\",\"path\":\"" MCP_REWRITTEN "\"}");
    json_decref (line);

    //  asked and approved: the call waits, an approver approves it at the
    //  gateway, then it reaches the server.
    char url [160], id [64] = "", path [128];
    s_url (rig, fam, url, sizeof url);
    mcp_client_t asked;
    snprintf (path, sizeof path, "%s-asked", fam);
    mcp_client_start (&asked, rig->dir, path, fam, url, MCP_KEY, "echo", "{\"text\":\"" MCP_ASK_TEXT "\"}");
    bool listed = s_wait_approval (rig->s->http_port, id, sizeof id);
    cr_expect (listed, "%s: the asked call is listed at /v1/approvals", fam);
    cr_expect_eq (mcp_server_calls (server, "echo", NULL, 0), 1, "%s: the asked call waits", fam);
    if (listed) {
        const char *headers [] = { "Content-Type: application/json", "Authorization: Bearer " MCP_APPROVER, NULL };
        sl_buf_t out = { 0 };
        snprintf (path, sizeof path, "/v1/approvals/%s", id);
        cr_expect_eq (http_request (rig->s->http_port, "POST", path, MCP_DECIDE, headers, &out, MCP_HTTP_MS), 200,
                      "%s: approved: %s", fam, sl_buf_cstr (&out));
        sl_buf_free (&out);
    }
    int status;
    line = mcp_client_wait (&asked, MCP_RUN_MS, &status);
    cr_expect_eq (status, 0, "%s: the asked call ended", fam);
    mcp_client_texts (line, text, sizeof text);
    cr_expect_not (s_is_error (line));
    cr_expect_str_eq (text, MCP_ASK_TEXT, "%s: the approved call answered", fam);
    cr_expect_eq (mcp_server_calls (server, "echo", args, sizeof args), 2, "%s: the approved call reached the server",
                  fam);
    json_decref (line);

    //  redacted: the key never reaches the client.
    line = s_through (rig, f, fam, "redacted", "read_secret", "{\"service\":\"billing\"}", text, sizeof text);
    cr_expect_not (s_is_error (line));
    cr_expect_null (strstr (text, MCP_SECRET), "%s: the key is redacted: %s", fam, text);
    cr_expect_not_null (strstr (text, MCP_REDACTED), "%s: the placeholder: %s", fam, text);
    cr_expect_not_null (strstr (text, "jane.doe@example.com"), "%s: the rest of the result is kept: %s", fam, text);
    cr_expect_eq (mcp_server_calls (server, "read_secret", NULL, 0), 1);
    json_decref (line);

    //  withheld: the changed echo is not listed, a call of it is blocked.
    line = s_through (rig, f, changed_name, "withheld", "echo", "{\"text\":\"to the changed tool\"}", text,
                      sizeof text);
    cr_expect_not (mcp_client_lists (line, "echo"), "%s: the changed echo is withheld", fam);
    cr_expect (mcp_client_lists (line, "write_file"), "%s: the other tools are listed", fam);
    cr_expect (s_is_error (line), "%s: the call of the changed echo is blocked", fam);
    cr_expect_not_null (strstr (text, "its definition is not the one pinned"), "%s: the notice: %s", fam, text);
    cr_expect_eq (mcp_server_calls (changed, "echo", NULL, 0), 0, "%s: it never reached the server", fam);
    json_decref (line);
}

Test (mcp_sdk, both_families_through_sluice, .timeout = 300)
{
    s_skip_unless_node ();
    mcp_rig_t rig;
    s_rig_start (&rig);
    for (int f = 0; f < 2; f++)
        s_family_through_sluice (&rig, f);
    s_rig_stop (&rig);
}
