/*  sl_judge.c - holding, judging and releasing tool calls (see sl_judge.h).

    Each stream has an output queue. While it is empty, messages pass
    straight through (no copy). A tool call's block_start puts a call item
    in the queue; the call's own events go into that item, every other
    message that arrives while the queue is not empty is copied in behind.
    The queue is released from its head for as long as the head is a
    message or a decided call; an open call or one waiting for its LLM
    judge stops it. Calls are decided the moment they are complete, in
    whatever order their judges answer; release order is queue order.

    Decisions live in the stream's memo, keyed by block index, apart from
    the queue: a re-send of the stream (new epoch) rebuilds the queue from
    the re-sent messages and finds its decisions, or its asks in flight,
    in the memo.

    A call's life:  open --block_end--> deciding --rules--> decided
                                           |
                                           +--llm--> asking --done/timeout/error--> decided
    and a decided call at the head of the queue is released.

    Failing closed: a call that did not end cleanly is judged as such. Its
    block_end says so (INCOMPLETE, and the cut in its code); a call still
    open when its stream fails or ends gets a block_end made here from what
    came of it (close_cut_call), cut as the error says (or eof), so it is
    judged and its verdict goes out before the error; and a call whose
    arguments pass the bound stops being kept (its fragments are freed, the
    bound's worth stays for the policy) and is judged as cut for size when
    it ends. Nothing of a call leaves before its verdict.
*/
#include "common/stages/sl_judge.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_sidmap.h"
#include "common/llm/sl_llm_tickets.h"

#define S_TERMINATE_CODE "policy_violation"
//  The notice in place of a call whose stream's policy is not loaded here.
#define S_UNKNOWN_NOTICE "sluice blocked a call to %.*s: the policy this request runs under is not available."
#define S_TERMINATE_STATUS 403
#define S_MEMO_RETIRED INT32_MIN        //  index of a memo entry no call may use
#define S_NO_MEMO SIZE_MAX

typedef enum {
    MEMO_ASKING,                        //  an LLM judge was asked; no outcome yet
    MEMO_DECIDED                        //  the decision is final
} s_memo_state_t;

//  A would-be decision: what the rules in shadow mode (of the stream's
//  policy, or its shadow policy as a whole) would have decided. It never
//  holds the call: an LLM judge or decide in shadow is asked beside the
//  enforcing decision, and its verdict goes out when it answers.
typedef enum {
    WOULD_NONE,                         //  nothing to record
    WOULD_ASKING,                       //  its judge was asked; no answer yet
    WOULD_DECIDED                       //  the would-be decision is final
} s_would_state_t;

typedef enum {
    S_WOULD_POLICY,                     //  the stream's policy: its shadow rules
    S_WOULD_SHADOW_POLICY,              //  its shadow policy (shadow_policy:), judged whole
    S_WOULD_MAX
} s_would_source_t;

typedef struct {
    s_would_state_t state;
    uint64_t ticket;                    //  while asking
    sl_decision_t decision;
    bool owed;                          //  the call's verdict went out: this one goes when decided
    bool sent;
    int64_t decided_us;
} s_would_t;

//  A decision for the call at one block index; survives a new epoch.
typedef struct {
    int32_t index;                      //  S_MEMO_RETIRED: matches no call any more
    uint64_t hash;                      //  of name and arguments: same call?
    uint32_t epoch;                     //  the epoch whose call last claimed it
    s_memo_state_t state;
    uint64_t ticket;                    //  while asking
    sl_msg_t *end;                      //  the call's block_end (owned): name, args
    sl_msg_t *head;                     //  its block_start (owned): the id and name when the end
                                        //  has none
    int ordinal;
    sl_decision_t decision;
    int64_t end_us;                     //  when the call was complete
    int64_t decided_us;                 //  when it was decided
    s_would_t would [S_WOULD_MAX];      //  its would-be decisions, by source
    int32_t out_index;                  //  the index its verdict went out with
} s_memo_t;

//  An entry of the output queue: a message waiting, or a tool call.
typedef struct _s_item_t {
    struct _s_item_t *next;
    sl_msg_t *msg;                      //  a message (owned), or NULL for a call
    int32_t index;                      //  call: its block index
    bool complete;                      //  call: block_end arrived
    int ordinal;                        //  call: 1 for the response's first call
    size_t bytes;                       //  call: argument bytes received
    bool oversize;                      //  call: over the bound; its fragments are not kept
    sl_buf_t seen;                      //  call, once oversize: the bound's worth of arguments
    size_t memo;                        //  call: its decision's slot, S_NO_MEMO until judged
    sl_msg_t **parts;                   //  call: start, deltas, end (owned)
    size_t part_count;
    size_t part_cap;
} s_item_t;

typedef struct {
    uint8_t sid [SL_SID_SIZE];
    uint32_t epoch;
    uint64_t seq;                       //  next output sequence
    sl_policy_t *policy;                //  the policy the stream started with
    sl_policy_t *shadow;                //  its shadow policy (judged whole, decides nothing), or NULL
    char *skew;                         //  the version its START named and this judge did not
                                        //  have (said in every verdict), or NULL
    bool unknown;                       //  its START named a policy file this judge does not
                                        //  have: every call is blocked (policy is the stand-in)
    sl_msg_t *start;                    //  its START: model, headers, tools, last user
    sl_schema_t *schema;                //  the request's tools, parsed when first needed
    s_item_t *head, *tail;              //  output queue
    s_item_t **open;                    //  calls still receiving events
    size_t open_count;
    size_t open_cap;
    s_memo_t *memo;
    size_t memo_count;
    size_t memo_cap;
    int32_t removed;                    //  blocks dropped so far (renumbering)
    int calls_seen;                     //  tool calls started (ordinals)
    int calls_kept;                     //  released as calls (allowed, rewritten)
    int calls_replaced;                 //  blocked or dropped
    bool terminated;                    //  END went out early; swallow the rest
    bool texted;                        //  text went out before (a notice starts a paragraph)
    int newlines;                       //  how many line ends that text ended with (at most 2)
    bool ended;                         //  END went out and the input is over
    int64_t quiet_since;                //  last output while holding, µs
    int64_t alive_since;                //  last liveness keep-alive while holding, µs
} s_stream_t;

struct _sl_judge_t {
    sl_sidmap_t *streams;
    sl_policy_t *policy;
    sl_policy_t *versions [SL_JUDGE_VERSIONS];  //  the last loaded, policy among them
    size_t next_version;                //  the slot the next load takes
    uint64_t skew;                      //  streams that named a version not kept
    uint64_t unknown;                   //  streams that named a file not loaded here
    sl_judge_lookup_fn *lookup;         //  the policy of a file a stream names
    void *lookup_arg;
    sl_codec_t *codec;                  //  for the request verdicts of a START
    uint64_t dropped;
    sl_emit_fn *emit;
    void *arg;
    sl_judge_ask_fn *ask;
    sl_judge_cancel_fn *cancel;
    void *llm_arg;
    sl_judge_clock_fn *clock;
    void *clock_arg;
    int64_t keepalive_us;
    size_t max_call_bytes;              //  argument bytes a call may have and be released
    sl_llm_tickets_t *tickets;          //  asks in flight, by ticket: their stream
    sl_buf_t scratch;                   //  prompts and request bodies
};

static int64_t
s_now (sl_judge_t *self)
{
    return self->clock ? self->clock (self->clock_arg) : 0;
}

static uint64_t
s_hash (sl_str_t a, sl_str_t b)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < a.len; i++)
        h = (h ^ (unsigned char) a.ptr [i]) * 1099511628211ULL;
    h = (h ^ 0xff) * 1099511628211ULL;
    for (size_t i = 0; i < b.len; i++)
        h = (h ^ (unsigned char) b.ptr [i]) * 1099511628211ULL;
    return h;
}

//  --------------------------------------------------------------------------
//  Life cycle

sl_judge_t *
sl_judge_new (sl_policy_t *policy)
{
    sl_judge_t *self = sl_xcalloc (1, sizeof *self);
    self->streams = sl_sidmap_new ();
    self->policy = sl_policy_ref (policy);
    self->versions [self->next_version++] = sl_policy_ref (policy);
    self->codec = sl_codec_new ();
    self->tickets = sl_llm_tickets_new ();
    self->keepalive_us = SL_JUDGE_KEEPALIVE_US;
    self->max_call_bytes = SL_JUDGE_DEFAULT_MAX_CALL_BYTES;
    return self;
}

static void
s_item_free (s_item_t *item)
{
    free (item->msg);
    for (size_t i = 0; i < item->part_count; i++)
        free (item->parts [i]);
    free (item->parts);
    sl_buf_free (&item->seen);
    free (item);
}

static void
s_queue_free (s_stream_t *s)
{
    while (s->head) {
        s_item_t *next = s->head->next;
        s_item_free (s->head);
        s->head = next;
    }
    s->tail = NULL;
    s->open_count = 0;
}

static void
s_memo_clear (s_memo_t *m)
{
    free (m->end);
    free (m->head);
    sl_decision_clear (&m->decision);
    for (int w = 0; w < S_WOULD_MAX; w++)
        sl_decision_clear (&m->would [w].decision);
}

//  An ask is over before its outcome came: its ticket leaves the table,
//  and the ask is stopped when cancel is true and the service can.
static void
s_forget_ticket (sl_judge_t *self, uint64_t ticket, bool cancel)
{
    if (sl_llm_tickets_take (self->tickets, ticket, NULL, NULL) && cancel && self->cancel)
        self->cancel (self->llm_arg, ticket);
}

static void
s_forget_ask (sl_judge_t *self, const s_memo_t *m, bool cancel)
{
    if (m->state == MEMO_ASKING)
        s_forget_ticket (self, m->ticket, cancel);
}

static void
s_forget_would (sl_judge_t *self, s_memo_t *m, bool cancel)
{
    for (int w = 0; w < S_WOULD_MAX; w++)
        if (m->would [w].state == WOULD_ASKING) {
            s_forget_ticket (self, m->would [w].ticket, cancel);
            m->would [w].state = WOULD_NONE;
        }
}

//  Free a stream. Its asks in flight are cancelled when cancel is true
//  (not on destroy: the service then discards its requests itself).
static void
s_stream_free (sl_judge_t *self, s_stream_t *s, bool cancel)
{
    for (size_t i = 0; i < s->memo_count; i++) {
        s_memo_t *m = &s->memo [i];
        s_forget_ask (self, m, cancel);
        s_forget_would (self, m, cancel);
        s_memo_clear (m);
    }
    free (s->memo);
    s_queue_free (s);
    free (s->open);
    free (s->start);
    free (s->skew);
    sl_schema_destroy (&s->schema);
    sl_policy_unref (&s->policy);
    sl_policy_unref (&s->shadow);
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
        s_stream_free (self, s, false);
    sl_sidmap_destroy (&self->streams);
    sl_policy_unref (&self->policy);
    for (size_t i = 0; i < SL_JUDGE_VERSIONS; i++)
        sl_policy_unref (&self->versions [i]);
    sl_codec_destroy (&self->codec);
    sl_llm_tickets_destroy (&self->tickets);
    sl_buf_free (&self->scratch);
    free (self);
    *self_p = NULL;
}

void
sl_judge_keep (sl_judge_t *self, sl_policy_t *policy)
{
    sl_policy_unref (&self->versions [self->next_version]);
    self->versions [self->next_version] = sl_policy_ref (policy);
    self->next_version = (self->next_version + 1) % SL_JUDGE_VERSIONS;
}

void
sl_judge_set_policy (sl_judge_t *self, sl_policy_t *policy)
{
    sl_policy_unref (&self->policy);
    self->policy = sl_policy_ref (policy);
    sl_judge_keep (self, policy);
}

void
sl_judge_set_lookup (sl_judge_t *self, sl_judge_lookup_fn *lookup, void *arg)
{
    self->lookup = lookup;
    self->lookup_arg = arg;
}

//  The version a START names (id) of the file current was loaded from,
//  when this judge keeps it: the same text in another file is another
//  policy.
static sl_policy_t *
s_version (sl_judge_t *self, sl_str_t id, sl_policy_t *current)
{
    for (size_t i = 0; i < SL_JUDGE_VERSIONS; i++)
        if (self->versions [i] && sl_str_eq (id, sl_policy_id (self->versions [i]))
        &&  strcmp (sl_policy_name (self->versions [i]), sl_policy_name (current)) == 0)
            return self->versions [i];
    return NULL;
}

void
sl_judge_set_llm (sl_judge_t *self, sl_judge_ask_fn *ask, sl_judge_cancel_fn *cancel, void *arg)
{
    self->ask = ask;
    self->cancel = cancel;
    self->llm_arg = arg;
}

void
sl_judge_set_clock (sl_judge_t *self, sl_judge_clock_fn *clock, void *arg)
{
    self->clock = clock;
    self->clock_arg = arg;
}

void
sl_judge_set_keepalive (sl_judge_t *self, int64_t interval_us)
{
    self->keepalive_us = interval_us > 0 ? interval_us : 0;
}

void
sl_judge_set_max_call_bytes (sl_judge_t *self, size_t bytes)
{
    self->max_call_bytes = bytes ? bytes : SL_JUDGE_DEFAULT_MAX_CALL_BYTES;
}

uint64_t sl_judge_skew (sl_judge_t *self) { return self->skew; }
uint64_t sl_judge_unknown (sl_judge_t *self) { return self->unknown; }
sl_policy_t *sl_judge_policy (sl_judge_t *self) { return self->policy; }
size_t sl_judge_streams (sl_judge_t *self) { return sl_sidmap_size (self->streams); }
size_t sl_judge_pending (sl_judge_t *self) { return sl_llm_tickets_count (self->tickets); }
uint64_t sl_judge_dropped (sl_judge_t *self) { return self->dropped; }

//  --------------------------------------------------------------------------
//  Output

static void
s_emit (sl_judge_t *self, s_stream_t *s, sl_msg_t *msg)
{
    //  Every verdict says whose request it judged (the stream's START).
    if (msg->type == SL_MSG_VERDICT && s->start) {
        msg->team = s->start->team;
        msg->user = s->start->user;
    }
    memcpy (msg->sid, s->sid, SL_SID_SIZE);
    msg->epoch = s->epoch;
    msg->seq = s->seq++;
    self->emit (self->arg, msg);
}

//  Remember how the text sent so far ends, so that a notice written after
//  it starts a paragraph of its own: clients join the text of one answer
//  ("...a shell command.sluice blocked..." otherwise).
static void
s_note_text (s_stream_t *s, sl_str_t text)
{
    size_t n = 0;
    while (n < text.len && n < 2 && text.ptr [text.len - 1 - n] == '\n')
        n++;
    if (n == text.len && s->texted)
        n += (size_t) s->newlines;      //  a fragment of line ends only
    s->newlines = n > 2 ? 2 : (int) n;
    s->texted = true;
}

static void s_emit (sl_judge_t *self, s_stream_t *s, sl_msg_t *msg);
static void s_flush_would (sl_judge_t *self, s_stream_t *s);

//  Text rules (on: text) over a text block that went out: a verdict that
//  flags it (the text is never held, so nothing else can be done).
static void
s_flag_text (sl_judge_t *self, s_stream_t *s, const sl_msg_t *end)
{
    //  The rules read a text with a NUL after it; a message's is a slice.
    sl_buf_t text = { 0 };
    sl_buf_append_str (&text, end->text);
    sl_buf_cstr (&text);
    sl_rpart_t part = { .kind = SL_RPART_TEXT, .text = sl_buf_str (&text),
                        .model = s->start->model, .headers = s->start->headers };
    sl_rdecision_t rd;
    sl_policy_decide_part (s->policy, &part, &rd);
    if (rd.decision.check == SL_CHK_RAN) {
        sl_msg_t v;
        sl_msg_init (&v, SL_MSG_VERDICT);
        v.index = end->index;
        v.action = SL_ACT_ALLOW;
        v.check = SL_CHK_RAN;
        v.rule = sl_str (rd.decision.rule);
        sl_buf_t reason = { 0 };
        sl_buf_printf (&reason, "%s: flagged (text is not held: it went to the client)",
                       rd.decision.reason ? rd.decision.reason : "");
        v.reason = sl_buf_str (&reason);
        v.latency_us = 0;
        s_emit (self, s, &v);
        sl_buf_free (&reason);
    }
    sl_rdecision_clear (&rd);
    sl_buf_free (&text);
}

//  Pass a message on, with block indices closed up over removed blocks and
//  the finish reason fixed when no tool call is left.
static void
s_forward (sl_judge_t *self, s_stream_t *s, const sl_msg_t *msg)
{
    sl_msg_t m = *msg;
    if (m.type == SL_MSG_BLOCK && m.index >= 0)
        m.index -= s->removed;
    if (m.type == SL_MSG_BLOCK && m.kind == SL_B_DELTA && m.block == SL_BK_TEXT && m.text.len)
        s_note_text (s, m.text);
    if (m.type == SL_MSG_BLOCK && m.kind == SL_B_FINISH
    &&  s->calls_replaced > 0 && s->calls_kept == 0 && m.finish == SL_FIN_TOOL_CALLS) {
        m.finish = SL_FIN_STOP;
        m.finish_raw = SL_STR_NULL;     //  the raw value no longer applies
    }
    if (m.type == SL_MSG_END)
        s_flush_would (self, s);        //  the record of the stream ends with its END
    s_emit (self, s, &m);
    if (m.type == SL_MSG_END)
        s->ended = true;
    if (m.type == SL_MSG_BLOCK && m.kind == SL_B_END && m.block == SL_BK_TEXT && !(m.flags & SL_F_REPLACED)
    &&  sl_policy_text_count (s->policy))
        s_flag_text (self, s, &m);
}

//  A verdict of d about the call memo holds, going out with index; mode
//  SHADOW for a would-be one.
static void
s_emit_decision (sl_judge_t *self, s_stream_t *s, const s_memo_t *memo, const sl_decision_t *d,
                 int64_t decided_us, int mode)
{
    const sl_msg_t *end = memo->end;
    sl_msg_t v;
    sl_msg_init (&v, SL_MSG_VERDICT);
    v.index = memo->out_index;
    v.id = end->id.ptr ? end->id : memo->head->id;
    v.name = end->name.ptr ? end->name : memo->head->name;
    v.mode = (uint8_t) mode;
    v.action = (uint8_t) d->action;
    v.check = (uint8_t) d->check;
    v.rule = sl_str (d->rule);
    v.reason = sl_str (d->reason);
    sl_buf_t reason = { 0 };
    if (s->skew) {
        sl_buf_printf (&reason, "%s; judged under policy %s: the request was judged under %s, which this "
                       "judge does not have", d->reason ? d->reason : "", sl_policy_id (s->policy), s->skew);
        v.reason = sl_buf_str (&reason);
    }
    v.judge_model = sl_str (d->judge_model);
    v.probability = d->probability;
    v.approver = sl_str (d->approver);
    //  The arguments judged, for the audit trail: a blocked or dropped
    //  call's never reach the emitter otherwise. (The metadata feed strips
    //  them like every text.)
    v.text = memo->end->text;
    int64_t latency = decided_us - memo->end_us;
    v.latency_us = (uint32_t) (latency <= 0 ? 0 : latency > UINT32_MAX ? UINT32_MAX : latency);
    s_emit (self, s, &v);
    sl_buf_free (&reason);
}

static void
s_emit_verdict (sl_judge_t *self, s_stream_t *s, const s_item_t *call, s_memo_t *memo)
{
    memo->out_index = call->index - s->removed;
    s_emit_decision (self, s, memo, &memo->decision, memo->decided_us, SL_MODE_ENFORCE);
}

//  The would-be verdicts of a call whose own verdict went out: those
//  decided now, the rest when they are.
static void
s_emit_would (sl_judge_t *self, s_stream_t *s, s_memo_t *memo)
{
    for (int w = 0; w < S_WOULD_MAX; w++) {
        s_would_t *would = &memo->would [w];
        if (would->state == WOULD_NONE || would->sent)
            continue;
        would->owed = true;
        if (would->state != WOULD_DECIDED)
            continue;
        s_emit_decision (self, s, memo, &would->decision, would->decided_us, SL_MODE_SHADOW);
        would->sent = true;
    }
}

//  The request's own verdicts (START rv), right after the START: for the
//  taps and the audit, like the calls'. Malformed bytes are dropped.
static void
s_emit_request_verdicts (sl_judge_t *self, s_stream_t *s)
{
    sl_str_t rv = s->start->req_verdicts;
    size_t offset = 0;
    sl_msg_t v;
    while (rv.len && sl_codec_decode (self->codec, rv.ptr, rv.len, &offset, &v) == 0)
        if (v.type == SL_MSG_VERDICT && v.part.ptr)
            s_emit (self, s, &v);
}

//  A text block in place of the call at index, holding the notice; after
//  text, the notice starts a paragraph of its own.
static void
s_emit_replacement (sl_judge_t *self, s_stream_t *s, int32_t index, const char *notice)
{
    static const uint8_t kinds [] = { SL_B_START, SL_B_DELTA, SL_B_END };
    sl_buf_t text = { 0 };
    for (int i = s->texted ? s->newlines : 2; i < 2; i++)
        sl_buf_putc (&text, '\n');
    sl_buf_puts (&text, notice ? notice : "");
    for (size_t i = 0; i < sizeof kinds; i++) {
        sl_msg_t m;
        sl_msg_init (&m, SL_MSG_BLOCK);
        m.kind = kinds [i];
        m.block = SL_BK_TEXT;
        m.index = index;
        if (m.kind != SL_B_START)
            m.text = sl_buf_str (&text);
        if (m.kind != SL_B_DELTA)
            m.flags = SL_F_REPLACED;
        s_forward (self, s, &m);
    }
    sl_buf_free (&text);
}

//  The call as it was, but with the rewritten arguments in one fragment.
static void
s_emit_rewritten (sl_judge_t *self, s_stream_t *s, const s_item_t *call, const char *arguments)
{
    s_forward (self, s, call->parts [0]);
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_BLOCK);
    m.kind = SL_B_DELTA;
    m.block = SL_BK_TOOL_CALL;
    m.index = call->index;
    m.text = sl_str (arguments);
    s_forward (self, s, &m);
    m = *call->parts [call->part_count - 1];
    m.text = sl_str (arguments);
    m.flags |= SL_F_ARGS_VALID;
    s_forward (self, s, &m);
}

static void s_conclude (sl_judge_t *self, s_stream_t *s, s_memo_t *memo, const sl_llm_result_t *result);

//  Cancel every ask of the stream still in flight: the stream ends before
//  those calls. Each is concluded as a check that did not run, so the memo
//  never holds a pending decision for a re-send to trip on.
static void
s_cancel_asks (sl_judge_t *self, s_stream_t *s)
{
    for (size_t i = 0; i < s->memo_count; i++) {
        s_memo_t *m = &s->memo [i];
        if (m->state != MEMO_ASKING)
            continue;
        s_forget_ask (self, m, true);
        sl_llm_result_t cancelled = { 0 };
        sl_llm_result_fail (&cancelled, SL_CHK_ERROR, "not answered: the response ended first");
        s_conclude (self, s, m, &cancelled);
        sl_llm_result_clear (&cancelled);
    }
}

//  End the response with an error now; the rest of the input is swallowed.
static void
terminate_stream (sl_judge_t *self, s_stream_t *s, const char *message)
{
    s_flush_would (self, s);
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_ERROR);
    m.code = SL_STR_LIT (S_TERMINATE_CODE);
    m.message = sl_str (message ? message : "the policy ended this response");
    m.status = S_TERMINATE_STATUS;
    s_emit (self, s, &m);
    sl_msg_init (&m, SL_MSG_END);
    s_emit (self, s, &m);
    s->terminated = true;
    //  If the input's END already arrived (it waits in the queue), the
    //  stream is over; otherwise it is freed when END arrives.
    bool input_over = false;
    for (s_item_t *it = s->head; it; it = it->next)
        if (it->msg && it->msg->type == SL_MSG_END)
            input_over = true;
    s_cancel_asks (self, s);
    s_queue_free (s);
    if (input_over)
        s->ended = true;
}

//  Release a decided call: its verdict, then what the decision says.
static void
release_call (sl_judge_t *self, s_stream_t *s, const s_item_t *call, s_memo_t *memo)
{
    const sl_decision_t *d = &memo->decision;
    s_emit_verdict (self, s, call, memo);
    s_emit_would (self, s, memo);
    switch (d->action) {
        case SL_ACT_BLOCK:
            s->calls_replaced++;
            s_emit_replacement (self, s, call->index, d->message);
            break;
        case SL_ACT_DROP:
            s->calls_replaced++;
            s->removed++;
            break;
        case SL_ACT_REWRITE:
            s->calls_kept++;
            s_emit_rewritten (self, s, call, d->arguments);
            break;
        case SL_ACT_TERMINATE:
            terminate_stream (self, s, d->message);
            break;
        case SL_ACT_ALLOW:
            s->calls_kept++;
            for (size_t i = 0; i < call->part_count; i++)
                s_forward (self, s, call->parts [i]);
            break;
        default:
            //  Every decided call has an action; should one not, it fails
            //  closed rather than letting the call through.
            assert (false);
            s->calls_replaced++;
            s_emit_replacement (self, s, call->index, "sluice blocked a tool call it could not judge.");
            break;
    }
}

//  Release the queue from its head as far as it goes.
static void
release_ready (sl_judge_t *self, s_stream_t *s)
{
    bool released = false;
    while (s->head && !s->terminated) {
        s_item_t *item = s->head;
        if (!item->msg) {
            s_memo_t *memo = item->memo != S_NO_MEMO ? &s->memo [item->memo] : NULL;
            if (!memo || memo->state != MEMO_DECIDED)
                break;
            s->head = item->next;
            release_call (self, s, item, memo);
        }
        else {
            s->head = item->next;
            s_forward (self, s, item->msg);
        }
        released = true;
        s_item_free (item);
        if (!s->head)
            s->tail = NULL;
    }
    if (s->head && released)
        s->quiet_since = s_now (self);
}

//  --------------------------------------------------------------------------
//  Judging

static s_memo_t *
s_memo_new (s_stream_t *s)
{
    if (s->memo_count == s->memo_cap) {
        s->memo_cap = s->memo_cap ? s->memo_cap * 2 : 4;
        s->memo = sl_xrealloc (s->memo, s->memo_cap * sizeof (s_memo_t));
    }
    s_memo_t *m = &s->memo [s->memo_count++];
    memset (m, 0, sizeof *m);
    m->decision.llm_rule = -1;
    m->decision.probability = NAN;
    return m;
}

//  Why a call did not end cleanly, from its block_end.
static sl_cut_t
s_cut_of (const sl_msg_t *end)
{
    if (end->flags & SL_F_INCOMPLETE) {
        int cut = sl_cut_parse (end->code);
        return cut ? (sl_cut_t) cut : SL_CUT_ERROR;     //  cut, for a reason not given
    }
    return (end->flags & SL_F_ARGS_VALID) ? SL_CUT_NONE : SL_CUT_INVALID;
}

//  The call as the policy sees it, from its block_end and the stream.
static sl_call_t
s_call_view (s_stream_t *s, const sl_msg_t *end, int ordinal)
{
    if (!s->schema && sl_policy_uses_schema (s->policy))
        s->schema = sl_schema_new (s->start->tools);
    return (sl_call_t) {
        .name = end->name,
        .arguments = end->text,
        .args_valid = (end->flags & SL_F_ARGS_VALID) != 0,
        .repaired = (end->flags & SL_F_REPAIRED) != 0,
        .cut = s_cut_of (end),
        .ordinal = ordinal,
        .model = s->start->model,
        .headers = s->start->headers,
        .last_user = s->start->last_user,
        .tools = s->start->tools,
        .schema = s->schema,
        .history = s->start->history,
        .tool_digests = s->start->tool_digests,
        .taint = s->start->taint,
        .key_id = s->start->key_id,
        .team = s->start->team,
        .user = s->start->user
    };
}

//  Conclude a pending decision with a result (answer, timeout, error).
static void
s_conclude (sl_judge_t *self, s_stream_t *s, s_memo_t *memo, const sl_llm_result_t *result)
{
    sl_call_t call = s_call_view (s, memo->end, memo->ordinal);
    sl_policy_conclude (s->policy, &call, result, &memo->decision);
    memo->state = MEMO_DECIDED;
    memo->decided_us = s_now (self);
}

//  Ask the rule's LLM judge, or a person; when that cannot start, the
//  check failed.
static void
ask_llm_judge (sl_judge_t *self, s_stream_t *s, s_memo_t *memo)
{
    int rule = memo->decision.llm_rule;
    sl_call_t call = s_call_view (s, memo->end, memo->ordinal);
    const sl_ask_spec_t *person = sl_policy_ask_spec (s->policy, rule);
    const char *why = person ? "no one to ask in this process" : "no LLM judge client in this process";
    if (self->ask) {
        sl_buf_reset (&self->scratch);
        sl_judge_ask_t ask = {
            .ticket = sl_llm_tickets_next (self->tickets),
            .rule = memo->decision.rule,
            .sid = s->sid,
            .index = memo->index
        };
        char digest [SL_ASK_DIGEST_SIZE];
        if (person) {
            ask.kind = SL_JUDGE_ASK_PERSON;
            ask.person = person;
            sl_ask_digest (call.name, call.arguments, sl_policy_id (s->policy), digest);
            ask.digest = digest;
            sl_ask_message (person, memo->decision.rule, &call, s->start->team, s->start->user, &self->scratch);
            ask.message = sl_buf_str (&self->scratch);
            ask.tool = call.name;
            ask.arguments = call.arguments;
            ask.key_id = s->start->key_id;
            ask.team = s->start->team;
            ask.user = s->start->user;
            ask.model = s->start->model;
            ask.last_user = s->start->last_user;
            ask.policy = sl_policy_id (s->policy);
            ask.policy_name = s->start->policy_name;
        }
        else {
            if (sl_policy_llm_spec (s->policy, rule)->kind == SL_LLM_DECIDE)
                sl_policy_decide_input (s->policy, rule, &call, &self->scratch);
            else {
                sl_buf_t prompt = { 0 };
                sl_policy_llm_prompt (s->policy, rule, &call, &prompt);
                sl_llm_request_body (sl_policy_llm_spec (s->policy, rule), sl_buf_str (&prompt), &self->scratch);
                sl_buf_free (&prompt);
            }
            ask.kind = SL_JUDGE_ASK_LLM;
            ask.spec = sl_policy_llm_spec (s->policy, rule);
            ask.body = sl_buf_str (&self->scratch);
        }
        if (self->ask (self->llm_arg, &ask) == 0) {
            memo->state = MEMO_ASKING;
            memo->ticket = ask.ticket;
            sl_llm_tickets_add (self->tickets, ask.ticket, s->sid, 0);
            return;
        }
        why = person ? "the approval could not be started" : "the request to the judge could not be started";
    }
    sl_llm_result_t failed = { 0 };
    sl_llm_result_fail (&failed, SL_CHK_ERROR, why);
    s_conclude (self, s, memo, &failed);
    sl_llm_result_clear (&failed);
}

//  A call of a stream whose policy file this judge does not have: it
//  cannot be judged, so it is blocked, and the verdict says the check
//  did not run and why.
static void
s_decide_unknown (s_stream_t *s, s_memo_t *memo)
{
    sl_decision_t *d = &memo->decision;
    d->action = SL_ACT_BLOCK;
    d->check = SL_CHK_ERROR;
    sl_buf_t reason = { 0 };
    sl_buf_printf (&reason, "policy %s is not loaded by this judge: every tool call of the stream is blocked",
                   sl_policy_name (s->policy));
    d->reason = sl_xstrdup (sl_buf_cstr (&reason));
    sl_buf_reset (&reason);
    sl_buf_printf (&reason, S_UNKNOWN_NOTICE, (int) memo->end->name.len,
                   memo->end->name.ptr ? memo->end->name.ptr : "");
    d->message = sl_xstrdup (sl_buf_cstr (&reason));
    sl_buf_free (&reason);
    memo->state = MEMO_DECIDED;
    memo->decided_us = memo->end_us;
}

//  The policy a would-be decision of source w is judged under.
static sl_policy_t *
s_would_policy (s_stream_t *s, int w)
{
    return w == S_WOULD_POLICY ? s->policy : s->shadow;
}

//  Conclude a would-be decision with its judge's outcome; its verdict goes
//  out now when the call's own went out already.
static void
s_conclude_would (sl_judge_t *self, s_stream_t *s, s_memo_t *memo, int w, const sl_llm_result_t *result)
{
    s_would_t *would = &memo->would [w];
    sl_call_t call = s_call_view (s, memo->end, memo->ordinal);
    sl_policy_conclude (s_would_policy (s, w), &call, result, &would->decision);
    would->state = WOULD_DECIDED;
    would->decided_us = s_now (self);
    if (would->owed && !would->sent && !s->ended && !s->terminated) {
        s_emit_decision (self, s, memo, &would->decision, would->decided_us, SL_MODE_SHADOW);
        would->sent = true;
    }
}

//  Ask the LLM judge or decision service of a would-be decision, beside
//  the call's own: nothing waits for it. (An ask in shadow asks nobody:
//  the policy concluded it already.)
static void
s_ask_would (sl_judge_t *self, s_stream_t *s, s_memo_t *memo, int w)
{
    s_would_t *would = &memo->would [w];
    sl_policy_t *policy = s_would_policy (s, w);
    int rule = would->decision.llm_rule;
    const sl_llm_spec_t *spec = sl_policy_llm_spec (policy, rule);
    const char *why = "no LLM judge client in this process";
    if (self->ask && spec) {
        sl_call_t call = s_call_view (s, memo->end, memo->ordinal);
        sl_buf_reset (&self->scratch);
        if (spec->kind == SL_LLM_DECIDE)
            sl_policy_decide_input (policy, rule, &call, &self->scratch);
        else {
            sl_buf_t prompt = { 0 };
            sl_policy_llm_prompt (policy, rule, &call, &prompt);
            sl_llm_request_body (spec, sl_buf_str (&prompt), &self->scratch);
            sl_buf_free (&prompt);
        }
        sl_judge_ask_t ask = {
            .ticket = sl_llm_tickets_next (self->tickets),
            .kind = SL_JUDGE_ASK_LLM,
            .rule = would->decision.rule,
            .sid = s->sid,
            .index = memo->index,
            .spec = spec,
            .body = sl_buf_str (&self->scratch),
            .shadow = true
        };
        if (self->ask (self->llm_arg, &ask) == 0) {
            would->state = WOULD_ASKING;
            would->ticket = ask.ticket;
            sl_llm_tickets_add (self->tickets, ask.ticket, s->sid, 0);
            return;
        }
        why = "the request to the judge could not be started";
    }
    sl_llm_result_t failed = { 0 };
    sl_llm_result_fail (&failed, SL_CHK_ERROR, why);
    s_conclude_would (self, s, memo, w, &failed);
    sl_llm_result_clear (&failed);
}

//  What the rules in shadow mode would decide for a call just judged: the
//  stream's policy's shadow rules, and its shadow policy as a whole.
static void
s_judge_would (sl_judge_t *self, s_stream_t *s, s_memo_t *memo)
{
    for (int w = 0; w < S_WOULD_MAX; w++) {
        sl_policy_t *policy = s_would_policy (s, w);
        s_would_t *would = &memo->would [w];
        if (!policy)
            continue;
        sl_call_t call = s_call_view (s, memo->end, memo->ordinal);
        if (!sl_policy_decide_shadow (policy, &call, w == S_WOULD_SHADOW_POLICY, &would->decision)) {
            sl_decision_clear (&would->decision);
            continue;
        }
        if (would->decision.action != SL_ACT_NONE) {
            would->state = WOULD_DECIDED;
            would->decided_us = s_now (self);
        }
        else
            s_ask_would (self, s, memo, w);
    }
}

//  The response ends (its END, or a terminate): a would-be decision of a
//  call whose verdict went out and whose judge has not answered yet is
//  recorded as not answered (a shadow judge never holds a response), its
//  ask stopped.
static void
s_flush_would (sl_judge_t *self, s_stream_t *s)
{
    for (size_t i = 0; i < s->memo_count; i++)
        for (int w = 0; w < S_WOULD_MAX; w++) {
            s_memo_t *m = &s->memo [i];
            if (m->would [w].state != WOULD_ASKING || !m->would [w].owed)
                continue;
            s_forget_ticket (self, m->would [w].ticket, true);
            sl_llm_result_t late = { 0 };
            sl_llm_result_fail (&late, SL_CHK_TIMEOUT, "not answered before the response ended (a judge in "
                                "shadow mode never holds a response)");
            s_conclude_would (self, s, m, w, &late);
            sl_llm_result_clear (&late);
        }
}

//  A call is complete: decide it, or ask its judge, or find its decision
//  from an earlier epoch (same index, same name and arguments).
static void
judge_call (sl_judge_t *self, s_stream_t *s, s_item_t *item)
{
    const sl_msg_t *end = item->parts [item->part_count - 1];
    uint64_t hash = s_hash (end->name, end->text);
    for (size_t i = 0; i < s->memo_count; i++) {
        s_memo_t *m = &s->memo [i];
        if (m->index != item->index || m->epoch == s->epoch)
            continue;                   //  another call, or one of this epoch already
        if (m->hash == hash) {
            m->epoch = s->epoch;        //  a re-send: decided or asked already
            item->memo = i;
            for (int w = 0; w < S_WOULD_MAX; w++)
                m->would [w].owed = m->would [w].sent = false;     //  its verdicts go out again
            return;
        }
        //  The re-send has another call at this index (the upstream answered
        //  differently): the old decision does not apply to it.
        s_forget_ask (self, m, true);
        s_forget_would (self, m, true);
        m->state = MEMO_DECIDED;
        m->index = S_MEMO_RETIRED;
    }
    //  A new decision. (An index repeated within one epoch is malformed
    //  input; each such call still gets a decision of its own.)
    item->memo = s->memo_count;
    s_memo_t *memo = s_memo_new (s);
    memo->index = item->index;
    memo->hash = hash;
    memo->epoch = s->epoch;
    memo->end = sl_msg_dup (end);
    memo->head = sl_msg_dup (item->parts [0]);
    memo->ordinal = item->ordinal;
    memo->end_us = s_now (self);
    if (s->unknown) {
        s_decide_unknown (s, memo);
        return;
    }
    sl_call_t call = s_call_view (s, memo->end, memo->ordinal);
    sl_policy_decide (s->policy, &call, &memo->decision);
    if (memo->decision.action != SL_ACT_NONE) {
        memo->state = MEMO_DECIDED;
        memo->decided_us = s_now (self);
    }
    else
        ask_llm_judge (self, s, memo);
    s_judge_would (self, s, memo);
}

//  --------------------------------------------------------------------------
//  Input

static void
s_enqueue (sl_judge_t *self, s_stream_t *s, s_item_t *item)
{
    if (!s->head) {
        s->head = item;
        s->quiet_since = s_now (self);
    }
    else
        s->tail->next = item;
    s->tail = item;
}

static void
s_part_add (s_item_t *call, const sl_msg_t *msg)
{
    if (call->part_count == call->part_cap) {
        call->part_cap = call->part_cap ? call->part_cap * 2 : 8;
        call->parts = sl_xrealloc (call->parts, call->part_cap * sizeof (sl_msg_t *));
    }
    call->parts [call->part_count++] = sl_msg_dup (msg);
}

static void
start_tool_call (sl_judge_t *self, s_stream_t *s, const sl_msg_t *msg)
{
    s_item_t *call = sl_xcalloc (1, sizeof *call);
    call->index = msg->index;
    call->ordinal = ++s->calls_seen;
    call->memo = S_NO_MEMO;
    s_part_add (call, msg);
    s_enqueue (self, s, call);
    if (s->open_count == s->open_cap) {
        s->open_cap = s->open_cap ? s->open_cap * 2 : 4;
        s->open = sl_xrealloc (s->open, s->open_cap * sizeof (s_item_t *));
    }
    s->open [s->open_count++] = call;
}

//  The open call a block event belongs to, removed from the open list
//  when remove is set; NULL when none.
static s_item_t *
s_open_call (s_stream_t *s, int32_t index, bool remove)
{
    for (size_t i = 0; i < s->open_count; i++)
        if (s->open [i]->index == index) {
            s_item_t *call = s->open [i];
            if (remove) {
                memmove (&s->open [i], &s->open [i + 1], (s->open_count - i - 1) * sizeof (s_item_t *));
                s->open_count--;
            }
            return call;
        }
    return NULL;
}

//  The arguments of a call as far as they came: its fragments, or once it
//  is oversize the bound's worth kept of them.
static void
s_seen_arguments (const s_item_t *call, sl_buf_t *out)
{
    if (call->oversize) {
        sl_buf_append (out, call->seen.data, call->seen.len);
        return;
    }
    for (size_t i = 1; i < call->part_count; i++)
        if (call->parts [i]->kind == SL_B_DELTA)
            sl_buf_append_str (out, call->parts [i]->text);
}

//  The call's arguments went over the bound: keep the bound's worth of
//  them for the policy, free its fragments, and keep no more.
static void
s_make_oversize (sl_judge_t *self, s_item_t *call, sl_str_t more)
{
    sl_buf_t seen = { 0 };
    s_seen_arguments (call, &seen);
    size_t room = self->max_call_bytes > seen.len ? self->max_call_bytes - seen.len : 0;
    sl_buf_append (&seen, more.ptr, more.len < room ? more.len : room);
    for (size_t i = 1; i < call->part_count; i++)
        free (call->parts [i]);
    call->part_count = 1;               //  its block_start
    call->seen = seen;
    call->oversize = true;
}

//  A call that did not end cleanly gets a block_end made from what came of
//  it (end: the one that arrived, or NULL when none will): its identity,
//  its arguments as far as they came, flag INCOMPLETE and the cut as its
//  code. Then it is complete, and judged.
static void
close_cut_call (sl_judge_t *self, s_stream_t *s, s_item_t *call, const sl_msg_t *end, sl_cut_t cut)
{
    const sl_msg_t *start = call->parts [0];
    sl_buf_t args = { 0 };
    if (end && !call->oversize)
        sl_buf_append_str (&args, end->text);
    else
        s_seen_arguments (call, &args);
    if (cut == SL_CUT_SIZE) {
        //  Nothing of a call over a bound is ever released: keep its start
        //  and the bound's worth of its arguments for the policy.
        if (args.len > self->max_call_bytes)
            args.len = self->max_call_bytes;
        for (size_t i = 1; i < call->part_count; i++)
            free (call->parts [i]);
        call->part_count = 1;
    }
    sl_msg_t m;
    if (end)
        m = *end;
    else {
        sl_msg_init (&m, SL_MSG_BLOCK);
        sl_msg_set_stream (&m, start);
        m.kind = SL_B_END;
        m.block = start->block;
        m.index = call->index;
    }
    if (!m.id.ptr)
        m.id = start->id;
    if (!m.call_id.ptr)
        m.call_id = start->call_id;
    if (!m.name.ptr)
        m.name = start->name;
    m.text = sl_buf_str (&args);
    m.flags = (m.flags & ~(SL_F_ARGS_VALID | SL_F_REPAIRED)) | SL_F_INCOMPLETE;
    m.code = sl_str (sl_cut_name (cut));
    s_part_add (call, &m);
    sl_buf_free (&args);
    call->complete = true;
    judge_call (self, s, call);
}

//  A fragment of an open call's arguments: kept, until the call passes
//  the bound; then only counted.
static void
add_call_fragment (sl_judge_t *self, s_item_t *call, const sl_msg_t *msg)
{
    call->bytes += msg->text.len;
    if (call->oversize)
        return;
    if (call->bytes > self->max_call_bytes)
        s_make_oversize (self, call, msg->text);
    else
        s_part_add (call, msg);
}

//  The stream fails or ends with calls still open: each is cut (as the
//  error says, eof at an end that came without one, size when it was
//  over the bound) and judged, so its verdict goes out before the end.
static void
close_open_calls (sl_judge_t *self, s_stream_t *s, const sl_msg_t *msg)
{
    sl_cut_t cut = msg->type == SL_MSG_ERROR ? sl_cut_for_error (msg->code) : SL_CUT_EOF;
    for (size_t i = 0; i < s->open_count; i++)
        close_cut_call (self, s, s->open [i], NULL, s->open [i]->oversize ? SL_CUT_SIZE : cut);
    s->open_count = 0;
}

static void
s_process (sl_judge_t *self, s_stream_t *s, const sl_msg_t *msg)
{
    if (msg->type == SL_MSG_BLOCK && msg->block == SL_BK_TOOL_CALL && msg->kind == SL_B_START) {
        start_tool_call (self, s, msg);
        return;
    }
    s_item_t *call = msg->type == SL_MSG_BLOCK && msg->index >= 0
                   ? s_open_call (s, msg->index, msg->kind == SL_B_END) : NULL;
    if (call) {
        if (msg->kind == SL_B_DELTA)
            add_call_fragment (self, call, msg);
        else
        if (msg->kind == SL_B_END && (call->oversize || msg->text.len > self->max_call_bytes
                                   || s_cut_of (msg) == SL_CUT_SIZE)) {
            //  Over a bound, here or upstream: its fragments go, unreleased.
            close_cut_call (self, s, call, msg, SL_CUT_SIZE);
            release_ready (self, s);
        }
        else
        if (msg->kind == SL_B_END) {
            s_part_add (call, msg);
            call->complete = true;
            judge_call (self, s, call);
            release_ready (self, s);
        }
        else
            s_part_add (call, msg);
        return;
    }
    if ((msg->type == SL_MSG_ERROR || msg->type == SL_MSG_END) && s->open_count)
        close_open_calls (self, s, msg);
    if (!s->head) {
        s_forward (self, s, msg);
        return;
    }
    s_item_t *item = sl_xcalloc (1, sizeof *item);
    item->msg = sl_msg_dup (msg);
    s_enqueue (self, s, item);
    release_ready (self, s);            //  calls judged just now may be decided already
}

//  A re-send (new epoch) of a stream: a fresh stream that keeps the old
//  one's policy and decisions. Asks in flight stay in flight.
static s_stream_t *
s_stream_resend (sl_judge_t *self, s_stream_t *old, const sl_msg_t *start)
{
    s_stream_t *s = sl_xcalloc (1, sizeof *s);
    memcpy (s->sid, start->sid, SL_SID_SIZE);
    s->epoch = start->epoch;
    s->start = sl_msg_dup (start);
    if (old) {
        s->policy = old->policy;
        old->policy = NULL;
        s->shadow = old->shadow;
        old->shadow = NULL;
        s->skew = old->skew;
        old->skew = NULL;
        s->unknown = old->unknown;
        s->memo = old->memo;
        s->memo_count = old->memo_count;
        s->memo_cap = old->memo_cap;
        old->memo = NULL;
        old->memo_count = old->memo_cap = 0;
        s_stream_free (self, old, true);
    }
    else {
        //  The stream's own file (pn), else the default; a file this judge
        //  does not have is never replaced by the default.
        sl_policy_t *current = self->policy;
        if (start->policy_name.ptr)
            current = self->lookup ? self->lookup (self->lookup_arg, start->policy_name) : NULL;
        if (!current) {
            char *name = sl_xstrndup (start->policy_name.ptr, start->policy_name.len);
            s->policy = sl_policy_unloaded (name);
            free (name);
            s->unknown = true;
            self->unknown++;
        }
        else
        if (start->policy.ptr && s_version (self, start->policy, current))
            s->policy = sl_policy_ref (s_version (self, start->policy, current));
        else {
            s->policy = sl_policy_ref (current);
            if (start->policy.ptr && !sl_str_eq (start->policy, sl_policy_id (current))) {
                s->skew = sl_xstrndup (start->policy.ptr, start->policy.len);
                self->skew++;
            }
        }
        //  The file judged wholly in shadow beside it (a keys file's
        //  shadow_policy): it decides nothing, so one this judge does not
        //  have only leaves its would-be verdicts out.
        sl_policy_t *shadow = start->shadow_policy_name.ptr && self->lookup
                            ? self->lookup (self->lookup_arg, start->shadow_policy_name) : NULL;
        if (shadow && !s->unknown)
            s->shadow = sl_policy_ref (shadow);
    }
    return s;
}

static void
s_after (sl_judge_t *self, s_stream_t *s)
{
    if (s->ended) {
        sl_sidmap_remove (self->streams, s->sid);
        s_stream_free (self, s, true);
    }
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
    if (msg->type == SL_MSG_START) {
        if (s && msg->epoch == s->epoch) {
            self->dropped++;            //  duplicate start of the same epoch
            return;
        }
        if (s)
            sl_sidmap_remove (self->streams, s->sid);
        s = s_stream_resend (self, s, msg);
        sl_sidmap_put (self->streams, s->sid, s);
        //  Later stages and monitoring learn which policy the stream runs;
        //  what only the judge needs (the request's verdicts, its history,
        //  its tools' digests, its shadow policy) stops here.
        sl_msg_t start = *msg;
        start.policy = sl_str (sl_policy_id (s->policy));
        start.req_verdicts = SL_STR_NULL;
        start.history = SL_STR_NULL;
        start.tool_digests = SL_STR_NULL;
        start.taint = SL_STR_NULL;
        start.shadow_policy_name = SL_STR_NULL;
        s_forward (self, s, &start);
        s_emit_request_verdicts (self, s);
        return;
    }
    if (s && msg->epoch > s->epoch) {
        //  A new epoch must begin with its START; without one the stream
        //  cannot be judged, and the old epoch is over.
        sl_sidmap_remove (self->streams, s->sid);
        s_stream_free (self, s, true);
        s = NULL;
    }
    if (!s) {
        self->dropped++;
        return;
    }
    if (s->terminated) {
        //  The client's response is over; wait for the input's END.
        if (msg->type == SL_MSG_END)
            s->ended = true;
        s_after (self, s);
        return;
    }
    s_process (self, s, msg);
    s_after (self, s);
}

void
sl_judge_llm_done (sl_judge_t *self, uint64_t ticket, const sl_llm_result_t *result,
                   sl_emit_fn *emit, void *arg)
{
    self->emit = emit;
    self->arg = arg;
    uint8_t sid [SL_SID_SIZE];
    if (!sl_llm_tickets_take (self->tickets, ticket, sid, NULL))
        return;
    s_stream_t *s = sl_sidmap_get (self->streams, sid);
    s_memo_t *memo = NULL;
    for (size_t i = 0; s && i < s->memo_count && !memo; i++) {
        s_memo_t *m = &s->memo [i];
        for (int w = 0; w < S_WOULD_MAX; w++)
            if (m->would [w].state == WOULD_ASKING && m->would [w].ticket == ticket) {
                s_conclude_would (self, s, m, w, result);
                s_after (self, s);
                return;
            }
        if (m->state == MEMO_ASKING && m->ticket == ticket)
            memo = m;
    }
    if (!memo)
        return;
    s_conclude (self, s, memo, result);
    release_ready (self, s);
    s_after (self, s);
}

void
sl_judge_tick (sl_judge_t *self, sl_emit_fn *emit, void *arg)
{
    if (!self->clock)
        return;
    self->emit = emit;
    self->arg = arg;
    int64_t now = s_now (self);
    size_t cursor = 0;
    s_stream_t *s;
    while ((s = sl_sidmap_next (self->streams, &cursor, NULL))) {
        if (!s->head || s->terminated)
            continue;
        //  Two beats while a call is held: a visible one for the client
        //  every keep-alive interval, and a liveness one every
        //  SL_JUDGE_LIVENESS_US that only tells the gateway (and through
        //  its acks the ingest) that the stream is alive, not stalled.
        bool visible = self->keepalive_us && now - s->quiet_since >= self->keepalive_us;
        bool alive = now - s->quiet_since >= SL_JUDGE_LIVENESS_US
                  && now - s->alive_since >= SL_JUDGE_LIVENESS_US;
        if (!visible && !alive)
            continue;
        //  A keep-alive is time-driven, not input-driven: it takes no
        //  sequence number, so a re-send numbers the stream's messages the
        //  same way whatever keep-alives went out.
        sl_msg_t m;
        sl_msg_init (&m, SL_MSG_BLOCK);
        m.kind = SL_B_KEEPALIVE;
        m.flags = visible ? SL_F_KEEPALIVE : 0;
        memcpy (m.sid, s->sid, SL_SID_SIZE);
        m.epoch = s->epoch;
        m.seq = s->seq;
        self->emit (self->arg, &m);
        s->alive_since = now;
        if (visible)
            s->quiet_since = now;
    }
}
