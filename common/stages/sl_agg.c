/*  sl_agg.c - the block state machine (see sl_agg.h for the rules).

    States of a stream:
        OPEN          started, no block open
        PENDING_CALL  a tool call (or server tool use) is open and its
                      identity may still be arriving: block_start not sent
        IN_BLOCK      a block is open and its block_start is out
        CLOSED        finish or error sent; only END may follow

    A tool call the provider closed (block_stop) stays the current block,
    stopped: nothing continues it, and its block_end waits for what comes
    next, which says whether it ended cleanly (another block starts) or
    was cut off with the response (a length or filter finish, an error,
    the body ending early). That is what the other dialects show too: their
    calls stay open until the next block or the finish.

    Transitions, by what arrives:
        content that continues the open block   append_to_block
        content that does not                   close_current_block, start_block
        block_stop naming the open block        close_current_block (a tool
                                                call: stop_tool_call)
        first argument byte of a pending call   send_block_start (-> IN_BLOCK)
        done                                    finish_response (-> CLOSED)
        error                                   end_with_error (-> CLOSED)
        going over a limit                      end_with_error (-> CLOSED)
        end                                     finish_response if not CLOSED,
                                                then the stream is freed
    Which block a fragment belongs to is decided by the continues_* tests,
    which only read the state; actions are the only functions that write it.
*/
#include "common/stages/sl_agg.h"

#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_dialect.h"
#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"
#include "common/base/sl_sidmap.h"
#include "common/stages/sl_jsonv.h"

#define SL_AGG_TOO_LARGE_STATUS 502     //  reported when nothing was sent yet
#define SL_AGG_IDENTITY_WAIT_BYTES 4096 //  arguments a call's block_start waits for at most

typedef enum {
    ST_OPEN,
    ST_PENDING_CALL,
    ST_IN_BLOCK,
    ST_CLOSED
} s_state_t;

typedef struct {
    uint8_t sid [SL_SID_SIZE];
    uint32_t epoch;
    uint64_t seq;                       //  next output sequence
    s_state_t state;
    int upstream;                       //  the provider's dialect: whose finish values
    size_t max_blocks;                  //  limits this stream started with
    size_t max_bytes;
    size_t blocks;                      //  blocks started (the next index)
    size_t bytes;                       //  content bytes taken in
    //  The open block
    int kind;                           //  sl_block_kind_t
    int32_t index;                      //  our index
    int32_t pindex;                     //  the provider's index (-1: none)
    uint32_t flags;                     //  SL_F_SUMMARY of a thinking block
    bool stopped;                       //  a tool call the provider closed; its end waits
    sl_buf_t id;
    sl_buf_t call_id;
    sl_buf_t name;
    sl_buf_t content;                   //  text, thinking, arguments, data
    sl_buf_t sig;
    sl_buf_t body;                      //  server tool result content
    sl_buf_t citations;                 //  citation objects, comma-separated
    sl_jsonv_t *args;                   //  JSON state of a call's arguments
    //  The response
    int tool_calls;                     //  tool_call blocks started
    bool announced;                     //  a message event was sent
    sl_buf_t msg_id;
    sl_buf_t msg_model;
    int64_t msg_ts;
    bool has_finish_raw;
    sl_buf_t finish_raw;
    bool has_stop_seq;
    sl_buf_t stop_seq;
    bool has_usage;
    sl_usage_t usage;                   //  merged
    bool has_start_usage;               //  the first usage, reported before any block
    sl_usage_t start_usage;
    bool failed;                        //  an error was sent
    bool over;                          //  its END was sent (cut for size): free it
    sl_buf_t scratch;                   //  repaired arguments, block bodies, messages
    sl_snapshot_t *snapshot;            //  NULL unless snapshots were asked for
} s_stream_t;

struct _sl_agg_t {
    sl_sidmap_t *streams;
    size_t max_blocks;
    size_t max_bytes;
    sl_agg_snapshot_fn *snapshot_fn;
    void *snapshot_arg;
    uint64_t dropped;
    uint64_t ignored;
    uint64_t too_large;
    sl_emit_fn *emit;                   //  valid during sl_agg_feed
    void *arg;
    sl_msg_t blank;                     //  an initialized BLOCK message, copied
                                        //  instead of re-initialized per event
    sl_msg_t delta;                     //  the block_delta message, reused: only
                                        //  its block, index and text change, and
                                        //  copying 500 bytes per fragment was
                                        //  most of the cost of a fragment
};

//  --------------------------------------------------------------------------
//  Life cycle

sl_agg_t *
sl_agg_new (void)
{
    sl_agg_t *self = sl_xcalloc (1, sizeof *self);
    self->streams = sl_sidmap_new ();
    self->max_blocks = SL_AGG_DEFAULT_MAX_BLOCKS;
    self->max_bytes = SL_AGG_DEFAULT_MAX_BYTES;
    sl_msg_init (&self->blank, SL_MSG_BLOCK);
    self->delta = self->blank;
    self->delta.kind = SL_B_DELTA;
    return self;
}

static void
s_stream_free (s_stream_t *s)
{
    sl_buf_free (&s->id);
    sl_buf_free (&s->call_id);
    sl_buf_free (&s->name);
    sl_buf_free (&s->content);
    sl_buf_free (&s->sig);
    sl_buf_free (&s->body);
    sl_buf_free (&s->citations);
    sl_jsonv_destroy (&s->args);
    sl_buf_free (&s->msg_id);
    sl_buf_free (&s->msg_model);
    sl_buf_free (&s->finish_raw);
    sl_buf_free (&s->stop_seq);
    sl_buf_free (&s->scratch);
    sl_snapshot_destroy (&s->snapshot);
    free (s);
}

void
sl_agg_destroy (sl_agg_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_agg_t *self = *self_p;
    size_t cursor = 0;
    s_stream_t *s;
    while ((s = sl_sidmap_next (self->streams, &cursor, NULL)))
        s_stream_free (s);
    sl_sidmap_destroy (&self->streams);
    free (self);
    *self_p = NULL;
}

void
sl_agg_set_limits (sl_agg_t *self, size_t max_blocks, size_t max_bytes)
{
    self->max_blocks = max_blocks ? max_blocks : SL_AGG_DEFAULT_MAX_BLOCKS;
    self->max_bytes = max_bytes ? max_bytes : SL_AGG_DEFAULT_MAX_BYTES;
}

void
sl_agg_on_snapshot (sl_agg_t *self, sl_agg_snapshot_fn *fn, void *arg)
{
    self->snapshot_fn = fn;
    self->snapshot_arg = arg;
}

size_t
sl_agg_streams (sl_agg_t *self)
{
    return sl_sidmap_size (self->streams);
}

uint64_t
sl_agg_dropped (sl_agg_t *self)
{
    return self->dropped;
}

uint64_t
sl_agg_ignored (sl_agg_t *self)
{
    return self->ignored;
}

uint64_t
sl_agg_too_large (sl_agg_t *self)
{
    return self->too_large;
}

sl_finish_t
sl_agg_normalize_finish (sl_str_t raw)
{
    return (sl_finish_t) sl_dialect_finish (SL_DIALECT_NONE, raw);
}

//  --------------------------------------------------------------------------
//  Small helpers (no state changes)

static bool
s_is_call (int kind)
{
    return kind == SL_BK_TOOL_CALL || kind == SL_BK_SERVER_TOOL_USE;
}

//  A block whose block_end is still to be sent (open, or a stopped call).
static bool
s_has_block (const s_stream_t *s)
{
    return s->state == ST_PENDING_CALL || s->state == ST_IN_BLOCK;
}

//  A block that may still take content (a stopped call may not).
static bool
s_block_open (const s_stream_t *s)
{
    return s_has_block (s) && !s->stopped;
}

static bool
s_buf_eq (const sl_buf_t *buf, sl_str_t s)
{
    return buf->len == s.len && (s.len == 0 || memcmp (buf->data, s.ptr, s.len) == 0);
}

//  A present, non-empty value that is not what the open block has.
static bool
s_new_piece (sl_str_t value, const sl_buf_t *have)
{
    return value.len > 0 && !s_buf_eq (have, value);
}

//  Two non-empty ids that differ.
static bool
s_other_id (sl_str_t value, const sl_buf_t *have)
{
    return value.len > 0 && have->len > 0 && !s_buf_eq (have, value);
}

static bool
s_blank (sl_str_t s)
{
    for (size_t i = 0; i < s.len; i++)
        if (s.ptr [i] != ' ' && s.ptr [i] != '\n' && s.ptr [i] != '\r' && s.ptr [i] != '\t')
            return false;
    return true;
}

static size_t
s_delta_bytes (const sl_msg_t *d)
{
    return d->text.len + d->id.len + d->call_id.len + d->name.len + d->sig.len + d->body.len;
}

static int
s_content_kind (int delta_kind)
{
    switch (delta_kind) {
        case SL_D_TEXT: return SL_BK_TEXT;
        case SL_D_THINKING: return SL_BK_THINKING;
        case SL_D_REFUSAL: return SL_BK_REFUSAL;
        case SL_D_TOOL_CALL: return SL_BK_TOOL_CALL;
        default: return SL_BK_SERVER_TOOL_USE;
    }
}

//  Does a text, thinking or refusal fragment continue the open block?
static bool
s_continues_content (const s_stream_t *s, int kind, const sl_msg_t *d)
{
    if (s->state != ST_IN_BLOCK || s->kind != kind)
        return false;
    if (kind == SL_BK_THINKING && (s->flags & SL_F_SUMMARY) != (d->flags & SL_F_SUMMARY))
        return false;                   //  a summary and the reasoning stay apart
    return !s_other_id (d->id, &s->id);
}

//  Does a tool call (or server tool use) fragment continue the open call?
static bool
s_continues_call (const s_stream_t *s, int kind, const sl_msg_t *d)
{
    if (!s_block_open (s) || s->kind != kind)
        return false;
    if (d->id.len && s_buf_eq (&s->id, d->id))
        return true;                    //  the same id says so
    sl_jsonv_status_t args = sl_jsonv_status (s->args);
    if (args == SL_JSONV_COMPLETE) {
        //  Complete: a name or id (even the same name: Gemini calls one
        //  tool several times at index 0) or more content is another call.
        bool named = d->id.len || d->call_id.len || d->name.len;
        return !named && s_blank (d->text);
    }
    bool fresh = s_new_piece (d->id, &s->id)
              || s_new_piece (d->call_id, &s->call_id)
              || s_new_piece (d->name, &s->name);
    if (!fresh)
        return true;                    //  at any index: the provider may renumber parts
    if (d->index != s->pindex)
        return false;
    //  At the same index, while the arguments are still open, a new id or
    //  name is a further piece of this call's identity (Bedrock through
    //  LiteLLM sends both in pieces, between argument fragments); a new
    //  call at the same index is told by complete arguments (above).
    return args == SL_JSONV_EMPTY || args == SL_JSONV_PARTIAL;
}

//  Is the open block a tool call whose identity may still grow? Its
//  block_start, and the arguments so far, wait until the arguments are
//  complete or the call ends, or until SL_AGG_IDENTITY_WAIT_BYTES of them
//  came (identity pieces come early; a huge call still streams on).
static bool
s_identity_open (const s_stream_t *s)
{
    if (s->state != ST_PENDING_CALL || s->kind != SL_BK_TOOL_CALL
    ||  s->content.len >= SL_AGG_IDENTITY_WAIT_BYTES)
        return false;
    sl_jsonv_status_t args = sl_jsonv_status (s->args);
    return args == SL_JSONV_EMPTY || args == SL_JSONV_PARTIAL;
}

//  A server tool result continues the open one at the same index and id.
static bool
s_continues_result (const s_stream_t *s, const sl_msg_t *d)
{
    return s->state == ST_IN_BLOCK && s->kind == SL_BK_SERVER_TOOL_RESULT
        && d->index == s->pindex && !s_other_id (d->id, &s->id);
}

//  The arguments a call ends with, and the flags they earn.
static sl_str_t
s_final_arguments (s_stream_t *s, uint32_t *flags)
{
    sl_str_t args = sl_json_trim (sl_buf_str (&s->content));
    if (*flags & SL_F_INCOMPLETE)
        return args;                    //  as they came: never valid
    sl_jsonv_status_t status = sl_jsonv_status (s->args);
    if (status == SL_JSONV_EMPTY) {
        *flags |= SL_F_ARGS_VALID;
        return SL_STR_LIT ("{}");       //  a call without arguments
    }
    if (status != SL_JSONV_COMPLETE)
        return args;
    if (sl_jsonv_type (s->args) == SL_JSON_OBJECT) {
        *flags |= SL_F_ARGS_VALID;
        return args;
    }
    if (sl_jsonv_type (s->args) == SL_JSON_STRING) {
        //  Double-encoded: a JSON string whose text is the object. Decoded
        //  once, here, not per fragment.
        sl_buf_reset (&s->scratch);
        if (sl_json_unescape (args, &s->scratch) == 0) {
            sl_str_t inner = sl_json_trim (sl_buf_str (&s->scratch));
            if (inner.len == 0) {
                *flags |= SL_F_ARGS_VALID | SL_F_REPAIRED;
                return SL_STR_LIT ("{}");
            }
            if (sl_json_type (inner) == SL_JSON_OBJECT && sl_json_valid (inner)) {
                *flags |= SL_F_ARGS_VALID | SL_F_REPAIRED;
                return inner;
            }
        }
    }
    return args;
}

//  --------------------------------------------------------------------------
//  Output

static void
s_emit (sl_agg_t *self, s_stream_t *s, sl_msg_t *msg)
{
    memcpy (msg->sid, s->sid, SL_SID_SIZE);
    msg->epoch = s->epoch;
    msg->seq = s->seq++;
    //  The snapshot needs no deltas: block_end carries the whole content.
    if (s->snapshot && !(msg->type == SL_MSG_BLOCK && msg->kind == SL_B_DELTA))
        sl_snapshot_feed (s->snapshot, msg);
    self->emit (self->arg, msg);
}

//  A BLOCK message about the open block, ready for its fields.
static void
s_block_msg (sl_agg_t *self, const s_stream_t *s, int event, sl_msg_t *msg)
{
    *msg = self->blank;
    msg->kind = (uint8_t) event;
    msg->block = (uint8_t) s->kind;
    msg->index = s->index;
}

static void
s_put_identity (const s_stream_t *s, sl_msg_t *msg)
{
    if (s->id.len)
        msg->id = sl_buf_str (&s->id);
    if (s->call_id.len)
        msg->call_id = sl_buf_str (&s->call_id);
    if (s->name.len)
        msg->name = sl_buf_str (&s->name);
}

//  --------------------------------------------------------------------------
//  Actions: the only functions that change a stream's state

static void
send_block_start (sl_agg_t *self, s_stream_t *s)
{
    sl_msg_t m;
    s_block_msg (self, s, SL_B_START, &m);
    s_put_identity (s, &m);
    m.flags = s->flags & SL_F_SUMMARY;
    s_emit (self, s, &m);
    s->state = ST_IN_BLOCK;
}

static void
send_delta (sl_agg_t *self, s_stream_t *s, sl_str_t fragment)
{
    sl_msg_t *m = &self->delta;
    m->block = (uint8_t) s->kind;
    m->index = s->index;
    m->text = fragment;
    s_emit (self, s, m);
}

//  The identity of a pending call is settled: its block_start, then the
//  arguments that came meanwhile, in one fragment.
static void
settle_pending_call (sl_agg_t *self, s_stream_t *s)
{
    send_block_start (self, s);
    if (s->content.len)
        send_delta (self, s, sl_buf_str (&s->content));
}

static void
append_to_block (sl_agg_t *self, s_stream_t *s, sl_str_t fragment)
{
    if (!fragment.len)
        return;
    sl_buf_append_str (&s->content, fragment);
    if (s_is_call (s->kind))
        sl_jsonv_feed (s->args, fragment.ptr, fragment.len);
    if (s->state == ST_PENDING_CALL) {
        if (!s_identity_open (s))
            settle_pending_call (self, s);
        return;
    }
    send_delta (self, s, fragment);
}

//  Append the pieces of identity a fragment brings that the block lacks.
static void
add_identity (s_stream_t *s, const sl_msg_t *d)
{
    if (s_new_piece (d->id, &s->id))
        sl_buf_append_str (&s->id, d->id);
    if (s_new_piece (d->call_id, &s->call_id))
        sl_buf_append_str (&s->call_id, d->call_id);
    if (s_new_piece (d->name, &s->name))
        sl_buf_append_str (&s->name, d->name);
}

static void
attach_signature (s_stream_t *s, sl_str_t sig)
{
    sl_buf_append_str (&s->sig, sig);
}

//  Keep a citation for the open block's end, and send it on at once as a
//  citation block_delta at that block's index, so that taps see it as it
//  arrives. Renderers write the list the block's end carries (sl_render.h).
static void
attach_citation (sl_agg_t *self, s_stream_t *s, sl_str_t citation)
{
    sl_str_t one = sl_json_trim (citation);
    if (s->citations.len)
        sl_buf_putc (&s->citations, ',');
    sl_buf_append_str (&s->citations, one);
    sl_msg_t m;
    s_block_msg (self, s, SL_B_DELTA, &m);
    m.block = SL_BK_CITATION;
    m.body = one;
    s_emit (self, s, &m);
}

//  Send the current block's end; cut (not NONE) when the response was cut
//  off while it was current: flag INCOMPLETE, the reason as its code.
static void
close_current_block (sl_agg_t *self, s_stream_t *s, sl_cut_t cut)
{
    if (!s_has_block (s))
        return;
    if (s->state == ST_PENDING_CALL)
        settle_pending_call (self, s);
    sl_msg_t m;
    s_block_msg (self, s, SL_B_END, &m);
    m.flags = s->flags | (cut != SL_CUT_NONE ? SL_F_INCOMPLETE : 0);
    if (cut != SL_CUT_NONE)
        m.code = sl_str (sl_cut_name (cut));
    s_put_identity (s, &m);
    if (s_is_call (s->kind))
        m.text = s_final_arguments (s, &m.flags);
    else
        m.text = sl_buf_str (&s->content);
    if (s->sig.len)
        m.sig = sl_buf_str (&s->sig);
    if (s->citations.len) {
        //  scratch is free: only calls use it for their arguments
        sl_buf_reset (&s->scratch);
        sl_buf_puts (&s->scratch, "{\"citations\":[");
        sl_buf_append (&s->scratch, s->citations.data, s->citations.len);
        sl_buf_puts (&s->scratch, "]}");
        m.body = sl_buf_str (&s->scratch);
    }
    else
    if (s->body.len)
        m.body = sl_buf_str (&s->body);
    s_emit (self, s, &m);
    s->state = ST_OPEN;
    s->stopped = false;
}

//  The provider closed the open tool call: it takes no more content, and
//  its end goes out when what follows shows how it ended.
static void
stop_tool_call (s_stream_t *s)
{
    s->stopped = true;
}

static void
start_block (sl_agg_t *self, s_stream_t *s, int kind, const sl_msg_t *d)
{
    close_current_block (self, s, SL_CUT_NONE);
    s->kind = kind;
    s->index = (int32_t) s->blocks++;
    s->pindex = d->index;
    s->flags = kind == SL_BK_THINKING ? (d->flags & SL_F_SUMMARY) : 0;
    sl_buf_reset (&s->id);
    sl_buf_reset (&s->call_id);
    sl_buf_reset (&s->name);
    sl_buf_reset (&s->content);
    sl_buf_reset (&s->sig);
    sl_buf_reset (&s->body);
    sl_buf_reset (&s->citations);
    add_identity (s, d);
    if (s_is_call (kind)) {
        sl_jsonv_reset (s->args);
        if (kind == SL_BK_TOOL_CALL)
            s->tool_calls++;
        s->state = ST_PENDING_CALL;
    }
    else
        send_block_start (self, s);
}

static void
end_with_error (sl_agg_t *self, s_stream_t *s, const sl_msg_t *error)
{
    close_current_block (self, s, sl_cut_for_error (error->code));
    sl_msg_t m = *error;
    if (!m.has_usage && s->has_usage) {
        //  Tokens spent before the failure are still billed: pass them on.
        m.has_usage = true;
        m.usage = s->usage;
    }
    s_emit (self, s, &m);
    s->failed = true;
    s->state = ST_CLOSED;
}

static void
end_as_too_large (sl_agg_t *self, s_stream_t *s, const char *what, size_t limit)
{
    self->too_large++;
    sl_buf_t text = { 0 };
    sl_buf_printf (&text, "the response has more than %zu %s, the limit of a stream", limit, what);
    sl_msg_t e;
    sl_msg_init (&e, SL_MSG_ERROR);
    e.code = SL_STR_LIT ("stream_too_large");
    e.message = sl_buf_str (&text);
    e.status = SL_AGG_TOO_LARGE_STATUS;
    end_with_error (self, s, &e);
    sl_buf_free (&text);
    //  Nothing more of it will be read: its END goes now, so every later
    //  stage lets go of it at once, and so do we (the rest the ingest
    //  sends is dropped as a stream we do not hold).
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_END);
    s_emit (self, s, &m);
    s->over = true;
}

//  Take in the bytes of a delta (and a new block when it starts one), or
//  end the stream when that goes over a limit. false: the stream ended.
static bool
admit_delta (sl_agg_t *self, s_stream_t *s, const sl_msg_t *d, bool new_block)
{
    size_t bytes = s_delta_bytes (d);
    if (new_block && s->blocks >= s->max_blocks) {
        end_as_too_large (self, s, "blocks", s->max_blocks);
        return false;
    }
    if (bytes > s->max_bytes - s->bytes) {
        end_as_too_large (self, s, "bytes", s->max_bytes);
        return false;
    }
    s->bytes += bytes;
    return true;
}

//  The response's identity; with the usage reported before its first
//  block (Anthropic's message_start counts the input there, and clients
//  read it from the start of the answer).
static void
send_message (sl_agg_t *self, s_stream_t *s)
{
    s->announced = true;
    sl_msg_t m = self->blank;
    m.kind = SL_B_MESSAGE;
    if (s->msg_id.len)
        m.id = sl_buf_str (&s->msg_id);
    if (s->msg_model.len)
        m.model = sl_buf_str (&s->msg_model);
    m.ts = s->msg_ts;
    if (s->has_start_usage) {
        m.has_usage = true;
        m.usage = s->start_usage;
    }
    s_emit (self, s, &m);
}

static void
announce_message (sl_agg_t *self, s_stream_t *s, const sl_msg_t *d)
{
    bool changed = !s->announced;
    if (d->id.len && !s_buf_eq (&s->msg_id, d->id)) {
        sl_buf_reset (&s->msg_id);
        sl_buf_append_str (&s->msg_id, d->id);
        changed = true;
    }
    if (d->model.len && !s_buf_eq (&s->msg_model, d->model)) {
        sl_buf_reset (&s->msg_model);
        sl_buf_append_str (&s->msg_model, d->model);
        changed = true;
    }
    if (d->ts && d->ts != s->msg_ts) {
        s->msg_ts = d->ts;
        changed = true;
    }
    if (!changed)
        return;                         //  providers repeat it on every chunk
    send_message (self, s);
}

static void
record_finish (s_stream_t *s, const sl_msg_t *d)
{
    if (d->finish_raw.ptr) {
        sl_buf_reset (&s->finish_raw);
        sl_buf_append_str (&s->finish_raw, d->finish_raw);
        s->has_finish_raw = true;
    }
    if (d->stop_seq.ptr) {
        sl_buf_reset (&s->stop_seq);
        sl_buf_append_str (&s->stop_seq, d->stop_seq);
        s->has_stop_seq = true;
    }
}

static void
merge_usage (s_stream_t *s, const sl_msg_t *d)
{
    if (!d->has_usage)
        return;
    s->has_usage = true;
    const int64_t *from = &d->usage.input;
    int64_t *to = &s->usage.input;
    for (size_t i = 0; i < sizeof (sl_usage_t) / sizeof (int64_t); i++)
        if (from [i] >= 0)
            to [i] = from [i];
}

static void
finish_response (sl_agg_t *self, s_stream_t *s)
{
    sl_msg_t m = self->blank;
    m.kind = SL_B_FINISH;
    if (s->has_finish_raw)
        m.finish_raw = sl_buf_str (&s->finish_raw);
    if (s->has_stop_seq)
        m.stop_seq = sl_buf_str (&s->stop_seq);
    sl_finish_t finish = (sl_finish_t) sl_dialect_finish (s->upstream, m.finish_raw);
    //  Stopped before it was done: what is open was cut off.
    sl_cut_t cut = finish == SL_FIN_LENGTH ? SL_CUT_LENGTH
                 : finish == SL_FIN_CONTENT_FILTER || finish == SL_FIN_REFUSAL ? SL_CUT_FILTER
                 : finish == SL_FIN_ERROR ? SL_CUT_ERROR : SL_CUT_NONE;
    close_current_block (self, s, cut);
    //  Calls are left for the client to run: it must be told so, whatever
    //  a provider says for a normal end (Gemini says STOP). A length or
    //  filter finish stays what it is: the client must not run a call that
    //  may have been cut off.
    if (s->tool_calls > 0 && (finish == SL_FIN_STOP || finish == SL_FIN_NONE))
        finish = SL_FIN_TOOL_CALLS;
    if (finish == SL_FIN_NONE)
        finish = SL_FIN_STOP;
    m.finish = (uint8_t) finish;
    m.has_usage = s->has_usage;
    m.usage = s->usage;
    s_emit (self, s, &m);
    s->state = ST_CLOSED;
}

//  --------------------------------------------------------------------------
//  Events: decide, admit, act

static void
s_on_content (sl_agg_t *self, s_stream_t *s, int kind, const sl_msg_t *d)
{
    bool same = s_continues_content (s, kind, d);
    //  An empty fragment opens nothing (OpenAI starts with content ""),
    //  except a thinking block known by its id or signature alone.
    if (!same && !d->text.len && !(kind == SL_BK_THINKING && (d->id.len || d->sig.len)))
        return;
    if (!admit_delta (self, s, d, !same))
        return;
    if (!same)
        start_block (self, s, kind, d);
    else
    if (!s->id.len && d->id.len)
        sl_buf_append_str (&s->id, d->id);
    if (d->sig.len)
        attach_signature (s, d->sig);
    append_to_block (self, s, d->text);
}

static void
s_on_redacted (sl_agg_t *self, s_stream_t *s, const sl_msg_t *d)
{
    bool same = s->state == ST_IN_BLOCK && s->kind == SL_BK_REDACTED_THINKING
             && d->index == s->pindex && !s_other_id (d->id, &s->id);
    if (!same && !d->text.len)
        return;
    if (!admit_delta (self, s, d, !same))
        return;
    if (!same)
        start_block (self, s, SL_BK_REDACTED_THINKING, d);
    append_to_block (self, s, d->text);
}

static void
s_on_signature (sl_agg_t *self, s_stream_t *s, const sl_msg_t *d)
{
    if (!d->sig.len) {
        self->ignored++;
        return;
    }
    bool attach = s_block_open (s)
               && (s->kind == SL_BK_THINKING || s->kind == SL_BK_REDACTED_THINKING
                || d->index == s->pindex);
    if (!admit_delta (self, s, d, !attach))
        return;
    if (!attach)
        start_block (self, s, SL_BK_THINKING, d);   //  signature-only thinking
    attach_signature (s, d->sig);
}

static void
s_on_call (sl_agg_t *self, s_stream_t *s, int kind, const sl_msg_t *d)
{
    bool same = s_continues_call (s, kind, d);
    if (!same && !d->id.len && !d->call_id.len && !d->name.len && !d->text.len)
        return;                         //  nothing to open a call with
    if (!admit_delta (self, s, d, !same))
        return;
    if (!same)
        start_block (self, s, kind, d);
    else
        add_identity (s, d);
    if (d->sig.len)
        attach_signature (s, d->sig);
    append_to_block (self, s, d->text);
}

static void
s_on_tool_result (sl_agg_t *self, s_stream_t *s, const sl_msg_t *d)
{
    bool same = s_continues_result (s, d);
    if (!admit_delta (self, s, d, !same))
        return;
    if (!same)
        start_block (self, s, SL_BK_SERVER_TOOL_RESULT, d);
    else
        add_identity (s, d);
    if (d->body.ptr) {
        sl_buf_reset (&s->body);        //  each result event carries it whole
        sl_buf_append_str (&s->body, sl_json_trim (d->body));
    }
    append_to_block (self, s, d->text);
}

static void
s_on_citation (sl_agg_t *self, s_stream_t *s, const sl_msg_t *d)
{
    if (!d->body.len || !sl_json_valid (d->body)) {
        self->ignored++;                //  would make the block's body unreadable
        return;
    }
    //  Citations belong to the text being written. One that names its
    //  provider block with no text open starts that text block: Anthropic
    //  sends a text block's citations before its text. A run of citations
    //  that name no block (Gemini's metadata) with no text open is a
    //  citation block of its own.
    bool attach = s->state == ST_IN_BLOCK
               && (s->kind == SL_BK_TEXT || (s->kind == SL_BK_CITATION && d->index == s->pindex));
    if (!admit_delta (self, s, d, !attach))
        return;
    if (!attach)
        start_block (self, s, d->index >= 0 ? SL_BK_TEXT : SL_BK_CITATION, d);
    attach_citation (self, s, d->body);
}

static void
s_on_block_stop (sl_agg_t *self, s_stream_t *s, const sl_msg_t *d)
{
    if (s_block_open (s) && d->index == s->pindex && s->kind == SL_BK_TOOL_CALL)
        stop_tool_call (s);
    else
    if (s_block_open (s) && d->index == s->pindex)
        close_current_block (self, s, SL_CUT_NONE);
    else
        self->ignored++;                //  a block we never opened (it was empty)
}

static void
s_on_delta (sl_agg_t *self, s_stream_t *s, const sl_msg_t *d)
{
    if (s->state == ST_CLOSED) {
        self->ignored++;                //  the response is over
        return;
    }
    switch (d->kind) {
        case SL_D_MESSAGE:
            announce_message (self, s, d);  //  replaced, not accumulated: not counted
            break;
        case SL_D_TEXT:
        case SL_D_THINKING:
        case SL_D_REFUSAL:
            s_on_content (self, s, s_content_kind (d->kind), d);
            break;
        case SL_D_REDACTED:
            s_on_redacted (self, s, d);
            break;
        case SL_D_SIGNATURE:
            s_on_signature (self, s, d);
            break;
        case SL_D_TOOL_CALL:
        case SL_D_SERVER_TOOL_USE:
            s_on_call (self, s, s_content_kind (d->kind), d);
            break;
        case SL_D_SERVER_TOOL_RESULT:
            s_on_tool_result (self, s, d);
            break;
        case SL_D_CITATION:
            s_on_citation (self, s, d);
            break;
        case SL_D_BLOCK_STOP:
            s_on_block_stop (self, s, d);
            break;
        case SL_D_FINISH:
            record_finish (s, d);       //  replaced, not accumulated: not counted
            break;
        case SL_D_USAGE:
            merge_usage (s, d);
            if (d->has_usage && s->announced && s->blocks == 0 && !s->has_start_usage) {
                s->has_start_usage = true;  //  the usage of the response's start
                s->start_usage = s->usage;
                send_message (self, s);
            }
            break;
        case SL_D_DONE:
            finish_response (self, s);
            break;
        default:
            self->ignored++;            //  the codec only passes known kinds
            break;
    }
}

//  --------------------------------------------------------------------------
//  Streams

static void
s_on_start (sl_agg_t *self, const sl_msg_t *msg)
{
    s_stream_t *s = sl_xcalloc (1, sizeof *s);
    memcpy (s->sid, msg->sid, SL_SID_SIZE);
    s->epoch = msg->epoch;
    s->state = ST_OPEN;
    s->upstream = msg->upstream_dialect;
    s->max_blocks = self->max_blocks;
    s->max_bytes = self->max_bytes;
    s->args = sl_jsonv_new ();
    s->usage = (sl_usage_t) { -1, -1, -1, -1, -1, -1 };
    if (self->snapshot_fn)
        s->snapshot = sl_snapshot_new ();
    sl_sidmap_put (self->streams, msg->sid, s);
    sl_msg_t m = *msg;
    s_emit (self, s, &m);
}

static void
s_on_end (sl_agg_t *self, s_stream_t *s)
{
    if (s->state != ST_CLOSED)
        finish_response (self, s);      //  the ingest always says done or error first
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_END);
    s_emit (self, s, &m);
    if (s->snapshot)
        self->snapshot_fn (self->snapshot_arg, s->sid, s->snapshot);
    sl_sidmap_remove (self->streams, s->sid);
    s_stream_free (s);
}

void
sl_agg_feed (sl_agg_t *self, const sl_msg_t *msg, sl_emit_fn *emit, void *arg)
{
    self->emit = emit;
    self->arg = arg;
    s_stream_t *s = sl_sidmap_get (self->streams, msg->sid);
    if (s && msg->epoch < s->epoch) {
        self->dropped++;
        return;
    }
    if (s && msg->epoch > s->epoch) {
        //  A re-send: start the stream over.
        sl_sidmap_remove (self->streams, msg->sid);
        s_stream_free (s);
        s = NULL;
    }
    if (msg->type == SL_MSG_START) {
        if (s)
            self->dropped++;            //  duplicate start of the same epoch
        else
            s_on_start (self, msg);
        return;
    }
    if (!s) {
        self->dropped++;
        return;
    }
    switch (msg->type) {
        case SL_MSG_DELTA:
            s_on_delta (self, s, msg);
            if (s->over) {
                sl_sidmap_remove (self->streams, s->sid);
                s_stream_free (s);
            }
            break;
        case SL_MSG_ERROR:
            if (s->failed)
                self->ignored++;        //  one error ends a stream
            else
                end_with_error (self, s, msg);
            break;
        case SL_MSG_END:
            s_on_end (self, s);
            break;
        default:
            self->dropped++;
            break;
    }
}
