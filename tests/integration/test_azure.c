/*  Integration: Azure OpenAI with Entra ID's own credentials, over real
    sockets. The mock plays Entra ID (its token endpoint takes the client
    secret or the federated token it was given, for its tenant and app)
    and Azure OpenAI, whose paths then take only the tokens it issued.
    The ingest finds the credential in the variables Azure's SDKs read
    (AZURE_TENANT_ID, AZURE_CLIENT_ID, AZURE_CLIENT_SECRET or
    AZURE_FEDERATED_TOKEN_FILE; AZURE_AUTHORITY_HOST names the mock):

    - a client secret: an OpenAI client's request served, carrying a token
      the mock issued;
    - workload identity: the federated token file's token traded;
    - a token that expires mid-session: fetched again, the next request
      carries the new one;
    - a wrong secret: the client gets one clean error in its own dialect
      (Chat Completions, Anthropic) naming Entra ID's refusal, and nothing
      reaches Azure OpenAI;
    - no variables: each call fails naming what to set.

    Neither a token nor the secret appears in the ingest's log.
*/
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base/sl_buf.h"
#include "tests/integration/harness.h"
#include "tests/integration/sse_client.h"

#define TIMEOUT_MS 20000
#define WAIT_MS 20000
#define MOCK_TEXT "Hello! This is the mock upstream of sluice. It streams a few sentences, one small piece at " \
                  "a time, so you can watch the proxy work."
#define TENANT "72f988bf-86f1-41af-91ab-2d7cd011db47"
#define CLIENT "0a1b2c3d-1111-2222-3333-0123456789ab"
#define SECRET "azure-test-secret~value"
#define POD_TOKEN "eyJhbGciOiJSUzI1NiJ9.pod-service-account.sig"
#define TOKEN_PREFIX "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.mock-entra-"

#define AZURE_ROUTES \
    "providers:\n" \
    "  - { name: az, dialect: azure, base_url: \"@MOCK@\" }\n" \
    "routes:\n" \
    "  - { model: \"*@azure\", provider: az }\n"

static void
s_clear_env (void)
{
    const char *names [] = {
        "AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_FEDERATED_TOKEN_FILE",
        "AZURE_AUTHORITY_HOST", "SLUICE_MOCK_AZURE_CLIENT_SECRET", "SLUICE_MOCK_AZURE_FEDERATED_TOKEN",
        "SLUICE_MOCK_AZURE_TENANT_ID", "SLUICE_MOCK_AZURE_CLIENT_ID", NULL
    };
    for (size_t i = 0; names [i]; i++)
        unsetenv (names [i]);
}

//  The ingest's variables for a client secret, its authority the mock.
static void
s_client_env (int port, const char *secret)
{
    char authority [64];
    snprintf (authority, sizeof authority, "http://127.0.0.1:%d", port);
    setenv ("AZURE_AUTHORITY_HOST", authority, 1);
    setenv ("AZURE_TENANT_ID", TENANT, 1);
    setenv ("AZURE_CLIENT_ID", CLIENT, 1);
    if (secret)
        setenv ("AZURE_CLIENT_SECRET", secret, 1);
}

static const char *
s_chat (const char *model)
{
    static char body [256];
    snprintf (body, sizeof body,
              "{\"model\":\"%s\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", model);
    return body;
}

//  An OpenAI client's request: served whole, the mock's text.
static void
s_expect_served (sluice_stack_t *s)
{
    sl_buf_t body = { 0 };
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-text@azure"), NULL, &body,
                               TIMEOUT_MS);
    cr_expect_eq (status, 200, "%s", sl_buf_cstr (&body));
    chat_stream_t cs;
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect_str_eq (sl_buf_cstr (&cs.content), MOCK_TEXT, "the whole text");
    cr_expect_eq (cs.errors, 0, "%s", sl_buf_cstr (&body));
    chat_stream_free (&cs);
    sl_buf_free (&body);
}

//  The Authorization values the mock recorded for Azure's paths, one per
//  line, into out; how many requests reached them.
static int
s_recorded (const char *record, sl_buf_t *out)
{
    sl_buf_t text = { 0 };
    int n = 0;
    if (harness_read (record, &text))
        for (char *line = strtok (text.data, "\n"); line; line = strtok (NULL, "\n")) {
            if (strncmp (line, "/openai/", strlen ("/openai/")) != 0)
                continue;
            n++;
            const char *auth = strstr (line, "\tAuthorization: ");
            sl_buf_puts (out, auth ? auth + strlen ("\tAuthorization: ") : "(none)");
            sl_buf_putc (out, '\n');
        }
    sl_buf_free (&text);
    return n;
}

//  Neither a token of the mock's nor the secret in the ingest's log.
static void
s_expect_nothing_secret_logged (sluice_stack_t *s)
{
    sl_buf_t log = { 0 };
    cr_assert (harness_read (s->ingest->log_path, &log));
    cr_expect_null (strstr (sl_buf_cstr (&log), TOKEN_PREFIX), "a token in the ingest's log");
    cr_expect_null (strstr (sl_buf_cstr (&log), SECRET), "the secret in the ingest's log");
    cr_expect_null (strstr (sl_buf_cstr (&log), POD_TOKEN), "the federated token in the ingest's log");
    sl_buf_free (&log);
}

//  The stack with the mock on port playing Entra ID's app (its secret or
//  federated token set in the environment by the caller) with tokens of
//  ttl seconds ("0": an hour), recording requests and their Authorization.
static sluice_stack_t *
s_stack (int port, const char *ttl, char *record, size_t size)
{
    snprintf (record, size, "/tmp/sluice-azure-record-XXXXXX");
    int fd = mkstemp (record);
    cr_assert_geq (fd, 0);
    close (fd);
    static char args [3][128];
    snprintf (args [0], sizeof args [0], "%d", port);
    snprintf (args [1], sizeof args [1], "%s", ttl ? ttl : "0");
    snprintf (args [2], sizeof args [2], "%s", record);
    const char *mock_args [] = {
        "--port", args [0], "--azure-tenant-id", TENANT, "--azure-client-id", CLIENT, "--azure-token-ttl-s", args [1],
        "--record", args [2], "--record-header", "Authorization", NULL
    };
    stack_opts_t opts = { .mock_delay_ms = 1, .mock_args = mock_args, .routes_text = AZURE_ROUTES };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    cr_assert_eq (s->mock_port, port, "the mock on the port AZURE_AUTHORITY_HOST names");
    return s;
}

Test (azure, a_client_secrets_token_reaches_azure_openai)
{
    s_clear_env ();
    int port = harness_free_port ();
    setenv ("SLUICE_MOCK_AZURE_CLIENT_SECRET", SECRET, 1);
    s_client_env (port, SECRET);
    char record [64];
    sluice_stack_t *s = s_stack (port, NULL, record, sizeof record);
    char source [96];
    cr_expect (proc_wait_log (s->ingest, "provider_credentials", "provider=az source=", source, sizeof source,
                              WAIT_MS), "the source logged");
    cr_expect_str_eq (source, "client_secret");
    cr_expect (proc_wait_log (s->ingest, "provider_credentials", "client_id=", source, sizeof source, WAIT_MS));
    cr_expect_str_eq (source, CLIENT);
    s_expect_served (s);
    s_expect_served (s);
    cr_expect_eq (metric_value (s->mock_port, "mock_entra_tokens_issued_total"), 1, "one grant for both calls");
    sl_buf_t auth = { 0 };
    cr_expect_eq (s_recorded (record, &auth), 2);
    cr_expect_eq (strncmp (sl_buf_cstr (&auth), "Bearer " TOKEN_PREFIX, strlen ("Bearer " TOKEN_PREFIX)), 0,
                  "a token the mock issued: %s", sl_buf_cstr (&auth));
    s_expect_nothing_secret_logged (s);
    sl_buf_free (&auth);
    cr_expect_eq (stack_stop (s), 0);
    unlink (record);
    s_clear_env ();
}

Test (azure, workload_identitys_federated_token_is_traded)
{
    s_clear_env ();
    int port = harness_free_port ();
    char file [64];
    snprintf (file, sizeof file, "/tmp/sluice-azure-token-XXXXXX");
    int fd = mkstemp (file);
    cr_assert_geq (fd, 0);
    cr_assert_eq (write (fd, POD_TOKEN "\n", strlen (POD_TOKEN) + 1), (ssize_t) strlen (POD_TOKEN) + 1);
    close (fd);
    setenv ("SLUICE_MOCK_AZURE_FEDERATED_TOKEN", POD_TOKEN, 1);
    s_client_env (port, NULL);
    setenv ("AZURE_FEDERATED_TOKEN_FILE", file, 1);
    char record [64];
    sluice_stack_t *s = s_stack (port, NULL, record, sizeof record);
    s_expect_served (s);
    cr_expect_eq (metric_value (s->mock_port, "mock_entra_tokens_issued_total"), 1);
    s_expect_nothing_secret_logged (s);
    cr_expect_eq (stack_stop (s), 0);
    unlink (record);
    unlink (file);
    s_clear_env ();
}

Test (azure, a_token_that_expires_mid_session_is_fetched_again)
{
    s_clear_env ();
    int port = harness_free_port ();
    setenv ("SLUICE_MOCK_AZURE_CLIENT_SECRET", SECRET, 1);
    s_client_env (port, SECRET);
    char record [64];
    //  32 s: sluice uses a token until 30 s before it expires, so for 2 s.
    sluice_stack_t *s = s_stack (port, "32", record, sizeof record);
    s_expect_served (s);
    zclock_sleep (3000);
    s_expect_served (s);
    sl_buf_t auth = { 0 };
    cr_assert_eq (s_recorded (record, &auth), 2);
    char *second = strchr (auth.data, '\n') + 1;
    cr_expect_neq (strncmp (auth.data, second, (size_t) (second - auth.data)), 0,
                   "the second request carries a new token: %s", sl_buf_cstr (&auth));
    cr_expect_geq (metric_value (s->mock_port, "mock_entra_tokens_issued_total"), 2);
    sl_buf_free (&auth);
    cr_expect_eq (stack_stop (s), 0);
    unlink (record);
    s_clear_env ();
}

Test (azure, a_wrong_secret_is_one_clean_error_in_the_clients_dialect)
{
    s_clear_env ();
    int port = harness_free_port ();
    setenv ("SLUICE_MOCK_AZURE_CLIENT_SECRET", SECRET, 1);
    s_client_env (port, "not-the-secret");
    char record [64];
    sluice_stack_t *s = s_stack (port, NULL, record, sizeof record);
    sl_buf_t body = { 0 };
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-text@azure"), NULL, &body,
                               TIMEOUT_MS);
    cr_expect_eq (status, 502, "%s", sl_buf_cstr (&body));
    cr_expect (strstr (sl_buf_cstr (&body), "upstream_credentials") != NULL, "%s", sl_buf_cstr (&body));
    cr_expect (strstr (sl_buf_cstr (&body), "invalid_client: AADSTS7000215: Invalid client secret provided.") != NULL,
               "the refusal named: %s", sl_buf_cstr (&body));
    cr_expect (strstr (sl_buf_cstr (&body), "\"error\":{") != NULL, "Chat Completions' error: %s",
               sl_buf_cstr (&body));
    sl_buf_reset (&body);
    //  An Anthropic client: its own error shape.
    static const char *const headers [] = { "anthropic-version: 2023-06-01", NULL };
    const char *messages = "{\"model\":\"mock-text@azure\",\"max_tokens\":64,\"stream\":true,"
                           "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    status = http_request (s->http_port, "POST", "/v1/messages", messages, headers, &body, TIMEOUT_MS);
    cr_expect_eq (status, 502, "%s", sl_buf_cstr (&body));
    cr_expect (strstr (sl_buf_cstr (&body), "\"type\":\"error\"") != NULL, "Anthropic's error: %s",
               sl_buf_cstr (&body));
    cr_expect (strstr (sl_buf_cstr (&body), "AADSTS7000215") != NULL, "%s", sl_buf_cstr (&body));
    cr_expect_eq (metric_value (s->mock_port, "mock_entra_tokens_issued_total"), 0);
    sl_buf_t auth = { 0 };
    cr_expect_eq (s_recorded (record, &auth), 0, "nothing sent to Azure OpenAI: %s", sl_buf_cstr (&auth));
    s_expect_nothing_secret_logged (s);
    sl_buf_free (&auth);
    sl_buf_free (&body);
    cr_expect_eq (stack_stop (s), 0);
    unlink (record);
    s_clear_env ();
}

Test (azure, no_variables_fail_each_call_naming_what_to_set)
{
    s_clear_env ();
    int port = harness_free_port ();
    setenv ("SLUICE_MOCK_AZURE_CLIENT_SECRET", SECRET, 1);
    setenv ("AZURE_CLIENT_SECRET", SECRET, 1);      //  partial: no tenant, no client id
    char record [64];
    sluice_stack_t *s = s_stack (port, NULL, record, sizeof record);
    sl_buf_t body = { 0 };
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-text@azure"), NULL, &body,
                               TIMEOUT_MS);
    cr_expect_eq (status, 502, "%s", sl_buf_cstr (&body));
    cr_expect (strstr (sl_buf_cstr (&body), "AZURE_CLIENT_SECRET is set but AZURE_TENANT_ID and AZURE_CLIENT_ID is "
                                            "not") != NULL, "%s", sl_buf_cstr (&body));
    sl_buf_t auth = { 0 };
    cr_expect_eq (s_recorded (record, &auth), 0, "nothing sent without credentials");
    sl_buf_free (&auth);
    sl_buf_free (&body);
    cr_expect_eq (stack_stop (s), 0);
    unlink (record);
    s_clear_env ();
}
