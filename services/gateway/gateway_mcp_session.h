/*  gateway_mcp_session.h - the MCP sessions the gateway keeps for its
    clients (the session revisions, 2025-06-18 and 2025-11-25).

    A session begins with the client's initialize, which the gateway
    answers itself; its id (Mcp-Session-Id) is minted here: 16 random
    bytes as 32 hex digits. It is bound to the key id that made it: the
    same id from another key is a session not found (404), as is one that
    expired or was ended (DELETE). Sessions left idle past idle_ms expire,
    and at most max are kept: a new one when the table is full is refused
    (the client may retry; none is evicted while in use).

    What a session keeps, per server it reaches (one for /mcp/<server>,
    every one on the multiplexed /mcp): its upstream session with the
    server (gateway_mcp_client.h) and the server's tool definitions last
    listed; and, for the whole session, its earlier calls
    (sl_mcp_history_t), which go into the legs so the request judge's
    history and taint conditions see them. Stateless requests (2026-07-28)
    have no session, hence no history.

    Reference counted: a request in flight holds its session, so an
    expiry or a DELETE meanwhile frees it only when the request ends.
*/
#ifndef GATEWAY_MCP_SESSION_H
#define GATEWAY_MCP_SESSION_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/mcp/sl_mcp_leg.h"
#include "common/mcp/sl_mcp_rpc.h"
#include "proto/sl_msg.h"
#include "services/gateway/gateway_mcp_client.h"

#define GATEWAY_MCP_SESSION_ID_SIZE SL_SID_HEX_SIZE    //  32 hex digits and a NUL
#define GATEWAY_MCP_KEY_MAX 128                         //  the longest key id bound

typedef struct _gateway_mcp_sessions_t gateway_mcp_sessions_t;

typedef struct {
    char id [GATEWAY_MCP_SESSION_ID_SIZE];
    char key_id [GATEWAY_MCP_KEY_MAX];  //  whose it is
    sl_mcp_rev_t rev;                   //  what the client speaks in it
    sl_mcp_history_t *history;          //  its earlier calls
    size_t servers;                     //  entries of the two arrays below
    gateway_mcp_upstream_t **upstream;  //  by server index (sl_providers_mcp_server)
    json_t **tools;                     //  by server index: the definitions last listed, or NULL
} gateway_mcp_session_t;

//  max sessions at most, expiring after idle_ms unused; servers: how
//  many the routes file names.
gateway_mcp_sessions_t *gateway_mcp_sessions_new (size_t max, int64_t idle_ms, size_t servers);
//  Frees every session not held by a request.
void gateway_mcp_sessions_destroy (gateway_mcp_sessions_t **self_p);

//  A new session of key_id speaking rev (held: release it), or NULL when
//  the table is full.
gateway_mcp_session_t *gateway_mcp_sessions_open (gateway_mcp_sessions_t *self, const char *key_id, sl_mcp_rev_t rev,
                                                  int64_t now_us);
//  The session id names, when key_id made it (held: release it), else
//  NULL.
gateway_mcp_session_t *gateway_mcp_sessions_find (gateway_mcp_sessions_t *self, const char *id, const char *key_id,
                                                  int64_t now_us);
//  A request is done with its session.
void gateway_mcp_sessions_release (gateway_mcp_sessions_t *self, gateway_mcp_session_t **session_p);
//  End a session (DELETE): it is no longer found; end_fn is called for
//  each upstream session it had, so the server hears of it too.
void gateway_mcp_sessions_close (gateway_mcp_sessions_t *self, gateway_mcp_session_t *session,
                                 void (*end_fn) (void *arg, size_t server, gateway_mcp_upstream_t *upstream),
                                 void *arg);
//  Expire the sessions idle past idle_ms (and not in use); how many.
size_t gateway_mcp_sessions_expire (gateway_mcp_sessions_t *self, int64_t now_us,
                                    void (*end_fn) (void *arg, size_t server, gateway_mcp_upstream_t *upstream),
                                    void *arg);
size_t gateway_mcp_sessions_count (gateway_mcp_sessions_t *self);

#endif
