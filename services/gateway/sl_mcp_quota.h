/*  sl_mcp_quota.h - how many MCP sessions each tenant of the gateway
    holds, against its caps.

    A session belongs to its owner: the caller's key id, team and user
    together (a sluice key, or one user of a signed token: tokens signed
    by one key are as many owners as they name users). The gateway keeps
    at most per_owner sessions of one owner (--mcp-sessions-per-key),
    per_team of one team (--mcp-sessions-per-team) and total in all
    (--mcp-sessions-max), so one key that opens sessions as fast as it
    may fills its own share, never its team's or the gateway's.

    Counts only: the sessions themselves are the gateway's
    (gateway_mcp_session.h). An owner or team holding none takes no
    memory here. Pure: no I/O.
*/
#ifndef SL_MCP_QUOTA_H
#define SL_MCP_QUOTA_H

#include <stddef.h>

#define SL_MCP_OWNER_FIELD_MAX 160      //  bytes of a key id, team or user in an owner
#define SL_MCP_OWNER_MAX (3 * (SL_MCP_OWNER_FIELD_MAX + 8))    //  an owner's text, with its NUL

typedef struct _sl_mcp_quota_t sl_mcp_quota_t;

typedef enum {
    SL_MCP_QUOTA_OK = 0,                //  a place was taken
    SL_MCP_QUOTA_OWNER,                 //  the owner holds per_owner sessions
    SL_MCP_QUOTA_TEAM,                  //  its team holds per_team
    SL_MCP_QUOTA_TOTAL                  //  the gateway holds total
} sl_mcp_quota_full_t;

typedef struct {
    size_t per_owner;                   //  sessions of one owner at most
    size_t per_team;                    //  of one team
    size_t total;                       //  in all
} sl_mcp_quota_caps_t;

sl_mcp_quota_t *sl_mcp_quota_new (const sl_mcp_quota_caps_t *caps);
void sl_mcp_quota_destroy (sl_mcp_quota_t **self_p);

//  The owner of a caller into out (SL_MCP_OWNER_MAX bytes): its key id,
//  team and user (NULL: ""), each prefixed by its length, so two callers
//  differing in any of them never share an owner.
void sl_mcp_quota_owner (const char *key_id, const char *team, const char *user, char *out);
//  Take a place for a session of owner in team: SL_MCP_QUOTA_OK, or the
//  first cap that is full (the owner's, the team's, the total), and
//  nothing taken.
sl_mcp_quota_full_t sl_mcp_quota_take (sl_mcp_quota_t *self, const char *owner, const char *team);
//  A session of owner in team ended: its place is given back.
void sl_mcp_quota_give (sl_mcp_quota_t *self, const char *owner, const char *team);
//  Places held by owner, by team, in all.
size_t sl_mcp_quota_owner_held (sl_mcp_quota_t *self, const char *owner);
size_t sl_mcp_quota_team_held (sl_mcp_quota_t *self, const char *team);
size_t sl_mcp_quota_held (sl_mcp_quota_t *self);
//  The cap a refusal names, for what the client reads.
size_t sl_mcp_quota_cap (sl_mcp_quota_t *self, sl_mcp_quota_full_t full);

#endif
