/*  sl_aztoken.h - the Microsoft Entra ID access token sluice calls Azure
    OpenAI with.

    Two sources, chosen by sl_aztoken_config_from_env from the variables
    Azure's own SDKs read (EnvironmentCredential, WorkloadIdentityCredential):

    - a client secret: AZURE_TENANT_ID, AZURE_CLIENT_ID and
      AZURE_CLIENT_SECRET; the form POSTed is
      grant_type=client_credentials, client_id, client_secret and scope;
    - workload identity (what AKS gives a pod): AZURE_TENANT_ID,
      AZURE_CLIENT_ID and AZURE_FEDERATED_TOKEN_FILE; the form carries
      client_assertion_type urn:ietf:params:oauth:client-assertion-type:
      jwt-bearer and client_assertion, the file's token, read again at
      each fetch (the kubelet rotates it).

    Both POST to {authority}/{tenant}/oauth2/v2.0/token, the authority
    https://login.microsoftonline.com unless AZURE_AUTHORITY_HOST names
    another (a sovereign cloud, or a test's server), for the scope
    https://cognitiveservices.azure.com/.default. The answer is OAuth2's
    {"access_token", "expires_in", "token_type"} (sl_gcptoken_parse reads
    it; a refusal is told with its error and error_description). The
    token is fetched when the source is made and again 5 minutes before
    it expires (sl_refresher), in the reactor (sl_credfetch), and never
    logged.

    Tests: tests/unit/common/cloud/test_sl_aztoken.c.
*/
#ifndef SL_AZTOKEN_H
#define SL_AZTOKEN_H

#include <czmq.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/cloud/sl_refresher.h"
#include "common/http/sl_curlm.h"

#define SL_AZTOKEN_AUTHORITY "https://login.microsoftonline.com"
#define SL_AZTOKEN_SCOPE "https://cognitiveservices.azure.com/.default"
#define SL_AZTOKEN_ASSERTION_TYPE "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

typedef enum {
    SL_AZTOKEN_SECRET,                  //  a client secret
    SL_AZTOKEN_WORKLOAD                 //  a federated token file (workload identity)
} sl_aztoken_kind_t;

//  The strings are the config's (sl_aztoken_config_clear).
typedef struct {
    sl_aztoken_kind_t kind;
    char *authority;                    //  scheme and host, no trailing slash
    char *tenant;
    char *client_id;
    char *client_secret;                //  SECRET
    char *token_file;                   //  WORKLOAD
    char *scope;                        //  NULL for SL_AZTOKEN_SCOPE
} sl_aztoken_config_t;

//  The source from the environment, as above (a client secret first, as
//  the Azure SDKs' DefaultAzureCredential tries it first). -1 with why
//  naming the variables to set when none is complete; out is then empty.
int sl_aztoken_config_from_env (sl_aztoken_config_t *out, char *why, size_t why_size);
void sl_aztoken_config_clear (sl_aztoken_config_t *self);

//  The token endpoint's URL of config, appended to out; -1 (nothing
//  appended) when the tenant is not a tenant's id or domain name.
int sl_aztoken_url (const sl_aztoken_config_t *config, sl_buf_t *out);
//  The form body of a fetch, appended to out: assertion is the federated
//  token (WORKLOAD; ignored for SECRET).
void sl_aztoken_form (const sl_aztoken_config_t *config, const char *assertion, sl_buf_t *out);

typedef struct _sl_aztoken_t sl_aztoken_t;

//  Copies the config (NULL with why set when it cannot be used: a tenant
//  that is not one, a kind without what it needs). Its first fetch starts
//  at once. timing: NULL for sl_refresher's defaults.
sl_aztoken_t *sl_aztoken_new (zloop_t *loop, sl_curlm_t *curlm, const sl_aztoken_config_t *config,
                              const sl_refresher_timing_t *timing, char *why, size_t why_size);
void sl_aztoken_destroy (sl_aztoken_t **self_p);
//  The token for a request, as sl_gcptoken_get: 0 with *token set
//  (borrowed until the reactor's next turn), or 1 and fn called once
//  unless cancelled.
int sl_aztoken_get (sl_aztoken_t *self, const char **token,
                    sl_refresher_ready_fn *fn, void *arg, uint64_t *wait_id);
void sl_aztoken_cancel (sl_aztoken_t *self, uint64_t wait_id);
sl_aztoken_kind_t sl_aztoken_kind (sl_aztoken_t *self);
sl_refresher_t *sl_aztoken_refresher (sl_aztoken_t *self);

#endif
