/*  Unit tests: common/bus/sl_router, against real ROUTER sockets on loopback
    that play next-stage instances (they answer heartbeats with credit). */
#include <criterion/criterion.h>
#include <czmq.h>

#include "common/bus/sl_router.h"
#include "tests/unit/keydir.h"
#include "tests/unit/misfit.h"

typedef struct {
    zsock_t *sock;
    char endpoint [64];
    uint32_t credit;                    //  granted in the first answer
    bool silent;                        //  stop answering heartbeats
    int starts;                         //  START messages received
    int frames;                         //  FRAME messages received
    uint32_t last_epoch;
    const char *name;                   //  the instance name it announces ("fake")
    bool draining;                      //  its heartbeats say SL_F_DRAINING
    bool misfit;                        //  its heartbeats carry a field no hb carries
} s_fake_t;

static sl_codec_t *codec;

static int
s_on_fake (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    (void) reader;
    s_fake_t *f = arg;
    zmsg_t *msg = zmsg_recv (f->sock);
    zframe_t *id = zmsg_pop (msg);
    zframe_t *data = zmsg_pop (msg);
    size_t offset = 0;
    sl_msg_t m;
    bool hb = false;
    while (data && sl_codec_decode (codec, zframe_data (data), zframe_size (data), &offset, &m) == 0) {
        if (m.type == SL_MSG_HB)
            hb = true;
        else
        if (m.type == SL_MSG_START) {
            f->starts++;
            f->last_epoch = m.epoch;
        }
        else
        if (m.type == SL_MSG_FRAME)
            f->frames++;
    }
    if (hb && !f->silent) {
        sl_msg_t reply;
        sl_msg_init (&reply, SL_MSG_HB);
        reply.instance = sl_str (f->name ? f->name : "fake");
        reply.incarnation = 42;
        reply.credit = f->credit;
        reply.flags = f->draining ? SL_F_DRAINING : 0;
        sl_buf_t buf = { 0 };
        if (f->misfit)
            misfit_encode (&reply, "auth", "x", &buf);
        else {
            sl_msg_encode (&reply, &buf);
            f->credit = 0;              //  the window is given once
        }
        zmsg_t *out = zmsg_new ();
        zmsg_append (out, &id);
        zmsg_addmem (out, buf.data, buf.len);
        zmsg_send (&out, f->sock);
        sl_buf_free (&buf);
    }
    zframe_destroy (&id);
    zframe_destroy (&data);
    zmsg_destroy (&msg);
    return 0;
}

static void
s_fake_init (s_fake_t *f, uint32_t credit)
{
    memset (f, 0, sizeof *f);
    f->sock = zsock_new (ZMQ_ROUTER);
    int port = zsock_bind (f->sock, "tcp://127.0.0.1:*");
    cr_assert_gt (port, 0);
    snprintf (f->endpoint, sizeof f->endpoint, "tcp://127.0.0.1:%d", port);
    f->credit = credit;
}

static void
s_start (sl_router_t *r, int n, uint32_t epoch)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_START);
    memset (m.sid, 0, SL_SID_SIZE);
    m.sid [0] = (uint8_t) n;
    m.epoch = epoch;
    cr_assert_eq (sl_router_send (r, &m), 0);
}

typedef struct {
    sl_router_t *router;
    s_fake_t *a, *b;
    int step;
    int first;                          //  streams started at step 3, both alive
    bool b_dies;                        //  then b goes silent (else a)
    int later;                          //  streams started at step 12, one alive
    bool resend;                        //  and stream 0 re-sent in epoch 1
} s_script_t;

//  A timeline in 100 ms steps, bounded: the loop ends after the last one.
//  Step 3: both alive, the first streams; then one instance "dies"; step
//  12: it missed its heartbeats for more than SL_HB_DEAD_MS, the later
//  streams.
static int
s_on_step (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_script_t *s = arg;
    s->step++;
    if (s->step == 3) {
        cr_expect_eq (sl_router_alive_count (s->router), 2);
        for (int i = 0; i < s->first; i++)
            s_start (s->router, i, 0);
        sl_router_flush (s->router);
    }
    if (s->step == 4)
        (s->b_dies ? s->b : s->a)->silent = true;
    if (s->step == 12) {
        cr_expect_eq (sl_router_alive_count (s->router), 1);
        for (int i = 10; i < 10 + s->later; i++)
            s_start (s->router, i, 0);
        if (s->resend)
            s_start (s->router, 0, 1);
        sl_router_flush (s->router);
    }
    return s->step >= 15 ? -1 : 0;
}

//  Two fake instances, a with a_credit and b with b_credit, a router
//  connected to both, and a timeline of fn run to its end (15 steps).
static void
s_run_two (s_fake_t *a, s_fake_t *b, uint32_t a_credit, uint32_t b_credit, bool a_draining, s_script_t script)
{
    codec = sl_codec_new ();
    zloop_t *loop = zloop_new ();
    s_fake_init (a, a_credit);
    s_fake_init (b, b_credit);
    a->draining = a_draining;
    zloop_reader (loop, a->sock, s_on_fake, a);
    zloop_reader (loop, b->sock, s_on_fake, b);
    sl_router_t *router = sl_router_new (loop, "test", 7);
    char list [160];
    snprintf (list, sizeof list, "%s, %s", a->endpoint, b->endpoint);
    cr_assert_eq (sl_router_connect (router, list), 0);
    cr_expect_eq (sl_router_peer_count (router), 2);
    script.router = router;
    script.a = a;
    script.b = b;
    zloop_timer (loop, 100, 0, s_on_step, &script);
    zloop_start (loop);
    cr_expect_eq (script.step, 15, "the timeline ran to its end");
    sl_router_destroy (&router);
    zloop_destroy (&loop);
    zsock_destroy (&a->sock);
    zsock_destroy (&b->sock);
    sl_codec_destroy (&codec);
}

Test (sl_router, most_credit_then_failover_and_repin)
{
    s_fake_t a, b;
    //  a has the most credit: the first streams go there; then a dies.
    s_run_two (&a, &b, 1000, 10, false, (s_script_t) { .first = 5, .later = 3, .resend = true });
    cr_expect_eq (a.starts, 5, "the peer with the most credit took the first streams");
    cr_expect_eq (b.starts, 4, "after a died, new streams and the re-send went to b");
    cr_expect_eq (b.last_epoch, 1);
}

//  a (the most credit) drains: new streams go to b; once b dies, a is
//  the last instance and takes them again.
Test (sl_router, a_draining_peer_takes_new_streams_only_when_it_is_the_last)
{
    s_fake_t a, b;
    s_run_two (&a, &b, 1000, 10, true, (s_script_t) { .first = 4, .b_dies = true, .later = 3 });
    cr_expect_eq (b.starts, 4, "while b lived, the draining a took no new stream, whatever its credit");
    cr_expect_eq (a.starts, 3, "once b died, the draining a, the last instance, took the new streams");
}

Test (sl_router, names_resolve_and_bad_endpoints_fail)
{
    sl_router_t *router = sl_router_new (NULL, "test", 7);
    cr_expect_eq (sl_router_connect (router, "tcp://localhost:5999"), 0);
    cr_expect_eq (sl_router_peer_count (router), 1, "localhost resolves to one IPv4 address");
    cr_expect_eq (sl_router_connect (router, "localhost:5999"), -1, "no scheme");
    cr_expect_eq (sl_router_connect (router, "tcp://nohostport"), -1, "no port");
    sl_router_destroy (&router);
}

//  Re-sending every stream pinned to a dead instance re-pins each one while
//  the pins are walked: every stream must be seen exactly once.
typedef struct {
    sl_router_t *router;
    int seen [256];
} s_walk_t;

static void
s_resend_one (void *arg, const uint8_t *sid, uint32_t epoch)
{
    s_walk_t *w = arg;
    w->seen [sid [8]]++;
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_START);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.epoch = epoch + 1;
    cr_assert_eq (sl_router_send (w->router, &m), 0);
}

Test (sl_router, each_pinned_survives_repinning)
{
    codec = sl_codec_new ();
    s_fake_t a;
    s_fake_init (&a, 1000);
    sl_router_t *router = sl_router_new (NULL, "test", 7);
    cr_assert_eq (sl_router_connect (router, a.endpoint), 0);
    //  Ids spread over the table, with collisions, as real ones are.
    for (int i = 0; i < 200; i++) {
        sl_msg_t m;
        sl_msg_init (&m, SL_MSG_START);
        memset (m.sid, 0, SL_SID_SIZE);
        uint64_t h = (uint64_t) (i + 1) * 0x9E3779B97F4A7C15ull;
        memcpy (m.sid, &h, sizeof h);
        m.sid [8] = (uint8_t) i;
        cr_assert_eq (sl_router_send (router, &m), 0);
    }
    s_walk_t walk = { .router = router };
    sl_router_each_pinned (router, a.endpoint, s_resend_one, &walk);
    int once = 0;
    for (int i = 0; i < 200; i++)
        once += walk.seen [i] == 1;
    cr_expect_eq (once, 200, "every pinned stream was reported exactly once");
    sl_router_destroy (&router);
    zsock_destroy (&a.sock);
    sl_codec_destroy (&codec);
}

//  Receive one batch from a fake instance within a bounded wait; the
//  sequence numbers of its messages go to seqs, their count is returned
//  (-1 when nothing came).
static int
s_recv_batch (zsock_t *sock, int wait_ms, uint64_t *seqs, int room)
{
    zpoller_t *poller = zpoller_new (sock, NULL);
    void *ready = zpoller_wait (poller, wait_ms);
    zpoller_destroy (&poller);
    if (!ready)
        return -1;
    zmsg_t *msg = zmsg_recv (sock);
    zframe_t *id = zmsg_pop (msg);
    zframe_t *data = zmsg_pop (msg);
    size_t offset = 0;
    sl_msg_t m;
    int n = 0;
    while (data && sl_codec_decode (codec, zframe_data (data), zframe_size (data), &offset, &m) == 0)
        if (m.type == SL_MSG_DELTA && n < room)
            seqs [n++] = m.seq;
    cr_expect (data && offset == zframe_size (data), "the batch holds whole messages only");
    zframe_destroy (&id);
    zframe_destroy (&data);
    zmsg_destroy (&msg);
    return n;
}

Test (sl_router, a_big_batch_leaves_before_the_flush)
{
    codec = sl_codec_new ();
    s_fake_t a;
    s_fake_init (&a, 0);
    sl_router_t *router = sl_router_new (NULL, "test", 7);
    enum { COUNT = 200 };               //  about 200 KiB: several batches' worth
    uint64_t seqs [COUNT];
    //  Wait (bounded) for the connection: the router queues nothing for
    //  an instance it is not connected to yet.
    cr_assert_eq (sl_router_connect (router, a.endpoint), 0);
    sl_msg_t hello;
    sl_msg_init (&hello, SL_MSG_DELTA);
    hello.kind = SL_D_TEXT;
    cr_assert_eq (sl_router_send (router, &hello), 0);
    for (int i = 0; i < 200 && sl_router_flush (router); i++)
        zclock_sleep (10);
    cr_assert_eq (s_recv_batch (a.sock, 2000, seqs, 1), 1, "connected");
    char text [1024];
    memset (text, 'x', sizeof text);
    for (int i = 0; i < COUNT; i++) {
        sl_msg_t m;
        sl_msg_init (&m, SL_MSG_DELTA);
        m.kind = SL_D_TEXT;
        m.seq = (uint64_t) i;
        m.text = sl_str_n (text, sizeof text);
        cr_assert_eq (sl_router_send (router, &m), 0);
    }
    //  Before any flush, the first batches are already on their way.
    int got = 0, n;
    while (got < COUNT && (n = s_recv_batch (a.sock, got ? 200 : 2000, seqs + got, COUNT - got)) > 0)
        got += n;
    cr_expect_gt (got, 0, "a batch over the size bound left without a flush");
    cr_expect_lt (got, COUNT, "the last, smaller batch waits for the flush");
    cr_expect_lt (sl_router_pending (router), (size_t) (64u << 10) + 2048,
                  "what stays queued is under one batch");
    //  The flush sends the rest; everything arrives once, in order.
    cr_assert_eq (sl_router_flush (router), 0);
    while (got < COUNT && (n = s_recv_batch (a.sock, 2000, seqs + got, COUNT - got)) > 0)
        got += n;
    cr_expect_eq (got, COUNT);
    for (int i = 0; i < got; i++)
        cr_expect_eq (seqs [i], (uint64_t) i);
    sl_router_destroy (&router);
    zsock_destroy (&a.sock);
    sl_codec_destroy (&codec);
}

//  --------------------------------------------------------------------------
//  The credit handshake, exactly: a fake next-stage instance that answers
//  only when the script says, with the windows and flags it chooses.

typedef struct {
    zsock_t *sock;
    char endpoint [64];
    zframe_t *id;                       //  the router's routing id, once known
    uint64_t last_hello;                //  seq of the last hello received
    int hello_count;
    int plain_hbs;                      //  heartbeats without hello
    int messages;                       //  stream messages
} s_peer_fake_t;

static int
s_on_peer_fake (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    (void) reader;
    s_peer_fake_t *f = arg;
    zmsg_t *msg = zmsg_recv (f->sock);
    zframe_t *id = zmsg_pop (msg);
    zframe_t *data = zmsg_pop (msg);
    size_t offset = 0;
    sl_msg_t m;
    while (data && sl_codec_decode (codec, zframe_data (data), zframe_size (data), &offset, &m) == 0) {
        if (m.type != SL_MSG_HB)
            f->messages++;
        else
        if (m.flags & SL_F_HELLO) {
            f->last_hello = m.seq;
            f->hello_count++;
        }
        else
        if (!(m.flags & SL_F_HELLO))
            f->plain_hbs++;
    }
    if (!f->id)
        f->id = zframe_dup (id);
    zframe_destroy (&id);
    zframe_destroy (&data);
    zmsg_destroy (&msg);
    return 0;
}

static void
s_fake_say (s_peer_fake_t *f, uint64_t incarnation, uint32_t credit, uint32_t flags, uint64_t seq)
{
    sl_msg_t hb;
    sl_msg_init (&hb, SL_MSG_HB);
    hb.instance = sl_str ("fake");
    hb.incarnation = incarnation;
    hb.credit = credit;
    hb.flags = flags;
    hb.seq = seq;
    sl_buf_t buf = { 0 };
    sl_msg_encode (&hb, &buf);
    zmsg_t *out = zmsg_new ();
    zframe_t *to = zframe_dup (f->id);
    zmsg_append (out, &to);
    zmsg_addmem (out, buf.data, buf.len);
    zmsg_send (&out, f->sock);
    sl_buf_free (&buf);
}

typedef struct {
    sl_router_t *router;
    s_peer_fake_t *fake;
    int step;
    int phase;
    int sent;
    int plain_at;                       //  plain heartbeats seen when the last window came
    int hellos_at;                      //  hellos seen when the instance asked for one
    int events [8];                     //  peer events seen, by sl_peer_event_t
    int reconnects_at;                  //  reconnections seen when the instance restarted
} s_handshake_t;

static void
s_on_handshake_peer (void *arg, const char *endpoint, sl_peer_event_t event)
{
    (void) endpoint;
    s_handshake_t *h = arg;
    if ((int) event >= 0 && (int) event < 8)
        h->events [event]++;
}

static void
s_send_some (s_handshake_t *h, int n)
{
    for (int i = 0; i < n; i++) {
        sl_msg_t m;
        sl_msg_init (&m, h->sent == 0 ? SL_MSG_START : SL_MSG_DELTA);
        memset (m.sid, 7, SL_SID_SIZE);
        if (m.type == SL_MSG_DELTA)
            m.kind = SL_D_TEXT;
        m.seq = (uint64_t) h->sent++;
        cr_assert_eq (sl_router_send (h->router, &m), 0);
    }
    sl_router_flush (h->router);
}

//  Every 20 ms; each phase waits (boundedly) for what it needs.
static int
s_on_handshake_step (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_handshake_t *h = arg;
    s_peer_fake_t *f = h->fake;
    const char *ep = f->endpoint;
    if (++h->step > 250)
        return -1;                      //  5 s: the phase did not complete
    switch (h->phase) {
        case 0:                         //  the first heartbeat says hello: nothing was sent before it
            if (f->hello_count == 0)
                return 0;
            cr_expect_eq (f->last_hello, 0);
            s_send_some (h, 5);
            s_fake_say (f, 1, 100, SL_F_WINDOW, 0);
            h->phase = 1;
            return 0;
        case 1:                         //  a window of 100, 5 sent since that hello
            if (f->messages < 5 || sl_router_credit (h->router, ep) != 95)
                return 0;
            s_fake_say (f, 1, 10, 0, 0);
            h->phase = 2;
            return 0;
        case 2:                         //  ordinary grants add to it
            if (sl_router_credit (h->router, ep) != 105)
                return 0;
            //  The instance says it holds no window for us (it saw a new
            //  connection): the router says hello at once, counting from 5.
            s_fake_say (f, 1, 0, SL_F_HELLO, 0);
            h->hellos_at = f->hello_count;
            h->phase = 3;
            return 0;
        case 3:                         //  no window is counted on meanwhile
            if (f->hello_count == h->hellos_at || sl_router_credit (h->router, ep) != 0)
                return 0;
            cr_expect_eq (f->last_hello, 5, "the hello counts what was sent before it");
            cr_expect_eq (h->events [SL_PEER_RECONNECTED], 1,
                          "a live instance that forgot our window is a new connection: the stage is told");
            s_send_some (h, 3);
            //  Grants while it has no window count for nothing certain; the
            //  window answering the hello sets the credit outright.
            s_fake_say (f, 1, 999, 0, 0);
            s_fake_say (f, 1, 50, SL_F_WINDOW, 5);
            h->phase = 4;
            return 0;
        case 4:                         //  50, less the 3 sent since that hello
            if (sl_router_credit (h->router, ep) != 47)
                return 0;
            //  A new incarnation: a restarted instance holds nothing of ours.
            s_fake_say (f, 2, 0, 0, 0);
            h->reconnects_at = h->events [SL_PEER_RECONNECTED];
            h->phase = 5;
            return 0;
        case 5:
            if (sl_router_credit (h->router, ep) != 0 || f->last_hello != 8)
                return 0;
            cr_expect_eq (h->events [SL_PEER_RESTARTED], 1);
            cr_expect_eq (h->events [SL_PEER_RECONNECTED], h->reconnects_at, "a restart is not a reconnection");
            s_fake_say (f, 2, 20, SL_F_WINDOW, 8);
            h->phase = 6;
            return 0;
        case 6:
            if (sl_router_credit (h->router, ep) != 20)
                return 0;
            //  Windowed again: heartbeats no longer say hello.
            h->plain_at = f->plain_hbs;
            h->phase = 7;
            return 0;
        case 7:
            return f->plain_hbs > h->plain_at ? -1 : 0;
    }
    return -1;
}

Test (sl_router, credit_comes_from_a_window_answering_a_hello)
{
    codec = sl_codec_new ();
    zloop_t *loop = zloop_new ();
    s_peer_fake_t f = { 0 };
    f.sock = zsock_new (ZMQ_ROUTER);
    int port = zsock_bind (f.sock, "tcp://127.0.0.1:*");
    cr_assert_gt (port, 0);
    snprintf (f.endpoint, sizeof f.endpoint, "tcp://127.0.0.1:%d", port);
    zloop_reader (loop, f.sock, s_on_peer_fake, &f);
    sl_router_t *router = sl_router_new (loop, "test", 7);
    cr_assert_eq (sl_router_connect (router, f.endpoint), 0);
    s_handshake_t h = { .router = router, .fake = &f };
    sl_router_on_peer (router, s_on_handshake_peer, &h);
    zloop_timer (loop, 20, 0, s_on_handshake_step, &h);
    zloop_start (loop);
    cr_expect_eq (h.phase, 7, "every phase of the handshake completed (stopped in phase %d, credit %lld)",
                  h.phase, (long long) sl_router_credit (router, f.endpoint));
    cr_expect_gt (f.plain_hbs, h.plain_at, "with a window, heartbeats say no hello");
    cr_expect_eq (h.events [SL_PEER_UP], 1, "the first heartbeat, once");
    cr_expect_eq (h.events [SL_PEER_RECONNECTED], 1, "the first hello of a new peer is no reconnection");
    sl_router_destroy (&router);
    zloop_destroy (&loop);
    zframe_destroy (&f.id);
    zsock_destroy (&f.sock);
    sl_codec_destroy (&codec);
}

//  --------------------------------------------------------------------------
//  Delivery by instance name (the emitter's frames to the gateway that owns
//  a stream): only to the live peer that announced the name; a name nobody
//  announces waits SL_NAME_WAIT_MS, then is reported unroutable.

typedef struct {
    sl_router_t *router;
    s_fake_t *a, *b, *c;
    int step;
    size_t unroutable;
    char unroutable_name [32];
} s_named_t;

static void
s_frames (sl_router_t *r, const char *name, int n)
{
    for (int i = 0; i < n; i++) {
        sl_msg_t m;
        sl_msg_init (&m, SL_MSG_FRAME);
        m.seq = (uint64_t) i;
        m.body = SL_STR_LIT ("");
        cr_assert_eq (sl_router_send_named (r, sl_str (name), &m), 0);
    }
    sl_router_flush (r);
}

static void
s_on_unroutable (void *arg, const char *name, size_t messages)
{
    s_named_t *n = arg;
    n->unroutable += messages;
    snprintf (n->unroutable_name, sizeof n->unroutable_name, "%s", name);
}

static int
s_on_named_step (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_named_t *n = arg;
    n->step++;
    if (n->step == 3) {
        //  a and b announced themselves; c is silent (still "connecting").
        cr_expect_eq (sl_router_alive_count (n->router), 2);
        s_frames (n->router, "gw-b", 5);
        s_frames (n->router, "gw-c", 3);        //  waits for c
        s_frames (n->router, "gw-x", 4);        //  nobody will ever be gw-x
    }
    if (n->step == 5)
        n->c->silent = false;                   //  c comes up: its frames follow
    if (n->step == 8)
        s_frames (n->router, "gw-c", 2);        //  now straight to c
    return n->step >= 20 ? -1 : 0;
}

Test (sl_router, frames_go_only_to_the_instance_of_their_name)
{
    codec = sl_codec_new ();
    zloop_t *loop = zloop_new ();
    s_fake_t a, b, c;
    s_fake_init (&a, 1000);
    s_fake_init (&b, 1000);
    s_fake_init (&c, 1000);
    a.name = "gw-a";
    b.name = "gw-b";
    c.name = "gw-c";
    c.silent = true;
    zloop_reader (loop, a.sock, s_on_fake, &a);
    zloop_reader (loop, b.sock, s_on_fake, &b);
    zloop_reader (loop, c.sock, s_on_fake, &c);
    sl_router_t *router = sl_router_new (loop, "test", 7);
    char list [256];
    snprintf (list, sizeof list, "%s,%s,%s", a.endpoint, b.endpoint, c.endpoint);
    cr_assert_eq (sl_router_connect (router, list), 0);
    s_named_t named = { router, &a, &b, &c, 0, 0, "" };
    sl_router_on_unroutable (router, s_on_unroutable, &named);
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_FRAME);
    cr_expect_eq (sl_router_send_named (router, SL_STR_NULL, &m), -1, "no name, no delivery");
    cr_expect_eq (sl_router_send_named (router, sl_str (""), &m), -1);
    zloop_timer (loop, 100, 0, s_on_named_step, &named);
    zloop_start (loop);
    cr_expect_eq (named.step, 20, "the timeline ran to its end");
    cr_expect_eq (a.frames, 0, "nothing for a name a does not carry");
    cr_expect_eq (b.frames, 5);
    cr_expect_eq (c.frames, 5, "what waited for c, then what came after");
    cr_expect_eq (named.unroutable, 4, "gw-x's frames were given up");
    cr_expect_str_eq (named.unroutable_name, "gw-x");
    sl_router_destroy (&router);
    zloop_destroy (&loop);
    zsock_destroy (&a.sock);
    zsock_destroy (&b.sock);
    zsock_destroy (&c.sock);
    sl_codec_destroy (&codec);
}

Test (sl_router, no_instance_no_name_delivery_and_no_key_no_router)
{
    sl_router_t *router = sl_router_new (NULL, "test", 7);
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_FRAME);
    cr_expect_eq (sl_router_send_named (router, sl_str ("gw"), &m), -1, "no instance at all");
    char dir [64];
    keydir_make (dir, sizeof dir);
    sl_metrics_t *metrics = sl_metrics_new ();
    sl_bus_opts_t opts = { .keys = dir, .auth = "on" };
    sl_bus_t *bus = sl_bus_new (NULL, metrics, &opts, "emitter");
    cr_assert_not_null (bus);
    cr_expect_eq (sl_router_set_bus (router, bus, "nosuchrole"), -1, "a server key nobody has");
    cr_expect_eq (sl_router_set_bus (router, bus, "gateway"), 0);
    sl_router_destroy (&router);
    sl_bus_destroy (&bus);
    sl_metrics_destroy (&metrics);
    keydir_remove (dir);
}

//  --------------------------------------------------------------------------
//  A heartbeat its type's table refuses (a field no hb carries) is no
//  heartbeat: counted as malformed, and the peer is not alive for it.

typedef struct {
    sl_router_t *router;
    s_fake_t *fake;
    sl_counter_t *malformed;
    int step;
    uint64_t refused;                   //  malformed messages counted while misfit
    size_t alive_misfit;                //  live peers then
} s_misfit_t;

static int
s_on_misfit_step (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_misfit_t *t = arg;
    t->step++;
    if (t->step == 8) {                 //  SL_HB_DEAD_MS and more of refused heartbeats
        t->refused = t->malformed->value;
        t->alive_misfit = sl_router_alive_count (t->router);
        t->fake->misfit = false;
    }
    return t->step >= 16 || (t->step > 8 && sl_router_alive_count (t->router) == 1) ? -1 : 0;
}

Test (sl_router, a_heartbeat_its_table_refuses_is_counted_and_no_heartbeat)
{
    codec = sl_codec_new ();
    zloop_t *loop = zloop_new ();
    sl_metrics_t *metrics = sl_metrics_new ();
    s_fake_t f;
    s_fake_init (&f, 100);
    f.misfit = true;
    zloop_reader (loop, f.sock, s_on_fake, &f);
    sl_router_t *router = sl_router_new (loop, "test", 7);
    sl_router_set_metrics (router, metrics, "judge");
    cr_assert_eq (sl_router_connect (router, f.endpoint), 0);
    s_misfit_t t = { .router = router, .fake = &f };
    t.malformed = sl_metrics_counter (metrics, "sluice_malformed_messages_total", NULL, "");
    zloop_timer (loop, 100, 0, s_on_misfit_step, &t);
    zloop_start (loop);
    cr_expect_gt (t.refused, 0, "the refused heartbeats are counted");
    cr_expect_eq (t.alive_misfit, 0, "a peer whose heartbeats are all refused is not alive");
    cr_expect_eq (sl_router_alive_count (router), 1, "its first heartbeat that fits makes it alive");
    sl_router_destroy (&router);
    zloop_destroy (&loop);
    zsock_destroy (&f.sock);
    sl_metrics_destroy (&metrics);
    sl_codec_destroy (&codec);
}
