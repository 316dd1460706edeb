/*  sl_providers.c - providers and model routes (see sl_providers.h). */
#include "common/dialects/sl_providers.h"

#include <ctype.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_name.h"
#include "common/base/sl_alloc.h"
#include "common/dialects/sl_dialect.h"

#define SL_PROVIDERS_MODEL_MAX 512         //  longer model names match no glob

struct _sl_routes_t {
    sl_provider_t *providers;           //  strings owned
    size_t provider_count;
    sl_route_t *routes;                 //  strings owned
    size_t route_count;
    sl_price_t *prices;                 //  model strings owned, in the order added
    size_t price_count;
};

sl_providers_t *
sl_providers_new (void)
{
    return sl_xcalloc (1, sizeof (sl_providers_t));
}

void
sl_providers_destroy (sl_providers_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_providers_t *self = *self_p;
    for (size_t i = 0; i < self->provider_count; i++) {
        free ((char *) self->providers [i].name);
        free ((char *) self->providers [i].base_url);
        free ((char *) self->providers [i].key_env);
    }
    for (size_t i = 0; i < self->route_count; i++) {
        free ((char *) self->routes [i].model);
        free ((char *) self->routes [i].provider);
    }
    for (size_t i = 0; i < self->price_count; i++)
        free ((char *) self->prices [i].model);
    free (self->providers);
    free (self->routes);
    free (self->prices);
    free (self);
    *self_p = NULL;
}

bool
sl_providers_env_valid (const char *s)
{
    if (!s)
        return false;
    if (!*s)
        return true;                    //  no key
    if (!isalpha ((unsigned char) *s) && *s != '_')
        return false;
    for (; *s; s++)
        if (!isalnum ((unsigned char) *s) && *s != '_')
            return false;
    return true;
}

bool
sl_providers_url_valid (const char *s)
{
    if (!s)
        return false;
    if (strncmp (s, "http://", 7) == 0)
        return s [7] != 0;
    return strncmp (s, "https://", 8) == 0 && s [8] != 0;
}

const sl_provider_t *
sl_providers_find (sl_providers_t *self, sl_str_t name)
{
    for (size_t i = 0; i < self->provider_count; i++)
        if (sl_str_eq (name, self->providers [i].name))
            return &self->providers [i];
    return NULL;
}

int
sl_providers_add_provider (sl_providers_t *self, const sl_provider_t *p)
{
    const char *key_env = p->key_env ? p->key_env : "";
    if (!sl_name_valid (p->name) || !sl_dialect_get (p->dialect)
    ||  !sl_providers_url_valid (p->base_url) || !sl_providers_env_valid (key_env)
    ||  sl_providers_find (self, sl_str (p->name)))
        return -1;
    self->providers = sl_xrealloc (self->providers, (self->provider_count + 1) * sizeof (sl_provider_t));
    sl_provider_t *copy = &self->providers [self->provider_count++];
    copy->name = sl_xstrdup (p->name);
    copy->dialect = p->dialect;
    char *url = sl_xstrdup (p->base_url);
    size_t n = strlen (url);
    while (n > 8 && url [n - 1] == '/')
        url [--n] = 0;                  //  paths are appended with their own slash
    copy->base_url = url;
    copy->key_env = sl_xstrdup (key_env);
    copy->forward_auth = p->forward_auth;
    return 0;
}

int
sl_providers_add_route (sl_providers_t *self, const char *model, const char *provider)
{
    if (!model || !*model || !provider || !sl_providers_find (self, sl_str (provider)))
        return -1;
    self->routes = sl_xrealloc (self->routes, (self->route_count + 1) * sizeof (sl_route_t));
    sl_route_t *r = &self->routes [self->route_count++];
    r->model = sl_xstrdup (model);
    r->provider = sl_xstrdup (provider);
    return 0;
}

sl_providers_t *
sl_providers_new_default (const char *const *base_urls)
{
    sl_providers_t *self = sl_providers_new ();
    size_t count = sl_dialect_count ();
    //  Each vendor's dialects together, vendors in the order of their
    //  first dialect.
    for (size_t v = 0; v < count && self; v++) {
        if (!sl_dialect_vendor_first (sl_dialect_at (v)))
            continue;
        const char *vendor = sl_dialect_vendor (sl_dialect_at (v));
        for (size_t i = v; i < count && self; i++) {
            const sl_dialect_t *d = sl_dialect_at (i);
            if (strcmp (sl_dialect_vendor (d), vendor) != 0)
                continue;
            char key_env [SL_DIALECT_OPTION_MAX];
            sl_dialect_option (d, SL_DIALECT_KEY_VARIABLE, key_env);
            const char *base_url = base_urls && base_urls [d->id] ? base_urls [d->id] : d->base_url;
            const sl_provider_t p = { d->name, d->id, base_url, key_env, true };
            if (sl_providers_add_provider (self, &p))
                sl_providers_destroy (&self);   //  a base URL that is not http(s)
        }
    }
    return self;
}

size_t
sl_providers_provider_count (sl_providers_t *self)
{
    return self->provider_count;
}

const sl_provider_t *
sl_providers_provider (sl_providers_t *self, size_t index)
{
    return index < self->provider_count ? &self->providers [index] : NULL;
}

size_t
sl_providers_route_count (sl_providers_t *self)
{
    return self->route_count;
}

const sl_route_t *
sl_providers_route (sl_providers_t *self, size_t index)
{
    return index < self->route_count ? &self->routes [index] : NULL;
}

const sl_provider_t *
sl_providers_match (sl_providers_t *self, sl_str_t model, int dialect)
{
    char name [SL_PROVIDERS_MODEL_MAX];
    bool named = model.ptr && model.len < sizeof name && !memchr (model.ptr, 0, model.len);
    if (named) {
        memcpy (name, model.ptr, model.len);
        name [model.len] = 0;
        for (size_t i = 0; i < self->route_count; i++) {
            const sl_provider_t *p = sl_providers_find (self, sl_str (self->routes [i].provider));
            if (p && (dialect == 0 || p->dialect == dialect)
            &&  fnmatch (self->routes [i].model, name, 0) == 0)
                return p;
        }
    }
    for (size_t i = 0; i < self->provider_count; i++)
        if (dialect == 0 || self->providers [i].dialect == dialect)
            return &self->providers [i];
    return NULL;
}

const sl_provider_t *
sl_providers_pick (sl_providers_t *self, sl_str_t model, int client_dialect)
{
    char name [SL_PROVIDERS_MODEL_MAX];
    const sl_provider_t *first = NULL;
    if (model.ptr && model.len < sizeof name && !memchr (model.ptr, 0, model.len)) {
        memcpy (name, model.ptr, model.len);
        name [model.len] = 0;
        for (size_t i = 0; i < self->route_count; i++) {
            const sl_provider_t *p = sl_providers_find (self, sl_str (self->routes [i].provider));
            if (!p || fnmatch (self->routes [i].model, name, 0) != 0)
                continue;
            if (p->dialect == client_dialect)
                return p;
            if (!first)
                first = p;
        }
    }
    if (first)
        return first;
    const sl_provider_t *own = sl_providers_match (self, SL_STR_NULL, client_dialect);
    return own ? own : sl_providers_provider (self, 0);
}

int
sl_providers_add_price (sl_providers_t *self, const sl_price_t *price)
{
    if (!price->model || !*price->model
    ||  !isfinite (price->input_per_m) || price->input_per_m < 0
    ||  !isfinite (price->output_per_m) || price->output_per_m < 0)
        return -1;
    for (size_t i = 0; i < self->price_count; i++)
        if (strcmp (self->prices [i].model, price->model) == 0)
            return -1;
    self->prices = sl_xrealloc (self->prices, (self->price_count + 1) * sizeof (sl_price_t));
    sl_price_t *copy = &self->prices [self->price_count++];
    *copy = *price;
    copy->model = sl_xstrdup (price->model);
    return 0;
}

size_t
sl_providers_price_count (const sl_providers_t *self)
{
    return self->price_count;
}

int
sl_providers_price (const sl_providers_t *self, const char *model, double *input_per_m, double *output_per_m)
{
    *input_per_m = *output_per_m = 0;
    if (!self || !model || !*model || strlen (model) >= SL_PROVIDERS_MODEL_MAX)
        return -1;
    const sl_price_t *found = NULL;
    for (size_t i = 0; i < self->price_count && !found; i++)
        if (strcmp (self->prices [i].model, model) == 0)
            found = &self->prices [i];
    for (size_t i = 0; i < self->price_count && !found; i++)
        if (fnmatch (self->prices [i].model, model, 0) == 0)
            found = &self->prices [i];
    if (!found)
        return -1;
    *input_per_m = found->input_per_m;
    *output_per_m = found->output_per_m;
    return 0;
}
