/*  sl_refresher.h - when a credential that expires is fetched again, and
    who waits for it.

    The life cycle every cloud credential source shares (sl_awscreds,
    sl_gcptoken), apart from how each fetches: the source holds the
    credential; the refresher says when to fetch it and tells those waiting
    for it. Inside a single-threaded reactor:

    - A credential is fetched ahead of its expiry (margin_ms before it),
      while the current one keeps serving: no request waits for a refresh.
    - A request that needs a credential when none is valid (the first one,
      or after a failure let the last one expire) waits: its callback is
      called once, when the fetch ends, with NULL or the reason it failed.
      Waiters are told from a timer of the reactor, never from within a
      call of theirs, and may cancel.
    - A failed fetch is tried again after a backoff (1 s doubled, at most
      max_backoff_ms) while a valid credential still serves; once none is
      left, the next request starts a fetch at once instead of being
      refused for the rest of a backoff.
    - A credential counts as valid until grace_ms before its expiry, so a
      request signed with it does not arrive with it expired. One given
      with less life left than the margin is fetched again at half its
      life (at least 1 s later), never in a loop.

    Times are the wall clock (zclock_time), as expiries are written.
*/
#ifndef SL_REFRESHER_H
#define SL_REFRESHER_H

#include <czmq.h>
#include <stdbool.h>
#include <stdint.h>

#define SL_REFRESHER_MARGIN_MS (5 * 60 * 1000)  //  fetch 5 min ahead, as the AWS and Google SDKs do
#define SL_REFRESHER_GRACE_MS (30 * 1000)       //  not used in its last 30 s
#define SL_REFRESHER_MIN_BACKOFF_MS 1000
#define SL_REFRESHER_MAX_BACKOFF_MS 60000

typedef struct _sl_refresher_t sl_refresher_t;

typedef struct {
    int64_t margin_ms;                  //  0: SL_REFRESHER_MARGIN_MS
    int64_t grace_ms;                   //  0: SL_REFRESHER_GRACE_MS
    int64_t max_backoff_ms;             //  0: SL_REFRESHER_MAX_BACKOFF_MS
} sl_refresher_timing_t;

//  Start fetching; the source later calls sl_refresher_fetched or
//  sl_refresher_failed (also from within this call: what it tells is
//  deferred).
typedef void (sl_refresher_fetch_fn) (void *arg);
//  A wait ended: error is NULL when a valid credential is held now, else
//  why there is none (borrowed for the call).
typedef void (sl_refresher_ready_fn) (void *arg, const char *error);

//  timing: NULL for the defaults.
sl_refresher_t *sl_refresher_new (zloop_t *loop, const sl_refresher_timing_t *timing,
                                  sl_refresher_fetch_fn *fetch, void *arg);
//  Waiters are not told.
void sl_refresher_destroy (sl_refresher_t **self_p);
//  Fetch now unless a fetch runs (at start, so the first request need not wait).
void sl_refresher_kick (sl_refresher_t *self);
//  A credential is needed. 0: a valid one is held, use it now. 1: not yet;
//  fn will be called once (ready or failed) unless cancelled with the id
//  stored in *wait_id; a fetch is started if none runs.
int sl_refresher_need (sl_refresher_t *self, sl_refresher_ready_fn *fn, void *arg, uint64_t *wait_id);
//  Forget a wait (its fn is not called). Unknown ids are ignored.
void sl_refresher_cancel (sl_refresher_t *self, uint64_t wait_id);
//  The fetch gave a credential valid until expires_ms (wall clock ms; 0:
//  it never expires, nothing more is fetched).
void sl_refresher_fetched (sl_refresher_t *self, int64_t expires_ms);
//  The fetch failed (why: never a secret).
void sl_refresher_failed (sl_refresher_t *self, const char *why);
//  A valid credential is held now.
bool sl_refresher_valid (sl_refresher_t *self);
//  Why the last fetch failed ("" when it did not).
const char *sl_refresher_error (sl_refresher_t *self);
//  Fetches started, and failed, so far.
uint64_t sl_refresher_fetches (sl_refresher_t *self);
uint64_t sl_refresher_failures (sl_refresher_t *self);

#endif
