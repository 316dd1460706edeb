/*  sl_receiver.h - the audit's side of one emitter connection.

    Records come numbered per emitter incarnation (sl_spool.h), in order,
    maybe more than once (the emitter sends again what was not
    acknowledged), maybe with a hole (ZeroMQ dropped a batch for a peer
    that reconnected). The receiver takes each record once and in order:

      - the first record of an incarnation (the emitter's, or this
        connection's first) is taken, whatever its number: the emitter
        starts sending at its oldest record not acknowledged;
      - a record at or below the last taken is a duplicate: skipped;
      - a record past the next one expected is a hole: skipped, and the
        next acknowledgement asks for a resend from the last committed.

    What was taken is committed by the caller (its store transaction);
    sl_receiver_commit moves the acknowledgement to it, sl_receiver_abort
    (the transaction was rolled back) takes back what was taken since and
    asks for it again. sl_receiver_rack makes the RACK that says so; the
    audit sends one after each commit and periodically (it is also its
    heartbeat, and with incarnation 0 its hello).
*/
#ifndef SL_RECEIVER_H
#define SL_RECEIVER_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/sl_msg.h"

typedef struct {
    uint64_t incarnation;               //  the emitter's, 0 before its first record
    uint64_t received;                  //  last record taken
    uint64_t committed;                 //  last record committed
    uint64_t acked;                     //  last record acknowledged (in a RACK sent)
    bool resend;                        //  the next RACK asks for a resend
    bool asked;                         //  a resend was asked and no record was taken since
} sl_receiver_t;

typedef enum {
    SL_RECEIVER_TAKE,                   //  write it
    SL_RECEIVER_DUPLICATE,              //  had it already
    SL_RECEIVER_HOLE                    //  records are missing before it: skipped
} sl_receiver_verdict_t;

sl_receiver_verdict_t sl_receiver_offer (sl_receiver_t *self, uint64_t incarnation, uint64_t seq);
void sl_receiver_commit (sl_receiver_t *self);
void sl_receiver_abort (sl_receiver_t *self);
//  True when a RACK would say something new (a commit, a resend to ask).
bool sl_receiver_news (const sl_receiver_t *self);
//  The RACK to send now.
void sl_receiver_rack (sl_receiver_t *self, sl_msg_t *out);

#endif
