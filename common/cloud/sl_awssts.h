/*  sl_awssts.h - AWS STS AssumeRoleWithWebIdentity: the request and its
    answer.

    What an EKS pod's service account gives (AWS_ROLE_ARN and a token file
    that kubelet rotates) is traded with STS for temporary credentials:
    a POST of a form (Action, Version, RoleArn, RoleSessionName,
    WebIdentityToken), unsigned, answered in XML:

        <AssumeRoleWithWebIdentityResponse ...><AssumeRoleWithWebIdentityResult>
          <Credentials><AccessKeyId>..</AccessKeyId><SecretAccessKey>..</SecretAccessKey>
            <SessionToken>..</SessionToken><Expiration>2025-01-01T00:00:00Z</Expiration>
          </Credentials> ...

    or, when refused, <ErrorResponse><Error><Code>..</Code><Message>..</Message>.
    Pure functions: the reactor side is sl_awscreds.
*/
#ifndef SL_AWSSTS_H
#define SL_AWSSTS_H

#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

#define SL_AWSSTS_VERSION "2011-06-15"
#define SL_AWSSTS_DEFAULT_SESSION "sluice"      //  RoleSessionName when none is given

//  Temporary credentials; the strings are the caller's (sl_awssts_creds_clear).
typedef struct {
    char *access_key_id;
    char *secret_access_key;
    char *session_token;
    int64_t expires_ms;                 //  wall clock, ms since the epoch
} sl_awssts_creds_t;

//  The form body of the request (application/x-www-form-urlencoded),
//  appended to out. session_name NULL: SL_AWSSTS_DEFAULT_SESSION.
void sl_awssts_request (sl_buf_t *out, const char *role_arn, const char *session_name, sl_str_t token);
//  Read an answer of HTTP status status. 0 with out filled; -1 with why
//  set (STS's error code and message when it sent one; never a secret).
int sl_awssts_parse (int status, sl_str_t xml, sl_awssts_creds_t *out, char *why, size_t why_size);
//  Wipe and free the strings.
void sl_awssts_creds_clear (sl_awssts_creds_t *self);
//  An ISO 8601 UTC time ("2025-01-01T00:00:00Z", fractions of a second
//  allowed) as ms since the epoch; -1 when it is not one.
int64_t sl_awssts_time (sl_str_t iso);

#endif
