/*  sl_mcp_servers.c - the MCP servers sluice fronts (see sl_mcp_servers.h). */
#include "common/mcp/sl_mcp_servers.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

struct _sl_mcp_servers_t {
    sl_mcp_server_t *servers;           //  strings and team lists owned, in the order added
    size_t count;
    bool multiplexed;
    long timeout_ms;
    size_t max_response;
};

sl_mcp_servers_t *
sl_mcp_servers_new (void)
{
    sl_mcp_servers_t *self = sl_xcalloc (1, sizeof (sl_mcp_servers_t));
    self->timeout_ms = SL_MCP_TIMEOUT_MS_DEFAULT;
    self->max_response = SL_MCP_MAX_RESPONSE_DEFAULT;
    return self;
}

static void
s_server_free (sl_mcp_server_t *server)
{
    free ((char *) server->name);
    free ((char *) server->url);
    free ((char *) server->key_env);
    free ((char *) server->header);
    free ((char *) server->scheme);
    free ((char *) server->revision);
    for (size_t i = 0; server->teams && server->teams [i]; i++)
        free ((char *) server->teams [i]);
    free ((void *) server->teams);
}

void
sl_mcp_servers_destroy (sl_mcp_servers_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_mcp_servers_t *self = *self_p;
    for (size_t i = 0; i < self->count; i++)
        s_server_free (&self->servers [i]);
    free (self->servers);
    free (self);
    *self_p = NULL;
}

int
sl_mcp_servers_add (sl_mcp_servers_t *self, const sl_mcp_server_t *server)
{
    if (!server->name || !*server->name || !server->url || !*server->url
    ||  sl_mcp_servers_find (self, sl_str (server->name)))
        return -1;
    self->servers = sl_xrealloc (self->servers, (self->count + 1) * sizeof (sl_mcp_server_t));
    sl_mcp_server_t *copy = &self->servers [self->count++];
    copy->name = sl_xstrdup (server->name);
    copy->url = sl_xstrdup (server->url);
    copy->key_env = sl_xstrdup (server->key_env ? server->key_env : "");
    copy->header = sl_xstrdup (server->header ? server->header : SL_MCP_HEADER_DEFAULT);
    copy->scheme = sl_xstrdup (server->scheme ? server->scheme : SL_MCP_SCHEME_DEFAULT);
    copy->revision = sl_xstrdup (server->revision ? server->revision : SL_MCP_REVISION_DEFAULT);
    copy->teams = NULL;
    if (server->teams) {
        size_t teams = 0;
        while (server->teams [teams])
            teams++;
        const char **list = sl_xcalloc (teams + 1, sizeof *list);
        for (size_t i = 0; i < teams; i++)
            list [i] = sl_xstrdup (server->teams [i]);
        copy->teams = list;
    }
    return 0;
}

void
sl_mcp_servers_set_multiplexed (sl_mcp_servers_t *self, bool multiplexed)
{
    self->multiplexed = multiplexed;
}

int
sl_mcp_servers_set_timeout_ms (sl_mcp_servers_t *self, long timeout_ms)
{
    if (timeout_ms < 1 || timeout_ms > SL_MCP_TIMEOUT_MS_MAX)
        return -1;
    self->timeout_ms = timeout_ms;
    return 0;
}

int
sl_mcp_servers_set_max_response (sl_mcp_servers_t *self, size_t bytes)
{
    if (bytes < SL_MCP_RESPONSE_MIN || bytes > SL_MCP_RESPONSE_MAX)
        return -1;
    self->max_response = bytes;
    return 0;
}

size_t
sl_mcp_servers_count (const sl_mcp_servers_t *self)
{
    return self->count;
}

const sl_mcp_server_t *
sl_mcp_servers_at (const sl_mcp_servers_t *self, size_t i)
{
    return i < self->count ? &self->servers [i] : NULL;
}

const sl_mcp_server_t *
sl_mcp_servers_find (const sl_mcp_servers_t *self, sl_str_t name)
{
    for (size_t i = 0; i < self->count; i++)
        if (sl_str_eq (name, self->servers [i].name))
            return &self->servers [i];
    return NULL;
}

bool
sl_mcp_servers_multiplexed (const sl_mcp_servers_t *self)
{
    return self->multiplexed;
}

long
sl_mcp_servers_timeout_ms (const sl_mcp_servers_t *self)
{
    return self->timeout_ms;
}

size_t
sl_mcp_servers_max_response (const sl_mcp_servers_t *self)
{
    return self->max_response;
}

bool
sl_mcp_server_allows (const sl_mcp_server_t *server, sl_str_t team)
{
    if (!server->teams)
        return true;
    for (size_t i = 0; server->teams [i]; i++)
        if (sl_str_eq (team, server->teams [i]))
            return true;
    return false;                       //  no team, or another: not this server
}
