/*  gateway_mcp.h - the gateway's MCP front: the MCP servers of the routes
    file's mcp: section served to clients at /mcp/<server> (and /mcp when
    multiplexed), Streamable HTTP, under the same policy as a model's
    traffic (docs/mcp.md).

    What policy must see of an MCP request becomes a leg through the
    pipeline (gateway_leg.h): a tools/call's call before it reaches the
    server, its result before it reaches the client, a tools/list's
    definitions. The rest (initialize, ping, notifications, sessions,
    server/discover) is answered here. The servers are called by
    gateway_mcp_client; the client's sessions are kept by
    gateway_mcp_session.
*/
#ifndef GATEWAY_MCP_H
#define GATEWAY_MCP_H

#include <stdbool.h>

#include "services/gateway/gateway_core.h"
#include "services/gateway/gateway_leg.h"

typedef struct _gateway_mcp_t gateway_mcp_t;

#define GATEWAY_MCP_SESSIONS_MAX 10000  //  --mcp-sessions-max: client sessions kept at most
#define GATEWAY_MCP_SESSIONS_PER_KEY 100    //  --mcp-sessions-per-key: of one key (or token user)
#define GATEWAY_MCP_SESSIONS_PER_TEAM 1000  //  --mcp-sessions-per-team: of one team
#define GATEWAY_MCP_SESSION_IDLE_MS (30 * 60 * 1000)   //  a session unused this long expires

//  Registers the route of /mcp and the paths under it, served while the
//  gateway drains (a JSON-RPC error says so). Without MCP servers in the
//  routes file, every /mcp path is 404 with a JSON-RPC error. Its legs
//  start in legs (borrowed, outlives it).
gateway_mcp_t *gateway_mcp_new (gateway_core_t *core, gateway_legs_t *legs, const gateway_config_t *config);
//  After gateway_core_stop; before the legs go.
void gateway_mcp_destroy (gateway_mcp_t **self_p);

#endif
