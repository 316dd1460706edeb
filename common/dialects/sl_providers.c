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

static void
s_provider_free (sl_provider_t *p)
{
    free ((char *) p->name);
    free ((char *) p->base_url);
    for (size_t k = 0; k < p->key_env_count; k++)
        free ((char *) p->key_envs [k]);
    if (!p->key_env_count)
        free ((char *) p->key_env);
    free ((void *) p->key_envs);
    free ((char *) p->region);
    free ((char *) p->project);
    free ((char *) p->credentials_file);
    free ((char *) p->api_version);
    free ((char *) p->token_env);
    free ((char *) p->aws_access_key_id_env);
    free ((char *) p->aws_secret_access_key_env);
    free ((char *) p->aws_session_token_env);
    for (size_t i = 0; i < p->deployment_count; i++) {
        free ((char *) p->deployments [i].model);
        free ((char *) p->deployments [i].deployment);
    }
    free ((void *) p->deployments);
}

void
sl_providers_destroy (sl_providers_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_providers_t *self = *self_p;
    for (size_t i = 0; i < self->provider_count; i++)
        s_provider_free (&self->providers [i]);
    for (size_t i = 0; i < self->route_count; i++) {
        sl_route_t *r = &self->routes [i];
        free ((char *) r->model);
        for (size_t t = 0; t < r->target_count; t++) {
            free ((char *) r->targets [t].provider);
            free ((char *) r->targets [t].model);
        }
        free ((void *) r->targets);
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

static bool
s_given (const char *field)
{
    return field && *field;
}

static const struct {
    unsigned field;
    const char *name;
} s_field_names [] = {
    { SL_PROVIDER_FIELD_BASE_URL, "base_url" },
    { SL_PROVIDER_FIELD_REGION, "region" },
    { SL_PROVIDER_FIELD_PROJECT, "project" },
    { SL_PROVIDER_FIELD_CREDENTIALS_FILE, "credentials_file" },
    { SL_PROVIDER_FIELD_API_VERSION, "api_version" },
    { SL_PROVIDER_FIELD_DEPLOYMENTS, "deployments" },
    { SL_PROVIDER_FIELD_TOKEN_ENV, "token_env" },
    { SL_PROVIDER_FIELD_AWS_KEY_ENV, "aws_access_key_id_env" },
    { SL_PROVIDER_FIELD_AWS_SECRET_ENV, "aws_secret_access_key_env" },
    { SL_PROVIDER_FIELD_AWS_SESSION_ENV, "aws_session_token_env" },
};

const char *
sl_provider_field_name (unsigned field)
{
    for (size_t i = 0; i < sizeof s_field_names / sizeof s_field_names [0]; i++)
        if (s_field_names [i].field == field)
            return s_field_names [i].name;
    return "?";
}

unsigned
sl_provider_fields (const sl_provider_t *p)
{
    return (s_given (p->base_url) ? SL_PROVIDER_FIELD_BASE_URL : 0)
         | (s_given (p->region) ? SL_PROVIDER_FIELD_REGION : 0)
         | (s_given (p->project) ? SL_PROVIDER_FIELD_PROJECT : 0)
         | (s_given (p->credentials_file) ? SL_PROVIDER_FIELD_CREDENTIALS_FILE : 0)
         | (s_given (p->api_version) ? SL_PROVIDER_FIELD_API_VERSION : 0)
         | (p->deployment_count ? SL_PROVIDER_FIELD_DEPLOYMENTS : 0)
         | (s_given (p->token_env) ? SL_PROVIDER_FIELD_TOKEN_ENV : 0)
         | (s_given (p->aws_access_key_id_env) ? SL_PROVIDER_FIELD_AWS_KEY_ENV : 0)
         | (s_given (p->aws_secret_access_key_env) ? SL_PROVIDER_FIELD_AWS_SECRET_ENV : 0)
         | (s_given (p->aws_session_token_env) ? SL_PROVIDER_FIELD_AWS_SESSION_ENV : 0);
}

int
sl_providers_fields (const sl_provider_t *p, sl_buf_t *why)
{
    const sl_dialect_t *d = sl_dialect_get (p->dialect);
    if (!d) {
        sl_buf_puts (why, "unknown dialect");
        return -1;
    }
    //  A client dialect reads base_url alone and needs it; a token from a
    //  variable serves every dialect.
    unsigned reads = SL_PROVIDER_FIELD_BASE_URL | SL_PROVIDER_FIELD_TOKEN_ENV | d->provider_fields;
    unsigned needs = d->upstream_only ? d->provider_needs : SL_PROVIDER_FIELD_BASE_URL;
    unsigned given = sl_provider_fields (p);
    for (size_t i = 0; i < sizeof s_field_names / sizeof s_field_names [0]; i++) {
        unsigned f = s_field_names [i].field;
        if ((needs & f) && !(given & f)) {
            sl_buf_printf (why, "dialect %s needs %s", d->name, s_field_names [i].name);
            return -1;
        }
        if ((given & f) && !(reads & f)) {
            sl_buf_printf (why, "dialect %s takes no %s", d->name, s_field_names [i].name);
            return -1;
        }
    }
    if ((s_given (p->key_env) || p->key_env_count) && s_given (p->token_env)) {
        sl_buf_puts (why, "a provider takes key_env or token_env, not both");
        return -1;
    }
    //  A provider's own AWS keys: the pair, or nothing of them.
    unsigned aws = given & (SL_PROVIDER_FIELD_AWS_KEY_ENV | SL_PROVIDER_FIELD_AWS_SECRET_ENV
                            | SL_PROVIDER_FIELD_AWS_SESSION_ENV);
    if (aws && !((aws & SL_PROVIDER_FIELD_AWS_KEY_ENV) && (aws & SL_PROVIDER_FIELD_AWS_SECRET_ENV))) {
        sl_buf_puts (why, "aws_access_key_id_env and aws_secret_access_key_env go together "
                          "(aws_session_token_env with them)");
        return -1;
    }
    if (aws && (s_given (p->key_env) || p->key_env_count || s_given (p->token_env))) {
        sl_buf_puts (why, "a provider takes its AWS keys' variables or key_env or token_env, not two of them");
        return -1;
    }
    return d->provider_check ? d->provider_check (p, why) : 0;
}

const char *
sl_provider_deployment (const sl_provider_t *p, sl_str_t model)
{
    for (size_t i = 0; i < p->deployment_count; i++)
        if (sl_str_eq (model, p->deployments [i].model))
            return p->deployments [i].deployment;
    return NULL;
}

//  A cloud's region, project or API version goes into a host name or a
//  path: letters, digits, '-', '_' and '.' only.
static bool
s_valid_word (const char *s)
{
    if (!s || !*s)
        return true;
    for (; *s; s++)
        if (!isalnum ((unsigned char) *s) && *s != '-' && *s != '_' && *s != '.')
            return false;
    return true;
}

static char *
s_dup (const char *s)
{
    return sl_xstrdup (s ? s : "");
}

int
sl_providers_add_provider (sl_providers_t *self, const sl_provider_t *p)
{
    const char *key_env = p->key_env ? p->key_env : "";
    const char *base_url = p->base_url ? p->base_url : "";
    const sl_dialect_t *d = sl_dialect_get (p->dialect);
    sl_buf_t why = { 0 };
    int fields = d ? sl_providers_fields (p, &why) : -1;
    sl_buf_free (&why);
    if (!sl_name_valid (p->name) || !d || fields
    ||  (*base_url && !sl_providers_url_valid (base_url)) || !sl_providers_env_valid (key_env)
    ||  !sl_providers_env_valid (p->token_env ? p->token_env : "")
    ||  !sl_providers_env_valid (p->aws_access_key_id_env ? p->aws_access_key_id_env : "")
    ||  !sl_providers_env_valid (p->aws_secret_access_key_env ? p->aws_secret_access_key_env : "")
    ||  !sl_providers_env_valid (p->aws_session_token_env ? p->aws_session_token_env : "")
    ||  !s_valid_word (p->region) || !s_valid_word (p->project) || !s_valid_word (p->api_version)
    ||  sl_providers_find (self, sl_str (p->name)) || p->key_env_count > SL_PROVIDERS_KEYS_MAX)
        return -1;
    for (size_t k = 0; k < p->key_env_count; k++)
        if (!p->key_envs [k] || !*p->key_envs [k] || !sl_providers_env_valid (p->key_envs [k]))
            return -1;
    for (size_t i = 0; i < p->deployment_count; i++)
        if (!s_given (p->deployments [i].model) || !s_given (p->deployments [i].deployment)
        ||  !s_valid_word (p->deployments [i].deployment))
            return -1;
    self->providers = sl_xrealloc (self->providers, (self->provider_count + 1) * sizeof (sl_provider_t));
    sl_provider_t *copy = &self->providers [self->provider_count++];
    memset (copy, 0, sizeof *copy);
    copy->name = sl_xstrdup (p->name);
    copy->dialect = p->dialect;
    char *url = sl_xstrdup (base_url);
    size_t n = strlen (url);
    while (n > 8 && url [n - 1] == '/')
        url [--n] = 0;                  //  paths are appended with their own slash
    copy->base_url = url;
    copy->forward_auth = p->forward_auth;
    copy->region = s_dup (p->region);
    copy->project = s_dup (p->project);
    copy->credentials_file = s_dup (p->credentials_file);
    copy->api_version = s_dup (p->api_version);
    copy->token_env = s_dup (p->token_env);
    copy->aws_access_key_id_env = s_dup (p->aws_access_key_id_env);
    copy->aws_secret_access_key_env = s_dup (p->aws_secret_access_key_env);
    copy->aws_session_token_env = s_dup (p->aws_session_token_env);
    if (p->deployment_count) {
        sl_deployment_t *list = sl_xcalloc (p->deployment_count, sizeof *list);
        for (size_t i = 0; i < p->deployment_count; i++) {
            list [i].model = sl_xstrdup (p->deployments [i].model);
            list [i].deployment = sl_xstrdup (p->deployments [i].deployment);
        }
        copy->deployments = list;
        copy->deployment_count = p->deployment_count;
    }
    //  The keys' variables, in order: key_env alone when no list is given.
    size_t count = p->key_env_count ? p->key_env_count : *key_env ? 1 : 0;
    const char **keys = count ? sl_xcalloc (count, sizeof *keys) : NULL;
    for (size_t k = 0; k < count; k++)
        keys [k] = sl_xstrdup (p->key_env_count ? p->key_envs [k] : key_env);
    copy->key_envs = keys;
    copy->key_env_count = count;
    copy->key_env = count ? keys [0] : sl_xstrdup ("");
    return 0;
}

int
sl_providers_add_route_targets (sl_providers_t *self, const char *model, const sl_route_target_t *targets,
                                size_t count)
{
    if (!model || !*model || count == 0 || count > SL_ROUTE_TARGETS_MAX)
        return -1;
    bool weighted = targets [0].weight != SL_ROUTE_NO_WEIGHT;
    for (size_t i = 0; i < count; i++) {
        const sl_route_target_t *t = &targets [i];
        if (!t->provider || !sl_providers_find (self, sl_str (t->provider)) || (t->model && !*t->model)
        ||  (t->weight != SL_ROUTE_NO_WEIGHT) != weighted
        ||  (weighted && (t->weight < 0 || t->weight > SL_ROUTE_WEIGHT_MAX)))
            return -1;
        for (size_t j = 0; j < i; j++)
            if (strcmp (targets [j].provider, t->provider) == 0)
                return -1;
    }
    self->routes = sl_xrealloc (self->routes, (self->route_count + 1) * sizeof (sl_route_t));
    sl_route_t *r = &self->routes [self->route_count++];
    sl_route_target_t *copy = sl_xcalloc (count, sizeof *copy);
    for (size_t i = 0; i < count; i++) {
        copy [i].provider = sl_xstrdup (targets [i].provider);
        copy [i].model = targets [i].model ? sl_xstrdup (targets [i].model) : NULL;
        copy [i].weight = targets [i].weight;
    }
    r->model = sl_xstrdup (model);
    r->targets = copy;
    r->target_count = count;
    r->provider = copy [0].provider;
    return 0;
}

int
sl_providers_add_route (sl_providers_t *self, const char *model, const char *provider)
{
    const sl_route_target_t target = { provider, NULL, SL_ROUTE_NO_WEIGHT };
    return sl_providers_add_route_targets (self, model, &target, 1);
}

sl_providers_t *
sl_providers_new_default (const char *const *base_urls)
{
    sl_providers_t *self = sl_providers_new ();
    size_t count = sl_dialect_count ();
    //  Each vendor's dialects together, vendors in the order of their
    //  first dialect.
    for (size_t v = 0; v < count && self; v++) {
        //  A cloud's dialect has no built-in provider: its region, project
        //  or resource are the routes file's to say.
        if (!sl_dialect_is_client (sl_dialect_at (v)) || !sl_dialect_vendor_first (sl_dialect_at (v)))
            continue;
        const char *vendor = sl_dialect_vendor (sl_dialect_at (v));
        for (size_t i = v; i < count && self; i++) {
            const sl_dialect_t *d = sl_dialect_at (i);
            if (!sl_dialect_is_client (d) || strcmp (sl_dialect_vendor (d), vendor) != 0)
                continue;
            char key_env [SL_DIALECT_OPTION_MAX];
            sl_dialect_option (d, SL_DIALECT_KEY_VARIABLE, key_env);
            const char *base_url = base_urls && base_urls [d->id] ? base_urls [d->id] : d->base_url;
            const sl_provider_t p = { .name = d->name, .dialect = d->id, .base_url = base_url,
                                      .key_env = key_env, .forward_auth = true };
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

//  The route a client of dialect is sent to for model: among the routes
//  whose glob matches, the first whose (first) provider speaks the
//  client's dialect, else the first; NULL when none matches.
static const sl_route_t *
s_route (sl_providers_t *self, sl_str_t model, int client_dialect)
{
    char name [SL_PROVIDERS_MODEL_MAX];
    const sl_route_t *first = NULL;
    if (model.ptr && model.len < sizeof name && !memchr (model.ptr, 0, model.len)) {
        memcpy (name, model.ptr, model.len);
        name [model.len] = 0;
        for (size_t i = 0; i < self->route_count; i++) {
            const sl_provider_t *p = sl_providers_find (self, sl_str (self->routes [i].provider));
            if (!p || fnmatch (self->routes [i].model, name, 0) != 0)
                continue;
            if (sl_dialect_same_format (p->dialect, client_dialect))
                return &self->routes [i];
            if (!first)
                first = &self->routes [i];
        }
    }
    return first;
}

const sl_provider_t *
sl_providers_pick (sl_providers_t *self, sl_str_t model, int client_dialect)
{
    const sl_route_t *route = s_route (self, model, client_dialect);
    if (route)
        return sl_providers_find (self, sl_str (route->provider));
    const sl_provider_t *own = sl_providers_match (self, SL_STR_NULL, client_dialect);
    return own ? own : sl_providers_provider (self, 0);
}

//  The next number of a small generator (splitmix32): the draws of one plan
//  from the caller's one number.
static uint32_t
s_next_draw (uint32_t *state)
{
    uint32_t z = (*state += 0x9e3779b9u);
    z = (z ^ (z >> 16)) * 0x85ebca6bu;
    z = (z ^ (z >> 13)) * 0xc2b2ae35u;
    return z ^ (z >> 16);
}

size_t
sl_providers_plan (sl_providers_t *self, sl_str_t model, int client_dialect, uint32_t draw,
                   sl_plan_entry_t *out, size_t room)
{
    if (room == 0)
        return 0;
    const sl_route_t *route = s_route (self, model, client_dialect);
    if (!route) {
        const sl_provider_t *p = sl_providers_pick (self, model, client_dialect);
        if (!p)
            return 0;
        out [0] = (sl_plan_entry_t) { p, model };
        return 1;
    }
    //  The targets in the order to try them: as written, or drawn by weight
    //  (the standbys of weight 0 last, as written).
    size_t order [SL_ROUTE_TARGETS_MAX];
    size_t count = route->target_count;
    for (size_t i = 0; i < count; i++)
        order [i] = i;
    if (route->targets [0].weight != SL_ROUTE_NO_WEIGHT) {
        uint32_t state = draw;
        for (size_t at = 0; at < count; at++) {
            uint64_t total = 0;
            for (size_t i = at; i < count; i++)
                total += (uint64_t) route->targets [order [i]].weight;
            if (total == 0)
                break;                  //  only standbys left: as written
            uint64_t pick = s_next_draw (&state) % total;
            size_t chosen = at;
            for (size_t i = at; i < count; i++) {
                uint64_t w = (uint64_t) route->targets [order [i]].weight;
                if (pick < w) {
                    chosen = i;
                    break;
                }
                pick -= w;
            }
            //  The chosen one moves up; the rest keep their written order.
            size_t keep = order [chosen];
            memmove (&order [at + 1], &order [at], (chosen - at) * sizeof order [0]);
            order [at] = keep;
        }
    }
    size_t n = 0;
    for (size_t i = 0; i < count && n < room; i++) {
        const sl_route_target_t *t = &route->targets [order [i]];
        const sl_provider_t *p = sl_providers_find (self, sl_str (t->provider));
        if (p)
            out [n++] = (sl_plan_entry_t) { p, t->model ? sl_str (t->model) : model };
    }
    return n;
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
