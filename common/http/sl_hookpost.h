/*  sl_hookpost.h - a webhook's posts: sl_webhook's queue over curl.

    Three webhooks post JSON events out of sluice's processes: the audit's
    SIEM webhook (a bearer token), its approvals webhook and the gateway's
    limits alerts (both signed, X-Sluice-Timestamp and X-Sluice-Signature,
    see sl_webhook_sign). This is what they share: the bounded queue with
    its retries and backoff (sl_webhook), the posts in flight on the
    reactor (sl_curlm), a Retry-After the receiver sends honoured within
    the queue's longest wait, failures logged at a bounded rate, and the
    queue's figures copied into the caller's counters after each pump.

    A signed post is signed again at each attempt, with that attempt's
    time, so a receiver's replay window holds for retries too. The answer's
    body is not read. A token is wiped from memory when the poster goes.
*/
#ifndef SL_HOOKPOST_H
#define SL_HOOKPOST_H

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_metrics.h"
#include "common/base/sl_str.h"
#include "common/http/sl_webhook.h"

typedef struct _sl_hookpost_t sl_hookpost_t;

typedef struct {
    const char *url;                    //  where to post (required)
    const char *secret;                 //  sign each attempt, or NULL
    const char *token;                  //  Authorization: Bearer, or NULL
    const char *user_agent;             //  e.g. "sluice-audit"
    const char *log_name;               //  logged as <log_name>_failed, _given_up
    const char *what;                   //  an event, as the logs name it: "a limits alert"
    bool conflict_is_done;              //  a 409 answer means taken already (a duplicate)
    bool log_body;                      //  a dropped event's body is logged (none is lost unseen)
    int64_t timeout_ms;                 //  one post at most
    int64_t tick_ms;                    //  due retries are posted this often
    sl_webhook_opts_t queue;
} sl_hookpost_config_t;

//  The caller's counters the queue's figures are copied into (any NULL).
typedef struct {
    sl_counter_t *sent, *failures, *dropped, *given_up;
} sl_hookpost_counters_t;

sl_hookpost_t *sl_hookpost_new (zloop_t *loop, const sl_hookpost_config_t *config,
                                const sl_hookpost_counters_t *counters);
//  Events still queued are logged as lost (<log_name>_unsent).
void sl_hookpost_destroy (sl_hookpost_t **self_p);
//  Queue a JSON body (copied) and post what is due. 0 queued, -1 dropped:
//  the queue was full (logged as <log_name>_full).
int sl_hookpost_push (sl_hookpost_t *self, sl_str_t body);
//  Post what is due now (a push does it; the timer does it for retries).
void sl_hookpost_pump (sl_hookpost_t *self);
size_t sl_hookpost_queued (sl_hookpost_t *self);
const sl_webhook_stats_t *sl_hookpost_stats (sl_hookpost_t *self);

#endif
