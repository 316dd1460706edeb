/*  sl_snapshot.h - the whole message of one stream, built from its block events.

    Feed it the messages of one stream at the block hop (START, BLOCK,
    ERROR, END; VERDICT and anything else is ignored), in order, and it
    holds the message they describe: identity (id, model, created), the
    blocks in order with their whole content, the finish (normalized, raw,
    stop sequence), the merged usage, and the error that ended the stream.

    Pure and independent of who produces the events: the aggregator keeps one
    per stream for audit and hands out the final one; the emitter can feed
    the same class with the judged stream to render a non-streaming body.
    block_delta events are optional: block_end carries the whole content and
    replaces what the deltas accumulated.

    sl_snapshot_to_json writes the audit form, one JSON object:
        {"id":..,"model":..,"created":..,"blocks":[BLOCK,...],
         "finish":..,"finish_raw":..,"stop_sequence":..,"usage":{..},"error":{..}}
    where BLOCK is what sl_snapshot_block_to_json writes:
        {"kind":..,"index":..,"id":..,"call_id":..,"name":..,
         "text":.. | "arguments":..,"args_valid":..,"repaired":..,"signature":..,
         "summary":true,"incomplete":true,"replaced":true,"body":{..}}
    Keys whose value is absent are left out: ids, name and signature when the
    provider gave none; arguments, args_valid and repaired only for tool
    calls and server tool uses (arguments as a JSON string, exactly as
    received); text for the other kinds (left out when empty for server tool
    results and citations); flags only when set; body (JSON extras:
    citations, server tool result content) when present.
*/
#ifndef SL_SNAPSHOT_H
#define SL_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "proto/sl_msg.h"

typedef struct _sl_snapshot_t sl_snapshot_t;

//  A view of one block; every slice borrows from the snapshot and stays
//  valid until the next feed or reset.
typedef struct {
    int kind;                           //  sl_block_kind_t
    int32_t index;                      //  block index in the stream
    uint32_t flags;                     //  SL_F_ARGS_VALID, REPAIRED, INCOMPLETE, SUMMARY, REPLACED
    bool complete;                      //  its block_end was seen
    sl_str_t id;                        //  absent (ptr NULL) when none
    sl_str_t call_id;
    sl_str_t name;
    sl_str_t text;                      //  text, thinking, arguments, redacted data
    sl_str_t sig;                       //  signature
    sl_str_t body;                      //  JSON extras
} sl_snapshot_block_t;

sl_snapshot_t *sl_snapshot_new (void);
void sl_snapshot_destroy (sl_snapshot_t **self_p);
//  Forget everything (a new stream, or a replay of the same one).
void sl_snapshot_reset (sl_snapshot_t *self);
//  Take in one message of the stream; borrowed, copied as needed.
void sl_snapshot_feed (sl_snapshot_t *self, const sl_msg_t *msg);

//  Identity: from the message event, the model from START until then.
sl_str_t sl_snapshot_id (const sl_snapshot_t *self);
sl_str_t sl_snapshot_model (const sl_snapshot_t *self);
int64_t sl_snapshot_created (const sl_snapshot_t *self);

//  Blocks, in the order they started.
size_t sl_snapshot_count (const sl_snapshot_t *self);
//  Fill *out with block i; false when there is no such block.
bool sl_snapshot_block (const sl_snapshot_t *self, size_t i, sl_snapshot_block_t *out);

//  The finish: SL_FIN_NONE until one is seen; SL_FIN_ERROR when the stream
//  failed without one.
sl_finish_t sl_snapshot_finish (const sl_snapshot_t *self);
sl_str_t sl_snapshot_finish_raw (const sl_snapshot_t *self);
sl_str_t sl_snapshot_stop_seq (const sl_snapshot_t *self);
//  Usage; false when none was reported (fields are -1 when not reported).
bool sl_snapshot_usage (const sl_snapshot_t *self, sl_usage_t *out);

//  The error that ended the stream; false when there was none.
bool sl_snapshot_failed (const sl_snapshot_t *self);
sl_str_t sl_snapshot_error_code (const sl_snapshot_t *self);
sl_str_t sl_snapshot_error_message (const sl_snapshot_t *self);
int sl_snapshot_error_status (const sl_snapshot_t *self);

//  True once the stream's END was fed.
bool sl_snapshot_ended (const sl_snapshot_t *self);

//  Append the audit form (see above) to out.
void sl_snapshot_to_json (const sl_snapshot_t *self, sl_buf_t *out);
//  Append the JSON object of block i to out; nothing when there is none.
void sl_snapshot_block_to_json (const sl_snapshot_t *self, size_t i, sl_buf_t *out);
//  Append the JSON object of a usage, with only its reported fields:
//  {"input":..,"output":..,"total":..,"cache_read":..,"cache_write":..,"reasoning":..}
void sl_snapshot_usage_to_json (const sl_usage_t *usage, sl_buf_t *out);

#endif
