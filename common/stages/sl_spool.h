/*  sl_spool.h - the emitter's records for the audit, kept until committed.

    A PUB socket loses what a slow or absent subscriber does not take; the
    audit store must not. So the emitter also keeps every record the audit
    needs in this spool, sends them over an acknowledged link (an audit
    DEALER connected to the emitter's --audit ROUTER, PROTOCOL.md "The
    audit link") and forgets a record only once an audit said it is
    committed to its store.

    What is spooled: a stream's start, the block events that carry whole
    content (message, block_end, finish: never the deltas, which block_end
    repeats whole, nor keep-alives), verdicts, errors (the emitter's own
    too), the end; and the judges' policy reports. Each record is the
    protocol message itself, encoded once, inside a REC envelope that
    numbers it (from 1, per emitter incarnation) and stamps it with the
    wall-clock time it was spooled. A stream event is identified by its
    stream id and its position in the judged stream (the judge's sequence
    number) plus the envelope's kind (0 for a message from the judge, 1..
    for events the emitter raised while handling it): the same on any
    emitter the stream is re-sent to, so the store writes it once.

    Delivery is go-back-N to one audit at a time:
      - an audit says hello with a RACK whose incarnation is not this
        spool's (it knows nothing yet, or another incarnation): it becomes
        the active audit, and sending starts again from the oldest record
        not acknowledged;
      - at most SL_SPOOL_WINDOW records (and SL_SPOOL_WINDOW_BYTES) are in
        flight; a RACK of this incarnation acknowledges every record up to
        its sequence number (the audit commits them in order), from any
        audit, and those records are freed;
      - an audit that asks for a resend (kind SL_RACK_RESEND), or no
        progress for SL_SPOOL_RESEND_MS while records are in flight, sends
        everything unacknowledged again;
      - the active audit is dead after SL_SPOOL_PEER_DEAD_MS without a
        RACK: sending stops until an audit speaks again.
    A record may thus arrive twice; the audit skips what it has.

    The bound: past max_bytes held, a new record is dropped and counted,
    and the stream it belonged to remembered (up to SL_SPOOL_GAP_STREAMS).
    When a record fits again, a GAP record goes first: how many records
    were lost, since when, and which streams they belonged to. The store
    shows it; nothing is lost silently.

    Pure: no sockets, no clock. The service gives it the time and moves the
    bytes (sl_spool_take, then a send to the peer it names).
*/
#ifndef SL_SPOOL_H
#define SL_SPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "proto/sl_msg.h"

#define SL_SPOOL_WINDOW 4096            //  records in flight to the audit
#define SL_SPOOL_WINDOW_BYTES (8u << 20)    //  bytes in flight to the audit
#define SL_SPOOL_BATCH_BYTES (256u << 10)   //  one ZeroMQ message to the audit, about
#define SL_SPOOL_RESEND_MS 3000         //  no acknowledgement for this long: send again
#define SL_SPOOL_PEER_DEAD_MS 2000      //  an audit silent this long is gone
#define SL_SPOOL_GAP_STREAMS 256        //  streams a gap record names, at most
#define SL_SPOOL_PEER_ID_MAX 64         //  bytes of a ZeroMQ routing id
#define SL_SPOOL_DEFAULT_BYTES (64u << 20)

//  RACK kinds (field "k").
#define SL_RACK_ACK 1                   //  everything up to seq is committed
#define SL_RACK_RESEND 2                //  the same, and send again what follows it

typedef struct _sl_spool_t sl_spool_t;

typedef struct {
    uint64_t spooled;                   //  records taken in
    uint64_t acked;                     //  records an audit committed
    uint64_t dropped;                   //  records over the bound, lost
    uint64_t gaps;                      //  gap records made
    uint64_t resent;                    //  records sent again
    uint64_t sent;                      //  records sent (first time or again)
} sl_spool_stats_t;

//  instance and incarnation name this emitter in every record.
sl_spool_t *sl_spool_new (size_t max_bytes, const char *instance, uint64_t incarnation);
void sl_spool_destroy (sl_spool_t **self_p);
//  Whether an audit would want this message (see above).
bool sl_spool_wants (const sl_msg_t *msg);
//  Keep msg as a record; sub is 0 for a judged message, 1.. for the
//  emitter's own events raised while handling the judged message of that
//  seq (msg->seq must be that seq). now_ms: wall clock, Unix ms. 0 kept,
//  -1 dropped (over the bound: counted and remembered for the gap record).
int sl_spool_add (sl_spool_t *self, const sl_msg_t *msg, uint8_t sub, int64_t now_ms);
//  A RACK from the audit whose routing id is peer (now_ms: monotonic).
void sl_spool_on_rack (sl_spool_t *self, sl_str_t peer, const sl_msg_t *rack, int64_t now_ms);
//  Time passes (monotonic ms): the active audit may be dead, a resend due.
void sl_spool_tick (sl_spool_t *self, int64_t now_ms);
//  The next batch for the active audit: records appended to out (one
//  ZeroMQ frame), the audit's routing id in *peer (borrowed until the next
//  call). Returns the records in it, 0 when nothing is to be sent now.
//  The records count as sent: call sl_spool_unsend when the send failed.
size_t sl_spool_take (sl_spool_t *self, sl_buf_t *out, sl_str_t *peer, int64_t now_ms);
//  The last batch taken could not be sent: it goes again next time; when
//  gone is set the audit is gone too (it is no longer the active one).
void sl_spool_unsend (sl_spool_t *self, size_t records, bool gone);
//  Records and bytes held (not yet acknowledged), and bytes not yet sent.
size_t sl_spool_records (sl_spool_t *self);
size_t sl_spool_bytes (sl_spool_t *self);
size_t sl_spool_unsent (sl_spool_t *self);
//  True while an audit is active (alive).
bool sl_spool_connected (sl_spool_t *self, int64_t now_ms);
const sl_spool_stats_t *sl_spool_stats (sl_spool_t *self);

#endif
