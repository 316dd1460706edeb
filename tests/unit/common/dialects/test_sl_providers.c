/*  Unit tests: common/dialects/sl_providers (providers, model routes, the routes file,
    its mcp: section). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_providers.h"

static sl_providers_t *
s_parse (const char *text, char **error)
{
    return sl_providers_parse (text, strlen (text), "routes.yaml", error);
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
        sl_providers_t *r = s_parse (cases [i].text, &error);
        cr_expect_null (r, "case %zu is refused", i);
        cr_expect (error && strncmp (error, cases [i].error, strlen (cases [i].error)) == 0,
                   "case %zu: got '%s', want '%s...'", i, error ? error : "(none)", cases [i].error);
        free (error);
        sl_providers_destroy (&r);
    }
}

static const char *
s_match (sl_providers_t *r, const char *model, int dialect)
{
    const sl_provider_t *p = sl_providers_match (r, sl_str (model), dialect);
    return p ? p->name : "(none)";
}

Test (sl_providers, defaults_one_provider_per_dialect)
{
    const char *urls [SL_DIALECT_MAX] = {
        [SL_DIALECT_OPENAI] = "https://api.openai.com/v1/", [SL_DIALECT_RESPONSES] = "https://api.openai.com/v1/",
        [SL_DIALECT_ANTHROPIC] = "https://api.anthropic.com",
        [SL_DIALECT_GEMINI] = "https://generativelanguage.googleapis.com/v1beta",
    };
    sl_providers_t *r = sl_providers_new_default (urls);
    cr_assert_not_null (r);
    cr_expect_eq (sl_providers_provider_count (r), 4);
    cr_expect_eq (sl_providers_route_count (r), 0);
    cr_expect_str_eq (s_match (r, "gpt-4o", SL_DIALECT_OPENAI), "openai");
    cr_expect_str_eq (s_match (r, "gpt-4o", SL_DIALECT_RESPONSES), "responses");
    cr_expect_str_eq (s_match (r, "claude-sonnet-4", SL_DIALECT_ANTHROPIC), "anthropic");
    cr_expect_str_eq (s_match (r, "gemini-2.5-pro", SL_DIALECT_GEMINI), "gemini");
    const sl_provider_t *p = sl_providers_find (r, SL_STR_LIT ("openai"));
    cr_assert_not_null (p);
    cr_expect_str_eq (p->base_url, "https://api.openai.com/v1", "trailing slash dropped");
    cr_expect_str_eq (p->key_env, "OPENAI_API_KEY");
    cr_expect (p->forward_auth);
    cr_expect_str_eq (sl_providers_find (r, SL_STR_LIT ("gemini"))->key_env, "GEMINI_API_KEY");
    cr_expect_str_eq (sl_providers_find (r, SL_STR_LIT ("anthropic"))->key_env, "ANTHROPIC_API_KEY");
    cr_expect_null (sl_providers_find (r, SL_STR_LIT ("nobody")));
    sl_providers_destroy (&r);
    sl_providers_destroy (&r);
    urls [SL_DIALECT_OPENAI] = "ftp://x";
    cr_expect_null (sl_providers_new_default (urls), "a bad base URL");
}

Test (sl_providers, defaults_come_from_the_dialect_modules)
{
    sl_providers_t *r = sl_providers_new_default (NULL);
    cr_assert_not_null (r);
    //  One per dialect, each vendor's together.
    const char *names [] = { "openai", "responses", "anthropic", "gemini" };
    const char *urls [] = { "https://api.openai.com/v1", "https://api.openai.com/v1", "https://api.anthropic.com",
                            "https://generativelanguage.googleapis.com/v1beta" };
    const char *keys [] = { "OPENAI_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY" };
    cr_assert_eq (sl_providers_provider_count (r), 4);
    for (size_t i = 0; i < 4; i++) {
        const sl_provider_t *p = sl_providers_provider (r, i);
        cr_expect_str_eq (p->name, names [i]);
        cr_expect_str_eq (sl_dialect_name (p->dialect), names [i]);
        cr_expect_str_eq (p->base_url, urls [i]);
        cr_expect_str_eq (p->key_env, keys [i]);
        cr_expect (p->forward_auth);
    }
    sl_providers_destroy (&r);
}

Test (sl_providers, first_matching_route_of_the_dialect_wins)
{
    char *error = NULL;
    sl_providers_t *r = s_parse (
        "version: 1\n"
        "routes:\n"
        "  - model: 'llama-*'\n"
        "    provider: local\n"
        "  - model: '*'\n"
        "    provider: cloud\n"
        "  - model: 'claude-*'\n"
        "    provider: claude\n"
        "providers:\n"
        "  - name: cloud\n"
        "    dialect: openai\n"
        "    base_url: https://api.example.com/v1\n"
        "    key_env: CLOUD_KEY\n"
        "  - name: local\n"
        "    dialect: openai\n"
        "    base_url: http://127.0.0.1:8000/v1\n"
        "    forward_client_auth: false\n"
        "  - name: claude\n"
        "    dialect: anthropic\n"
        "    base_url: https://api.anthropic.com\n", &error);
    cr_assert_not_null (r, "%s", error ? error : "");
    cr_expect_eq (sl_providers_provider_count (r), 3);
    cr_expect_eq (sl_providers_route_count (r), 3);
    cr_expect_str_eq (sl_providers_route (r, 0)->model, "llama-*");
    cr_expect_null (sl_providers_route (r, 3));
    cr_expect_str_eq (s_match (r, "llama-3-70b", SL_DIALECT_OPENAI), "local");
    cr_expect_str_eq (s_match (r, "gpt-4o", SL_DIALECT_OPENAI), "cloud");
    cr_expect_str_eq (s_match (r, "claude-opus", SL_DIALECT_OPENAI), "cloud", "'*' comes first for openai");
    cr_expect_str_eq (s_match (r, "claude-opus", SL_DIALECT_ANTHROPIC), "claude");
    cr_expect_str_eq (s_match (r, "anything", SL_DIALECT_ANTHROPIC), "claude", "first provider of the dialect");
    cr_expect_str_eq (s_match (r, "gemini-pro", SL_DIALECT_GEMINI), "(none)");
    cr_expect_str_eq (s_match (r, "llama-3", 0), "local", "any dialect");
    const sl_provider_t *local = sl_providers_find (r, SL_STR_LIT ("local"));
    cr_expect_not (local->forward_auth);
    cr_expect_str_eq (local->key_env, "");
    sl_providers_destroy (&r);
}

Test (sl_providers, model_names_that_cannot_match)
{
    sl_providers_t *r = sl_providers_new ();
    sl_provider_t p = { .name = "a", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h", .key_env = "", .forward_auth = true };
    cr_expect_eq (sl_providers_add_provider (r, &p), 0);
    cr_expect_eq (sl_providers_add_provider (r, &p), -1, "name taken");
    sl_provider_t q = { .name = "b", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h2", .key_env = "", .forward_auth = true };
    cr_expect_eq (sl_providers_add_provider (r, &q), 0);
    cr_expect_eq (sl_providers_add_route (r, "x*", "b"), 0);
    cr_expect_eq (sl_providers_add_route (r, "y*", "nobody"), -1);
    cr_expect_str_eq (s_match (r, "xyz", SL_DIALECT_OPENAI), "b");
    //  A model with a NUL byte, or absent, takes the dialect's default.
    const sl_provider_t *m = sl_providers_match (r, sl_str_n ("x\0y", 3), SL_DIALECT_OPENAI);
    cr_expect_str_eq (m->name, "a");
    m = sl_providers_match (r, SL_STR_NULL, SL_DIALECT_OPENAI);
    cr_expect_str_eq (m->name, "a");
    sl_provider_t bad [] = {
        { .name = "c d", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h", .key_env = "", .forward_auth = true },
        { .name = "c", .dialect = 0, .base_url = "http://h", .key_env = "", .forward_auth = true },
        { .name = "c", .dialect = SL_DIALECT_OPENAI, .base_url = "h", .key_env = "", .forward_auth = true },
        { .name = "c", .dialect = SL_DIALECT_OPENAI, .base_url = "http://", .key_env = "", .forward_auth = true },
        { .name = "c", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h", .key_env = "sk-secret-key", .forward_auth = true },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++)
        cr_expect_eq (sl_providers_add_provider (r, &bad [i]), -1, "bad provider %zu", i);
    sl_providers_destroy (&r);
}

Test (sl_providers, errors_name_file_line_column_and_reason)
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

Test (sl_providers, load_from_a_file)
{
    char path [] = "/tmp/sluice-routes-XXXXXX";
    int fd = mkstemp (path);
    cr_assert (fd >= 0);
    const char *text = "providers:\n  - name: mock\n    dialect: gemini\n    base_url: http://127.0.0.1:9/v1beta\n";
    cr_assert_eq (write (fd, text, strlen (text)), (ssize_t) strlen (text));
    close (fd);
    char *error = NULL;
    sl_providers_t *r = sl_providers_load (path, &error);
    cr_assert_not_null (r, "%s", error ? error : "");
    cr_expect_str_eq (s_match (r, "gemini-x", SL_DIALECT_GEMINI), "mock");
    sl_providers_destroy (&r);
    unlink (path);
    r = sl_providers_load (path, &error);
    cr_expect_null (r);
    cr_expect (error && strstr (error, "cannot open"), "%s", error ? error : "");
    free (error);
}

//  A route may name a provider of any dialect: the client's own is
//  preferred when a route offers one, else the first that matches.
Test (sl_providers, pick_crosses_dialects_when_the_routes_say_so)
{
    const char text [] =
        "providers:\n"
        "  - { name: oa, dialect: openai, base_url: http://o }\n"
        "  - { name: ant, dialect: anthropic, base_url: http://a }\n"
        "  - { name: gem, dialect: gemini, base_url: http://g }\n"
        "routes:\n"
        "  - { model: 'claude-*', provider: ant }\n"
        "  - { model: shared, provider: ant }\n"
        "  - { model: shared, provider: oa }\n"
        "  - { model: '*@gemini', provider: gem }\n";
    char *error = NULL;
    sl_providers_t *r = sl_providers_parse (text, sizeof text - 1, "r", &error);
    cr_assert_not_null (r, "%s", error ? error : "");
    cr_expect_str_eq (sl_providers_pick (r, SL_STR_LIT ("claude-x"), SL_DIALECT_OPENAI)->name, "ant",
                      "the only route: another dialect");
    cr_expect_str_eq (sl_providers_pick (r, SL_STR_LIT ("shared"), SL_DIALECT_OPENAI)->name, "oa",
                      "the client's own dialect first");
    cr_expect_str_eq (sl_providers_pick (r, SL_STR_LIT ("shared"), SL_DIALECT_GEMINI)->name, "ant",
                      "none of its dialect: the first route");
    cr_expect_str_eq (sl_providers_pick (r, SL_STR_LIT ("mock-text@gemini"), SL_DIALECT_ANTHROPIC)->name, "gem");
    cr_expect_str_eq (sl_providers_pick (r, SL_STR_LIT ("gpt-x"), SL_DIALECT_ANTHROPIC)->name, "ant",
                      "no route: the default of the client's dialect");
    cr_expect_str_eq (sl_providers_pick (r, SL_STR_LIT ("gpt-x"), SL_DIALECT_RESPONSES)->name, "oa",
                      "no provider of its dialect: the first provider");
    sl_providers_destroy (&r);
    sl_providers_t *empty = sl_providers_new ();
    cr_expect_null (sl_providers_pick (empty, SL_STR_LIT ("x"), SL_DIALECT_OPENAI));
    sl_providers_destroy (&empty);
}

#define S_PROVIDER "providers:\n  - name: a\n    dialect: openai\n    base_url: http://h\n"

Test (sl_providers, prices_by_exact_name_then_first_glob)
{
    char *error = NULL;
    sl_providers_t *r = s_parse (S_PROVIDER
                                 "prices:\n"
                                 "  - model: \"gpt-4o*\"\n    input: 2.5\n    output: 10\n"
                                 "  - model: \"gpt-*\"\n    input: 1\n    output: 2\n"
                                 "  - model: gpt-4o-mini\n    input: 0.15\n    output: 0.6\n", &error);
    cr_assert_not_null (r, "%s", error ? error : "");
    cr_expect_eq (sl_providers_price_count (r), 3);
    double in = -1, out = -1;
    //  Exact: the named entry wins over the glob listed before it.
    cr_expect_eq (sl_providers_price (r, "gpt-4o-mini", &in, &out), 0);
    cr_expect_float_eq (in, 0.15, 1e-12);
    cr_expect_float_eq (out, 0.6, 1e-12);
    //  Glob: the first that matches, in the file's order.
    cr_expect_eq (sl_providers_price (r, "gpt-4o-2024-08-06", &in, &out), 0);
    cr_expect_float_eq (in, 2.5, 1e-12);
    cr_expect_float_eq (out, 10.0, 1e-12);
    cr_expect_eq (sl_providers_price (r, "gpt-3.5-turbo", &in, &out), 0);
    cr_expect_float_eq (in, 1.0, 1e-12);
    //  None: -1 and nothing to pay.
    cr_expect_eq (sl_providers_price (r, "claude-sonnet-4", &in, &out), -1);
    cr_expect_float_eq (in, 0.0, 1e-12);
    cr_expect_float_eq (out, 0.0, 1e-12);
    cr_expect_eq (sl_providers_price (r, "", &in, &out), -1);
    cr_expect_eq (sl_providers_price (r, NULL, &in, &out), -1);
    sl_providers_destroy (&r);
    //  A table without prices (the built-in defaults) prices nothing.
    r = sl_providers_new_default (NULL);
    cr_assert_not_null (r);
    cr_expect_eq (sl_providers_price (r, "gpt-4o", &in, &out), -1);
    sl_providers_destroy (&r);
}

Test (sl_providers, bad_prices_are_refused_with_their_line)
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
    //  Added directly: the same checks.
    sl_providers_t *r = sl_providers_new ();
    cr_expect_eq (sl_providers_add_price (r, &(sl_price_t) { "m", 1, 1 }), 0);
    cr_expect_eq (sl_providers_add_price (r, &(sl_price_t) { "m", 1, 1 }), -1);
    cr_expect_eq (sl_providers_add_price (r, &(sl_price_t) { "", 1, 1 }), -1);
    cr_expect_eq (sl_providers_add_price (r, &(sl_price_t) { "n", -0.5, 1 }), -1);
    sl_providers_destroy (&r);
}

//  --------------------------------------------------------------------------
//  The mcp: section

#define MCP_S_PROVIDER "providers:\n  - name: p\n    dialect: openai\n    base_url: http://127.0.0.1:1/v1\n"

Test (sl_providers_mcp, no_section_no_servers_defaults)
{
    char *error = NULL;
    sl_providers_t *r = s_parse (S_PROVIDER, &error);
    cr_assert_not_null (r, "%s", error);
    cr_expect_eq (sl_providers_mcp_count (r), 0);
    cr_expect_null (sl_providers_mcp_server (r, 0));
    cr_expect_not (sl_providers_mcp_multiplexed (r));
    cr_expect_eq (sl_providers_mcp_timeout_ms (r), 60000);
    cr_expect_eq (sl_providers_mcp_max_response (r), 8u * 1024 * 1024);
    sl_providers_destroy (&r);
}

Test (sl_providers_mcp, servers_with_their_fields_and_defaults)
{
    char *error = NULL;
    sl_providers_t *r = s_parse (S_PROVIDER
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
        "      url: http://127.0.0.1:7000/mcp\n", &error);
    cr_assert_not_null (r, "%s", error);
    cr_expect (sl_providers_mcp_multiplexed (r));
    cr_expect_eq (sl_providers_mcp_timeout_ms (r), 5000);
    cr_expect_eq (sl_providers_mcp_max_response (r), 65536);
    cr_assert_eq (sl_providers_mcp_count (r), 2);
    const sl_mcp_server_t *g = sl_providers_mcp_server (r, 0);
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
    const sl_mcp_server_t *fs = sl_providers_mcp_find (r, sl_str ("local-fs"));
    cr_assert_not_null (fs);
    cr_expect_eq (fs, sl_providers_mcp_server (r, 1));
    cr_expect_str_eq (fs->key_env, "");
    cr_expect_str_eq (fs->header, "Authorization");
    cr_expect_str_eq (fs->scheme, "Bearer ");
    cr_expect_str_eq (fs->revision, "2025-11-25");
    cr_expect_null (fs->teams);
    cr_expect (sl_mcp_server_allows (fs, sl_str ("research")));
    cr_expect (sl_mcp_server_allows (fs, SL_STR_NULL));
    cr_expect_null (sl_providers_mcp_find (r, sl_str ("local")));
    sl_providers_destroy (&r);
}

Test (sl_providers_mcp, bad_sections_are_refused_with_their_place)
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

Test (sl_providers, a_client_dialect_takes_base_url_and_a_token_and_no_cloud_field)
{
    sl_buf_t why = { 0 };
    sl_provider_t p = { .name = "a", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h" };
    cr_expect_eq (sl_providers_fields (&p, &why), 0, "%s", sl_buf_cstr (&why));
    p.token_env = "TOKEN";
    cr_expect_eq (sl_providers_fields (&p, &why), 0, "%s", sl_buf_cstr (&why));
    p.key_env = "KEY";
    cr_expect_eq (sl_providers_fields (&p, &why), -1, "a key or a token, not both");
    p = (sl_provider_t) { .name = "a", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h", .region = "us-east5" };
    sl_buf_reset (&why);
    cr_expect_eq (sl_providers_fields (&p, &why), -1);
    cr_expect_str_eq (sl_buf_cstr (&why), "dialect openai takes no region");
    p = (sl_provider_t) { .name = "a", .dialect = SL_DIALECT_ANTHROPIC };
    sl_buf_reset (&why);
    cr_expect_eq (sl_providers_fields (&p, &why), -1);
    cr_expect_str_eq (sl_buf_cstr (&why), "dialect anthropic needs base_url");
    sl_providers_t *r = sl_providers_new ();
    cr_expect_eq (sl_providers_add_provider (r, &p), -1, "refused when added too");
    sl_providers_destroy (&r);
    sl_buf_free (&why);
}

Test (sl_providers, a_provider_s_cloud_fields_are_copied_and_checked)
{
    const sl_deployment_t deployments [] = { { "gpt-4o", "prod-4o" }, { "gpt-4.1", "prod-41" } };
    sl_provider_t p = { .name = "t", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h/", .token_env = "T" };
    sl_providers_t *r = sl_providers_new ();
    cr_assert_eq (sl_providers_add_provider (r, &p), 0);
    const sl_provider_t *got = sl_providers_provider (r, 0);
    cr_expect_str_eq (got->base_url, "http://h");
    cr_expect_str_eq (got->token_env, "T");
    cr_expect_str_eq (got->region, "", "a field not given is empty, never NULL");
    cr_expect_eq (sl_provider_fields (got), SL_PROVIDER_FIELD_BASE_URL | SL_PROVIDER_FIELD_TOKEN_ENV);
    //  A deployment map, as a cloud dialect reads it.
    sl_provider_t d = { .name = "d", .deployments = deployments, .deployment_count = 2 };
    cr_expect_str_eq (sl_provider_deployment (&d, SL_STR_LIT ("gpt-4.1")), "prod-41");
    cr_expect_null (sl_provider_deployment (&d, SL_STR_LIT ("gpt-5")));
    cr_expect_str_eq (sl_provider_field_name (SL_PROVIDER_FIELD_DEPLOYMENTS), "deployments");
    //  A token variable's name is a variable's.
    p = (sl_provider_t) { .name = "u", .dialect = SL_DIALECT_OPENAI, .base_url = "http://h", .token_env = "eyJ.x" };
    cr_expect_eq (sl_providers_add_provider (r, &p), -1);
    sl_providers_destroy (&r);
}
