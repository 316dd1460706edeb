/*  sl_refresher.c - when a credential is fetched again, and who waits for
    it (see sl_refresher.h). */
#include "common/cloud/sl_refresher.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

#define TELL_NOW_MS 1                   //  the next turn of the reactor

typedef struct s_waiter {
    uint64_t id;
    sl_refresher_ready_fn *fn;
    void *arg;
    struct s_waiter *next;
} s_waiter_t;

struct _sl_refresher_t {
    zloop_t *loop;
    sl_refresher_timing_t timing;
    sl_refresher_fetch_fn *fetch;
    void *arg;
    bool held;                          //  a credential was fetched
    int64_t expires_ms;                 //  its expiry, 0 never
    bool fetching;
    int refresh_timer;                  //  the next fetch, -1 none
    int tell_timer;                     //  waiters to be told, -1 none
    int64_t backoff_ms;                 //  after the last failure, 0 none
    int64_t retry_at_ms;                //  no fetch for a refresh before this
    char error [256];
    s_waiter_t *waiters;
    uint64_t next_id;
    uint64_t fetches, failures;
};

static int s_on_refresh (zloop_t *loop, int timer_id, void *arg);
static int s_on_tell (zloop_t *loop, int timer_id, void *arg);

sl_refresher_t *
sl_refresher_new (zloop_t *loop, const sl_refresher_timing_t *timing,
                  sl_refresher_fetch_fn *fetch, void *arg)
{
    sl_refresher_t *self = sl_xcalloc (1, sizeof *self);
    self->loop = loop;
    if (timing)
        self->timing = *timing;
    if (self->timing.margin_ms <= 0)
        self->timing.margin_ms = SL_REFRESHER_MARGIN_MS;
    if (self->timing.grace_ms <= 0)
        self->timing.grace_ms = SL_REFRESHER_GRACE_MS;
    if (self->timing.max_backoff_ms <= 0)
        self->timing.max_backoff_ms = SL_REFRESHER_MAX_BACKOFF_MS;
    self->fetch = fetch;
    self->arg = arg;
    self->refresh_timer = -1;
    self->tell_timer = -1;
    return self;
}

void
sl_refresher_destroy (sl_refresher_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_refresher_t *self = *self_p;
    if (self->refresh_timer >= 0)
        zloop_timer_end (self->loop, self->refresh_timer);
    if (self->tell_timer >= 0)
        zloop_timer_end (self->loop, self->tell_timer);
    while (self->waiters) {
        s_waiter_t *next = self->waiters->next;
        free (self->waiters);
        self->waiters = next;
    }
    free (self);
    *self_p = NULL;
}

bool
sl_refresher_valid (sl_refresher_t *self)
{
    return self->held
        && (self->expires_ms == 0 || zclock_time () < self->expires_ms - self->timing.grace_ms);
}

const char *
sl_refresher_error (sl_refresher_t *self)
{
    return self->error;
}

uint64_t
sl_refresher_fetches (sl_refresher_t *self)
{
    return self->fetches;
}

uint64_t
sl_refresher_failures (sl_refresher_t *self)
{
    return self->failures;
}

static void
s_start_fetch (sl_refresher_t *self)
{
    if (self->fetching)
        return;
    self->fetching = true;
    self->fetches++;
    self->fetch (self->arg);            //  may end it at once (deferred telling)
}

void
sl_refresher_kick (sl_refresher_t *self)
{
    s_start_fetch (self);
}

//  Tell the waiters at the next turn.
static void
s_tell_soon (sl_refresher_t *self)
{
    if (self->tell_timer < 0 && self->waiters)
        self->tell_timer = zloop_timer (self->loop, TELL_NOW_MS, 1, s_on_tell, self);
}

int
sl_refresher_need (sl_refresher_t *self, sl_refresher_ready_fn *fn, void *arg, uint64_t *wait_id)
{
    if (sl_refresher_valid (self))
        return 0;
    assert (fn && wait_id);             //  API misuse: a wait must be told somewhere
    s_waiter_t *w = sl_xcalloc (1, sizeof *w);
    w->id = ++self->next_id;
    w->fn = fn;
    w->arg = arg;
    //  In order of arrival.
    s_waiter_t **tail = &self->waiters;
    while (*tail)
        tail = &(*tail)->next;
    *tail = w;
    *wait_id = w->id;
    s_start_fetch (self);
    return 1;
}

void
sl_refresher_cancel (sl_refresher_t *self, uint64_t wait_id)
{
    for (s_waiter_t **w = &self->waiters; *w; w = &(*w)->next)
        if ((*w)->id == wait_id) {
            s_waiter_t *gone = *w;
            *w = gone->next;
            free (gone);
            return;
        }
}

static void
s_schedule (sl_refresher_t *self, int64_t delay_ms)
{
    if (self->refresh_timer >= 0)
        zloop_timer_end (self->loop, self->refresh_timer);
    self->refresh_timer = zloop_timer (self->loop, (size_t) (delay_ms > 0 ? delay_ms : 1), 1,
                                       s_on_refresh, self);
}

void
sl_refresher_fetched (sl_refresher_t *self, int64_t expires_ms)
{
    self->fetching = false;
    self->held = true;
    self->expires_ms = expires_ms;
    self->backoff_ms = 0;
    self->error [0] = 0;
    if (self->refresh_timer >= 0) {
        zloop_timer_end (self->loop, self->refresh_timer);
        self->refresh_timer = -1;
    }
    if (expires_ms) {
        //  A credential given with less life than the margin (a metadata
        //  server hands out its cached token) is fetched again at half its
        //  life, never in a loop.
        int64_t life = expires_ms - zclock_time ();
        int64_t delay = life > self->timing.margin_ms ? life - self->timing.margin_ms : life / 2;
        s_schedule (self, delay > SL_REFRESHER_MIN_BACKOFF_MS ? delay : SL_REFRESHER_MIN_BACKOFF_MS);
    }
    s_tell_soon (self);
}

void
sl_refresher_failed (sl_refresher_t *self, const char *why)
{
    self->fetching = false;
    self->failures++;
    snprintf (self->error, sizeof self->error, "%s", why && *why ? why : "the credential could not be fetched");
    self->backoff_ms = self->backoff_ms ? self->backoff_ms * 2 : SL_REFRESHER_MIN_BACKOFF_MS;
    if (self->backoff_ms > self->timing.max_backoff_ms)
        self->backoff_ms = self->timing.max_backoff_ms;
    //  Tried again while a credential still serves; without one, the next
    //  request tries at once.
    if (sl_refresher_valid (self))
        s_schedule (self, self->backoff_ms);
    s_tell_soon (self);
}

static int
s_on_refresh (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_refresher_t *self = arg;
    self->refresh_timer = -1;
    s_start_fetch (self);
    return 0;
}

//  Tell every waiter how the fetch ended, one at a time from the list (a
//  waiter told may cancel another). A waiter told may ask again
//  (sl_refresher_need): it is then a new waiter, told after the next
//  fetch. fn must not destroy the refresher.
static int
s_on_tell (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_refresher_t *self = arg;
    self->tell_timer = -1;
    if (self->fetching)
        return 0;                       //  told when this fetch ends
    uint64_t last = self->next_id;
    bool valid = sl_refresher_valid (self);
    char why [sizeof self->error];
    snprintf (why, sizeof why, "%s", *self->error ? self->error : "the credential expired");
    while (self->waiters && self->waiters->id <= last) {
        s_waiter_t *w = self->waiters;
        self->waiters = w->next;
        sl_refresher_ready_fn *fn = w->fn;
        void *fn_arg = w->arg;
        free (w);
        fn (fn_arg, valid ? NULL : why);
    }
    return 0;
}
