/*  Unit tests: common/dialects/sl_providers, the routes file's mcp:
    section (the MCP servers sluice fronts) and its accessors. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_providers.h"

#define PROVIDER "providers:\n  - name: p\n    dialect: openai\n    base_url: http://127.0.0.1:1/v1\n"

static sl_providers_t *
s_parse (const char *text, char **error)
{
    return sl_providers_parse (text, strlen (text), "routes.yaml", error);
}

Test (sl_providers_mcp, no_section_no_servers_defaults)
{
    char *error = NULL;
    sl_providers_t *r = s_parse (PROVIDER, &error);
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
    sl_providers_t *r = s_parse (PROVIDER
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
    struct {
        const char *text;
        const char *error;
    } cases [] = {
        { PROVIDER "mcp: []\n", "routes.yaml:5:6: mcp must be a mapping" },
        { PROVIDER "mcp:\n  multiplexed: true\n", "routes.yaml:6:3: mcp needs a servers list" },
        { PROVIDER "mcp:\n  servers: {}\n", "routes.yaml:6:12: servers must be a list" },
        { PROVIDER "mcp:\n  server: []\n", "routes.yaml:6:3: unknown mcp field 'server'" },
        { PROVIDER "mcp:\n  multiplexed: yes\n  servers: []\n", "routes.yaml:6:16: multiplexed must be true or false" },
        { PROVIDER "mcp:\n  timeout_ms: 0\n  servers: []\n", "routes.yaml:6:15: timeout_ms must be a whole number" },
        { PROVIDER "mcp:\n  timeout_ms: 5s\n  servers: []\n", "routes.yaml:6:15: timeout_ms must be a whole number" },
        { PROVIDER "mcp:\n  max_response_bytes: 10\n  servers: []\n",
          "routes.yaml:6:23: max_response_bytes must be a whole number" },
        { PROVIDER "mcp:\n  servers:\n    - url: http://x/mcp\n", "routes.yaml:7:7: an MCP server needs name and url" },
        { PROVIDER "mcp:\n  servers:\n    - name: a\n", "routes.yaml:7:7: an MCP server needs name and url" },
        { PROVIDER "mcp:\n  servers:\n    - name: a.b\n      url: http://x/mcp\n",
          "routes.yaml:7:13: MCP server name 'a.b' must be" },
        { PROVIDER "mcp:\n  servers:\n    - name: a__b\n      url: http://x/mcp\n",
          "routes.yaml:7:13: MCP server name 'a__b' must be" },
        { PROVIDER "mcp:\n  servers:\n    - name: a_\n      url: http://x/mcp\n",
          "routes.yaml:7:13: MCP server name 'a_' must be" },
        { PROVIDER "mcp:\n  servers:\n    - name: a\n      url: ftp://x/mcp\n",
          "routes.yaml:8:12: url must be an http:// or https:// URL" },
        { PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n      key_env: sk-123\n",
          "routes.yaml:9:16: key_env names an environment variable" },
        { PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n      header: \"X Key\"\n",
          "routes.yaml:9:15: header must be an HTTP header name" },
        { PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n      scheme: \"a\\r\\nX: y\"\n",
          "routes.yaml:9:15: scheme must not hold control characters" },
        { PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n      revision: \"2024-11-05\"\n",
          "routes.yaml:9:17: revision must be 2025-06-18, 2025-11-25 or 2026-07-28" },
        { PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n      teams: []\n",
          "routes.yaml:9:14: teams must be a list of team names" },
        { PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n      teams: [\"\"]\n",
          "routes.yaml:9:15: a team is a non-empty name" },
        { PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n      token: x\n",
          "routes.yaml:9:7: unknown MCP server field 'token'" },
        { PROVIDER "mcp:\n  servers:\n    - name: a\n      url: http://x/mcp\n    - name: a\n      url: http://y/mcp\n",
          "routes.yaml:9:7: MCP server 'a' is defined twice" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        char *error = NULL;
        sl_providers_t *r = s_parse (cases [i].text, &error);
        cr_expect_null (r, "case %zu is refused", i);
        cr_expect (error && strncmp (error, cases [i].error, strlen (cases [i].error)) == 0,
                   "case %zu: got '%s', want '%s...'", i, error ? error : "(none)", cases [i].error);
        free (error);
        sl_providers_destroy (&r);
    }
}
