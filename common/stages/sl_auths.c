/*  sl_auths.c - the credential sources of providers (see sl_auths.h). */
#include "common/stages/sl_auths.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/base/sl_alloc.h"
#include "common/dialects/sl_dialect.h"

struct _sl_auths_t {
    sl_providers_t *providers;
    sl_auth_t **sources;                //  by the provider's index; NULL: a key
    size_t count;
};

int
sl_auths_kind (const sl_provider_t *p)
{
    if (p->token_env && *p->token_env)
        return SL_AUTH_BEARER;
    if (p->key_env && *p->key_env)
        return SL_AUTH_KEY;
    const sl_dialect_t *d = sl_dialect_get (p->dialect);
    return d ? d->auth : SL_AUTH_KEY;
}

static const char *
s_cloud_name (int kind)
{
    return kind == SL_AUTH_GOOGLE ? "Google" : kind == SL_AUTH_AZURE ? "Entra ID" : "AWS";
}

static sl_auth_t *
s_source (const sl_provider_t *p, const sl_auths_config_t *config)
{
    int kind = sl_auths_kind (p);
    char text [320];
    if (kind == SL_AUTH_BEARER) {
        const char *token = config->env ? config->env (config->arg, p->token_env) : NULL;
        snprintf (text, sizeof text, "the variable %s (token_env) holds no token", p->token_env);
        return sl_auth_bearer_new (token, text);
    }
    if (kind == SL_AUTH_KEY)
        return NULL;
    const char *why = NULL;
    sl_auth_t *source = config->cloud ? config->cloud (config->arg, p, kind, config->notify, config->notify_arg, &why)
                                      : NULL;
    if (source)
        return source;
    snprintf (text, sizeof text, "%s credentials cannot be had here (%s): set token_env or key_env to a variable "
              "holding an access token", s_cloud_name (kind), why ? why : "no source of them is built in");
    return sl_auth_failing_new (text);
}

sl_auths_t *
sl_auths_new (sl_providers_t *providers, const sl_auths_config_t *config)
{
    sl_auths_t *self = sl_xcalloc (1, sizeof *self);
    self->providers = providers;
    self->count = providers ? sl_providers_provider_count (providers) : 0;
    self->sources = sl_xcalloc (self->count ? self->count : 1, sizeof *self->sources);
    for (size_t i = 0; i < self->count; i++)
        self->sources [i] = s_source (sl_providers_provider (providers, i), config);
    return self;
}

void
sl_auths_destroy (sl_auths_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_auths_t *self = *self_p;
    for (size_t i = 0; i < self->count; i++)
        sl_auth_destroy (&self->sources [i]);
    free (self->sources);
    free (self);
    *self_p = NULL;
}

sl_auth_t *
sl_auths_get (sl_auths_t *self, const sl_provider_t *provider)
{
    for (size_t i = 0; self && i < self->count; i++)
        if (sl_providers_provider (self->providers, i) == provider)
            return self->sources [i];
    return NULL;
}
