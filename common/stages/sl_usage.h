/*  sl_usage.h - what a stream spent: the usage its upstream reported, or
    an estimate from its bytes when it reported none.

    The emitter keeps one tally per stream. Usage comes in `u` of a
    message (Anthropic's message_start: input) and of the finish (the
    rest); a present field of a later report replaces the earlier one, as
    the renderers merge them. A stream whose upstream reported neither
    input nor output (an OpenAI-compatible server without
    stream_options.include_usage, a cut stream) is estimated at
    SL_USAGE_BYTES_PER_TOKEN bytes a token: input from the request body
    the upstream got (START's rqb), output from the text, thinking and
    tool-call arguments the stream carried (each block's whole content at
    its end). A stream that failed before carrying anything was refused
    upstream and is estimated at nothing.

    The estimate is for the gateway's limits and the audit's records
    (flag ESTIMATED); a client is never shown one.
*/
#ifndef SL_USAGE_H
#define SL_USAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/sl_msg.h"

#define SL_USAGE_BYTES_PER_TOKEN 4      //  a usage estimate's bytes per token (English text and JSON)

typedef struct {
    sl_usage_t reported;                //  merged reports, -1 where none
    uint64_t request_bytes;             //  START's rqb
    uint64_t content_bytes;             //  text, thinking and arguments carried
    bool failed;                        //  an error ended the stream
} sl_usage_tally_t;

//  A stream's tally, from its START.
void sl_usage_tally_init (sl_usage_tally_t *self, const sl_msg_t *start);
//  Count a message of the stream (BLOCK and ERROR matter; others are ignored).
void sl_usage_tally_feed (sl_usage_tally_t *self, const sl_msg_t *msg);
//  What the stream spent, in *out: as reported, or estimated (returns
//  true, and the caller flags it ESTIMATED).
bool sl_usage_tally_result (const sl_usage_tally_t *self, sl_usage_t *out);
//  Tokens of bytes at SL_USAGE_BYTES_PER_TOKEN, rounded up.
int64_t sl_usage_tokens_of (uint64_t bytes);

#endif
