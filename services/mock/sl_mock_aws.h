/*  sl_mock_aws.h - the mock's Bedrock checks a request's SigV4 signature
    as AWS does, when it is given AWS keys.

    The mock is given keys by its environment (SLUICE_MOCK_AWS_ACCESS_KEY_ID,
    SLUICE_MOCK_AWS_SECRET_ACCESS_KEY and, for temporary keys,
    SLUICE_MOCK_AWS_SESSION_TOKEN: secrets never come from flags). With
    them, a request to a Bedrock path must be signed with those keys
    (service "bedrock", the region its credential scope names, within 5
    minutes of the mock's clock), checked by sl_sigv4_verify over the path
    as it was sent; without them, as before, any request is served. A
    refusal is AWS's: HTTP 403, its type (the x-amzn-ErrorType header and
    the body's __type) and its words:

      no Authorization header        MissingAuthenticationTokenException
      another access key id          UnrecognizedClientException
      anything else wrong            InvalidSignatureException

    Tests: tests/unit/services/mock/test_sl_mock_aws.c.
*/
#ifndef SL_MOCK_AWS_H
#define SL_MOCK_AWS_H

#include <stddef.h>
#include <time.h>

#include "common/cloud/sl_sigv4.h"

#define SL_MOCK_AWS_STATUS 403

//  A refusal: its type and words (static text), and why for the mock's
//  log (never a secret).
typedef struct {
    const char *type;
    const char *message;
    char why [256];
} sl_mock_aws_refusal_t;

//  Check req (its path as sent, every header that arrived, its body)
//  against creds at now. 0 valid; -1 with out filled.
int sl_mock_aws_check (const sl_sigv4_creds_t *creds, const sl_sigv4_request_t *req, time_t now,
                       sl_mock_aws_refusal_t *out);

#endif
