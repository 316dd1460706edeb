/*  Unit tests: common/config/sl_routesfile (the routes file: providers,
    routes, prices, its mcp: section, and errors that name their place). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/config/sl_routesfile.h"
#include "common/dialects/sl_dialect.h"

//  Parse text: its providers table, its MCP servers in *mcp (NULL: not
//  asked for).
static sl_providers_t *
s_parse_mcp (const char *text, sl_mcp_servers_t **mcp, char **error)
{
    sl_providers_t *providers = NULL;
    sl_routesfile_parse (text, strlen (text), "routes.yaml", &providers, mcp, error);
    return providers;
}

static sl_providers_t *
s_parse (const char *text, char **error)
{
    return s_parse_mcp (text, NULL, error);
}

//  A bad routes file and the start of the error it must be refused with.
typedef struct {
    const char *text;
    const char *error;
} s_case_t;

static void
s_expect_refused (const s_case_t *cases, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        char *error = NULL;
        sl_providers_t *r = NULL;
        sl_mcp_servers_t *mcp = NULL;
        cr_expect_eq (sl_routesfile_parse (cases [i].text, strlen (cases [i].text), "routes.yaml", &r, &mcp,
                                           &error), -1, "case %zu is refused", i);
        cr_expect_null (r, "case %zu is refused", i);
        cr_expect_null (mcp, "case %zu: nothing made", i);
        cr_expect (error && strncmp (error, cases [i].error, strlen (cases [i].error)) == 0,
                   "case %zu: got '%s', want '%s...'", i, error ? error : "(none)", cases [i].error);
        free (error);
        sl_providers_destroy (&r);
        sl_mcp_servers_destroy (&mcp);
    }
}

static const char *
s_match (sl_providers_t *r, const char *model, int dialect)
{
    const sl_provider_t *p = sl_providers_match (r, sl_str (model), dialect);
    return p ? p->name : "(none)";
}

Test (sl_routesfile, errors_name_file_line_column_and_reason)
{
    s_case_t cases [] = {
        { "providers: [", "routes.yaml:2:1: " },
        { "", "routes.yaml:1:1: the routes file is empty" },
        { "routes: []\n", "routes.yaml:1:1: the routes file needs a providers list" },
        { "version: 2\nproviders: []\n", "routes.yaml:1:10: this sluice reads routes version 1" },
        { "providers: {}\n", "routes.yaml:1:12: providers must be a list" },
        { "extra: 1\nproviders: []\n", "routes.yaml:1:1: unknown field 'extra'" },
        { "providers:\n  - name: a\n    dialect: cobol\n    base_url: http://h\n",
          "routes.yaml:3:14: unknown dialect 'cobol'" },
        { "providers:\n  - name: a\n    dialect: openai\n", "routes.yaml:2:5: a provider needs name, dialect and base_url" },
        { "providers:\n  - name: a\n    dialect: openai\n    base_url: h\n",
          "routes.yaml:4:15: base_url must be an http:// or https:// URL" },
        { "providers:\n  - name: a\n    dialect: openai\n    base_url: http://h\n    key_env: sk-123\n",
          "routes.yaml:5:14: key_env names an environment variable" },
        { "providers:\n  - name: a\n    dialect: openai\n    base_url: http://h\n    colour: red\n",
          "routes.yaml:5:5: unknown provider field 'colour'" },
        { "providers:\n  - name: a\n    dialect: openai\n    base_url: http://h\n"
          "  - name: a\n    dialect: openai\n    base_url: http://h\n",
          "routes.yaml:5:5: provider 'a' is defined twice" },
        { "providers:\n  - name: a\n    dialect: openai\n    base_url: http://h\nroutes:\n  - model: x\n    provider: b\n",
          "routes.yaml:7:15: route names unknown provider 'b'" },
        { "providers:\n  - name: a\n    dialect: openai\n    base_url: http://h\nroutes:\n  - model: x\n",
          "routes.yaml:6:5: a route needs model and provider" },
        { "providers:\n  - name: a\n    dialect: openai\n    base_url: http://h\n    forward_client_auth: maybe\n",
          "routes.yaml:5:26: forward_client_auth must be true or false" },
    };
    s_expect_refused (cases, sizeof cases / sizeof cases [0]);
}

Test (sl_routesfile, load_from_a_file)
{
    char path [] = "/tmp/sluice-routes-XXXXXX";
    int fd = mkstemp (path);
    cr_assert (fd >= 0);
    const char *text = "providers:\n  - name: mock\n    dialect: gemini\n    base_url: http://127.0.0.1:9/v1beta\n";
    cr_assert_eq (write (fd, text, strlen (text)), (ssize_t) strlen (text));
    close (fd);
    char *error = NULL;
    sl_providers_t *r = NULL;
    cr_expect_eq (sl_routesfile_load (path, &r, NULL, &error), 0);
    cr_assert_not_null (r, "%s", error ? error : "");
    cr_expect_str_eq (s_match (r, "gemini-x", SL_DIALECT_GEMINI), "mock");
    sl_providers_destroy (&r);
    unlink (path);
    cr_expect_eq (sl_routesfile_load (path, &r, NULL, &error), -1);
    cr_expect_null (r);
    cr_expect (error && strstr (error, "cannot open"), "%s", error ? error : "");
    free (error);
}

#define S_PROVIDER "providers:\n  - name: a\n    dialect: openai\n    base_url: http://h\n"

Test (sl_routesfile, bad_prices_are_refused_with_their_line)
{
    s_case_t cases [] = {
        { S_PROVIDER "prices: {}\n", "routes.yaml:5:9: prices must be a list" },
        { S_PROVIDER "prices:\n  - model: x\n    input: 1\n",
          "routes.yaml:6:5: a price needs model, input and output" },
        { S_PROVIDER "prices:\n  - model: x\n    input: -1\n    output: 1\n",
          "routes.yaml:7:12: input must be a number of US dollars" },
        { S_PROVIDER "prices:\n  - model: x\n    input: 1\n    output: cheap\n",
          "routes.yaml:8:13: output must be a number of US dollars" },
        { S_PROVIDER "prices:\n  - model: x\n    input: 1\n    output: nan\n",
          "routes.yaml:8:13: output must be a number of US dollars" },
        { S_PROVIDER "prices:\n  - model: x\n    input: 1\n    output: 1\n    currency: eur\n",
          "routes.yaml:9:5: unknown price field 'currency'" },
        { S_PROVIDER "prices:\n  - model: x\n    input: 1\n    output: 1\n"
                     "  - model: x\n    input: 2\n    output: 2\n",
          "routes.yaml:9:5: model 'x' has a price twice" },
    };
    s_expect_refused (cases, sizeof cases / sizeof cases [0]);
}

Test (sl_routesfile, providers_lists_and_key_envs_are_checked_with_their_place)
{
    s_case_t cases [] = {
        { S_PROVIDER "    key_envs: []\n", "routes.yaml:5:15: key_envs must be a list of 1 to 16" },
        { S_PROVIDER "    key_envs: [sk-1]\n", "routes.yaml:5:16: key_envs names environment variables" },
        { S_PROVIDER "    key_envs: [K1, K1]\n", "routes.yaml:5:20: key_envs names 'K1' twice" },
        { S_PROVIDER "    key_env: K\n    key_envs: [K1]\n", "routes.yaml:6:15: key_env and key_envs" },
        { S_PROVIDER "    key_envs: [K1]\n    key_env: K\n", "routes.yaml:6:14: key_env and key_envs" },
        { S_PROVIDER "    name: [a]\n", "routes.yaml:5:11: name must be a scalar" },
        { S_PROVIDER "routes:\n  - model: x\n    providers: []\n",
          "routes.yaml:7:16: providers must be a list of 1 to 16 providers" },
        { S_PROVIDER "routes:\n  - model: x\n    provider: a\n    providers: [{ provider: a }]\n",
          "routes.yaml:7:15: a route names provider or providers, not both" },
        { S_PROVIDER "routes:\n  - model: x\n    providers: [{ provider: b }]\n",
          "routes.yaml:7:29: route names unknown provider 'b'" },
        { S_PROVIDER "routes:\n  - model: x\n    providers: [{ provider: a }, { provider: a }]\n",
          "routes.yaml:7:46: the route names provider 'a' twice" },
        { S_PROVIDER "routes:\n  - model: x\n    providers: [{ model: m }]\n",
          "routes.yaml:7:17: a route's provider needs provider" },
        { S_PROVIDER "routes:\n  - model: x\n    providers: [{ provider: a, weight: -1 }]\n",
          "routes.yaml:7:40: weight must be a whole number from 0 to 1000000" },
        { S_PROVIDER "routes:\n  - model: x\n    providers: [{ provider: a, colour: red }]\n",
          "routes.yaml:7:32: unknown field 'colour' of a route's provider" },
        { "providers:\n  - { name: a, dialect: openai, base_url: http://h }\n"
          "  - { name: b, dialect: openai, base_url: http://h }\n"
          "routes:\n  - model: x\n    providers: [{ provider: a, weight: 1 }, { provider: b }]\n",
          "routes.yaml:6:45: weight: every provider of the route has one, or none has" },
    };
    s_expect_refused (cases, sizeof cases / sizeof cases [0]);
}

//  --------------------------------------------------------------------------
//  The mcp: section

#define MCP_S_PROVIDER "providers:\n  - name: p\n    dialect: openai\n    base_url: http://127.0.0.1:1/v1\n"

Test (sl_routesfile_mcp, no_section_no_servers_defaults)
{
    char *error = NULL;
    sl_mcp_servers_t *m = NULL;
    sl_providers_t *r = s_parse_mcp (S_PROVIDER, &m, &error);
    cr_assert_not_null (r, "%s", error);
    cr_assert_not_null (m);
    cr_expect_eq (sl_mcp_servers_count (m), 0);
    cr_expect_null (sl_mcp_servers_at (m, 0));
    cr_expect_not (sl_mcp_servers_multiplexed (m));
    cr_expect_eq (sl_mcp_servers_timeout_ms (m), 60000);
    cr_expect_eq (sl_mcp_servers_max_response (m), 8u * 1024 * 1024);
    sl_mcp_servers_destroy (&m);
    sl_providers_destroy (&r);
}

Test (sl_routesfile_mcp, servers_with_their_fields_and_defaults)
{
    char *error = NULL;
    sl_mcp_servers_t *m = NULL;
    sl_providers_t *r = s_parse_mcp (S_PROVIDER
        "mcp:\n"
        "  multiplexed: true\n"
        "  timeout_ms: 5000\n"
        "  max_response_bytes: 65536\n"
        "  servers:\n"
        "    - name: github\n"
        "      url: https://mcp.example.com/mcp\n"
        "      key_env: GITHUB_MCP_TOKEN\n"
        "      header: X-Api-Key\n"
        "      scheme: \"\"\n"
        "      revision: \"2026-07-28\"\n"
        "      teams: [payments, platform]\n"
        "    - name: local-fs\n"
        "      url: http://127.0.0.1:7000/mcp\n", &m, &error);
    cr_assert_not_null (r, "%s", error);
    cr_assert_not_null (m);
    cr_expect (sl_mcp_servers_multiplexed (m));
    cr_expect_eq (sl_mcp_servers_timeout_ms (m), 5000);
    cr_expect_eq (sl_mcp_servers_max_response (m), 65536);
    cr_assert_eq (sl_mcp_servers_count (m), 2);
    const sl_mcp_server_t *g = sl_mcp_servers_at (m, 0);
    cr_expect_str_eq (g->name, "github");
    cr_expect_str_eq (g->url, "https://mcp.example.com/mcp");
    cr_expect_str_eq (g->key_env, "GITHUB_MCP_TOKEN");
    cr_expect_str_eq (g->header, "X-Api-Key");
    cr_expect_str_eq (g->scheme, "");
    cr_expect_str_eq (g->revision, "2026-07-28");
    cr_assert_not_null (g->teams);
    cr_expect_str_eq (g->teams [0], "payments");
    cr_expect_str_eq (g->teams [1], "platform");
    cr_expect_null (g->teams [2]);
    cr_expect (sl_mcp_server_allows (g, sl_str ("platform")));
    cr_expect_not (sl_mcp_server_allows (g, sl_str ("research")));
    cr_expect_not (sl_mcp_server_allows (g, SL_STR_NULL), "no team: not a team it lists");
    const sl_mcp_server_t *fs = sl_mcp_servers_find (m, sl_str ("local-fs"));
    cr_assert_not_null (fs);
    cr_expect_eq (fs, sl_mcp_servers_at (m, 1));
    cr_expect_str_eq (fs->key_env, "");
    cr_expect_str_eq (fs->header, "Authorization");
    cr_expect_str_eq (fs->scheme, "Bearer ");
    cr_expect_str_eq (fs->revision, "2025-11-25");
    cr_expect_null (fs->teams);
    cr_expect (sl_mcp_server_allows (fs, sl_str ("research")));
    cr_expect (sl_mcp_server_allows (fs, SL_STR_NULL));
    cr_expect_null (sl_mcp_servers_find (m, sl_str ("local")));
    sl_mcp_servers_destroy (&m);
    sl_providers_destroy (&r);
}

Test (sl_routesfile_mcp, bad_sections_are_refused_with_their_place)
{
    s_case_t cases [] = {
        { S_PROVIDER "mcp: []\n", "routes.yaml:5:6: mcp must be a mapping" },
        { S_PROVIDER "mcp:\n  multiplexed: true\n", "routes.yaml:6:3: mcp needs a servers list" },
        { S_PROVIDER "mcp:\n  servers: {}\n", "routes.yaml:6:12: servers must be a list" },
        { S_PROVIDER "mcp:\n  server: []\n", "routes.yaml:6:3: unknown mcp field 'server'" },
        { S_PROVIDER "mcp:\n  multiplexed: yes\n  servers: []\n", "routes.yaml:6:16: multiplexed must be true or false" },
        { S_PROVIDER "mcp:\n  timeout_ms: 0\n  servers: []\n", "routes.yaml:6:15: timeout_ms must be a whole number" },
        { S_PROVIDER "mcp:\n  timeout_ms: 5s\n  servers: []\n", "routes.yaml:6:15: timeout_ms must be a whole number" },
        { S_PROVIDER "mcp:\n  max_response_bytes: 10\n  servers: []\n",
          "routes.yaml:6:23: max_response_bytes must be a whole number" },
        { S_PROVIDER "mcp:\n  servers:\n    - url: http://x/mcp\n", "routes.yaml:7:7: an MCP server needs name and url" },
        { S_PROVIDER "mcp:\n  servers:\n    - name: a\n", "routes.yaml:7:7: an MCP server needs name and url" },
        { S_PROVIDER "mcp:\n  servers:\n    - name: a.b\n      url: http://x/mcp\n",
          "routes.yaml:7:13: MCP server name 'a.b' must be" },
        { S_PROVIDER "mcp:\n  servers:\n    - name: a__b\n      url: http://x/mcp\n",
          "routes.yaml:7:13: MCP server name 'a__b' must be" },
        { S_PROVIDER "mcp:\n  servers:\n    - name: a_\n      url: http://x/mcp\n",
          "routes.yaml:7:13: MCP server name 'a_' must be" },
        { S_PROVIDER "mcp:\n  servers:\n    - name: a\n      url: ftp://x/mcp\n",
          "routes.yaml:8:12: url must be an http:// or https:// URL" },
        { S_PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n      key_env: sk-123\n",
          "routes.yaml:9:16: key_env names an environment variable" },
        { S_PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n      header: \"X Key\"\n",
          "routes.yaml:9:15: header must be an HTTP header name" },
        { S_PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n      scheme: \"a\\r\\nX: y\"\n",
          "routes.yaml:9:15: scheme must not hold control characters" },
        { S_PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n      revision: \"2024-11-05\"\n",
          "routes.yaml:9:17: revision must be 2025-06-18, 2025-11-25 or 2026-07-28" },
        { S_PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n      teams: []\n",
          "routes.yaml:9:14: teams must be a list of team names" },
        { S_PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n      teams: [\"\"]\n",
          "routes.yaml:9:15: a team is a non-empty name" },
        { S_PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n      token: x\n",
          "routes.yaml:9:7: unknown MCP server field 'token'" },
        { S_PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n    - name: a\n      url: http://y/mcp\n",
          "routes.yaml:9:7: MCP server 'a' is defined twice" },
    };
    s_expect_refused (cases, sizeof cases / sizeof cases [0]);
}


//  The audit and the ingest ask for the providers only: the whole file is
//  checked all the same, and a bad mcp: section refuses it.
Test (sl_routesfile_mcp, checked_when_not_asked_for)
{
    char *error = NULL;
    sl_providers_t *r = s_parse (S_PROVIDER "mcp:\n  servers:\n    - name: a__b\n      url: http://x/mcp\n", &error);
    cr_expect_null (r);
    const char *want = "routes.yaml:7:13: MCP server name 'a__b' must be";
    cr_expect (error && strncmp (error, want, strlen (want)) == 0, "%s", error ? error : "(none)");
    free (error);
    r = s_parse (S_PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n", &error);
    cr_assert_not_null (r, "%s", error);
    cr_expect_eq (sl_providers_provider_count (r), 1);
    sl_providers_destroy (&r);
}

Test (sl_routesfile, a_cloud_provider_lacking_what_its_dialect_needs_is_refused_where_it_stands)
{
    s_case_t cases [] = {
        { "providers:\n  - name: v\n    dialect: vertex\n    region: us-east5\n",
          "routes.yaml:2:5: provider 'v': dialect vertex needs project" },
        { "providers:\n  - name: v\n    dialect: vertex-anthropic\n    project: p\n",
          "routes.yaml:2:5: provider 'v': dialect vertex-anthropic needs region" },
        { "providers:\n  - name: az\n    dialect: azure\n    api_version: \"2024-10-21\"\n",
          "routes.yaml:2:5: provider 'az': dialect azure needs base_url" },
        { "providers:\n  - name: a\n    dialect: openai\n    base_url: http://h\n    region: us-east5\n",
          "routes.yaml:2:5: provider 'a': dialect openai takes no region" },
        { "providers:\n  - name: az\n    dialect: azure\n    base_url: https://r.openai.azure.com\n"
          "    deployments: { gpt-4o: d1 }\n",
          "routes.yaml:2:5: provider 'az': deployments need an api_version" },
        { "providers:\n  - name: az\n    dialect: azure\n    base_url: https://r.openai.azure.com\n"
          "    api_version: v2\n    deployments: [d1]\n",
          "routes.yaml:6:18: deployments must be a mapping" },
        { "providers:\n  - name: az\n    dialect: azure\n    base_url: https://r.openai.azure.com\n"
          "    api_version: v2\n    deployments: { gpt-4o: \"a/b\" }\n",
          "routes.yaml:6:28: the deployment of 'gpt-4o' must be a deployment's name" },
        { "providers:\n  - name: v\n    dialect: vertex\n    region: us east\n    project: p\n",
          "routes.yaml:4:13: region must be a plain word" },
        { "providers:\n  - name: v\n    dialect: vertex\n    region: r\n    project: p\n    token_env: ya29.x\n",
          "routes.yaml:6:16: token_env names an environment variable" },
        { "providers:\n  - name: v\n    dialect: vertex\n    region: r\n    project: p\n    key_env: K\n"
          "    token_env: T\n",
          "routes.yaml:2:5: provider 'v': a provider takes key_env or token_env, not both" },
    };
    s_expect_refused (cases, sizeof cases / sizeof cases [0]);
}

Test (sl_routesfile, the_clouds_fields_are_read)
{
    const char *text =
        "providers:\n"
        "  - name: claude\n    dialect: vertex-anthropic\n    region: global\n    project: proj-1\n"
        "    credentials_file: /etc/sluice/sa.json\n"
        "  - name: az\n    dialect: azure\n    base_url: https://r.openai.azure.com/\n"
        "    api_version: \"2024-10-21\"\n    deployments: { gpt-4o: prod-4o, gpt-4.1: prod-41 }\n"
        "    token_env: ENTRA_TOKEN\n";
    char *error = NULL;
    sl_providers_t *r = s_parse (text, &error);
    cr_assert_not_null (r, "%s", error ? error : "");
    const sl_provider_t *v = sl_providers_find (r, SL_STR_LIT ("claude"));
    cr_assert_not_null (v);
    cr_expect_eq (v->dialect, SL_DIALECT_VERTEX_ANTHROPIC);
    cr_expect_str_eq (v->region, "global");
    cr_expect_str_eq (v->project, "proj-1");
    cr_expect_str_eq (v->credentials_file, "/etc/sluice/sa.json");
    cr_expect_str_eq (v->base_url, "", "the region's own endpoint");
    const sl_provider_t *az = sl_providers_find (r, SL_STR_LIT ("az"));
    cr_assert_not_null (az);
    cr_expect_str_eq (az->base_url, "https://r.openai.azure.com");
    cr_expect_str_eq (az->api_version, "2024-10-21");
    cr_expect_str_eq (az->token_env, "ENTRA_TOKEN");
    cr_expect_eq (az->deployment_count, 2);
    cr_expect_str_eq (sl_provider_deployment (az, SL_STR_LIT ("gpt-4.1")), "prod-41");
    sl_providers_destroy (&r);
}

Test (sl_routesfile, a_bedrock_provider_names_its_own_aws_variables)
{
    const char *text =
        "providers:\n"
        "  - name: bedrock-a\n    dialect: bedrock\n    region: us-east-1\n"
        "    aws_access_key_id_env: ACCOUNT_A_KEY_ID\n    aws_secret_access_key_env: ACCOUNT_A_SECRET\n"
        "  - name: bedrock-b\n    dialect: bedrock-anthropic\n    region: us-west-2\n"
        "    aws_access_key_id_env: ACCOUNT_B_KEY_ID\n    aws_secret_access_key_env: ACCOUNT_B_SECRET\n"
        "    aws_session_token_env: ACCOUNT_B_SESSION\n";
    char *error = NULL;
    sl_providers_t *r = s_parse (text, &error);
    cr_assert_not_null (r, "%s", error ? error : "");
    const sl_provider_t *a = sl_providers_find (r, SL_STR_LIT ("bedrock-a"));
    cr_assert_not_null (a);
    cr_expect_str_eq (a->aws_access_key_id_env, "ACCOUNT_A_KEY_ID");
    cr_expect_str_eq (a->aws_secret_access_key_env, "ACCOUNT_A_SECRET");
    cr_expect (!a->aws_session_token_env || !*a->aws_session_token_env);
    const sl_provider_t *b = sl_providers_find (r, SL_STR_LIT ("bedrock-b"));
    cr_assert_not_null (b);
    cr_expect_str_eq (b->aws_access_key_id_env, "ACCOUNT_B_KEY_ID");
    cr_expect_str_eq (b->aws_session_token_env, "ACCOUNT_B_SESSION");
    sl_providers_destroy (&r);
    s_case_t cases [] = {
        { "providers:\n  - name: b\n    dialect: bedrock\n    region: r\n    aws_access_key_id_env: K\n",
          "routes.yaml:2:5: provider 'b': aws_access_key_id_env and aws_secret_access_key_env go together" },
        { "providers:\n  - name: b\n    dialect: bedrock\n    region: r\n    aws_secret_access_key_env: S\n"
          "    aws_session_token_env: T\n",
          "routes.yaml:2:5: provider 'b': aws_access_key_id_env and aws_secret_access_key_env go together" },
        { "providers:\n  - name: b\n    dialect: bedrock\n    region: r\n    aws_access_key_id_env: K\n"
          "    aws_secret_access_key_env: S\n    token_env: T\n",
          "routes.yaml:2:5: provider 'b': a provider takes its AWS keys' variables or key_env or token_env" },
        { "providers:\n  - name: b\n    dialect: bedrock\n    region: r\n    aws_access_key_id_env: AKIAEXAMPLE/x\n",
          "routes.yaml:5:28: aws_access_key_id_env names an environment variable" },
        { "providers:\n  - name: v\n    dialect: vertex\n    region: r\n    project: p\n"
          "    aws_access_key_id_env: K\n    aws_secret_access_key_env: S\n",
          "routes.yaml:2:5: provider 'v': dialect vertex takes no aws_access_key_id_env" },
    };
    s_expect_refused (cases, sizeof cases / sizeof cases [0]);
}
