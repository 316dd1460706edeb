/*  sl_routesfile.h - the routes file: YAML into the tables it configures.

    The loader of the routes file (--routes, SLUICE_ROUTES), apart from
    the components it configures, as h2o's configurators are apart from
    its handlers. It fills the providers, the model routes and the prices
    (sl_providers_t, common/dialects/sl_providers.h: what routing and
    costing read), and the MCP servers sluice fronts (sl_mcp_servers_t,
    common/mcp/sl_mcp_servers.h: what the gateway's MCP front reads),
    each where its users are. The file:

        version: 1                      # optional
        providers:
          - name: local                 # required, unique: [A-Za-z0-9._-]
            dialect: openai             # a dialect's name: openai | responses | anthropic | gemini
            base_url: http://127.0.0.1:8000/v1
            key_env: LOCAL_KEY          # optional: the variable holding the key
            key_envs: [K1, K2]          # or several keys, used in turn (not both)
            forward_client_auth: true   # optional, default true
          - name: vertex-claude         # a cloud's door (upstream-only dialects):
            dialect: vertex-anthropic   #   vertex, vertex-anthropic, azure
            region: us-east5            # Vertex: region and project needed,
            project: my-project         #   base_url optional (the region's)
            token_env: GCP_TOKEN        # optional: a variable holding a bearer token
          - name: azure-east
            dialect: azure
            base_url: https://my-resource.openai.azure.com   # needed
            api_version: "2024-10-21"   # optional; absent or v1: the v1 API
            deployments: { gpt-4o: prod-gpt4o }   # with api_version: model -> deployment
            key_env: AZURE_OPENAI_KEY   # the api-key header (or token_env, or neither: Entra ID
                                        #   from AZURE_TENANT_ID, AZURE_CLIENT_ID, ...)
          - name: bedrock-b
            dialect: bedrock            # or bedrock-anthropic: region needed
            region: us-west-2
            aws_access_key_id_env: B_KEY_ID         # optional, with the secret's: this
            aws_secret_access_key_env: B_SECRET     #   provider's own AWS account
            aws_session_token_env: B_SESSION        # optional: temporary keys
        routes:
          - model: "llama-*"            # fnmatch glob
            provider: local
          - model: "claude-*"           # or several providers, tried in order
            providers:                  # (or drawn by weight: every entry has one, or none)
              - { provider: east, model: "anthropic.claude-x", weight: 3 }
              - { provider: local }     # model absent: the client's as is
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

    Providers are read first, wherever they stand in the file: routes name
    them. A provider's fields are a table in the loader (a key, what reads
    it into sl_provider_t): a new field is a row there and a member of
    sl_provider_t. The file replaces the built-in providers entirely
    (without a file, a service takes sl_providers_new_default).

    Everything the file says is checked before it is used; an error names
    the file, line, column and reason ("routes.yaml:7:15: route names
    unknown provider 'b'"), and the first one found is the one reported.
    The loader reads no environment: the services resolve key_env.
*/
#ifndef SL_ROUTESFILE_H
#define SL_ROUTESFILE_H

#include <stddef.h>

#include "common/dialects/sl_providers.h"
#include "common/mcp/sl_mcp_servers.h"

#define SL_ROUTESFILE_MAX (1u << 20)    //  a routes file larger than this is refused
#define SL_ROUTESFILE_DEPLOYMENTS_MAX 256   //  deployments of one provider

//  Parse a routes file's text (name: the file's name, for errors) into
//  its tables, each made for the caller: *providers (its providers,
//  routes and prices) and, when mcp is not NULL, *mcp (its mcp: section,
//  an empty table without one; checked all the same when mcp is NULL).
//  0, or -1 with *error ("name:line:col: why", the caller frees) and
//  nothing made.
int sl_routesfile_parse (const char *text, size_t size, const char *name, sl_providers_t **providers,
                         sl_mcp_servers_t **mcp, char **error);
//  The same from a file of at most SL_ROUTESFILE_MAX bytes.
int sl_routesfile_load (const char *path, sl_providers_t **providers, sl_mcp_servers_t **mcp, char **error);

#endif
