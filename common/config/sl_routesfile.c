/*  sl_routesfile.c - the routes file's loader (see sl_routesfile.h). */
#include "common/config/sl_routesfile.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_name.h"
#include "common/dialects/sl_dialect.h"
#include "common/mcp/sl_mcp_rpc.h"

typedef struct {
    const char *name;
    char **error;
    yaml_document_t *doc;
    sl_providers_t *providers;          //  what the file fills
    sl_mcp_servers_t *mcp;
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

//  true or false.
static int
s_bool (s_ctx_t *ctx, yaml_node_t *v, const char *key, bool *out)
{
    const char *value = s_scalar (v);
    if (value && strcmp (value, "true") == 0)
        *out = true;
    else
    if (value && strcmp (value, "false") == 0)
        *out = false;
    else
        return s_error_at (ctx, v, "%s must be true or false", key);
    return 0;
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

//  --------------------------------------------------------------------------
//  Providers: a table of their fields

//  What a provider's fields are read into: the provider, and what it
//  points to that the loader holds until it is added.
typedef struct {
    sl_provider_t p;
    const char *key_envs [SL_PROVIDERS_KEYS_MAX];
    bool has_key_env;
    sl_deployment_t deployments [SL_ROUTESFILE_DEPLOYMENTS_MAX];
} s_provider_spec_t;

//  Read one field's value into the provider: value is the scalar's text,
//  or NULL for a list or a mapping (fields of the table's S_SCALAR kind
//  are only ever given scalars).
typedef int (s_field_fn) (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec);

static int
s_provider_name (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec)
{
    sl_provider_t *p = &spec->p;
    if (!sl_name_valid (value))
        return s_error_at (ctx, v, "provider name '%s' must be letters, digits, '.', '_' or '-'", value);
    p->name = value;
    return 0;
}

static int
s_provider_dialect (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec)
{
    sl_provider_t *p = &spec->p;
    p->dialect = sl_dialect_parse (value);
    if (p->dialect)
        return 0;
    sl_buf_t names = { 0 };
    sl_dialect_names (", ", ", ", NULL, &names);
    s_error_at (ctx, v, "unknown dialect '%s' (%s)", value, sl_buf_cstr (&names));
    sl_buf_free (&names);
    return -1;
}

static int
s_provider_base_url (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec)
{
    sl_provider_t *p = &spec->p;
    if (!sl_providers_url_valid (value))
        return s_error_at (ctx, v, "base_url must be an http:// or https:// URL");
    p->base_url = value;
    return 0;
}

static int
s_provider_key_env (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec)
{
    sl_provider_t *p = &spec->p;
    if (!sl_providers_env_valid (value))
        return s_error_at (ctx, v, "key_env names an environment variable (the key itself "
                                   "never goes in this file)");
    if (p->key_env_count)
        return s_error_at (ctx, v, "key_env and key_envs: one or the other");
    p->key_env = value;
    spec->has_key_env = true;
    return 0;
}

//  key_envs: [K1, K2]: several keys, used in turn (the ingest's).
static int
s_provider_key_envs (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec)
{
    (void) value;
    yaml_node_item_t *start = v->type == YAML_SEQUENCE_NODE ? v->data.sequence.items.start : NULL;
    yaml_node_item_t *top = start ? v->data.sequence.items.top : NULL;
    if (!start || start == top || top - start > SL_PROVIDERS_KEYS_MAX)
        return s_error_at (ctx, v, "key_envs must be a list of 1 to %d environment variables' names",
                           SL_PROVIDERS_KEYS_MAX);
    if (spec->has_key_env)
        return s_error_at (ctx, v, "key_env and key_envs: one or the other");
    size_t n = 0;
    for (yaml_node_item_t *i = start; i < top; i++) {
        yaml_node_t *item = yaml_document_get_node (ctx->doc, *i);
        const char *name = s_scalar (item);
        if (!name || !*name || !sl_providers_env_valid (name))
            return s_error_at (ctx, item, "key_envs names environment variables (the keys themselves "
                                          "never go in this file)");
        for (size_t k = 0; k < n; k++)
            if (strcmp (spec->key_envs [k], name) == 0)
                return s_error_at (ctx, item, "key_envs names '%s' twice", name);
        spec->key_envs [n++] = name;
    }
    spec->p.key_envs = spec->key_envs;
    spec->p.key_env_count = n;
    return 0;
}

static int
s_provider_forward_auth (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec)
{
    sl_provider_t *p = &spec->p;
    (void) value;
    return s_bool (ctx, v, "forward_client_auth", &p->forward_auth);
}

//  A cloud's region, project, API version or credentials file: a word
//  that goes into a host name or a path (the file: a path).
static int
s_provider_word (s_ctx_t *ctx, yaml_node_t *v, const char *key, const char *value, const char **out)
{
    if (!*value || strpbrk (value, " \t\r\n?#%"))
        return s_error_at (ctx, v, "%s must be a plain word", key);
    *out = value;
    return 0;
}

static int
s_provider_region (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec)
{
    return s_provider_word (ctx, v, "region", value, &spec->p.region);
}

static int
s_provider_project (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec)
{
    return s_provider_word (ctx, v, "project", value, &spec->p.project);
}

static int
s_provider_credentials_file (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec)
{
    return s_provider_word (ctx, v, "credentials_file", value, &spec->p.credentials_file);
}

static int
s_provider_api_version (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec)
{
    return s_provider_word (ctx, v, "api_version", value, &spec->p.api_version);
}

static int
s_provider_token_env (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec)
{
    if (!*value || !sl_providers_env_valid (value))
        return s_error_at (ctx, v, "token_env names an environment variable (the token itself "
                                   "never goes in this file)");
    spec->p.token_env = value;
    return 0;
}

//  Bedrock's own AWS keys: the names of the variables holding them.
static int
s_provider_aws_env (s_ctx_t *ctx, yaml_node_t *v, const char *key, const char *value, const char **out)
{
    if (!*value || !sl_providers_env_valid (value))
        return s_error_at (ctx, v, "%s names an environment variable (the key itself never goes in this file)",
                           key);
    *out = value;
    return 0;
}

static int
s_provider_aws_key_env (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec)
{
    return s_provider_aws_env (ctx, v, "aws_access_key_id_env", value, &spec->p.aws_access_key_id_env);
}

static int
s_provider_aws_secret_env (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec)
{
    return s_provider_aws_env (ctx, v, "aws_secret_access_key_env", value, &spec->p.aws_secret_access_key_env);
}

static int
s_provider_aws_session_env (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec)
{
    return s_provider_aws_env (ctx, v, "aws_session_token_env", value, &spec->p.aws_session_token_env);
}

//  deployments: {model: deployment, ...} (Azure's).
static int
s_provider_deployments (s_ctx_t *ctx, yaml_node_t *v, const char *value, s_provider_spec_t *spec)
{
    (void) value;
    if (v->type != YAML_MAPPING_NODE)
        return s_error_at (ctx, v, "deployments must be a mapping of a model to its deployment");
    size_t n = 0;
    for (yaml_node_pair_t *pair = v->data.mapping.pairs.start; pair < v->data.mapping.pairs.top; pair++) {
        yaml_node_t *k = yaml_document_get_node (ctx->doc, pair->key);
        yaml_node_t *d = yaml_document_get_node (ctx->doc, pair->value);
        const char *model = s_scalar (k), *deployment = s_scalar (d);
        if (!model || !*model)
            return s_error_at (ctx, k, "a deployment's model must be a name");
        if (!deployment || !*deployment || strpbrk (deployment, "/?#% \t"))
            return s_error_at (ctx, d, "the deployment of '%s' must be a deployment's name", model);
        for (size_t i = 0; i < n; i++)
            if (strcmp (spec->deployments [i].model, model) == 0)
                return s_error_at (ctx, k, "model '%s' has two deployments", model);
        if (n == SL_ROUTESFILE_DEPLOYMENTS_MAX)
            return s_error_at (ctx, k, "more than %d deployments", SL_ROUTESFILE_DEPLOYMENTS_MAX);
        spec->deployments [n++] = (sl_deployment_t) { model, deployment };
    }
    spec->p.deployments = spec->deployments;
    spec->p.deployment_count = n;
    return 0;
}

//  What a field's value may be.
typedef enum {
    S_SCALAR,                           //  a scalar only
    S_ANY                               //  anything: the reader checks
} s_field_kind_t;

static const struct {
    const char *key;
    s_field_fn *read;
    s_field_kind_t kind;
} s_provider_fields [] = {
    { "name", s_provider_name, S_SCALAR },
    { "dialect", s_provider_dialect, S_SCALAR },
    { "base_url", s_provider_base_url, S_SCALAR },
    { "key_env", s_provider_key_env, S_SCALAR },
    { "key_envs", s_provider_key_envs, S_ANY },
    { "forward_client_auth", s_provider_forward_auth, S_SCALAR },
    { "region", s_provider_region, S_SCALAR },
    { "project", s_provider_project, S_SCALAR },
    { "credentials_file", s_provider_credentials_file, S_SCALAR },
    { "api_version", s_provider_api_version, S_SCALAR },
    { "token_env", s_provider_token_env, S_SCALAR },
    { "deployments", s_provider_deployments, S_ANY },
    { "aws_access_key_id_env", s_provider_aws_key_env, S_SCALAR },
    { "aws_secret_access_key_env", s_provider_aws_secret_env, S_SCALAR },
    { "aws_session_token_env", s_provider_aws_session_env, S_SCALAR },
};

static int
s_provider_member (s_ctx_t *ctx, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    const char *value = s_scalar (v);
    for (size_t i = 0; i < sizeof s_provider_fields / sizeof s_provider_fields [0]; i++) {
        if (strcmp (key, s_provider_fields [i].key) != 0)
            continue;
        if (!value && s_provider_fields [i].kind == S_SCALAR)
            return s_error_at (ctx, v, "%s must be a scalar", key);
        return s_provider_fields [i].read (ctx, v, value, arg);
    }
    return s_error_at (ctx, knode, "unknown provider field '%s'", key);
}

static int
s_providers (s_ctx_t *ctx, yaml_node_t *list)
{
    if (list->type != YAML_SEQUENCE_NODE)
        return s_error_at (ctx, list, "providers must be a list");
    for (yaml_node_item_t *i = list->data.sequence.items.start; i < list->data.sequence.items.top; i++) {
        yaml_node_t *item = yaml_document_get_node (ctx->doc, *i);
        s_provider_spec_t spec = { .p = { .key_env = "", .forward_auth = true } };
        if (s_mapping (ctx, item, "a provider", s_provider_member, &spec))
            return -1;
        const sl_provider_t *p = &spec.p;
        if (!p->name || !p->dialect || (!p->base_url && sl_dialect_is_client (sl_dialect_get (p->dialect))))
            return s_error_at (ctx, item, "a provider needs name, dialect and base_url");
        //  What its dialect needs and reads (a cloud's region, project,
        //  deployments), said with the provider's place in the file.
        sl_buf_t why = { 0 };
        if (sl_providers_fields (p, &why)) {
            s_error_at (ctx, item, "provider '%s': %s", p->name, sl_buf_cstr (&why));
            sl_buf_free (&why);
            return -1;
        }
        if (sl_providers_add_provider (ctx->providers, p))
            return s_error_at (ctx, item, "provider '%s' is defined twice", p->name);
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Routes

typedef struct {
    const char *model;
    const char *provider;
    yaml_node_t *provider_node;
    yaml_node_t *providers;             //  the providers: list, or NULL
} s_route_spec_t;

static int
s_route_member (s_ctx_t *ctx, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_route_spec_t *spec = arg;
    if (strcmp (key, "providers") == 0) {
        spec->providers = v;
        return 0;
    }
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
        return s_error_at (ctx, knode, "unknown route field '%s' (model, provider, providers)", key);
    return 0;
}

//  One entry of a route's providers list.
typedef struct {
    sl_route_target_t t;
    yaml_node_t *provider_node;
} s_target_spec_t;

static int
s_target_member (s_ctx_t *ctx, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_target_spec_t *spec = arg;
    const char *value = s_scalar (v);
    if (!value || !*value)
        return s_error_at (ctx, v, "%s must be a non-empty scalar", key);
    if (strcmp (key, "provider") == 0) {
        spec->t.provider = value;
        spec->provider_node = v;
    }
    else
    if (strcmp (key, "model") == 0)
        spec->t.model = value;
    else
    if (strcmp (key, "weight") == 0)
        return s_number (ctx, v, key, 0, SL_ROUTE_WEIGHT_MAX, &spec->t.weight);
    else
        return s_error_at (ctx, knode, "unknown field '%s' of a route's provider (provider, model, weight)", key);
    return 0;
}

//  A route's providers: list, checked entry by entry so that each error
//  names its place, then added.
static int
s_route_targets (s_ctx_t *ctx, const s_route_spec_t *spec, yaml_node_t *item)
{
    yaml_node_t *list = spec->providers;
    if (spec->provider)
        return s_error_at (ctx, spec->provider_node, "a route names provider or providers, not both");
    yaml_node_item_t *start = list->type == YAML_SEQUENCE_NODE ? list->data.sequence.items.start : NULL;
    yaml_node_item_t *top = start ? list->data.sequence.items.top : NULL;
    if (!start || start == top || top - start > SL_ROUTE_TARGETS_MAX)
        return s_error_at (ctx, list, "providers must be a list of 1 to %d providers", SL_ROUTE_TARGETS_MAX);
    sl_route_target_t targets [SL_ROUTE_TARGETS_MAX];
    size_t n = 0;
    for (yaml_node_item_t *i = start; i < top; i++) {
        yaml_node_t *entry = yaml_document_get_node (ctx->doc, *i);
        s_target_spec_t t = { .t = { .weight = SL_ROUTE_NO_WEIGHT } };
        if (s_mapping (ctx, entry, "a route's provider", s_target_member, &t))
            return -1;
        if (!t.t.provider)
            return s_error_at (ctx, entry, "a route's provider needs provider");
        if (!sl_providers_find (ctx->providers, sl_str (t.t.provider)))
            return s_error_at (ctx, t.provider_node, "route names unknown provider '%s'", t.t.provider);
        for (size_t k = 0; k < n; k++)
            if (strcmp (targets [k].provider, t.t.provider) == 0)
                return s_error_at (ctx, t.provider_node, "the route names provider '%s' twice", t.t.provider);
        if (n && (t.t.weight == SL_ROUTE_NO_WEIGHT) != (targets [0].weight == SL_ROUTE_NO_WEIGHT))
            return s_error_at (ctx, entry, "weight: every provider of the route has one, or none has");
        targets [n++] = t.t;
    }
    if (sl_providers_add_route_targets (ctx->providers, spec->model, targets, n))
        return s_error_at (ctx, item, "the route's providers are not valid");
    return 0;
}

static int
s_routes (s_ctx_t *ctx, yaml_node_t *list)
{
    if (list->type != YAML_SEQUENCE_NODE)
        return s_error_at (ctx, list, "routes must be a list");
    for (yaml_node_item_t *i = list->data.sequence.items.start; i < list->data.sequence.items.top; i++) {
        yaml_node_t *item = yaml_document_get_node (ctx->doc, *i);
        s_route_spec_t spec = { 0 };
        if (s_mapping (ctx, item, "a route", s_route_member, &spec))
            return -1;
        if (!spec.model || (!spec.provider && !spec.providers))
            return s_error_at (ctx, item, "a route needs model and provider (or providers)");
        if (spec.providers) {
            if (s_route_targets (ctx, &spec, item))
                return -1;
        }
        else
        if (sl_providers_add_route (ctx->providers, spec.model, spec.provider))
            return s_error_at (ctx, spec.provider_node, "route names unknown provider '%s'", spec.provider);
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Prices

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
s_prices (s_ctx_t *ctx, yaml_node_t *list)
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
        if (sl_providers_add_price (ctx->providers, &spec.price))
            return s_error_at (ctx, item, "model '%s' has a price twice", spec.price.model);
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  MCP servers (the mcp: section)

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
        if (!sl_providers_url_valid (value))
            return s_error_at (ctx, v, "url must be an http:// or https:// URL");
        spec->s.url = value;
    }
    else
    if (strcmp (key, "key_env") == 0) {
        if (!sl_providers_env_valid (value))
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

//  Add one server with its teams.
static int
s_mcp_add (s_ctx_t *ctx, s_mcp_spec_t *spec, yaml_node_t *item)
{
    if (!spec->s.name || !spec->s.url)
        return s_error_at (ctx, item, "an MCP server needs name and url");
    if (sl_mcp_servers_find (ctx->mcp, sl_str (spec->s.name)))
        return s_error_at (ctx, item, "MCP server '%s' is defined twice", spec->s.name);
    const char **teams = NULL;
    if (spec->teams) {
        yaml_node_item_t *start = spec->teams->data.sequence.items.start;
        yaml_node_item_t *top = spec->teams->data.sequence.items.top;
        teams = sl_xcalloc ((size_t) (top - start) + 1, sizeof *teams);
        for (yaml_node_item_t *i = start; i < top; i++) {
            yaml_node_t *t = yaml_document_get_node (ctx->doc, *i);
            const char *team = s_scalar (t);
            if (!team || !*team) {
                free (teams);
                return s_error_at (ctx, t, "a team is a non-empty name");
            }
            teams [i - start] = team;
        }
    }
    spec->s.teams = teams;
    int rc = sl_mcp_servers_add (ctx->mcp, &spec->s);
    free (teams);
    return rc;
}

static int
s_mcp_servers (s_ctx_t *ctx, yaml_node_t *list)
{
    if (list->type != YAML_SEQUENCE_NODE)
        return s_error_at (ctx, list, "servers must be a list");
    for (yaml_node_item_t *i = list->data.sequence.items.start; i < list->data.sequence.items.top; i++) {
        yaml_node_t *item = yaml_document_get_node (ctx->doc, *i);
        s_mcp_spec_t spec = { { 0 }, NULL };
        if (s_mapping (ctx, item, "an MCP server", s_mcp_server_member, &spec)
        ||  s_mcp_add (ctx, &spec, item))
            return -1;
    }
    return 0;
}

static int
s_mcp_member (s_ctx_t *ctx, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    yaml_node_t **servers = arg;
    long n;
    bool multiplexed = false;
    if (strcmp (key, "servers") == 0)
        *servers = v;
    else
    if (strcmp (key, "multiplexed") == 0) {
        if (s_bool (ctx, v, key, &multiplexed))
            return -1;
        sl_mcp_servers_set_multiplexed (ctx->mcp, multiplexed);
    }
    else
    if (strcmp (key, "timeout_ms") == 0) {
        if (s_number (ctx, v, key, 1, SL_MCP_TIMEOUT_MS_MAX, &n))
            return -1;
        sl_mcp_servers_set_timeout_ms (ctx->mcp, n);
    }
    else
    if (strcmp (key, "max_response_bytes") == 0) {
        if (s_number (ctx, v, key, SL_MCP_RESPONSE_MIN, SL_MCP_RESPONSE_MAX, &n))
            return -1;
        sl_mcp_servers_set_max_response (ctx->mcp, (size_t) n);
    }
    else
        return s_error_at (ctx, knode, "unknown mcp field '%s' (multiplexed, timeout_ms, max_response_bytes, "
                                       "servers)", key);
    return 0;
}

static int
s_mcp (s_ctx_t *ctx, yaml_node_t *node)
{
    yaml_node_t *servers = NULL;
    if (s_mapping (ctx, node, "mcp", s_mcp_member, &servers))
        return -1;
    if (!servers)
        return s_error_at (ctx, node, "mcp needs a servers list");
    return s_mcp_servers (ctx, servers);
}

//  --------------------------------------------------------------------------
//  The file

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

int
sl_routesfile_parse (const char *text, size_t size, const char *name, sl_providers_t **providers,
                     sl_mcp_servers_t **mcp, char **error)
{
    *error = NULL;
    *providers = NULL;
    if (mcp)
        *mcp = NULL;
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
        return -1;
    }
    s_ctx_t ctx = { name, error, &doc, sl_providers_new (), sl_mcp_servers_new () };
    s_root_t root = { 0 };
    yaml_node_t *top = yaml_document_get_root_node (&doc);
    //  Providers first, wherever they are in the file: routes name them.
    int rc = top ? s_mapping (&ctx, top, "the routes file", s_root_member, &root)
                 : s_error_at (&ctx, NULL, "the routes file is empty");
    if (rc == 0 && !root.providers)
        rc = s_error_at (&ctx, top, "the routes file needs a providers list");
    if (rc == 0)
        rc = s_providers (&ctx, root.providers);
    if (rc == 0 && root.routes)
        rc = s_routes (&ctx, root.routes);
    if (rc == 0 && root.prices)
        rc = s_prices (&ctx, root.prices);
    if (rc == 0 && root.mcp)
        rc = s_mcp (&ctx, root.mcp);
    yaml_document_delete (&doc);
    yaml_parser_delete (&parser);
    if (rc) {
        sl_providers_destroy (&ctx.providers);
        sl_mcp_servers_destroy (&ctx.mcp);
        return -1;
    }
    *providers = ctx.providers;
    if (mcp)
        *mcp = ctx.mcp;
    else
        sl_mcp_servers_destroy (&ctx.mcp);
    return 0;
}

int
sl_routesfile_load (const char *path, sl_providers_t **providers, sl_mcp_servers_t **mcp, char **error)
{
    *error = NULL;
    *providers = NULL;
    if (mcp)
        *mcp = NULL;
    FILE *f = fopen (path, "rb");
    sl_buf_t text = { 0 };
    if (f) {
        char chunk [8192];
        size_t n;
        while ((n = fread (chunk, 1, sizeof chunk, f)) > 0 && text.len <= SL_ROUTESFILE_MAX)
            sl_buf_append (&text, chunk, n);
        fclose (f);
    }
    sl_buf_t msg = { 0 };
    if (!f)
        sl_buf_printf (&msg, "%s:1:1: cannot open: %s", path, strerror (errno));
    else
    if (text.len > SL_ROUTESFILE_MAX)
        sl_buf_printf (&msg, "%s:1:1: larger than %u bytes", path, SL_ROUTESFILE_MAX);
    if (msg.len) {
        *error = sl_xstrdup (sl_buf_cstr (&msg));
        sl_buf_free (&msg);
        sl_buf_free (&text);
        return -1;
    }
    int rc = sl_routesfile_parse (text.data ? text.data : "", text.len, path, providers, mcp, error);
    sl_buf_free (&text);
    return rc;
}
