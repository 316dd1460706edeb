/*  sl_mock_entra.h - the mock as Microsoft Entra ID's token endpoint, and
    the access tokens it issued, which the mock's Azure OpenAI paths then
    require.

    Token endpoint: POST /{tenant}/oauth2/v2.0/token, the client
    credentials grant as Entra ID checks it: the tenant and client_id the
    mock was given, grant_type client_credentials, the scope
    https://cognitiveservices.azure.com/.default, and either the client
    secret it was given (client_secret) or, for workload identity,
    client_assertion_type urn:ietf:params:oauth:client-assertion-type:
    jwt-bearer with the federated token it was given (client_assertion).
    Anything else is refused in Entra ID's shape ({"error",
    "error_description": "AADSTS...: ..."}: 400, or 401 for a client
    whose credential is wrong).

    The answer is {"token_type": "Bearer", "expires_in", "ext_expires_in",
    "access_token"}: a random token, remembered until it expires (the most
    recent SL_MOCK_ENTRA_TOKENS). Configured (a client id given), the
    mock's Azure OpenAI paths take only "Authorization: Bearer <one of
    them>"; unconfigured, the token endpoint is not served and the Azure
    paths take any credential, as before.

    Tests: tests/unit/services/mock/test_sl_mock_entra.c.
*/
#ifndef SL_MOCK_ENTRA_H
#define SL_MOCK_ENTRA_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

#define SL_MOCK_ENTRA_PATH_END "/oauth2/v2.0/token"
#define SL_MOCK_ENTRA_TOKENS 1024       //  tokens remembered
#define SL_MOCK_ENTRA_TTL_S 3599        //  what Entra ID's tokens live (about an hour)
#define SL_MOCK_ENTRA_TOKEN_PREFIX "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.mock-entra-"

typedef struct {
    const char *tenant;                 //  the tenant whose endpoint is served
    const char *client_id;              //  NULL or "": unconfigured
    const char *client_secret;          //  the secret taken (NULL: none)
    const char *assertion;              //  the federated token taken (NULL: none)
    int64_t ttl_s;                      //  0: SL_MOCK_ENTRA_TTL_S
} sl_mock_entra_config_t;

typedef struct _sl_mock_entra_t sl_mock_entra_t;

//  Copies config. NULL with why set when it does not hold together (a
//  client id without a tenant, or without a secret or an assertion; a
//  secret or an assertion without a client id).
sl_mock_entra_t *sl_mock_entra_new (const sl_mock_entra_config_t *config, char *why, size_t why_size);
void sl_mock_entra_destroy (sl_mock_entra_t **self_p);
//  A client id was given: the token endpoint is served and the Azure
//  paths require its tokens.
bool sl_mock_entra_configured (sl_mock_entra_t *self);
//  A request's path is a token endpoint's (any tenant's).
bool sl_mock_entra_is_token_path (const char *path);
//  The token endpoint: the grant's path and form body at now. The HTTP
//  status, the JSON answer appended to answer.
int sl_mock_entra_grant (sl_mock_entra_t *self, const char *path, sl_str_t form, time_t now, sl_buf_t *answer);
//  An Authorization header's value ("Bearer <token>") it issued, valid at now.
bool sl_mock_entra_accepts (sl_mock_entra_t *self, const char *authorization, time_t now);
//  Tokens issued so far.
uint64_t sl_mock_entra_issued (sl_mock_entra_t *self);

#endif
