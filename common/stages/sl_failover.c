/*  sl_failover.c - providers' health and a stream's walk over its
    candidates (see sl_failover.h). */
#include "common/stages/sl_failover.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/http/sl_retry.h"

typedef struct {
    char *name;
    int64_t failures [SL_FAILOVER_FAILURES_MAX];    //  ring of the latest failures' times
    size_t failure_count;               //  in the ring (at most config.failures)
    size_t failure_next;                //  where the next goes
    int64_t held_until;                 //  Retry-After's end; 0: none
    int64_t ejected_until;              //  the cool-down's end; 0: not ejected
    bool probing;                       //  half-open, its probe out
    int64_t probe_at;                   //  when the probe went
    size_t key_turn;                    //  the next stream's key
    uint64_t ejections;
} s_entry_t;

struct _sl_failover_t {
    sl_failover_config_t config;
    s_entry_t *entries;
    size_t count;
};

static const char *s_state_names [] = { "healthy", "ejected", "half_open" };
_Static_assert (sizeof s_state_names / sizeof s_state_names [0] == SL_FAILOVER_HALF_OPEN + 1,
                "a name for every state");
static const char *s_why_names [] = { "ok", "held", "ejected" };
_Static_assert (sizeof s_why_names / sizeof s_why_names [0] == SL_FAILOVER_EJECTED + 1, "a name for every reason");

sl_failover_t *
sl_failover_new (const sl_failover_config_t *config)
{
    if (config->failures < 0 || config->failures > SL_FAILOVER_FAILURES_MAX
    ||  (config->failures && (config->window_ms <= 0 || config->cooldown_ms <= 0)))
        return NULL;
    sl_failover_t *self = sl_xcalloc (1, sizeof *self);
    self->config = *config;
    return self;
}

void
sl_failover_destroy (sl_failover_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_failover_t *self = *self_p;
    for (size_t i = 0; i < self->count; i++)
        free (self->entries [i].name);
    free (self->entries);
    free (self);
    *self_p = NULL;
}

//  The entry of a provider, made on first sight.
static s_entry_t *
s_entry (sl_failover_t *self, const char *provider)
{
    for (size_t i = 0; i < self->count; i++)
        if (strcmp (self->entries [i].name, provider) == 0)
            return &self->entries [i];
    self->entries = sl_xrealloc (self->entries, (self->count + 1) * sizeof *self->entries);
    s_entry_t *e = &self->entries [self->count++];
    memset (e, 0, sizeof *e);
    e->name = sl_xstrdup (provider);
    return e;
}

static void
s_readmit (s_entry_t *e)
{
    e->ejected_until = 0;
    e->probing = false;
    e->failure_count = 0;
    e->failure_next = 0;
}

sl_failover_why_t
sl_failover_check (sl_failover_t *self, const char *provider, int64_t now, int64_t *until)
{
    s_entry_t *e = s_entry (self, provider);
    int64_t dummy;
    if (!until)
        until = &dummy;
    if (e->ejected_until) {
        if (now < e->ejected_until) {
            *until = e->ejected_until;
            return SL_FAILOVER_EJECTED;
        }
        //  Half-open: one probe at a time; one never heard of again frees
        //  its place after a cool-down.
        if (e->probing && now - e->probe_at < self->config.cooldown_ms) {
            *until = e->probe_at + self->config.cooldown_ms;
            return SL_FAILOVER_EJECTED;
        }
    }
    if (now < e->held_until) {
        *until = e->held_until;
        return SL_FAILOVER_HELD;
    }
    *until = now;
    return SL_FAILOVER_OK;
}

void
sl_failover_begin (sl_failover_t *self, const char *provider, int64_t now)
{
    s_entry_t *e = s_entry (self, provider);
    if (e->ejected_until && now >= e->ejected_until) {
        e->probing = true;
        e->probe_at = now;
    }
}

void
sl_failover_succeeded (sl_failover_t *self, const char *provider, int64_t now)
{
    (void) now;
    s_entry_t *e = s_entry (self, provider);
    //  A probe's success, or an ejected provider's tried all the same
    //  (nothing else could be): it serves again.
    if (e->ejected_until)
        s_readmit (e);
}

bool
sl_failover_failed (sl_failover_t *self, const char *provider, int64_t now, long hold_ms, bool counts)
{
    s_entry_t *e = s_entry (self, provider);
    if (hold_ms >= 0 && now + hold_ms > e->held_until)
        e->held_until = now + hold_ms;
    if (!counts || self->config.failures == 0)
        return false;
    if (e->ejected_until) {
        if (now < e->ejected_until)
            return false;               //  tried while ejected: it stays so
        //  The probe failed (or a half-open provider's attempt): again.
        e->ejected_until = now + self->config.cooldown_ms;
        e->probing = false;
        e->ejections++;
        return true;
    }
    size_t n = (size_t) self->config.failures;
    e->failures [e->failure_next] = now;
    e->failure_next = (e->failure_next + 1) % n;
    if (e->failure_count < n)
        e->failure_count++;
    //  The oldest of the last n failures, within the window: ejected.
    int64_t oldest = e->failures [e->failure_count < n ? 0 : e->failure_next];
    if (e->failure_count == n && now - oldest <= self->config.window_ms) {
        e->ejected_until = now + self->config.cooldown_ms;
        e->probing = false;
        e->failure_count = 0;
        e->failure_next = 0;
        e->ejections++;
        return true;
    }
    return false;
}

void
sl_failover_abandoned (sl_failover_t *self, const char *provider)
{
    s_entry_t *e = s_entry (self, provider);
    e->probing = false;
}

size_t
sl_failover_key (sl_failover_t *self, const char *provider, size_t count)
{
    if (count < 2)
        return 0;
    s_entry_t *e = s_entry (self, provider);
    return e->key_turn++ % count;
}

sl_failover_state_t
sl_failover_state (sl_failover_t *self, const char *provider, int64_t now)
{
    s_entry_t *e = s_entry (self, provider);
    if (!e->ejected_until)
        return SL_FAILOVER_HEALTHY;
    return now < e->ejected_until ? SL_FAILOVER_COOLING : SL_FAILOVER_HALF_OPEN;
}

size_t
sl_failover_ejected_count (sl_failover_t *self, int64_t now)
{
    size_t n = 0;
    for (size_t i = 0; i < self->count; i++)
        if (self->entries [i].ejected_until)
            n++;
    (void) now;
    return n;
}

uint64_t
sl_failover_ejections (sl_failover_t *self, const char *provider)
{
    return s_entry (self, provider)->ejections;
}

const char *
sl_failover_state_name (sl_failover_state_t state)
{
    return state <= SL_FAILOVER_HALF_OPEN ? s_state_names [state] : "?";
}

const char *
sl_failover_why_name (sl_failover_why_t why)
{
    return why <= SL_FAILOVER_EJECTED ? s_why_names [why] : "?";
}

//  --------------------------------------------------------------------------
//  The walk

static void
s_choose (sl_failover_t *self, sl_failover_walk_t *walk, size_t index, long wait_ms, bool forced,
          sl_failover_step_t *step)
{
    const sl_failover_cand_t *c = &walk->cands [index];
    walk->at = index;
    walk->key = sl_failover_key (self, c->provider, c->keys);
    walk->keys_tried = 1;
    walk->attempts++;
    *step = (sl_failover_step_t) { index, walk->key, wait_ms, forced };
}

//  No candidate may take an attempt: the first ejected one is tried all
//  the same; else the one held the shortest is waited for, within max_ms.
static int
s_fallback (sl_failover_t *self, sl_failover_walk_t *walk, int64_t now, long wait_ms, sl_failover_step_t *step)
{
    size_t soonest = walk->count;
    int64_t soonest_at = 0;
    for (size_t i = 0; i < walk->count; i++) {
        int64_t until;
        sl_failover_why_t why = sl_failover_check (self, walk->cands [i].provider, now, &until);
        if (why == SL_FAILOVER_EJECTED) {
            s_choose (self, walk, i, wait_ms, true, step);
            return 0;
        }
        if (why == SL_FAILOVER_HELD && (soonest == walk->count || until < soonest_at)) {
            soonest = i;
            soonest_at = until;
        }
    }
    if (soonest == walk->count)
        return -1;
    long held = (long) (soonest_at - now);
    if (held > walk->max_ms)
        return -1;
    s_choose (self, walk, soonest, held > wait_ms ? held : wait_ms, true, step);
    return 0;
}

//  The first candidate from start on that may take an attempt now; those
//  passed by are reported. count when none.
static size_t
s_scan (sl_failover_t *self, sl_failover_walk_t *walk, size_t start, int64_t now, sl_failover_skip_fn *skip,
        void *arg)
{
    for (size_t i = start; i < walk->count; i++) {
        int64_t until;
        sl_failover_why_t why = sl_failover_check (self, walk->cands [i].provider, now, &until);
        if (why == SL_FAILOVER_OK)
            return i;
        if (skip)
            skip (arg, i, why, until);
    }
    return walk->count;
}

int
sl_failover_next (sl_failover_t *self, sl_failover_walk_t *walk, sl_failover_fault_t fault, int64_t now,
                  sl_failover_skip_fn *skip, void *arg, sl_failover_step_t *step)
{
    if (walk->count == 0)
        return -1;
    size_t start = 0;
    if (!walk->begun || fault == SL_FAILOVER_START) {
        walk->begun = true;
        size_t i = s_scan (self, walk, 0, now, skip, arg);
        if (i < walk->count) {
            s_choose (self, walk, i, 0, false, step);
            return 0;
        }
        return s_fallback (self, walk, now, 0, step);
    }
    if (fault == SL_FAILOVER_AUTH) {
        const sl_failover_cand_t *c = &walk->cands [walk->at];
        if (walk->keys_tried >= c->keys)
            return -1;                  //  every key refused: not a fault to fail over
        walk->key = (walk->key + 1) % c->keys;
        walk->keys_tried++;
        walk->attempts++;
        *step = (sl_failover_step_t) { walk->at, walk->key, 0, false };
        return 0;
    }
    start = walk->at + 1;
    size_t i = s_scan (self, walk, start, now, skip, arg);
    if (i < walk->count) {
        s_choose (self, walk, i, 0, false, step);
        return 0;
    }
    //  None left in order: another round from the top, after a backoff.
    if (walk->round >= walk->max_rounds || fault == SL_FAILOVER_MOVE)
        return -1;
    long wait = sl_retry_backoff_ms (walk->base_ms, walk->max_ms, walk->round, -1, walk->spread);
    walk->round++;
    if (wait < 0)
        wait = walk->max_ms;
    i = s_scan (self, walk, 0, now, NULL, NULL);
    if (i < walk->count) {
        s_choose (self, walk, i, wait, false, step);
        return 0;
    }
    return s_fallback (self, walk, now, wait, step);
}
