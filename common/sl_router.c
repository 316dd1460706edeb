/*  sl_router.c - per-stream pinning, batching and heartbeats to the next stage. */
#include "sl_router.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sl_alloc.h"
#include "sl_buf.h"
#include "sl_log.h"
#include "sl_sidmap.h"

#define SL_ROUTER_MAX_PEERS 1024        //  endpoints, static and on demand
#define SL_ROUTER_SNDHWM 10000          //  batches queued in ZeroMQ per peer
#define SL_ROUTER_MAX_DRAIN 64          //  heartbeats read per wake-up
#define SL_ROUTER_RETRY_MS 5            //  retry of a batch that could not leave

typedef struct {
    char *endpoint;
    zsock_t *sock;                      //  DEALER connected to endpoint
    sl_buf_t batch;                     //  encoded messages not yet sent
    size_t streams;                     //  streams pinned here
    int64_t last_seen;                  //  ms, last heartbeat from the peer
    uint64_t incarnation;               //  the peer's, 0 until it spoke
    sl_router_t *router;
} s_peer_t;

typedef struct {
    s_peer_t *peer;
    uint32_t epoch;
} s_pin_t;

struct _sl_router_t {
    zloop_t *loop;
    char *name;
    uint64_t incarnation;
    s_peer_t **peers;
    size_t count;
    sl_sidmap_t *pins;                  //  sid -> s_pin_t
    sl_codec_t *codec;
    int timer;
    int retry_timer;                    //  -1 when no retry is scheduled
    sl_counter_t *sent;                 //  batches handed to ZeroMQ
    sl_counter_t *blocked;              //  flushes that left a batch queued
    sl_counter_t *restarts;             //  peers seen with a new incarnation
};

static int64_t
s_now_ms (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool
s_alive (s_peer_t *peer, int64_t now)
{
    return peer->incarnation != 0 && now - peer->last_seen < SL_HB_DEAD_MS;
}

//  Heartbeats and credit from the next stage arrive on the DEALER.
static int
s_on_peer (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    (void) reader;
    s_peer_t *peer = arg;
    sl_router_t *self = peer->router;
    void *sock = zsock_resolve (peer->sock);
    for (int n = 0; n < SL_ROUTER_MAX_DRAIN; n++) {
        zmq_msg_t frame;
        zmq_msg_init (&frame);
        if (zmq_msg_recv (&frame, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close (&frame);
            break;
        }
        size_t offset = 0;
        sl_msg_t msg;
        while (sl_codec_decode (self->codec, zmq_msg_data (&frame), zmq_msg_size (&frame),
                                &offset, &msg) == 0) {
            if (msg.type != SL_MSG_HB)
                continue;
            if (peer->incarnation && msg.incarnation != peer->incarnation) {
                sl_log_warn ("peer_restarted", "endpoint=%s", peer->endpoint);
                if (self->restarts)
                    sl_counter_inc (self->restarts);
            }
            peer->incarnation = msg.incarnation;
            peer->last_seen = s_now_ms ();
        }
        zmq_msg_close (&frame);
    }
    return 0;
}

static void
s_queue_hb (sl_router_t *self, s_peer_t *peer)
{
    sl_msg_t hb;
    sl_msg_init (&hb, SL_MSG_HB);
    hb.instance = sl_str (self->name);
    hb.incarnation = self->incarnation;
    sl_msg_encode (&hb, &peer->batch);
}

static int
s_on_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_router_t *self = arg;
    for (size_t i = 0; i < self->count; i++)
        s_queue_hb (self, self->peers [i]);
    sl_router_flush (self);
    return 0;
}

static int
s_on_retry (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_router_t *self = arg;
    self->retry_timer = -1;
    sl_router_flush (self);
    return 0;
}

sl_router_t *
sl_router_new (zloop_t *loop, const char *name, uint64_t incarnation)
{
    sl_router_t *self = sl_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->name = sl_xstrdup (name);
    self->incarnation = incarnation;
    self->pins = sl_sidmap_new ();
    self->codec = sl_codec_new ();
    self->timer = loop ? zloop_timer (loop, SL_HB_INTERVAL_MS, 0, s_on_timer, self) : -1;
    self->retry_timer = -1;
    return self;
}

void
sl_router_destroy (sl_router_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_router_t *self = *self_p;
    if (self->loop && self->timer >= 0)
        zloop_timer_end (self->loop, self->timer);
    if (self->loop && self->retry_timer >= 0)
        zloop_timer_end (self->loop, self->retry_timer);
    size_t cursor = 0;
    s_pin_t *pin;
    while ((pin = sl_sidmap_next (self->pins, &cursor, NULL)))
        free (pin);
    sl_sidmap_destroy (&self->pins);
    for (size_t i = 0; i < self->count; i++) {
        s_peer_t *peer = self->peers [i];
        if (self->loop)
            zloop_reader_end (self->loop, peer->sock);
        zsock_destroy (&peer->sock);
        sl_buf_free (&peer->batch);
        free (peer->endpoint);
        free (peer);
    }
    free (self->peers);
    sl_codec_destroy (&self->codec);
    free (self->name);
    free (self);
    *self_p = NULL;
}

void
sl_router_set_metrics (sl_router_t *self, sl_metrics_t *m, const char *hop)
{
    char labels [64];
    snprintf (labels, sizeof labels, "hop=\"%s\"", hop);
    self->sent = sl_metrics_counter (m, "sluice_batches_sent_total", labels,
                                     "ZeroMQ messages (batches of events) sent to the next stage");
    self->blocked = sl_metrics_counter (m, "sluice_send_blocked_total", labels,
                                        "Flushes that left a batch queued (peer down or full)");
    self->restarts = sl_metrics_counter (m, "sluice_peer_restarts_total", labels,
                                         "Next-stage instances seen with a new incarnation");
}

static s_peer_t *
s_add_peer (sl_router_t *self, const char *endpoint)
{
    if (self->count == SL_ROUTER_MAX_PEERS) {
        sl_log_error ("too_many_peers", "not connecting to %s", endpoint);
        return NULL;
    }
    zsock_t *sock = zsock_new (ZMQ_DEALER);
    zsock_set_immediate (sock, 1);      //  queue nothing for a peer that is not there
    zsock_set_sndhwm (sock, SL_ROUTER_SNDHWM);
    zsock_set_heartbeat_ivl (sock, 1000);
    zsock_set_heartbeat_timeout (sock, 3000);
    zsock_set_reconnect_ivl (sock, 100);
    zsock_set_reconnect_ivl_max (sock, 1000);
    if (zsock_connect (sock, "%s", endpoint) < 0) {
        sl_log_error ("connect_failed", "cannot connect to %s: %s",
                      endpoint, zmq_strerror (zmq_errno ()));
        zsock_destroy (&sock);
        return NULL;
    }
    s_peer_t *peer = sl_xcalloc (1, sizeof *peer);
    peer->endpoint = sl_xstrdup (endpoint);
    peer->sock = sock;
    peer->router = self;
    self->peers = sl_xrealloc (self->peers, (self->count + 1) * sizeof (s_peer_t *));
    self->peers [self->count++] = peer;
    if (self->loop)
        zloop_reader (self->loop, sock, s_on_peer, peer);
    s_queue_hb (self, peer);            //  introduce ourselves at once
    return peer;
}

int
sl_router_connect (sl_router_t *self, const char *endpoints)
{
    char *list = sl_xstrdup (endpoints);
    int rc = 0;
    char *save = NULL;
    for (char *ep = strtok_r (list, ", ", &save); ep; ep = strtok_r (NULL, ", ", &save))
        if (!s_add_peer (self, ep))
            rc = -1;
    free (list);
    return rc;
}

//  The live peer with the fewest streams; when none is known to be alive
//  yet (start-up), the least loaded of all: ZeroMQ delivers once it connects.
static s_peer_t *
s_choose (sl_router_t *self)
{
    int64_t now = s_now_ms ();
    s_peer_t *best = NULL;
    for (int pass = 0; pass < 2 && !best; pass++)
        for (size_t i = 0; i < self->count; i++) {
            s_peer_t *p = self->peers [i];
            if (pass == 0 && !s_alive (p, now))
                continue;
            if (!best || p->streams < best->streams)
                best = p;
        }
    return best;
}

int
sl_router_send (sl_router_t *self, const sl_msg_t *msg)
{
    s_pin_t *pin = sl_sidmap_get (self->pins, msg->sid);
    if (pin && pin->epoch != msg->epoch) {
        //  A new epoch is pinned afresh (the old instance may be dead).
        pin->peer->streams--;
        sl_sidmap_remove (self->pins, msg->sid);
        free (pin);
        pin = NULL;
    }
    if (!pin) {
        s_peer_t *peer = s_choose (self);
        if (!peer)
            return -1;
        pin = sl_xcalloc (1, sizeof *pin);
        pin->peer = peer;
        pin->epoch = msg->epoch;
        peer->streams++;
        sl_sidmap_put (self->pins, msg->sid, pin);
    }
    sl_msg_encode (msg, &pin->peer->batch);
    if (msg->type == SL_MSG_END) {
        pin->peer->streams--;
        sl_sidmap_remove (self->pins, msg->sid);
        free (pin);
    }
    return 0;
}

void
sl_router_unpin (sl_router_t *self, const uint8_t *sid)
{
    s_pin_t *pin = sl_sidmap_remove (self->pins, sid);
    if (pin) {
        pin->peer->streams--;
        free (pin);
    }
}

int
sl_router_send_to (sl_router_t *self, sl_str_t endpoint, const sl_msg_t *msg)
{
    s_peer_t *peer = NULL;
    for (size_t i = 0; i < self->count && !peer; i++)
        if (sl_str_eq (endpoint, self->peers [i]->endpoint))
            peer = self->peers [i];
    if (!peer) {
        char *ep = sl_xstrndup (endpoint.ptr ? endpoint.ptr : "", endpoint.len);
        peer = s_add_peer (self, ep);
        free (ep);
        if (!peer)
            return -1;
    }
    sl_msg_encode (msg, &peer->batch);
    return 0;
}

int
sl_router_flush (sl_router_t *self)
{
    int rc = 0;
    for (size_t i = 0; i < self->count; i++) {
        s_peer_t *peer = self->peers [i];
        if (peer->batch.len == 0)
            continue;
        if (zmq_send (zsock_resolve (peer->sock), peer->batch.data, peer->batch.len,
                      ZMQ_DONTWAIT) < 0) {
            if (self->blocked)
                sl_counter_inc (self->blocked);
            rc = -1;
            continue;
        }
        if (self->sent)
            sl_counter_inc (self->sent);
        sl_buf_reset (&peer->batch);
        sl_buf_shrink (&peer->batch, 1 << 16);
    }
    if (rc && self->loop && self->retry_timer < 0)
        self->retry_timer = zloop_timer (self->loop, SL_ROUTER_RETRY_MS, 1, s_on_retry, self);
    return rc;
}

size_t
sl_router_pending (sl_router_t *self)
{
    size_t n = 0;
    for (size_t i = 0; i < self->count; i++)
        n += self->peers [i]->batch.len;
    return n;
}

size_t
sl_router_peer_count (sl_router_t *self)
{
    return self->count;
}
