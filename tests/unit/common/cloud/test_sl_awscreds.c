/*  Unit tests: common/cloud/sl_awscreds - AWS credentials from the
    environment (a Bedrock API key first, static keys, web identity; a
    variable without its fellow named), a request authorized with each
    (the SigV4 headers checked by sl_sigv4_verify), and web identity
    against a real STS stand-in on a loopback port: the form it gets, the
    keys it gives, a request that waits for them, a refresh ahead of
    expiry while the old keys serve, and refusals told with STS's reason. */
#include <criterion/criterion.h>
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cloud/sl_awscreds.h"
#include "tests/unit/token_server.h"

#define RUN_BOUND_MS 5000
#define ROLE "arn:aws:iam::123456789012:role/bedrock"

static void
s_clear_env (void)
{
    const char *vars [] = { "AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                            "AWS_SESSION_TOKEN", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
                            "AWS_ROLE_SESSION_NAME", "AWS_ENDPOINT_URL_STS", NULL };
    for (const char **v = vars; *v; v++)
        unsetenv (*v);
}

Test (sl_awscreds, the_environment_read_in_order)
{
    s_clear_env ();
    sl_awscreds_config_t c;
    char why [300];
    cr_expect_eq (sl_awscreds_config_from_env (&c, "us-east-1", why, sizeof why), -1);
    cr_expect (strstr (why, "no AWS credentials"));
    setenv ("AWS_ROLE_ARN", ROLE, 1);
    cr_expect_eq (sl_awscreds_config_from_env (&c, "us-east-1", why, sizeof why), -1);
    cr_expect_str_eq (why, "AWS_ROLE_ARN is set without AWS_WEB_IDENTITY_TOKEN_FILE");
    setenv ("AWS_WEB_IDENTITY_TOKEN_FILE", "/var/run/token", 1);
    cr_assert_eq (sl_awscreds_config_from_env (&c, "eu-west-3", why, sizeof why), 0);
    cr_expect_eq (c.kind, SL_AWSCREDS_WEB_IDENTITY);
    cr_expect_str_eq (c.sts_url, "https://sts.eu-west-3.amazonaws.com");
    cr_expect_null (c.session_name);
    sl_awscreds_config_clear (&c);
    setenv ("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1", 1);
    setenv ("AWS_ROLE_SESSION_NAME", "pod-1", 1);
    cr_assert_eq (sl_awscreds_config_from_env (&c, "eu-west-3", why, sizeof why), 0);
    cr_expect_str_eq (c.sts_url, "http://127.0.0.1:1");
    cr_expect_str_eq (c.session_name, "pod-1");
    sl_awscreds_config_clear (&c);
    setenv ("AWS_SECRET_ACCESS_KEY", "s", 1);
    cr_expect_eq (sl_awscreds_config_from_env (&c, "us-east-1", why, sizeof why), -1);
    cr_expect_str_eq (why, "AWS_SECRET_ACCESS_KEY is set without AWS_ACCESS_KEY_ID");
    setenv ("AWS_ACCESS_KEY_ID", "AKID", 1);
    cr_assert_eq (sl_awscreds_config_from_env (&c, "us-east-1", why, sizeof why), 0);
    cr_expect_eq (c.kind, SL_AWSCREDS_STATIC, "static keys before web identity");
    cr_expect_null (c.session_token);
    sl_awscreds_config_clear (&c);
    setenv ("AWS_BEARER_TOKEN_BEDROCK", "bedrock-api-key", 1);
    cr_assert_eq (sl_awscreds_config_from_env (&c, "us-east-1", why, sizeof why), 0);
    cr_expect_eq (c.kind, SL_AWSCREDS_BEARER, "the Bedrock API key first");
    cr_expect_str_eq (c.bearer_token, "bedrock-api-key");
    sl_awscreds_config_clear (&c);
    cr_expect_null (c.bearer_token);
}

//  Authorize a Bedrock request with the source's credentials now.
static struct curl_slist *
s_authorize (sl_awscreds_t *creds, sl_awscreds_use_t *use)
{
    uint64_t id;
    cr_assert_eq (sl_awscreds_get (creds, use, NULL, NULL, &id), 0);
    sl_sigv4_params_t params = { "us-east-1", "bedrock", time (NULL), false };
    sl_sigv4_header_t ct [] = { { "Content-Type", "application/json" } };
    sl_sigv4_request_t req = { "POST", "bedrock-runtime.us-east-1.amazonaws.com",
                               "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream", NULL, ct, 1,
                               SL_STR_LIT ("{}") };
    struct curl_slist *headers = NULL;
    cr_assert_eq (sl_awscreds_authorize (use, &params, &req, &headers), 0);
    return headers;
}

//  The header lines as a request arriving at the checker.
static int
s_verify (struct curl_slist *lines, const sl_sigv4_creds_t *creds, char *why, size_t size)
{
    sl_sigv4_header_t h [16];
    char copy [16][2048];
    size_t n = 0;
    h [n++] = (sl_sigv4_header_t) { "Host", "bedrock-runtime.us-east-1.amazonaws.com" };
    h [n++] = (sl_sigv4_header_t) { "Content-Type", "application/json" };
    for (struct curl_slist *l = lines; l && n < 16; l = l->next) {
        snprintf (copy [n], sizeof copy [n], "%s", l->data);
        char *colon = strchr (copy [n], ':');
        cr_assert_not_null (colon);
        *colon = 0;
        h [n] = (sl_sigv4_header_t) { copy [n], colon + 2 };
        n++;
    }
    sl_sigv4_request_t req = { "POST", NULL, "/model/anthropic.claude-3-haiku-20240307-v1%3A0/converse-stream",
                               NULL, h, n, SL_STR_LIT ("{}") };
    return sl_sigv4_verify (creds, "us-east-1", "bedrock", &req, time (NULL), 0, why, size);
}

Test (sl_awscreds, a_providers_own_variables_whatever_the_environment_holds)
{
    s_clear_env ();
    setenv ("AWS_ACCESS_KEY_ID", "AKIADEFAULT", 1);
    setenv ("AWS_SECRET_ACCESS_KEY", "default-secret", 1);
    setenv ("AWS_SESSION_TOKEN", "default-session", 1);
    setenv ("ACCOUNT_B_KEY_ID", "AKIAACCOUNTB", 1);
    setenv ("ACCOUNT_B_SECRET", "account-b-secret", 1);
    unsetenv ("ACCOUNT_B_SESSION");
    sl_awscreds_config_t c;
    char why [300];
    cr_assert_eq (sl_awscreds_config_from_vars (&c, "ACCOUNT_B_KEY_ID", "ACCOUNT_B_SECRET", NULL, why, sizeof why), 0,
                  "%s", why);
    cr_expect_eq (c.kind, SL_AWSCREDS_STATIC);
    cr_expect_str_eq (c.access_key_id, "AKIAACCOUNTB");
    cr_expect_str_eq (c.secret_access_key, "account-b-secret");
    cr_expect_null (c.session_token, "the environment's session token is not the provider's");
    sl_awscreds_config_clear (&c);
    //  A named variable that holds nothing is an error naming it.
    cr_expect_eq (sl_awscreds_config_from_vars (&c, "ACCOUNT_B_KEY_ID", "ACCOUNT_B_SECRET", "ACCOUNT_B_SESSION", why,
                                                sizeof why), -1);
    cr_expect_str_eq (why, "the variable ACCOUNT_B_SESSION (aws_session_token_env) is unset or empty");
    setenv ("ACCOUNT_B_SESSION", "account-b-session", 1);
    cr_assert_eq (sl_awscreds_config_from_vars (&c, "ACCOUNT_B_KEY_ID", "ACCOUNT_B_SECRET", "ACCOUNT_B_SESSION", why,
                                                sizeof why), 0, "%s", why);
    cr_expect_str_eq (c.session_token, "account-b-session");
    sl_awscreds_config_clear (&c);
    unsetenv ("ACCOUNT_B_SECRET");
    cr_expect_eq (sl_awscreds_config_from_vars (&c, "ACCOUNT_B_KEY_ID", "ACCOUNT_B_SECRET", NULL, why, sizeof why), -1);
    cr_expect_str_eq (why, "the variable ACCOUNT_B_SECRET (aws_secret_access_key_env) is unset or empty");
    cr_expect_null (c.access_key_id);
    cr_expect_eq (sl_awscreds_config_from_vars (&c, NULL, "ACCOUNT_B_SECRET", NULL, why, sizeof why), -1);
    cr_expect_str_eq (why, "the variable (none) (aws_access_key_id_env) is unset or empty");
    unsetenv ("ACCOUNT_B_KEY_ID");
    unsetenv ("ACCOUNT_B_SESSION");
    s_clear_env ();
}

Test (sl_awscreds, static_keys_sign_and_a_bedrock_key_is_a_bearer)
{
    zloop_t *loop = zloop_new ();
    sl_curlm_t *curlm = sl_curlm_new (loop);
    sl_awscreds_config_t c = { .kind = SL_AWSCREDS_STATIC, .access_key_id = "AKIDSTATIC",
                               .secret_access_key = "static-secret", .session_token = "static-token" };
    sl_awscreds_t *creds = sl_awscreds_new (loop, curlm, &c, NULL);
    sl_awscreds_use_t use;
    struct curl_slist *headers = s_authorize (creds, &use);
    cr_expect_null (use.bearer);
    cr_expect_str_eq (use.keys.access_key_id, "AKIDSTATIC");
    cr_expect_eq (strncmp (headers->data, "X-Amz-Date: ", 12), 0);
    cr_expect_str_eq (headers->next->data, "X-Amz-Security-Token: static-token");
    cr_expect_eq (strncmp (headers->next->next->data, "Authorization: AWS4-HMAC-SHA256 Credential=AKIDSTATIC/", 54), 0);
    char why [200];
    sl_sigv4_creds_t check = { "AKIDSTATIC", "static-secret", "static-token" };
    cr_expect_eq (s_verify (headers, &check, why, sizeof why), 0, "%s", why);
    curl_slist_free_all (headers);
    sl_awscreds_destroy (&creds);

    sl_awscreds_config_t b = { .kind = SL_AWSCREDS_BEARER, .bearer_token = "bedrock-api-key" };
    creds = sl_awscreds_new (loop, curlm, &b, NULL);
    headers = s_authorize (creds, &use);
    cr_expect_str_eq (headers->data, "Authorization: Bearer bedrock-api-key");
    cr_expect_null (headers->next);
    curl_slist_free_all (headers);
    sl_awscreds_destroy (&creds);
    sl_awscreds_destroy (&creds);
    sl_curlm_destroy (&curlm);
    zloop_destroy (&loop);
}

//  STS's answer: these keys, expiring at expires (seconds since the epoch).
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
    int told;
    char error [300];
} s_wait_t;

static void
s_told (void *arg, const char *error)
{
    s_wait_t *w = arg;
    w->told++;
    snprintf (w->error, sizeof w->error, "%s", error ? error : "");
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
s_fixture (s_fixture_t *f, const char *token)
{
    f->loop = zloop_new ();
    f->curlm = sl_curlm_new (f->loop);
    token_server_start (&f->sts, f->loop);
    snprintf (f->dir, sizeof f->dir, "/tmp/sl-awscreds-XXXXXX");
    cr_assert_not_null (mkdtemp (f->dir));
    snprintf (f->token_file, sizeof f->token_file, "%s/token", f->dir);
    if (token) {
        FILE *t = fopen (f->token_file, "w");
        fprintf (t, "%s\n", token);
        fclose (t);
    }
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

Test (sl_awscreds, web_identity_through_sts)
{
    s_fixture_t f;
    s_fixture (&f, "eyJhbGciOiJSUzI1NiJ9.pod-token.sig");
    s_sts_answer (&f.sts, "ASIAFIRST", time (NULL) + 3600);
    sl_awscreds_t *creds = sl_awscreds_new (f.loop, f.curlm, &f.config, NULL);
    //  A request before the keys arrived waits for them.
    sl_awscreds_use_t use;
    s_wait_t w = { 0 };
    uint64_t id;
    cr_expect_eq (sl_awscreds_get (creds, &use, s_told, &w, &id), 1);
    token_server_run (f.loop, &w.told, 1, RUN_BOUND_MS);
    cr_assert_eq (w.told, 1);
    cr_expect_str_eq (w.error, "");
    cr_expect_eq (f.sts.requests, 1, "one exchange, begun at start");
    cr_expect_str_eq (f.sts.method, "POST");
    cr_expect_str_eq (f.sts.content_type, "application/x-www-form-urlencoded; charset=utf-8");
    cr_expect_str_eq (f.sts.body, "Action=AssumeRoleWithWebIdentity&Version=2011-06-15"
                                  "&RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fbedrock"
                                  "&RoleSessionName=sluice&WebIdentityToken=eyJhbGciOiJSUzI1NiJ9.pod-token.sig");
    cr_assert_eq (sl_awscreds_get (creds, &use, s_told, &w, &id), 0);
    cr_expect_str_eq (use.keys.access_key_id, "ASIAFIRST");
    cr_expect_str_eq (use.keys.secret_access_key, "secret-of-ASIAFIRST");
    cr_expect_str_eq (use.keys.session_token, "token-of-ASIAFIRST");
    struct curl_slist *headers = s_authorize (creds, &use);
    char why [200];
    sl_sigv4_creds_t check = { "ASIAFIRST", "secret-of-ASIAFIRST", "token-of-ASIAFIRST" };
    cr_expect_eq (s_verify (headers, &check, why, sizeof why), 0, "%s", why);
    curl_slist_free_all (headers);
    sl_awscreds_destroy (&creds);
    s_fixture_end (&f);
}

Test (sl_awscreds, refreshed_before_expiry_while_the_old_keys_serve)
{
    s_fixture_t f;
    s_fixture (&f, "pod-token");
    //  Keys expiring in 12 s with a 10 s margin: fetched again in ~2 s.
    s_sts_answer (&f.sts, "ASIAFIRST", time (NULL) + 12);
    sl_refresher_timing_t timing = { .margin_ms = 10000, .grace_ms = 1000 };
    sl_awscreds_t *creds = sl_awscreds_new (f.loop, f.curlm, &f.config, &timing);
    sl_awscreds_use_t use;
    uint64_t id;
    s_wait_t w = { 0 };
    if (sl_awscreds_get (creds, &use, s_told, &w, &id) == 1)
        token_server_run (f.loop, &w.told, 1, RUN_BOUND_MS);
    cr_assert_eq (sl_awscreds_get (creds, &use, s_told, NULL, &id), 0, "%s", w.error);
    cr_expect_eq (f.sts.requests, 1);
    cr_expect_str_eq (use.keys.access_key_id, "ASIAFIRST");
    s_sts_answer (&f.sts, "ASIASECOND", time (NULL) + 3600);
    token_server_run (f.loop, &f.sts.requests, 2, RUN_BOUND_MS);
    cr_assert_eq (f.sts.requests, 2, "fetched again ahead of expiry");
    cr_expect_eq (sl_awscreds_get (creds, &use, s_told, NULL, &id), 0, "no request waits for a refresh");
    //  The new keys replace the old when STS's answer is read.
    for (int i = 0; i < 100 && strcmp (use.keys.access_key_id, "ASIASECOND") != 0; i++) {
        token_server_run (f.loop, &f.sts.requests, 3, 20);
        cr_assert_eq (sl_awscreds_get (creds, &use, s_told, NULL, &id), 0);
    }
    cr_expect_str_eq (use.keys.access_key_id, "ASIASECOND");
    cr_expect_eq (sl_refresher_fetches (sl_awscreds_refresher (creds)), 2);
    sl_awscreds_destroy (&creds);
    s_fixture_end (&f);
}

Test (sl_awscreds, refusals_told_to_the_waiting_request)
{
    s_fixture_t f;
    s_fixture (&f, "expired-token");
    f.sts.status = 400;
    snprintf (f.sts.answer, sizeof f.sts.answer,
              "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"
              "<Message>Token expired</Message></Error></ErrorResponse>");
    sl_awscreds_t *creds = sl_awscreds_new (f.loop, f.curlm, &f.config, NULL);
    sl_awscreds_use_t use;
    s_wait_t w = { 0 };
    uint64_t id;
    cr_expect_eq (sl_awscreds_get (creds, &use, s_told, &w, &id), 1);
    token_server_run (f.loop, &w.told, 1, RUN_BOUND_MS);
    cr_expect_str_eq (w.error, "STS refused (HTTP 400): InvalidIdentityToken: Token expired");
    cr_expect_null (strstr (w.error, "expired-token"), "never the token");
    sl_awscreds_destroy (&creds);

    //  No token file: the file is named.
    unlink (f.token_file);
    creds = sl_awscreds_new (f.loop, f.curlm, &f.config, NULL);
    s_wait_t w2 = { 0 };
    cr_expect_eq (sl_awscreds_get (creds, &use, s_told, &w2, &id), 1);
    token_server_run (f.loop, &w2.told, 1, RUN_BOUND_MS);
    char want [300];
    snprintf (want, sizeof want, "the web identity token file %s cannot be read: No such file or directory",
              f.token_file);
    cr_expect_str_eq (w2.error, want);
    sl_awscreds_destroy (&creds);

    //  STS not listening.
    f.config.sts_url = "http://127.0.0.1:1";
    FILE *t = fopen (f.token_file, "w");
    fputs ("tok", t);
    fclose (t);
    creds = sl_awscreds_new (f.loop, f.curlm, &f.config, NULL);
    s_wait_t w3 = { 0 };
    cr_expect_eq (sl_awscreds_get (creds, &use, s_told, &w3, &id), 1);
    token_server_run (f.loop, &w3.told, 1, RUN_BOUND_MS);
    cr_expect (strstr (w3.error, "STS (http://127.0.0.1:1) could not be asked: "), "%s", w3.error);
    sl_awscreds_destroy (&creds);
    s_fixture_end (&f);
}
