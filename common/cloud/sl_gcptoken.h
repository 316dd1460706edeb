/*  sl_gcptoken.h - the OAuth2 access token sluice calls Google Cloud
    (Vertex AI) with.

    Three sources, chosen by sl_gcptoken_config_from_env in this order:

    - a service-account key file, the provider's credentials_file or else
      GOOGLE_APPLICATION_CREDENTIALS: a JWT-bearer grant signed with the
      key (sl_gcpkey) POSTed to the key's token_uri;
    - a token given as is, GOOGLE_OAUTH_ACCESS_TOKEN (checked before
      GOOGLE_APPLICATION_CREDENTIALS, after a credentials_file): used
      until the process restarts, never refreshed;
    - the metadata server of GCE, Cloud Run and GKE's workload identity:
      GET http://<host>/computeMetadata/v1/instance/service-accounts/default/token
      with "Metadata-Flavor: Google", host metadata.google.internal unless
      GCE_METADATA_HOST (Google's libraries' variable) names another.

    Both fetched kinds answer {"access_token", "expires_in", "token_type"};
    the token is fetched again 5 minutes before it expires
    (sl_refresher), in the reactor (sl_credfetch), and never logged.
*/
#ifndef SL_GCPTOKEN_H
#define SL_GCPTOKEN_H

#include <czmq.h>
#include <stdint.h>

#include "common/base/sl_str.h"
#include "common/cloud/sl_refresher.h"
#include "common/http/sl_curlm.h"

#define SL_GCPTOKEN_SCOPE "https://www.googleapis.com/auth/cloud-platform"
#define SL_GCPTOKEN_METADATA_HOST "metadata.google.internal"
#define SL_GCPTOKEN_METADATA_PATH "/computeMetadata/v1/instance/service-accounts/default/token"
#define SL_GCPTOKEN_TOKEN_ENV "GOOGLE_OAUTH_ACCESS_TOKEN"

typedef enum {
    SL_GCPTOKEN_KEY_FILE,               //  a service account's key
    SL_GCPTOKEN_GIVEN,                  //  a token from the environment
    SL_GCPTOKEN_METADATA                //  the metadata server
} sl_gcptoken_kind_t;

//  The strings are the config's (sl_gcptoken_config_clear).
typedef struct {
    sl_gcptoken_kind_t kind;
    char *key_file;                     //  KEY_FILE
    char *token;                        //  GIVEN
    char *metadata_host;                //  METADATA: host[:port]
    char *scope;                        //  KEY_FILE: NULL for SL_GCPTOKEN_SCOPE
} sl_gcptoken_config_t;

//  The source for a provider (credentials_file: its own, or NULL), as
//  above. Always finds one (the metadata server last).
void sl_gcptoken_config_from_env (sl_gcptoken_config_t *out, const char *credentials_file);
void sl_gcptoken_config_clear (sl_gcptoken_config_t *self);

typedef struct _sl_gcptoken_t sl_gcptoken_t;

//  Copies the config; a key file is read and checked here (NULL with why
//  set when it is not a usable key). A fetched kind starts its first
//  fetch at once. timing: NULL for sl_refresher's defaults.
sl_gcptoken_t *sl_gcptoken_new (zloop_t *loop, sl_curlm_t *curlm, const sl_gcptoken_config_t *config,
                                const sl_refresher_timing_t *timing, char *why, size_t why_size);
void sl_gcptoken_destroy (sl_gcptoken_t **self_p);
//  The token for a request, as sl_awscreds_get: 0 with *token set
//  (borrowed until the reactor's next turn: send "Authorization: Bearer
//  <token>"), or 1 and fn called once unless cancelled.
int sl_gcptoken_get (sl_gcptoken_t *self, const char **token,
                     sl_refresher_ready_fn *fn, void *arg, uint64_t *wait_id);
void sl_gcptoken_cancel (sl_gcptoken_t *self, uint64_t wait_id);
sl_gcptoken_kind_t sl_gcptoken_kind (sl_gcptoken_t *self);
sl_refresher_t *sl_gcptoken_refresher (sl_gcptoken_t *self);

//  Read a token answer of HTTP status status (the token endpoint's or the
//  metadata server's). 0 with *token (the caller's) and *expires_in_s;
//  -1 with why set (the endpoint's error and description when it sent
//  them; never a token).
int sl_gcptoken_parse (int status, sl_str_t json, char **token, int64_t *expires_in_s,
                       char *why, size_t why_size);

#endif
