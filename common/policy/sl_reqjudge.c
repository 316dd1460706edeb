/*  sl_reqjudge.c - judging a request before it leaves (see sl_reqjudge.h).

    One entry per part judged, in the request's order; the rules decide
    each part (sl_policy_decide_part), this file applies what they decide
    to the request and keeps the verdicts. A part's text is read where it
    lies (no copy) unless it has to be made: a tool result of several
    text parts is joined, a tool definition is written as JSON.
*/
#include "common/policy/sl_reqjudge.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/tools/sl_tooldef.h"
#include "common/policy/sl_withhold.h"
#include "common/policy/sl_taint.h"

#define S_PART_LABEL_MAX 64             //  "messages[123].parts[45]"

typedef enum { E_DECIDED, E_ASKING } s_state_t;

typedef struct {
    sl_rpart_t view;                    //  what the rules see (text may point into own)
    sl_part_t *part;                    //  in the request (NULL for a tool definition)
    char label [S_PART_LABEL_MAX];
    sl_buf_t own;                       //  text made for this part (joined, JSON)
    sl_rdecision_t rd;
    s_state_t state;
    size_t ask;                         //  while asking: its index
    char digest [SL_TOOLDEF_DIGEST_SIZE];   //  a tool definition's, when the policy has pins
} s_entry_t;

typedef struct {
    char label [S_PART_LABEL_MAX];
    sl_str_t id, name;
    sl_action_t action;
    sl_check_t check;
    const char *rule;                   //  borrowed from the policy
    char *reason;
    const char *judge_model;
    double probability;
    uint32_t latency_us;
} s_verdict_t;

typedef struct {
    const char *rule;
    const sl_llm_spec_t *spec;
    sl_buf_t body;
    size_t entry;
    bool done;
} s_ask_t;

struct _sl_reqjudge_t {
    sl_policy_t *policy;
    sl_req_t *req;
    sl_str_t headers;
    sl_str_t team;                      //  whose request (pins are per team)
    s_entry_t *entries;
    size_t entry_count;
    s_ask_t *asks;
    size_t ask_count;
    size_t pending;
    s_verdict_t *verdicts;
    size_t verdict_count;
    char *refusal;                      //  the first terminate's message
    bool changed;
    bool decided;                       //  some rule decided something
    int64_t started_us;
    sl_reqjudge_ask_t view;             //  what sl_reqjudge_ask returns
};

sl_reqjudge_t *
sl_reqjudge_new (sl_policy_t *policy, sl_req_t *req, sl_str_t headers)
{
    sl_reqjudge_t *self = sl_xcalloc (1, sizeof *self);
    self->policy = sl_policy_ref (policy);
    self->req = req;
    self->headers = headers;
    return self;
}

void
sl_reqjudge_destroy (sl_reqjudge_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_reqjudge_t *self = *self_p;
    for (size_t i = 0; i < self->entry_count; i++) {
        sl_buf_free (&self->entries [i].own);
        sl_rdecision_clear (&self->entries [i].rd);
    }
    free (self->entries);
    for (size_t i = 0; i < self->ask_count; i++)
        sl_buf_free (&self->asks [i].body);
    free (self->asks);
    for (size_t i = 0; i < self->verdict_count; i++)
        free (self->verdicts [i].reason);
    free (self->verdicts);
    free (self->refusal);
    sl_policy_unref (&self->policy);
    free (self);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  Verdicts

static s_verdict_t *
s_verdict_new (sl_reqjudge_t *self, const s_entry_t *e, int64_t now_us)
{
    self->verdicts = sl_xrealloc (self->verdicts, (self->verdict_count + 1) * sizeof (s_verdict_t));
    s_verdict_t *v = &self->verdicts [self->verdict_count++];
    memset (v, 0, sizeof *v);
    v->probability = NAN;
    if (e) {
        memcpy (v->label, e->label, sizeof v->label);
        if (e->view.kind == SL_RPART_TOOL_RESULT)
            v->id = e->view.call_id;
        v->name = e->view.tool;
    }
    int64_t latency = now_us - self->started_us;
    v->latency_us = (uint32_t) (latency <= 0 ? 0 : latency > UINT32_MAX ? UINT32_MAX : latency);
    return v;
}

//  A result of an untrusted tool taints the conversation whatever is done
//  to its text (sl_taint.h): a verdict that changed one says so.
static void
s_note_taint (sl_reqjudge_t *self, const s_entry_t *e, s_verdict_t *v)
{
    if (e->view.kind != SL_RPART_TOOL_RESULT || !sl_policy_uses_taint (self->policy)
    ||  !sl_taint_untrusted (self->policy, e->view.tool))
        return;
    sl_buf_t reason = { 0 };
    sl_buf_printf (&reason, "%s; the conversation stays tainted: %.*s is an untrusted tool and the model read "
                   "its result", v->reason, (int) e->view.tool.len, e->view.tool.ptr ? e->view.tool.ptr : "");
    free (v->reason);
    v->reason = sl_xstrdup (sl_buf_cstr (&reason));
    sl_buf_free (&reason);
}

//  Take a part's final decision: apply it, and record it.
static void
s_decided (sl_reqjudge_t *self, s_entry_t *e, int64_t now_us)
{
    const sl_decision_t *d = &e->rd.decision;
    e->state = E_DECIDED;
    if (d->check == SL_CHK_DEFAULT)
        return;                         //  no rule decided: allowed, nothing to say per part
    self->decided = true;
    s_verdict_t *v = s_verdict_new (self, e, now_us);
    v->action = d->action;
    v->check = d->check;
    v->rule = d->rule;
    v->reason = sl_xstrdup (d->reason ? d->reason : "");
    v->judge_model = d->judge_model;
    v->probability = d->probability;
    if (d->action == SL_ACT_WITHHOLD && e->view.kind == SL_RPART_TOOL
    &&  sl_withhold_tool (self->req, e->view.tool) == 0)
        self->changed = true;
    if (d->action == SL_ACT_BLOCK_RESULT && e->part) {
        sl_req_replace_result (self->req, e->part, d->message ? d->message : "");
        self->changed = true;
        s_note_taint (self, e, v);
    }
    if (d->action == SL_ACT_TERMINATE && !self->refusal)
        self->refusal = sl_xstrdup (d->message ? d->message : "sluice refused this request.");
}

//  --------------------------------------------------------------------------
//  Redaction

typedef struct {
    sl_policy_t *policy;
    const int *rules;
    size_t count;
    size_t *matches;                    //  per rule
} s_redact_ctx_t;

//  sl_req_edit_fn: every redact rule of the part, in order, on one string.
static bool
s_redact (void *arg, sl_str_t text, sl_buf_t *out)
{
    s_redact_ctx_t *ctx = arg;
    sl_buf_t bufs [2] = { { 0 }, { 0 } };
    int cur = -1;
    for (size_t i = 0; i < ctx->count; i++) {
        sl_buf_t *next = &bufs [cur == 0 ? 1 : 0];
        sl_buf_reset (next);
        size_t n = sl_policy_redact (ctx->policy, ctx->rules [i], cur < 0 ? text : sl_buf_str (&bufs [cur]), next);
        if (n) {
            ctx->matches [i] += n;
            cur = cur == 0 ? 1 : 0;
            sl_buf_cstr (next);         //  regexec wants a NUL after the text
        }
    }
    if (cur >= 0)
        sl_buf_append_str (out, sl_buf_str (&bufs [cur]));
    sl_buf_free (&bufs [0]);
    sl_buf_free (&bufs [1]);
    return cur >= 0;
}

//  A tool result's text as the rules see it: its text parts, joined.
static void
s_result_text (s_entry_t *e)
{
    const sl_part_t *r = e->part;
    size_t texts = 0, last = 0;
    for (size_t k = 0; k < r->content_count; k++)
        if (r->content [k].kind == SL_PART_TEXT) {
            texts++;
            last = k;
        }
    sl_buf_reset (&e->own);
    if (texts == 1)
        e->view.text = r->content [last].text;  //  the usual case: read in place
    else {
        sl_req_result_text (r, false, &e->own);
        sl_buf_cstr (&e->own);          //  regexec wants a NUL after the text
        e->view.text = sl_buf_str (&e->own);
    }
    if (!e->view.text.ptr)
        e->view.text = SL_STR_LIT ("");
}

//  Apply the part's redactions to the request; one verdict per rule.
static void
s_apply_redactions (sl_reqjudge_t *self, s_entry_t *e, int64_t now_us)
{
    size_t matches [SL_POLICY_MAX_REDACTS] = { 0 };
    s_redact_ctx_t ctx = { self->policy, e->rd.redacts, e->rd.redact_count, matches };
    bool changed = false;
    if (e->view.kind == SL_RPART_TOOL_RESULT) {
        for (size_t k = 0; k < e->part->content_count; k++)
            if (e->part->content [k].kind == SL_PART_TEXT)
                changed |= sl_req_edit_text (self->req, &e->part->content [k], s_redact, &ctx);
        if (changed)
            s_result_text (e);
    }
    else
    if (e->part) {
        changed = sl_req_edit_text (self->req, e->part, s_redact, &ctx);
        if (changed)
            e->view.text = e->part->text;
    }
    self->changed |= changed;
    for (size_t i = 0; i < e->rd.redact_count; i++) {
        if (!matches [i])
            continue;                   //  matched the joined text only (across parts): nothing to replace
        self->decided = true;
        const char *rule = sl_policy_rule_id (self->policy, e->rd.redacts [i]);
        s_verdict_t *v = s_verdict_new (self, e, now_us);
        v->action = SL_ACT_REDACT;
        v->check = SL_CHK_RAN;
        v->rule = rule;
        sl_buf_t reason = { 0 };
        sl_buf_printf (&reason, "rule %s: %zu match%s replaced", rule, matches [i], matches [i] == 1 ? "" : "es");
        v->reason = sl_xstrdup (sl_buf_cstr (&reason));
        sl_buf_free (&reason);
        s_note_taint (self, e, v);
    }
}

//  --------------------------------------------------------------------------
//  Judging

static s_entry_t *
s_entry_new (sl_reqjudge_t *self, int kind, sl_part_t *part)
{
    self->entries = sl_xrealloc (self->entries, (self->entry_count + 1) * sizeof (s_entry_t));
    s_entry_t *e = &self->entries [self->entry_count++];
    memset (e, 0, sizeof *e);
    e->part = part;
    e->view.kind = kind;
    e->view.model = self->req->model;
    e->view.headers = self->headers;
    e->view.team = self->team;
    return e;
}

//  The parts of the request, as the rules see them.
static void
s_collect (sl_reqjudge_t *self)
{
    sl_req_t *req = self->req;
    for (size_t i = 0; i < req->message_count; i++) {
        sl_message_t *m = &req->messages [i];
        for (size_t j = 0; j < m->count; j++) {
            sl_part_t *p = &m->parts [j];
            int kind = p->kind == SL_PART_TOOL_RESULT ? SL_RPART_TOOL_RESULT
                     : p->kind != SL_PART_TEXT ? 0
                     : m->role == SL_ROLE_SYSTEM ? SL_RPART_SYSTEM
                     : m->role == SL_ROLE_ASSISTANT ? SL_RPART_ASSISTANT : SL_RPART_USER;
            if (!kind)
                continue;
            s_entry_t *e = s_entry_new (self, kind, p);
            snprintf (e->label, sizeof e->label, "messages[%zu].parts[%zu]", i, j);
            if (kind == SL_RPART_TOOL_RESULT) {
                e->view.tool = p->name;
                e->view.call_id = p->id;
                e->view.is_error = p->is_error;
                s_result_text (e);
            }
            else
                e->view.text = p->text.ptr ? p->text : SL_STR_LIT ("");
        }
    }
    for (size_t k = 0; k < req->tool_count; k++) {
        const sl_tool_t *t = &req->tools [k];
        s_entry_t *e = s_entry_new (self, SL_RPART_TOOL, NULL);
        snprintf (e->label, sizeof e->label, "tools[%zu]", k);
        e->view.tool = t->name;
        if (sl_policy_pins (self->policy) || sl_policy_uses_definitions (self->policy))
            sl_tooldef_digest_tool (t, e->digest);  //  read once the entries stop moving
        sl_buf_puts (&e->own, "{\"name\":");
        sl_json_put_sl (&e->own, t->name.ptr ? t->name : SL_STR_LIT (""));
        sl_buf_puts (&e->own, ",\"description\":");
        sl_json_put_sl (&e->own, t->description.ptr ? t->description : SL_STR_LIT (""));
        if (t->schema) {
            char *schema = json_dumps (t->schema, JSON_COMPACT);
            sl_buf_puts (&e->own, ",\"schema\":");
            sl_buf_puts (&e->own, schema ? schema : "{}");
            free (schema);
        }
        sl_buf_putc (&e->own, '}');
        sl_buf_cstr (&e->own);
        e->view.text = sl_buf_str (&e->own);
    }
}

static void
s_add_ask (sl_reqjudge_t *self, size_t entry)
{
    s_entry_t *e = &self->entries [entry];
    int rule = e->rd.decision.llm_rule;
    self->asks = sl_xrealloc (self->asks, (self->ask_count + 1) * sizeof (s_ask_t));
    s_ask_t *a = &self->asks [self->ask_count];
    memset (a, 0, sizeof *a);
    a->rule = sl_policy_rule_id (self->policy, rule);
    a->spec = sl_policy_llm_spec (self->policy, rule);
    a->entry = entry;
    sl_buf_t prompt = { 0 };
    sl_policy_llm_prompt_part (self->policy, rule, &e->view, &prompt);
    sl_llm_request_body (a->spec, sl_buf_str (&prompt), &a->body);
    sl_buf_free (&prompt);
    e->state = E_ASKING;
    e->ask = self->ask_count++;
    self->pending++;
}

size_t
sl_reqjudge_run (sl_reqjudge_t *self, int64_t now_us)
{
    self->started_us = now_us;
    s_collect (self);
    for (size_t i = 0; i < self->entry_count; i++) {
        s_entry_t *e = &self->entries [i];
        if (e->digest [0])
            e->view.digest = sl_str (e->digest);
        sl_policy_decide_part (self->policy, &e->view, &e->rd);
        if (e->rd.redact_count)
            s_apply_redactions (self, e, now_us);
        if (e->rd.decision.action == SL_ACT_NONE)
            s_add_ask (self, i);
        else
            s_decided (self, e, now_us);
    }
    if (!self->pending && !self->decided)
        sl_reqjudge_done (self, SIZE_MAX, NULL, false, now_us);
    return self->ask_count;
}

const sl_reqjudge_ask_t *
sl_reqjudge_ask (sl_reqjudge_t *self, size_t i)
{
    if (i >= self->ask_count)
        return NULL;
    self->view = (sl_reqjudge_ask_t) { self->asks [i].rule, self->asks [i].spec, sl_buf_str (&self->asks [i].body) };
    return &self->view;
}

void
sl_reqjudge_done (sl_reqjudge_t *self, size_t i, const sl_llm_result_t *result, bool cached, int64_t now_us)
{
    if (i < self->ask_count && !self->asks [i].done && result) {
        s_ask_t *a = &self->asks [i];
        a->done = true;
        self->pending--;
        s_entry_t *e = &self->entries [a->entry];
        sl_decision_t *d = &e->rd.decision;
        sl_policy_conclude_part (self->policy, &e->view, result, d);
        if (cached && d->reason) {
            sl_buf_t reason = { 0 };
            sl_buf_printf (&reason, "%s (the judge's answer about the same content, kept)", d->reason);
            free (d->reason);
            d->reason = sl_xstrdup (sl_buf_cstr (&reason));
            sl_buf_free (&reason);
        }
        s_decided (self, e, now_us);    //  concluded: its check is never a default
    }
    if (!self->pending && !self->decided && self->verdict_count == 0) {
        //  Nothing decided anything: one verdict says the check ran.
        s_verdict_t *v = s_verdict_new (self, NULL, now_us);
        snprintf (v->label, sizeof v->label, "request");
        v->action = SL_ACT_ALLOW;
        v->check = SL_CHK_DEFAULT;
        sl_buf_t reason = { 0 };
        sl_buf_printf (&reason, "no request rule matched (%zu parts)", self->entry_count);
        v->reason = sl_xstrdup (sl_buf_cstr (&reason));
        sl_buf_free (&reason);
    }
}

void sl_reqjudge_set_team (sl_reqjudge_t *self, sl_str_t team) { self->team = team; }
size_t sl_reqjudge_pending (sl_reqjudge_t *self) { return self->pending; }
bool sl_reqjudge_changed (sl_reqjudge_t *self) { return self->changed; }
size_t sl_reqjudge_verdicts (sl_reqjudge_t *self) { return self->verdict_count; }

const char *
sl_reqjudge_refusal (sl_reqjudge_t *self)
{
    return self->pending ? NULL : self->refusal;
}

void
sl_reqjudge_verdict (sl_reqjudge_t *self, size_t i, sl_msg_t *out)
{
    sl_msg_init (out, SL_MSG_VERDICT);
    if (i >= self->verdict_count)
        return;
    const s_verdict_t *v = &self->verdicts [i];
    out->part = sl_str (v->label);
    out->id = v->id;
    out->name = v->name;
    out->action = (uint8_t) v->action;
    out->check = (uint8_t) v->check;
    out->rule = sl_str (v->rule);
    out->reason = sl_str (v->reason);
    out->judge_model = sl_str (v->judge_model);
    out->probability = v->probability;
    out->latency_us = v->latency_us;
}

void
sl_reqjudge_encode (sl_reqjudge_t *self, const uint8_t *sid, sl_buf_t *out)
{
    for (size_t i = 0; i < self->verdict_count; i++) {
        sl_msg_t v;
        sl_reqjudge_verdict (self, i, &v);
        memcpy (v.sid, sid, SL_SID_SIZE);
        v.seq = i;
        sl_msg_encode (&v, out);
    }
}

void
sl_reqjudge_digests (sl_reqjudge_t *self, sl_buf_t *out)
{
    sl_buf_putc (out, '{');
    bool comma = false;
    for (size_t i = 0; i < self->entry_count; i++) {
        const s_entry_t *e = &self->entries [i];
        if (e->view.kind != SL_RPART_TOOL || !e->digest [0] || !e->view.tool.ptr)
            continue;
        if (comma)
            sl_buf_putc (out, ',');
        comma = true;
        sl_json_put_sl (out, e->view.tool);
        sl_buf_printf (out, ":\"%s\"", e->digest);
    }
    sl_buf_putc (out, '}');
}

//  --------------------------------------------------------------------------
//  History

void
sl_reqjudge_history (const sl_req_t *req, size_t max_calls, size_t max_bytes, sl_buf_t *out)
{
    //  The latest calls first, back to the bounds; then written oldest first.
    size_t total = 0, bytes = 0, first_msg = req->message_count, first_part = 0;
    for (size_t i = req->message_count; i-- > 0 && total < max_calls && bytes < max_bytes;) {
        const sl_message_t *m = &req->messages [i];
        for (size_t j = m->count; j-- > 0 && total < max_calls && bytes < max_bytes;)
            if (m->parts [j].kind == SL_PART_TOOL_CALL) {
                total++;
                bytes += m->parts [j].arguments.len + m->parts [j].name.len + 32;
                first_msg = i;
                first_part = j;
            }
    }
    if (!total)
        return;
    sl_buf_putc (out, '[');
    bool comma = false;
    for (size_t i = first_msg; i < req->message_count; i++) {
        const sl_message_t *m = &req->messages [i];
        for (size_t j = i == first_msg ? first_part : 0; j < m->count; j++) {
            const sl_part_t *p = &m->parts [j];
            if (p->kind != SL_PART_TOOL_CALL)
                continue;
            if (comma)
                sl_buf_putc (out, ',');
            comma = true;
            sl_buf_puts (out, "{\"name\":");
            sl_json_put_sl (out, p->name.ptr ? p->name : SL_STR_LIT (""));
            sl_str_t args = p->arguments.ptr ? p->arguments : SL_STR_LIT ("{}");
            if (sl_json_valid (args)) {
                sl_buf_puts (out, ",\"args\":");
                sl_buf_append_str (out, args);
            }
            else {
                sl_buf_puts (out, ",\"text\":");
                sl_json_put_sl (out, args);
            }
            sl_buf_putc (out, '}');
        }
    }
    sl_buf_putc (out, ']');
}
