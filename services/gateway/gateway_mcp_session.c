/*  gateway_mcp_session.c - the MCP sessions' table (see
    gateway_mcp_session.h): a hash by session id of the client sessions,
    counted per owner and team (sl_mcp_quota), and a hash by owner of the
    stateless owners' upstream sessions; each entry counted by the
    requests that hold it. */
#include "services/gateway/gateway_mcp_session.h"

#include <czmq.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

typedef struct {
    gateway_mcp_session_t public;       //  first: what callers see
    int refs;                           //  the table's (while open) and the requests'
    bool open;                          //  in the table
    int64_t used_us;                    //  last found or opened
} s_session_t;

struct _gateway_mcp_sessions_t {
    zhashx_t *by_id;                    //  id -> s_session_t (open client sessions)
    zhashx_t *by_owner;                 //  owner -> s_session_t (stateless owners)
    sl_mcp_quota_t *quota;              //  the client sessions per owner and team
    size_t max;
    int64_t idle_us;
    size_t servers;
};

static void
s_free (s_session_t *s)
{
    gateway_mcp_session_t *p = &s->public;
    sl_mcp_history_destroy (&p->history);
    for (size_t i = 0; i < p->servers; i++) {
        gateway_mcp_upstream_unref (&p->upstream [i]);
        json_decref (p->tools [i]);
    }
    free (p->upstream);
    free (p->tools);
    free (s);
}

static void
s_unref (s_session_t *s)
{
    if (--s->refs == 0)
        s_free (s);
}

gateway_mcp_sessions_t *
gateway_mcp_sessions_new (const gateway_mcp_sessions_config_t *config)
{
    gateway_mcp_sessions_t *self = sl_xcalloc (1, sizeof *self);
    self->by_id = zhashx_new ();
    self->by_owner = zhashx_new ();
    self->quota = sl_mcp_quota_new (&(sl_mcp_quota_caps_t) {
        .per_owner = config->per_key, .per_team = config->per_team, .total = config->max });
    self->max = config->max;
    self->idle_us = config->idle_ms * 1000;
    self->servers = config->servers;
    return self;
}

static void
s_close_all (zhashx_t *table)
{
    for (s_session_t *s = zhashx_first (table); s; s = zhashx_next (table)) {
        s->open = false;
        s_unref (s);
    }
}

void
gateway_mcp_sessions_destroy (gateway_mcp_sessions_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    gateway_mcp_sessions_t *self = *self_p;
    s_close_all (self->by_id);
    s_close_all (self->by_owner);
    zhashx_destroy (&self->by_id);
    zhashx_destroy (&self->by_owner);
    sl_mcp_quota_destroy (&self->quota);
    free (self);
    *self_p = NULL;
}

//  Take an open session out of its table (and give its place back).
static void
s_take_out (gateway_mcp_sessions_t *self, s_session_t *s,
            void (*end_fn) (void *arg, size_t server, gateway_mcp_upstream_t *upstream), void *arg)
{
    gateway_mcp_session_t *p = &s->public;
    if (p->stateless)
        zhashx_delete (self->by_owner, p->owner);
    else {
        zhashx_delete (self->by_id, p->id);
        sl_mcp_quota_give (self->quota, p->owner, p->team);
    }
    s->open = false;
    for (size_t i = 0; end_fn && i < p->servers; i++)
        if (p->upstream [i])
            end_fn (arg, i, p->upstream [i]);
    s_unref (s);
}

static s_session_t *
s_session_new (gateway_mcp_sessions_t *self, const char *owner, const char *team, int64_t now_us)
{
    s_session_t *s = sl_xcalloc (1, sizeof *s);
    gateway_mcp_session_t *p = &s->public;
    uint8_t random [SL_SID_SIZE];
    sl_sid_new (random);                //  getrandom: not to be guessed
    sl_sid_hex (random, p->id);
    snprintf (p->owner, sizeof p->owner, "%s", owner);
    snprintf (p->team, sizeof p->team, "%s", team ? team : "");
    p->servers = self->servers;
    p->upstream = sl_xcalloc (self->servers ? self->servers : 1, sizeof *p->upstream);
    p->tools = sl_xcalloc (self->servers ? self->servers : 1, sizeof *p->tools);
    s->refs = 2;                        //  the table's and the caller's
    s->open = true;
    s->used_us = now_us;
    return s;
}

gateway_mcp_session_t *
gateway_mcp_sessions_open (gateway_mcp_sessions_t *self, const char *owner, const char *team, sl_mcp_rev_t rev,
                           int64_t now_us, sl_mcp_quota_full_t *full)
{
    //  The same text the place is given back under (the team as kept).
    char kept [GATEWAY_MCP_TEAM_MAX];
    snprintf (kept, sizeof kept, "%s", team ? team : "");
    *full = sl_mcp_quota_take (self->quota, owner, kept);
    if (*full != SL_MCP_QUOTA_OK)
        return NULL;
    s_session_t *s = s_session_new (self, owner, kept, now_us);
    s->public.rev = rev;
    s->public.history = sl_mcp_history_new ();
    zhashx_insert (self->by_id, s->public.id, s);
    return &s->public;
}

//  A session found for a request: expired when idle too long and not in
//  use (then NULL), else held.
static gateway_mcp_session_t *
s_hold (gateway_mcp_sessions_t *self, s_session_t *s, int64_t now_us)
{
    if (now_us - s->used_us > self->idle_us && s->refs == 1) {
        s_take_out (self, s, NULL, NULL);
        return NULL;
    }
    s->used_us = now_us;
    s->refs++;
    return &s->public;
}

gateway_mcp_session_t *
gateway_mcp_sessions_find (gateway_mcp_sessions_t *self, const char *id, const char *owner, int64_t now_us)
{
    if (!id || strlen (id) != GATEWAY_MCP_SESSION_ID_SIZE - 1)
        return NULL;
    s_session_t *s = zhashx_lookup (self->by_id, id);
    //  Another owner's session is no session of this client's: not found.
    if (!s || strcmp (s->public.owner, owner) != 0)
        return NULL;
    return s_hold (self, s, now_us);
}

gateway_mcp_session_t *
gateway_mcp_sessions_stateless (gateway_mcp_sessions_t *self, const char *owner, const char *team, int64_t now_us)
{
    s_session_t *s = zhashx_lookup (self->by_owner, owner);
    gateway_mcp_session_t *held = s ? s_hold (self, s, now_us) : NULL;
    if (held)
        return held;
    if (zhashx_size (self->by_owner) >= self->max)
        return NULL;
    s = s_session_new (self, owner, team, now_us);
    s->public.stateless = true;
    s->public.rev = SL_MCP_REV_2026_07_28;
    zhashx_insert (self->by_owner, owner, s);
    return &s->public;
}

size_t
gateway_mcp_sessions_cap (gateway_mcp_sessions_t *self, sl_mcp_quota_full_t full)
{
    return sl_mcp_quota_cap (self->quota, full);
}

void
gateway_mcp_sessions_release (gateway_mcp_sessions_t *self, gateway_mcp_session_t **session_p)
{
    (void) self;
    if (!session_p || !*session_p)
        return;
    s_session_t *s = (s_session_t *) *session_p;
    *session_p = NULL;
    s_unref (s);
}

void
gateway_mcp_sessions_close (gateway_mcp_sessions_t *self, gateway_mcp_session_t *session,
                            void (*end_fn) (void *arg, size_t server, gateway_mcp_upstream_t *upstream), void *arg)
{
    s_session_t *s = (s_session_t *) session;
    if (s->open)
        s_take_out (self, s, end_fn, arg);
}

static void
s_gather_idle (gateway_mcp_sessions_t *self, zhashx_t *table, int64_t now_us, zlistx_t *idle)
{
    for (s_session_t *s = zhashx_first (table); s; s = zhashx_next (table))
        if (s->refs == 1 && now_us - s->used_us > self->idle_us)
            zlistx_add_end (idle, s);
}

size_t
gateway_mcp_sessions_expire (gateway_mcp_sessions_t *self, int64_t now_us,
                             void (*end_fn) (void *arg, size_t server, gateway_mcp_upstream_t *upstream), void *arg)
{
    zlistx_t *idle = zlistx_new ();
    s_gather_idle (self, self->by_id, now_us, idle);
    s_gather_idle (self, self->by_owner, now_us, idle);
    size_t count = zlistx_size (idle);
    for (s_session_t *s = zlistx_first (idle); s; s = zlistx_next (idle))
        s_take_out (self, s, end_fn, arg);
    zlistx_destroy (&idle);
    return count;
}

size_t
gateway_mcp_sessions_count (gateway_mcp_sessions_t *self)
{
    return zhashx_size (self->by_id);
}
