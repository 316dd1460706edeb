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

#include "common/http/sl_httpd.h"
#include "services/gateway/gateway.h"

typedef struct _gateway_mcp_t gateway_mcp_t;

#define GATEWAY_MCP_SESSIONS_MAX 10000  //  --mcp-sessions-max: client sessions kept at most
#define GATEWAY_MCP_SESSIONS_PER_KEY 100    //  --mcp-sessions-per-key: of one key (or token user)
#define GATEWAY_MCP_SESSIONS_PER_TEAM 1000  //  --mcp-sessions-per-team: of one team
#define GATEWAY_MCP_SESSION_IDLE_MS (30 * 60 * 1000)   //  a session unused this long expires

//  NULL when the routes file names no MCP server (every /mcp path is then
//  404 with a JSON-RPC error, answered by gateway_mcp_serve all the same).
gateway_mcp_t *gateway_mcp_new (gateway_t *gateway);
void gateway_mcp_destroy (gateway_mcp_t **self_p);
//  Serve req when path is /mcp or under /mcp/: true when it was one
//  (answered now or later), false otherwise. self may be NULL.
bool gateway_mcp_serve (gateway_mcp_t *self, gateway_t *gateway, sl_http_req_t *req, const char *method,
                        const char *path);
//  A request's client left or its answer went out: true when it was an
//  MCP request (its legs and server call, if any, are cancelled).
bool gateway_mcp_closed (gateway_mcp_t *self, sl_http_req_t *req);

#endif
