/*  gateway_mcp_session.c - the MCP sessions' table (see
    gateway_mcp_session.h): a hash by session id, each entry counted by
    the requests that hold it. */
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
    zhashx_t *by_id;                    //  id -> s_session_t (open sessions)
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
gateway_mcp_sessions_new (size_t max, int64_t idle_ms, size_t servers)
{
    gateway_mcp_sessions_t *self = sl_xcalloc (1, sizeof *self);
    self->by_id = zhashx_new ();
    self->max = max;
    self->idle_us = idle_ms * 1000;
    self->servers = servers;
    return self;
}

void
gateway_mcp_sessions_destroy (gateway_mcp_sessions_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    gateway_mcp_sessions_t *self = *self_p;
    for (s_session_t *s = zhashx_first (self->by_id); s; s = zhashx_next (self->by_id)) {
        s->open = false;
        s_unref (s);
    }
    zhashx_destroy (&self->by_id);
    free (self);
    *self_p = NULL;
}

//  Take an open session out of the table.
static void
s_take_out (gateway_mcp_sessions_t *self, s_session_t *s,
            void (*end_fn) (void *arg, size_t server, gateway_mcp_upstream_t *upstream), void *arg)
{
    zhashx_delete (self->by_id, s->public.id);
    s->open = false;
    for (size_t i = 0; end_fn && i < s->public.servers; i++)
        if (s->public.upstream [i])
            end_fn (arg, i, s->public.upstream [i]);
    s_unref (s);
}

gateway_mcp_session_t *
gateway_mcp_sessions_open (gateway_mcp_sessions_t *self, const char *key_id, sl_mcp_rev_t rev, int64_t now_us)
{
    if (zhashx_size (self->by_id) >= self->max)
        return NULL;
    s_session_t *s = sl_xcalloc (1, sizeof *s);
    gateway_mcp_session_t *p = &s->public;
    uint8_t random [SL_SID_SIZE];
    sl_sid_new (random);                //  getrandom: not to be guessed
    sl_sid_hex (random, p->id);
    snprintf (p->key_id, sizeof p->key_id, "%s", key_id ? key_id : "");
    p->rev = rev;
    p->history = sl_mcp_history_new ();
    p->servers = self->servers;
    p->upstream = sl_xcalloc (self->servers ? self->servers : 1, sizeof *p->upstream);
    p->tools = sl_xcalloc (self->servers ? self->servers : 1, sizeof *p->tools);
    s->refs = 2;                        //  the table's and the caller's
    s->open = true;
    s->used_us = now_us;
    zhashx_insert (self->by_id, p->id, s);
    return p;
}

gateway_mcp_session_t *
gateway_mcp_sessions_find (gateway_mcp_sessions_t *self, const char *id, const char *key_id, int64_t now_us)
{
    if (!id || strlen (id) != GATEWAY_MCP_SESSION_ID_SIZE - 1)
        return NULL;
    s_session_t *s = zhashx_lookup (self->by_id, id);
    //  Another key's session is no session of this client's: not found.
    if (!s || strcmp (s->public.key_id, key_id ? key_id : "") != 0)
        return NULL;
    if (now_us - s->used_us > self->idle_us && s->refs == 1) {
        s_take_out (self, s, NULL, NULL);
        return NULL;
    }
    s->used_us = now_us;
    s->refs++;
    return &s->public;
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

size_t
gateway_mcp_sessions_expire (gateway_mcp_sessions_t *self, int64_t now_us,
                             void (*end_fn) (void *arg, size_t server, gateway_mcp_upstream_t *upstream), void *arg)
{
    zlistx_t *idle = zlistx_new ();
    for (s_session_t *s = zhashx_first (self->by_id); s; s = zhashx_next (self->by_id))
        if (s->refs == 1 && now_us - s->used_us > self->idle_us)
            zlistx_add_end (idle, s);
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
