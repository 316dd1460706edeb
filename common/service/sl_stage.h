/*  sl_stage.h - the loop that feeds a stage library from its inbox.

    Binds the inbox, drains it when the reactor says it is readable, decodes
    every protocol message of every batch and hands each to the stage's
    callback. Malformed messages are counted, logged and dropped. After
    each drained batch the stage's flush hook runs, so output produced in
    one reactor turn leaves in one send per next-stage instance.

    Heartbeats are answered here, with the instance's name, incarnation and
    credit. A window is granted only in answer to a hello (PROTOCOL.md,
    "hb"): a sender's hello gets SL_CREDIT_WINDOW messages, flagged as a
    fresh window and counted from that hello; a heartbeat from a sender
    that holds no window here (a new connection) is answered with a
    request to say hello. Then, as its messages are handled, a sender gets
    credit for as many again, unless the stage's own output is congested
    (sl_stage_set_congestion): then credit is held back until it clears,
    and the senders upstream slow down in turn.

    Liveness: every sender heard from lately also gets a heartbeat every
    SL_HB_INTERVAL_MS from a timer, not only in answer to its own, and the
    inbox is drained in slices of at most SL_STAGE_SLICE_MS, so a deep
    backlog never holds up heartbeats long enough to look like death.

    With sl_stage_track_streams, every stream message passes the stage's
    intake first (sl_intake.h): at most max_streams streams at once (a
    START beyond is refused with an error the client sees, counted in
    sluice_streams_refused_total), messages in sequence (a gap breaks the
    stream here: it is reported lost and re-sent), and a stream silent for
    the expiry is ended at this hop and every later one with an error
    (sluice_streams_expired_total).

    Drain (sl_stage_drain_with): the stage says in its heartbeats that it
    stops (SL_F_DRAINING), serves what it holds, and lets the process stop
    once nothing is left. What --drain-ms (or a second signal) cuts off
    ends here and at every later hop with an error the client sees
    ("shutting_down", 503), so nothing hangs when this was the last
    instance of its stage. Its senders do not report the streams that
    ended here lost when it goes (sl_router_each_pinned).
*/
#ifndef SL_STAGE_H
#define SL_STAGE_H

#include "proto/sl_msg.h"
#include "common/bus/sl_inbox.h"
#include "common/bus/sl_router.h"
#include "common/service/sl_service.h"

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
//  Bound, order and expire the streams coming in (see above): at most
//  max_streams at once (0: no bound), each let go of after expiry_ms of
//  silence (0: never). A refused or expired stream reaches the stage's
//  callback as a START (when refused), an ERROR and an END the stage
//  handles like any other, so it ends at every later hop. Call once,
//  before the loop runs.
void sl_stage_track_streams (sl_stage_t *self, size_t max_streams, int64_t expiry_ms);
//  Take part in the process's drain (sl_service.h): from the SIGTERM on,
//  every heartbeat to the senders carries SL_F_DRAINING (one goes to each
//  at once), so they pin new streams to other instances; a START that
//  still comes (sent before the sender heard) is served. The stage is
//  drained when its intake holds no open stream (when it tracks them),
//  out (its router to the next stage, may be NULL) has nothing queued
//  for a live instance (sl_router_settled),
//  and idle(arg) says the rest is done too (NULL: nothing else to wait
//  for). What out handed to ZeroMQ still leaves after the loop stops
//  (it lingers up to SL_SERVICE_GIVE_UP_MS).
void sl_stage_drain_with (sl_stage_t *self, sl_router_t *out, sl_service_idle_fn *idle, void *arg);
//  Parse --max-streams and --stream-expiry-ms (positive integers, "0" for
//  none) for sl_stage_track_streams; false (logged) when one is not valid.
bool sl_stage_stream_opts (const char *max_streams, const char *expiry_ms, size_t *max, int64_t *expiry);

#define SL_STAGE_MAX_STREAMS "10000"     //  default --max-streams of a stage
#define SL_STAGE_EXPIRY_MS "600000"      //  default --stream-expiry-ms: twice the ingest's idle timeout

#endif
