/*  Integration: Vertex AI with Google's own credentials, over real
    sockets. The mock plays Google: its token endpoint takes the grants of
    a key file made for the test (their RS256 signature checked with its
    public key), its metadata server hands out tokens, and its Vertex AI
    paths take only the tokens it issued. An OpenAI client's request
    reaches Gemini (vertex) and Claude (vertex-anthropic) on it with:

    - a service-account key file: GOOGLE_APPLICATION_CREDENTIALS for one
      provider, the provider's credentials_file for the other;
    - the metadata server (GCE_METADATA_HOST names the mock);
    - a token that expires: fetched again, the next request carries the
      new one;
    - a key the token endpoint does not know: the client gets one clean
      error naming the refusal, and nothing reaches Vertex AI;
    - a token variable (token_env), as before, and a made-up token refused.

    No token appears in the ingest's log.
*/
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base/sl_buf.h"
#include "tests/integration/harness.h"
#include "tests/integration/sse_client.h"
#include "tests/jwt_fixture.h"

#define TIMEOUT_MS 20000
#define WAIT_MS 20000
#define EMAIL "sluice-test@project-1.iam.gserviceaccount.com"
#define MOCK_TEXT "Hello! This is the mock upstream of sluice. It streams a few sentences, one small piece at " \
                  "a time, so you can watch the proxy work."
#define TOKEN_PREFIX "ya29.mock-"

//  Two providers at the mock: Gemini and Claude on Vertex AI. extra: more
//  fields for both ("" or ", credentials_file: ...").
#define VERTEX_ROUTES(gemini_extra, claude_extra) \
    "providers:\n" \
    "  - { name: vx, dialect: vertex, base_url: \"@MOCK@\", region: us-east5, project: p1" gemini_extra " }\n" \
    "  - { name: vxa, dialect: vertex-anthropic, base_url: \"@MOCK@\", region: us-east5, project: p1" \
    claude_extra " }\n" \
    "routes:\n" \
    "  - { model: \"*@vertex\", provider: vx }\n" \
    "  - { model: \"*@vertex-anthropic\", provider: vxa }\n"

static void
s_clear_env (void)
{
    unsetenv ("GOOGLE_APPLICATION_CREDENTIALS");
    unsetenv ("GOOGLE_OAUTH_ACCESS_TOKEN");
    unsetenv ("GCE_METADATA_HOST");
}

//  A service account's key file for pair, its token_uri the mock's /token
//  on port; its path into path.
static void
s_key_file (const jwt_pair_t *pair, int port, const char *name, char *path, size_t size)
{
    char uri [64];
    snprintf (uri, sizeof uri, "http://127.0.0.1:%d/token", port);
    json_t *key = json_pack ("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", "service_account", "project_id", "p1",
                             "private_key_id", "k1", "private_key", pair->private_pem, "client_email", EMAIL,
                             "token_uri", uri);
    snprintf (path, size, "/tmp/sluice-vertex-%s-XXXXXX", name);
    int fd = mkstemp (path);
    cr_assert_geq (fd, 0);
    close (fd);
    cr_assert_eq (json_dump_file (key, path, 0), 0);
    json_decref (key);
}

static const char *
s_chat (const char *model)
{
    static char body [256];
    snprintf (body, sizeof body,
              "{\"model\":\"%s\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", model);
    return body;
}

//  An OpenAI client's request for model: served whole, the mock's text.
static void
s_expect_served (sluice_stack_t *s, const char *model)
{
    sl_buf_t body = { 0 };
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", s_chat (model), NULL, &body,
                               TIMEOUT_MS);
    cr_expect_eq (status, 200, "%s: %s", model, sl_buf_cstr (&body));
    chat_stream_t cs;
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect_str_eq (sl_buf_cstr (&cs.content), MOCK_TEXT, "%s: the whole text", model);
    cr_expect_eq (cs.errors, 0, "%s: %s", model, sl_buf_cstr (&body));
    chat_stream_free (&cs);
    sl_buf_free (&body);
}

//  The Authorization values the mock recorded, in order, into out (one
//  per line, "Bearer <token>"); how many.
static int
s_recorded_tokens (const char *record, sl_buf_t *out)
{
    sl_buf_t text = { 0 };
    int n = 0;
    if (harness_read (record, &text))
        for (char *line = strtok (text.data, "\n"); line; line = strtok (NULL, "\n")) {
            const char *auth = strstr (line, "\tAuthorization: ");
            if (auth) {
                sl_buf_puts (out, auth + strlen ("\tAuthorization: "));
                sl_buf_putc (out, '\n');
                n++;
            }
        }
    sl_buf_free (&text);
    return n;
}

//  No access token of the mock's in the ingest's log.
static void
s_expect_no_token_logged (sluice_stack_t *s)
{
    sl_buf_t log = { 0 };
    cr_assert (harness_read (s->ingest->log_path, &log));
    cr_expect_null (strstr (sl_buf_cstr (&log), TOKEN_PREFIX), "a token in the ingest's log");
    sl_buf_free (&log);
}

//  The stack with the mock on port (a key file's token_uri names it),
//  playing Google with key_file, recording requests and their
//  Authorization into record.
static sluice_stack_t *
s_stack (int port, const char *key_file, const char *ttl, const char *routes, char *record, size_t size)
{
    char port_text [16];
    snprintf (port_text, sizeof port_text, "%d", port);
    snprintf (record, size, "/tmp/sluice-vertex-record-XXXXXX");
    int fd = mkstemp (record);
    cr_assert_geq (fd, 0);
    close (fd);
    static char args [8][512];
    snprintf (args [0], sizeof args [0], "%s", port_text);
    snprintf (args [1], sizeof args [1], "%s", key_file ? key_file : "");
    snprintf (args [2], sizeof args [2], "%s", ttl ? ttl : "0");
    snprintf (args [3], sizeof args [3], "%s", record);
    const char *mock_args [] = {
        "--port", args [0], "--gcp-key-file", args [1], "--gcp-token-ttl-s", args [2], "--record", args [3],
        "--record-header", "Authorization", NULL
    };
    stack_opts_t opts = { .mock_delay_ms = 1, .mock_args = mock_args, .routes_text = routes };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    cr_assert_eq (s->mock_port, port, "the mock on the port its key file names");
    return s;
}

Test (vertex, a_key_files_token_reaches_gemini_and_claude_on_vertex)
{
    s_clear_env ();
    jwt_pair_t pair;
    jwt_fixture_make (&pair, true);
    int port = harness_free_port ();
    char key [64], record [64];
    s_key_file (&pair, port, "key", key, sizeof key);
    setenv ("GOOGLE_APPLICATION_CREDENTIALS", key, 1);
    char routes [1024];
    snprintf (routes, sizeof routes, VERTEX_ROUTES ("", ", credentials_file: \"%s\""), key);
    sluice_stack_t *s = s_stack (port, key, NULL, routes, record, sizeof record);
    s_expect_served (s, "mock-text@vertex");
    s_expect_served (s, "mock-text@vertex-anthropic");
    int mock_metrics = s->mock_port;
    cr_expect_eq (metric_value (mock_metrics, "mock_gcp_tokens_issued_total"), 2, "one grant per provider");
    sl_buf_t tokens = { 0 };
    cr_expect_eq (s_recorded_tokens (record, &tokens), 2);
    cr_expect_eq (strncmp (sl_buf_cstr (&tokens), "Bearer " TOKEN_PREFIX, strlen ("Bearer " TOKEN_PREFIX)), 0,
                  "a token the mock issued: %s", sl_buf_cstr (&tokens));
    s_expect_no_token_logged (s);
    sl_buf_free (&tokens);
    cr_expect_eq (stack_stop (s), 0);
    unlink (key);
    unlink (record);
    jwt_fixture_free (&pair);
}

Test (vertex, the_metadata_servers_token)
{
    s_clear_env ();
    int port = harness_free_port ();
    char host [32], record [64];
    snprintf (host, sizeof host, "127.0.0.1:%d", port);
    setenv ("GCE_METADATA_HOST", host, 1);
    sluice_stack_t *s = s_stack (port, NULL, NULL, VERTEX_ROUTES ("", ""), record, sizeof record);
    char source [64];
    cr_expect (proc_wait_log (s->ingest, "provider_credentials", "provider=vx source=metadata host=", source,
                              sizeof source, WAIT_MS), "the source logged");
    cr_expect (strncmp (source, host, strlen (host)) == 0, "the host logged: %s", source);
    s_expect_served (s, "mock-text@vertex");
    s_expect_served (s, "mock-text@vertex-anthropic");
    cr_expect_eq (metric_value (s->mock_port, "mock_gcp_tokens_issued_total"), 2);
    s_expect_no_token_logged (s);
    cr_expect_eq (stack_stop (s), 0);
    unlink (record);
}

Test (vertex, a_token_that_expires_is_fetched_again)
{
    s_clear_env ();
    jwt_pair_t pair;
    jwt_fixture_make (&pair, true);
    int port = harness_free_port ();
    char key [64], record [64];
    s_key_file (&pair, port, "key", key, sizeof key);
    setenv ("GOOGLE_APPLICATION_CREDENTIALS", key, 1);
    //  32 s: sluice uses a token until 30 s before it expires, so for 2 s.
    sluice_stack_t *s = s_stack (port, key, "32", VERTEX_ROUTES ("", ""), record, sizeof record);
    s_expect_served (s, "mock-text@vertex");
    zclock_sleep (3000);
    s_expect_served (s, "mock-text@vertex");
    sl_buf_t tokens = { 0 };
    cr_assert_eq (s_recorded_tokens (record, &tokens), 2);
    char *second = strchr (tokens.data, '\n') + 1;
    cr_expect_neq (strncmp (tokens.data, second, (size_t) (second - tokens.data)), 0,
                   "the second request carries a new token: %s", sl_buf_cstr (&tokens));
    cr_expect_geq (metric_value (s->mock_port, "mock_gcp_tokens_issued_total"), 3,
                   "the first token of each provider and a new one");
    sl_buf_free (&tokens);
    cr_expect_eq (stack_stop (s), 0);
    unlink (key);
    unlink (record);
    jwt_fixture_free (&pair);
}

Test (vertex, a_key_google_does_not_know_is_one_clean_error)
{
    s_clear_env ();
    jwt_pair_t known, unknown;
    jwt_fixture_make (&known, true);
    jwt_fixture_make (&unknown, true);
    int port = harness_free_port ();
    char known_key [64], unknown_key [64], record [64];
    s_key_file (&known, port, "known", known_key, sizeof known_key);
    s_key_file (&unknown, port, "unknown", unknown_key, sizeof unknown_key);
    setenv ("GOOGLE_APPLICATION_CREDENTIALS", unknown_key, 1);
    sluice_stack_t *s = s_stack (port, known_key, NULL, VERTEX_ROUTES ("", ""), record, sizeof record);
    sl_buf_t body = { 0 };
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-text@vertex"), NULL,
                               &body, TIMEOUT_MS);
    cr_expect_eq (status, 502, "%s", sl_buf_cstr (&body));
    cr_expect (strstr (sl_buf_cstr (&body), "upstream_credentials") != NULL, "%s", sl_buf_cstr (&body));
    cr_expect (strstr (sl_buf_cstr (&body), "invalid_grant: Invalid JWT Signature.") != NULL, "the refusal named: %s",
               sl_buf_cstr (&body));
    cr_expect_eq (metric_value (s->mock_port, "mock_gcp_tokens_issued_total"), 0);
    sl_buf_t tokens = { 0 };
    cr_expect_eq (s_recorded_tokens (record, &tokens), 0, "nothing sent to Vertex AI");
    sl_buf_free (&tokens);
    sl_buf_free (&body);
    cr_expect_eq (stack_stop (s), 0);
    unlink (known_key);
    unlink (unknown_key);
    unlink (record);
    jwt_fixture_free (&known);
    jwt_fixture_free (&unknown);
}

Test (vertex, a_token_variable_and_a_made_up_token)
{
    s_clear_env ();
    setenv ("SLUICE_TEST_VERTEX_TOKEN", "mock-cloud-token", 1);
    setenv ("SLUICE_TEST_MADE_UP_TOKEN", "ya29.made-up", 1);
    int port = harness_free_port ();
    char record [64];
    sluice_stack_t *s = s_stack (port, NULL, NULL, VERTEX_ROUTES (", token_env: SLUICE_TEST_VERTEX_TOKEN",
                                                                  ", token_env: SLUICE_TEST_MADE_UP_TOKEN"),
                                 record, sizeof record);
    s_expect_served (s, "mock-text@vertex");
    sl_buf_t body = { 0 };
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-text@vertex-anthropic"),
                               NULL, &body, TIMEOUT_MS);
    cr_expect_neq (status, 200, "a token Google did not issue is refused: %s", sl_buf_cstr (&body));
    cr_expect (strstr (sl_buf_cstr (&body), "401") != NULL || strstr (sl_buf_cstr (&body), "authentication"),
               "%s", sl_buf_cstr (&body));
    cr_expect_eq (metric_value (s->mock_port, "mock_gcp_tokens_issued_total"), 0);
    sl_buf_free (&body);
    cr_expect_eq (stack_stop (s), 0);
    unlink (record);
}
