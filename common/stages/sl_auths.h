/*  sl_auths.h - the credential sources of a routes file's providers.

    A pure class (the ingest's): for each provider whose credential is not
    a key in a header, the source that authorizes its calls (sl_auth.h),
    made once when the providers are loaded:

      token_env     a bearer token from that variable (Azure's Entra ID
                    tokens, a Vertex AI access token): read once, at load;
      key_env       (or neither, for a dialect whose credential is a key)
                    no source: the key, or the client's own, goes in the
                    dialect's credential header (sl_upstream.h);
      a cloud's     a dialect whose credential is a cloud's own (its
                    table's auth: Google's tokens for Vertex, AWS's
                    signatures for Bedrock, Entra ID's tokens for Azure
                    OpenAI), for a provider that names no
                    key and no token: the source the cloud maker given
                    here makes (the cloud credential libraries'); without
                    one, a source that fails every call with what to
                    configure instead.

    Sources that fetch call the notify hook given here, from the reactor,
    when they have news; the ingest then asks sl_upcall_authorized. The
    environment is read through the given lookup (getenv in a service).

    Tests: tests/unit/common/stages/test_sl_auths.c.
*/
#ifndef SL_AUTHS_H
#define SL_AUTHS_H

#include "common/dialects/sl_providers.h"
#include "common/http/sl_auth.h"

typedef struct _sl_auths_t sl_auths_t;

typedef struct {
    //  A variable's value, or NULL.
    const char *(*env) (void *arg, const char *name);
    //  Optional: the source of a cloud's credential (kind: sl_auth_kind_t,
    //  SL_AUTH_GOOGLE, SL_AUTH_AWS or SL_AUTH_AZURE) for provider, which calls notify
    //  (notify_arg) when it has news; NULL when it cannot make one (then
    //  *why, static text, says why, or is left NULL).
    sl_auth_t *(*cloud) (void *arg, const sl_provider_t *provider, int kind, sl_auth_notify_fn *notify,
                         void *notify_arg, const char **why);
    void *arg;
    sl_auth_notify_fn *notify;          //  a source's news (may be NULL: nobody waits)
    void *notify_arg;
} sl_auths_config_t;

//  The sources of providers' providers (borrowed: it must outlive them).
sl_auths_t *sl_auths_new (sl_providers_t *providers, const sl_auths_config_t *config);
//  Wipes and frees every source.
void sl_auths_destroy (sl_auths_t **self_p);
//  The source of a provider, or NULL: its credential is a key in a header.
sl_auth_t *sl_auths_get (sl_auths_t *self, const sl_provider_t *provider);
//  How a provider's credential is had (sl_auth_kind_t): what sl_auths_new
//  decides from its fields and its dialect.
int sl_auths_kind (const sl_provider_t *provider);

#endif
