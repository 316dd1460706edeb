/*  sl_emitter.h - the emitter: judged events in, client bytes out.

    A pure library: feed it the judged stream (START, BLOCK, VERDICT, ERROR,
    END) of interleaved streams; it emits FRAME messages holding the bytes
    to write to the client in the client's own dialect, numbered from 0 per
    stream. The first frame of a response carries the HTTP status and
    content type (flag FIRST); the last one is flagged LAST. Each emitted
    frame has reply_to set to the stream's owning gateway (the service
    routes on it and clears it before sending).

    Nothing is written before the first block or finish: an upstream error
    before that becomes a proper HTTP error response (status from the error,
    502 by default) instead of a 200 followed by an error event.
*/
#ifndef SL_EMITTER_H
#define SL_EMITTER_H

#include <stddef.h>
#include <stdint.h>

#include "../../proto/sl_msg.h"

typedef struct _sl_emitter_t sl_emitter_t;

sl_emitter_t *sl_emitter_new (void);
void sl_emitter_destroy (sl_emitter_t **self_p);
void sl_emitter_feed (sl_emitter_t *self, const sl_msg_t *msg, sl_emit_fn *emit, void *arg);
size_t sl_emitter_streams (sl_emitter_t *self);
uint64_t sl_emitter_dropped (sl_emitter_t *self);

#endif
