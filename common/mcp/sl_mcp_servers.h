/*  sl_mcp_servers.h - the MCP servers sluice fronts, and how.

    A pure table, the routes file's mcp: section as its loader fills it
    (common/config/sl_routesfile.h): each server's name (served at
    /mcp/<name>), its URL, the credential sluice sends it (the variable
    that holds it, the header and the prefix it goes in), the revision
    sluice speaks to it, and the teams that may use it; and, for them all,
    whether /mcp also serves every server at once (multiplexed: tools
    named <server>__<tool>), a server's answer's deadline and the most it
    may be. The gateway's MCP front serves from it.

    Strings are copied in; what the table returns is borrowed and lives
    as long as it.
*/
#ifndef SL_MCP_SERVERS_H
#define SL_MCP_SERVERS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/base/sl_str.h"

#define SL_MCP_NAME_MAX 64                              //  longest server name
#define SL_MCP_TIMEOUT_MS_DEFAULT 60000L                //  a server's answer's deadline
#define SL_MCP_TIMEOUT_MS_MAX 3600000L                  //  ... an hour at most
#define SL_MCP_MAX_RESPONSE_DEFAULT (8u * 1024u * 1024u) //  the most a server's answer may be
#define SL_MCP_RESPONSE_MIN 1024u                       //  ... bounded from 1 KiB
#define SL_MCP_RESPONSE_MAX (1u << 30)                  //  ... to 1 GiB
#define SL_MCP_HEADER_DEFAULT "Authorization"           //  the credential's header
#define SL_MCP_SCHEME_DEFAULT "Bearer "                 //  the credential's prefix
#define SL_MCP_REVISION_DEFAULT "2025-11-25"            //  what sluice speaks to a server

typedef struct _sl_mcp_servers_t sl_mcp_servers_t;

//  An MCP server sluice fronts.
typedef struct {
    const char *name;                   //  [A-Za-z0-9_-]{1,64}: served at /mcp/<name>
    const char *url;                    //  http or https
    const char *key_env;                //  variable holding sluice's credential, "" for none
    const char *header;                 //  the credential's header (default Authorization)
    const char *scheme;                 //  the credential's prefix (default "Bearer ")
    const char *revision;               //  what sluice speaks to it (default 2025-11-25)
    const char *const *teams;           //  NULL-terminated, NULL: every team
} sl_mcp_server_t;

//  An empty table: no server, not multiplexed, the default deadline and
//  bound.
sl_mcp_servers_t *sl_mcp_servers_new (void);
void sl_mcp_servers_destroy (sl_mcp_servers_t **self_p);

//  Add a server at the end, copied with its teams (key_env, header,
//  scheme and revision NULL: their defaults). 0, or -1 when it has no
//  name or no url, or its name is taken.
int sl_mcp_servers_add (sl_mcp_servers_t *self, const sl_mcp_server_t *server);
void sl_mcp_servers_set_multiplexed (sl_mcp_servers_t *self, bool multiplexed);
//  0, or -1 (nothing changed) outside [1, SL_MCP_TIMEOUT_MS_MAX].
int sl_mcp_servers_set_timeout_ms (sl_mcp_servers_t *self, long timeout_ms);
//  0, or -1 (nothing changed) outside [SL_MCP_RESPONSE_MIN, SL_MCP_RESPONSE_MAX].
int sl_mcp_servers_set_max_response (sl_mcp_servers_t *self, size_t bytes);

//  The servers, in the order added.
size_t sl_mcp_servers_count (const sl_mcp_servers_t *self);
const sl_mcp_server_t *sl_mcp_servers_at (const sl_mcp_servers_t *self, size_t i);
//  The server of that name, or NULL.
const sl_mcp_server_t *sl_mcp_servers_find (const sl_mcp_servers_t *self, sl_str_t name);
//  /mcp also serves every server (tools named <server>__<tool>).
bool sl_mcp_servers_multiplexed (const sl_mcp_servers_t *self);
long sl_mcp_servers_timeout_ms (const sl_mcp_servers_t *self);
size_t sl_mcp_servers_max_response (const sl_mcp_servers_t *self);

//  True when team may use server (a server without teams: every team).
bool sl_mcp_server_allows (const sl_mcp_server_t *server, sl_str_t team);

#endif
