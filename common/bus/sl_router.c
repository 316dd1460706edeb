/*  sl_router.c - pinning, credit, heartbeats and batching to the next stage.

    Peers are DEALER sockets, one per next-stage instance address. Each
    peer has a state:

        CONNECTING  connected, no heartbeat yet (start-up)
        ALIVE       heartbeats arrive; may take new streams
        DEAD        silent for SL_HB_DEAD_MS (after what was waiting on its
                    socket was read): new streams go elsewhere while any
                    other instance lives

    and a flag `gone` when DNS no longer lists it (it takes no new streams
    and is closed once nothing is pinned to it), a flag `draining` while
    its heartbeats say it is stopping (SL_F_DRAINING: it keeps what is
    pinned to it and takes new streams only when no other peer lives),
    and the instance name it announces in its heartbeats.

    Messages for a name no live peer has announced wait in a small limbo
    (bounded in time and bytes) until one does: the peer that will carry
    the name may be connecting still.

    Credit is re-established by a handshake, never by arithmetic on what
    survived. A peer holds a window or it does not (`windowless`: a new
    connection, a peer declared dead, a restarted one, or a receiver that
    says it holds none for us). While it does not, every heartbeat to it
    says hello (SL_F_HELLO) and carries in seq the count of stream messages
    queued for it before that heartbeat. The receiver answers a hello with
    a fresh whole window (SL_F_WINDOW) echoing that count; messages on one
    pipe arrive in order, so the peer's credit is exactly the window minus
    what was queued for it after that hello. Ordinary grants then add to it.

    A peer that is declared dead may only be stopped or starved: messages
    for it are still handed to ZeroMQ, which delivers them if it runs
    again, within one window's worth beyond its credit (more are dropped
    and counted); a batch ZeroMQ will not take (the connection is gone) is
    dropped after SL_HB_DEAD_MS. The receiver finds any gap this leaves in a
    stream by its sequence numbers, and the ingest re-sends the stream.

    A live peer that has work waiting (streams pinned to it and no credit,
    or a batch ZeroMQ will not take) and gives no credit and takes no batch
    is stalled; past the service's stall limit /healthz fails and
    sluice_hop_stalled says which hop.
*/
#include "common/bus/sl_router.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_log.h"
#include "common/base/sl_sidmap.h"
#include "common/bus/sl_resolve.h"

#define SL_ROUTER_MAX_PEERS 1024        //  addresses, static and resolved
#define SL_ROUTER_MAX_SOURCES 64        //  configured endpoints
#define SL_ROUTER_SNDHWM 100000         //  batches queued in ZeroMQ per peer
#define SL_ROUTER_MAX_DRAIN 64          //  heartbeats read per wake-up
#define SL_ROUTER_MAX_CHECK 1024        //  frames read before a peer is declared dead
#define SL_ROUTER_RETRY_MS 1            //  retry of a batch that could not leave
#define SL_ROUTER_MAX_PENDING (64u << 20)   //  queued bytes that mean congestion
#define SL_ROUTER_BATCH_BYTES (64u << 10)   //  a batch this big leaves before the turn ends
#define SL_ROUTER_LIMBO_BYTES (16u << 20)   //  bytes waiting for a name, in all
#define SL_ROUTER_LIMBO_NAMES 64            //  names waited for at once

typedef enum { PEER_CONNECTING, PEER_ALIVE, PEER_DEAD } s_peer_state_t;

typedef struct {
    char *endpoint;                     //  tcp://10.0.0.3:5552
    int source;                         //  index of the configured endpoint
    zsock_t *sock;                      //  DEALER connected to endpoint
    sl_buf_t batch;                     //  encoded messages not yet sent
    size_t batch_msgs;                  //  messages in batch
    int64_t batch_since;                //  ms, when batch stopped being empty
    bool batch_stuck;                   //  its last hand-over failed (pipe full)
    size_t streams;                     //  streams pinned here
    s_peer_state_t state;
    bool gone;                          //  no longer resolved: no new streams
    bool draining;                      //  its heartbeats say it is stopping: no new streams while
                                        //  another live peer takes them
    int64_t last_seen;                  //  ms, last heartbeat from the peer
    uint64_t incarnation;               //  the peer's, 0 until it spoke
    char *instance;                     //  the name it announces, NULL until it spoke
    int64_t credit;                     //  messages it will still take
    bool windowless;                    //  holds no window: our heartbeats say hello
    uint64_t sent;                      //  stream messages queued for it, ever (a hello's seq)
    int64_t progress_at;                //  ms, last credit it gave or batch it took
    int64_t waiting_since;              //  ms, since work waits for it; 0: none waits
    sl_router_t *router;
} s_peer_t;

typedef struct {
    s_peer_t *peer;
    uint32_t epoch;
    int64_t ended_at;                   //  ms of its END, 0 while the stream runs
} s_pin_t;

//  Messages for an instance name no live peer has announced (yet).
typedef struct {
    char *name;
    sl_buf_t bytes;                     //  encoded messages, in order
    size_t msgs;
    int64_t since;                      //  ms, when the first one came
} s_limbo_t;

//  A configured endpoint: a literal address, or a name to resolve.
typedef struct {
    char *raw;                          //  as configured
    char *prefix;                       //  "tcp://"
    char *host;
    char *port;
    bool is_name;
} s_source_t;

struct _sl_router_t {
    zloop_t *loop;
    char *name;
    uint64_t incarnation;
    s_peer_t **peers;
    size_t count;
    s_source_t sources [SL_ROUTER_MAX_SOURCES];
    size_t source_count;
    sl_sidmap_t *pins;                  //  sid -> s_pin_t
    sl_codec_t *codec;
    int hb_timer;
    int resolve_timer;
    int retry_timer;                    //  -1 when no retry is scheduled
    s_peer_t *last_peer;                //  where the last sl_router_send encoded, or NULL
    size_t last_off, last_len;          //  its bytes in last_peer->batch
    sl_router_peer_fn *peer_fn;
    void *peer_arg;
    sl_router_message_fn *message_fn;
    void *message_arg;
    sl_router_unroutable_fn *unroutable_fn;
    void *unroutable_arg;
    sl_bus_t *bus;                      //  CURVE for every peer, NULL: plaintext
    char *server;                       //  the key name the peers serve with
    s_limbo_t limbo [SL_ROUTER_LIMBO_NAMES];
    size_t limbo_count;
    size_t limbo_bytes;
    sl_counter_t *sent;                 //  batches handed to ZeroMQ
    sl_counter_t *blocked;              //  flushes that left a batch queued
    sl_counter_t *restarts;             //  peers seen with a new incarnation
    sl_counter_t *reconnects;           //  live peers that lost our window (a new connection)
    sl_counter_t *deaths;               //  peers that stopped heartbeating
    sl_counter_t *discarded;            //  messages meant for a peer that died
    sl_counter_t *hellos;               //  windows asked for (hello answered)
    sl_counter_t *malformed;            //  messages from the next stage refused by the codec
    bool hello_queued;                  //  a hello waits in a batch: flush soon
    char hop [32];                      //  the next stage, for health reports
    int64_t stall_limit;                //  ms of a stall that fails /healthz; 0: never
};

static void
s_event (sl_router_t *self, s_peer_t *peer, sl_peer_event_t event)
{
    static const char *names [] = { "", "peer_up", "peer_dead", "peer_restarted", "peer_reconnected" };
    const char *instance = peer->instance ? peer->instance : "-";
    if (event == SL_PEER_UP)
        sl_log_info (names [event], "name=%s endpoint=%s", instance, peer->endpoint);
    else
        sl_log_warn (names [event], "name=%s streams=%zu endpoint=%s", instance, peer->streams, peer->endpoint);
    if (self->peer_fn)
        self->peer_fn (self->peer_arg, peer->endpoint, event);
}

//  --------------------------------------------------------------------------
//  Peers

//  Note when a batch starts filling (to age out batches nobody takes).
static inline void
s_batch_touch (s_peer_t *peer)
{
    if (peer->batch.len == 0)
        peer->batch_since = zclock_mono ();
}

static void
s_queue_hb (sl_router_t *self, s_peer_t *peer)
{
    s_batch_touch (peer);
    sl_msg_t hb;
    sl_msg_init (&hb, SL_MSG_HB);
    hb.instance = sl_str (self->name);
    hb.incarnation = self->incarnation;
    if (peer->windowless) {
        hb.flags = SL_F_HELLO;
        hb.seq = peer->sent;            //  the window will count from here
    }
    sl_msg_encode (&hb, &peer->batch);
}

//  --------------------------------------------------------------------------
//  Instance names and the limbo

static void
s_limbo_remove (sl_router_t *self, size_t i)
{
    s_limbo_t *l = &self->limbo [i];
    self->limbo_bytes -= l->bytes.len;
    free (l->name);
    sl_buf_free (&l->bytes);
    self->limbo [i] = self->limbo [--self->limbo_count];
    memset (&self->limbo [self->limbo_count], 0, sizeof (s_limbo_t));
}

//  A peer announced its name: what waited for that name joins its batch,
//  ahead of anything sent to it from now on.
static void
s_limbo_release (sl_router_t *self, s_peer_t *peer)
{
    if (!peer->instance)
        return;                         //  a heartbeat without a name: nothing is for it
    for (size_t i = self->limbo_count; i-- > 0;) {
        s_limbo_t *l = &self->limbo [i];
        if (strcmp (l->name, peer->instance) != 0)
            continue;
        s_batch_touch (peer);
        sl_buf_append (&peer->batch, l->bytes.data, l->bytes.len);
        peer->batch_msgs += l->msgs;
        peer->sent += l->msgs;
        peer->credit -= (int64_t) l->msgs;
        s_limbo_remove (self, i);
    }
}

static void
s_limbo_expire (sl_router_t *self, int64_t now)
{
    for (size_t i = self->limbo_count; i-- > 0;) {
        s_limbo_t *l = &self->limbo [i];
        if (now - l->since <= SL_NAME_WAIT_MS)
            continue;
        if (self->unroutable_fn)
            self->unroutable_fn (self->unroutable_arg, l->name, l->msgs);
        s_limbo_remove (self, i);
    }
}

//  Record the name a peer announced; when another live peer already
//  announced it, say so (two instances sharing a name would share frames).
static void
s_set_instance (sl_router_t *self, s_peer_t *peer, sl_str_t name)
{
    if (!name.ptr || (peer->instance && sl_str_eq (name, peer->instance)))
        return;
    free (peer->instance);
    peer->instance = sl_xstrndup (name.ptr, name.len);
    for (size_t i = 0; i < self->count; i++) {
        s_peer_t *other = self->peers [i];
        if (other != peer && other->state == PEER_ALIVE && other->instance
        &&  strcmp (other->instance, peer->instance) == 0)
            sl_log_warn ("name_clash", "%s and %s both call themselves %s",
                         other->endpoint, peer->endpoint, peer->instance);
    }
}

//  The live peer that announced this name.
static s_peer_t *
s_named_peer (sl_router_t *self, sl_str_t name)
{
    for (size_t i = 0; i < self->count; i++) {
        s_peer_t *p = self->peers [i];
        if (p->state == PEER_ALIVE && p->instance && sl_str_eq (name, p->instance))
            return p;
    }
    return NULL;
}

//  The peer holds no window (or no longer one we can count on): from now
//  on our heartbeats say hello, the first one at once.
static void
s_lose_window (sl_router_t *self, s_peer_t *peer)
{
    peer->credit = 0;
    if (!peer->windowless) {
        peer->windowless = true;
        s_queue_hb (self, peer);
        self->hello_queued = true;
    }
}

//  Credit from a heartbeat of the peer. A window answers one of our
//  hellos: what was queued for the peer since that hello is spent of it.
//  True when the peer asks for a hello while it held a window for us.
static bool
s_take_credit (sl_router_t *self, s_peer_t *peer, const sl_msg_t *hb)
{
    bool forgot = false;
    if (hb->flags & SL_F_WINDOW) {
        uint64_t since = peer->sent - (hb->seq <= peer->sent ? hb->seq : peer->sent);
        peer->credit = (int64_t) hb->credit - (int64_t) since;
        if (peer->windowless && self->hellos)
            sl_counter_inc (self->hellos);
        peer->windowless = false;
    }
    else
    if (hb->flags & SL_F_HELLO) {
        forgot = !peer->windowless;
        s_lose_window (self, peer);     //  it holds no window for us (a new connection)
    }
    else
        peer->credit += hb->credit;
    if (hb->credit > 0)
        peer->progress_at = zclock_mono ();
    return forgot;
}

//  A heartbeat from the peer: it lives; credit; a restart is a new peer.
static void
s_on_hb (sl_router_t *self, s_peer_t *peer, const sl_msg_t *hb)
{
    peer->last_seen = zclock_mono ();
    s_set_instance (self, peer, hb->instance);
    bool was_alive = peer->state == PEER_ALIVE;
    bool restarted = peer->incarnation && hb->incarnation != peer->incarnation;
    if (restarted) {
        //  Restarted: whatever it held is lost, the window with it. (The
        //  heartbeat may already answer our hello: its credit still counts.)
        if (self->restarts)
            sl_counter_inc (self->restarts);
        s_lose_window (self, peer);
    }
    peer->incarnation = hb->incarnation;
    peer->state = PEER_ALIVE;
    bool draining = (hb->flags & SL_F_DRAINING) != 0;
    if (draining && !peer->draining)
        sl_log_info ("peer_draining", "%s (%s) takes no new streams", peer->endpoint,
                     peer->instance ? peer->instance : "?");
    peer->draining = draining;
    bool forgot = s_take_credit (self, peer, hb);
    if (forgot && was_alive && !restarted) {
        if (self->reconnects)
            sl_counter_inc (self->reconnects);
        s_event (self, peer, SL_PEER_RECONNECTED);
    }
    if (restarted || !was_alive) {
        s_event (self, peer, restarted ? SL_PEER_RESTARTED : SL_PEER_UP);
        if (self->limbo_count) {
            s_limbo_release (self, peer);
            sl_router_flush (self);
        }
    }
}

//  Read up to max frames waiting on the peer's socket; false when none was.
static bool
s_read_peer (sl_router_t *self, s_peer_t *peer, int max)
{
    void *sock = zsock_resolve (peer->sock);
    bool any = false;
    for (int n = 0; n < max; n++) {
        zmq_msg_t frame;
        zmq_msg_init (&frame);
        if (zmq_msg_recv (&frame, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close (&frame);
            break;
        }
        any = true;
        size_t offset = 0;
        sl_msg_t msg;
        int rc;
        while ((rc = sl_codec_decode (self->codec, zmq_msg_data (&frame), zmq_msg_size (&frame),
                                      &offset, &msg)) == 0) {
            if (msg.type == SL_MSG_HB)
                s_on_hb (self, peer, &msg);
            else
            if (self->message_fn)
                self->message_fn (self->message_arg, &msg);
        }
        //  A refused heartbeat is seen as no heartbeat: counted, so that a
        //  peer dead for that reason shows why.
        if (rc == -2) {
            if (self->malformed)
                sl_counter_inc (self->malformed);
            sl_log_warn ("malformed_message", "from %s: %s", peer->endpoint, sl_codec_error (self->codec));
        }
        zmq_msg_close (&frame);
    }
    return any;
}

//  Heartbeats and credit from the next stage arrive on the DEALER.
static int
s_on_peer (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    (void) reader;
    s_peer_t *peer = arg;
    sl_router_t *self = peer->router;
    s_read_peer (self, peer, SL_ROUTER_MAX_DRAIN);
    if (self->hello_queued) {
        self->hello_queued = false;
        sl_router_flush (self);
    }
    return 0;
}

static s_peer_t *
s_add_peer (sl_router_t *self, const char *endpoint, int source)
{
    if (self->count == SL_ROUTER_MAX_PEERS) {
        sl_log_error ("too_many_peers", "not connecting to %s", endpoint);
        return NULL;
    }
    zsock_t *sock = zsock_new (ZMQ_DEALER);
    if (self->bus && sl_bus_client (self->bus, sock, self->server)) {
        zsock_destroy (&sock);
        return NULL;
    }
    zsock_set_immediate (sock, 1);      //  queue nothing for a peer that is not there
    zsock_set_sndhwm (sock, SL_ROUTER_SNDHWM);
    zsock_set_reconnect_ivl (sock, 50);
    zsock_set_reconnect_ivl_max (sock, 500);
    if (zsock_connect (sock, "%s", endpoint) < 0) {
        sl_log_error ("connect_failed", "cannot connect to %s: %s",
                      endpoint, zmq_strerror (zmq_errno ()));
        zsock_destroy (&sock);
        return NULL;
    }
    s_peer_t *peer = sl_xcalloc (1, sizeof *peer);
    peer->endpoint = sl_xstrdup (endpoint);
    peer->source = source;
    peer->sock = sock;
    peer->router = self;
    peer->state = PEER_CONNECTING;
    peer->windowless = true;            //  the first heartbeat says hello
    self->peers = sl_xrealloc (self->peers, (self->count + 1) * sizeof (s_peer_t *));
    self->peers [self->count++] = peer;
    if (self->loop)
        zloop_reader (self->loop, sock, s_on_peer, peer);
    s_queue_hb (self, peer);            //  introduce ourselves at once
    return peer;
}

static void
s_destroy_peer (sl_router_t *self, size_t i)
{
    s_peer_t *peer = self->peers [i];
    if (self->last_peer == peer)
        self->last_peer = NULL;
    if (self->loop)
        zloop_reader_end (self->loop, peer->sock);
    zsock_destroy (&peer->sock);
    sl_buf_free (&peer->batch);
    free (peer->endpoint);
    free (peer->instance);
    free (peer);
    memmove (self->peers + i, self->peers + i + 1, (self->count - i - 1) * sizeof (s_peer_t *));
    self->count--;
}

static s_peer_t *
s_find_peer (sl_router_t *self, const char *endpoint, size_t len)
{
    for (size_t i = 0; i < self->count; i++)
        if (strlen (self->peers [i]->endpoint) == len
        &&  memcmp (self->peers [i]->endpoint, endpoint, len) == 0)
            return self->peers [i];
    return NULL;
}

//  --------------------------------------------------------------------------
//  Sources and DNS

//  What one resolution of a source found.
typedef struct {
    sl_router_t *router;
    int source;
    char seen [SL_ROUTER_MAX_PEERS];    //  by peer position: listed now
} s_resolution_t;

static void
s_on_address (void *arg, const char *endpoint)
{
    s_resolution_t *r = arg;
    sl_router_t *self = r->router;
    s_source_t *src = &self->sources [r->source];
    s_peer_t *peer = s_find_peer (self, endpoint, strlen (endpoint));
    if (!peer) {
        peer = s_add_peer (self, endpoint, r->source);
        if (peer)
            sl_log_info ("peer_resolved", "%s -> %s", src->raw, endpoint);
    }
    if (peer) {
        peer->gone = false;
        for (size_t i = 0; i < self->count; i++)
            if (self->peers [i] == peer)
                r->seen [i] = 1;
    }
}

//  Connect to every address a source stands for now; mark the addresses it
//  no longer has as gone.
static void
s_resolve_source (sl_router_t *self, int index)
{
    s_source_t *src = &self->sources [index];
    if (!src->is_name) {
        if (!s_find_peer (self, src->raw, strlen (src->raw)))
            s_add_peer (self, src->raw, index);
        return;
    }
    //  Every SL_RESOLVE_MS; a resolver slow to answer does not hold the loop.
    s_resolution_t r = { .router = self, .source = index };
    const char *why;
    if (sl_resolve_name (src->prefix, src->host, src->port, s_on_address, &r, &why)) {
        sl_log_warn ("resolve_failed", "%s: %s", src->raw, why);
        return;
    }
    for (size_t i = 0; i < self->count; i++)
        if (self->peers [i]->source == index && !r.seen [i] && !self->peers [i]->gone) {
            self->peers [i]->gone = true;
            sl_log_info ("peer_gone", "%s no longer lists %s", src->raw, self->peers [i]->endpoint);
        }
}

static int
s_on_resolve (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_router_t *self = arg;
    for (size_t i = 0; i < self->source_count; i++)
        if (self->sources [i].is_name)
            s_resolve_source (self, (int) i);
    return 0;
}

//  --------------------------------------------------------------------------
//  Heartbeats, liveness, retries

//  Messages queued for a dead peer would be lost with it anyway; the
//  ingest re-sends their streams in a new epoch.
static void
s_discard_batch (sl_router_t *self, s_peer_t *peer)
{
    if (self->discarded)
        sl_counter_add (self->discarded, peer->batch_msgs);
    sl_buf_reset (&peer->batch);
    peer->batch_msgs = 0;
    peer->batch_stuck = false;
    self->last_peer = NULL;
}

//  Silent for the death interval. Whatever waits on its socket is read
//  first: a peer whose heartbeats we did not read (this process was busy
//  or stopped) is not dead. Its window is forgotten either way: it may
//  have forgotten us too, and only a handshake says what it holds.
static void
s_declare_dead (sl_router_t *self, s_peer_t *peer)
{
    s_read_peer (self, peer, SL_ROUTER_MAX_CHECK);
    if (zclock_mono () - peer->last_seen <= SL_HB_DEAD_MS)
        return;
    peer->state = PEER_DEAD;
    s_lose_window (self, peer);
    if (self->deaths)
        sl_counter_inc (self->deaths);
    s_event (self, peer, SL_PEER_DEAD);
}

//  Work waits for a live peer (streams and no credit, or a batch ZeroMQ
//  will not take): since when, for the stall report.
static void
s_watch_progress (s_peer_t *peer, int64_t now)
{
    bool waiting = peer->state == PEER_ALIVE
                && ((peer->streams && peer->credit <= 0) || peer->batch_stuck);
    if (!waiting)
        peer->waiting_since = 0;
    else
    if (!peer->waiting_since)
        peer->waiting_since = now;
}

//  How long work has waited for the peer with no progress, ms.
static int64_t
s_stalled_ms (const s_peer_t *peer, int64_t now)
{
    if (!peer->waiting_since || peer->state != PEER_ALIVE)
        return 0;
    int64_t since = peer->waiting_since > peer->progress_at ? peer->waiting_since : peer->progress_at;
    return now - since;
}

//  A pin whose stream ended more than SL_PIN_GRACE_MS before *arg (ms).
static bool
s_pin_expired (void *value, void *arg)
{
    const s_pin_t *pin = value;
    return pin->ended_at && *(const int64_t *) arg - pin->ended_at > SL_PIN_GRACE_MS;
}

static int
s_on_hb_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_router_t *self = arg;
    int64_t now = zclock_mono ();
    for (size_t i = 0; i < self->count; i++) {
        s_peer_t *peer = self->peers [i];
        if (peer->state == PEER_ALIVE && now - peer->last_seen > SL_HB_DEAD_MS)
            s_declare_dead (self, peer);
        s_watch_progress (peer, now);
        //  A batch no live peer took within the dead interval (the peer died,
        //  or never came up) is dropped, so queues cannot grow forever.
        if (peer->state != PEER_ALIVE && peer->batch.len
        &&  now - peer->batch_since > SL_HB_DEAD_MS)
            s_discard_batch (self, peer);
        if (peer->state == PEER_ALIVE || peer->batch.len == 0)
            s_queue_hb (self, peer);
    }
    //  Forget pins of streams that ended longer ago than the grace.
    sl_sidmap_drop_if (self->pins, s_pin_expired, &now, free);
    if (self->limbo_count)
        s_limbo_expire (self, now);
    //  Close peers DNS dropped once nothing depends on them.
    for (size_t i = self->count; i-- > 0;)
        if (self->peers [i]->gone && self->peers [i]->streams == 0
        &&  self->peers [i]->state != PEER_ALIVE)
            s_destroy_peer (self, i);
    self->hello_queued = false;
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

//  Gauges of the stall report.
static double
s_stall_seconds (void *arg)
{
    return (double) sl_router_stalled_ms (arg) / 1000.0;
}

static double
s_alive_gauge (void *arg)
{
    return (double) sl_router_alive_count (arg);
}

static double
s_credit_gauge (void *arg)
{
    sl_router_t *self = arg;
    int64_t sum = 0;
    for (size_t i = 0; i < self->count; i++)
        if (self->peers [i]->state == PEER_ALIVE)
            sum += self->peers [i]->credit;
    return (double) sum;
}

static double
s_stalled_gauge (void *arg)
{
    sl_router_t *self = arg;
    return self->stall_limit && sl_router_stalled_ms (self) >= self->stall_limit ? 1 : 0;
}

//  --------------------------------------------------------------------------
//  Public

sl_router_t *
sl_router_new (zloop_t *loop, const char *name, uint64_t incarnation)
{
    sl_router_t *self = sl_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->name = sl_xstrdup (name);
    self->incarnation = incarnation;
    self->pins = sl_sidmap_new ();
    self->codec = sl_codec_new ();
    self->hb_timer = loop ? zloop_timer (loop, SL_HB_INTERVAL_MS, 0, s_on_hb_timer, self) : -1;
    self->resolve_timer = -1;
    self->retry_timer = -1;
    return self;
}

void
sl_router_set_linger (sl_router_t *self, int ms)
{
    for (size_t i = 0; i < self->count; i++)
        zsock_set_linger (self->peers [i]->sock, ms);
}

void
sl_router_destroy (sl_router_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_router_t *self = *self_p;
    if (self->loop) {
        if (self->hb_timer >= 0)
            zloop_timer_end (self->loop, self->hb_timer);
        if (self->resolve_timer >= 0)
            zloop_timer_end (self->loop, self->resolve_timer);
        if (self->retry_timer >= 0)
            zloop_timer_end (self->loop, self->retry_timer);
    }
    size_t cursor = 0;
    s_pin_t *pin;
    while ((pin = sl_sidmap_next (self->pins, &cursor, NULL)))
        free (pin);
    sl_sidmap_destroy (&self->pins);
    while (self->count)
        s_destroy_peer (self, self->count - 1);
    free (self->peers);
    while (self->limbo_count)
        s_limbo_remove (self, self->limbo_count - 1);
    free (self->server);
    for (size_t i = 0; i < self->source_count; i++) {
        free (self->sources [i].raw);
        free (self->sources [i].prefix);
        free (self->sources [i].host);
        free (self->sources [i].port);
    }
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
    self->reconnects = sl_metrics_counter (m, "sluice_peer_reconnects_total", labels,
                                           "Next-stage instances that held no window for us any more "
                                           "(a new connection; what was in flight was reported lost)");
    self->deaths = sl_metrics_counter (m, "sluice_peer_deaths_total", labels,
                                       "Next-stage instances declared dead (heartbeats stopped)");
    self->discarded = sl_metrics_counter (m, "sluice_discarded_messages_total", labels,
                                          "Messages meant for an instance that died (replayed upstream)");
    self->hellos = sl_metrics_counter (m, "sluice_credit_windows_total", labels,
                                       "Fresh credit windows from next-stage instances, each the answer to a hello "
                                       "(a new connection, an instance back from a false death, a restart)");
    //  The process's one count of malformed messages, the stage's too.
    self->malformed = sl_metrics_counter (m, "sluice_malformed_messages_total", NULL,
                                          "Messages dropped as malformed (bad frames, codec errors)");
    snprintf (self->hop, sizeof self->hop, "%s", hop);
    sl_metrics_gauge_fn (m, "sluice_hop_stall_seconds", labels,
                         "How long work has waited for a live next-stage instance that takes none of it",
                         s_stall_seconds, self);
    sl_metrics_gauge_fn (m, "sluice_hop_stalled", labels,
                         "1 while a hop has been stalled past the stall limit (/healthz fails)",
                         s_stalled_gauge, self);
    sl_metrics_gauge_fn (m, "sluice_hop_alive", labels, "Next-stage instances alive (heartbeats arrive)",
                         s_alive_gauge, self);
    sl_metrics_gauge_fn (m, "sluice_hop_credit", labels,
                         "Credit the live next-stage instances gave us and we did not spend, summed "
                         "(at rest: one whole window each)", s_credit_gauge, self);
}

void
sl_router_set_stall_limit (sl_router_t *self, int64_t ms)
{
    self->stall_limit = ms;
}

bool
sl_router_healthy (void *arg, sl_buf_t *why)
{
    sl_router_t *self = arg;
    int64_t stalled = sl_router_stalled_ms (self);
    if (!self->stall_limit || stalled < self->stall_limit)
        return true;
    sl_buf_printf (why, "the %s hop has had work waiting for %lld ms with no progress", self->hop,
                   (long long) stalled);
    return false;
}

int64_t
sl_router_stalled_ms (sl_router_t *self)
{
    int64_t now = zclock_mono (), worst = 0;
    for (size_t i = 0; i < self->count; i++) {
        //  Up to date even between heartbeat timers (tests call this).
        s_watch_progress (self->peers [i], now);
        int64_t stalled = s_stalled_ms (self->peers [i], now);
        if (stalled > worst)
            worst = stalled;
    }
    return worst;
}

void
sl_router_on_peer (sl_router_t *self, sl_router_peer_fn *fn, void *arg)
{
    self->peer_fn = fn;
    self->peer_arg = arg;
}

void
sl_router_on_message (sl_router_t *self, sl_router_message_fn *fn, void *arg)
{
    self->message_fn = fn;
    self->message_arg = arg;
}

void
sl_router_on_unroutable (sl_router_t *self, sl_router_unroutable_fn *fn, void *arg)
{
    self->unroutable_fn = fn;
    self->unroutable_arg = arg;
}

int
sl_router_set_bus (sl_router_t *self, sl_bus_t *bus, const char *server)
{
    assert (self->count == 0);          //  before any peer is made
    if (!sl_bus_knows (bus, server)) {
        sl_log_error ("no_keys", "no public key named %s is known: cannot connect to the %s", server, server);
        return -1;
    }
    self->bus = bus;
    free (self->server);
    self->server = sl_xstrdup (server);
    return 0;
}

int
sl_router_connect (sl_router_t *self, const char *endpoints)
{
    char *list = sl_xstrdup (endpoints);
    int rc = 0;
    char *save = NULL;
    bool any_name = false;
    for (char *ep = strtok_r (list, ", ", &save); ep; ep = strtok_r (NULL, ", ", &save)) {
        const char *scheme_end = strstr (ep, "://");
        bool tcp = strncmp (ep, "tcp://", 6) == 0;
        const char *colon = tcp ? strrchr (ep + 6, ':') : NULL;
        //  tcp:// needs host:port; ipc:// and inproc:// name a path.
        if (!scheme_end || (tcp && !colon) || self->source_count == SL_ROUTER_MAX_SOURCES) {
            sl_log_error ("bad_endpoint", "cannot use endpoint: %s", ep);
            rc = -1;
            continue;
        }
        s_source_t *src = &self->sources [self->source_count];
        src->raw = sl_xstrdup (ep);
        src->prefix = sl_xstrndup (ep, (size_t) (scheme_end + 3 - ep));
        if (tcp) {
            src->host = sl_xstrndup (scheme_end + 3, (size_t) (colon - scheme_end - 3));
            src->port = sl_xstrdup (colon + 1);
            src->is_name = sl_resolve_is_name (src->host);
        }
        else {
            src->host = sl_xstrdup ("");
            src->port = sl_xstrdup ("");
        }
        any_name |= src->is_name;
        s_resolve_source (self, (int) self->source_count);
        self->source_count++;
    }
    free (list);
    if (any_name && self->loop && self->resolve_timer < 0)
        self->resolve_timer = zloop_timer (self->loop, SL_RESOLVE_MS, 0, s_on_resolve, self);
    return rc;
}

//  The live peer with the most credit (fewest streams on a tie), a
//  draining one only when no other lives (the last instance of a stage
//  still serves); before any peer is known to be alive (start-up), the
//  least loaded connecting one: ZeroMQ delivers once it connects; when all
//  are dead, the least loaded of them.
static s_peer_t *
s_choose (sl_router_t *self)
{
    s_peer_t *best = NULL;
    for (int pass = 0; pass < 2 && !best; pass++)
        for (size_t i = 0; i < self->count; i++) {
            s_peer_t *p = self->peers [i];
            if (p->state != PEER_ALIVE || p->gone || (pass == 0 && p->draining))
                continue;
            if (!best || p->credit > best->credit
            ||  (p->credit == best->credit && p->streams < best->streams))
                best = p;
        }
    if (best)
        return best;
    for (size_t i = 0; i < self->count; i++) {
        s_peer_t *p = self->peers [i];
        if (p->state != PEER_CONNECTING || p->gone)
            continue;
        if (!best || p->streams < best->streams)
            best = p;
    }
    if (best)
        return best;
    //  Every instance is silent: one may only be stopped or starved, and
    //  ZeroMQ delivers to it when it runs again (a dead one's batches are
    //  dropped after the death interval; the stall net re-sends them).
    for (size_t i = 0; i < self->count; i++) {
        s_peer_t *p = self->peers [i];
        if (p->state != PEER_DEAD || p->gone)
            continue;
        if (!best || p->streams < best->streams)
            best = p;
    }
    return best;
}

//  Hand one peer's batch to ZeroMQ; -1 when it stays queued (the peer's
//  pipe is full).
static int
s_flush_peer (sl_router_t *self, s_peer_t *peer)
{
    if (zmq_send (zsock_resolve (peer->sock), peer->batch.data, peer->batch.len, ZMQ_DONTWAIT) < 0) {
        if (self->blocked)
            sl_counter_inc (self->blocked);
        peer->batch_stuck = true;
        return -1;
    }
    peer->batch_stuck = false;
    if (peer->batch_msgs)
        peer->progress_at = zclock_mono ();    //  work moved (a heartbeat alone is no work)
    if (self->sent)
        sl_counter_inc (self->sent);
    peer->batch_msgs = 0;
    sl_buf_reset (&peer->batch);
    sl_buf_shrink (&peer->batch, 1 << 16);
    if (self->last_peer == peer)
        self->last_peer = NULL;
    return 0;
}

//  Before a message joins a batch: a big batch leaves now rather than at
//  the end of the reactor turn, so the next stage starts on it while this
//  one is still reading (one turn can read megabytes of a fast upstream).
//  A batch that cannot leave stays and grows; the turn's flush (and its
//  retry timer) tries again, not every message added meanwhile.
static void
s_batch_room (sl_router_t *self, s_peer_t *peer)
{
    if (peer->batch.len >= SL_ROUTER_BATCH_BYTES && !peer->batch_stuck)
        s_flush_peer (self, peer);
}

int
sl_router_send (sl_router_t *self, const sl_msg_t *msg)
{
    self->last_peer = NULL;
    s_pin_t *pin = sl_sidmap_get (self->pins, msg->sid);
    if (pin && (pin->epoch != msg->epoch || pin->ended_at)) {
        //  A new epoch is pinned afresh (the old instance may be dead).
        if (!pin->ended_at)
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
        if (sl_log_enabled (SL_LOG_DEBUG)) {
            char hex [SL_SID_HEX_SIZE];
            sl_sid_hex (msg->sid, hex);
            sl_log_debug ("pin", "sid=%s epoch=%u type=%d endpoint=%s credit=%lld", hex, msg->epoch,
                          msg->type, peer->endpoint, (long long) peer->credit);
        }
    }
    s_peer_t *peer = pin->peer;
    if (peer->state == PEER_DEAD && peer->credit <= -(int64_t) SL_CREDIT_WINDOW) {
        //  A window's worth beyond its credit went to a peer that is silent:
        //  the rest is dropped (the gap it leaves makes the ingest re-send the stream).
        if (self->discarded)
            sl_counter_inc (self->discarded);
    }
    else {
        s_batch_room (self, peer);
        s_batch_touch (peer);
        self->last_off = peer->batch.len;
        sl_msg_encode (msg, &peer->batch);
        self->last_len = peer->batch.len - self->last_off;
        self->last_peer = peer;
        peer->batch_msgs++;
        peer->sent++;
        peer->credit--;
    }
    if (msg->type == SL_MSG_END) {
        peer->streams--;
        pin->ended_at = zclock_mono ();    //  remembered a while (SL_PIN_GRACE_MS)
    }
    return 0;
}

//  Encode msg at the end of a peer's batch.
static void
s_queue (sl_router_t *self, s_peer_t *peer, const sl_msg_t *msg)
{
    s_batch_room (self, peer);
    s_batch_touch (peer);
    sl_msg_encode (msg, &peer->batch);
    peer->batch_msgs++;
    peer->sent++;
    peer->credit--;
}

int
sl_router_send_named (sl_router_t *self, sl_str_t name, const sl_msg_t *msg)
{
    self->last_peer = NULL;
    if (!name.ptr || name.len == 0 || self->count == 0)
        return -1;
    s_peer_t *peer = s_named_peer (self, name);
    if (peer) {
        s_queue (self, peer, msg);
        return 0;
    }
    //  No live instance has that name: wait for one (it may be connecting).
    s_limbo_t *l = NULL;
    for (size_t i = 0; i < self->limbo_count && !l; i++)
        if (sl_str_eq (name, self->limbo [i].name))
            l = &self->limbo [i];
    if (!l) {
        if (self->limbo_count == SL_ROUTER_LIMBO_NAMES)
            return -1;
        l = &self->limbo [self->limbo_count++];
        l->name = sl_xstrndup (name.ptr, name.len);
        l->since = zclock_mono ();
    }
    if (self->limbo_bytes > SL_ROUTER_LIMBO_BYTES) {
        if (l->msgs == 0)
            s_limbo_remove (self, (size_t) (l - self->limbo));
        return -1;
    }
    size_t before = l->bytes.len;
    sl_msg_encode (msg, &l->bytes);
    self->limbo_bytes += l->bytes.len - before;
    l->msgs++;
    return 0;
}

const uint8_t *
sl_router_last_encoded (sl_router_t *self, size_t *len)
{
    if (!self->last_peer || self->last_off + self->last_len > self->last_peer->batch.len)
        return NULL;
    *len = self->last_len;
    return (const uint8_t *) self->last_peer->batch.data + self->last_off;
}

const char *
sl_router_peer_of (sl_router_t *self, const uint8_t *sid)
{
    s_pin_t *pin = sl_sidmap_get (self->pins, sid);
    return pin && !pin->ended_at ? pin->peer->endpoint : NULL;
}

void
sl_router_each_pinned (sl_router_t *self, const char *endpoint,
                       void (*fn) (void *arg, const uint8_t *sid, uint32_t epoch), void *arg)
{
    //  Collected first: fn may send (a re-send re-pins), and the map must
    //  not change under the walk.
    typedef struct { uint8_t sid [SL_SID_SIZE]; uint32_t epoch; } s_hit_t;
    size_t size = sl_sidmap_size (self->pins);
    s_hit_t *hits = sl_xmalloc ((size ? size : 1) * sizeof *hits);
    size_t count = 0, cursor = 0;
    const uint8_t *sid;
    s_pin_t *pin;
    while ((pin = sl_sidmap_next (self->pins, &cursor, &sid)))
        //  A peer that drained saw its streams' ends out before it went:
        //  only those still running are lost with it.
        if (strcmp (pin->peer->endpoint, endpoint) == 0 && !(pin->ended_at && pin->peer->draining)) {
            memcpy (hits [count].sid, sid, SL_SID_SIZE);
            hits [count++].epoch = pin->epoch;
        }
    for (size_t i = 0; i < count; i++)
        fn (arg, hits [i].sid, hits [i].epoch);
    free (hits);
}

int64_t
sl_router_credit (sl_router_t *self, const char *endpoint)
{
    s_peer_t *peer = s_find_peer (self, endpoint, strlen (endpoint));
    return peer ? peer->credit : 0;
}

bool
sl_router_peer_alive (sl_router_t *self, const char *endpoint)
{
    s_peer_t *peer = s_find_peer (self, endpoint, strlen (endpoint));
    return peer && peer->state == PEER_ALIVE;
}

void
sl_router_unpin (sl_router_t *self, const uint8_t *sid)
{
    s_pin_t *pin = sl_sidmap_remove (self->pins, sid);
    if (pin) {
        if (!pin->ended_at)
            pin->peer->streams--;
        free (pin);
    }
}

int
sl_router_flush (sl_router_t *self)
{
    int rc = 0;
    for (size_t i = 0; i < self->count; i++) {
        s_peer_t *peer = self->peers [i];
        if (peer->batch.len && s_flush_peer (self, peer))
            rc = -1;
    }
    if (rc && self->loop && self->retry_timer < 0)
        self->retry_timer = zloop_timer (self->loop, SL_ROUTER_RETRY_MS, 1, s_on_retry, self);
    return rc;
}

bool
sl_router_congested (sl_router_t *self)
{
    for (size_t i = 0; i < self->count; i++) {
        s_peer_t *p = self->peers [i];
        if (p->streams && p->state == PEER_ALIVE && (p->credit <= 0 || p->batch.len > SL_ROUTER_MAX_PENDING))
            return true;
    }
    return false;
}

size_t
sl_router_pending (sl_router_t *self)
{
    size_t n = 0;
    for (size_t i = 0; i < self->count; i++)
        n += self->peers [i]->batch.len;
    return n;
}

bool
sl_router_settled (sl_router_t *self)
{
    for (size_t i = 0; i < self->count; i++)
        if (self->peers [i]->state == PEER_ALIVE && self->peers [i]->batch.len)
            return false;
    return true;
}

size_t
sl_router_peer_count (sl_router_t *self)
{
    return self->count;
}

size_t
sl_router_alive_count (sl_router_t *self)
{
    size_t n = 0;
    for (size_t i = 0; i < self->count; i++)
        n += self->peers [i]->state == PEER_ALIVE;
    return n;
}
