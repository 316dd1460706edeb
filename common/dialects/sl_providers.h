/*  sl_providers.h - which upstream provider serves a model.

    A pure class: a list of providers (a name, the wire dialect it speaks,
    its base URL, the name of the environment variable that holds its API
    key, and whether the client's own credential may be forwarded to it
    when that variable is empty), an ordered list of routes, each a model
    glob (fnmatch) naming a provider, and what models cost. The gateway
    asks it which provider serves a request (and lists the configured
    models from it); the ingest finds that provider by name; the gateway's
    limits and the audit price a stream's usage with it.

    The routes file fills it (its loader is common/config/sl_routesfile.h,
    where the file's format is); without one, the built-in defaults do.

    Matching (sl_providers_pick): a route may name a provider of any dialect;
    among the routes whose glob matches the model, the first whose
    provider speaks the client's dialect wins (no translation needed),
    else the first of them (the request is translated); when no route
    matches, the first provider of the client's dialect serves it (so a
    provider with no routes is the default for its dialect), else the
    first provider. A route that names several providers (its targets)
    is matched by its first target.

    The plan of a request (sl_providers_plan): the providers it may go to,
    in the order to try them, each with the model's id there (the
    client's model when the target names none). A route without weights
    gives its targets in the order written. A route with weights (every
    target has one, or none has) orders them by a weighted draw without
    replacement: the first is drawn among the targets of weight above 0
    with a chance of its weight over their sum, the second among the rest
    likewise, and so on; targets of weight 0 are standbys, after every
    weighted one, in the order written. The draw comes from the caller (a
    number; the gateway takes it from the stream's random id), so a plan
    is a pure function of its inputs.

    A provider may have several keys (key_envs): the variables are kept
    in order; key_env is the first ("" for none). Which is used when is
    the ingest's (sl_failover.h).

    Built-in defaults (no file): one provider per registered dialect, from
    its module's defaults (sl_dialect.h): named after the dialect, at its
    vendor's base URL (or the one given), its key from <VENDOR>_API_KEY
    (openai, responses: OPENAI_API_KEY; anthropic: ANTHROPIC_API_KEY;
    gemini: GEMINI_API_KEY), grouped by vendor in the order the vendors'
    first dialects are registered (openai, responses, anthropic, gemini).

    A model's price (sl_providers_price): the entry naming it exactly,
    else the first whose glob matches it, in the order added. Prices are
    what the limits' money budgets and the audit's costs count; a model
    without one costs nothing there.

    The class reads no environment itself: the caller resolves key_env.
    Returned strings and structs are borrowed from the object and live as
    long as it.
*/
#ifndef SL_PROVIDERS_H
#define SL_PROVIDERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

typedef struct _sl_routes_t sl_providers_t;

#define SL_PROVIDERS_KEYS_MAX 16        //  key variables of one provider
#define SL_ROUTE_TARGETS_MAX 16         //  providers one route names
#define SL_ROUTE_WEIGHT_MAX 1000000     //  the largest weight
#define SL_ROUTE_NO_WEIGHT (-1)         //  a target without a weight

//  A model and the name it has at a provider that deploys models under
//  names of its own (Azure OpenAI's deployments).
typedef struct {
    const char *model;
    const char *deployment;
} sl_deployment_t;

//  The fields of a provider only some dialects read (a dialect's table
//  says which it reads and which it needs: sl_dialect_t.provider_fields,
//  provider_needs); sl_providers_fields checks a provider against them.
typedef enum {
    SL_PROVIDER_FIELD_BASE_URL = 1u << 0,       //  base_url (every dialect reads it)
    SL_PROVIDER_FIELD_REGION = 1u << 1,         //  region: Bedrock, Vertex
    SL_PROVIDER_FIELD_PROJECT = 1u << 2,        //  project: Vertex
    SL_PROVIDER_FIELD_CREDENTIALS_FILE = 1u << 3,   //  credentials_file: Vertex
    SL_PROVIDER_FIELD_API_VERSION = 1u << 4,    //  api_version: Azure
    SL_PROVIDER_FIELD_DEPLOYMENTS = 1u << 5,    //  deployments: Azure
    SL_PROVIDER_FIELD_TOKEN_ENV = 1u << 6,      //  token_env: a bearer token (Azure's Entra ID, Vertex)
    SL_PROVIDER_FIELD_AWS_KEY_ENV = 1u << 7,    //  aws_access_key_id_env: Bedrock
    SL_PROVIDER_FIELD_AWS_SECRET_ENV = 1u << 8, //  aws_secret_access_key_env: Bedrock
    SL_PROVIDER_FIELD_AWS_SESSION_ENV = 1u << 9,    //  aws_session_token_env: Bedrock
    SL_PROVIDER_FIELD_ALL = (1u << 10) - 1
} sl_provider_field_t;

typedef struct {
    const char *name;
    int dialect;                        //  its wire id (sl_dialect_id_t)
    const char *base_url;               //  without a trailing slash; "" (or NULL): the
                                        //  dialect's, made from the other fields (Vertex)
    const char *key_env;                //  variable holding the key, "" for none
    bool forward_auth;                  //  forward the client's credential when no key
    //  Several keys, used in turn: the variables' names. When adding, a
    //  count of 0 takes key_env alone (if any); in the table, key_env is
    //  always key_envs [0] (or "" with none).
    const char *const *key_envs;
    size_t key_env_count;
    //  The clouds' fields: "" (or NULL) when not given.
    const char *region;                 //  a cloud region ("us-east5", "global")
    const char *project;                //  a Google Cloud project id
    const char *credentials_file;       //  a Google service-account key file
    const char *api_version;            //  Azure's api-version; "" or "v1": the v1 API
    const char *token_env;              //  variable holding a bearer token, "" for none
    const sl_deployment_t *deployments; //  model -> deployment (Azure), deployment_count of them
    size_t deployment_count;
    //  Bedrock's own AWS keys: the variables holding them ("" or NULL:
    //  the environment's usual ones), so two providers may sign for two
    //  accounts. The key id and the secret go together; the session
    //  token is for temporary keys.
    const char *aws_access_key_id_env;
    const char *aws_secret_access_key_env;
    const char *aws_session_token_env;
} sl_provider_t;

//  One provider a route names.


//  The deployment of model at p, or NULL when p names none for it.
const char *sl_provider_deployment (const sl_provider_t *p, sl_str_t model);
//  The fields p was given (sl_provider_field_t bits).
unsigned sl_provider_fields (const sl_provider_t *p);
//  Does p have what its dialect needs, and nothing its dialect does not
//  read? 0 yes; -1 no, with the reason written to why ("dialect vertex
//  needs project").
int sl_providers_fields (const sl_provider_t *p, sl_buf_t *why);
//  The name of a field (one sl_provider_field_t bit) in the routes file.
const char *sl_provider_field_name (unsigned field);

typedef struct {
    const char *provider;               //  a provider's name
    const char *model;                  //  the model's id there; NULL: the client's as is
    long weight;                        //  0 .. SL_ROUTE_WEIGHT_MAX, or SL_ROUTE_NO_WEIGHT
} sl_route_target_t;

typedef struct {
    const char *model;                  //  fnmatch glob
    const char *provider;               //  its first target's provider
    const sl_route_target_t *targets;   //  the providers it names, in the order written
    size_t target_count;
} sl_route_t;

//  One step of a plan: a provider and the model's id there.
typedef struct {
    const sl_provider_t *provider;
    sl_str_t model;                     //  borrowed from the table or the caller's model
} sl_plan_entry_t;

typedef struct {
    const char *model;                  //  a model name or fnmatch glob
    double input_per_m;                 //  USD per million input tokens
    double output_per_m;                //  USD per million output tokens
} sl_price_t;

//  An empty table.
sl_providers_t *sl_providers_new (void);
//  The built-in defaults (see above). base_urls, when not NULL, holds a
//  base URL for each wire id (SL_DIALECT_MAX entries; NULL for the
//  module's default); they are copied. NULL when one is not an http(s) URL.
sl_providers_t *sl_providers_new_default (const char *const *base_urls);
void sl_providers_destroy (sl_providers_t **self_p);

//  Add a provider (copied). 0 ok, -1 when the name is taken or a field is
//  invalid: a name that is not sl_name_valid, an unknown dialect, a base
//  URL that is not sl_providers_url_valid, a key_env that is not
//  sl_providers_env_valid.
int sl_providers_add_provider (sl_providers_t *self, const sl_provider_t *provider);
//  Add a route at the end. 0 ok, -1 when the provider is unknown.
int sl_providers_add_route (sl_providers_t *self, const char *model, const char *provider);
//  Add a route naming several providers (copied). 0 ok; -1 when count is
//  0 or over SL_ROUTE_TARGETS_MAX, a provider is unknown or named twice,
//  a target's model is empty, a weight is out of range, or some targets
//  have weights and others none.
int sl_providers_add_route_targets (sl_providers_t *self, const char *model, const sl_route_target_t *targets,
                                    size_t count);

//  Is url an http:// or https:// URL with something after the scheme?
bool sl_providers_url_valid (const char *url);
//  Is name an environment variable's name ([A-Za-z_][A-Za-z0-9_]*), or ""
//  (none)?
bool sl_providers_env_valid (const char *name);

size_t sl_providers_provider_count (sl_providers_t *self);
const sl_provider_t *sl_providers_provider (sl_providers_t *self, size_t index);
size_t sl_providers_route_count (sl_providers_t *self);
const sl_route_t *sl_providers_route (sl_providers_t *self, size_t index);
//  The provider of that name, or NULL.
const sl_provider_t *sl_providers_find (sl_providers_t *self, sl_str_t name);
//  The provider serving model in dialect (0: any dialect), or NULL.
const sl_provider_t *sl_providers_match (sl_providers_t *self, sl_str_t model, int dialect);
//  The provider a client of dialect is sent to for model, of any
//  dialect: among the routes whose glob matches, the first whose provider
//  speaks the client's dialect (no translation), else the first; when no
//  route matches, the first provider of the client's dialect, else the
//  first provider. NULL only for a table without providers.
const sl_provider_t *sl_providers_pick (sl_providers_t *self, sl_str_t model, int client_dialect);
//  The plan for a client of dialect asking for model (see above): the
//  route sl_providers_pick would take, its targets in the order to try
//  them (draw: the caller's random number), into out (room entries); the
//  count written. Without a matching route: the one provider
//  sl_providers_pick gives, the model as is. 0 only for a table without
//  providers.
size_t sl_providers_plan (sl_providers_t *self, sl_str_t model, int client_dialect, uint32_t draw,
                          sl_plan_entry_t *out, size_t room);

//  Add a price at the end (copied). 0 ok, -1 when the model is empty or
//  named twice, or a price is negative or not a number.
int sl_providers_add_price (sl_providers_t *self, const sl_price_t *price);
size_t sl_providers_price_count (const sl_providers_t *self);
//  A model's prices in USD per million tokens: the entry naming it
//  exactly, else the first glob that matches. 0 found, -1 none (the
//  outputs are then 0).
int sl_providers_price (const sl_providers_t *self, const char *model, double *input_per_m, double *output_per_m);

#endif
