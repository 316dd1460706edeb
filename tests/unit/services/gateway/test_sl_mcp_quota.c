/*  Unit tests: services/gateway/sl_mcp_quota - the MCP sessions each
    tenant holds: a key at its cap is refused while another key, of its
    team or another, still gets places; a team at its cap likewise; the
    total last; places given back are taken again; owners differing in
    key id, team or user never share a count. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "services/gateway/sl_mcp_quota.h"

Test (sl_mcp_quota, owner_team_and_total_caps)
{
    sl_mcp_quota_t *q = sl_mcp_quota_new (&(sl_mcp_quota_caps_t) { .per_owner = 2, .per_team = 3, .total = 5 });
    char a [SL_MCP_OWNER_MAX], b [SL_MCP_OWNER_MAX], c [SL_MCP_OWNER_MAX], d [SL_MCP_OWNER_MAX];
    sl_mcp_quota_owner ("red-1", "red", "", a);
    sl_mcp_quota_owner ("red-2", "red", "", b);
    sl_mcp_quota_owner ("eng-1", "eng", "", c);
    sl_mcp_quota_owner ("eng-2", "eng", "", d);
    cr_expect_eq (sl_mcp_quota_take (q, a, "red"), SL_MCP_QUOTA_OK);
    cr_expect_eq (sl_mcp_quota_take (q, a, "red"), SL_MCP_QUOTA_OK);
    cr_expect_eq (sl_mcp_quota_take (q, a, "red"), SL_MCP_QUOTA_OWNER, "the key's own cap");
    cr_expect_eq (sl_mcp_quota_owner_held (q, a), 2);
    cr_expect_eq (sl_mcp_quota_take (q, b, "red"), SL_MCP_QUOTA_OK, "another key of the team");
    cr_expect_eq (sl_mcp_quota_take (q, b, "red"), SL_MCP_QUOTA_TEAM, "the team's cap");
    cr_expect_eq (sl_mcp_quota_team_held (q, "red"), 3);
    cr_expect_eq (sl_mcp_quota_take (q, c, "eng"), SL_MCP_QUOTA_OK, "another team");
    cr_expect_eq (sl_mcp_quota_take (q, d, "eng"), SL_MCP_QUOTA_OK);
    cr_expect_eq (sl_mcp_quota_take (q, d, "eng"), SL_MCP_QUOTA_TOTAL, "the gateway's cap, last");
    cr_expect_eq (sl_mcp_quota_held (q), 5);
    cr_expect_eq (sl_mcp_quota_cap (q, SL_MCP_QUOTA_OWNER), 2);
    cr_expect_eq (sl_mcp_quota_cap (q, SL_MCP_QUOTA_TEAM), 3);
    cr_expect_eq (sl_mcp_quota_cap (q, SL_MCP_QUOTA_TOTAL), 5);
    //  Given back, taken again; an owner back at zero holds nothing.
    sl_mcp_quota_give (q, a, "red");
    cr_expect_eq (sl_mcp_quota_take (q, b, "red"), SL_MCP_QUOTA_OK);
    sl_mcp_quota_give (q, c, "eng");
    cr_expect_eq (sl_mcp_quota_owner_held (q, c), 0);
    cr_expect_eq (sl_mcp_quota_team_held (q, "eng"), 1);
    cr_expect_eq (sl_mcp_quota_held (q), 4);
    sl_mcp_quota_destroy (&q);
    sl_mcp_quota_destroy (&q);
}

//  A token's key id is its signing key's ("jwt:<kid>"): its users are
//  owners apart. Nor can a field's text pass for two fields.
Test (sl_mcp_quota, owners_apart_by_key_team_and_user)
{
    char owners [6][SL_MCP_OWNER_MAX];
    sl_mcp_quota_owner ("jwt:idp-1", "search", "erin", owners [0]);
    sl_mcp_quota_owner ("jwt:idp-1", "search", "frank", owners [1]);
    sl_mcp_quota_owner ("jwt:idp-1", "ops", "erin", owners [2]);
    sl_mcp_quota_owner ("jwt:idp-2", "search", "erin", owners [3]);
    sl_mcp_quota_owner ("a", "b:c", "", owners [4]);
    sl_mcp_quota_owner ("a", "b", ":c", owners [5]);
    for (int i = 0; i < 6; i++)
        for (int j = i + 1; j < 6; j++)
            cr_expect_str_neq (owners [i], owners [j], "%d and %d", i, j);
    char again [SL_MCP_OWNER_MAX], anonymous [SL_MCP_OWNER_MAX];
    sl_mcp_quota_owner ("jwt:idp-1", "search", "erin", again);
    cr_expect_str_eq (again, owners [0]);
    sl_mcp_quota_owner (NULL, NULL, NULL, anonymous);
    cr_expect_str_eq (anonymous, "0:0:0:");
    //  Fields longer than an identity's are cut, and the owner still fits.
    char big [4 * SL_MCP_OWNER_FIELD_MAX];
    memset (big, 'k', sizeof big - 1);
    big [sizeof big - 1] = 0;
    char owner [SL_MCP_OWNER_MAX];
    sl_mcp_quota_owner (big, big, big, owner);
    cr_expect_lt (strlen (owner), SL_MCP_OWNER_MAX);
}
