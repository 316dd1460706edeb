/*  sl_agg.h - the aggregator: provider deltas in, blocks out.

    A pure library: feed it the messages of the ingest hop (START, DELTA,
    ERROR, END) of any number of interleaved streams, and it emits the
    messages of the block hop (START, BLOCK, ERROR, END) through the emit
    callback, with the envelope (sid, epoch, seq) filled in. No sockets.

    Per stream, an explicit state machine turns deltas into a sequence of
    blocks (text, thinking, tool call, ...): block_start, block_delta*,
    block_end with the whole content, then finish (normalized reason, raw
    reason, usage) and end. A block is complete when the next one starts or
    the response finishes.

    Messages of an older epoch than the stream's are dropped; a newer epoch
    restarts the stream (a replay). Messages for a stream that never
    started are dropped and counted.
*/
#ifndef SL_AGG_H
#define SL_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "../../proto/sl_msg.h"

typedef struct _sl_agg_t sl_agg_t;

sl_agg_t *sl_agg_new (void);
void sl_agg_destroy (sl_agg_t **self_p);
void sl_agg_feed (sl_agg_t *self, const sl_msg_t *msg, sl_emit_fn *emit, void *arg);
//  Streams in progress.
size_t sl_agg_streams (sl_agg_t *self);
//  Messages dropped (unknown stream, stale epoch).
uint64_t sl_agg_dropped (sl_agg_t *self);
//  Map a provider's raw finish value to the normalized reason.
sl_finish_t sl_agg_normalize_finish (sl_str_t raw);

#endif
