/*  sl_intake.c - per-stream order, bounds and expiry at a stage's inbox
    (see sl_intake.h).

    States of a stream:
        OPEN      its START passed; messages pass in sequence
        BROKEN    a message was missing: the rest of the epoch is skipped
                  until a newer epoch starts (still open: the stage holds it)
        ENDED     its END passed          )
        REFUSED   its START was refused   )  remembered SL_INTAKE_GRACE_MS,
        EXPIRED   silent for the expiry   )  then forgotten
*/
#include "common/bus/sl_intake.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_sidmap.h"

typedef enum { ST_OPEN, ST_BROKEN, ST_ENDED, ST_REFUSED, ST_EXPIRED } s_state_t;

typedef struct {
    uint8_t sid [SL_SID_SIZE];
    uint32_t epoch;
    uint64_t next;                      //  sequence number expected next
    int64_t last;                       //  ms: last message (open), or when it closed
    s_state_t state;
    uint8_t origin_len;
    uint8_t origin [SL_INTAKE_ORIGIN_MAX];
} s_entry_t;

struct _sl_intake_t {
    sl_sidmap_t *streams;               //  sid -> s_entry_t
    size_t open;                        //  entries OPEN or BROKEN
    size_t max_streams;
    int64_t expiry_ms;
};

static bool
s_is_open (const s_entry_t *e)
{
    return e->state == ST_OPEN || e->state == ST_BROKEN;
}

static void
s_set_origin (s_entry_t *e, sl_str_t origin)
{
    size_t n = origin.len < SL_INTAKE_ORIGIN_MAX ? origin.len : SL_INTAKE_ORIGIN_MAX;
    if (n)
        memcpy (e->origin, origin.ptr, n);
    e->origin_len = (uint8_t) n;
}

//  Move an entry to a state, keeping the count of open streams.
static void
s_move (sl_intake_t *self, s_entry_t *e, s_state_t state, int64_t now)
{
    bool was_open = s_is_open (e);
    e->state = state;
    e->last = now;
    if (was_open && !s_is_open (e))
        self->open--;
    else
    if (!was_open && s_is_open (e))
        self->open++;
}

sl_intake_t *
sl_intake_new (size_t max_streams, int64_t expiry_ms)
{
    sl_intake_t *self = sl_xcalloc (1, sizeof *self);
    self->streams = sl_sidmap_new ();
    self->max_streams = max_streams;
    self->expiry_ms = expiry_ms;
    return self;
}

void
sl_intake_destroy (sl_intake_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_intake_t *self = *self_p;
    size_t cursor = 0;
    void *e;
    while ((e = sl_sidmap_next (self->streams, &cursor, NULL)))
        free (e);
    sl_sidmap_destroy (&self->streams);
    free (self);
    *self_p = NULL;
}

//  A START: open the stream, restart it in a newer epoch, or refuse it.
static sl_intake_verdict_t
s_start (sl_intake_t *self, s_entry_t *e, const sl_msg_t *msg, sl_str_t origin, int64_t now)
{
    if (e && msg->epoch < e->epoch)
        return SL_INTAKE_SKIP;          //  an epoch already replaced
    if (e && msg->epoch == e->epoch && e->state != ST_BROKEN)
        return SL_INTAKE_SKIP;          //  a duplicate, or a stream over or refused
    bool open = e && s_is_open (e);     //  a re-send of a stream held here takes no new room
    bool refused = (msg->flags & SL_F_REFUSED) != 0;    //  over at once: no room to keep
    if (!open && !refused && self->max_streams && self->open >= self->max_streams) {
        if (!e) {
            e = sl_xcalloc (1, sizeof *e);
            memcpy (e->sid, msg->sid, SL_SID_SIZE);
            e->state = ST_REFUSED;
            sl_sidmap_put (self->streams, e->sid, e);
        }
        s_move (self, e, ST_REFUSED, now);
        e->epoch = msg->epoch;
        s_set_origin (e, origin);
        return SL_INTAKE_REFUSE;
    }
    if (!e) {
        e = sl_xcalloc (1, sizeof *e);
        memcpy (e->sid, msg->sid, SL_SID_SIZE);
        e->state = ST_ENDED;            //  not open yet: s_move counts it
        sl_sidmap_put (self->streams, e->sid, e);
    }
    s_move (self, e, ST_OPEN, now);
    e->epoch = msg->epoch;
    e->next = msg->seq + 1;
    s_set_origin (e, origin);
    return SL_INTAKE_PASS;
}

sl_intake_verdict_t
sl_intake_admit (sl_intake_t *self, const sl_msg_t *msg, sl_str_t origin, int64_t now)
{
    s_entry_t *e = sl_sidmap_get (self->streams, msg->sid);
    if (msg->type == SL_MSG_START)
        return s_start (self, e, msg, origin, now);
    if (!e)
        return SL_INTAKE_PASS;          //  never started here: the stage drops it
    if (msg->epoch < e->epoch)
        return SL_INTAKE_SKIP;
    if (msg->epoch > e->epoch) {
        //  A newer epoch whose START never came: broken from its start.
        if (!s_is_open (e))
            self->open++;
        e->state = ST_BROKEN;
        e->epoch = msg->epoch;
        e->last = now;
        s_set_origin (e, origin);
        return SL_INTAKE_GAP;
    }
    if (e->state != ST_OPEN)
        return SL_INTAKE_SKIP;
    if (msg->seq < e->next)
        return SL_INTAKE_SKIP;          //  a duplicate
    if (msg->seq > e->next) {
        s_move (self, e, ST_BROKEN, now);
        s_set_origin (e, origin);
        return SL_INTAKE_GAP;
    }
    if (sl_msg_numbered (msg))
        e->next++;
    e->last = now;
    s_set_origin (e, origin);
    if (msg->type == SL_MSG_END)
        s_move (self, e, ST_ENDED, now);
    return SL_INTAKE_PASS;
}

bool
sl_intake_origin (sl_intake_t *self, const uint8_t *sid, sl_str_t *origin, uint32_t *epoch)
{
    s_entry_t *e = sl_sidmap_get (self->streams, sid);
    if (!e || e->origin_len == 0)
        return false;
    *origin = sl_str_n ((const char *) e->origin, e->origin_len);
    *epoch = e->epoch;
    return true;
}

typedef struct {
    sl_intake_t *self;
    int64_t now;
} s_sweep_t;

//  Tombstones past their grace go.
static bool
s_forgotten (void *value, void *arg)
{
    const s_entry_t *e = value;
    const s_sweep_t *sweep = arg;
    return !s_is_open (e) && sweep->now - e->last > SL_INTAKE_GRACE_MS;
}

size_t
sl_intake_expire (sl_intake_t *self, int64_t now, sl_intake_expired_fn *fn, void *arg)
{
    size_t expired = 0;
    if (self->expiry_ms > 0 && self->open) {
        //  Collected first: fn may feed the stage, which may admit messages.
        size_t count;
        void **entries = sl_sidmap_values (self->streams, &count);
        for (size_t i = 0; i < count; i++) {
            s_entry_t *e = entries [i];
            if (!s_is_open (e) || now - e->last <= self->expiry_ms)
                continue;
            s_move (self, e, ST_EXPIRED, now);
            expired++;
            if (fn)
                fn (arg, e->sid, e->epoch, sl_str_n ((const char *) e->origin, e->origin_len));
        }
        free (entries);
    }
    s_sweep_t sweep = { self, now };
    sl_sidmap_drop_if (self->streams, s_forgotten, &sweep, free);
    return expired;
}

void
sl_intake_each_open (sl_intake_t *self, sl_intake_expired_fn *fn, void *arg)
{
    size_t cursor = 0;
    s_entry_t *e;
    while ((e = sl_sidmap_next (self->streams, &cursor, NULL)))
        if (s_is_open (e))
            fn (arg, e->sid, e->epoch, sl_str_n ((const char *) e->origin, e->origin_len));
}

size_t
sl_intake_open (sl_intake_t *self)
{
    return self->open;
}

size_t
sl_intake_max_streams (sl_intake_t *self)
{
    return self->max_streams;
}

int64_t
sl_intake_expiry_ms (sl_intake_t *self)
{
    return self->expiry_ms;
}
