/*  sl_judge.c - holding, judging and releasing tool calls (see sl_judge.h). */
#include "sl_judge.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../common/sl_alloc.h"
#include "../../common/sl_sidmap.h"

typedef struct {
    uint8_t sid [SL_SID_SIZE];
    uint32_t epoch;
    uint64_t seq;                       //  next output sequence
    sl_policy_t *policy;                //  the policy the stream started with
    sl_msg_t **held;                    //  messages waiting behind a tool call
    size_t held_count;
    size_t held_cap;
    bool holding;                       //  a tool call is open
    bool ended;                         //  END was forwarded
    int32_t removed;                    //  blocks dropped so far (renumbering)
    int calls_kept;                     //  tool calls released as calls
    int calls_replaced;                 //  tool calls blocked or dropped
} s_stream_t;

struct _sl_judge_t {
    sl_sidmap_t *streams;
    sl_policy_t *policy;
    uint64_t dropped;
    sl_emit_fn *emit;
    void *arg;
};

static int64_t
s_now_us (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

sl_judge_t *
sl_judge_new (sl_policy_t *policy)
{
    sl_judge_t *self = sl_xcalloc (1, sizeof *self);
    self->streams = sl_sidmap_new ();
    self->policy = sl_policy_ref (policy);
    return self;
}

static void
s_stream_free (s_stream_t *s)
{
    for (size_t i = 0; i < s->held_count; i++)
        free (s->held [i]);
    free (s->held);
    sl_policy_unref (&s->policy);
    free (s);
}

void
sl_judge_destroy (sl_judge_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_judge_t *self = *self_p;
    size_t cursor = 0;
    s_stream_t *s;
    while ((s = sl_sidmap_next (self->streams, &cursor, NULL)))
        s_stream_free (s);
    sl_sidmap_destroy (&self->streams);
    sl_policy_unref (&self->policy);
    free (self);
    *self_p = NULL;
}

void
sl_judge_set_policy (sl_judge_t *self, sl_policy_t *policy)
{
    sl_policy_unref (&self->policy);
    self->policy = sl_policy_ref (policy);
}

size_t
sl_judge_streams (sl_judge_t *self)
{
    return sl_sidmap_size (self->streams);
}

uint64_t
sl_judge_dropped (sl_judge_t *self)
{
    return self->dropped;
}

static void
s_emit (sl_judge_t *self, s_stream_t *s, sl_msg_t *msg)
{
    memcpy (msg->sid, s->sid, SL_SID_SIZE);
    msg->epoch = s->epoch;
    msg->seq = s->seq++;
    self->emit (self->arg, msg);
}

//  Pass a message on, with block indices closed up over removed blocks and
//  the finish reason fixed when no tool call is left.
static void
s_forward (sl_judge_t *self, s_stream_t *s, const sl_msg_t *msg)
{
    sl_msg_t m = *msg;
    if (m.type == SL_MSG_BLOCK && m.index >= 0)
        m.index -= s->removed;
    if (m.type == SL_MSG_BLOCK && m.kind == SL_B_FINISH
    &&  s->calls_replaced > 0 && s->calls_kept == 0 && m.finish == SL_FIN_TOOL_CALLS) {
        m.finish = SL_FIN_STOP;
        m.finish_raw = SL_STR_NULL;     //  the raw value no longer applies
    }
    s_emit (self, s, &m);
}

static void
s_hold (s_stream_t *s, const sl_msg_t *msg)
{
    if (s->held_count == s->held_cap) {
        s->held_cap = s->held_cap ? s->held_cap * 2 : 8;
        s->held = sl_xrealloc (s->held, s->held_cap * sizeof (sl_msg_t *));
    }
    s->held [s->held_count++] = sl_msg_dup (msg);
}

static void
s_emit_verdict (sl_judge_t *self, s_stream_t *s, const sl_msg_t *end,
                const sl_decision_t *d, int64_t latency_us)
{
    sl_msg_t v;
    sl_msg_init (&v, SL_MSG_VERDICT);
    v.index = end->index - s->removed;
    v.id = end->id;
    v.name = end->name;
    v.action = (uint8_t) d->action;
    v.check = (uint8_t) d->check;
    v.rule = sl_str (d->rule);
    v.reason = sl_str (d->reason);
    v.latency_us = (uint32_t) (latency_us > 0 ? latency_us : 0);
    s_emit (self, s, &v);
}

//  Emit a text block in place of the call at index with the notice.
static void
s_emit_replacement (sl_judge_t *self, s_stream_t *s, int32_t index, const char *notice)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_BLOCK);
    m.kind = SL_B_START;
    m.block = SL_BK_TEXT;
    m.index = index;
    m.flags = SL_F_REPLACED;
    s_forward (self, s, &m);
    sl_msg_init (&m, SL_MSG_BLOCK);
    m.kind = SL_B_DELTA;
    m.block = SL_BK_TEXT;
    m.index = index;
    m.text = sl_str (notice);
    s_forward (self, s, &m);
    sl_msg_init (&m, SL_MSG_BLOCK);
    m.kind = SL_B_END;
    m.block = SL_BK_TEXT;
    m.index = index;
    m.text = sl_str (notice);
    m.flags = SL_F_REPLACED;
    s_forward (self, s, &m);
}

static void s_process (sl_judge_t *self, s_stream_t *s, const sl_msg_t *msg);

//  The held call is complete (held [0] is its start, held [end_at] its
//  end): judge it, emit the verdict and the outcome, then process what
//  waited behind it, in order.
static void
judge_held_call (sl_judge_t *self, s_stream_t *s, size_t end_at)
{
    int64_t t0 = s_now_us ();
    const sl_msg_t *end = s->held [end_at];
    int32_t index = end->index;
    sl_call_t call = {
        .name = end->name,
        .arguments = end->text,
        .args_valid = (end->flags & SL_F_ARGS_VALID) != 0
    };
    sl_decision_t d;
    sl_policy_decide (s->policy, &call, &d);
    s_emit_verdict (self, s, end, &d, s_now_us () - t0);

    //  Detach the queue first: processing what waited may hold again.
    sl_msg_t **queue = s->held;
    size_t count = s->held_count;
    s->held = NULL;
    s->held_count = s->held_cap = 0;
    s->holding = false;

    if (d.action == SL_ACT_BLOCK) {
        s->calls_replaced++;
        s_emit_replacement (self, s, index, d.message);
    }
    else {
        s->calls_kept++;
        for (size_t i = 0; i < count; i++)
            if (queue [i]->type == SL_MSG_BLOCK && queue [i]->index == index)
                s_forward (self, s, queue [i]);
    }
    sl_decision_clear (&d);
    for (size_t i = 0; i < count; i++)
        if (!(queue [i]->type == SL_MSG_BLOCK && queue [i]->index == index))
            s_process (self, s, queue [i]);
    for (size_t i = 0; i < count; i++)
        free (queue [i]);
    free (queue);
}

static void
s_process (sl_judge_t *self, s_stream_t *s, const sl_msg_t *msg)
{
    bool is_block = msg->type == SL_MSG_BLOCK;
    if (s->holding) {
        s_hold (s, msg);
        if (is_block && msg->kind == SL_B_END && msg->block == SL_BK_TOOL_CALL
        &&  msg->index == s->held [0]->index)
            judge_held_call (self, s, s->held_count - 1);
        return;
    }
    if (is_block && msg->kind == SL_B_START && msg->block == SL_BK_TOOL_CALL) {
        s->holding = true;
        s_hold (s, msg);
        return;
    }
    s_forward (self, s, msg);
    if (msg->type == SL_MSG_END)
        s->ended = true;
}

void
sl_judge_feed (sl_judge_t *self, const sl_msg_t *msg, sl_emit_fn *emit, void *arg)
{
    self->emit = emit;
    self->arg = arg;
    s_stream_t *s = sl_sidmap_get (self->streams, msg->sid);
    if (s && msg->epoch < s->epoch) {
        self->dropped++;
        return;
    }
    if (s && msg->epoch > s->epoch) {
        sl_sidmap_remove (self->streams, msg->sid);
        s_stream_free (s);
        s = NULL;
    }
    if (msg->type == SL_MSG_START) {
        if (s) {
            self->dropped++;
            return;
        }
        s = sl_xcalloc (1, sizeof *s);
        memcpy (s->sid, msg->sid, SL_SID_SIZE);
        s->epoch = msg->epoch;
        s->policy = sl_policy_ref (self->policy);
        sl_sidmap_put (self->streams, msg->sid, s);
        s_forward (self, s, msg);
        return;
    }
    if (!s) {
        self->dropped++;
        return;
    }
    if (msg->type == SL_MSG_ERROR && s->holding) {
        //  A call still open when the stream fails is incomplete: it is
        //  never released to the client.
        for (size_t i = 0; i < s->held_count; i++)
            free (s->held [i]);
        s->held_count = 0;
        s->holding = false;
    }
    s_process (self, s, msg);
    if (s->ended) {
        sl_sidmap_remove (self->streams, s->sid);
        s_stream_free (s);
    }
}
