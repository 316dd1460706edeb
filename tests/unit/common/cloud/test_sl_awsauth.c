/*  Unit tests: common/cloud/sl_awsauth - AWS credentials as a Bedrock
    provider's credential source: a URL cut as SigV4 signs it, an attempt
    signed with static keys (its header lines and the URL's host, path and
    query, checked by sl_sigv4_verify; a wrong secret refused), a Bedrock
    API key as a bearer line, and web identity against a real STS stand-in:
    PENDING until the keys come, then signed with them; a refusal told to
    the attempt waiting, with STS's reason. */
#include <criterion/criterion.h>
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/cloud/sl_awsauth.h"
#include "tests/unit/token_server.h"

#define RUN_BOUND_MS 5000
#define ROLE "arn:aws:iam::123456789012:role/bedrock"
#define PATH "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"

static void
s_parts (const char *url, const char *host, const char *path, const char *query)
{
    sl_buf_t out = { 0 };
    size_t h, p, q;
    cr_assert_eq (sl_awsauth_url_parts (url, &out, &h, &p, &q), 0, "%s", url);
    cr_expect_str_eq (out.data + h, host, "%s", url);
    cr_expect_str_eq (out.data + p, path, "%s", url);
    cr_expect_str_eq (out.data + q, query, "%s", url);
    sl_buf_free (&out);
}

Test (sl_awsauth, a_url_cut_as_sigv4_signs_it)
{
    s_parts ("http://127.0.0.1:8123" PATH, "127.0.0.1:8123", PATH, "");
    s_parts ("https://bedrock-runtime.us-east-1.amazonaws.com:443/model/m/invoke?a=1&b=2",
             "bedrock-runtime.us-east-1.amazonaws.com", "/model/m/invoke", "a=1&b=2");
    s_parts ("http://h:80", "h", "/", "");
    s_parts ("https://h:8443/x#frag", "h:8443", "/x", "");
    sl_buf_t out = { 0 };
    size_t h, p, q;
    cr_expect_eq (sl_awsauth_url_parts ("127.0.0.1/x", &out, &h, &p, &q), -1);
    cr_expect_eq (sl_awsauth_url_parts ("http:///x", &out, &h, &p, &q), -1);
    cr_expect_eq (sl_awsauth_url_parts (NULL, &out, &h, &p, &q), -1);
    sl_buf_free (&out);
}

//  An attempt to the mock's Bedrock, as the ingest asks for one.
static const char *const s_lines [] = {
    "Content-Type: application/json",
    "Accept: application/vnd.amazon.eventstream",
    "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
};

static sl_auth_request_t
s_request (void)
{
    return (sl_auth_request_t) {
        .method = "POST", .url = "http://127.0.0.1:8123" PATH, .headers = s_lines, .header_count = 3,
        .body = SL_STR_LIT ("{\"messages\":[]}"), .now_ms = 1, .wall_s = time (NULL)
    };
}

//  The attempt with lines as it arrives (curl adds Host): checked.
static int
s_verify (const sl_buf_t *lines, size_t count, const sl_sigv4_creds_t *creds, const char *body, char *why,
          size_t size)
{
    sl_sigv4_header_t h [16];
    char copy [16][1024];
    size_t n = 0;
    h [n++] = (sl_sigv4_header_t) { "Host", "127.0.0.1:8123" };
    const char *line = lines->data;
    for (size_t i = 0; i < 3 + count && n < 16; i++) {
        const char *text = i < 3 ? s_lines [i] : line;
        snprintf (copy [n], sizeof copy [n], "%s", text);
        char *colon = strchr (copy [n], ':');
        cr_assert_not_null (colon);
        *colon = 0;
        h [n] = (sl_sigv4_header_t) { copy [n], colon + 2 };
        n++;
        if (i >= 3)
            line += strlen (line) + 1;
    }
    sl_sigv4_request_t req = { "POST", NULL, PATH, NULL, h, n, sl_str (body) };
    return sl_sigv4_verify (creds, "us-west-2", "bedrock", &req, time (NULL), 0, why, size);
}

typedef struct {
    int told;
    sl_auth_t *source;                  //  asked again inside the notify
    int state;
    char why [320];
} s_notified_t;

static void
s_notify (void *arg)
{
    s_notified_t *n = arg;
    n->told++;
    if (!n->source)
        return;
    sl_auth_request_t req = s_request ();
    sl_buf_t lines = { 0 }, why = { 0 };
    size_t count = 0;
    n->state = sl_auth_authorize (n->source, &req, &lines, &count, &why);
    snprintf (n->why, sizeof n->why, "%s", why.len ? sl_buf_cstr (&why) : "");
    sl_buf_free (&lines);
    sl_buf_free (&why);
}

Test (sl_awsauth, static_keys_sign_each_attempt)
{
    zloop_t *loop = zloop_new ();
    sl_curlm_t *curlm = sl_curlm_new (loop);
    sl_awscreds_config_t c = { .kind = SL_AWSCREDS_STATIC, .access_key_id = "AKIDSTATIC",
                               .secret_access_key = "static-secret" };
    sl_auth_t *source = sl_awsauth_new (loop, curlm, &c, "us-west-2", NULL, NULL, NULL);
    sl_auth_request_t req = s_request ();
    sl_buf_t lines = { 0 }, why = { 0 };
    size_t count = 0;
    cr_assert_eq (sl_auth_authorize (source, &req, &lines, &count, &why), SL_AUTH_READY);
    cr_expect_eq (count, 3, "X-Amz-Date, X-Amz-Content-Sha256, Authorization");
    cr_expect_eq (strncmp (lines.data, "X-Amz-Date: ", 12), 0);
    const char *auth = lines.data;
    for (size_t i = 0; i + 1 < count; i++)
        auth += strlen (auth) + 1;
    cr_expect_eq (strncmp (auth, "Authorization: AWS4-HMAC-SHA256 Credential=AKIDSTATIC/", 54), 0, "%s", auth);
    cr_expect (strstr (auth, "/us-west-2/bedrock/aws4_request"), "%s", auth);
    cr_expect (strstr (auth, "traceparent"), "every header sent is signed: %s", auth);
    char text [200];
    sl_sigv4_creds_t good = { "AKIDSTATIC", "static-secret", NULL };
    cr_expect_eq (s_verify (&lines, count, &good, "{\"messages\":[]}", text, sizeof text), 0, "%s", text);
    sl_sigv4_creds_t wrong = { "AKIDSTATIC", "another-secret", NULL };
    cr_expect_eq (s_verify (&lines, count, &wrong, "{\"messages\":[]}", text, sizeof text), -1);
    cr_expect_eq (s_verify (&lines, count, &good, "{\"messages\":[1]}", text, sizeof text), -1,
                  "the body is signed");
    sl_buf_free (&lines);
    sl_buf_free (&why);
    sl_auth_destroy (&source);

    //  A Bedrock API key: one bearer line.
    sl_awscreds_config_t b = { .kind = SL_AWSCREDS_BEARER, .bearer_token = "bedrock-api-key" };
    source = sl_awsauth_new (loop, curlm, &b, "us-west-2", NULL, NULL, NULL);
    count = 0;
    cr_assert_eq (sl_auth_authorize (source, &req, &lines, &count, &why), SL_AUTH_READY);
    cr_expect_eq (count, 1);
    cr_expect_str_eq (lines.data, "Authorization: Bearer bedrock-api-key");
    sl_buf_free (&lines);
    sl_auth_destroy (&source);
    sl_curlm_destroy (&curlm);
    zloop_destroy (&loop);
}

static void
s_sts_answer (token_server_t *sts, const char *key, time_t expires)
{
    struct tm tm;
    gmtime_r (&expires, &tm);
    char when [32];
    strftime (when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf (sts->answer, sizeof sts->answer,
              "<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials>"
              "<SessionToken>token-of-%s</SessionToken><SecretAccessKey>secret-of-%s</SecretAccessKey>"
              "<Expiration>%s</Expiration><AccessKeyId>%s</AccessKeyId>"
              "</Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>",
              key, key, when, key);
}

typedef struct {
    zloop_t *loop;
    sl_curlm_t *curlm;
    token_server_t sts;
    char dir [64];
    char token_file [128];
    char url [64];
    sl_awscreds_config_t config;
} s_fixture_t;

static void
s_fixture (s_fixture_t *f)
{
    f->loop = zloop_new ();
    f->curlm = sl_curlm_new (f->loop);
    token_server_start (&f->sts, f->loop);
    snprintf (f->dir, sizeof f->dir, "/tmp/sl-awsauth-XXXXXX");
    cr_assert_not_null (mkdtemp (f->dir));
    snprintf (f->token_file, sizeof f->token_file, "%s/token", f->dir);
    FILE *t = fopen (f->token_file, "w");
    fputs ("pod-token\n", t);
    fclose (t);
    snprintf (f->url, sizeof f->url, "http://127.0.0.1:%d", f->sts.port);
    f->config = (sl_awscreds_config_t) { .kind = SL_AWSCREDS_WEB_IDENTITY, .role_arn = ROLE,
                                         .token_file = f->token_file, .sts_url = f->url };
}

static void
s_fixture_end (s_fixture_t *f)
{
    unlink (f->token_file);
    rmdir (f->dir);
    token_server_stop (&f->sts);
    sl_curlm_destroy (&f->curlm);
    zloop_destroy (&f->loop);
}

Test (sl_awsauth, web_identity_pending_until_sts_answers)
{
    s_fixture_t f;
    s_fixture (&f);
    s_sts_answer (&f.sts, "ASIAFIRST", time (NULL) + 3600);
    s_notified_t n = { 0 };
    sl_auth_t *source = sl_awsauth_new (f.loop, f.curlm, &f.config, "us-west-2", NULL, s_notify, &n);
    sl_auth_request_t req = s_request ();
    sl_buf_t lines = { 0 }, why = { 0 };
    size_t count = 0;
    cr_expect_eq (sl_auth_authorize (source, &req, &lines, &count, &why), SL_AUTH_PENDING);
    cr_expect_eq (sl_auth_authorize (source, &req, &lines, &count, &why), SL_AUTH_PENDING, "still, one wait");
    token_server_run (f.loop, &n.told, 1, RUN_BOUND_MS);
    cr_assert_eq (n.told, 1, "notified once");
    cr_expect_eq (f.sts.requests, 1);
    cr_assert_eq (sl_auth_authorize (source, &req, &lines, &count, &why), SL_AUTH_READY);
    cr_expect_eq (count, 4, "with X-Amz-Security-Token");
    char text [200];
    sl_sigv4_creds_t sts = { "ASIAFIRST", "secret-of-ASIAFIRST", "token-of-ASIAFIRST" };
    cr_expect_eq (s_verify (&lines, count, &sts, "{\"messages\":[]}", text, sizeof text), 0, "%s", text);
    sl_buf_free (&lines);
    sl_buf_free (&why);
    sl_auth_destroy (&source);
    s_fixture_end (&f);
}

Test (sl_awsauth, a_refusal_is_told_to_the_waiting_attempt)
{
    s_fixture_t f;
    s_fixture (&f);
    f.sts.status = 403;
    snprintf (f.sts.answer, sizeof f.sts.answer,
              "<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>"
              "<Message>Not authorized to perform sts:AssumeRoleWithWebIdentity</Message></Error></ErrorResponse>");
    s_notified_t n = { 0 };
    sl_auth_t *source = sl_awsauth_new (f.loop, f.curlm, &f.config, "us-west-2", NULL, s_notify, &n);
    n.source = source;
    sl_auth_request_t req = s_request ();
    sl_buf_t lines = { 0 }, why = { 0 };
    size_t count = 0;
    cr_expect_eq (sl_auth_authorize (source, &req, &lines, &count, &why), SL_AUTH_PENDING);
    token_server_run (f.loop, &n.told, 1, RUN_BOUND_MS);
    cr_assert_eq (n.told, 1);
    cr_expect_eq (n.state, SL_AUTH_FAILED, "asked again when told: the failure");
    cr_expect_str_eq (n.why, "STS refused (HTTP 403): AccessDenied: Not authorized to perform "
                              "sts:AssumeRoleWithWebIdentity");
    //  A later attempt starts a new fetch rather than failing from memory.
    int before = f.sts.requests;
    n.source = NULL;
    cr_expect_eq (sl_auth_authorize (source, &req, &lines, &count, &why), SL_AUTH_PENDING);
    token_server_run (f.loop, &f.sts.requests, before + 1, RUN_BOUND_MS);
    cr_expect_eq (f.sts.requests, before + 1);
    sl_buf_free (&lines);
    sl_buf_free (&why);
    sl_auth_destroy (&source);
    s_fixture_end (&f);
}
