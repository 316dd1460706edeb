/*  sl_webhook.h - events for a SIEM, posted with retries: the queue.

    sluice-audit can POST what it records to a webhook, as JSON: each
    verdict (with its stream's model, provider and client key, the rule,
    the reason and the arguments) or each finished stream (the whole
    stream as the console's stream page reads it), for the actions an
    operator cares about. This is the queue behind it, without the HTTP:

      - bounded (max_queue): when full, a new event is dropped and counted,
        never blocking what the audit records;
      - each event is tried until the webhook answers 2xx, at most
        max_attempts times, waiting base_ms, then twice as long each time,
        at most max_ms (or what a Retry-After asks, within max_ms); then
        it is given up and counted;
      - events go out in order of their due time, at most `concurrency`
        at once (the service's HTTP client, curl multi in the reactor).

    The audit writes to its store first: an event goes to the queue only
    once the record behind it is committed, and only when the record was
    new (a record delivered twice posts once). The queue lives in memory:
    events still in it when sluice-audit stops are lost (counted in the
    log); the store keeps the records, and `sluice-audit export` gives them.
*/
#ifndef SL_WEBHOOK_H
#define SL_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_str.h"

#define SL_WEBHOOK_SIGNATURE_HEX 65     //  an HMAC-SHA256 in hex, with its NUL

//  The signature of a webhook's post (the approvals' and the limits
//  alerts'), body at timestamp (Unix seconds) with secret: hex of
//  HMAC-SHA256(secret, "<timestamp>.<body>"), sent as
//  X-Sluice-Signature: sha256=<hex> beside X-Sluice-Timestamp.
void sl_webhook_sign (const char *secret, int64_t timestamp, sl_str_t body, char out [SL_WEBHOOK_SIGNATURE_HEX]);

typedef struct _sl_webhook_t sl_webhook_t;

typedef struct {
    size_t max_queue;                   //  events waiting or in flight
    int max_attempts;                   //  tries per event
    int64_t base_ms;                    //  first wait after a failure
    int64_t max_ms;                     //  longest wait
    int concurrency;                    //  posts in flight at once
} sl_webhook_opts_t;

typedef struct {
    uint64_t queued;                    //  events taken
    uint64_t sent;                      //  events the webhook took (2xx)
    uint64_t failures;                  //  attempts that failed
    uint64_t dropped;                   //  events refused: the queue was full
    uint64_t given_up;                  //  events dropped after max_attempts
} sl_webhook_stats_t;

typedef struct _sl_webhook_event_t sl_webhook_event_t;

sl_webhook_t *sl_webhook_new (const sl_webhook_opts_t *opts);
void sl_webhook_destroy (sl_webhook_t **self_p);
//  Queue a JSON body (copied), due at once. 0 queued, -1 dropped (full).
int sl_webhook_push (sl_webhook_t *self, sl_str_t body, int64_t now_ms);
//  The next event to post now (due, and room to post one), or NULL. It
//  is in flight until sl_webhook_done.
sl_webhook_event_t *sl_webhook_next (sl_webhook_t *self, int64_t now_ms);
sl_str_t sl_webhook_body (const sl_webhook_event_t *event);
int sl_webhook_attempt (const sl_webhook_event_t *event);
//  The post ended: ok (2xx) frees the event; otherwise it waits its
//  backoff (retry_after_ms > 0: what the server asked, within max_ms) or
//  is given up. Returns true when the event will be tried again.
bool sl_webhook_done (sl_webhook_t *self, sl_webhook_event_t *event, bool ok, int64_t retry_after_ms,
                      int64_t now_ms);
//  When the next event falls due (ms), or -1 when none waits.
int64_t sl_webhook_next_due (sl_webhook_t *self);
//  The wait before attempt n + 1 after n failed attempts.
int64_t sl_webhook_backoff (const sl_webhook_opts_t *opts, int failed);
size_t sl_webhook_queued (sl_webhook_t *self);
const sl_webhook_stats_t *sl_webhook_stats (sl_webhook_t *self);

#endif
