/*  Unit tests: services/mock/sl_mock_aws - the mock's Bedrock checks a
    SigV4 signature as AWS does: a request signed with its keys passes
    (a model id's ':' sent as %3A, signed as %253A); no signature, another
    key id, a wrong secret, a changed body, a missing session token and a
    stale date are each refused with AWS's type. */
#include <criterion/criterion.h>
#include <string.h>

#include "services/mock/sl_mock_aws.h"

#define PATH "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
#define HOST "127.0.0.1:9090"

typedef struct {
    sl_sigv4_header_t h [8];
    size_t n;
    sl_sigv4_signed_t sig;
} s_sent_t;

//  A request signed with creds at when, as it arrives (Host among its headers).
static void
s_send (s_sent_t *s, const sl_sigv4_creds_t *creds, const char *region, time_t when, const char *body)
{
    sl_sigv4_header_t ct = { "Content-Type", "application/json" };
    sl_sigv4_request_t req = { "POST", HOST, PATH, NULL, &ct, 1, sl_str (body) };
    sl_sigv4_params_t params = { region, "bedrock", when, true };
    cr_assert_eq (sl_sigv4_sign (creds, &params, &req, &s->sig, NULL), 0);
    s->n = 0;
    s->h [s->n++] = (sl_sigv4_header_t) { "Host", HOST };
    s->h [s->n++] = ct;
    s->h [s->n++] = (sl_sigv4_header_t) { "X-Amz-Date", s->sig.amz_date };
    s->h [s->n++] = (sl_sigv4_header_t) { "X-Amz-Content-Sha256", s->sig.content_sha256 };
    if (s->sig.security_token)
        s->h [s->n++] = (sl_sigv4_header_t) { "X-Amz-Security-Token", s->sig.security_token };
    s->h [s->n++] = (sl_sigv4_header_t) { "Authorization", s->sig.authorization };
}

static int
s_check (const sl_sigv4_creds_t *mock, s_sent_t *s, const char *body, time_t now, sl_mock_aws_refusal_t *r)
{
    sl_sigv4_request_t req = { "POST", NULL, PATH, NULL, s->h, s->n, sl_str (body) };
    return sl_mock_aws_check (mock, &req, now, r);
}

static const sl_sigv4_creds_t s_mock = { "AKIDMOCK", "mock-secret", NULL };

Test (sl_mock_aws, a_good_signature_passes)
{
    s_sent_t s;
    sl_mock_aws_refusal_t r;
    time_t now = time (NULL);
    s_send (&s, &s_mock, "us-west-2", now, "{}");
    cr_expect_eq (s_check (&s_mock, &s, "{}", now, &r), 0, "%s", r.why);
    sl_sigv4_signed_clear (&s.sig);
    //  Temporary keys: the token sent and signed.
    sl_sigv4_creds_t temp = { "ASIATEMP", "temp-secret", "temp-token" };
    s_send (&s, &temp, "eu-central-1", now, "{}");
    cr_expect_eq (s_check (&temp, &s, "{}", now, &r), 0, "%s", r.why);
    sl_sigv4_signed_clear (&s.sig);
}

Test (sl_mock_aws, each_fault_refused_as_aws_does)
{
    s_sent_t s;
    sl_mock_aws_refusal_t r;
    time_t now = time (NULL);
    s_send (&s, &s_mock, "us-west-2", now, "{}");
    s.n--;                              //  no Authorization
    cr_expect_eq (s_check (&s_mock, &s, "{}", now, &r), -1);
    cr_expect_str_eq (r.type, "MissingAuthenticationTokenException");
    sl_sigv4_signed_clear (&s.sig);

    sl_sigv4_creds_t other = { "AKIDOTHER", "mock-secret", NULL };
    s_send (&s, &other, "us-west-2", now, "{}");
    cr_expect_eq (s_check (&s_mock, &s, "{}", now, &r), -1);
    cr_expect_str_eq (r.type, "UnrecognizedClientException");
    sl_sigv4_signed_clear (&s.sig);

    sl_sigv4_creds_t wrong = { "AKIDMOCK", "wrong-secret", NULL };
    s_send (&s, &wrong, "us-west-2", now, "{}");
    cr_expect_eq (s_check (&s_mock, &s, "{}", now, &r), -1);
    cr_expect_str_eq (r.type, "InvalidSignatureException");
    cr_expect (strstr (r.message, "does not match"), "%s", r.message);
    cr_expect_null (strstr (r.why, "secret"), "never a secret: %s", r.why);
    sl_sigv4_signed_clear (&s.sig);

    s_send (&s, &s_mock, "us-west-2", now, "{}");
    cr_expect_eq (s_check (&s_mock, &s, "{\"x\":1}", now, &r), -1, "the body changed");
    cr_expect_str_eq (r.type, "InvalidSignatureException");
    cr_expect_eq (s_check (&s_mock, &s, "{}", now + 3600, &r), -1, "an hour late");
    cr_expect_str_eq (r.type, "InvalidSignatureException");
    sl_sigv4_signed_clear (&s.sig);

    sl_sigv4_creds_t temp = { "AKIDMOCK", "mock-secret", "temp-token" };
    s_send (&s, &s_mock, "us-west-2", now, "{}");
    cr_expect_eq (s_check (&temp, &s, "{}", now, &r), -1, "a session token expected, none sent");
    sl_sigv4_signed_clear (&s.sig);
}
