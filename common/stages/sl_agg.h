/*  sl_agg.h - the aggregator: provider deltas in, blocks out.

    A pure library: feed it the messages of the ingest hop (START, DELTA,
    ERROR, END) of any number of interleaved streams, and it emits the
    messages of the block hop (START, BLOCK, ERROR, END) through the emit
    callback, with the envelope (sid, epoch, seq) filled in. No sockets, no
    clocks, no randomness: the output is a function of the input, so a
    re-sent stream (new epoch) produces the same messages again.

    Per stream, an explicit state machine turns deltas into the sequence of
    blocks the model produced (text, thinking, redacted_thinking, tool_call,
    refusal, server_tool_use, server_tool_result, citation): block_start,
    block_delta*, block_end with the whole content, then one finish
    (normalized reason, raw reason, stop sequence, merged usage) and end. A
    block is complete when the next one starts, when the provider closes it
    (block_stop with its index), or when the response finishes. A tool call
    the provider closes takes no more content, but its block_end waits for
    what follows: whether it ended cleanly shows only then (another block
    starts: it did; the response is cut: it was cut with it), as it does
    for providers that never close calls. Block indices are contiguous
    from 0 in the order blocks start.

    Identity (PROTOCOL.md "Delta conventions"): decoders pass the provider's
    own index and whatever id / call_id / name a fragment carries; the
    aggregator decides which block a fragment belongs to.
      - Text, thinking and refusal fragments continue the open block of the
        same kind whatever their index (Gemini restarts indices in every
        chunk; OpenAI has none); a reasoning summary and reasoning text are
        different blocks; a different id starts a new block. Providers that
        put two blocks of one kind in a row close the first with block_stop.
      - A tool call fragment continues the open call when it carries the
        same id. Once the call's arguments are complete JSON, any other
        fragment that names a call (id, call_id or name, even the same
        name) or brings more than whitespace starts a new call: that is how
        calls that share an index (every call at index 0) are told apart.
        While the arguments are open, a fragment with no new identity
        continues the call at any index (a provider that renumbers the
        parts of one call); a new id, call_id or name at another index
        starts a new call; at the same index it is a further piece of the
        identity (appended: id and name sent in fragments, before or between
        argument fragments) for as long as the arguments are open.
      - A tool call's block_start goes out when its arguments are complete
        JSON (or when it closes, or when 4 KiB of them came), followed by
        the arguments so far in one fragment, so it carries the whole identity even when that came in
        pieces (the judge holds a call to its end anyway); a server tool
        use's goes out with its first argument byte. A whole call in one
        fragment must carry complete
        arguments ("{}" when there are none): empty arguments mean "still to
        come".
      - A signature attaches to the open thinking block, or to the open
        block its index names; with none, it is a signature-only thinking
        block (kept, with empty text). A citation attaches to the open text
        block (body {"citations":[...]} at its end); with no text open, one
        that names its provider block starts that text block (Anthropic
        sends a text block's citations before its text), and one that names
        none (-1: Gemini's metadata) is a citation block. Either way each
        citation also goes out at once as a citation block_delta at that
        block's index, its body the one citation, for renderers to stream.
    Arguments are checked as they arrive (sl_jsonv: each byte once). At the
    end: empty arguments become {}; a JSON string holding an object is
    decoded and flagged REPAIRED; ARGS_VALID means a complete JSON object;
    the block current when the response is cut off is flagged INCOMPLETE,
    never ARGS_VALID, and says why in its code (sl_cut_t): length (a length
    finish), filter (content_filter, refusal), error (an error finish, an
    ERROR), eof (the upstream stopped short: upstream_incomplete,
    upstream_connection_lost), size (stream_too_large,
    upstream_event_too_large).

    Finish: the raw value is kept; the normalized one is tool_calls when the
    response holds tool calls and the provider said stop (or nothing).
    Usage reported several times is merged field by field; the first usage
    reported before the first block also goes out at once with the message
    event (Anthropic's message_start counts the input there). An upstream ERROR
    closes the open block (INCOMPLETE) and ends the stream with the error:
    no finish follows (an error after the finish is passed on as well; a
    second error is dropped).

    Bounded: each stream may start at most max_blocks blocks and take in
    at most max_bytes bytes of content (text, arguments, ids, names,
    signatures, bodies, summed over the stream); past either, the open block is closed INCOMPLETE
    (size) and the stream ends with an ERROR (code stream_too_large, status 502)
    and its END at once: the aggregator lets go of it, and what still comes
    for it is dropped (counted) as a stream it does not hold.

    Messages of an older epoch than the stream's are dropped; a newer epoch
    restarts the stream (a re-send). Messages for a stream that never
    started are dropped and counted.
*/
#ifndef SL_AGG_H
#define SL_AGG_H

#include <stddef.h>
#include <stdint.h>

#include "proto/sl_msg.h"
#include "common/dialects/sl_snapshot.h"

#define SL_AGG_DEFAULT_MAX_BLOCKS 4096          //  blocks per stream
#define SL_AGG_DEFAULT_MAX_BYTES (16u << 20)    //  content bytes per stream

typedef struct _sl_agg_t sl_agg_t;

//  Called once per stream at its END with the final snapshot of the whole
//  message (borrowed for the call). sid is the stream's id.
typedef void (sl_agg_snapshot_fn) (void *arg, const uint8_t *sid, const sl_snapshot_t *snapshot);

sl_agg_t *sl_agg_new (void);
void sl_agg_destroy (sl_agg_t **self_p);
//  Per-stream limits for streams that start from now on; 0 keeps the default.
void sl_agg_set_limits (sl_agg_t *self, size_t max_blocks, size_t max_bytes);
//  Keep a snapshot of every stream and hand the final one to fn at its END.
//  Off by default: a snapshot holds the whole message in memory.
void sl_agg_on_snapshot (sl_agg_t *self, sl_agg_snapshot_fn *fn, void *arg);
void sl_agg_feed (sl_agg_t *self, const sl_msg_t *msg, sl_emit_fn *emit, void *arg);
//  Streams in progress.
size_t sl_agg_streams (sl_agg_t *self);
//  Messages dropped (unknown stream, stale epoch, duplicate start).
uint64_t sl_agg_dropped (sl_agg_t *self);
//  Deltas that made no sense where they came (after the end of the
//  response, a stop for a block that is not open, an invalid citation...).
uint64_t sl_agg_ignored (sl_agg_t *self);
//  Streams ended because they went over a limit.
uint64_t sl_agg_too_large (sl_agg_t *self);
//  Map a provider's raw finish value to the normalized reason, whichever
//  dialect's it is (each dialect module knows its own values; a stream
//  asks its upstream's first, sl_dialect_finish); an unknown present value
//  is stop, an absent one SL_FIN_NONE.
sl_finish_t sl_agg_normalize_finish (sl_str_t raw);

#endif
