/*  sl_stage.h - the loop that feeds a stage library from its inbox.

    Binds the inbox, drains it when the reactor says it is readable, decodes
    every protocol message of every batch and hands each to the stage's
    callback. Malformed messages are counted, logged and dropped. After
    each drained batch the stage's flush hook runs, so output produced in
    one reactor turn leaves in one send per next-stage instance.

    Heartbeats are answered here, with the instance's name, incarnation and
    credit: each sender first gets SL_CREDIT_WINDOW messages, then, as its
    messages are handled, credit for as many again, unless the stage's own
    output is congested (sl_stage_set_congestion): then credit is held back
    until it clears, and the senders upstream slow down in turn.
*/
#ifndef SL_STAGE_H
#define SL_STAGE_H

#include "../proto/sl_msg.h"
#include "sl_inbox.h"
#include "sl_router.h"
#include "sl_service.h"

typedef struct _sl_stage_t sl_stage_t;

//  One decoded message; msg and peer are borrowed for the call only.
typedef void (sl_stage_msg_fn) (void *arg, const sl_msg_t *msg, sl_str_t peer);
//  End of a drained batch.
typedef void (sl_stage_flush_fn) (void *arg);

//  NULL when the inbox cannot be bound.
sl_stage_t *sl_stage_new (sl_service_t *service, const char *bind,
                          sl_stage_msg_fn *on_msg, sl_stage_flush_fn *on_flush, void *arg);
void sl_stage_destroy (sl_stage_t **self_p);
sl_inbox_t *sl_stage_inbox (sl_stage_t *self);
//  Report lost streams back towards the ingest: when an instance of the
//  next stage dies (or restarts), send `lost` for every stream pinned to
//  it to the instance that sent us the stream; and pass on the `lost`
//  notices the next stage sends us. (Stages between the ingest and the
//  emitter; the ingest and the gateway act on losses themselves.)
void sl_stage_relay_losses (sl_stage_t *self, sl_router_t *router);
//  While fn returns true, hold credit back from senders.
void sl_stage_set_congestion (sl_stage_t *self, bool (*fn) (void *arg), void *arg);
//  Send a message back to a peer of the inbox (e.g. the ingest's error to a
//  gateway); 0 ok, -1 when the peer is gone.
int sl_stage_reply (sl_stage_t *self, sl_str_t peer, const sl_msg_t *msg);

#endif
