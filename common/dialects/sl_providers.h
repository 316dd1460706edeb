/*  sl_providers.h - which upstream provider serves a model.

    A pure class: a list of providers (a name, the wire dialect it speaks,
    its base URL, the name of the environment variable that holds its API
    key, and whether the client's own credential may be forwarded to it
    when that variable is empty) and an ordered list of routes, each a
    model glob (fnmatch) naming a provider. The gateway asks it which
    provider serves a request (and lists the configured models from it);
    the ingest finds that provider by name.

    Matching (sl_providers_pick): a route may name a provider of any dialect;
    among the routes whose glob matches the model, the first whose
    provider speaks the client's dialect wins (no translation needed),
    else the first of them (the request is translated); when no route
    matches, the first provider of the client's dialect serves it (so a
    provider with no routes is the default for its dialect), else the
    first provider.

    Built-in defaults (no file): one provider per registered dialect, from
    its module's defaults (sl_dialect.h): named after the dialect, at its
    vendor's base URL (or the one given), its key from <VENDOR>_API_KEY
    (openai, responses: OPENAI_API_KEY; anthropic: ANTHROPIC_API_KEY;
    gemini: GEMINI_API_KEY), grouped by vendor in the order the vendors'
    first dialects are registered (openai, responses, anthropic, gemini).
    A routes file replaces the defaults entirely:

        version: 1                      # optional
        providers:
          - name: local                 # required, unique: [A-Za-z0-9._-]
            dialect: openai             # a dialect's name: openai | responses | anthropic | gemini
            base_url: http://127.0.0.1:8000/v1
            key_env: LOCAL_KEY          # optional: the variable holding the key
            forward_client_auth: true   # optional, default true
        routes:
          - model: "llama-*"            # fnmatch glob
            provider: local
        prices:                         # optional: what a model costs
          - model: "gpt-4o*"            # a model name or an fnmatch glob
            input: 2.50                 # USD per million input tokens
            output: 10.00               # USD per million output tokens

        mcp:                            # optional: MCP servers sluice fronts
          multiplexed: false            # optional; true: /mcp serves every server
          timeout_ms: 60000             # optional: a server's answer's deadline
          max_response_bytes: 8388608   # optional: the most a server's answer may be
          servers:
            - name: github              # required, unique: [A-Za-z0-9_-]{1,64}
              url: http://127.0.0.1:7000/mcp   # required, http or https
              key_env: GITHUB_MCP_TOKEN # optional: the variable holding the credential
              header: Authorization     # optional (default Authorization)
              scheme: "Bearer "         # optional (default "Bearer ")
              revision: "2025-11-25"    # optional: 2025-06-18, 2025-11-25, 2026-07-28
              teams: [payments]         # optional: the teams that may use it; absent: all

    A model's price (sl_providers_price): the entry naming it exactly,
    else the first whose glob matches it, in the file's order. Prices are
    what the limits' money budgets and the audit's costs count; a model
    without one costs nothing there.

    Errors name the file, line, column and reason. The class reads no
    environment itself: the caller resolves key_env. Returned strings and
    structs are borrowed from the object and live as long as it.
*/
#ifndef SL_PROVIDERS_H
#define SL_PROVIDERS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

typedef struct _sl_routes_t sl_providers_t;

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
    SL_PROVIDER_FIELD_ALL = (1u << 7) - 1
} sl_provider_field_t;

typedef struct {
    const char *name;
    int dialect;                        //  its wire id (sl_dialect_id_t)
    const char *base_url;               //  without a trailing slash; "" (or NULL): the
                                        //  dialect's, made from the other fields (Vertex)
    const char *key_env;                //  variable holding the key, "" for none
    bool forward_auth;                  //  forward the client's credential when no key
    //  The clouds' fields: "" (or NULL) when not given.
    const char *region;                 //  a cloud region ("us-east5", "global")
    const char *project;                //  a Google Cloud project id
    const char *credentials_file;       //  a Google service-account key file
    const char *api_version;            //  Azure's api-version; "" or "v1": the v1 API
    const char *token_env;              //  variable holding a bearer token, "" for none
    const sl_deployment_t *deployments; //  model -> deployment (Azure), deployment_count of them
    size_t deployment_count;
} sl_provider_t;

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
    const char *model;                  //  fnmatch glob
    const char *provider;               //  a provider's name
} sl_route_t;

typedef struct {
    const char *model;                  //  a model name or fnmatch glob
    double input_per_m;                 //  USD per million input tokens
    double output_per_m;                //  USD per million output tokens
} sl_price_t;

//  An MCP server sluice fronts (the routes file's mcp: section).
typedef struct {
    const char *name;                   //  [A-Za-z0-9_-]{1,64}: served at /mcp/<name>
    const char *url;                    //  http or https
    const char *key_env;                //  variable holding sluice's credential, "" for none
    const char *header;                 //  the credential's header (default Authorization)
    const char *scheme;                 //  the credential's prefix (default "Bearer ")
    const char *revision;               //  what sluice speaks to it (default 2025-11-25)
    const char *const *teams;           //  NULL-terminated, NULL: every team
} sl_mcp_server_t;

#define SL_MCP_TIMEOUT_MS_DEFAULT 60000L                //  a server's answer's deadline
#define SL_MCP_MAX_RESPONSE_DEFAULT (8u * 1024u * 1024u) //  the most a server's answer may be

//  An empty table.
sl_providers_t *sl_providers_new (void);
//  The built-in defaults (see above). base_urls, when not NULL, holds a
//  base URL for each wire id (SL_DIALECT_MAX entries; NULL for the
//  module's default); they are copied. NULL when one is not an http(s) URL.
sl_providers_t *sl_providers_new_default (const char *const *base_urls);
//  Parse a routes file. NULL on error, with *error set to
//  "name:line:col: why" (caller frees).
sl_providers_t *sl_providers_parse (const char *text, size_t size, const char *name, char **error);
sl_providers_t *sl_providers_load (const char *path, char **error);
void sl_providers_destroy (sl_providers_t **self_p);

//  Add a provider (copied). 0 ok, -1 when the name is taken or a field is
//  invalid.
int sl_providers_add_provider (sl_providers_t *self, const sl_provider_t *provider);
//  Add a route at the end. 0 ok, -1 when the provider is unknown.
int sl_providers_add_route (sl_providers_t *self, const char *model, const char *provider);

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

//  Add a price at the end (copied). 0 ok, -1 when the model is empty or
//  named twice, or a price is negative or not a number.
int sl_providers_add_price (sl_providers_t *self, const sl_price_t *price);
size_t sl_providers_price_count (const sl_providers_t *self);
//  A model's prices in USD per million tokens: the entry naming it
//  exactly, else the first glob that matches. 0 found, -1 none (the
//  outputs are then 0).
int sl_providers_price (const sl_providers_t *self, const char *model, double *input_per_m, double *output_per_m);

//  The MCP servers, in the file's order (none without an mcp: section).
size_t sl_providers_mcp_count (const sl_providers_t *self);
const sl_mcp_server_t *sl_providers_mcp_server (const sl_providers_t *self, size_t i);
//  The server of that name, or NULL.
const sl_mcp_server_t *sl_providers_mcp_find (const sl_providers_t *self, sl_str_t name);
//  /mcp also serves every server (tools named <server>__<tool>).
bool sl_providers_mcp_multiplexed (const sl_providers_t *self);
long sl_providers_mcp_timeout_ms (const sl_providers_t *self);
size_t sl_providers_mcp_max_response (const sl_providers_t *self);
//  True when team may use server (a server without teams: every team).
bool sl_mcp_server_allows (const sl_mcp_server_t *server, sl_str_t team);

#endif
