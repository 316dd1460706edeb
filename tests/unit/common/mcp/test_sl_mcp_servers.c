/*  Unit tests: common/mcp/sl_mcp_servers (the MCP servers sluice fronts:
    adding, defaults, bounds, finding, teams). What the routes file puts in
    it is tested with its loader (tests/unit/common/config). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/mcp/sl_mcp_servers.h"

Test (sl_mcp_servers, empty_with_the_defaults)
{
    sl_mcp_servers_t *t = sl_mcp_servers_new ();
    cr_assert_not_null (t);
    cr_expect_eq (sl_mcp_servers_count (t), 0);
    cr_expect_null (sl_mcp_servers_at (t, 0));
    cr_expect_null (sl_mcp_servers_find (t, sl_str ("github")));
    cr_expect_not (sl_mcp_servers_multiplexed (t));
    cr_expect_eq (sl_mcp_servers_timeout_ms (t), SL_MCP_TIMEOUT_MS_DEFAULT);
    cr_expect_eq (sl_mcp_servers_max_response (t), SL_MCP_MAX_RESPONSE_DEFAULT);
    sl_mcp_servers_destroy (&t);
    sl_mcp_servers_destroy (&t);
    cr_expect_null (t);
}

Test (sl_mcp_servers, servers_are_copied_with_their_defaults)
{
    sl_mcp_servers_t *t = sl_mcp_servers_new ();
    char name [] = "github";
    const char *teams [] = { "payments", "platform", NULL };
    sl_mcp_server_t g = { name, "https://mcp.example.com/mcp", "GH_TOKEN", "X-Api-Key", "", "2026-07-28", teams };
    cr_assert_eq (sl_mcp_servers_add (t, &g), 0);
    sl_mcp_server_t fs = { .name = "local-fs", .url = "http://127.0.0.1:7000/mcp" };
    cr_assert_eq (sl_mcp_servers_add (t, &fs), 0);
    name [0] = 'X';                     //  the table holds its own copy
    teams [0] = "research";
    cr_assert_eq (sl_mcp_servers_count (t), 2);
    const sl_mcp_server_t *a = sl_mcp_servers_at (t, 0);
    cr_expect_str_eq (a->name, "github");
    cr_expect_str_eq (a->url, "https://mcp.example.com/mcp");
    cr_expect_str_eq (a->key_env, "GH_TOKEN");
    cr_expect_str_eq (a->header, "X-Api-Key");
    cr_expect_str_eq (a->scheme, "", "an empty prefix is kept, not defaulted");
    cr_expect_str_eq (a->revision, "2026-07-28");
    cr_assert_not_null (a->teams);
    cr_expect_str_eq (a->teams [0], "payments");
    cr_expect_str_eq (a->teams [1], "platform");
    cr_expect_null (a->teams [2]);
    const sl_mcp_server_t *b = sl_mcp_servers_find (t, sl_str ("local-fs"));
    cr_assert_not_null (b);
    cr_expect_eq (b, sl_mcp_servers_at (t, 1));
    cr_expect_str_eq (b->key_env, "");
    cr_expect_str_eq (b->header, SL_MCP_HEADER_DEFAULT);
    cr_expect_str_eq (b->scheme, SL_MCP_SCHEME_DEFAULT);
    cr_expect_str_eq (b->revision, SL_MCP_REVISION_DEFAULT);
    cr_expect_null (b->teams);
    cr_expect_null (sl_mcp_servers_find (t, sl_str ("Xithub")));
    cr_expect_null (sl_mcp_servers_find (t, sl_str ("local")), "a prefix is not a name");
    sl_mcp_servers_destroy (&t);
}

Test (sl_mcp_servers, a_server_needs_a_name_and_url_once)
{
    sl_mcp_servers_t *t = sl_mcp_servers_new ();
    cr_expect_eq (sl_mcp_servers_add (t, &(sl_mcp_server_t) { .name = "a", .url = "http://x/mcp" }), 0);
    cr_expect_eq (sl_mcp_servers_add (t, &(sl_mcp_server_t) { .name = "a", .url = "http://y/mcp" }), -1,
                  "a name taken");
    cr_expect_eq (sl_mcp_servers_add (t, &(sl_mcp_server_t) { .url = "http://y/mcp" }), -1);
    cr_expect_eq (sl_mcp_servers_add (t, &(sl_mcp_server_t) { .name = "", .url = "http://y/mcp" }), -1);
    cr_expect_eq (sl_mcp_servers_add (t, &(sl_mcp_server_t) { .name = "b" }), -1);
    cr_expect_eq (sl_mcp_servers_add (t, &(sl_mcp_server_t) { .name = "b", .url = "" }), -1);
    cr_expect_eq (sl_mcp_servers_count (t), 1);
    cr_expect_str_eq (sl_mcp_servers_at (t, 0)->url, "http://x/mcp");
    sl_mcp_servers_destroy (&t);
}

Test (sl_mcp_servers, deadline_and_bound_stay_in_their_ranges)
{
    sl_mcp_servers_t *t = sl_mcp_servers_new ();
    sl_mcp_servers_set_multiplexed (t, true);
    cr_expect (sl_mcp_servers_multiplexed (t));
    cr_expect_eq (sl_mcp_servers_set_timeout_ms (t, 5000), 0);
    cr_expect_eq (sl_mcp_servers_timeout_ms (t), 5000);
    cr_expect_eq (sl_mcp_servers_set_timeout_ms (t, 0), -1);
    cr_expect_eq (sl_mcp_servers_set_timeout_ms (t, SL_MCP_TIMEOUT_MS_MAX + 1), -1);
    cr_expect_eq (sl_mcp_servers_timeout_ms (t), 5000, "unchanged by a refusal");
    cr_expect_eq (sl_mcp_servers_set_timeout_ms (t, SL_MCP_TIMEOUT_MS_MAX), 0);
    cr_expect_eq (sl_mcp_servers_set_max_response (t, 65536), 0);
    cr_expect_eq (sl_mcp_servers_max_response (t), 65536);
    cr_expect_eq (sl_mcp_servers_set_max_response (t, SL_MCP_RESPONSE_MIN - 1), -1);
    cr_expect_eq (sl_mcp_servers_set_max_response (t, (size_t) SL_MCP_RESPONSE_MAX + 1), -1);
    cr_expect_eq (sl_mcp_servers_max_response (t), 65536, "unchanged by a refusal");
    sl_mcp_servers_destroy (&t);
}

Test (sl_mcp_servers, teams_that_may_use_a_server)
{
    const char *teams [] = { "payments", NULL };
    sl_mcp_server_t listed = { .name = "a", .url = "http://x", .teams = teams };
    cr_expect (sl_mcp_server_allows (&listed, sl_str ("payments")));
    cr_expect_not (sl_mcp_server_allows (&listed, sl_str ("pay")));
    cr_expect_not (sl_mcp_server_allows (&listed, sl_str ("research")));
    cr_expect_not (sl_mcp_server_allows (&listed, SL_STR_NULL), "no team: not a team it lists");
    sl_mcp_server_t open = { .name = "b", .url = "http://y" };
    cr_expect (sl_mcp_server_allows (&open, sl_str ("research")));
    cr_expect (sl_mcp_server_allows (&open, SL_STR_NULL));
}
