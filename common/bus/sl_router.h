/*  sl_router.h - sending a stage's output to the instances of the next one.

    The router connects one DEALER to every instance of the next stage. The
    instances come from a comma-separated endpoint list; an endpoint whose
    host is a name (tcp://aggregator:5552) is resolved to all its addresses
    every SL_RESOLVE_MS, so `docker compose --scale` instances are found and
    new ones take new streams without a restart. The router never connects
    anywhere else: an address read from a message is not an endpoint.

    Every DEALER is a CURVE client of the next stage's key (sl_router_set_bus).
    Each instance names itself in its heartbeats; sl_router_send_named
    delivers to the live instance of a name (the emitter to the gateway that
    owns a stream), never to an address.

    A stream is pinned at its first message to the live instance with the
    most credit, and stays there for its epoch; a message of a new epoch is
    pinned afresh (the old instance may be dead). After its END the pin is
    remembered for SL_PIN_GRACE_MS, so that an instance dying with a
    stream's last messages is still known to have held it.

    Both ends exchange heartbeats (proto "hb") every SL_HB_INTERVAL_MS; an
    instance silent for SL_HB_DEAD_MS (once what waits on its socket is
    read) is dead: it gets no new streams while another instance lives, and
    the stage is told (the ingest re-sends lost streams in a new epoch). A
    heartbeat with a new incarnation is a restarted instance: a new peer.
    A live instance that asks for a hello while it held a window for us
    has a new connection from us (ZeroMQ reconnected, dropping what was in
    flight on the old one): the stage is told as for a death.
    Heartbeats from the next stage carry credit: the messages it is ready to
    take. The router spends credit as it sends; sl_router_congested tells
    the stage to stop asking its own senders for more until credit returns,
    so memory stays bounded along the whole pipeline. ZeroMQ itself never
    drops: a batch that cannot be handed over stays queued and is retried.

    A window of credit is only ever granted by a handshake: a peer with
    none (new, declared dead, restarted) is sent hellos until it answers
    with a whole window, counted from that hello (PROTOCOL.md, "hb"). So an
    instance that was only stopped or starved, and is declared dead, is
    whole again as soon as it speaks.

    Messages are encoded straight into a per-instance batch; sl_router_flush
    sends each batch as one ZeroMQ message. A stage flushes at the end of
    each reactor turn, so batching adds no latency; a batch that has grown
    to SL_ROUTER_BATCH_BYTES (64 KiB) leaves at once, so that the next stage
    works on it while this one goes on reading (one turn can take in
    megabytes of a fast upstream).
*/
#ifndef SL_ROUTER_H
#define SL_ROUTER_H

#include <czmq.h>
#include <stdint.h>

#include "proto/sl_msg.h"
#include "common/bus/sl_bus.h"
#include "common/bus/sl_resolve.h"
#include "common/base/sl_metrics.h"
#include "common/base/sl_str.h"

#define SL_HB_INTERVAL_MS 100           //  heartbeat period
#define SL_HB_DEAD_MS 500               //  silence after which a peer is dead
#define SL_CREDIT_WINDOW 20000          //  messages a receiver lets a sender have in flight
#define SL_PIN_GRACE_MS 3000            //  a pin is remembered this long after its END
#define SL_NAME_WAIT_MS 1000            //  a message for a name no live instance has waits this long

typedef struct _sl_router_t sl_router_t;

//  Peer events, for the owner's logic and logs.
typedef enum {
    SL_PEER_UP = 1,                     //  first heartbeat of an incarnation
    SL_PEER_DEAD,                       //  heartbeats stopped
    SL_PEER_RESTARTED,                  //  a new incarnation at the same endpoint
    SL_PEER_RECONNECTED                 //  alive, but it holds no window for us any more: a
                                        //  new connection, and what was in flight may be lost
} sl_peer_event_t;

typedef void (sl_router_peer_fn) (void *arg, const char *endpoint, sl_peer_event_t event);
//  A message other than a heartbeat from a next-stage instance (the
//  ingest tells a gateway of a stream it lost); borrowed for the call.
typedef void (sl_router_message_fn) (void *arg, const sl_msg_t *msg);
//  Messages for an instance name no live instance announced within
//  SL_NAME_WAIT_MS (or for which there was no room to wait): dropped.
typedef void (sl_router_unroutable_fn) (void *arg, const char *name, size_t messages);

//  name/incarnation identify this instance in heartbeats. loop may be NULL
//  (no heartbeats, no retries: for tests and tools).
sl_router_t *sl_router_new (zloop_t *loop, const char *name, uint64_t incarnation);
void sl_router_destroy (sl_router_t **self_p);
//  Connect as a CURVE client of the key named server (the next stage's
//  role): call before sl_router_connect. -1 (logged) when the bus knows no
//  such key. Without it (unit tests) the router speaks plaintext.
int sl_router_set_bus (sl_router_t *self, sl_bus_t *bus, const char *server);
//  Connect to every endpoint of a comma-separated list (names are resolved
//  now and periodically). 0 ok, -1 when one is malformed (logged).
int sl_router_connect (sl_router_t *self, const char *endpoints);
//  Queue msg for the instance its stream is pinned to, pinning it on first
//  use. 0 ok, -1 when there is no instance at all.
int sl_router_send (sl_router_t *self, const sl_msg_t *msg);
//  Queue msg for the live instance that names itself name in its
//  heartbeats. When none does (yet: an instance that just connected, or
//  restarted), msg waits up to SL_NAME_WAIT_MS for one, then goes to the
//  unroutable callback. -1 when it cannot even wait (no instance at all,
//  no room): the caller counts it.
int sl_router_send_named (sl_router_t *self, sl_str_t name, const sl_msg_t *msg);
//  The encoded bytes of the message the last sl_router_send queued (so a
//  caller that keeps a copy need not encode it again), or NULL when it
//  queued nothing; valid until the next call on the router.
const uint8_t *sl_router_last_encoded (sl_router_t *self, size_t *len);
//  The endpoint a stream is pinned to (borrowed), or NULL.
const char *sl_router_peer_of (sl_router_t *self, const uint8_t *sid);
//  Call fn for every stream pinned to the instance at endpoint, or pinned
//  there and ended less than SL_PIN_GRACE_MS ago (its last messages may
//  have died with the instance; not when the instance said it was
//  draining: it stops only once its output is out): what a stage reports
//  lost when that instance dies.
void sl_router_each_pinned (sl_router_t *self, const char *endpoint,
                            void (*fn) (void *arg, const uint8_t *sid, uint32_t epoch), void *arg);
//  The credit the instance at endpoint has given us and we did not spend
//  (negative: sent beyond it), 0 for an unknown endpoint.
int64_t sl_router_credit (sl_router_t *self, const char *endpoint);
//  True when the instance at endpoint is alive (heartbeats arrive).
bool sl_router_peer_alive (sl_router_t *self, const char *endpoint);
//  Forget a stream's pin (streams that never send END through this router).
void sl_router_unpin (sl_router_t *self, const uint8_t *sid);
//  Send the queued batches. 0 when everything left, -1 when some stays
//  queued for a later flush (retried by the router itself).
int sl_router_flush (sl_router_t *self);
//  True when an instance with streams pinned to it has no credit left or
//  too much queued: the stage should stop granting credit upstream.
bool sl_router_congested (sl_router_t *self);
//  Bytes queued and not yet handed to ZeroMQ.
size_t sl_router_pending (sl_router_t *self);
//  Nothing waits to go to a live peer (what waits for a dead or a not yet
//  connected one cannot be waited for: its streams are re-sent anyway).
//  A drain waits for this before the process stops.
bool sl_router_settled (sl_router_t *self);
//  A process that stops cleanly (a drain) must not lose what it handed to
//  ZeroMQ and ZeroMQ has not sent yet: every peer's socket keeps it for
//  up to ms when closed (the default is 0: dropped).
void sl_router_set_linger (sl_router_t *self, int ms);
size_t sl_router_peer_count (sl_router_t *self);
size_t sl_router_alive_count (sl_router_t *self);
void sl_router_on_peer (sl_router_t *self, sl_router_peer_fn *fn, void *arg);
void sl_router_on_message (sl_router_t *self, sl_router_message_fn *fn, void *arg);
void sl_router_on_unroutable (sl_router_t *self, sl_router_unroutable_fn *fn, void *arg);
//  Count router events into m (batches sent, discards, peers, windows,
//  stalls), labelled with the next stage's name.
void sl_router_set_metrics (sl_router_t *self, sl_metrics_t *m, const char *hop);
//  How long work (streams pinned with no credit, a batch ZeroMQ will not
//  take) has waited for a live instance that takes none of it, ms: the
//  worst over the instances; 0 when everything flows.
int64_t sl_router_stalled_ms (sl_router_t *self);
//  Fail the service's /healthz while the router is stalled longer than the
//  service's stall limit (after sl_router_set_metrics, which names the hop).
//  The hop's health (an sl_service_check_fn, sl_service_watch_hop): false,
//  with why, when work has waited for a live next stage past the stall
//  limit with no progress (a limit of 0: never).
void sl_router_set_stall_limit (sl_router_t *self, int64_t ms);
bool sl_router_healthy (void *self, sl_buf_t *why);

#endif
