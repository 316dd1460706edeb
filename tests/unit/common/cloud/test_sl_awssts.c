/*  Unit tests: common/cloud/sl_awssts - AssumeRoleWithWebIdentity: the
    form sent (every value encoded), the answer read (as AWS documents
    it, entities decoded), STS's refusals reported with their code and
    message, and answers that lack a field or a valid Expiration refused. */
#include <criterion/criterion.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/cloud/sl_awssts.h"

//  The answer of AWS's API reference for AssumeRoleWithWebIdentity, its
//  values ours.
static const char *s_answer =
    "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"
    "  <AssumeRoleWithWebIdentityResult>\n"
    "    <SubjectFromWebIdentityToken>system:serviceaccount:ai:sluice</SubjectFromWebIdentityToken>\n"
    "    <Audience>sts.amazonaws.com</Audience>\n"
    "    <AssumedRoleUser>\n"
    "      <Arn>arn:aws:sts::123456789012:assumed-role/bedrock/sluice</Arn>\n"
    "      <AssumedRoleId>AROACLKWSDQRAOEXAMPLE:sluice</AssumedRoleId>\n"
    "    </AssumedRoleUser>\n"
    "    <Credentials>\n"
    "      <SessionToken>FwoGZXIvYXdzE&amp;a+b/c==</SessionToken>\n"
    "      <SecretAccessKey>wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY</SecretAccessKey>\n"
    "      <Expiration>2025-10-24T23:00:23Z</Expiration>\n"
    "      <AccessKeyId>ASgeIAIOSFODNN7EXAMPLE</AccessKeyId>\n"
    "    </Credentials>\n"
    "    <SourceIdentity>sluice</SourceIdentity>\n"
    "    <Provider>oidc.eks.eu-west-3.amazonaws.com</Provider>\n"
    "  </AssumeRoleWithWebIdentityResult>\n"
    "  <ResponseMetadata><RequestId>ad4156e9-bce1-11e2-82e6-6b6efEXAMPLE</RequestId></ResponseMetadata>\n"
    "</AssumeRoleWithWebIdentityResponse>\n";

Test (sl_awssts, the_request_form)
{
    sl_buf_t out = { 0 };
    sl_awssts_request (&out, "arn:aws:iam::123456789012:role/bedrock", NULL, SL_STR_LIT ("eyJ.a+b/c="));
    cr_expect_str_eq (sl_buf_cstr (&out),
                      "Action=AssumeRoleWithWebIdentity&Version=2011-06-15"
                      "&RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fbedrock"
                      "&RoleSessionName=sluice&WebIdentityToken=eyJ.a%2Bb%2Fc%3D");
    sl_buf_reset (&out);
    sl_awssts_request (&out, "r", "my session", SL_STR_LIT ("t"));
    cr_expect (strstr (sl_buf_cstr (&out), "&RoleSessionName=my%20session&"));
    sl_buf_free (&out);
}

Test (sl_awssts, the_answer_read)
{
    sl_awssts_creds_t c;
    char why [200] = "";
    cr_assert_eq (sl_awssts_parse (200, sl_str (s_answer), &c, why, sizeof why), 0, "%s", why);
    cr_expect_str_eq (c.access_key_id, "ASgeIAIOSFODNN7EXAMPLE");
    cr_expect_str_eq (c.secret_access_key, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
    cr_expect_str_eq (c.session_token, "FwoGZXIvYXdzE&a+b/c==");
    cr_expect_eq (c.expires_ms, 1761346823000LL);
    sl_awssts_creds_clear (&c);
    cr_expect_null (c.access_key_id);
}

Test (sl_awssts, refusals_reported_with_their_reason)
{
    static const char *refusal =
        "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"
        "  <Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>\n"
        "    <Message>Token expired: current date/time 1 must be before the expiration date/time 0</Message>\n"
        "  </Error><RequestId>x</RequestId></ErrorResponse>";
    sl_awssts_creds_t c;
    char why [200];
    cr_expect_eq (sl_awssts_parse (400, sl_str (refusal), &c, why, sizeof why), -1);
    cr_expect_str_eq (why, "STS refused (HTTP 400): InvalidIdentityToken: Token expired: "
                           "current date/time 1 must be before the expiration date/time 0");
    cr_expect_eq (sl_awssts_parse (503, SL_STR_LIT ("Service Unavailable"), &c, why, sizeof why), -1);
    cr_expect_str_eq (why, "STS answered HTTP 503");
    cr_expect_eq (sl_awssts_parse (200, SL_STR_NULL, &c, why, sizeof why), -1);
    cr_expect_str_eq (why, "STS's answer holds no credentials");
}

//  The answer with one piece replaced.
static int
s_parse_with (const char *from, const char *to, char *why, size_t size)
{
    const char *at = strstr (s_answer, from);
    cr_assert_not_null (at);
    sl_buf_t xml = { 0 };
    sl_buf_append (&xml, s_answer, (size_t) (at - s_answer));
    sl_buf_puts (&xml, to);
    sl_buf_puts (&xml, at + strlen (from));
    sl_awssts_creds_t c;
    int rc = sl_awssts_parse (200, sl_buf_str (&xml), &c, why, size);
    sl_awssts_creds_clear (&c);
    sl_buf_free (&xml);
    return rc;
}

Test (sl_awssts, incomplete_answers_refused)
{
    char why [200];
    cr_expect_eq (s_parse_with ("<SessionToken>", "<Token>", why, sizeof why), -1);
    cr_expect_str_eq (why, "STS's credentials lack a key, a secret or a session token");
    cr_expect_eq (s_parse_with ("2025-10-24T23:00:23Z", "tomorrow", why, sizeof why), -1);
    cr_expect_str_eq (why, "STS's credentials have no valid Expiration");
    cr_expect_eq (s_parse_with ("&amp;", "&bogus;", why, sizeof why), -1, "an entity we do not read");
    cr_expect_eq (s_parse_with ("ASgeIAIOSFODNN7EXAMPLE", "<b>x</b>", why, sizeof why), -1, "markup in a value");
}

Test (sl_awssts, times)
{
    cr_expect_eq (sl_awssts_time (SL_STR_LIT ("1970-01-01T00:00:01Z")), 1000);
    cr_expect_eq (sl_awssts_time (SL_STR_LIT ("2025-10-24T23:00:23.5Z")), 1761346823500LL);
    cr_expect_eq (sl_awssts_time (SL_STR_LIT ("2025-10-24T23:00:23.123456Z")), 1761346823123LL);
    cr_expect_eq (sl_awssts_time (SL_STR_LIT ("2025-10-24T23:00:23+00:00")), 1761346823000LL);
    cr_expect_eq (sl_awssts_time (SL_STR_LIT ("2025-10-24T23:00:23")), -1, "no zone");
    cr_expect_eq (sl_awssts_time (SL_STR_LIT ("2025-10-24T23:00:23+02:00")), -1, "not UTC");
    cr_expect_eq (sl_awssts_time (SL_STR_LIT ("2025-10-24T23:00:23.Z")), -1);
    cr_expect_eq (sl_awssts_time (SL_STR_NULL), -1);
}
