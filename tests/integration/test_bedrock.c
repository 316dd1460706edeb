/*  Integration: Amazon Bedrock through the stack, its requests signed.

    The ingest calls the mock's Bedrock (Converse and Claude's
    InvokeModelWithResponseStream) with SigV4 signatures made from the
    environment's AWS credentials, and the mock checks them with the keys
    it is given (SLUICE_MOCK_AWS_*: services/mock/sl_mock_aws.h):

    - static keys: the right secret is served whole; a wrong one is refused
      by the mock as AWS refuses it (403, InvalidSignatureException) and
      the client gets an error, never a stream; an exception frame before
      the first byte (mock-fail-first) moves the request to the next
      provider, which serves it whole;
    - web identity: the ingest trades a token file with an STS server the
      test runs on a loopback port (AWS_ENDPOINT_URL_STS) and signs with
      the keys STS gives; they live for a second past the ingest's grace,
      so the next request finds them stale and keys are fetched again,
      with which it is served;
    - a provider's own keys (aws_access_key_id_env, ...): two providers of
      one ingest sign with two accounts' keys, neither with the
      environment's usual ones; a variable named but empty fails the
      provider's calls naming it.
*/
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/base/sl_buf.h"
#include "tests/integration/harness.h"
#include "tests/integration/sse_client.h"

#define TIMEOUT_MS 20000
#define MOCK_TEXT "Hello! This is the mock upstream of sluice. It streams a few sentences, one small piece at " \
                  "a time, so you can watch the proxy work."
#define KEY_ID "AKIDEXAMPLEMOCK"
#define SECRET "mock-secret-access-key"
#define STS_KEY_ID "ASIAEXAMPLESTS"
#define STS_SECRET "sts-secret-access-key"
#define STS_TOKEN "sts-session-token"
#define STS_LIFE_S 31                   //  valid 1 s: the ingest stops using keys 30 s before they expire
#define STS_POLL_MS 50

static const char s_routes [] =
    "providers:\n"
    "  - { name: bedrock-mock, dialect: bedrock, region: us-west-2, base_url: \"@MOCK@\" }\n"
    "  - { name: claude-mock, dialect: bedrock-anthropic, region: us-west-2, base_url: \"@MOCK@\" }\n"
    "routes:\n"
    "  - model: converse-text\n"
    "    providers: [{ provider: bedrock-mock, model: \"mock-text\" }]\n"
    "  - model: claude-text\n"
    "    providers: [{ provider: claude-mock, model: \"mock-text\" }]\n"
    "  - model: exception-first\n"
    "    providers: [{ provider: bedrock-mock, model: \"mock-fail-first\" },\n"
    "                { provider: claude-mock, model: \"mock-text\" }]\n";

static void
s_clear_env (void)
{
    const char *vars [] = { "AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                            "AWS_SESSION_TOKEN", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
                            "AWS_ROLE_SESSION_NAME", "AWS_ENDPOINT_URL_STS", "SLUICE_MOCK_AWS_ACCESS_KEY_ID",
                            "SLUICE_MOCK_AWS_SECRET_ACCESS_KEY", "SLUICE_MOCK_AWS_SESSION_TOKEN", NULL };
    for (const char **v = vars; *v; v++)
        unsetenv (*v);
}

static const char *
s_chat (const char *model)
{
    static char body [256];
    snprintf (body, sizeof body,
              "{\"model\":\"%s\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", model);
    return body;
}

//  An OpenAI client's request to model: served whole, the mock's text once.
static void
s_expect_served (sluice_stack_t *s, const char *model)
{
    sl_buf_t body = { 0 };
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", s_chat (model), NULL, &body,
                               TIMEOUT_MS);
    cr_expect_eq (status, 200, "%s: %s", model, sl_buf_cstr (&body));
    chat_stream_t cs;
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect_str_eq (sl_buf_cstr (&cs.content), MOCK_TEXT, "%s: the whole text, once", model);
    cr_expect_eq (cs.errors, 0, "%s", model);
    cr_expect_eq (cs.finish_count, 1, "%s", model);
    chat_stream_free (&cs);
    sl_buf_free (&body);
}

//  Refused: an error, no stream, and the mock said why in AWS's words.
static void
s_expect_refused (sluice_stack_t *s, const char *model)
{
    sl_buf_t body = { 0 };
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", s_chat (model), NULL, &body,
                               TIMEOUT_MS);
    cr_expect_neq (status, 200, "%s: %s", model, sl_buf_cstr (&body));
    cr_expect_null (strstr (sl_buf_cstr (&body), "Hello!"), "%s: nothing of the answer: %s", model,
                    sl_buf_cstr (&body));
    sl_buf_free (&body);
}

Test (bedrock, static_keys_sign_and_a_wrong_secret_is_refused)
{
    s_clear_env ();
    setenv ("SLUICE_MOCK_AWS_ACCESS_KEY_ID", KEY_ID, 1);
    setenv ("SLUICE_MOCK_AWS_SECRET_ACCESS_KEY", SECRET, 1);
    setenv ("AWS_ACCESS_KEY_ID", KEY_ID, 1);
    setenv ("AWS_SECRET_ACCESS_KEY", SECRET, 1);
    stack_opts_t opts = { .mock_delay_ms = 1, .routes_text = s_routes };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    cr_expect (proc_wait_log (s->mock, "aws_signatures=checked", NULL, NULL, 0, TIMEOUT_MS));
    s_expect_served (s, "converse-text");
    s_expect_served (s, "claude-text");
    //  An exception frame before the first byte: the next provider serves.
    s_expect_served (s, "exception-first");
    cr_expect_eq (metric_value (atoi (s->metrics [1]), "sluice_upstream_failovers_total"), 1);
    cr_expect_eq (stack_stop (s), 0);

    setenv ("AWS_SECRET_ACCESS_KEY", "not-the-secret", 1);
    s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    s_expect_refused (s, "converse-text");
    s_expect_refused (s, "claude-text");
    cr_expect (proc_wait_log (s->mock, "bad_signature", "InvalidSignatureException", NULL, 0, TIMEOUT_MS),
               "the mock checked and refused the signature");
    cr_expect_eq (stack_stop (s), 0);
}

//  Two providers of one ingest, each with its own AWS account's keys in
//  variables it names; the environment's usual keys are another's.
static const char s_two_accounts [] =
    "providers:\n"
    "  - { name: account-a, dialect: bedrock, region: us-west-2, base_url: \"@MOCK@\",\n"
    "      aws_access_key_id_env: ACCOUNT_A_KEY_ID, aws_secret_access_key_env: ACCOUNT_A_SECRET }\n"
    "  - { name: account-b, dialect: bedrock-anthropic, region: us-west-2, base_url: \"@MOCK@\",\n"
    "      aws_access_key_id_env: ACCOUNT_B_KEY_ID, aws_secret_access_key_env: ACCOUNT_B_SECRET,\n"
    "      aws_session_token_env: ACCOUNT_B_SESSION }\n"
    "routes:\n"
    "  - model: account-a-text\n"
    "    providers: [{ provider: account-a, model: \"mock-text\" }]\n"
    "  - model: account-b-text\n"
    "    providers: [{ provider: account-b, model: \"mock-text\" }]\n";

Test (bedrock, each_provider_signs_with_the_keys_it_names)
{
    s_clear_env ();
    //  The mock is account A's Bedrock; the environment's default keys
    //  are a third account's, which neither provider uses.
    setenv ("SLUICE_MOCK_AWS_ACCESS_KEY_ID", KEY_ID, 1);
    setenv ("SLUICE_MOCK_AWS_SECRET_ACCESS_KEY", SECRET, 1);
    setenv ("AWS_ACCESS_KEY_ID", "AKIDDEFAULTACCOUNT", 1);
    setenv ("AWS_SECRET_ACCESS_KEY", "default-account-secret", 1);
    setenv ("ACCOUNT_A_KEY_ID", KEY_ID, 1);
    setenv ("ACCOUNT_A_SECRET", SECRET, 1);
    setenv ("ACCOUNT_B_KEY_ID", "ASIAACCOUNTB", 1);
    setenv ("ACCOUNT_B_SECRET", "account-b-secret", 1);
    setenv ("ACCOUNT_B_SESSION", "account-b-session", 1);
    stack_opts_t opts = { .mock_delay_ms = 1, .routes_text = s_two_accounts };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    cr_expect (proc_wait_log (s->mock, "aws_signatures=checked", NULL, NULL, 0, TIMEOUT_MS));
    char variable [64];
    cr_expect (proc_wait_log (s->ingest, "provider_credentials", "provider=account-a source=named_keys variable=",
                              variable, sizeof variable, TIMEOUT_MS));
    cr_expect_str_eq (variable, "ACCOUNT_A_KEY_ID");
    s_expect_served (s, "account-a-text");
    //  Account B's keys are not the mock's: AWS would not know them.
    s_expect_refused (s, "account-b-text");
    cr_expect (proc_wait_log (s->mock, "bad_signature", "UnrecognizedClientException", NULL, 0, TIMEOUT_MS),
               "account B's own key id reached the mock: %s", s->mock->log_path);
    cr_expect_eq (stack_stop (s), 0);
    //  A variable a provider names that holds nothing: its calls fail
    //  naming it, nothing sent.
    unsetenv ("ACCOUNT_A_SECRET");
    s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    sl_buf_t body = { 0 };
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("account-a-text"), NULL, &body,
                               TIMEOUT_MS);
    cr_expect_eq (status, 502, "%s", sl_buf_cstr (&body));
    cr_expect (strstr (sl_buf_cstr (&body), "the variable ACCOUNT_A_SECRET (aws_secret_access_key_env) is unset or "
                                            "empty") != NULL, "%s", sl_buf_cstr (&body));
    sl_buf_free (&body);
    cr_expect_eq (stack_stop (s), 0);
    const char *vars [] = { "ACCOUNT_A_KEY_ID", "ACCOUNT_B_KEY_ID", "ACCOUNT_B_SECRET", "ACCOUNT_B_SESSION", NULL };
    for (const char **v = vars; *v; v++)
        unsetenv (*v);
}

//  --------------------------------------------------------------------------
//  An STS server: AssumeRoleWithWebIdentity answered with the same keys,
//  expiring STS_LIFE_S after each answer.

typedef struct {
    int fd;
    int port;
    atomic_int requests;
    atomic_bool stop;
    char last [2048];                   //  the last request's body
    pthread_t thread;
} s_sts_t;

static void
s_sts_answer (s_sts_t *sts, int conn)
{
    char in [8192];
    size_t got = 0;
    //  The head, then as much body as Content-Length says (bounded).
    for (int i = 0; i < 100 && got < sizeof in - 1; i++) {
        struct pollfd p = { conn, POLLIN, 0 };
        if (poll (&p, 1, 100) <= 0)
            continue;
        ssize_t n = read (conn, in + got, sizeof in - 1 - got);
        if (n <= 0)
            break;
        got += (size_t) n;
        in [got] = 0;
        char *head_end = strstr (in, "\r\n\r\n");
        const char *cl = strcasestr (in, "Content-Length:");
        if (head_end && (!cl || got >= (size_t) (head_end + 4 - in) + (size_t) atol (cl + 15)))
            break;
    }
    in [got] = 0;
    char *body = strstr (in, "\r\n\r\n");
    snprintf (sts->last, sizeof sts->last, "%s", body ? body + 4 : "");
    time_t expires = time (NULL) + STS_LIFE_S;
    struct tm tm;
    gmtime_r (&expires, &tm);
    char when [32];
    strftime (when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    char xml [1024], out [1400];
    int n = snprintf (xml, sizeof xml,
                      "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
                      "<SessionToken>" STS_TOKEN "</SessionToken><SecretAccessKey>" STS_SECRET "</SecretAccessKey>"
                      "<Expiration>%s</Expiration><AccessKeyId>" STS_KEY_ID "</AccessKeyId>"
                      "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>", when);
    int m = snprintf (out, sizeof out, "HTTP/1.1 200 OK\r\nContent-Type: text/xml\r\nContent-Length: %d\r\n"
                      "Connection: close\r\n\r\n%s", n, xml);
    atomic_fetch_add (&sts->requests, 1);
    if (write (conn, out, (size_t) m) != m)
        fprintf (stderr, "sts: short write\n");
}

static void *
s_sts_run (void *arg)
{
    s_sts_t *sts = arg;
    while (!atomic_load (&sts->stop)) {
        struct pollfd p = { sts->fd, POLLIN, 0 };
        if (poll (&p, 1, STS_POLL_MS) <= 0)
            continue;
        int conn = accept (sts->fd, NULL, NULL);
        if (conn < 0)
            continue;
        s_sts_answer (sts, conn);
        close (conn);
    }
    return NULL;
}

static void
s_sts_start (s_sts_t *sts)
{
    memset (sts, 0, sizeof *sts);
    sts->fd = socket (AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    socklen_t len = sizeof addr;
    cr_assert_eq (bind (sts->fd, (struct sockaddr *) &addr, len), 0);
    cr_assert_eq (listen (sts->fd, 16), 0);
    cr_assert_eq (getsockname (sts->fd, (struct sockaddr *) &addr, &len), 0);
    sts->port = ntohs (addr.sin_port);
    cr_assert_eq (pthread_create (&sts->thread, NULL, s_sts_run, sts), 0);
}

static void
s_sts_stop (s_sts_t *sts)
{
    atomic_store (&sts->stop, true);
    pthread_join (sts->thread, NULL);
    close (sts->fd);
}

Test (bedrock, web_identity_through_sts_and_refreshed)
{
    s_clear_env ();
    s_sts_t sts;
    s_sts_start (&sts);
    char dir [] = "/tmp/sl-bedrock-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    char token_file [64], url [64];
    snprintf (token_file, sizeof token_file, "%s/token", dir);
    cr_assert_eq (harness_write (dir, "token", "eyJhbGciOiJSUzI1NiJ9.pod.sig\n"), 0);
    snprintf (url, sizeof url, "http://127.0.0.1:%d", sts.port);
    setenv ("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/sluice", 1);
    setenv ("AWS_WEB_IDENTITY_TOKEN_FILE", token_file, 1);
    setenv ("AWS_ENDPOINT_URL_STS", url, 1);
    setenv ("SLUICE_MOCK_AWS_ACCESS_KEY_ID", STS_KEY_ID, 1);
    setenv ("SLUICE_MOCK_AWS_SECRET_ACCESS_KEY", STS_SECRET, 1);
    setenv ("SLUICE_MOCK_AWS_SESSION_TOKEN", STS_TOKEN, 1);
    stack_opts_t opts = { .mock_delay_ms = 1, .routes_text = s_routes };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    s_expect_served (s, "converse-text");
    int first = atomic_load (&sts.requests);
    cr_expect_geq (first, 1, "STS was asked");
    cr_expect (strstr (sts.last, "Action=AssumeRoleWithWebIdentity"), "%s", sts.last);
    cr_expect (strstr (sts.last, "WebIdentityToken=eyJhbGciOiJSUzI1NiJ9.pod.sig"), "the token file's: %s", sts.last);
    //  The keys are stale a second after STS gave them: wait that out
    //  (bounded), then the next request has new ones fetched.
    int64_t until = zclock_mono () + 1500;
    while (zclock_mono () < until)
        zclock_sleep (STS_POLL_MS);
    s_expect_served (s, "claude-text");
    cr_expect_gt (atomic_load (&sts.requests), first, "keys fetched again");
    cr_expect_eq (stack_stop (s), 0);
    s_sts_stop (&sts);
    unlink (token_file);
    rmdir (dir);
}
