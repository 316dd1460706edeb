/*  sl_ended.h - streams the ingest let go of before their end was known
    to have passed every stage, remembered so that their end can be sent
    again.

    The ingest holds a stream until the gateway acknowledges its last
    frame: a message lost on the way (a connection that dropped with it,
    an instance that died) is then re-sent from the stream's delta log. A
    stream it lets go of early (the client went away, its gateway stopped
    acknowledging, it could not be re-sent, the client's response ended
    first) ends with an ERROR and an END sent once. When those are lost
    too, the stages that held the stream would keep it until their
    --stream-expiry-ms. So such a stream is remembered here, with its
    START and why it ended, for a while; a `lost` for it (a stage found a
    gap, an instance holding it died or reconnected) is answered by
    ending it again in a new epoch: START, ERROR, END.

    Bounded: at most max streams for keep_ms each; past max the oldest
    is forgotten first (counted by the caller through sl_ended_put's
    return). Pure: no sockets; time is the caller's ms.
*/
#ifndef SL_ENDED_H
#define SL_ENDED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/sl_msg.h"
#include "common/base/sl_str.h"

#define SL_ENDED_MAX 4096               //  streams remembered at once
#define SL_ENDED_KEEP_MS 30000          //  how long each one is

typedef struct _sl_ended_t sl_ended_t;

//  What a stream is to be ended with again (borrowed until the next call).
typedef struct {
    uint32_t epoch;                     //  the new epoch to send it in
    sl_str_t start;                     //  its START, encoded
    sl_str_t code;                      //  the ERROR it ended with
    sl_str_t message;
    int status;
} sl_ended_stream_t;

sl_ended_t *sl_ended_new (size_t max, int64_t keep_ms);
void sl_ended_destroy (sl_ended_t **self_p);
//  Remember that the stream sid ended at epoch, early: start is its
//  START encoded (copied), code/message/status the ERROR it ended with.
//  Returns the number of streams forgotten to make room (0 or 1).
size_t sl_ended_put (sl_ended_t *self, const uint8_t *sid, uint32_t epoch, sl_str_t start, const char *code,
                     const char *message, int status, int64_t now);
//  A stage lost the stream sid at epoch: true, with *stream filled, when
//  it is one remembered here at that epoch (its epoch moves on: a loss of
//  the new end is answered again). False for any other stream or epoch.
bool sl_ended_lost (sl_ended_t *self, const uint8_t *sid, uint32_t epoch, sl_ended_stream_t *stream,
                    int64_t now);
//  Forget the streams kept longer than keep_ms.
void sl_ended_expire (sl_ended_t *self, int64_t now);
size_t sl_ended_count (sl_ended_t *self);

#endif
