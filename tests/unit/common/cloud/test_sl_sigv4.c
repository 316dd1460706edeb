/*  Unit tests: common/cloud/sl_sigv4 - AWS Signature Version 4: the
    vectors of AWS's published SigV4 test suite that apply to a service
    other than S3 (awslabs/aws-c-auth, tests/aws-signing-test-suite/v4:
    every "normalize": true case but the multi-line header value, which
    HTTP/1.1 no longer allows), their canonical requests and signatures;
    Bedrock's path encoded twice; and the checker, which takes what the
    signer made and refuses every alteration. The AWS SDK's own signer is
    compared in tests/integration/test_cloud.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/cloud/sl_sigv4.h"

#define SUITE_KEY "AKIDEXAMPLE"
#define SUITE_SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define SUITE_TIME ((time_t) 1440938160)        //  2015-08-30T12:36:00Z
#define SUITE_HOST "example.amazonaws.com"

typedef struct {
    const char *name, *method, *path, *query, *body;
    bool sign_body;
    const char *token;
    sl_sigv4_header_t headers [4];
    const char *canonical, *signature;
} s_vector_t;

//  Transcribed from the suite: request.txt (Host apart), context.json,
//  header-canonical-request.txt, header-signature.txt.
static const s_vector_t s_vectors [] = {
    { "get-vanilla", "GET", "/", "", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
    { "get-vanilla-query", "GET", "/", "", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
    { "get-vanilla-empty-query-key", "GET", "/", "Param1=value1", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/\nParam1=value1\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb" },
    { "get-vanilla-query-order-key-case", "GET", "/", "Param2=value2&Param1=value1", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/\nParam1=value1&Param2=value2\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500" },
    { "get-vanilla-query-unreserved", "GET", "/", "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/\n-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197" },
    { "get-vanilla-utf8-query", "GET", "/", "\xe1""\x88""\xb4""=bar", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/\n%E1%88%B4=bar\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04" },
    { "get-vanilla-query-order-encoded", "GET", "/", "Param-3=Value3&Param=Value2&%E1%88%B4=Value1", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/\n%E1%88%B4=Value1&Param=Value2&Param-3=Value3\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "371d3713e185cc334048618a97f809c9ffe339c62934c032af5a0e595648fcac" },
    { "get-unreserved", "GET", "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", "", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f" },
    { "get-utf8", "GET", "/\xe1""\x88""\xb4""", "", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/%E1%88%B4\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85" },
    { "get-space-normalized", "GET", "/example space/", "", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/example%20space/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741" },
    { "get-slashes-normalized", "GET", "//example//", "", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/example/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe846570885f57e84" },
    { "get-slash-normalized", "GET", "//", "", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
    { "get-slash-dot-slash-normalized", "GET", "/./", "", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
    { "get-slash-pointless-dot-normalized", "GET", "/./example", "", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/example\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "ef75d96142cf21edca26f06005da7988e4f8dc83a165a80865db7089db637ec5" },
    { "get-relative-normalized", "GET", "/example/..", "", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
    { "get-relative-relative-normalized", "GET", "/example1/example2/../..", "", "", false, NULL,
      { { NULL, NULL } },
      "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31" },
    { "get-header-value-trim", "GET", "/", "", "", false, NULL,
      { { "My-Header1", " value1" }, { "My-Header2", " \"a   b   c\"" } },
      "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value1\nmy-header2:\"a b c\"\nx-amz-date:20150830T123600Z\n\nhost;my-header1;my-header2;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736" },
    { "get-header-key-duplicate", "GET", "/", "", "", false, NULL,
      { { "My-Header1", "value2" }, { "My-Header1", "value2" }, { "My-Header1", "value1" } },
      "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value2,value2,value1\nx-amz-date:20150830T123600Z\n\nhost;my-header1;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea" },
    { "get-header-value-order", "GET", "/", "", "", false, NULL,
      { { "My-Header1", "value4" }, { "My-Header1", "value1" }, { "My-Header1", "value3" }, { "My-Header1", "value2" } },
      "GET\n/\n\nhost:example.amazonaws.com\nmy-header1:value4,value1,value3,value2\nx-amz-date:20150830T123600Z\n\nhost;my-header1;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01" },
    { "post-header-key-case", "POST", "/", "", "", false, NULL,
      { { NULL, NULL } },
      "POST\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b" },
    { "post-header-key-sort", "POST", "/", "", "", false, NULL,
      { { "My-Header1", "value1" } },
      "POST\n/\n\nhost:example.amazonaws.com\nmy-header1:value1\nx-amz-date:20150830T123600Z\n\nhost;my-header1;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c" },
    { "post-header-value-case", "POST", "/", "", "", false, NULL,
      { { "My-Header1", "VALUE1" } },
      "POST\n/\n\nhost:example.amazonaws.com\nmy-header1:VALUE1\nx-amz-date:20150830T123600Z\n\nhost;my-header1;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d" },
    { "post-vanilla", "POST", "/", "", "", false, NULL,
      { { NULL, NULL } },
      "POST\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b" },
    { "post-vanilla-query", "POST", "/", "Param1=value1", "", false, NULL,
      { { NULL, NULL } },
      "POST\n/\nParam1=value1\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11" },
    { "post-vanilla-empty-query-value", "POST", "/", "Param1=value1", "", false, NULL,
      { { NULL, NULL } },
      "POST\n/\nParam1=value1\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11" },
    { "post-x-www-form-urlencoded", "POST", "/", "", "Param1=value1", true, NULL,
      { { "Content-Type", "application/x-www-form-urlencoded" }, { "Content-Length", "13" } },
      "POST\n/\n\ncontent-length:13\ncontent-type:application/x-www-form-urlencoded\nhost:example.amazonaws.com\nx-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e\nx-amz-date:20150830T123600Z\n\ncontent-length;content-type;host;x-amz-content-sha256;x-amz-date\n9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
      "d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b" },
    { "post-x-www-form-urlencoded-parameters", "POST", "/", "", "Param1=value1", true, NULL,
      { { "Content-Type", "application/x-www-form-urlencoded; charset=utf-8" }, { "Content-Length", "13" } },
      "POST\n/\n\ncontent-length:13\ncontent-type:application/x-www-form-urlencoded; charset=utf-8\nhost:example.amazonaws.com\nx-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e\nx-amz-date:20150830T123600Z\n\ncontent-length;content-type;host;x-amz-content-sha256;x-amz-date\n9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e",
      "328d1b9eaadca9f5818ef05e8392801e091653bafec24fcab71e7344e7f51422" },
    { "get-vanilla-with-session-token", "GET", "/", "", "", false, "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267",
      { { NULL, NULL } },
      "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\nx-amz-security-token:6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267\n\nhost;x-amz-date;x-amz-security-token\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8" },
    { "post-sts-header-before", "POST", "/", "", "", false, "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==",
      { { NULL, NULL } },
      "POST\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\nx-amz-security-token:AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==\n\nhost;x-amz-date;x-amz-security-token\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead" },
};

static size_t
s_count (const sl_sigv4_header_t *headers)
{
    size_t n = 0;
    while (n < 4 && headers [n].name)
        n++;
    return n;
}

Test (sl_sigv4, the_aws_test_suite)
{
    cr_assert_gt (sizeof s_vectors / sizeof s_vectors [0], 25);
    for (size_t k = 0; k < sizeof s_vectors / sizeof s_vectors [0]; k++) {
        const s_vector_t *v = &s_vectors [k];
        sl_sigv4_creds_t creds = { SUITE_KEY, SUITE_SECRET, v->token };
        sl_sigv4_params_t params = { "us-east-1", "service", SUITE_TIME, v->sign_body };
        sl_sigv4_request_t req = {
            v->method, SUITE_HOST, v->path, v->query, v->headers, s_count (v->headers), sl_str (v->body)
        };
        sl_sigv4_signed_t out;
        sl_buf_t canonical = { 0 };
        cr_assert_eq (sl_sigv4_sign (&creds, &params, &req, &out, &canonical), 0, "%s", v->name);
        cr_expect_str_eq (sl_buf_cstr (&canonical), v->canonical, "%s: the canonical request", v->name);
        //  The signed headers are the canonical request's last line but one.
        const char *last = strrchr (v->canonical, '\n');
        const char *before = last - 1;
        while (before > v->canonical && *before != '\n')
            before--;
        char want [512];
        snprintf (want, sizeof want, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
                  "SignedHeaders=%.*s, Signature=%s", (int) (last - before - 1), before + 1, v->signature);
        cr_expect_str_eq (out.authorization, want, "%s", v->name);
        cr_expect_str_eq (out.amz_date, "20150830T123600Z");
        sl_sigv4_signed_clear (&out);
        sl_buf_free (&canonical);
    }
}

//  A Bedrock request: the model id's ':' is %3A on the wire, %253A signed.
static const char *s_bedrock_path =
    "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream";
static const char *s_profile_path =
    "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2F"
    "us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/invoke-with-response-stream";

Test (sl_sigv4, bedrock_paths_encoded_twice)
{
    sl_buf_t path = { 0 };
    sl_buf_puts (&path, "/model/");
    sl_sigv4_uri_encode (&path, SL_STR_LIT ("arn:aws:bedrock:us-east-1:123456789012:inference-profile/"
                                            "us.anthropic.claude-sonnet-4-5-20250929-v1:0"), false);
    sl_buf_puts (&path, "/invoke-with-response-stream");
    cr_expect_str_eq (sl_buf_cstr (&path), s_profile_path, "the wire path, encoded once");
    sl_buf_free (&path);

    sl_sigv4_creds_t creds = { SUITE_KEY, SUITE_SECRET, NULL };
    sl_sigv4_params_t params = { "us-east-1", "bedrock", SUITE_TIME, false };
    sl_sigv4_header_t headers [] = { { "Content-Type", "application/json" } };
    const struct { const char *path, *canonical_uri; } cases [] = {
        { s_bedrock_path, "/model/anthropic.claude-sonnet-4-5-20250929-v1%253A0/converse-stream" },
        { s_profile_path, "/model/arn%253Aaws%253Abedrock%253Aus-east-1%253A123456789012%253Ainference-profile%252F"
                          "us.anthropic.claude-sonnet-4-5-20250929-v1%253A0/invoke-with-response-stream" },
    };
    for (size_t k = 0; k < 2; k++) {
        sl_sigv4_request_t req = { "POST", "bedrock-runtime.us-east-1.amazonaws.com", cases [k].path, NULL,
                                   headers, 1, SL_STR_LIT ("{}") };
        sl_sigv4_signed_t out;
        sl_buf_t canonical = { 0 };
        cr_assert_eq (sl_sigv4_sign (&creds, &params, &req, &out, &canonical), 0);
        char want [512];
        snprintf (want, sizeof want, "POST\n%s\n\n", cases [k].canonical_uri);
        cr_expect_eq (strncmp (sl_buf_cstr (&canonical), want, strlen (want)), 0, "%s", sl_buf_cstr (&canonical));
        cr_expect (strstr (out.authorization, "/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, "));
        sl_sigv4_signed_clear (&out);
        sl_buf_free (&canonical);
    }
}

Test (sl_sigv4, uri_encoding)
{
    sl_buf_t out = { 0 };
    sl_sigv4_uri_encode (&out, SL_STR_LIT ("a-Z_0.9~ /:+=%\xe2\x9c\x93"), true);
    cr_expect_str_eq (sl_buf_cstr (&out), "a-Z_0.9~%20/%3A%2B%3D%25%E2%9C%93");
    sl_buf_reset (&out);
    sl_sigv4_uri_encode (&out, SL_STR_LIT ("a/b"), false);
    cr_expect_str_eq (sl_buf_cstr (&out), "a%2Fb");
    sl_buf_free (&out);
}

Test (sl_sigv4, what_cannot_be_signed_is_refused)
{
    sl_sigv4_creds_t creds = { SUITE_KEY, SUITE_SECRET, NULL };
    sl_sigv4_params_t params = { "us-east-1", "bedrock", SUITE_TIME, false };
    sl_sigv4_header_t bad [][1] = {
        { { "X-Amz-Date", "20150830T123600Z" } },      //  the signer's own
        { { "Host", "elsewhere" } },
        { { "Bad Name", "v" } },
        { { "X-Ok", "line\r\nInjected: yes" } },
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad [0]; k++) {
        sl_sigv4_request_t req = { "POST", "h", "/", NULL, bad [k], 1, SL_STR_NULL };
        sl_sigv4_signed_t out;
        cr_expect_eq (sl_sigv4_sign (&creds, &params, &req, &out, NULL), -1, "case %zu", k);
        cr_expect_null (out.authorization);
    }
    sl_sigv4_creds_t no_secret = { SUITE_KEY, "", NULL };
    sl_sigv4_request_t req = { "POST", "h", "/", NULL, NULL, 0, SL_STR_NULL };
    sl_sigv4_signed_t out;
    cr_expect_eq (sl_sigv4_sign (&no_secret, &params, &req, &out, NULL), -1);
    //  User-Agent is never signed: a proxy may change it.
    sl_sigv4_header_t ua [] = { { "User-Agent", "x" } };
    req.headers = ua;
    req.header_count = 1;
    cr_assert_eq (sl_sigv4_sign (&creds, &params, &req, &out, NULL), 0);
    cr_expect (strstr (out.authorization, "SignedHeaders=host;x-amz-date,"));
    sl_sigv4_signed_clear (&out);
}

//  A signed Bedrock request as it arrives at the checker: every header.
typedef struct {
    sl_sigv4_signed_t sig;
    sl_sigv4_header_t headers [8];
    size_t count;
    sl_sigv4_request_t req;
} s_arrived_t;

static void
s_sign_and_receive (s_arrived_t *a, const sl_sigv4_creds_t *creds, const char *body)
{
    static sl_sigv4_header_t sent [] = { { "Content-Type", "application/json" }, { "Accept", "application/vnd.amazon.eventstream" } };
    sl_sigv4_params_t params = { "eu-west-3", "bedrock", SUITE_TIME, true };
    sl_sigv4_request_t req = { "POST", "127.0.0.1:9090", s_profile_path, NULL, sent, 2, sl_str (body) };
    cr_assert_eq (sl_sigv4_sign (creds, &params, &req, &a->sig, NULL), 0);
    size_t n = 0;
    a->headers [n++] = (sl_sigv4_header_t) { "Host", "127.0.0.1:9090" };
    a->headers [n++] = sent [0];
    a->headers [n++] = sent [1];
    a->headers [n++] = (sl_sigv4_header_t) { "X-Amz-Date", a->sig.amz_date };
    a->headers [n++] = (sl_sigv4_header_t) { "X-Amz-Content-Sha256", a->sig.content_sha256 };
    if (a->sig.security_token)
        a->headers [n++] = (sl_sigv4_header_t) { "X-Amz-Security-Token", a->sig.security_token };
    a->headers [n++] = (sl_sigv4_header_t) { "Authorization", a->sig.authorization };
    a->headers [n++] = (sl_sigv4_header_t) { "User-Agent", "changed-by-a-proxy" };
    a->count = n;
    a->req = (sl_sigv4_request_t) { "POST", NULL, s_profile_path, NULL, a->headers, n, sl_str (body) };
}

Test (sl_sigv4, the_checker_takes_what_was_signed)
{
    sl_sigv4_creds_t creds = { "ASIAEXAMPLE", "secret/with+chars", "session-token" };
    s_arrived_t a;
    s_sign_and_receive (&a, &creds, "{\"messages\":[]}");
    char why [160];
    cr_expect_eq (sl_sigv4_verify (&creds, "eu-west-3", "bedrock", &a.req, SUITE_TIME + 60, 0, why, sizeof why), 0, "%s", why);
    cr_expect_str_eq (why, "");
    sl_sigv4_signed_clear (&a.sig);
}

Test (sl_sigv4, the_checker_refuses_every_alteration)
{
    sl_sigv4_creds_t creds = { "ASIAEXAMPLE", "secret/with+chars", "session-token" };
    const struct {
        const char *what;
        const char *expect;
    } cases [] = {
        { "body", "the body does not match X-Amz-Content-Sha256" },
        { "path", "the signature does not match" },
        { "query", "the signature does not match" },
        { "content-type", "the signature does not match" },
        { "secret", "the signature does not match" },
        { "key", "the signature is made with another access key" },
        { "region", "the signature's scope is not 20150830/us-west-2/bedrock/aws4_request" },
        { "late", "X-Amz-Date is more than 300 s away from now" },
        { "token", "the session token is missing or is not the one expected" },
        { "no-auth", "no Authorization header" },
        { "not-sigv4", "the Authorization header is not an AWS4-HMAC-SHA256 signature" },
        { "two-dates", "a header of the signature is repeated" },
        { "bad-sig", "the signature does not match" },
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases [0]; k++) {
        s_arrived_t a;
        s_sign_and_receive (&a, &creds, "{\"messages\":[]}");
        sl_sigv4_creds_t check = creds;
        const char *region = "eu-west-3";
        time_t now = SUITE_TIME;
        const char *w = cases [k].what;
        char *auth = strdup (a.sig.authorization);
        if (!strcmp (w, "body"))
            a.req.body = SL_STR_LIT ("{\"messages\":[1]}");
        else if (!strcmp (w, "path"))
            a.req.path = s_bedrock_path;
        else if (!strcmp (w, "query"))
            a.req.query = "x=1";
        else if (!strcmp (w, "content-type"))
            a.headers [1].value = "text/plain";
        else if (!strcmp (w, "secret"))
            check.secret_access_key = "another";
        else if (!strcmp (w, "key"))
            check.access_key_id = "ASIAOTHER";
        else if (!strcmp (w, "region"))
            region = "us-west-2";
        else if (!strcmp (w, "late"))
            now += 301;
        else if (!strcmp (w, "token"))
            check.session_token = "another-token";
        else if (!strcmp (w, "no-auth"))
            a.req.header_count--, a.headers [a.count - 2] = a.headers [a.count - 1];
        else if (!strcmp (w, "not-sigv4"))
            a.headers [a.count - 2].value = "Bearer abc";
        else if (!strcmp (w, "two-dates"))
            a.headers [a.count - 1] = (sl_sigv4_header_t) { "x-amz-date", a.sig.amz_date };
        else if (!strcmp (w, "bad-sig")) {
            auth [strlen (auth) - 1] = auth [strlen (auth) - 1] == '0' ? '1' : '0';
            a.headers [a.count - 2].value = auth;
        }
        char why [160];
        cr_expect_eq (sl_sigv4_verify (&check, region, "bedrock", &a.req, now, 0, why, sizeof why), -1, "%s", w);
        cr_expect_str_eq (why, cases [k].expect, "%s", w);
        free (auth);
        sl_sigv4_signed_clear (&a.sig);
    }
}
