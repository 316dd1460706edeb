/*  sl_spool.c - records for the audit, held until committed (see sl_spool.h).

    The records are a ring of encoded REC messages, oldest first: the
    oldest is number `base`, the next one to send number `next`. Records
    below `next` are in flight to the active audit; an acknowledgement
    frees from the front.
*/
#include "common/stages/sl_spool.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

typedef struct {
    uint64_t seq;
    size_t len;
    uint8_t data [];                    //  the encoded REC message
} s_rec_t;

struct _sl_spool_t {
    size_t max_bytes;
    char *instance;
    uint64_t incarnation;
    s_rec_t **ring;
    size_t cap;                         //  slots in ring (a power of two)
    size_t head;                        //  slot of the oldest record
    size_t count;                       //  records held
    size_t bytes;                       //  bytes held
    uint64_t base;                      //  number of the oldest record held (or the next made)
    uint64_t next;                      //  number of the next record to send
    uint64_t made;                      //  records numbered so far
    uint64_t high_sent;                 //  highest number ever sent
    size_t inflight_bytes;              //  bytes of records base .. next - 1
    //  The active audit
    bool active;
    uint8_t peer [SL_SPOOL_PEER_ID_MAX];
    size_t peer_len;
    int64_t heard_ms;                   //  its last RACK
    int64_t progress_ms;                //  last acknowledgement, or start of sending
    //  Loss past the bound, until a gap record says so
    uint64_t lost;
    int64_t lost_since_ms;
    uint8_t lost_sids [SL_SPOOL_GAP_STREAMS][SL_SID_SIZE];
    size_t lost_sid_count;
    sl_buf_t inner;                     //  scratch: the message of the record being added
    sl_buf_t outer;                     //  scratch: the REC envelope around it
    sl_spool_stats_t stats;
};

sl_spool_t *
sl_spool_new (size_t max_bytes, const char *instance, uint64_t incarnation)
{
    sl_spool_t *self = sl_xcalloc (1, sizeof *self);
    self->max_bytes = max_bytes;
    self->instance = sl_xstrdup (instance ? instance : "");
    self->incarnation = incarnation;
    self->cap = 256;
    self->ring = sl_xcalloc (self->cap, sizeof (s_rec_t *));
    self->base = self->next = 1;
    return self;
}

void
sl_spool_destroy (sl_spool_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_spool_t *self = *self_p;
    for (size_t i = 0; i < self->count; i++)
        free (self->ring [(self->head + i) & (self->cap - 1)]);
    free (self->ring);
    free (self->instance);
    sl_buf_free (&self->inner);
    sl_buf_free (&self->outer);
    free (self);
    *self_p = NULL;
}

bool
sl_spool_wants (const sl_msg_t *msg)
{
    switch (msg->type) {
        case SL_MSG_START:
        case SL_MSG_VERDICT:
        case SL_MSG_ERROR:
        case SL_MSG_END:
        case SL_MSG_POLICY:
        case SL_MSG_APPROVAL:
            return true;
        case SL_MSG_BLOCK:
            return msg->kind == SL_B_MESSAGE || msg->kind == SL_B_END || msg->kind == SL_B_FINISH;
        default:
            return false;
    }
}

static s_rec_t *
s_at (sl_spool_t *self, uint64_t seq)
{
    return self->ring [(self->head + (size_t) (seq - self->base)) & (self->cap - 1)];
}

//  A record holding the encoded message inner.
static void
s_push (sl_spool_t *self, sl_str_t inner, uint8_t sub, int64_t now_ms)
{
    sl_msg_t rec;
    sl_msg_init (&rec, SL_MSG_REC);
    rec.seq = ++self->made;
    rec.kind = sub;
    rec.incarnation = self->incarnation;
    rec.instance = sl_str (self->instance);
    rec.ts = now_ms;
    rec.body = inner;
    sl_buf_reset (&self->outer);
    sl_msg_encode (&rec, &self->outer);
    if (self->count == self->cap) {
        s_rec_t **ring = sl_xcalloc (self->cap * 2, sizeof (s_rec_t *));
        for (size_t i = 0; i < self->count; i++)
            ring [i] = self->ring [(self->head + i) & (self->cap - 1)];
        free (self->ring);
        self->ring = ring;
        self->head = 0;
        self->cap *= 2;
    }
    s_rec_t *r = sl_xmalloc (sizeof *r + self->outer.len);
    r->seq = rec.seq;
    r->len = self->outer.len;
    memcpy (r->data, self->outer.data, r->len);
    self->ring [(self->head + self->count) & (self->cap - 1)] = r;
    if (self->count == 0)
        self->base = r->seq;
    self->count++;
    self->bytes += r->len;
    self->stats.spooled++;
}

//  What was lost since the last gap record, as one record of its own.
static void
s_push_gap (sl_spool_t *self, int64_t now_ms)
{
    sl_msg_t gap;
    sl_msg_init (&gap, SL_MSG_GAP);
    gap.count = self->lost;
    gap.ts = self->lost_since_ms;
    gap.body = sl_str_n (self->lost_sids, self->lost_sid_count * SL_SID_SIZE);
    sl_buf_t encoded = { 0 };
    sl_msg_encode (&gap, &encoded);
    s_push (self, sl_buf_str (&encoded), 0, now_ms);
    sl_buf_free (&encoded);
    self->stats.gaps++;
    self->lost = 0;
    self->lost_sid_count = 0;
}

static void
s_remember_loss (sl_spool_t *self, const sl_msg_t *msg, int64_t now_ms)
{
    if (self->lost == 0)
        self->lost_since_ms = now_ms;
    self->lost++;
    self->stats.dropped++;
    if (msg->type < SL_MSG_START || msg->type > SL_MSG_END)
        return;                         //  not a stream's record (a policy report)
    for (size_t i = 0; i < self->lost_sid_count; i++)
        if (memcmp (self->lost_sids [i], msg->sid, SL_SID_SIZE) == 0)
            return;
    if (self->lost_sid_count < SL_SPOOL_GAP_STREAMS)
        memcpy (self->lost_sids [self->lost_sid_count++], msg->sid, SL_SID_SIZE);
}

int
sl_spool_add (sl_spool_t *self, const sl_msg_t *msg, uint8_t sub, int64_t now_ms)
{
    sl_buf_reset (&self->inner);
    sl_msg_encode (msg, &self->inner);
    //  The record's size, close enough: the message and its envelope.
    size_t size = self->inner.len + 64 + strlen (self->instance);
    if (self->bytes + size > self->max_bytes) {
        s_remember_loss (self, msg, now_ms);
        return -1;
    }
    if (self->lost)
        s_push_gap (self, now_ms);      //  may go a little over: it is small
    s_push (self, sl_buf_str (&self->inner), sub, now_ms);
    return 0;
}

//  Free every record up to seq that was sent.
static void
s_ack (sl_spool_t *self, uint64_t seq, int64_t now_ms)
{
    bool freed = false;
    while (self->count && self->base <= seq && self->base < self->next) {
        s_rec_t *r = self->ring [self->head];
        self->ring [self->head] = NULL;
        self->head = (self->head + 1) & (self->cap - 1);
        self->count--;
        self->bytes -= r->len;
        self->inflight_bytes -= r->len;
        self->base++;
        self->stats.acked++;
        free (r);
        freed = true;
    }
    if (self->count == 0)
        self->base = self->made + 1;
    if (freed)
        self->progress_ms = now_ms;
}

//  Send everything unacknowledged again, from the oldest.
static void
s_go_back (sl_spool_t *self, int64_t now_ms)
{
    self->next = self->base;
    self->inflight_bytes = 0;
    self->progress_ms = now_ms;
}

void
sl_spool_on_rack (sl_spool_t *self, sl_str_t peer, const sl_msg_t *rack, int64_t now_ms)
{
    if (!peer.len || peer.len > SL_SPOOL_PEER_ID_MAX)
        return;
    bool ours = rack->incarnation == self->incarnation;
    if (ours)
        s_ack (self, rack->seq, now_ms);
    bool is_active = self->active && self->peer_len == peer.len && memcmp (self->peer, peer.ptr, peer.len) == 0;
    if (!ours || !self->active) {
        //  A hello (an audit that does not know this incarnation's
        //  records), or the first audit to speak since the last went:
        //  it takes over, from the oldest record it may lack.
        self->active = true;
        memcpy (self->peer, peer.ptr, peer.len);
        self->peer_len = peer.len;
        self->heard_ms = now_ms;
        s_go_back (self, now_ms);
        return;
    }
    if (!is_active)
        return;                         //  a standby audit: its acknowledgements count, no more
    self->heard_ms = now_ms;
    if (rack->kind == SL_RACK_RESEND)
        s_go_back (self, now_ms);
}

void
sl_spool_tick (sl_spool_t *self, int64_t now_ms)
{
    if (!self->active)
        return;
    if (now_ms - self->heard_ms > SL_SPOOL_PEER_DEAD_MS) {
        self->active = false;
        s_go_back (self, now_ms);
        return;
    }
    if (self->next > self->base && now_ms - self->progress_ms > SL_SPOOL_RESEND_MS)
        s_go_back (self, now_ms);
}

size_t
sl_spool_take (sl_spool_t *self, sl_buf_t *out, sl_str_t *peer, int64_t now_ms)
{
    if (!self->active)
        return 0;
    if (self->next == self->base)
        self->progress_ms = now_ms;     //  the wait for an acknowledgement starts now
    size_t taken = 0, batch = 0;
    uint64_t end = self->base + self->count;
    while (self->next < end && self->next - self->base < SL_SPOOL_WINDOW
       &&  self->inflight_bytes < SL_SPOOL_WINDOW_BYTES && batch < SL_SPOOL_BATCH_BYTES) {
        s_rec_t *r = s_at (self, self->next);
        sl_buf_append (out, r->data, r->len);
        batch += r->len;
        self->inflight_bytes += r->len;
        if (r->seq <= self->high_sent)
            self->stats.resent++;
        else
            self->high_sent = r->seq;
        self->stats.sent++;
        self->next++;
        taken++;
    }
    *peer = sl_str_n (self->peer, self->peer_len);
    return taken;
}

void
sl_spool_unsend (sl_spool_t *self, size_t records, bool gone)
{
    for (size_t i = 0; i < records && self->next > self->base; i++) {
        self->next--;
        self->inflight_bytes -= s_at (self, self->next)->len;
        self->stats.sent--;
    }
    if (gone)
        self->active = false;
}

size_t sl_spool_records (sl_spool_t *self) { return self->count; }
size_t sl_spool_bytes (sl_spool_t *self) { return self->bytes; }
size_t sl_spool_unsent (sl_spool_t *self) { return self->bytes - self->inflight_bytes; }
const sl_spool_stats_t *sl_spool_stats (sl_spool_t *self) { return &self->stats; }

bool
sl_spool_connected (sl_spool_t *self, int64_t now_ms)
{
    return self->active && now_ms - self->heard_ms <= SL_SPOOL_PEER_DEAD_MS;
}
