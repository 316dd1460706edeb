/*  sl_intake.h - the streams a stage is taking in: bounded, in order, and
    each one let go of in bounded time.

    A stage's inbox hands every stream message through sl_intake_admit
    before the stage library sees it. Per stream id the intake keeps the
    epoch, the next sequence number the previous stage will send
    (PROTOCOL.md: each hop numbers its output from 0 per stream and epoch;
    time-driven messages carry the next number without taking it), when a
    message last came, and the routing id of the instance that sent it (where
    a `lost` notice for the stream goes). From that it decides:

      PASS     the next message of a stream: hand it to the stage. A START
               opens a stream (or, of a newer epoch, restarts it in place).
      REFUSE   a START while max_streams streams are open: the stage must
               refuse the stream cleanly (an error the client sees), not
               keep it. A START an earlier stage refused (SL_F_REFUSED:
               its error and end follow at once) passes whatever the bound.
      GAP      a message after one that never came (a connection that
               dropped and came back loses what was in flight): the stream
               is broken at this hop. The stage reports it lost, so the
               ingest re-sends it in a new epoch, and skips the rest of it.
      SKIP     a duplicate, an older epoch, or more of a stream that is
               broken, refused, over, or expired.

    Messages of streams the intake never saw start pass: the stage library
    drops and counts them.

    Expiry: a stream with no message for expiry_ms is handed to the
    caller's function once (the stage ends it at every later hop with an
    error) and forgotten. The expiry must exceed the longest silence a live
    stream can have: the ingest's upstream deadlines (first byte, idle), an
    LLM judge's timeout. A stream that ended, was refused or expired is
    remembered for SL_INTAKE_GRACE_MS, still with its origin (an instance
    after us may die with the stream's last messages, and the stream must
    then still be reported lost), and its later messages are skipped.

    Pure: no sockets; time is the caller's ms.
*/
#ifndef SL_INTAKE_H
#define SL_INTAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/sl_msg.h"
#include "common/base/sl_str.h"

#define SL_INTAKE_GRACE_MS 3000         //  an ended stream is remembered this long
#define SL_INTAKE_ORIGIN_MAX 32         //  bytes of a sender's routing id kept

typedef enum {
    SL_INTAKE_PASS = 0,
    SL_INTAKE_REFUSE,
    SL_INTAKE_GAP,
    SL_INTAKE_SKIP
} sl_intake_verdict_t;

typedef struct _sl_intake_t sl_intake_t;

//  A stream that expired: its id, epoch and origin (borrowed for the call).
typedef void (sl_intake_expired_fn) (void *arg, const uint8_t *sid, uint32_t epoch, sl_str_t origin);

//  max_streams: streams open at once (0: no bound). expiry_ms: silence
//  after which a stream is let go of (0: never).
sl_intake_t *sl_intake_new (size_t max_streams, int64_t expiry_ms);
void sl_intake_destroy (sl_intake_t **self_p);
//  Decide on a stream message (not a heartbeat) that origin sent, at now.
sl_intake_verdict_t sl_intake_admit (sl_intake_t *self, const sl_msg_t *msg, sl_str_t origin, int64_t now);
//  Where the stream came from (a routing id, borrowed until the next call),
//  and its epoch; false when the stream is not known (or no longer).
bool sl_intake_origin (sl_intake_t *self, const uint8_t *sid, sl_str_t *origin, uint32_t *epoch);
//  Hand every stream silent for the expiry to fn, once, and forget streams
//  over their grace. Returns how many expired.
size_t sl_intake_expire (sl_intake_t *self, int64_t now, sl_intake_expired_fn *fn, void *arg);
//  Streams open (passed their START, not yet ended, refused or expired).
size_t sl_intake_open (sl_intake_t *self);
//  Call fn for every open stream (its id, epoch and origin, borrowed for
//  the call): a stage that stops hands them back (reports them lost).
//  fn must not admit messages meanwhile.
void sl_intake_each_open (sl_intake_t *self, sl_intake_expired_fn *fn, void *arg);
size_t sl_intake_max_streams (sl_intake_t *self);
int64_t sl_intake_expiry_ms (sl_intake_t *self);

#endif
