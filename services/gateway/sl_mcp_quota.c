/*  sl_mcp_quota.c - how many MCP sessions each tenant holds (see
    sl_mcp_quota.h): a count per owner and per team, each dropped when it
    comes back to zero.
*/
#include "services/gateway/sl_mcp_quota.h"

#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

struct _sl_mcp_quota_t {
    sl_mcp_quota_caps_t caps;
    zhashx_t *owners;                   //  owner -> size_t * (sessions held, > 0)
    zhashx_t *teams;                    //  team -> size_t *
    size_t held;
};

static void
s_count_free (void **item_p)
{
    free (*item_p);
    *item_p = NULL;
}

static zhashx_t *
s_counts_new (void)
{
    zhashx_t *counts = zhashx_new ();
    zhashx_set_destructor (counts, s_count_free);
    return counts;
}

sl_mcp_quota_t *
sl_mcp_quota_new (const sl_mcp_quota_caps_t *caps)
{
    sl_mcp_quota_t *self = sl_xcalloc (1, sizeof *self);
    self->caps = *caps;
    self->owners = s_counts_new ();
    self->teams = s_counts_new ();
    return self;
}

void
sl_mcp_quota_destroy (sl_mcp_quota_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_mcp_quota_t *self = *self_p;
    zhashx_destroy (&self->owners);
    zhashx_destroy (&self->teams);
    free (self);
    *self_p = NULL;
}

//  "<length>:<text>", the text cut at SL_MCP_OWNER_FIELD_MAX.
static size_t
s_put_field (char *out, size_t size, const char *text)
{
    int n = (int) strnlen (text ? text : "", SL_MCP_OWNER_FIELD_MAX);
    int wrote = snprintf (out, size, "%d:%.*s", n, n, text ? text : "");
    return wrote > 0 && (size_t) wrote < size ? (size_t) wrote : size - 1;
}

void
sl_mcp_quota_owner (const char *key_id, const char *team, const char *user, char *out)
{
    size_t at = s_put_field (out, SL_MCP_OWNER_MAX, key_id);
    at += s_put_field (out + at, SL_MCP_OWNER_MAX - at, team);
    s_put_field (out + at, SL_MCP_OWNER_MAX - at, user);
}

static size_t
s_get (zhashx_t *counts, const char *name)
{
    size_t *n = zhashx_lookup (counts, name);
    return n ? *n : 0;
}

static void
s_add (zhashx_t *counts, const char *name)
{
    size_t *n = zhashx_lookup (counts, name);
    if (!n) {
        n = sl_xcalloc (1, sizeof *n);
        zhashx_insert (counts, name, n);
    }
    (*n)++;
}

static void
s_sub (zhashx_t *counts, const char *name)
{
    size_t *n = zhashx_lookup (counts, name);
    assert (n && *n > 0);               //  a place given back was taken
    if (--*n == 0)
        zhashx_delete (counts, name);
}

sl_mcp_quota_full_t
sl_mcp_quota_take (sl_mcp_quota_t *self, const char *owner, const char *team)
{
    if (s_get (self->owners, owner) >= self->caps.per_owner)
        return SL_MCP_QUOTA_OWNER;
    if (s_get (self->teams, team) >= self->caps.per_team)
        return SL_MCP_QUOTA_TEAM;
    if (self->held >= self->caps.total)
        return SL_MCP_QUOTA_TOTAL;
    s_add (self->owners, owner);
    s_add (self->teams, team);
    self->held++;
    return SL_MCP_QUOTA_OK;
}

void
sl_mcp_quota_give (sl_mcp_quota_t *self, const char *owner, const char *team)
{
    s_sub (self->owners, owner);
    s_sub (self->teams, team);
    self->held--;
}

size_t sl_mcp_quota_owner_held (sl_mcp_quota_t *self, const char *owner) { return s_get (self->owners, owner); }
size_t sl_mcp_quota_team_held (sl_mcp_quota_t *self, const char *team) { return s_get (self->teams, team); }
size_t sl_mcp_quota_held (sl_mcp_quota_t *self) { return self->held; }

size_t
sl_mcp_quota_cap (sl_mcp_quota_t *self, sl_mcp_quota_full_t full)
{
    switch (full) {
        case SL_MCP_QUOTA_OWNER: return self->caps.per_owner;
        case SL_MCP_QUOTA_TEAM: return self->caps.per_team;
        case SL_MCP_QUOTA_TOTAL: return self->caps.total;
        default: return 0;
    }
}
