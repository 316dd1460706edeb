/*  audit_link.c - the spool on the wire (see audit_link.h). */
#include "services/emitter/audit_link.h"

#include <errno.h>
#include <stdlib.h>

#include "common/base/sl_alloc.h"
#include "common/bus/sl_inbox.h"
#include "common/base/sl_log.h"
#include "common/stages/sl_spool.h"

#define AUDIT_LINK_TICK_MS 100          //  resends and liveness looked at this often
#define AUDIT_LINK_DRAIN 256            //  messages read per wake-up
//  Records wait this long to go out together (unless a batch's worth is
//  ready): one message to the audit carries many streams' records, so
//  neither side wakes up per stream. The console's live page is this much
//  later; nothing else waits for it.
#define AUDIT_LINK_DELAY_MS 5

struct _audit_link_t {
    sl_service_t *svc;
    sl_inbox_t *inbox;
    sl_spool_t *spool;
    sl_codec_t *codec;
    sl_buf_t batch;
    int timer;
    int soon;                           //  one-shot: send what waits, -1 when not armed
    sl_msg_t own;                       //  scratch: an own event, keyed
    uint64_t judged_seq;                //  seq of the last judged message
    uint8_t own_count;                  //  own events raised since it
    //  Copies of the spool's running totals
    sl_counter_t *spooled, *committed, *lost, *gaps, *resent;
    sl_counter_t *malformed;            //  the process's count of refused messages
};

static int64_t
s_mono (void)
{
    return zclock_mono ();
}

static void
s_sync_metrics (audit_link_t *self)
{
    const sl_spool_stats_t *st = sl_spool_stats (self->spool);
    self->spooled->value = st->spooled;
    self->committed->value = st->acked;
    self->lost->value = st->dropped;
    self->gaps->value = st->gaps;
    self->resent->value = st->resent;
}

//  Send everything that may go now.
static void
s_send (audit_link_t *self)
{
    for (;;) {
        sl_buf_reset (&self->batch);
        sl_str_t peer;
        size_t n = sl_spool_take (self->spool, &self->batch, &peer, s_mono ());
        if (n == 0)
            break;
        if (sl_inbox_send (self->inbox, peer, self->batch.data, self->batch.len)) {
            //  Unreachable: the audit went; full: it is slow. Either way
            //  the records stay, and go again.
            sl_spool_unsend (self->spool, n, zmq_errno () == EHOSTUNREACH);
            break;
        }
    }
    sl_buf_shrink (&self->batch, SL_SPOOL_BATCH_BYTES);
    s_sync_metrics (self);
}

static int
s_on_soon (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    audit_link_t *self = arg;
    self->soon = -1;
    s_send (self);
    return 0;
}

void
audit_link_flush (audit_link_t *self)
{
    if (!self)
        return;
    if (!sl_spool_connected (self->spool, s_mono ())) {
        s_sync_metrics (self);          //  what was spooled or lost shows at once
        return;                         //  nobody to send to: the records wait (a hello sends them)
    }
    if (sl_spool_unsent (self->spool) >= SL_SPOOL_BATCH_BYTES)
        s_send (self);
    else
    if (self->soon < 0 && sl_spool_unsent (self->spool))
        self->soon = zloop_timer (sl_service_loop (self->svc), AUDIT_LINK_DELAY_MS, 1, s_on_soon, self);
}

static int
s_on_rack (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    (void) reader;
    audit_link_t *self = arg;
    for (int i = 0; i < AUDIT_LINK_DRAIN; i++) {
        sl_str_t peer, data;
        int rc = sl_inbox_recv (self->inbox, &peer, &data);
        if (rc == 0)
            break;
        if (rc < 0)
            continue;
        size_t offset = 0;
        sl_msg_t msg;
        while ((rc = sl_codec_decode (self->codec, data.ptr, data.len, &offset, &msg)) == 0)
            if (msg.type == SL_MSG_RACK)
                sl_spool_on_rack (self->spool, peer, &msg, s_mono ());
        if (rc == -2) {
            sl_counter_inc (self->malformed);
            sl_log_warn ("malformed_message", "from an audit: %s", sl_codec_error (self->codec));
        }
    }
    s_send (self);
    return 0;
}

static int
s_on_tick (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    audit_link_t *self = arg;
    sl_spool_tick (self->spool, s_mono ());
    s_send (self);
    return 0;
}

static double
s_records (void *arg)
{
    return (double) sl_spool_records (((audit_link_t *) arg)->spool);
}

static double
s_bytes (void *arg)
{
    return (double) sl_spool_bytes (((audit_link_t *) arg)->spool);
}

static double
s_connected (void *arg)
{
    return sl_spool_connected (((audit_link_t *) arg)->spool, s_mono ()) ? 1 : 0;
}

audit_link_t *
audit_link_new (sl_service_t *svc, const char *endpoint, const char *spool_bytes)
{
    long bytes = sl_opts_long (spool_bytes);
    if (bytes <= 0) {
        sl_log_error ("bad_option", "--audit-spool must be a positive number of bytes: %s", spool_bytes);
        return NULL;
    }
    sl_inbox_t *inbox = sl_inbox_new (endpoint, sl_service_bus (svc), "audit");
    if (!inbox)
        return NULL;
    audit_link_t *self = sl_xcalloc (1, sizeof *self);
    self->svc = svc;
    self->inbox = inbox;
    self->spool = sl_spool_new ((size_t) bytes, sl_service_name (svc), sl_service_incarnation (svc));
    self->codec = sl_codec_new ();
    sl_metrics_t *m = sl_service_metrics (svc);
    self->spooled = sl_metrics_counter (m, "sluice_audit_records_total", NULL, "Records spooled for the audit");
    self->committed = sl_metrics_counter (m, "sluice_audit_records_committed_total", NULL,
                                          "Records an audit committed to its store");
    self->lost = sl_metrics_counter (m, "sluice_audit_records_lost_total", NULL,
                                     "Records dropped: the spool was full (the store shows a gap)");
    self->gaps = sl_metrics_counter (m, "sluice_audit_gaps_total", NULL, "Gap records sent for lost records");
    self->resent = sl_metrics_counter (m, "sluice_audit_records_resent_total", NULL,
                                       "Records sent to the audit again (not acknowledged in time, a new audit)");
    self->malformed = sl_metrics_counter (m, "sluice_malformed_messages_total", NULL,
                                          "Messages dropped as malformed (bad frames, codec errors)");
    sl_metrics_gauge_fn (m, "sluice_audit_spool_records", NULL, "Records held for the audit, not yet committed",
                         s_records, self);
    sl_metrics_gauge_fn (m, "sluice_audit_spool_bytes", NULL, "Bytes held for the audit, not yet committed",
                         s_bytes, self);
    sl_metrics_gauge_fn (m, "sluice_audit_connected", NULL, "1 while an audit takes the records", s_connected, self);
    //  The spool's size beside its use: an alert on a spool filling up
    //  divides one by the other, whatever --audit-spool says.
    sl_metrics_gauge (m, "sluice_audit_spool_capacity_bytes", NULL,
                      "Bytes the spool holds at most (--audit-spool); past it records are dropped")->value = bytes;
    zloop_t *loop = sl_service_loop (svc);
    zloop_reader (loop, sl_inbox_sock (inbox), s_on_rack, self);
    self->timer = zloop_timer (loop, AUDIT_LINK_TICK_MS, 0, s_on_tick, self);
    self->soon = -1;
    sl_log_info ("audit_bound", "endpoint=%s spool_bytes=%ld", sl_inbox_endpoint (inbox), bytes);
    return self;
}

void
audit_link_destroy (audit_link_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    audit_link_t *self = *self_p;
    zloop_t *loop = sl_service_loop (self->svc);
    zloop_reader_end (loop, sl_inbox_sock (self->inbox));
    zloop_timer_end (loop, self->timer);
    if (self->soon >= 0)
        zloop_timer_end (loop, self->soon);
    if (sl_spool_records (self->spool))
        sl_log_warn ("audit_unsent", "%zu records no audit committed are lost with this process",
                     sl_spool_records (self->spool));
    sl_inbox_destroy (&self->inbox);
    sl_spool_destroy (&self->spool);
    sl_codec_destroy (&self->codec);
    sl_buf_free (&self->batch);
    free (self);
    *self_p = NULL;
}

void
audit_link_judged (audit_link_t *self, const sl_msg_t *msg)
{
    if (!self)
        return;
    self->judged_seq = msg->seq;
    self->own_count = 0;
    if (sl_spool_wants (msg))
        sl_spool_add (self->spool, msg, 0, zclock_time ());
}

void
audit_link_own (audit_link_t *self, const sl_msg_t *msg)
{
    if (!self || !sl_spool_wants (msg))
        return;
    //  Keyed by the judged message it came from: a re-send raises it again
    //  at the same place, so the store writes it once.
    self->own = *msg;
    self->own.seq = self->judged_seq;
    sl_spool_add (self->spool, &self->own, ++self->own_count, zclock_time ());
}

bool
audit_link_settled (audit_link_t *self)
{
    return !self || sl_spool_records (self->spool) == 0 || !sl_spool_connected (self->spool, s_mono ());
}
