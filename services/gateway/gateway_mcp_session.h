/*  gateway_mcp_session.h - the MCP sessions the gateway keeps for its
    clients (the session revisions, 2025-06-18 and 2025-11-25), and the
    upstream sessions of its stateless clients (2026-07-28).

    A session begins with the client's initialize, which the gateway
    answers itself; its id (Mcp-Session-Id) is minted here: 16 random
    bytes as 32 hex digits. It is bound to its owner, the key id, team
    and user that made it (sl_mcp_quota_owner: two users of tokens signed
    by one key are two owners): the same id from another owner is a
    session not found (404), as is one that expired or was ended
    (DELETE). Sessions left idle past idle_ms expire. At most per_key
    sessions of one owner, per_team of one team and max in all are kept
    (sl_mcp_quota): a new one over a cap is refused, saying which (the
    client may end one, or retry; none is evicted while in use).

    What a session keeps, per server it reaches (one for /mcp/<server>,
    every one on the multiplexed /mcp): its upstream session with the
    server (gateway_mcp_client.h) and the server's tool definitions last
    listed; and, for the whole session, its earlier calls and the
    untrusted tools it read (sl_mcp_history_t, bounded in count and
    bytes), which go into the legs so the request judge's history and
    taint conditions see them.

    Stateless requests (2026-07-28) have no session, hence no history;
    their calls to a server still run in an upstream session (the server
    may speak a session revision) of their owner's alone, never one
    another owner's requests use: one per owner, kept here the same way
    (idle ones expire, at most max owners).

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
#include "services/gateway/sl_mcp_quota.h"

#define GATEWAY_MCP_SESSION_ID_SIZE SL_SID_HEX_SIZE    //  32 hex digits and a NUL
#define GATEWAY_MCP_TEAM_MAX 128                        //  the longest team counted (an identity's)

typedef struct _gateway_mcp_sessions_t gateway_mcp_sessions_t;

typedef struct {
    char id [GATEWAY_MCP_SESSION_ID_SIZE];
    char owner [SL_MCP_OWNER_MAX];      //  whose it is (sl_mcp_quota_owner)
    char team [GATEWAY_MCP_TEAM_MAX];   //  the owner's team, whose count it is in
    bool stateless;                     //  a stateless owner's upstream sessions, no client session
    sl_mcp_rev_t rev;                   //  what the client speaks in it
    sl_mcp_history_t *history;          //  its earlier calls (NULL: stateless)
    size_t servers;                     //  entries of the two arrays below
    gateway_mcp_upstream_t **upstream;  //  by server index (sl_mcp_servers_at)
    json_t **tools;                     //  by server index: the definitions last listed, or NULL
} gateway_mcp_session_t;

typedef struct {
    size_t max;                         //  client sessions in all (and stateless owners)
    size_t per_key;                     //  of one owner
    size_t per_team;                    //  of one team
    int64_t idle_ms;                    //  a session unused this long expires
    size_t servers;                     //  how many the routes file names
} gateway_mcp_sessions_config_t;

gateway_mcp_sessions_t *gateway_mcp_sessions_new (const gateway_mcp_sessions_config_t *config);
//  Frees every session not held by a request.
void gateway_mcp_sessions_destroy (gateway_mcp_sessions_t **self_p);

//  A new session of owner (of team) speaking rev (held: release it), or
//  NULL when a cap is full: *full says which.
gateway_mcp_session_t *gateway_mcp_sessions_open (gateway_mcp_sessions_t *self, const char *owner, const char *team,
                                                  sl_mcp_rev_t rev, int64_t now_us, sl_mcp_quota_full_t *full);
//  The session id names, when owner made it (held: release it), else
//  NULL.
gateway_mcp_session_t *gateway_mcp_sessions_find (gateway_mcp_sessions_t *self, const char *id, const char *owner,
                                                  int64_t now_us);
//  The upstream sessions of owner's stateless requests (held: release
//  it), made on first need; NULL when max owners hold theirs.
gateway_mcp_session_t *gateway_mcp_sessions_stateless (gateway_mcp_sessions_t *self, const char *owner,
                                                       const char *team, int64_t now_us);
//  The cap a refusal of open names.
size_t gateway_mcp_sessions_cap (gateway_mcp_sessions_t *self, sl_mcp_quota_full_t full);
//  A request is done with its session.
void gateway_mcp_sessions_release (gateway_mcp_sessions_t *self, gateway_mcp_session_t **session_p);
//  End a session (DELETE): it is no longer found; end_fn is called for
//  each upstream session it had, so the server hears of it too.
void gateway_mcp_sessions_close (gateway_mcp_sessions_t *self, gateway_mcp_session_t *session,
                                 void (*end_fn) (void *arg, size_t server, gateway_mcp_upstream_t *upstream),
                                 void *arg);
//  Expire the sessions idle past idle_ms (and not in use), stateless
//  owners' too; how many.
size_t gateway_mcp_sessions_expire (gateway_mcp_sessions_t *self, int64_t now_us,
                                    void (*end_fn) (void *arg, size_t server, gateway_mcp_upstream_t *upstream),
                                    void *arg);
//  Client sessions held (stateless owners' not counted).
size_t gateway_mcp_sessions_count (gateway_mcp_sessions_t *self);

#endif
