/*  sl_replay.c - decode, aggregate, judge, render in one process (see sl_replay.h).

    Each stage's emit callback feeds the next stage directly, so one input
    byte range runs through the whole pipeline before the next is read, as
    in the real processes minus the sockets. The stream has a fixed id and
    epoch 0; each hop numbers its own messages, as the services do.
*/
#include "common/stages/sl_replay.h"

#include "common/policy/sl_reqjudge.h"
#include "common/policy/sl_taint.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"
#include "common/stages/sl_agg.h"
#include "common/stages/sl_emitter.h"
#include "common/tools/sl_tooldef.h"
#include "common/dialects/sl_decoder.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_framing.h"
#include "common/http/sl_sse.h"
#include "common/stages/sl_judge.h"

#define SL_REPLAY_SID_BYTE 0x5e         //  the replayed stream's id, every byte
#define SL_REPLAY_MAX_JSON (64u << 20)  //  largest JSON array input, bytes
#define SL_REPLAY_NOT_ASKED "sluice-replay makes no network calls, so the judge was not asked"
#define SL_REPLAY_NOBODY "sluice-replay asks nobody: a person would decide this call"

struct _sl_replay_t {
    int dialect;
    int render;
    int input;                          //  decided format (AUTO until known)
    size_t max_event;
    sl_replay_write_fn *write;
    void *arg;
    uint8_t sid [SL_SID_SIZE];
    uint64_t seq;                       //  next delta sequence
    sl_framing_t *frames;               //  the dialect's framing (SSE or AWS's event stream)
    sl_decoder_t *decoder;
    sl_agg_t *agg;
    sl_judge_t *judge;                  //  NULL without a policy
    sl_emitter_t *emitter;              //  NULL in blocks form
    sl_snapshot_t *snapshot;            //  blocks form: the final message
    sl_buf_t pending;                   //  input not yet handed to a parser
    sl_buf_t line;                      //  output line being written
    struct {
        uint64_t ticket;
        int kind;                       //  sl_judge_ask_kind_t
    } *asks;                            //  asks taken (LLM judges, persons), not yet concluded
    size_t ask_count;
    size_t ask_cap;
    const char *error;                  //  why it failed, "" while fine
    bool failed;
    bool finished;
    bool refused;                       //  the request policy refused the request
};

bool
sl_replay_can_decode (int dialect)
{
    sl_decoder_t *decoder = sl_decoder_new (dialect);
    bool can = decoder != NULL;
    sl_decoder_destroy (&decoder);
    return can;
}

//  --------------------------------------------------------------------------
//  Output of the last stage

static void
s_write_line (sl_replay_t *self)
{
    sl_buf_putc (&self->line, '\n');
    self->write (self->arg, self->line.data, self->line.len);
    sl_buf_reset (&self->line);
}

static void
s_write_block (sl_replay_t *self, int32_t index)
{
    size_t count = sl_snapshot_count (self->snapshot);
    for (size_t i = count; i > 0; i--) {
        sl_snapshot_block_t b;
        sl_snapshot_block (self->snapshot, i - 1, &b);
        if (b.index == index) {
            sl_snapshot_block_to_json (self->snapshot, i - 1, &self->line);
            s_write_line (self);
            return;
        }
    }
}

static void
s_put_field (sl_buf_t *out, const char *key, sl_str_t value)
{
    if (!value.ptr)
        return;
    sl_buf_printf (out, ",\"%s\":", key);
    sl_json_put_sl (out, value);
}

//  Everything but the latency, which is the one clock reading in the stages.
static void
s_write_verdict (sl_replay_t *self, const sl_msg_t *v)
{
    sl_buf_t *out = &self->line;
    if (v->part.ptr) {
        sl_buf_puts (out, "{\"verdict\":{\"part\":");     //  about the request
        sl_json_put_sl (out, v->part);
    }
    else
        sl_buf_printf (out, "{\"verdict\":{\"index\":%d", v->index);
    s_put_field (out, "id", v->id);
    s_put_field (out, "name", v->name);
    sl_buf_printf (out, ",\"action\":\"%s\",\"check\":\"%s\"",
                   sl_action_name (v->action), sl_check_name (v->check));
    s_put_field (out, "rule", v->rule);
    s_put_field (out, "reason", v->reason);
    s_put_field (out, "judge_model", v->judge_model);
    if (v->mode == SL_MODE_SHADOW)      //  a would-be verdict (a rule in shadow mode)
        sl_buf_printf (out, ",\"mode\":\"%s\"", sl_mode_name (v->mode));
    sl_buf_puts (out, "}}");
    s_write_line (self);
}

static void
s_write_last (sl_replay_t *self)
{
    const sl_snapshot_t *snap = self->snapshot;
    sl_buf_t *out = &self->line;
    sl_finish_t finish = sl_snapshot_finish (snap);
    sl_buf_puts (out, "{\"finish\":");
    if (finish == SL_FIN_NONE)
        sl_buf_puts (out, "null");
    else
        sl_json_put_sl (out, sl_str (sl_finish_name (finish)));
    sl_buf_puts (out, ",\"finish_raw\":");
    if (sl_snapshot_finish_raw (snap).ptr)
        sl_json_put_sl (out, sl_snapshot_finish_raw (snap));
    else
        sl_buf_puts (out, "null");
    sl_buf_puts (out, ",\"usage\":");
    sl_usage_t usage;
    sl_snapshot_usage (snap, &usage);
    sl_snapshot_usage_to_json (&usage, out);
    s_put_field (out, "stop_sequence", sl_snapshot_stop_seq (snap));
    if (sl_snapshot_failed (snap)) {
        sl_buf_puts (out, ",\"error\":{\"code\":");
        sl_json_put_sl (out, sl_snapshot_error_code (snap));
        s_put_field (out, "message", sl_snapshot_error_message (snap));
        if (sl_snapshot_error_status (snap))
            sl_buf_printf (out, ",\"status\":%d", sl_snapshot_error_status (snap));
        sl_buf_putc (out, '}');
    }
    sl_buf_putc (out, '}');
    s_write_line (self);
}

static void
s_on_frame (void *arg, const sl_msg_t *frame)
{
    sl_replay_t *self = arg;
    if (frame->type == SL_MSG_FRAME && frame->body.len)
        self->write (self->arg, frame->body.ptr, frame->body.len);
}

//  The judged stream (or the aggregated one, without a judge).
static void
s_on_judged (void *arg, const sl_msg_t *msg)
{
    sl_replay_t *self = arg;
    if (self->emitter) {
        sl_emitter_feed (self->emitter, msg, s_on_frame, self);
        return;
    }
    sl_snapshot_feed (self->snapshot, msg);
    if (msg->type == SL_MSG_BLOCK && msg->kind == SL_B_END)
        s_write_block (self, msg->index);
    else
    if (msg->type == SL_MSG_VERDICT)
        s_write_verdict (self, msg);
    else
    if (msg->type == SL_MSG_END)
        s_write_last (self);
}

//  --------------------------------------------------------------------------
//  LLM judges: never asked. An ask is taken, then concluded as soon as the
//  judge returns, as a check that did not run; the policy then applies the
//  rule's on_error action and the verdict says why.

static int
s_ask (void *arg, const sl_judge_ask_t *ask)
{
    sl_replay_t *self = arg;
    if (self->ask_count == self->ask_cap) {
        self->ask_cap = self->ask_cap ? self->ask_cap * 2 : 8;
        self->asks = sl_xrealloc (self->asks, self->ask_cap * sizeof *self->asks);
    }
    self->asks [self->ask_count].ticket = ask->ticket;
    self->asks [self->ask_count++].kind = ask->kind;
    return 0;
}

static void
s_cancel (void *arg, uint64_t ticket)
{
    sl_replay_t *self = arg;
    for (size_t i = 0; i < self->ask_count; i++)
        if (self->asks [i].ticket == ticket) {
            memmove (self->asks + i, self->asks + i + 1, (self->ask_count - i - 1) * sizeof *self->asks);
            self->ask_count--;
            return;
        }
}

static void
s_conclude_asks (sl_replay_t *self)
{
    //  Each ticket leaves the list before its outcome goes back: concluding
    //  one may end the stream (terminate), which cancels the others.
    while (self->ask_count) {
        uint64_t ticket = self->asks [0].ticket;
        bool person = self->asks [0].kind == SL_JUDGE_ASK_PERSON;
        s_cancel (self, ticket);
        sl_llm_result_t failed = { 0 };
        sl_llm_result_fail (&failed, SL_CHK_ERROR, person ? SL_REPLAY_NOBODY : SL_REPLAY_NOT_ASKED);
        sl_judge_llm_done (self->judge, ticket, &failed, s_on_judged, self);
        sl_llm_result_clear (&failed);
    }
}

static void
s_on_block (void *arg, const sl_msg_t *msg)
{
    sl_replay_t *self = arg;
    if (self->judge) {
        sl_judge_feed (self->judge, msg, s_on_judged, self);
        s_conclude_asks (self);
    }
    else
        s_on_judged (self, msg);
}

//  A message of the ingest hop: envelope, then the aggregator.
static void
s_deliver (void *arg, const sl_msg_t *msg)
{
    sl_replay_t *self = arg;
    sl_msg_t m = *msg;
    memcpy (m.sid, self->sid, SL_SID_SIZE);
    m.epoch = 0;
    m.seq = self->seq++;
    sl_agg_feed (self->agg, &m, s_on_block, self);
}

//  --------------------------------------------------------------------------
//  Life cycle

bool sl_replay_refused (sl_replay_t *self) { return self->refused; }

//  Judge the request as the gateway does, and say what was decided: the
//  verdicts, then the request as it would go upstream, or its refusal.
static void
s_judge_request (sl_replay_t *self, sl_policy_t *policy, sl_job_t *request)
{
    sl_reqjudge_t *rj = sl_reqjudge_new (policy, request->req, SL_STR_LIT ("{}"));
    size_t asks = sl_reqjudge_run (rj, 0);
    for (size_t i = 0; i < asks; i++) {
        sl_llm_result_t failed = { 0 };
        sl_llm_result_fail (&failed, SL_CHK_ERROR, "the judge was not asked");
        sl_reqjudge_done (rj, i, &failed, false, 0);
        sl_llm_result_clear (&failed);
    }
    for (size_t i = 0; i < sl_reqjudge_verdicts (rj); i++) {
        sl_msg_t v;
        sl_reqjudge_verdict (rj, i, &v);
        s_write_verdict (self, &v);
    }
    const char *refusal = sl_reqjudge_refusal (rj);
    sl_buf_t *out = &self->line;
    if (refusal) {
        self->refused = true;
        sl_buf_puts (out, "{\"refused\":");
        sl_json_put_sl (out, sl_str (refusal));
        sl_buf_putc (out, '}');
    }
    else
    if (sl_reqjudge_changed (rj) && sl_job_refresh (request)) {
        self->refused = true;
        sl_buf_puts (out, "{\"refused\":");
        sl_json_put_sl (out, sl_buf_str (&request->error_message));
        sl_buf_putc (out, '}');
    }
    else {
        sl_buf_puts (out, "{\"request\":");
        if (sl_json_valid (sl_buf_str (&request->upstream_body)))
            sl_json_put_raw (out, sl_json_trim (sl_buf_str (&request->upstream_body)));
        else
            sl_json_put_sl (out, sl_buf_str (&request->upstream_body));
        sl_buf_putc (out, '}');
    }
    s_write_line (self);
    sl_reqjudge_destroy (&rj);
}

sl_replay_t *
sl_replay_new (const sl_replay_opts_t *opts, sl_replay_write_fn *write, void *arg,
               const char **why)
{
    const char *unused;
    if (!why)
        why = &unused;
    sl_decoder_t *decoder = sl_decoder_new (opts->dialect);
    if (!decoder) {
        *why = "this build has no decoder for that dialect";
        return NULL;
    }
    if (opts->render && !sl_emitter_can_render (opts->render)) {
        sl_decoder_destroy (&decoder);
        *why = "this build has no renderer for that dialect";
        return NULL;
    }
    sl_replay_t *self = sl_xcalloc (1, sizeof *self);
    self->dialect = opts->dialect;
    self->render = opts->render;
    self->input = opts->input;
    self->max_event = opts->max_event ? opts->max_event : SL_SSE_DEFAULT_MAX;
    self->write = write;
    self->arg = arg;
    self->error = "";
    memset (self->sid, SL_REPLAY_SID_BYTE, SL_SID_SIZE);
    self->decoder = decoder;
    self->frames = sl_framing_new (sl_dialect_get (opts->dialect)->framing, self->max_event);
    self->agg = sl_agg_new ();
    if (opts->policy) {
        self->judge = sl_judge_new (opts->policy);
        sl_judge_set_llm (self->judge, s_ask, s_cancel, self);
    }
    if (opts->render)
        self->emitter = sl_emitter_new ();
    else
        self->snapshot = sl_snapshot_new ();

    //  The stream starts as the gateway would start it: streaming, with
    //  usage, so everything the capture holds reaches the output.
    sl_msg_t start;
    sl_msg_init (&start, SL_MSG_START);
    start.client_dialect = (uint8_t) (opts->render ? opts->render : opts->dialect);
    start.upstream_dialect = (uint8_t) opts->dialect;
    start.flags = SL_F_STREAM | SL_F_USAGE;
    start.reply_to = SL_STR_LIT ("replay");
    start.model = opts->model;
    start.tools = opts->tools;
    start.last_user = opts->last_user;
    sl_buf_t history = { 0 }, digests = { 0 }, taint = { 0 };
    if (opts->request && opts->request->req && opts->policy) {
        //  The tools as the request sent them, before a rule withholds any.
        if (sl_policy_uses_definitions (opts->policy)) {
            sl_tooldef_digests (opts->request->req->tools, opts->request->req->tool_count, &digests);
            start.tool_digests = sl_buf_str (&digests);
        }
        if (sl_policy_request_count (opts->policy))
            s_judge_request (self, opts->policy, opts->request);
        start.last_user = sl_buf_str (&opts->request->last_user);
        if (sl_policy_uses_history (opts->policy))
            sl_reqjudge_history (opts->request->req, SL_REQJUDGE_HISTORY_CALLS, SL_REQJUDGE_HISTORY_BYTES, &history);
        start.history = sl_buf_str (&history);
        if (sl_policy_uses_taint (opts->policy))
            sl_taint_scan (opts->policy, opts->request->req, &taint);
        start.taint = sl_buf_str (&taint);
    }
    s_deliver (self, &start);
    sl_buf_free (&history);
    sl_buf_free (&digests);
    sl_buf_free (&taint);
    return self;
}

void
sl_replay_destroy (sl_replay_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_replay_t *self = *self_p;
    sl_framing_destroy (&self->frames);
    sl_decoder_destroy (&self->decoder);
    sl_agg_destroy (&self->agg);
    sl_judge_destroy (&self->judge);
    sl_emitter_destroy (&self->emitter);
    sl_snapshot_destroy (&self->snapshot);
    sl_buf_free (&self->pending);
    sl_buf_free (&self->line);
    free (self->asks);
    free (self);
    *self_p = NULL;
}

const char *
sl_replay_error (sl_replay_t *self)
{
    return self->error;
}

const sl_snapshot_t *
sl_replay_snapshot (sl_replay_t *self)
{
    return self->snapshot;
}

//  --------------------------------------------------------------------------
//  Input

static int
s_fail (sl_replay_t *self, const char *why)
{
    self->failed = true;
    self->error = why && *why ? why : "unreadable input";
    sl_buf_puts (&self->line, "{\"error\":");
    sl_buf_t text = { 0 };
    sl_buf_printf (&text, "malformed input: %s", self->error);
    sl_json_put_sl (&self->line, sl_buf_str (&text));
    sl_buf_free (&text);
    sl_buf_putc (&self->line, '}');
    s_write_line (self);
    return -2;
}

//  One event's data, from whichever format carried it.
static int
s_event (sl_replay_t *self, sl_str_t type, sl_str_t data)
{
    if (sl_decoder_event (self->decoder, type, data, s_deliver, self) == 0)
        return 0;
    return s_fail (self, sl_decoder_error (self->decoder));
}

static int
s_on_sse_event (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    (void) id;
    return s_event (arg, type, data);
}

static int
s_jsonl_line (sl_replay_t *self, const char *p, size_t n)
{
    if (n && p [n - 1] == '\r')
        n--;
    sl_str_t line = sl_json_trim (sl_str_n (p, n));
    if (!line.len)
        return 0;
    return s_event (self, SL_STR_LIT ("message"), line);
}

static int
s_feed_jsonl (sl_replay_t *self, const char *data, size_t size)
{
    const char *p = data;
    const char *end = data + size;
    while (p < end) {
        const char *nl = memchr (p, '\n', (size_t) (end - p));
        size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);
        if (self->pending.len + n > self->max_event)
            return s_fail (self, "line over the size limit");
        if (!nl) {
            sl_buf_append (&self->pending, p, n);
            break;
        }
        int rc;
        if (self->pending.len) {
            sl_buf_append (&self->pending, p, n);
            rc = s_jsonl_line (self, self->pending.data, self->pending.len);
            sl_buf_reset (&self->pending);
        }
        else
            rc = s_jsonl_line (self, p, n);
        if (rc)
            return rc;
        p = nl + 1;
    }
    return 0;
}

static int
s_feed_sse (sl_replay_t *self, const char *data, size_t size)
{
    int rc = sl_framing_feed (self->frames, data, size, s_on_sse_event, self);
    if (rc == -1 && *sl_framing_error (self->frames))
        return s_fail (self, sl_framing_error (self->frames));
    return rc ? -2 : 0;                 //  the decoder's failure is already written
}

static int
s_feed_parsed (sl_replay_t *self, const char *data, size_t size)
{
    switch (self->input) {
        case SL_REPLAY_INPUT_SSE:
            return s_feed_sse (self, data, size);
        case SL_REPLAY_INPUT_JSONL:
            return s_feed_jsonl (self, data, size);
        default:
            if (self->pending.len + size > SL_REPLAY_MAX_JSON)
                return s_fail (self, "JSON input over the size limit");
            sl_buf_append (&self->pending, data, size);
            return 0;
    }
}

//  Decide the format from the first meaningful byte of what is pending.
//  Returns true once decided; the byte order mark is dropped for JSON.
static bool
s_detect (sl_replay_t *self)
{
    const unsigned char *p = (const unsigned char *) self->pending.data;
    size_t n = self->pending.len, i = 0;
    if (n >= 3 && p [0] == 0xEF && p [1] == 0xBB && p [2] == 0xBF)
        i = 3;
    while (i < n && (p [i] == ' ' || p [i] == '\t' || p [i] == '\r' || p [i] == '\n'))
        i++;
    if (i == n)
        return false;
    if (p [i] == '{' || p [i] == '[') {
        self->input = p [i] == '{' ? SL_REPLAY_INPUT_JSONL : SL_REPLAY_INPUT_JSON;
        sl_buf_consume (&self->pending, i);
    }
    else
        self->input = SL_REPLAY_INPUT_SSE;
    return true;
}

int
sl_replay_feed (sl_replay_t *self, const void *data, size_t size)
{
    if (self->failed || self->finished)
        return self->failed ? -2 : 0;
    if (self->input != SL_REPLAY_INPUT_AUTO)
        return s_feed_parsed (self, data, size);
    if (self->pending.len + size > self->max_event)
        return s_fail (self, "no recognizable input in the first bytes");
    sl_buf_append (&self->pending, data, size);
    if (!s_detect (self))
        return 0;
    //  Hand what waited to the parser that now owns the pending buffer.
    sl_buf_t held = self->pending;
    self->pending = (sl_buf_t) { 0 };
    int rc = s_feed_parsed (self, held.data, held.len);
    sl_buf_free (&held);
    return rc;
}

static int
s_finish_json (sl_replay_t *self)
{
    sl_json_iter_t it;
    sl_str_t element;
    if (sl_json_array (&it, sl_buf_str (&self->pending)))
        return s_fail (self, "the input is not a JSON array");
    int rc;
    while ((rc = sl_json_next_elem (&it, &element)) == 1)
        if (s_event (self, SL_STR_LIT ("message"), element))
            return -2;
    if (rc < 0)
        return s_fail (self, "the input is not a valid JSON array");
    return 0;
}

int
sl_replay_finish (sl_replay_t *self)
{
    if (self->failed || self->finished)
        return self->failed ? -2 : 0;
    if (self->input == SL_REPLAY_INPUT_AUTO) {
        //  Nothing but whitespace: an empty SSE stream.
        self->input = SL_REPLAY_INPUT_SSE;
        sl_buf_reset (&self->pending);
    }
    int rc = 0;
    switch (self->input) {
        case SL_REPLAY_INPUT_SSE:
            rc = sl_framing_finish (self->frames, s_on_sse_event, self);
            if (rc == -1 && *sl_framing_error (self->frames))
                return s_fail (self, sl_framing_error (self->frames));
            break;
        case SL_REPLAY_INPUT_JSONL:
            rc = s_jsonl_line (self, self->pending.data, self->pending.len);
            break;
        default:
            rc = s_finish_json (self);
            break;
    }
    if (rc)
        return -2;
    self->finished = true;
    //  The body ended cleanly: the decoder says done, or that the stream
    //  stopped short; then the stream ends at every stage.
    if (sl_decoder_finish (self->decoder, s_deliver, self))
        return s_fail (self, sl_decoder_error (self->decoder));
    sl_msg_t end;
    sl_msg_init (&end, SL_MSG_END);
    s_deliver (self, &end);
    return 0;
}
