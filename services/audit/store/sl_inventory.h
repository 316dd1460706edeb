/*  sl_inventory.h - the tool definitions the requests carried, per team.

    A stream's start holds its request's tool definitions (PROTOCOL.md,
    `tools`: name, schema, description, server, tool, digest, truncated).
    sl_inventory_record keeps each once per (team, name, digest) in the
    store's tools table: its server and tool, description and schema,
    first and last seen, the requests that carried it, and bounded lists
    of the key ids and models that sent it (SL_INVENTORY_LIST_MAX each;
    more are not named). A definition that changes gets a row of its own
    beside the old one: that is a change.

    sl_inventory_query answers GET /api/tools: the definitions by filter
    (team, name, server; changed: only names with more than one
    definition in their team), and the changes among them.

    Text is kept as the archive keeps it (sl_record_clean, at max_text);
    a definition the gateway or the store cut is marked truncated.

    Bounded per team: a team keeps at most its cap of definitions
    (sl_inventory_set_cap); a new one past it pushes out the team's least
    recently seen, so a client sending random definitions evicts its own
    junk before the tools its agents keep using, and cannot grow the store
    without bound. Retention takes definitions last seen before its
    cutoff (sl_retention.h).
*/
#ifndef SL_INVENTORY_H
#define SL_INVENTORY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "proto/sl_msg.h"
#include "services/audit/store/sl_store.h"

#define SL_INVENTORY_LIST_MAX 16        //  key ids, models named per definition
#define SL_INVENTORY_DEFAULT_LIMIT 500  //  definitions in one answer
#define SL_INVENTORY_MAX_LIMIT 5000
#define SL_INVENTORY_TEAM_MAX 2000      //  definitions a team keeps, by default

typedef struct _sl_inventory_t sl_inventory_t;

//  The store is borrowed.
sl_inventory_t *sl_inventory_new (sl_store_t *store, size_t max_text);
void sl_inventory_destroy (sl_inventory_t **self_p);
//  The definitions a team keeps at most (0: SL_INVENTORY_TEAM_MAX).
void sl_inventory_set_cap (sl_inventory_t *self, int per_team);
//  Record a start's tool definitions, seen at (Unix ms), inside the
//  caller's transaction. 0 (also when it has none, or they are not a
//  JSON array), -1 the store failed.
int sl_inventory_record (sl_inventory_t *self, int64_t at, const sl_msg_t *start);

//  A filter; NULL or "" fields do not filter.
typedef struct {
    const char *team;
    const char *name;                   //  the name as written
    const char *server;
    bool changed;                       //  only names with several definitions in their team
    int limit;                          //  0: SL_INVENTORY_DEFAULT_LIMIT
} sl_inventory_filter_t;

//  {"tools":[{team,name,server,tool,digest,description,schema,truncated,
//  first_seen,last_seen,requests,key_ids:[..],models:[..],definitions},..],
//  "changes":[{team,name,definitions:[{digest,first_seen,last_seen},..]},..],
//  "more":bool}: by team, server, name, the newest definition first;
//  definitions counts the name's definitions in its team; changes lists
//  the names among them with more than one, their newest first. schema is
//  the JSON value (a string when it was cut). 0, or -1 the store failed.
int sl_inventory_query (sl_store_t *store, const sl_inventory_filter_t *filter, sl_buf_t *out);

#endif
