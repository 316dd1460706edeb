/*  sl_providers.c - providers and model routes (see sl_providers.h). */
#include "common/dialects/sl_providers.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/base/sl_name.h"
#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/dialects/sl_dialect.h"
#include "common/mcp/sl_mcp_rpc.h"

#define SL_PROVIDERS_FILE_MAX (1u << 20)   //  a routes file larger than this is refused
#define SL_PROVIDERS_MODEL_MAX 512         //  longer model names match no glob
#define SL_MCP_NAME_MAX 64                 //  longest MCP server name
#define SL_MCP_TIMEOUT_MS_MAX 3600000L     //  a server's deadline: an hour at most
#define SL_MCP_RESPONSE_MIN 1024u          //  the bound of a server's answer: 1 KiB ...
#define SL_MCP_RESPONSE_MAX (1u << 30)     //  ... to 1 GiB
#define SL_MCP_REVISION_DEFAULT "2025-11-25"

struct _sl_routes_t {
    sl_provider_t *providers;           //  strings owned
    size_t provider_count;
    sl_route_t *routes;                 //  strings owned
    size_t route_count;
    sl_price_t *prices;                 //  model strings owned, in the file's order
    size_t price_count;
    sl_mcp_server_t *mcp;               //  strings and team lists owned, in the file's order
    size_t mcp_count;
    bool mcp_multiplexed;
    long mcp_timeout_ms;
    size_t mcp_max_response;
};

sl_providers_t *
sl_providers_new (void)
{
    sl_providers_t *self = sl_xcalloc (1, sizeof (sl_providers_t));
    self->mcp_timeout_ms = SL_MCP_TIMEOUT_MS_DEFAULT;
    self->mcp_max_response = SL_MCP_MAX_RESPONSE_DEFAULT;
    return self;
}

static void
s_mcp_server_free (sl_mcp_server_t *server)
{
    free ((char *) server->name);
    free ((char *) server->url);
    free ((char *) server->key_env);
    free ((char *) server->header);
    free ((char *) server->scheme);
    free ((char *) server->revision);
    for (size_t i = 0; server->teams && server->teams [i]; i++)
        free ((char *) server->teams [i]);
    free ((void *) server->teams);
}

static void
s_provider_free (sl_provider_t *p)
{
    free ((char *) p->name);
    free ((char *) p->base_url);
    free ((char *) p->key_env);
    free ((char *) p->region);
    free ((char *) p->project);
    free ((char *) p->credentials_file);
    free ((char *) p->api_version);
    free ((char *) p->token_env);
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
        free ((char *) self->routes [i].model);
        free ((char *) self->routes [i].provider);
    }
    for (size_t i = 0; i < self->price_count; i++)
        free ((char *) self->prices [i].model);
    for (size_t i = 0; i < self->mcp_count; i++)
        s_mcp_server_free (&self->mcp [i]);
    free (self->mcp);
    free (self->providers);
    free (self->routes);
    free (self->prices);
    free (self);
    *self_p = NULL;
}

static bool
s_valid_env (const char *s)
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

static bool
s_valid_url (const char *s)
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
         | (s_given (p->token_env) ? SL_PROVIDER_FIELD_TOKEN_ENV : 0);
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
    if (s_given (p->key_env) && s_given (p->token_env)) {
        sl_buf_puts (why, "a provider takes key_env or token_env, not both");
        return -1;
    }
    return 0;
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
    ||  (*base_url && !s_valid_url (base_url)) || !s_valid_env (key_env)
    ||  !s_valid_env (p->token_env ? p->token_env : "")
    ||  !s_valid_word (p->region) || !s_valid_word (p->project) || !s_valid_word (p->api_version)
    ||  sl_providers_find (self, sl_str (p->name)))
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
    copy->key_env = sl_xstrdup (key_env);
    copy->forward_auth = p->forward_auth;
    copy->region = s_dup (p->region);
    copy->project = s_dup (p->project);
    copy->credentials_file = s_dup (p->credentials_file);
    copy->api_version = s_dup (p->api_version);
    copy->token_env = s_dup (p->token_env);
    if (p->deployment_count) {
        sl_deployment_t *list = sl_xcalloc (p->deployment_count, sizeof *list);
        for (size_t i = 0; i < p->deployment_count; i++) {
            list [i].model = sl_xstrdup (p->deployments [i].model);
            list [i].deployment = sl_xstrdup (p->deployments [i].deployment);
        }
        copy->deployments = list;
        copy->deployment_count = p->deployment_count;
    }
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
            if (sl_dialect_same_format (p->dialect, client_dialect))
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

//  --------------------------------------------------------------------------
//  The routes file

typedef struct {
    const char *name;
    char **error;
    yaml_document_t *doc;
} s_ctx_t;

static int
s_error_at (s_ctx_t *ctx, yaml_node_t *node, const char *format, ...)
{
    if (*ctx->error)
        return -1;                      //  keep the first error
    sl_buf_t buf = { 0 };
    sl_buf_printf (&buf, "%s:%zu:%zu: ", ctx->name,
                   node ? node->start_mark.line + 1 : 1, node ? node->start_mark.column + 1 : 1);
    va_list args;
    va_start (args, format);
    sl_buf_vprintf (&buf, format, args);
    va_end (args);
    *ctx->error = sl_xstrdup (sl_buf_cstr (&buf));
    sl_buf_free (&buf);
    return -1;
}

static const char *
s_scalar (yaml_node_t *node)
{
    return node && node->type == YAML_SCALAR_NODE ? (const char *) node->data.scalar.value : NULL;
}

//  Call fn for every key / value of a mapping node.
typedef int (s_member_fn) (s_ctx_t *ctx, const char *key, yaml_node_t *knode, yaml_node_t *value, void *arg);

static int
s_mapping (s_ctx_t *ctx, yaml_node_t *node, const char *what, s_member_fn *fn, void *arg)
{
    if (!node || node->type != YAML_MAPPING_NODE)
        return s_error_at (ctx, node, "%s must be a mapping", what);
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node (ctx->doc, p->key);
        yaml_node_t *v = yaml_document_get_node (ctx->doc, p->value);
        const char *key = s_scalar (k);
        if (!key)
            return s_error_at (ctx, k, "keys must be plain names");
        if (fn (ctx, key, k, v, arg))
            return -1;
    }
    return 0;
}

typedef struct {
    sl_provider_t p;
    yaml_node_t *node;
} s_provider_spec_t;

static int
s_provider_member (s_ctx_t *ctx, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_provider_spec_t *spec = arg;
    const char *value = s_scalar (v);
    if (!value)
        return s_error_at (ctx, v, "%s must be a scalar", key);
    if (strcmp (key, "name") == 0) {
        if (!sl_name_valid (value))
            return s_error_at (ctx, v, "provider name '%s' must be letters, digits, '.', '_' or '-'", value);
        spec->p.name = value;
    }
    else
    if (strcmp (key, "dialect") == 0) {
        spec->p.dialect = sl_dialect_parse (value);
        if (!spec->p.dialect) {
            sl_buf_t names = { 0 };
            sl_dialect_names (", ", ", ", NULL, &names);
            s_error_at (ctx, v, "unknown dialect '%s' (%s)", value, sl_buf_cstr (&names));
            sl_buf_free (&names);
            return -1;
        }
    }
    else
    if (strcmp (key, "base_url") == 0) {
        if (!s_valid_url (value))
            return s_error_at (ctx, v, "base_url must be an http:// or https:// URL");
        spec->p.base_url = value;
    }
    else
    if (strcmp (key, "key_env") == 0) {
        if (!s_valid_env (value))
            return s_error_at (ctx, v, "key_env names an environment variable (the key itself "
                                       "never goes in this file)");
        spec->p.key_env = value;
    }
    else
    if (strcmp (key, "forward_client_auth") == 0) {
        if (strcmp (value, "true") == 0)
            spec->p.forward_auth = true;
        else
        if (strcmp (value, "false") == 0)
            spec->p.forward_auth = false;
        else
            return s_error_at (ctx, v, "forward_client_auth must be true or false");
    }
    else
        return s_error_at (ctx, knode, "unknown provider field '%s'", key);
    return 0;
}

typedef struct {
    const char *model;
    const char *provider;
    yaml_node_t *provider_node;
} s_route_spec_t;

static int
s_route_member (s_ctx_t *ctx, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_route_spec_t *spec = arg;
    const char *value = s_scalar (v);
    if (!value || !*value)
        return s_error_at (ctx, v, "%s must be a non-empty scalar", key);
    if (strcmp (key, "model") == 0)
        spec->model = value;
    else
    if (strcmp (key, "provider") == 0) {
        spec->provider = value;
        spec->provider_node = v;
    }
    else
        return s_error_at (ctx, knode, "unknown route field '%s'", key);
    return 0;
}

static int
s_providers (s_ctx_t *ctx, yaml_node_t *list, sl_providers_t *self)
{
    if (list->type != YAML_SEQUENCE_NODE)
        return s_error_at (ctx, list, "providers must be a list");
    for (yaml_node_item_t *i = list->data.sequence.items.start; i < list->data.sequence.items.top; i++) {
        yaml_node_t *item = yaml_document_get_node (ctx->doc, *i);
        s_provider_spec_t spec = { .p = { .key_env = "", .forward_auth = true }, .node = item };
        if (s_mapping (ctx, item, "a provider", s_provider_member, &spec))
            return -1;
        if (!spec.p.name || !spec.p.dialect || !spec.p.base_url)
            return s_error_at (ctx, item, "a provider needs name, dialect and base_url");
        if (sl_providers_add_provider (self, &spec.p))
            return s_error_at (ctx, item, "provider '%s' is defined twice", spec.p.name);
    }
    return 0;
}

static int
s_routes (s_ctx_t *ctx, yaml_node_t *list, sl_providers_t *self)
{
    if (list->type != YAML_SEQUENCE_NODE)
        return s_error_at (ctx, list, "routes must be a list");
    for (yaml_node_item_t *i = list->data.sequence.items.start; i < list->data.sequence.items.top; i++) {
        yaml_node_t *item = yaml_document_get_node (ctx->doc, *i);
        s_route_spec_t spec = { 0 };
        if (s_mapping (ctx, item, "a route", s_route_member, &spec))
            return -1;
        if (!spec.model || !spec.provider)
            return s_error_at (ctx, item, "a route needs model and provider");
        if (sl_providers_add_route (self, spec.model, spec.provider))
            return s_error_at (ctx, spec.provider_node, "route names unknown provider '%s'", spec.provider);
    }
    return 0;
}

typedef struct {
    sl_price_t price;
    bool has_input, has_output;
} s_price_spec_t;

//  A price: a plain decimal number of dollars, not negative.
static int
s_dollars (s_ctx_t *ctx, yaml_node_t *v, const char *key, double *out)
{
    const char *value = s_scalar (v);
    char *end = NULL;
    errno = 0;
    double d = value && *value ? strtod (value, &end) : NAN;
    if (!value || !*value || !end || *end || errno || !isfinite (d) || d < 0)
        return s_error_at (ctx, v, "%s must be a number of US dollars per million tokens, 0 or more", key);
    *out = d;
    return 0;
}

static int
s_price_member (s_ctx_t *ctx, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_price_spec_t *spec = arg;
    if (strcmp (key, "model") == 0) {
        const char *value = s_scalar (v);
        if (!value || !*value)
            return s_error_at (ctx, v, "model must be a non-empty scalar");
        spec->price.model = value;
        return 0;
    }
    if (strcmp (key, "input") == 0) {
        spec->has_input = true;
        return s_dollars (ctx, v, key, &spec->price.input_per_m);
    }
    if (strcmp (key, "output") == 0) {
        spec->has_output = true;
        return s_dollars (ctx, v, key, &spec->price.output_per_m);
    }
    return s_error_at (ctx, knode, "unknown price field '%s' (model, input, output)", key);
}

static int
s_prices (s_ctx_t *ctx, yaml_node_t *list, sl_providers_t *self)
{
    if (list->type != YAML_SEQUENCE_NODE)
        return s_error_at (ctx, list, "prices must be a list");
    for (yaml_node_item_t *i = list->data.sequence.items.start; i < list->data.sequence.items.top; i++) {
        yaml_node_t *item = yaml_document_get_node (ctx->doc, *i);
        s_price_spec_t spec = { 0 };
        if (s_mapping (ctx, item, "a price", s_price_member, &spec))
            return -1;
        if (!spec.price.model || !spec.has_input || !spec.has_output)
            return s_error_at (ctx, item, "a price needs model, input and output");
        if (sl_providers_add_price (self, &spec.price))
            return s_error_at (ctx, item, "model '%s' has a price twice", spec.price.model);
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  MCP servers (the mcp: section)

size_t
sl_providers_mcp_count (const sl_providers_t *self)
{
    return self->mcp_count;
}

const sl_mcp_server_t *
sl_providers_mcp_server (const sl_providers_t *self, size_t i)
{
    return i < self->mcp_count ? &self->mcp [i] : NULL;
}

const sl_mcp_server_t *
sl_providers_mcp_find (const sl_providers_t *self, sl_str_t name)
{
    for (size_t i = 0; i < self->mcp_count; i++)
        if (sl_str_eq (name, self->mcp [i].name))
            return &self->mcp [i];
    return NULL;
}

bool
sl_providers_mcp_multiplexed (const sl_providers_t *self)
{
    return self->mcp_multiplexed;
}

long
sl_providers_mcp_timeout_ms (const sl_providers_t *self)
{
    return self->mcp_timeout_ms;
}

size_t
sl_providers_mcp_max_response (const sl_providers_t *self)
{
    return self->mcp_max_response;
}

bool
sl_mcp_server_allows (const sl_mcp_server_t *server, sl_str_t team)
{
    if (!server->teams)
        return true;
    for (size_t i = 0; server->teams [i]; i++)
        if (sl_str_eq (team, server->teams [i]))
            return true;
    return false;                       //  no team, or another: not this server
}

//  An MCP server's name: [A-Za-z0-9_-]{1,64}, and without "__" or an
//  underscore at either end, so that mcp__<server>__<tool> and the
//  multiplexed <server>__<tool> split back into the same server.
static bool
s_mcp_name_valid (const char *s)
{
    size_t n = strlen (s);
    if (n == 0 || n > SL_MCP_NAME_MAX || s [0] == '_' || s [n - 1] == '_' || strstr (s, "__"))
        return false;
    for (; *s; s++)
        if (!isalnum ((unsigned char) *s) && *s != '_' && *s != '-')
            return false;
    return true;
}

//  An HTTP header name: one or more token characters (RFC 9110).
static bool
s_header_name_valid (const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isalnum ((unsigned char) *s) && !strchr ("!#$%&'*+-.^_`|~", *s))
            return false;
    return true;
}

//  A header value's prefix: no control characters (no header injection).
static bool
s_header_value_valid (const char *s)
{
    for (; *s; s++)
        if ((unsigned char) *s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

//  A whole number in [min, max].
static int
s_number (s_ctx_t *ctx, yaml_node_t *v, const char *key, long min, long max, long *out)
{
    const char *value = s_scalar (v);
    char *end = NULL;
    errno = 0;
    long n = value && *value ? strtol (value, &end, 10) : 0;
    if (!value || !*value || !end || *end || errno || n < min || n > max)
        return s_error_at (ctx, v, "%s must be a whole number from %ld to %ld", key, min, max);
    *out = n;
    return 0;
}

typedef struct {
    sl_mcp_server_t s;
    yaml_node_t *teams;
} s_mcp_spec_t;

static int
s_mcp_server_member (s_ctx_t *ctx, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_mcp_spec_t *spec = arg;
    if (strcmp (key, "teams") == 0) {
        if (v->type != YAML_SEQUENCE_NODE || v->data.sequence.items.start == v->data.sequence.items.top)
            return s_error_at (ctx, v, "teams must be a list of team names (leave it out for every team)");
        spec->teams = v;
        return 0;
    }
    const char *value = s_scalar (v);
    if (!value)
        return s_error_at (ctx, v, "%s must be a scalar", key);
    if (strcmp (key, "name") == 0) {
        if (!s_mcp_name_valid (value))
            return s_error_at (ctx, v, "MCP server name '%s' must be 1 to %d letters, digits, '_' or '-', "
                                       "without '__' or '_' at either end", value, SL_MCP_NAME_MAX);
        spec->s.name = value;
    }
    else
    if (strcmp (key, "url") == 0) {
        if (!s_valid_url (value))
            return s_error_at (ctx, v, "url must be an http:// or https:// URL");
        spec->s.url = value;
    }
    else
    if (strcmp (key, "key_env") == 0) {
        if (!s_valid_env (value))
            return s_error_at (ctx, v, "key_env names an environment variable (the credential itself "
                                       "never goes in this file)");
        spec->s.key_env = value;
    }
    else
    if (strcmp (key, "header") == 0) {
        if (!s_header_name_valid (value))
            return s_error_at (ctx, v, "header must be an HTTP header name");
        spec->s.header = value;
    }
    else
    if (strcmp (key, "scheme") == 0) {
        if (!s_header_value_valid (value))
            return s_error_at (ctx, v, "scheme must not hold control characters");
        spec->s.scheme = value;
    }
    else
    if (strcmp (key, "revision") == 0) {
        if (sl_mcp_rev_parse (sl_str (value)) == SL_MCP_REV_UNKNOWN)
            return s_error_at (ctx, v, "revision must be 2025-06-18, 2025-11-25 or 2026-07-28");
        spec->s.revision = value;
    }
    else
        return s_error_at (ctx, knode, "unknown MCP server field '%s' (name, url, key_env, header, scheme, "
                                       "revision, teams)", key);
    return 0;
}

//  Add one server, copied with its teams.
static int
s_mcp_add (s_ctx_t *ctx, sl_providers_t *self, s_mcp_spec_t *spec, yaml_node_t *item)
{
    if (!spec->s.name || !spec->s.url)
        return s_error_at (ctx, item, "an MCP server needs name and url");
    if (sl_providers_mcp_find (self, sl_str (spec->s.name)))
        return s_error_at (ctx, item, "MCP server '%s' is defined twice", spec->s.name);
    size_t teams = 0;
    if (spec->teams)
        for (yaml_node_item_t *i = spec->teams->data.sequence.items.start; i < spec->teams->data.sequence.items.top; i++) {
            yaml_node_t *t = yaml_document_get_node (ctx->doc, *i);
            const char *team = s_scalar (t);
            if (!team || !*team)
                return s_error_at (ctx, t, "a team is a non-empty name");
            teams++;
        }
    self->mcp = sl_xrealloc (self->mcp, (self->mcp_count + 1) * sizeof (sl_mcp_server_t));
    sl_mcp_server_t *copy = &self->mcp [self->mcp_count++];
    copy->name = sl_xstrdup (spec->s.name);
    copy->url = sl_xstrdup (spec->s.url);
    copy->key_env = sl_xstrdup (spec->s.key_env ? spec->s.key_env : "");
    copy->header = sl_xstrdup (spec->s.header ? spec->s.header : "Authorization");
    copy->scheme = sl_xstrdup (spec->s.scheme ? spec->s.scheme : "Bearer ");
    copy->revision = sl_xstrdup (spec->s.revision ? spec->s.revision : SL_MCP_REVISION_DEFAULT);
    copy->teams = NULL;
    if (spec->teams) {
        const char **list = sl_xcalloc (teams + 1, sizeof *list);
        size_t k = 0;
        for (yaml_node_item_t *i = spec->teams->data.sequence.items.start; i < spec->teams->data.sequence.items.top; i++)
            list [k++] = sl_xstrdup (s_scalar (yaml_document_get_node (ctx->doc, *i)));
        copy->teams = list;
    }
    return 0;
}

static int
s_mcp_servers (s_ctx_t *ctx, yaml_node_t *list, sl_providers_t *self)
{
    if (list->type != YAML_SEQUENCE_NODE)
        return s_error_at (ctx, list, "servers must be a list");
    for (yaml_node_item_t *i = list->data.sequence.items.start; i < list->data.sequence.items.top; i++) {
        yaml_node_t *item = yaml_document_get_node (ctx->doc, *i);
        s_mcp_spec_t spec = { { 0 }, NULL };
        if (s_mapping (ctx, item, "an MCP server", s_mcp_server_member, &spec)
        ||  s_mcp_add (ctx, self, &spec, item))
            return -1;
    }
    return 0;
}

typedef struct {
    sl_providers_t *self;
    yaml_node_t *servers;
} s_mcp_section_t;

static int
s_mcp_member (s_ctx_t *ctx, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_mcp_section_t *section = arg;
    long n;
    if (strcmp (key, "servers") == 0)
        section->servers = v;
    else
    if (strcmp (key, "multiplexed") == 0) {
        const char *value = s_scalar (v);
        if (value && strcmp (value, "true") == 0)
            section->self->mcp_multiplexed = true;
        else
        if (value && strcmp (value, "false") == 0)
            section->self->mcp_multiplexed = false;
        else
            return s_error_at (ctx, v, "multiplexed must be true or false");
    }
    else
    if (strcmp (key, "timeout_ms") == 0) {
        if (s_number (ctx, v, key, 1, SL_MCP_TIMEOUT_MS_MAX, &n))
            return -1;
        section->self->mcp_timeout_ms = n;
    }
    else
    if (strcmp (key, "max_response_bytes") == 0) {
        if (s_number (ctx, v, key, SL_MCP_RESPONSE_MIN, SL_MCP_RESPONSE_MAX, &n))
            return -1;
        section->self->mcp_max_response = (size_t) n;
    }
    else
        return s_error_at (ctx, knode, "unknown mcp field '%s' (multiplexed, timeout_ms, max_response_bytes, "
                                       "servers)", key);
    return 0;
}

static int
s_mcp (s_ctx_t *ctx, yaml_node_t *node, sl_providers_t *self)
{
    s_mcp_section_t section = { self, NULL };
    if (s_mapping (ctx, node, "mcp", s_mcp_member, &section))
        return -1;
    if (!section.servers)
        return s_error_at (ctx, node, "mcp needs a servers list");
    return s_mcp_servers (ctx, section.servers, self);
}

typedef struct {
    yaml_node_t *providers;
    yaml_node_t *routes;
    yaml_node_t *prices;
    yaml_node_t *mcp;
} s_root_t;

static int
s_root_member (s_ctx_t *ctx, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_root_t *root = arg;
    if (strcmp (key, "version") == 0) {
        const char *value = s_scalar (v);
        if (!value || strcmp (value, "1") != 0)
            return s_error_at (ctx, v, "this sluice reads routes version 1");
    }
    else
    if (strcmp (key, "providers") == 0)
        root->providers = v;
    else
    if (strcmp (key, "routes") == 0)
        root->routes = v;
    else
    if (strcmp (key, "prices") == 0)
        root->prices = v;
    else
    if (strcmp (key, "mcp") == 0)
        root->mcp = v;
    else
        return s_error_at (ctx, knode, "unknown field '%s' (version, providers, routes, prices, mcp)", key);
    return 0;
}

sl_providers_t *
sl_providers_parse (const char *text, size_t size, const char *name, char **error)
{
    *error = NULL;
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize (&parser);
    yaml_parser_set_input_string (&parser, (const unsigned char *) text, size);
    if (!yaml_parser_load (&parser, &doc)) {
        sl_buf_t buf = { 0 };
        sl_buf_printf (&buf, "%s:%zu:%zu: %s", name, parser.problem_mark.line + 1,
                       parser.problem_mark.column + 1, parser.problem ? parser.problem : "malformed YAML");
        *error = sl_xstrdup (sl_buf_cstr (&buf));
        sl_buf_free (&buf);
        yaml_parser_delete (&parser);
        return NULL;
    }
    sl_providers_t *self = sl_providers_new ();
    s_ctx_t ctx = { name, error, &doc };
    s_root_t root = { 0 };
    yaml_node_t *top = yaml_document_get_root_node (&doc);
    //  Providers first, wherever they are in the file: routes name them.
    int rc = top ? s_mapping (&ctx, top, "the routes file", s_root_member, &root)
                 : s_error_at (&ctx, NULL, "the routes file is empty");
    if (rc == 0 && !root.providers)
        rc = s_error_at (&ctx, top, "the routes file needs a providers list");
    if (rc == 0)
        rc = s_providers (&ctx, root.providers, self);
    if (rc == 0 && root.routes)
        rc = s_routes (&ctx, root.routes, self);
    if (rc == 0 && root.prices)
        rc = s_prices (&ctx, root.prices, self);
    if (rc == 0 && root.mcp)
        rc = s_mcp (&ctx, root.mcp, self);
    yaml_document_delete (&doc);
    yaml_parser_delete (&parser);
    if (rc)
        sl_providers_destroy (&self);
    return self;
}

sl_providers_t *
sl_providers_load (const char *path, char **error)
{
    *error = NULL;
    FILE *f = fopen (path, "rb");
    sl_buf_t text = { 0 };
    if (f) {
        char chunk [8192];
        size_t n;
        while ((n = fread (chunk, 1, sizeof chunk, f)) > 0 && text.len <= SL_PROVIDERS_FILE_MAX)
            sl_buf_append (&text, chunk, n);
        fclose (f);
    }
    sl_buf_t msg = { 0 };
    if (!f)
        sl_buf_printf (&msg, "%s:1:1: cannot open: %s", path, strerror (errno));
    else
    if (text.len > SL_PROVIDERS_FILE_MAX)
        sl_buf_printf (&msg, "%s:1:1: larger than %u bytes", path, SL_PROVIDERS_FILE_MAX);
    if (msg.len) {
        *error = sl_xstrdup (sl_buf_cstr (&msg));
        sl_buf_free (&msg);
        sl_buf_free (&text);
        return NULL;
    }
    sl_providers_t *self = sl_providers_parse (text.data ? text.data : "", text.len, path, error);
    sl_buf_free (&text);
    return self;
}
