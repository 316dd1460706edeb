/*  sl_render.h - per-dialect renderers used by the emitter.

    The emitter's own interface; the gateway uses only error_body, so that
    the errors it answers itself have exactly the shape of the emitter's.

    The emitter owns the stream; a renderer turns one judged event into the
    client's bytes (whole SSE events), appended to out. It keeps what it
    needs between events in the stream's sl_render_stream_t. One renderer
    per client dialect, chosen once per stream with sl_render_for.

    Blocks reach a renderer one at a time (start, deltas, end), in order,
    as the aggregator and the judge produce them. What a block may carry
    (PROTOCOL.md, "block"): id, call_id, name at its start; text fragments
    in its deltas; the whole content, signature (sig) and JSON extras
    (body: citations, a server tool's result) at its end. Citations come
    at the end of the block they were given in, as its body
    {"citations":[...]}: a text block's citations belong to it; a citation
    block holds citations the provider gave while no text was open, which
    belong to the text that follows (Anthropic sends a text block's
    citations before its text).

    Every renderer writes only what its wire format can carry; the emitter
    checks each event with the dialect's validator before it is sent.

    Non-streaming responses: the emitter collects the judged stream in an
    sl_snapshot (the whole message: blocks with their final content, the
    finish as the judge left it, the merged usage) and asks the renderer
    for one JSON body when the response is complete (body). The body says
    what the stream would have said: the same ids, the same blocks in the
    same order (Anthropic tool_use blocks last), the same finish reason.
*/
#ifndef SL_RENDER_H
#define SL_RENDER_H

#include <stdbool.h>

#include "common/base/sl_buf.h"
#include "proto/sl_msg.h"
#include "common/dialects/sl_snapshot.h"

typedef struct _sl_renderer_t sl_renderer_t;

typedef struct {
    const sl_renderer_t *renderer;      //  the client dialect's (sl_render_stream_init)
    void *state;                        //  the renderer's own per-stream state (state_size bytes)
    int client_dialect;
    int upstream_dialect;
    uint32_t flags;                     //  STREAM, USAGE of the request
    char sid_hex [SL_SID_HEX_SIZE];     //  names ids the upstream did not give
    sl_buf_t model;                     //  model as reported (or requested)
    sl_buf_t id;                        //  response / message id ("" until known)
    int64_t created;
    bool start_has_usage;               //  usage reported at the response's start
    sl_usage_t start_usage;             //  (Anthropic: message_start's input and cache tokens)
    bool started;                       //  the first event is out
    int first_block;                    //  sl_block_kind_t of the block that opened
                                        //  the stream (0: none, or not a block start)
    bool failed;                        //  an error was rendered
    bool finished;                      //  the finish was rendered
    int tool_calls;                     //  tool calls started so far
    int items;                          //  client-side blocks / items opened so far
    uint64_t dropped;                   //  blocks the client's dialect cannot carry, left out
    //  The block open at the client (blocks are sequential)
    int open_kind;                      //  sl_block_kind_t, 0 when none
    int open_index;                     //  its client-side index
    bool open_deferred;                 //  rendered whole at its end, not yet
    bool open_summary;                  //  thinking block holds a summary
    sl_buf_t open_id;                   //  item id (Responses) / call id
    sl_buf_t open_call_id;              //  Responses call_id
    sl_buf_t open_name;                 //  tool name
    sl_buf_t open_extra;                //  citations of the open text block (JSON, comma-joined)
    int open_extra_count;               //  how many
    sl_buf_t pending;                   //  citations waiting for the text they belong to (comma-joined)
    sl_buf_t alone;                     //  bytes of an error that must reach the client by
                                        //  themselves, after the rest (Gemini's bare error)
} sl_render_stream_t;

struct _sl_renderer_t {
    //  The renderer's own state of a stream: its size (zeroed at the start;
    //  0: none) and what frees what it holds (NULL when nothing).
    size_t state_size;
    void (*clear) (void *state);
    //  The dialect's keep-alive: bytes its clients read past without a
    //  trace (no event, no error, nothing in a history), which the
    //  emitter sends while the judge holds a call, before the first event
    //  too (to open a response whose first block is held). They reset
    //  every timeout that counts the time between bytes (Node's fetch:
    //  300 s) and tell proxies on the way the response is alive.
    const char *keepalive;
    //  Render a BLOCK event (block_start / delta / end, finish; never a
    //  keepalive: the emitter sends keepalive for it).
    //  SL_B_MESSAGE is absorbed by the emitter into the stream's identity.
    //  sl_render_block, for a renderer written as the steps below.
    void (*block) (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out);
    //  The steps sl_render_block takes, each optional: open, the events
    //  that start the stream (before its first event, once); then one per
    //  kind of BLOCK event.
    void (*open) (sl_render_stream_t *rs, sl_buf_t *out);
    void (*on_start) (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out);
    void (*on_delta) (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out);
    void (*on_end) (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out);
    void (*on_finish) (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out);
    //  Render an error inside a started stream: the events that end a
    //  failed response in the dialect. status is the HTTP status the error
    //  reports (0: none), code the provider's error type or status name.
    //  What must reach the client by itself, after the rest, goes into
    //  rs->alone (the emitter sends it as a frame of its own).
    void (*error) (sl_render_stream_t *rs, int status, sl_str_t code, sl_str_t message, sl_buf_t *out);
    //  Render the end of a stream that finished normally.
    void (*end) (sl_render_stream_t *rs, sl_buf_t *out);
    //  The JSON body of an error response sent before anything else.
    void (*error_body) (int status, sl_str_t code, sl_str_t message, sl_buf_t *out);
    //  The JSON body of a whole non-streaming response, from the snapshot
    //  of a judged stream that finished without an error.
    void (*body) (const sl_render_stream_t *rs, const sl_snapshot_t *snap, sl_buf_t *out);
};

//  The renderer of a client dialect (its module's, sl_dialect.h); NULL
//  when there is none.
const sl_renderer_t *sl_render_for (int dialect);
//  Start a stream's render state for a client of dialect (zeroed first;
//  open_index -1). -1 when the dialect has no renderer.
int sl_render_stream_init (sl_render_stream_t *rs, int client_dialect, int upstream_dialect);
//  Free what a stream's render state holds (the struct itself is the caller's).
void sl_render_stream_clear (sl_render_stream_t *rs);

//  Shared helpers of the renderers
//  A renderer's block operation made of its steps (open, on_start, ...):
//  nothing for SL_B_MESSAGE; the stream opened before its first event;
//  the step of the event's kind.
void sl_render_block (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out);
//  Open the stream (the renderer's open step) unless it was: what comes
//  before the first event, also before an error.
void sl_render_open (sl_render_stream_t *rs, sl_buf_t *out);
//  The response's id as a JSON string: the upstream's, or prefix and the
//  stream id ("msg_<sid hex>") when it gave none.
void sl_render_put_id (const sl_render_stream_t *rs, const char *prefix, sl_buf_t *out);
//  The id a client answers a call with: the call id where the provider
//  has two (Responses: call_id beside the item id), else its id.
static inline sl_str_t
sl_render_call_id (sl_str_t id, sl_str_t call_id)
{
    return call_id.len ? call_id : id;
}
//  A thinking signature (or other data only its provider reads: redacted
//  thinking) as a JSON string for the client: as it came when the client
//  speaks the upstream's dialect, tagged with the upstream's dialect
//  otherwise (sl_sig_tag, sl_req.h), so that it goes back only to it.
void sl_render_put_sig (const sl_render_stream_t *rs, sl_str_t sig, sl_buf_t *out);
//  Copy the provider's raw finish value when it may pass through: the
//  upstream speaks the client's dialect and the judge left it in place.
//  Returns the raw value (NUL-terminated in buf) or NULL.
const char *sl_render_raw_finish (const sl_render_stream_t *rs, const sl_msg_t *msg,
                                  char *buf, size_t size);
//  Append a JSON value's text so that it fits one data: line of an event:
//  as it is when it holds no line break, else with the whitespace between
//  its tokens left out (a provider may send pretty-printed arguments);
//  repaired as sl_json_put_raw does.
void sl_render_put_line_json (sl_buf_t *out, sl_str_t json);
//  Append value when it is a complete JSON value, otherwise fallback.
void sl_render_put_json (sl_buf_t *out, sl_str_t value, const char *fallback);
//  The finish of a snapshot as a FINISH block event (finish, raw value,
//  stop sequence, usage), so that bodies decide finish reasons and usage
//  with the same code as streams. Slices borrow from the snapshot.
void sl_render_snapshot_finish (const sl_snapshot_t *snap, sl_msg_t *out);
//  Append the citations a block carries (its body {"citations":[...]}),
//  comma-joined, to out; a comma goes first when out is not empty.
//  Returns how many were appended.
int sl_render_put_citations (sl_buf_t *out, sl_str_t body);
//  JSON arguments cut off (a length finish) as a whole value: the longest
//  prefix that ends with a complete value, open containers closed
//  ({"a":[1,"b","par -> {"a":[1,"b"]}); nothing usable gives "{}". The
//  SDKs read a streamed call's cut-off input the same way.
void sl_render_close_json (sl_str_t partial, sl_buf_t *out);
//  Citations at a block's end, for a renderer that sends them with their
//  text: a citation block's wait in rs->pending for the text that follows
//  (true: nothing more to render for it); an open text block's join them
//  there, for the renderer to send before it ends the block (false).
bool sl_render_end_citations (sl_render_stream_t *rs, const sl_msg_t *msg);
//  Iterate over comma-joined citations (as sl_render_put_citations writes
//  them): the next one in *citation, advancing *rest; false at the end.
bool sl_render_next_citation (sl_str_t *rest, sl_str_t *citation);

#endif
