/*  audit_webhook.h - the recorder's posts to a SIEM (--webhook).

    Fed every record the store has just committed (audit_recorder.h), it
    posts, as JSON:

      - with on "verdict", each verdict whose action is among actions:
        {"type":"verdict","sid","at","emitter","model","provider","client",
         "client_key","index","tool","call_id","action","check","rule",
         "reason","judge_model"?,"latency_us","arguments"}, the stream's
        model, provider, client dialect and key as its row in the store
        has them (null when the store has none), the arguments cut at
        max_text;
      - with on "stream", each stream that ended, with a verdict among
        actions: {"type":"stream","data": the stream whole, as the
        console reads it (sl_query_stream)}.

    actions is a comma-separated list, or "all" (or ""). The posts wait
    in the queue of sl_webhook.h (bounded, retried with backoff, at most
    four at once) and go out over curl multi in the reactor, with the
    bearer token when there is one; a Retry-After is followed. What
    happens is counted in sluice_audit_webhook_*, exported also when no
    URL is given (the webhook is off then, and posts nothing).
*/
#ifndef AUDIT_WEBHOOK_H
#define AUDIT_WEBHOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/service/sl_service.h"
#include "common/http/sl_webhook.h"
#include "services/audit/store/sl_record.h"
#include "services/audit/store/sl_store.h"

typedef struct {
    const char *url;                    //  where to post, "" or NULL: off
    const char *on;                     //  "verdict" or "stream"
    const char *actions;                //  comma-separated actions, or "all"
    size_t queue;                       //  events held at most
    int attempts;                       //  tries per event
    const char *token;                  //  sent as Bearer, or NULL
    size_t max_text;                    //  bytes of a verdict's arguments posted
} audit_webhook_config_t;

typedef struct _audit_webhook_t audit_webhook_t;

//  The store is borrowed (a stream's row, read for its post).
audit_webhook_t *audit_webhook_new (sl_service_t *svc, sl_store_t *store, const audit_webhook_config_t *config);
void audit_webhook_destroy (audit_webhook_t **self_p);
//  Whether it posts (a URL was given).
bool audit_webhook_on (audit_webhook_t *self);
//  A committed record (new to the store): queued when it is one to post.
void audit_webhook_committed (audit_webhook_t *self, const sl_record_t *record);
//  Post what is due (after a batch's records were given).
void audit_webhook_pump (audit_webhook_t *self);
size_t audit_webhook_queued (audit_webhook_t *self);
const sl_webhook_stats_t *audit_webhook_stats (audit_webhook_t *self);

#endif
