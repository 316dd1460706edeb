/*  sl_stage.c - inbox draining, decoding and heartbeats for a stage. */
#include "sl_stage.h"

#include <stdlib.h>

#include "sl_alloc.h"
#include "sl_log.h"

#define SL_STAGE_MAX_DRAIN 256          //  ZeroMQ messages per wake-up (fairness)

#include "sl_router.h"
#include "sl_sidmap.h"

#define SL_STAGE_PURGE_MS 1000          //  how often ended streams' origins are forgotten
#define SL_STAGE_REGRANT_MS 1           //  retry of credit held back while the output was congested

//  What we know about one sender on the inbox.
typedef struct {
    sl_buf_t identity;                  //  its ZeroMQ routing id
    uint64_t consumed;                  //  messages handled since the last grant
    bool greeted;                       //  first window granted
} s_sender_t;

//  Where a stream came from (for `lost` notices), kept a while after its end.
typedef struct {
    s_sender_t *sender;
    int64_t ended_at;                   //  ms, 0 while the stream runs
} s_origin_t;

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
    sl_sidmap_t *origins;               //  sid -> s_origin_t
    sl_router_t *relay;                 //  router whose losses we report, or NULL
    int purge_timer;
    int regrant_timer;                  //  -1 unless credit is held back
    sl_counter_t *lost_sent;
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

static s_sender_t *
s_sender (sl_stage_t *self, sl_str_t peer)
{
    char key [2 * 64 + 1];
    size_t n = peer.len < 64 ? peer.len : 64;
    for (size_t i = 0; i < n; i++)
        snprintf (key + 2 * i, 3, "%02x", (unsigned char) peer.ptr [i]);
    key [2 * n] = 0;
    s_sender_t *sender = zhashx_lookup (self->senders, key);
    if (!sender) {
        sender = sl_xcalloc (1, sizeof *sender);
        sl_buf_append_str (&sender->identity, peer);
        zhashx_insert (self->senders, key, sender);
    }
    return sender;
}

static bool
s_congested (sl_stage_t *self)
{
    return self->congested && self->congested (self->congested_arg);
}

static void
s_send_hb (sl_stage_t *self, s_sender_t *sender, uint32_t credit)
{
    sl_msg_t hb;
    sl_msg_init (&hb, SL_MSG_HB);
    hb.instance = sl_str (sl_service_name (self->service));
    hb.incarnation = sl_service_incarnation (self->service);
    hb.credit = credit;
    sl_buf_reset (&self->reply);
    sl_msg_encode (&hb, &self->reply);
    sl_inbox_send (self->inbox, sl_buf_str (&sender->identity), self->reply.data, self->reply.len);
}

//  Credit to give a sender now: its first window, then what it used.
static uint32_t
s_grant (sl_stage_t *self, s_sender_t *sender)
{
    if (s_congested (self)) {
        sl_counter_inc (self->withheld);
        return 0;
    }
    uint64_t credit = sender->greeted ? sender->consumed : SL_CREDIT_WINDOW;
    sender->greeted = true;
    sender->consumed = 0;
    return (uint32_t) credit;
}

static void
s_answer_hb (sl_stage_t *self, sl_str_t peer)
{
    s_sender_t *sender = s_sender (self, peer);
    s_send_hb (self, sender, s_grant (self, sender));
}

//  Give back credit for what senders used, between their heartbeats too,
//  so a busy sender never waits a heartbeat period for it. Credit held
//  back during congestion goes out with the next heartbeat answer.
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
        if (sender->greeted && sender->consumed >= SL_CREDIT_WINDOW / 4)
            s_send_hb (self, sender, s_grant (self, sender));
}


static int64_t
s_now_ms (void)
{
    return zclock_mono ();
}

static void
s_note_origin (sl_stage_t *self, const sl_msg_t *msg, s_sender_t *sender)
{
    s_origin_t *o = sl_sidmap_get (self->origins, msg->sid);
    if (msg->type == SL_MSG_START) {
        if (!o) {
            o = sl_xcalloc (1, sizeof *o);
            sl_sidmap_put (self->origins, msg->sid, o);
        }
        o->sender = sender;
        o->ended_at = 0;
    }
    else
    if (o)
        o->ended_at = s_now_ms ();
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

//  Send `lost` for a stream to the instance it came from.
static void
s_send_lost (void *arg, const uint8_t *sid, uint32_t epoch)
{
    sl_stage_t *self = arg;
    s_origin_t *o = sl_sidmap_get (self->origins, sid);
    if (sl_log_enabled (SL_LOG_DEBUG)) {
        char hex [SL_SID_HEX_SIZE];
        sl_sid_hex (sid, hex);
        sl_log_debug ("lost", "sid=%s epoch=%u origin=%s", hex, epoch, o ? "known" : "unknown");
    }
    if (!o)
        return;
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_LOST);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.epoch = epoch;
    sl_buf_reset (&self->reply);
    sl_msg_encode (&m, &self->reply);
    if (sl_inbox_send (self->inbox, sl_buf_str (&o->sender->identity), self->reply.data, self->reply.len) == 0)
        sl_counter_inc (self->lost_sent);
}

static void
s_on_peer_event (void *arg, const char *endpoint, sl_peer_event_t event)
{
    sl_stage_t *self = arg;
    if (event == SL_PEER_DEAD || event == SL_PEER_RESTARTED)
        sl_router_each_pinned (self->relay, endpoint, s_send_lost, self);
}

static void
s_on_downstream (void *arg, const sl_msg_t *msg)
{
    if (msg->type == SL_MSG_LOST)
        s_send_lost (arg, msg->sid, msg->epoch);
}

//  An origin whose stream ended more than SL_PIN_GRACE_MS before *arg (ms).
static bool
s_origin_expired (void *value, void *arg)
{
    const s_origin_t *o = value;
    return o->ended_at && *(const int64_t *) arg - o->ended_at > SL_PIN_GRACE_MS;
}

static int
s_on_purge (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_stage_t *self = arg;
    int64_t now = s_now_ms ();
    sl_sidmap_drop_if (self->origins, s_origin_expired, &now, free);
    return 0;
}

void
sl_stage_relay_losses (sl_stage_t *self, sl_router_t *router)
{
    self->relay = router;
    sl_router_on_peer (router, s_on_peer_event, self);
    sl_router_on_message (router, s_on_downstream, self);
    self->purge_timer = zloop_timer (sl_service_loop (self->service), SL_STAGE_PURGE_MS, 0, s_on_purge, self);
}

static int
s_on_readable (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    (void) reader;
    sl_stage_t *self = arg;
    for (int n = 0; n < SL_STAGE_MAX_DRAIN; n++) {
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
        sl_msg_t msg;
        s_sender_t *sender = NULL;
        while ((rc = sl_codec_decode (self->codec, data.ptr, data.len, &offset, &msg)) == 0) {
            sl_counter_inc (self->in_messages);
            if (msg.type == SL_MSG_HB)
                s_answer_hb (self, peer);
            else {
                sl_counter_inc (self->in_stream_messages);
                if (!sender)
                    sender = s_sender (self, peer);
                if (self->relay && (msg.type == SL_MSG_START || msg.type == SL_MSG_END))
                    s_note_origin (self, &msg, sender);
                self->on_msg (self->arg, &msg, peer);
                sender->consumed++;
            }
        }
        if (rc == -2) {
            sl_counter_inc (self->malformed);
            sl_log_warn ("malformed_message", "%s", sl_codec_error (self->codec));
        }
    }
    if (self->on_flush)
        self->on_flush (self->arg);
    s_grant_used (self);
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
    self->origins = sl_sidmap_new ();
    self->purge_timer = -1;
    self->regrant_timer = -1;
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
    zloop_reader_end (sl_service_loop (self->service), sl_inbox_sock (self->inbox));
    if (self->purge_timer >= 0)
        zloop_timer_end (sl_service_loop (self->service), self->purge_timer);
    if (self->regrant_timer >= 0)
        zloop_timer_end (sl_service_loop (self->service), self->regrant_timer);
    size_t cursor = 0;
    void *o;
    while ((o = sl_sidmap_next (self->origins, &cursor, NULL)))
        free (o);
    sl_sidmap_destroy (&self->origins);
    zhashx_destroy (&self->senders);
    sl_inbox_destroy (&self->inbox);
    sl_codec_destroy (&self->codec);
    sl_buf_free (&self->reply);
    free (self);
    *self_p = NULL;
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
