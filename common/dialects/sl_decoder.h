/*  sl_decoder.h - provider stream decoders: SSE events in, DELTA messages out.

    One decoder per upstream stream. Each SSE event (type and data, from
    sl_sse) becomes zero or more normalized DELTA messages, or an ERROR
    message when the provider reports an error inside the stream. The
    envelope (sid, epoch, seq) of emitted messages is left for the caller.
    proto/PROTOCOL.md ("Delta conventions", "Dialect mappings") says what
    each provider event becomes.

    A decoder never asserts on what the provider sent: an event that is not
    valid JSON where JSON is required returns -2 (sl_decoder_error says why)
    and the caller ends the stream with an error; unknown event types and
    fields are counted (sl_decoder_unknown) and skipped. Once the provider's
    terminal event was decoded (its end marker, or an error it reported),
    every further event is counted as unknown and skipped: a response has
    one end.
*/
#ifndef SL_DECODER_H
#define SL_DECODER_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/sl_msg.h"

typedef struct _sl_decoder_t sl_decoder_t;

//  NULL when the dialect has no decoder.
sl_decoder_t *sl_decoder_new (int dialect);
void sl_decoder_destroy (sl_decoder_t **self_p);
//  One SSE event. 0 ok, -2 malformed (the stream should end).
int sl_decoder_event (sl_decoder_t *self, sl_str_t type, sl_str_t data,
                      sl_emit_fn *emit, void *arg);
//  The upstream body ended cleanly. Emits DONE when the provider's own end
//  was seen (or is implied), an ERROR when the stream stopped short.
int sl_decoder_finish (sl_decoder_t *self, sl_emit_fn *emit, void *arg);
//  True once the provider's terminal event was decoded.
bool sl_decoder_done (sl_decoder_t *self);
const char *sl_decoder_error (sl_decoder_t *self);
//  Unknown event types and fields skipped so far.
uint64_t sl_decoder_unknown (sl_decoder_t *self);
//  A provider's error answer (the JSON body of a non-2xx status:
//  {"error": {...}} or {"error": "text"}), read as the decoders read the
//  errors in a stream: the error's name (its type, else its RPC status,
//  else a code that is a string; a numeric code is the HTTP status's
//  business) and its message. Each is absent (ptr NULL) when the body has
//  none; slices of body or of the decoder's scratch, valid until the
//  decoder's next call.
void sl_decoder_error_body (sl_decoder_t *self, sl_str_t body, sl_str_t *code, sl_str_t *message);
//  The dialect's name, for logs ("openai", "anthropic", ...).
const char *sl_decoder_name (sl_decoder_t *self);

#endif
