/*  sl_agg.c - the block state machine (see sl_agg.h).

    States of a stream:
        OPEN     started, no block open
        IN_BLOCK a block is open (kind, index, identity, content so far)
        CLOSED   finish emitted; only END may follow
    Each delta is handled by an action named for what it does
    (start_block, append_to_block, close_current_block, finish_response).
*/
#include "sl_agg.h"

#include <stdlib.h>
#include <string.h>

#include "../../common/sl_alloc.h"
#include "../../common/sl_buf.h"
#include "../../common/sl_json.h"
#include "../../common/sl_sidmap.h"

typedef enum { ST_OPEN, ST_IN_BLOCK, ST_CLOSED } s_state_t;

typedef struct {
    uint8_t sid [SL_SID_SIZE];
    uint32_t epoch;
    uint64_t seq;                       //  next output sequence
    s_state_t state;
    int32_t next_index;                 //  index of the next block
    //  The open block
    int kind;                           //  sl_block_kind_t
    int32_t index;
    int32_t provider_index;             //  provider's index of the block
    sl_buf_t id;
    sl_buf_t name;
    sl_buf_t content;
    int tool_calls;                     //  tool call blocks so far
    //  Finish
    sl_buf_t finish_raw;
    bool has_usage;
    sl_usage_t usage;
} s_stream_t;

struct _sl_agg_t {
    sl_sidmap_t *streams;
    uint64_t dropped;
    sl_emit_fn *emit;                   //  valid during sl_agg_feed
    void *arg;
};

sl_agg_t *
sl_agg_new (void)
{
    sl_agg_t *self = sl_xcalloc (1, sizeof *self);
    self->streams = sl_sidmap_new ();
    return self;
}

static void
s_stream_free (s_stream_t *s)
{
    sl_buf_free (&s->id);
    sl_buf_free (&s->name);
    sl_buf_free (&s->content);
    sl_buf_free (&s->finish_raw);
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

sl_finish_t
sl_agg_normalize_finish (sl_str_t raw)
{
    if (sl_str_eq (raw, "stop") || sl_str_eq (raw, "end_turn") || sl_str_eq (raw, "STOP")
    ||  sl_str_eq (raw, "stop_sequence"))
        return SL_FIN_STOP;
    if (sl_str_eq (raw, "length") || sl_str_eq (raw, "max_tokens") || sl_str_eq (raw, "MAX_TOKENS"))
        return SL_FIN_LENGTH;
    if (sl_str_eq (raw, "tool_calls") || sl_str_eq (raw, "function_call") || sl_str_eq (raw, "tool_use"))
        return SL_FIN_TOOL_CALLS;
    if (sl_str_eq (raw, "content_filter") || sl_str_eq (raw, "SAFETY"))
        return SL_FIN_CONTENT_FILTER;
    if (sl_str_eq (raw, "refusal"))
        return SL_FIN_REFUSAL;
    if (sl_str_eq (raw, "pause_turn"))
        return SL_FIN_PAUSE;
    return raw.ptr ? SL_FIN_STOP : SL_FIN_NONE;
}

//  --------------------------------------------------------------------------
//  Output

static void
s_emit (sl_agg_t *self, s_stream_t *s, sl_msg_t *msg)
{
    memcpy (msg->sid, s->sid, SL_SID_SIZE);
    msg->epoch = s->epoch;
    msg->seq = s->seq++;
    self->emit (self->arg, msg);
}

static void
s_emit_block (sl_agg_t *self, s_stream_t *s, int event, sl_msg_t *msg)
{
    msg->type = SL_MSG_BLOCK;
    msg->kind = (uint8_t) event;
    msg->block = (uint8_t) s->kind;
    msg->index = s->index;
    s_emit (self, s, msg);
}

//  --------------------------------------------------------------------------
//  Actions

static void
close_current_block (sl_agg_t *self, s_stream_t *s, uint32_t extra_flags)
{
    if (s->state != ST_IN_BLOCK)
        return;
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_BLOCK);
    m.flags = extra_flags;
    if (s->id.len)
        m.id = sl_buf_str (&s->id);
    if (s->kind == SL_BK_TOOL_CALL) {
        m.name = sl_buf_str (&s->name);
        sl_str_t args = sl_json_trim (sl_buf_str (&s->content));
        if (args.len == 0)
            args = SL_STR_LIT ("{}");   //  a call without arguments
        m.text = args;
        if (!(extra_flags & SL_F_INCOMPLETE) && sl_json_type (args) == SL_JSON_OBJECT
        &&  sl_json_valid (args))
            m.flags |= SL_F_ARGS_VALID;
    }
    else
        m.text = sl_buf_str (&s->content);
    s_emit_block (self, s, SL_B_END, &m);
    s->state = ST_OPEN;
    sl_buf_reset (&s->id);
    sl_buf_reset (&s->name);
    sl_buf_reset (&s->content);
}

static void
start_block (sl_agg_t *self, s_stream_t *s, int kind, const sl_msg_t *d)
{
    close_current_block (self, s, 0);
    s->state = ST_IN_BLOCK;
    s->kind = kind;
    s->index = s->next_index++;
    s->provider_index = d->index;
    sl_buf_append_str (&s->id, d->id);
    sl_buf_append_str (&s->name, d->name);
    if (kind == SL_BK_TOOL_CALL)
        s->tool_calls++;
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_BLOCK);
    if (s->id.len)
        m.id = sl_buf_str (&s->id);
    if (kind == SL_BK_TOOL_CALL)
        m.name = sl_buf_str (&s->name);
    s_emit_block (self, s, SL_B_START, &m);
}

static void
append_to_block (sl_agg_t *self, s_stream_t *s, sl_str_t fragment)
{
    if (!fragment.ptr || fragment.len == 0)
        return;
    sl_buf_append_str (&s->content, fragment);
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_BLOCK);
    m.text = fragment;
    s_emit_block (self, s, SL_B_DELTA, &m);
}

static void
finish_response (sl_agg_t *self, s_stream_t *s)
{
    if (s->state == ST_CLOSED)
        return;
    close_current_block (self, s, 0);
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_BLOCK);
    m.kind = SL_B_FINISH;
    m.type = SL_MSG_BLOCK;
    if (s->finish_raw.len)
        m.finish_raw = sl_buf_str (&s->finish_raw);
    m.finish = (uint8_t) sl_agg_normalize_finish (m.finish_raw);
    if (s->tool_calls > 0 && m.finish == SL_FIN_STOP)
        m.finish = SL_FIN_TOOL_CALLS;   //  calls left: the client must run them
    if (m.finish == SL_FIN_NONE)
        m.finish = s->tool_calls ? SL_FIN_TOOL_CALLS : SL_FIN_STOP;
    m.has_usage = s->has_usage;
    m.usage = s->usage;
    s_emit (self, s, &m);
    s->state = ST_CLOSED;
}

static void
merge_usage (s_stream_t *s, const sl_usage_t *u)
{
    s->has_usage = true;
    const int64_t *from = &u->input;
    int64_t *to = &s->usage.input;
    for (int i = 0; i < 6; i++)
        if (from [i] >= 0)
            to [i] = from [i];
}

static void
s_on_delta (sl_agg_t *self, s_stream_t *s, const sl_msg_t *d)
{
    if (s->state == ST_CLOSED && d->kind != SL_D_USAGE)
        return;                         //  nothing but usage after the finish
    switch (d->kind) {
        case SL_D_MESSAGE: {
            sl_msg_t m = *d;
            m.type = SL_MSG_BLOCK;
            m.kind = SL_B_MESSAGE;
            m.index = -1;
            s_emit (self, s, &m);
            break;
        }
        case SL_D_TEXT:
            if (s->state != ST_IN_BLOCK || s->kind != SL_BK_TEXT)
                start_block (self, s, SL_BK_TEXT, &(sl_msg_t) { .index = d->index });
            append_to_block (self, s, d->text);
            break;
        case SL_D_TOOL_CALL: {
            //  The same call continues while the provider index matches and
            //  no different id appears; anything else starts a new call.
            bool same = s->state == ST_IN_BLOCK && s->kind == SL_BK_TOOL_CALL
                     && s->provider_index == d->index
                     && (!d->id.ptr || d->id.len == 0 || sl_str_eq_str (d->id, sl_buf_str (&s->id)));
            if (!same)
                start_block (self, s, SL_BK_TOOL_CALL, d);
            append_to_block (self, s, d->text);
            break;
        }
        case SL_D_FINISH:
            sl_buf_reset (&s->finish_raw);
            sl_buf_append_str (&s->finish_raw, d->finish_raw);
            break;
        case SL_D_USAGE:
            merge_usage (s, &d->usage);
            break;
        case SL_D_DONE:
            finish_response (self, s);
            break;
        default:
            break;                      //  other kinds: later stages of the aggregator
    }
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
        //  A replay: start the stream over.
        sl_sidmap_remove (self->streams, msg->sid);
        s_stream_free (s);
        s = NULL;
    }
    if (msg->type == SL_MSG_START) {
        if (s) {
            self->dropped++;            //  duplicate start of the same epoch
            return;
        }
        s = sl_xcalloc (1, sizeof *s);
        memcpy (s->sid, msg->sid, SL_SID_SIZE);
        s->epoch = msg->epoch;
        sl_sidmap_put (self->streams, msg->sid, s);
        sl_msg_t m = *msg;
        s_emit (self, s, &m);
        return;
    }
    if (!s) {
        self->dropped++;
        return;
    }
    switch (msg->type) {
        case SL_MSG_DELTA:
            s_on_delta (self, s, msg);
            break;
        case SL_MSG_ERROR: {
            close_current_block (self, s, SL_F_INCOMPLETE);
            sl_msg_t m = *msg;
            s_emit (self, s, &m);
            s->state = ST_CLOSED;
            break;
        }
        case SL_MSG_END: {
            finish_response (self, s);
            sl_msg_t m;
            sl_msg_init (&m, SL_MSG_END);
            s_emit (self, s, &m);
            sl_sidmap_remove (self->streams, s->sid);
            s_stream_free (s);
            break;
        }
        default:
            self->dropped++;
            break;
    }
}
