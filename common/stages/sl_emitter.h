/*  sl_emitter.h - the emitter: judged events in, client bytes out.

    A pure library: feed it the judged stream (START, BLOCK, VERDICT, ERROR,
    END) of interleaved streams; it emits FRAME messages holding the bytes
    to write to the client in the client's own dialect (OpenAI Chat,
    Anthropic Messages, OpenAI Responses, Gemini), numbered from 0 per
    stream. The first frame of a response carries the HTTP status and
    content type (flag FIRST); the last one is flagged LAST and carries
    what the stream spent (`u`: the usage the upstream reported, else an
    estimate from bytes flagged ESTIMATED, sl_usage.h) for the gateway's
    limits; the client's bytes never show an estimate. Each emitted
    frame has reply_to set to the stream's owning gateway, the instance
    name from the stream's start (the service routes on it, among the
    gateways it knows, and clears it before sending).

    Nothing is written before the first event the client would see: an
    upstream error before that becomes a proper HTTP error response
    (status from the error, 502 by default) in the client's dialect,
    instead of a 200 followed by an error event.

    A stream from a provider of another dialect than the client's is
    translated: what cannot cross and is only informative is left out
    and counted (a provider's own tool blocks, which the client never
    asked for; citations, whose shapes are each provider's); tool call
    ids, finish reasons and usage are the renderers' business, and
    thinking signatures go out tagged with the provider's dialect
    (sl_render_put_sig).

    A stream whose START lacks the STREAM flag is a non-streaming request:
    its judged events are collected in an sl_snapshot, and at its END the
    renderer writes one JSON body (FIRST and LAST, application/json),
    checked whole by the validator. An error, or an end without a finish,
    is an HTTP error in the dialect instead. Until then each event other
    than a keep-alive gives an empty progress frame (neither FIRST nor
    LAST), so the gateway's acknowledgements show the stream is alive;
    the gateway writes nothing for them.

    Every event is checked by the dialect's validator (sl_validate.h)
    before it leaves. An illegal event is withheld and the stream ends at
    once with a clean error event of the dialect (or an HTTP 502 when
    nothing was sent yet); the emitter also emits an ERROR message (code
    "illegal_output", the reason in msg) through the same callback, for
    monitoring. The service sends FRAME messages to the gateway and
    publishes the others.
*/
#ifndef SL_EMITTER_H
#define SL_EMITTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/sl_msg.h"

typedef struct _sl_emitter_t sl_emitter_t;

//  Running totals, for metrics.
typedef struct {
    uint64_t streams;                   //  streams started
    uint64_t events_out;                //  SSE events / bodies sent to clients
    uint64_t frames;                    //  frames emitted
    uint64_t illegal;                   //  events withheld as illegal (and incomplete ends)
    uint64_t dropped;                   //  messages for unknown streams or stale epochs
    uint64_t http_errors;               //  responses that were an HTTP error
    uint64_t translated;                //  streams from a provider of another dialect than the client's
    uint64_t translation_dropped;       //  blocks (and citations) such a stream could not carry
} sl_emitter_stats_t;

sl_emitter_t *sl_emitter_new (void);
//  Whether the emitter has a renderer for clients of this dialect.
bool sl_emitter_can_render (int dialect);
void sl_emitter_destroy (sl_emitter_t **self_p);
//  A monotonic clock in µs, used only for liveness keep-alives (frames the
//  client never sees); without one the output depends only on the input.
void sl_emitter_set_clock (sl_emitter_t *self, int64_t (*clock) (void *arg), void *arg);
void sl_emitter_feed (sl_emitter_t *self, const sl_msg_t *msg, sl_emit_fn *emit, void *arg);
size_t sl_emitter_streams (sl_emitter_t *self);
uint64_t sl_emitter_dropped (sl_emitter_t *self);
const sl_emitter_stats_t *sl_emitter_stats (sl_emitter_t *self);

#endif
