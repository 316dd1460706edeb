/*  sl_sigv4.h - AWS Signature Version 4: signing a request, and checking one.

    What Amazon Bedrock takes (service "bedrock", the provider's region),
    written from AWS's specification and checked against AWS's published
    test suite and the AWS SDK's own signer (@smithy/signature-v4):

    - The canonical URI is the path as it is sent, already URI-encoded once
      (a model id's ':' is "%3A" on the wire, an inference profile ARN's
      '/' is "%2F"), encoded once more: every byte but the unreserved
      (A-Z a-z 0-9 - _ . ~) and '/' becomes %XX, so "%3A" is signed as
      "%253A". That is what AWS does for every service but S3, and what
      libcurl's CURLOPT_AWS_SIGV4 (7.88) does not. Empty, "." and ".."
      segments are removed first, as the AWS SDK does.
    - The query string is decoded, each name and value encoded again
      strictly, and sorted by name, then value.
    - Every header given is signed (names lower-cased, values trimmed and
      inner runs of blanks made one space, repeated names joined by
      commas), "host" and "x-amz-date" always, "x-amz-security-token" for
      session credentials, "x-amz-content-sha256" when asked (the AWS SDK
      sends it), but never those a proxy may change (authorization,
      user-agent, connection, expect, ...: the AWS SDK's list).

    SHA-256 and HMAC-SHA-256 come from libsodium. Secrets are never logged;
    the derived key lives on the stack and is wiped.

    The checker does the same from the other side, for the embedded mock:
    it reads the Authorization header, rebuilds the canonical request from
    what arrived, and compares the signatures in constant time.
*/
#ifndef SL_SIGV4_H
#define SL_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

#define SL_SIGV4_ALGORITHM "AWS4-HMAC-SHA256"
#define SL_SIGV4_DATE_LEN 16                    //  20150830T123600Z
#define SL_SIGV4_HEX_LEN 64                     //  a SHA-256 in hex
#define SL_SIGV4_MAX_SKEW_S 300                 //  what the checker allows by default (AWS: 5 min)

//  Credentials; borrowed.
typedef struct {
    const char *access_key_id;
    const char *secret_access_key;
    const char *session_token;          //  NULL for long-term keys
} sl_sigv4_creds_t;

typedef struct {
    const char *name;
    const char *value;
} sl_sigv4_header_t;

//  A request as it goes on the wire; borrowed.
typedef struct {
    const char *method;                 //  "POST"
    const char *host;                   //  "bedrock-runtime.us-east-1.amazonaws.com", ":port" when not the default;
                                        //  the checker takes it from the headers when NULL
    const char *path;                   //  as sent (encoded once): "/model/anthropic.claude-v2%3A1/invoke"
    const char *query;                  //  as sent, without the '?'; NULL or "" for none
    const sl_sigv4_header_t *headers;   //  the other headers sent (the checker: all of them)
    size_t header_count;
    sl_str_t body;
} sl_sigv4_request_t;

//  What to sign for.
typedef struct {
    const char *region;                 //  "us-east-1"
    const char *service;                //  "bedrock"
    time_t now;                         //  the signing time
    bool content_sha256;                //  send and sign x-amz-content-sha256
} sl_sigv4_params_t;

//  The headers to add to the request. Free with sl_sigv4_signed_clear.
typedef struct {
    char amz_date [SL_SIGV4_DATE_LEN + 1];          //  X-Amz-Date
    char content_sha256 [SL_SIGV4_HEX_LEN + 1];     //  X-Amz-Content-Sha256, when asked ("" otherwise)
    const char *security_token;                     //  X-Amz-Security-Token (the creds', borrowed), or NULL
    char *authorization;                            //  Authorization
} sl_sigv4_signed_t;

//  Sign a request. 0 ok; -1 when the credentials, region, service or
//  request lack a field, or a header is one the signature cannot hold (a
//  name with a blank or control byte, a value with a line end).
//  canonical, when not NULL, receives the canonical request (for tests).
int sl_sigv4_sign (const sl_sigv4_creds_t *creds, const sl_sigv4_params_t *params,
                   const sl_sigv4_request_t *req, sl_sigv4_signed_t *out, sl_buf_t *canonical);
void sl_sigv4_signed_clear (sl_sigv4_signed_t *self);

//  Check a received request's signature (req->headers: every header that
//  arrived, Authorization among them) against the one key expected, for
//  service in region, at time now, with at most max_skew_s seconds
//  between X-Amz-Date and now (0: SL_SIGV4_MAX_SKEW_S). Session
//  credentials must have sent and signed their token. 0 valid; -1 with
//  why set (what is wrong, never a secret).
int sl_sigv4_verify (const sl_sigv4_creds_t *creds, const char *region, const char *service,
                     const sl_sigv4_request_t *req, time_t now, long max_skew_s,
                     char *why, size_t why_size);

//  Append s URI-encoded as AWS encodes a path segment or a query value:
//  every byte but the unreserved as %XX (upper case); '/' too unless
//  keep_slash. The model id in Bedrock's path is written with this.
void sl_sigv4_uri_encode (sl_buf_t *out, sl_str_t s, bool keep_slash);

#endif
