/*  sl_failover.h - which provider a stream tries next, and how each
    provider has been doing.

    A pure library (the ingest's, under sl_upcall): no clock of its own,
    every time is the caller's (ms, monotonic). Two parts:

    The health table (sl_failover_t), one per ingest, shared by its
    streams, one entry per provider name:

      - a hold: a provider that answered with Retry-After is not tried
        again before that time (sl_failover_failed's hold_ms);
      - ejection: a provider that fails `failures` times within
        `window_ms` (connect errors, deadlines before the first byte,
        429, 5xx, an answer that does not decode) is ejected for
        `cooldown_ms`. After it, the provider is half-open: one attempt
        (the probe) may go to it while the others pass it by; the probe's
        success readmits it (its failures forgotten), its failure ejects
        it again for another cool-down. A probe that ends with no verdict
        (the client left) frees its place; one that never reports frees
        it after a cool-down. failures 0 turns ejection off;
      - the keys' turn: a provider with several keys starts each stream
        on the next one (sl_failover_key).

    The walk (sl_failover_walk_t), one per stream: its candidates (a
    route's providers in the order to try them), and where it stands.
    sl_failover_next says what to try next:

      - first, and after a failure: the next candidate in order that may
        take an attempt now, at once; those that may not (held, ejected,
        probed by another stream) are passed by, each reported to the
        caller's skip function (the stream's record);
      - after SL_FAILOVER_MOVE (a first byte that did not come in time):
        the next candidate in order, and no new round after the last;
      - after a 401 or 403 (SL_FAILOVER_AUTH): the same provider's next
        key, at once, until each of its keys was tried in this visit;
        then the stream gives up (a refused credential is not a fault of
        the provider: it is not failed over, and not counted);
      - when no candidate is left in order: another round from the top
        after a backoff (sl_retry.h), up to max_rounds rounds (the
        ingest's --max-retries): with one provider this is the retry of
        a single upstream;
      - when no candidate may take an attempt at all: ejected ones are
        tried all the same, in order (ejection moves traffic to the
        others; it never leaves a route with nothing); if every candidate
        is held, the soonest is waited for when its hold ends within
        max_ms, and the stream gives up otherwise.

    Every path is bounded: at most (max_rounds + 1) passes over the
    candidates, plus the keys of each.
*/
#ifndef SL_FAILOVER_H
#define SL_FAILOVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_FAILOVER_FAILURES 5          //  failures within the window that eject a provider
#define SL_FAILOVER_WINDOW_MS 30000     //  the window they are counted over
#define SL_FAILOVER_COOLDOWN_MS 30000   //  how long an ejected provider is passed by
#define SL_FAILOVER_FAILURES_MAX 64     //  the most failures a window may be set to

typedef struct _sl_failover_t sl_failover_t;

typedef struct {
    int failures;                       //  0: never eject; at most SL_FAILOVER_FAILURES_MAX
    long window_ms;
    long cooldown_ms;
} sl_failover_config_t;

//  Whether a provider may take an attempt now.
typedef enum {
    SL_FAILOVER_OK,                     //  yes
    SL_FAILOVER_HELD,                   //  it asked to wait (Retry-After)
    SL_FAILOVER_EJECTED,                //  ejected, cooling down (or its probe is out)
} sl_failover_why_t;

//  A provider's state, for metrics and the console.
typedef enum {
    SL_FAILOVER_HEALTHY,
    SL_FAILOVER_COOLING,                //  ejected
    SL_FAILOVER_HALF_OPEN,              //  cool-down over, the probe free or out
} sl_failover_state_t;

//  The table. NULL when config is out of range.
sl_failover_t *sl_failover_new (const sl_failover_config_t *config);
void sl_failover_destroy (sl_failover_t **self_p);

//  May provider take an attempt at now? SL_FAILOVER_OK, or why not, with
//  *until (when that ends, ms; may be NULL).
sl_failover_why_t sl_failover_check (sl_failover_t *self, const char *provider, int64_t now, int64_t *until);
//  An attempt goes to provider: a half-open provider's probe is taken.
void sl_failover_begin (sl_failover_t *self, const char *provider, int64_t now);
//  It answered and its answer decodes: a probe's success readmits it.
void sl_failover_succeeded (sl_failover_t *self, const char *provider, int64_t now);
//  It failed. hold_ms: its Retry-After, ms (-1: none), held from now.
//  counts: the failure is the provider's (not a refused credential).
//  true when this failure ejected it (log it, count it: once each).
bool sl_failover_failed (sl_failover_t *self, const char *provider, int64_t now, long hold_ms, bool counts);
//  Its attempt ended with no verdict (cancelled): a probe's place is freed.
void sl_failover_abandoned (sl_failover_t *self, const char *provider);
//  Which of count keys a stream starts with: each in turn.
size_t sl_failover_key (sl_failover_t *self, const char *provider, size_t count);

sl_failover_state_t sl_failover_state (sl_failover_t *self, const char *provider, int64_t now);
//  Providers ejected or half-open at now.
size_t sl_failover_ejected_count (sl_failover_t *self, int64_t now);
//  Ejections of provider so far.
uint64_t sl_failover_ejections (sl_failover_t *self, const char *provider);
//  The state's name: "healthy", "ejected", "half_open".
const char *sl_failover_state_name (sl_failover_state_t state);
//  The reason's name: "ok", "held", "ejected".
const char *sl_failover_why_name (sl_failover_why_t why);

//  --------------------------------------------------------------------------
//  The walk of one stream

typedef struct {
    const char *provider;               //  its name in the table (borrowed)
    size_t keys;                        //  its keys (0 or 1: one credential)
} sl_failover_cand_t;

//  What ended the last attempt.
typedef enum {
    SL_FAILOVER_START,                  //  none yet: the first attempt
    SL_FAILOVER_FAULT,                  //  a failure that moves on (sl_upcall says which)
    SL_FAILOVER_MOVE,                   //  one that moves on in order only, never to a new round
                                        //  (no first byte in time: waiting again is not retried)
    SL_FAILOVER_AUTH,                   //  401 or 403: the next key
} sl_failover_fault_t;

typedef struct {
    const sl_failover_cand_t *cands;    //  borrowed, count of them
    size_t count;
    int max_rounds;                     //  rounds over the list after the first
    long base_ms;                       //  a round's backoff (sl_retry_backoff_ms)
    long max_ms;                        //  the longest wait
    unsigned char spread;               //  the backoff's spread
    //  Where it stands (zero at the start)
    bool begun;
    size_t at;                          //  the candidate of the current attempt
    size_t key;                         //  its key
    size_t keys_tried;                  //  keys of it tried in this visit
    int round;
    size_t attempts;                    //  attempts begun
} sl_failover_walk_t;

//  The next attempt: candidate index, its key, after wait_ms.
typedef struct {
    size_t index;
    size_t key;
    long wait_ms;
    bool forced;                        //  tried though ejected or held: nothing else could be
} sl_failover_step_t;

//  A candidate passed by (index, why, until when).
typedef void (sl_failover_skip_fn) (void *arg, size_t index, sl_failover_why_t why, int64_t until);

//  What to try next after fault (see above). The caller begins the
//  attempt (sl_failover_begin) when it starts it, after the wait. 0 with
//  *step, or -1: give up (the last failure ends the stream).
int sl_failover_next (sl_failover_t *self, sl_failover_walk_t *walk, sl_failover_fault_t fault, int64_t now,
                      sl_failover_skip_fn *skip, void *arg, sl_failover_step_t *step);

#endif
