/*  sl_stage.c - inbox draining, decoding, heartbeats and the intake of
    streams for a stage (see sl_stage.h). */
#include "common/service/sl_stage.h"

#include <stdlib.h>

#include "common/base/sl_alloc.h"
#include "common/bus/sl_intake.h"
#include "common/base/sl_log.h"
#include "common/bus/sl_router.h"
#include "common/otel/sl_trace.h"

#define SL_STAGE_MAX_DRAIN 256          //  ZeroMQ messages per wake-up (fairness)
#define SL_STAGE_SLICE_MS 20            //  longest drain before the reactor gets a turn
#define SL_STAGE_SWEEP_MS 250           //  how often streams are checked for expiry
#define SL_STAGE_REGRANT_MS 1           //  retry of credit held back while the output was congested
#define SL_STAGE_FORGET_MS 30000        //  a sender silent this long is forgotten
#define SL_STAGE_REFUSED_STATUS 503     //  a stream over --max-streams
#define SL_STAGE_EXPIRED_STATUS 504     //  a stream silent past --stream-expiry-ms
#define SL_STAGE_DRAIN_STATUS 503       //  a stream still held when a drain was cut short

//  What we know about one sender on the inbox.
typedef struct {
    sl_buf_t identity;                  //  its ZeroMQ routing id
    uint64_t consumed;                  //  stream messages handled since the last grant
    bool windowed;                      //  it holds a window (we answered its hello)
    bool owed;                          //  its window was answered with 0 (congested): due
    int64_t heard_at;                   //  ms, last message from it
} s_sender_t;

struct _sl_stage_t {
    sl_service_t *service;
    sl_inbox_t *inbox;
    sl_codec_t *codec;
    sl_stage_msg_fn *on_msg;
    sl_stage_flush_fn *on_flush;
    void *arg;
    sl_buf_t reply;
    zhashx_t *senders;                  //  hex routing id -> s_sender_t
    bool (*congested) (void *arg);
    void *congested_arg;
    sl_counter_t *in_messages;
    sl_counter_t *in_stream_messages;   //  all but heartbeats
    sl_counter_t *malformed;
    sl_counter_t *withheld;
    sl_intake_t *intake;                //  streams coming in (always: origins for `lost`)
    bool tracking;                      //  bound, order and expire them too
    sl_router_t *relay;                 //  router whose losses we report, or NULL
    int hb_timer;
    int sweep_timer;
    int regrant_timer;                  //  -1 unless credit is held back
    //  A ZeroMQ message whose protocol messages a slice did not finish:
    //  the rest is taken in the next turns, before anything newer.
    sl_buf_t pending;                   //  its bytes not yet decoded
    sl_buf_t pending_peer;              //  its sender's routing id
    int resume_timer;                   //  -1 unless pending
    sl_counter_t *lost_sent;
    sl_counter_t *windows;              //  windows granted (hellos answered)
    sl_counter_t *refused;
    sl_counter_t *expired;
    sl_counter_t *gaps;
    sl_counter_t *skipped;
    int64_t refusal_logged;             //  ms, last refusal logged (at most one a second)
    bool draining;                      //  heartbeats say SL_F_DRAINING (sl_stage_drain_with)
    sl_router_t *drain_out;             //  the output the drain waits to be flushed, or NULL
    sl_service_idle_fn *drain_idle;     //  the rest of what the drain waits for, or NULL
    void *drain_arg;
};

static void
s_sender_free (void **item)
{
    s_sender_t *sender = *item;
    if (sender) {
        sl_buf_free (&sender->identity);
        free (sender);
        *item = NULL;
    }
}

static void
s_sender_key (sl_str_t peer, char *key)
{
    size_t n = peer.len < 64 ? peer.len : 64;
    for (size_t i = 0; i < n; i++)
        snprintf (key + 2 * i, 3, "%02x", (unsigned char) peer.ptr [i]);
    key [2 * n] = 0;
}

static s_sender_t *
s_sender (sl_stage_t *self, sl_str_t peer)
{
    char key [2 * 64 + 1];
    s_sender_key (peer, key);
    s_sender_t *sender = zhashx_lookup (self->senders, key);
    if (!sender) {
        sender = sl_xcalloc (1, sizeof *sender);
        sl_buf_append_str (&sender->identity, peer);
        zhashx_insert (self->senders, key, sender);
    }
    sender->heard_at = zclock_mono ();
    return sender;
}

static bool
s_congested (sl_stage_t *self)
{
    return self->congested && self->congested (self->congested_arg);
}

static void
s_send_hb (sl_stage_t *self, s_sender_t *sender, uint32_t credit, uint32_t flags, uint64_t seq)
{
    sl_msg_t hb;
    sl_msg_init (&hb, SL_MSG_HB);
    hb.instance = sl_str (sl_service_name (self->service));
    hb.incarnation = sl_service_incarnation (self->service);
    hb.credit = credit;
    hb.flags = flags | (self->draining ? SL_F_DRAINING : 0);
    hb.seq = seq;
    sl_buf_reset (&self->reply);
    sl_msg_encode (&hb, &self->reply);
    sl_inbox_send (self->inbox, sl_buf_str (&sender->identity), self->reply.data, self->reply.len);
}

//  Credit to give a windowed sender now: what it used, and a window that
//  was held back while congested. 0 while congested.
static uint32_t
s_grant (sl_stage_t *self, s_sender_t *sender)
{
    if (s_congested (self)) {
        sl_counter_inc (self->withheld);
        return 0;
    }
    uint64_t credit = sender->consumed + (sender->owed ? SL_CREDIT_WINDOW : 0);
    sender->consumed = 0;
    sender->owed = false;
    return (uint32_t) credit;
}

//  A heartbeat, from a sender or from our timer: the hello of a sender
//  that holds no window gets a whole one, counted from that hello (what it
//  sent before is forgotten); a sender that says no hello but holds no
//  window here is asked for one; others get what is due.
static void
s_heartbeat (sl_stage_t *self, s_sender_t *sender, const sl_msg_t *hello)
{
    if (hello) {
        sender->windowed = true;
        sender->consumed = 0;
        sender->owed = s_congested (self);
        if (sender->owed)
            sl_counter_inc (self->withheld);
        sl_counter_inc (self->windows);
        s_send_hb (self, sender, sender->owed ? 0 : SL_CREDIT_WINDOW, SL_F_WINDOW, hello->seq);
    }
    else
    if (!sender->windowed)
        s_send_hb (self, sender, 0, SL_F_HELLO, 0);
    else
        s_send_hb (self, sender, s_grant (self, sender), 0, 0);
}

//  Give back credit for what senders used, between their heartbeats too,
//  so a busy sender never waits a heartbeat period for it. Credit held
//  back during congestion goes out as soon as it clears.
static int s_on_regrant (zloop_t *loop, int timer_id, void *arg);

static void
s_grant_used (sl_stage_t *self)
{
    if (s_congested (self)) {
        //  Senders that run out of credit send nothing more, so no input
        //  would tell us when the output clears: look again shortly
        //  rather than at their next heartbeat (100 ms of idle pipeline).
        if (self->regrant_timer < 0)
            self->regrant_timer = zloop_timer (sl_service_loop (self->service), SL_STAGE_REGRANT_MS, 1,
                                               s_on_regrant, self);
        return;
    }
    for (s_sender_t *sender = zhashx_first (self->senders); sender; sender = zhashx_next (self->senders))
        if (sender->windowed && (sender->owed || sender->consumed >= SL_CREDIT_WINDOW / 4))
            s_send_hb (self, sender, s_grant (self, sender), 0, 0);
}

static int
s_on_regrant (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_stage_t *self = arg;
    self->regrant_timer = -1;
    s_grant_used (self);
    return 0;
}

//  Our own heartbeat to every sender heard from lately, whether or not it
//  sent one: it tells a sender we live even while its heartbeats wait in
//  a backlog behind its messages. Senders long silent are forgotten (one
//  that comes back is asked for a hello).
static int
s_on_hb_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_stage_t *self = arg;
    int64_t now = zclock_mono ();
    zlist_t *forget = NULL;
    for (s_sender_t *sender = zhashx_first (self->senders); sender; sender = zhashx_next (self->senders)) {
        if (now - sender->heard_at > SL_STAGE_FORGET_MS) {
            if (!forget)
                forget = zlist_new ();
            zlist_append (forget, (void *) zhashx_cursor (self->senders));
        }
        else
            s_heartbeat (self, sender, NULL);
    }
    if (forget) {
        for (const char *key = zlist_first (forget); key; key = zlist_next (forget))
            zhashx_delete (self->senders, key);
        zlist_destroy (&forget);
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Streams: losses, refusals, expiry

static void
s_send_lost_to (sl_stage_t *self, sl_str_t origin, const uint8_t *sid, uint32_t epoch)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_LOST);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.epoch = epoch;
    sl_buf_reset (&self->reply);
    sl_msg_encode (&m, &self->reply);
    if (sl_inbox_send (self->inbox, origin, self->reply.data, self->reply.len) == 0)
        sl_counter_inc (self->lost_sent);
}

//  Send `lost` for a stream to the instance it came from.
static void
s_send_lost (void *arg, const uint8_t *sid, uint32_t epoch)
{
    sl_stage_t *self = arg;
    sl_str_t origin;
    uint32_t known_epoch;
    bool known = sl_intake_origin (self->intake, sid, &origin, &known_epoch);
    if (sl_log_enabled (SL_LOG_DEBUG)) {
        char hex [SL_SID_HEX_SIZE];
        sl_sid_hex (sid, hex);
        sl_log_debug ("lost", "sid=%s epoch=%u origin=%s", hex, epoch, known ? "known" : "unknown");
    }
    if (known)
        s_send_lost_to (self, origin, sid, epoch);
}

static void
s_on_peer_event (void *arg, const char *endpoint, sl_peer_event_t event)
{
    sl_stage_t *self = arg;
    if (event == SL_PEER_DEAD || event == SL_PEER_RESTARTED || event == SL_PEER_RECONNECTED)
        sl_router_each_pinned (self->relay, endpoint, s_send_lost, self);
}

static void
s_on_downstream (void *arg, const sl_msg_t *msg)
{
    if (msg->type == SL_MSG_LOST)
        s_send_lost (arg, msg->sid, msg->epoch);
}

void
sl_stage_relay_losses (sl_stage_t *self, sl_router_t *router)
{
    self->relay = router;
    sl_router_on_peer (router, s_on_peer_event, self);
    sl_router_on_message (router, s_on_downstream, self);
}

//  End a stream at this hop and every later one: an ERROR and an END, as
//  if the previous stage had sent them (a refusal starts it first).
static void
s_end_stream (sl_stage_t *self, const sl_msg_t *start, const uint8_t *sid, uint32_t epoch, sl_str_t peer,
              const char *code, const char *message, int status, uint32_t flags)
{
    if (start)
        self->on_msg (self->arg, start, peer);
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_ERROR);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.epoch = epoch;
    m.code = sl_str (code);
    m.message = sl_str (message);
    m.status = status;
    m.flags = flags;
    self->on_msg (self->arg, &m, peer);
    sl_msg_init (&m, SL_MSG_END);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.epoch = epoch;
    self->on_msg (self->arg, &m, peer);
}

//  A START over --max-streams: the client hears at once that sluice is at
//  capacity (the same words as the ingest's refusal), in its own dialect.
static void
s_refuse (sl_stage_t *self, const sl_msg_t *start, sl_str_t peer)
{
    sl_counter_inc (self->refused);
    size_t max = sl_intake_max_streams (self->intake);
    int64_t now = zclock_mono ();
    if (now - self->refusal_logged >= 1000) {
        self->refusal_logged = now;
        sl_log_warn ("streams_refused", "at the limit of %zu streams (--max-streams): %llu refused so far",
                     max, (unsigned long long) self->refused->value);
    }
    char text [200];
    snprintf (text, sizeof text, "sluice is serving as many streams as it may at once (%zu at the %s); "
                                 "try again shortly", max, sl_service_role (self->service));
    //  Marked, so that the later stages pass it on whatever their own bound
    //  (and count no refusal of their own).
    sl_msg_t marked = *start;
    marked.flags |= SL_F_REFUSED;
    s_end_stream (self, &marked, start->sid, start->epoch, peer, "overloaded_error", text,
                  SL_STAGE_REFUSED_STATUS, SL_F_RETRYABLE);
}

static void
s_on_expired (void *arg, const uint8_t *sid, uint32_t epoch, sl_str_t origin)
{
    sl_stage_t *self = arg;
    sl_counter_inc (self->expired);
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (sid, hex);
    int64_t expiry = sl_intake_expiry_ms (self->intake);
    sl_log_warn ("stream_expired", "sid=%s epoch=%u: nothing came for %lld ms", hex, epoch, (long long) expiry);
    char text [200];
    snprintf (text, sizeof text, "sluice ended this response: nothing arrived for it for %lld ms",
              (long long) expiry);
    s_end_stream (self, NULL, sid, epoch, origin, "stream_expired", text, SL_STAGE_EXPIRED_STATUS, 0);
}

static int
s_on_sweep (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_stage_t *self = arg;
    if (sl_intake_expire (self->intake, zclock_mono (), self->tracking ? s_on_expired : NULL, self)
    &&  self->on_flush)
        self->on_flush (self->arg);
    return 0;
}

//  A message that follows a gap: the stream is broken here. The instance
//  that sent it hears the stream is lost (back to the ingest, which
//  re-sends it in a new epoch); the rest of this epoch is skipped.
static void
s_on_gap (sl_stage_t *self, const sl_msg_t *msg, sl_str_t peer)
{
    sl_counter_inc (self->gaps);
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (msg->sid, hex);
    sl_log_warn ("stream_gap", "sid=%s epoch=%u seq=%llu: messages before it never came", hex, msg->epoch,
                 (unsigned long long) msg->seq);
    s_send_lost_to (self, peer, msg->sid, msg->epoch);
}

//  --------------------------------------------------------------------------
//  The inbox

//  One stream message: through the intake, then to the stage.
static void
s_take (sl_stage_t *self, const sl_msg_t *msg, sl_str_t peer, s_sender_t *sender)
{
    sender->consumed++;
    sl_intake_verdict_t verdict = sl_intake_admit (self->intake, msg, peer, zclock_mono ());
    if (!self->tracking && verdict != SL_INTAKE_PASS)
        verdict = SL_INTAKE_PASS;       //  origins only: everything passes
    switch (verdict) {
        case SL_INTAKE_PASS:   self->on_msg (self->arg, msg, peer); break;
        case SL_INTAKE_REFUSE: s_refuse (self, msg, peer); break;
        case SL_INTAKE_GAP:    s_on_gap (self, msg, peer); break;
        case SL_INTAKE_SKIP:   sl_counter_inc (self->skipped); break;
    }
}

//  At debug level, when a stream's first and last messages reach this
//  stage (Unix µs, comparable between the processes of one host): with
//  the gateway's leg_timeline, where a stream's time goes, hop by hop.
static void
s_stamp (sl_stage_t *self, const sl_msg_t *msg)
{
    if (msg->type != SL_MSG_REQ && msg->type != SL_MSG_START && msg->type != SL_MSG_END)
        return;
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (msg->sid, hex);
    sl_log_debug ("stream_stamp", "sid=%.8s type=%s role=%s mcp=%.*s unix_us=%lld", hex,
                  sl_msg_type_name (msg->type), sl_service_role (self->service),
                  msg->mcp.len ? (int) msg->mcp.len : 1, msg->mcp.len ? msg->mcp.ptr : "-",
                  (long long) sl_trace_now_us ());
}

//  Take the protocol messages of one ZeroMQ message from *offset on,
//  until its end (true) or the end of the slice begun at started (false).
static bool
s_take_all (sl_stage_t *self, sl_str_t peer, sl_str_t data, size_t *offset, int64_t started)
{
    s_sender_t *sender = s_sender (self, peer);
    sl_msg_t msg;
    int rc;
    while ((rc = sl_codec_decode (self->codec, data.ptr, data.len, offset, &msg)) == 0) {
        sl_counter_inc (self->in_messages);
        if (msg.type == SL_MSG_HB)
            s_heartbeat (self, sender, (msg.flags & SL_F_HELLO) ? &msg : NULL);
        else {
            sl_counter_inc (self->in_stream_messages);
            if (sl_log_enabled (SL_LOG_DEBUG))
                s_stamp (self, &msg);
            s_take (self, &msg, peer, sender);
        }
        //  Heavy work on each message must not starve the heartbeats
        //  either: a slice ends between two messages of one batch too.
        if (*offset < data.len && zclock_mono () - started >= SL_STAGE_SLICE_MS)
            return false;
    }
    if (rc == -2) {
        sl_counter_inc (self->malformed);
        sl_log_warn ("malformed_message", "%s", sl_codec_error (self->codec));
    }
    return true;
}

static int s_on_resume (zloop_t *loop, int timer_id, void *arg);

//  Keep the rest of a message a slice did not finish, and come back to it
//  in the next turn (the socket may have nothing more to wake us for).
static void
s_keep_pending (sl_stage_t *self, sl_str_t peer, sl_str_t rest)
{
    sl_buf_reset (&self->pending);
    sl_buf_append_str (&self->pending, rest);
    sl_buf_reset (&self->pending_peer);
    sl_buf_append_str (&self->pending_peer, peer);
    if (self->resume_timer < 0)
        self->resume_timer = zloop_timer (sl_service_loop (self->service), 1, 1, s_on_resume, self);
}

//  Drain the inbox for one slice: first what a slice left unfinished, then
//  new ZeroMQ messages, in order.
static void
s_drain (sl_stage_t *self)
{
    int64_t started = zclock_mono ();
    bool more = true;
    if (self->pending.len) {
        sl_buf_t rest = self->pending, peer = self->pending_peer;
        self->pending = (sl_buf_t) { 0 };
        self->pending_peer = (sl_buf_t) { 0 };
        size_t offset = 0;
        if (!s_take_all (self, sl_buf_str (&peer), sl_buf_str (&rest), &offset, started)) {
            s_keep_pending (self, sl_buf_str (&peer), sl_str_n (rest.data + offset, rest.len - offset));
            more = false;
        }
        sl_buf_free (&rest);
        sl_buf_free (&peer);
    }
    for (int n = 0; more && n < SL_STAGE_MAX_DRAIN; n++) {
        sl_str_t peer, data;
        int rc = sl_inbox_recv (self->inbox, &peer, &data);
        if (rc == 0)
            break;
        if (rc < 0) {
            sl_counter_inc (self->malformed);
            sl_log_warn ("malformed_message", "wrong number of frames");
            continue;
        }
        size_t offset = 0;
        if (!s_take_all (self, peer, data, &offset, started)) {
            s_keep_pending (self, peer, sl_str_n (data.ptr + offset, data.len - offset));
            break;
        }
        //  A deep backlog is taken in slices: timers (our heartbeats, the
        //  router's) run between them. ZeroMQ's poll is level-triggered,
        //  so the rest is read in the next turn.
        if (zclock_mono () - started >= SL_STAGE_SLICE_MS)
            break;
    }
    if (self->on_flush)
        self->on_flush (self->arg);
    s_grant_used (self);
}

static int
s_on_readable (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    (void) reader;
    s_drain (arg);
    return 0;
}

static int
s_on_resume (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_stage_t *self = arg;
    self->resume_timer = -1;
    s_drain (self);
    return 0;
}

sl_stage_t *
sl_stage_new (sl_service_t *service, const char *bind,
              sl_stage_msg_fn *on_msg, sl_stage_flush_fn *on_flush, void *arg)
{
    //  Every stage's inbox is a CURVE server: the process must have set up
    //  its bus (keys, or an explicit --bus-auth off) first.
    assert (sl_service_bus (service));
    sl_inbox_t *inbox = sl_inbox_new (bind, sl_service_bus (service), sl_service_role (service));
    if (!inbox)
        return NULL;
    sl_stage_t *self = sl_xcalloc (1, sizeof *self);
    self->service = service;
    self->inbox = inbox;
    self->codec = sl_codec_new ();
    self->on_msg = on_msg;
    self->on_flush = on_flush;
    self->arg = arg;
    sl_metrics_t *m = sl_service_metrics (service);
    self->in_messages = sl_metrics_counter (m, "sluice_messages_in_total", NULL,
                                            "Protocol messages received on the inbox");
    self->in_stream_messages = sl_metrics_counter (m, "sluice_stream_messages_in_total", NULL,
                                                   "Protocol messages of streams received on the inbox "
                                                   "(all but heartbeats)");
    self->malformed = sl_metrics_counter (m, "sluice_malformed_messages_total", NULL,
                                          "Messages dropped as malformed (bad frames, codec errors)");
    self->withheld = sl_metrics_counter (m, "sluice_credit_withheld_total", NULL,
                                         "Credit grants held back because the stage's output was congested");
    self->lost_sent = sl_metrics_counter (m, "sluice_lost_notices_total", NULL,
                                          "Streams reported lost to the previous stage (an instance after us died)");
    self->windows = sl_metrics_counter (m, "sluice_credit_windows_granted_total", NULL,
                                        "Whole credit windows granted, each in answer to a sender's hello");
    self->intake = sl_intake_new (0, 0);
    self->sweep_timer = zloop_timer (sl_service_loop (service), SL_STAGE_SWEEP_MS, 0, s_on_sweep, self);
    self->hb_timer = zloop_timer (sl_service_loop (service), SL_HB_INTERVAL_MS, 0, s_on_hb_timer, self);
    self->regrant_timer = -1;
    self->resume_timer = -1;
    self->senders = zhashx_new ();
    zhashx_set_destructor (self->senders, s_sender_free);
    zloop_reader (sl_service_loop (service), sl_inbox_sock (inbox), s_on_readable, self);
    sl_log_info ("inbox_bound", "endpoint=%s", sl_inbox_endpoint (inbox));
    return self;
}

void
sl_stage_destroy (sl_stage_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_stage_t *self = *self_p;
    zloop_t *loop = sl_service_loop (self->service);
    zloop_reader_end (loop, sl_inbox_sock (self->inbox));
    zloop_timer_end (loop, self->sweep_timer);
    zloop_timer_end (loop, self->hb_timer);
    if (self->regrant_timer >= 0)
        zloop_timer_end (loop, self->regrant_timer);
    if (self->resume_timer >= 0)
        zloop_timer_end (loop, self->resume_timer);
    sl_buf_free (&self->pending);
    sl_buf_free (&self->pending_peer);
    sl_intake_destroy (&self->intake);
    zhashx_destroy (&self->senders);
    sl_inbox_destroy (&self->inbox);
    sl_codec_destroy (&self->codec);
    sl_buf_free (&self->reply);
    free (self);
    *self_p = NULL;
}

void
sl_stage_track_streams (sl_stage_t *self, size_t max_streams, int64_t expiry_ms)
{
    sl_intake_destroy (&self->intake);
    self->intake = sl_intake_new (max_streams, expiry_ms);
    self->tracking = true;
    sl_metrics_t *m = sl_service_metrics (self->service);
    self->refused = sl_metrics_counter (m, "sluice_streams_refused_total", NULL,
                                        "Streams refused at once: the stage held --max-streams streams");
    self->expired = sl_metrics_counter (m, "sluice_streams_expired_total", NULL,
                                        "Streams ended here and downstream after --stream-expiry-ms of silence");
    self->gaps = sl_metrics_counter (m, "sluice_stream_gaps_total", NULL,
                                     "Streams broken by a missing message (reported lost, replayed)");
    self->skipped = sl_metrics_counter (m, "sluice_messages_skipped_total", NULL,
                                        "Stream messages not handed on: duplicates, older epochs, the rest of "
                                        "a broken, refused or expired stream");
}

static void
s_drain_start (void *arg)
{
    sl_stage_t *self = arg;
    self->draining = true;
    if (self->drain_out)
        sl_router_set_linger (self->drain_out, SL_SERVICE_GIVE_UP_MS);
    //  Every sender hears it now, not at our next timer.
    for (s_sender_t *sender = zhashx_first (self->senders); sender; sender = zhashx_next (self->senders))
        s_heartbeat (self, sender, NULL);
    sl_log_info ("draining_streams", "streams=%zu", sl_intake_open (self->intake));
}

static bool
s_drain_idle (void *arg)
{
    sl_stage_t *self = arg;
    if (self->tracking && sl_intake_open (self->intake) > 0)
        return false;
    if (self->drain_out && !sl_router_settled (self->drain_out))
        return false;
    return !self->drain_idle || self->drain_idle (self->drain_arg);
}

static void
s_end_held (void *arg, const uint8_t *sid, uint32_t epoch, sl_str_t origin)
{
    s_end_stream (arg, NULL, sid, epoch, origin, "shutting_down",
                  "sluice stopped this instance before the response was complete; try again",
                  SL_STAGE_DRAIN_STATUS, 0);
}

//  --drain-ms passed (or a second signal): every stream still held ends
//  here and at every later hop with an error its client sees (in its
//  dialect), rather than hanging once this instance is gone: when it is
//  the last of its stage nothing could take the stream over.
static void
s_drain_give_up (void *arg)
{
    sl_stage_t *self = arg;
    if (!self->tracking || sl_intake_open (self->intake) == 0)
        return;
    sl_log_warn ("drain_ended_streams", "streams=%zu", sl_intake_open (self->intake));
    sl_intake_each_open (self->intake, s_end_held, self);
    if (self->on_flush)
        self->on_flush (self->arg);
}

void
sl_stage_drain_with (sl_stage_t *self, sl_router_t *out, sl_service_idle_fn *idle, void *arg)
{
    self->drain_out = out;
    self->drain_idle = idle;
    self->drain_arg = arg;
    sl_service_on_drain (self->service, s_drain_start, s_drain_idle, s_drain_give_up, self);
}

bool
sl_stage_stream_opts (const char *max_streams, const char *expiry_ms, size_t *max, int64_t *expiry)
{
    long n = sl_opts_long (max_streams), e = sl_opts_long (expiry_ms);
    if (n < 0 || e < 0) {
        sl_log_error ("bad_option", "--max-streams and --stream-expiry-ms must be non-negative integers");
        return false;
    }
    *max = (size_t) n;
    *expiry = e;
    return true;
}

void
sl_stage_set_congestion (sl_stage_t *self, bool (*fn) (void *arg), void *arg)
{
    self->congested = fn;
    self->congested_arg = arg;
}

sl_inbox_t *
sl_stage_inbox (sl_stage_t *self)
{
    return self->inbox;
}

int
sl_stage_reply (sl_stage_t *self, sl_str_t peer, const sl_msg_t *msg)
{
    sl_buf_reset (&self->reply);
    sl_msg_encode (msg, &self->reply);
    return sl_inbox_send (self->inbox, peer, self->reply.data, self->reply.len);
}
