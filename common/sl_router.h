/*  sl_router.h - sending a stage's output to the instances of the next one.

    The router connects one DEALER to every instance of the next stage (a
    static endpoint list, or endpoints added on demand, e.g. the gateway that
    owns a stream). A stream is pinned at its first message to one instance
    and stays there for its epoch; a message of a new epoch is pinned afresh,
    and the stream is unpinned after its END.

    Messages are encoded straight into a per-instance batch; sl_router_flush
    sends each batch as one ZeroMQ message. A stage flushes at the end of
    each reactor turn, so batching adds no latency: under load, everything
    produced in one turn leaves in one send.

    Both ends exchange heartbeats (proto "hb"): an instance whose heartbeats
    stop is not chosen for new streams. A batch that cannot be sent (the
    instance is down, or its pipe is full) stays queued and is retried; no
    message is dropped by the router.
*/
#ifndef SL_ROUTER_H
#define SL_ROUTER_H

#include <czmq.h>
#include <stdint.h>

#include "../proto/sl_msg.h"
#include "sl_metrics.h"
#include "sl_str.h"

#define SL_HB_INTERVAL_MS 500           //  heartbeat period
#define SL_HB_DEAD_MS 2000              //  silence after which a peer is dead

typedef struct _sl_router_t sl_router_t;

//  name/incarnation identify this instance in heartbeats. loop may be NULL
//  (no heartbeats, no retries: for tests and tools).
sl_router_t *sl_router_new (zloop_t *loop, const char *name, uint64_t incarnation);
void sl_router_destroy (sl_router_t **self_p);
//  Connect to every endpoint of a comma-separated list. 0 ok, -1 when one
//  is malformed (logged).
int sl_router_connect (sl_router_t *self, const char *endpoints);
//  Queue msg for the instance its stream is pinned to (pinning it to the
//  least loaded live instance on first use). 0 ok, -1 when there is no
//  instance at all.
int sl_router_send (sl_router_t *self, const sl_msg_t *msg);
//  Queue msg for the instance at endpoint, connecting on first use.
int sl_router_send_to (sl_router_t *self, sl_str_t endpoint, const sl_msg_t *msg);
//  Forget a stream's pin (streams that never send END through this router).
void sl_router_unpin (sl_router_t *self, const uint8_t *sid);
//  Send the queued batches. 0 when everything left, -1 when some stays
//  queued for a later flush.
int sl_router_flush (sl_router_t *self);
//  Bytes queued and not yet handed to ZeroMQ.
size_t sl_router_pending (sl_router_t *self);
size_t sl_router_peer_count (sl_router_t *self);
//  Count router events into m (batches sent, retries, peers alive).
void sl_router_set_metrics (sl_router_t *self, sl_metrics_t *m, const char *hop);

#endif
