/*  sl_awscreds.h - the credentials sluice calls AWS (Amazon Bedrock) with.

    Three sources, tried in this order by sl_awscreds_config_from_env:

    - a Bedrock API key, AWS_BEARER_TOKEN_BEDROCK: sent as
      "Authorization: Bearer <key>", no signature;
    - static keys, AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+
      AWS_SESSION_TOKEN for temporary ones): every request signed with
      SigV4 (sl_sigv4);
    - web identity, AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE (+
      AWS_ROLE_SESSION_NAME), what EKS gives a pod: the token file (read
      afresh each time: kubelet rotates it) traded with STS
      (AssumeRoleWithWebIdentity, sl_awssts) for temporary keys, fetched
      again 5 minutes before they expire. STS is
      https://sts.<region>.amazonaws.com unless AWS_ENDPOINT_URL_STS (the
      AWS SDKs' variable) names another, as tests do.

    The fetch runs in the reactor (sl_credfetch over sl_curlm) and its
    timing is sl_refresher's: current keys keep serving while new ones are
    fetched; a request that needs keys when none are valid waits for the
    fetch, or fails with its reason. No secret is ever logged: errors name
    variables and files, never values.
*/
#ifndef SL_AWSCREDS_H
#define SL_AWSCREDS_H

#include <curl/curl.h>
#include <czmq.h>
#include <stdint.h>

#include "common/cloud/sl_refresher.h"
#include "common/cloud/sl_sigv4.h"
#include "common/http/sl_curlm.h"

typedef enum {
    SL_AWSCREDS_BEARER,                 //  a Bedrock API key
    SL_AWSCREDS_STATIC,                 //  access key, secret (, session token)
    SL_AWSCREDS_WEB_IDENTITY            //  a role taken with a web identity token
} sl_awscreds_kind_t;

//  Where the credentials come from. The strings are the config's
//  (sl_awscreds_config_clear wipes and frees them).
typedef struct {
    sl_awscreds_kind_t kind;
    char *bearer_token;                 //  BEARER
    char *access_key_id;                //  STATIC
    char *secret_access_key;
    char *session_token;                //  STATIC, or NULL
    char *role_arn;                     //  WEB_IDENTITY
    char *token_file;
    char *session_name;                 //  or NULL: SL_AWSSTS_DEFAULT_SESSION
    char *sts_url;                      //  the STS endpoint, scheme and host
} sl_awscreds_config_t;

//  The environment's credentials for region (the provider's: it names the
//  STS endpoint), as above. 0 ok; -1 with why set when none is complete
//  (a variable of a source set without its fellow is named).
int sl_awscreds_config_from_env (sl_awscreds_config_t *out, const char *region, char *why, size_t why_size);
//  Static keys from the variables a provider names (its
//  aws_access_key_id_env, aws_secret_access_key_env and, or NULL,
//  aws_session_token_env), so providers of one process may sign for
//  different accounts. 0 ok; -1 with why naming the variable that is
//  unset or empty (each named one must hold its value).
int sl_awscreds_config_from_vars (sl_awscreds_config_t *out, const char *key_var, const char *secret_var,
                                  const char *session_var, char *why, size_t why_size);
void sl_awscreds_config_clear (sl_awscreds_config_t *self);

typedef struct _sl_awscreds_t sl_awscreds_t;

//  The credentials to use for one request, borrowed until the reactor's
//  next turn: a bearer token, or the keys to sign with.
typedef struct {
    const char *bearer;                 //  non-NULL: send Authorization: Bearer
    sl_sigv4_creds_t keys;              //  else: sign with these
} sl_awscreds_use_t;

//  Copies the config. Web identity starts its first fetch at once.
//  timing: NULL for sl_refresher's defaults.
sl_awscreds_t *sl_awscreds_new (zloop_t *loop, sl_curlm_t *curlm, const sl_awscreds_config_t *config,
                                const sl_refresher_timing_t *timing);
void sl_awscreds_destroy (sl_awscreds_t **self_p);
//  The credentials for a request. 0: *use holds them. 1: not yet: fn is
//  called once (error NULL: ask again, they are there; else why not) unless
//  cancelled with *wait_id. Never fails at once: a failure comes through fn.
int sl_awscreds_get (sl_awscreds_t *self, sl_awscreds_use_t *use,
                     sl_refresher_ready_fn *fn, void *arg, uint64_t *wait_id);
void sl_awscreds_cancel (sl_awscreds_t *self, uint64_t wait_id);
//  Authorize a request with use: the headers to add are appended to
//  *headers ("Authorization: Bearer ..." or SigV4's X-Amz-Date,
//  X-Amz-Security-Token, X-Amz-Content-Sha256 and Authorization). 0 ok,
//  -1 when the request cannot be signed.
int sl_awscreds_authorize (const sl_awscreds_use_t *use, const sl_sigv4_params_t *params,
                           const sl_sigv4_request_t *req, struct curl_slist **headers);
//  The source, and the refresher's counts (metrics, tests).
sl_awscreds_kind_t sl_awscreds_kind (sl_awscreds_t *self);
sl_refresher_t *sl_awscreds_refresher (sl_awscreds_t *self);

#endif
