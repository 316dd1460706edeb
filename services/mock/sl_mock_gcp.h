/*  sl_mock_gcp.h - the mock as Google's token services: a token endpoint
    that takes a service account's JWT-bearer grant, and a metadata
    server; and the access tokens they issued, which the mock's Vertex AI
    paths take.

    Token endpoint (what a key file's token_uri names: POST /token):
    grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<JWT>,
    the JWT checked as Google checks it: signed RS256 with the private key
    of the key file the mock was given (verified with its public key),
    iss the key's client_email, aud its token_uri, a scope, iat no later
    than a minute ahead, exp after now and at most an hour after iat.
    Anything else is refused 400 in Google's shape ({"error":
    "invalid_grant", "error_description": ...}).

    Metadata server: GET /computeMetadata/v1/instance/service-accounts/
    default/token with "Metadata-Flavor: Google" (403 without, as Google's
    answers).

    Both answer {"access_token", "expires_in", "token_type": "Bearer"}: a
    random token, remembered until it expires (the most recent
    SL_MOCK_GCP_TOKENS). A Vertex AI request is taken with one of them, or
    with SL_MOCK_BEARER_TOKEN (a token given as is, for a token variable).

    Tests: tests/unit/services/mock/test_sl_mock_gcp.c.
*/
#ifndef SL_MOCK_GCP_H
#define SL_MOCK_GCP_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

#define SL_MOCK_GCP_TOKEN_PATH "/token"
#define SL_MOCK_GCP_METADATA_PATH "/computeMetadata/v1/instance/service-accounts/default/token"
#define SL_MOCK_GCP_TOKENS 1024         //  tokens remembered
#define SL_MOCK_GCP_TTL_S 3599          //  what Google's tokens live

typedef struct _sl_mock_gcp_t sl_mock_gcp_t;

//  key_file: the service account's key whose grants are taken (NULL or
//  "": none, every grant refused); ttl_s: the tokens' life (0: the
//  default). NULL with why set when the key file is not a usable key.
sl_mock_gcp_t *sl_mock_gcp_new (const char *key_file, int64_t ttl_s, char *why, size_t why_size);
void sl_mock_gcp_destroy (sl_mock_gcp_t **self_p);
//  The token endpoint: the grant's form body at now. The HTTP status,
//  the JSON answer appended to answer.
int sl_mock_gcp_grant (sl_mock_gcp_t *self, sl_str_t form, time_t now, sl_buf_t *answer);
//  The metadata server: the request's Metadata-Flavor header (or NULL).
int sl_mock_gcp_metadata (sl_mock_gcp_t *self, const char *flavor, time_t now, sl_buf_t *answer);
//  An Authorization header's value ("Bearer <token>") the mock takes at now.
bool sl_mock_gcp_accepts (sl_mock_gcp_t *self, const char *authorization, time_t now);
//  Tokens issued so far.
uint64_t sl_mock_gcp_issued (sl_mock_gcp_t *self);
//  A form field's value, percent- and plus-decoded into out (size); false
//  when absent, malformed or too long (the token endpoints' forms).
bool sl_mock_gcp_form_value (sl_str_t form, const char *name, char *out, size_t size);

#endif
