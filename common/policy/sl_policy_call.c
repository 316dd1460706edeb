/*  sl_policy_call.c - judging a tool call (sl_policy_decide, see
    sl_policy.h).

    Rules are tried in order; the first whose conditions all hold decides,
    and a call no rule matched gets the default, or on_incomplete when it
    did not end cleanly and some rule concerns its tool. The cheap
    conditions (the rule's kind, tool name, flags, position, model) come
    first; the call's arguments are parsed once, with jansson, and only
    when a rule that survived them needs them. A call cut off is judged on
    its arguments closed into JSON, and only by rules that cannot let it
    through unless they name the incompleteness.
*/
#include "common/policy/sl_policy_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/tools/sl_tooldef.h"

#define S_DEFAULT_BLOCK "sluice blocked a call to the tool \"{tool}\" (policy rule {rule})."
#define S_DEFAULT_TERMINATE \
    "sluice ended this response: a call to the tool \"{tool}\" is not allowed (policy rule {rule})."
#define S_INCOMPLETE_BLOCK \
    "sluice blocked a call to {tool}: the model's call was cut off ({cut}) and cannot be judged."
#define S_INCOMPLETE_TERMINATE \
    "sluice ended this response: the model's call to {tool} was cut off ({cut}) and cannot be judged."
#define S_ON_INCOMPLETE "on_incomplete" //  the setting, named as the rule of its verdicts

//  --------------------------------------------------------------------------
//  What a rule tests

//  What one evaluation knows about the call, computed when first needed.
typedef struct {
    const sl_call_t *call;
    const sl_policy_t *policy;
    bool digest_read;                   //  digest looked up in the call's tool_digests
    sl_str_t digest;                    //  the call's tool's definition digest, absent: none
    char digest_text [SL_TOOLDEF_DIGEST_SIZE];
    bool parsed;                        //  args parsed (or found invalid)
    json_t *args;                       //  NULL when not valid JSON
    bool closed;                        //  seen computed
    json_t *seen;                       //  the arguments as far as they came, closed into
                                        //  JSON (a new reference), NULL when unreadable
    sl_schema_t *own_schema;            //  parsed here when the caller had none
    bool hist_parsed;
    json_t *history;                    //  the earlier calls (sl_call_t.history), parsed
} s_eval_t;

static json_t *
s_args (s_eval_t *e)
{
    if (!e->parsed) {
        e->parsed = true;
        const sl_call_t *c = e->call;
        if (c->args_valid && c->arguments.ptr)
            e->args = json_loadb (c->arguments.ptr, c->arguments.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    }
    return e->args;
}

//  Why the call did not end cleanly; NONE when it did.
static sl_cut_t
s_cut (const sl_call_t *call)
{
    if (call->cut > SL_CUT_NONE && call->cut < SL_CUT_MAX)
        return call->cut;
    return call->args_valid ? SL_CUT_NONE : SL_CUT_INVALID;
}

//  The arguments argument tests see: the valid ones, or for a call that
//  did not end cleanly, what came of them closed into JSON.
static json_t *
s_seen_args (s_eval_t *e)
{
    if (s_args (e) || s_cut (e->call) == SL_CUT_NONE)
        return s_args (e);
    if (!e->closed) {
        e->closed = true;
        sl_buf_t closed = { 0 };
        if (sl_json_close (e->call->arguments, &closed) == 0)
            e->seen = json_loadb (closed.data, closed.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
        sl_buf_free (&closed);
    }
    return e->seen;
}

//  Does the call violate its tool's schema? why gets the first violation.
static bool
s_violates (s_eval_t *e, sl_buf_t *why)
{
    const sl_call_t *c = e->call;
    sl_schema_t *schema = c->schema;
    if (!schema) {
        if (!e->own_schema)
            e->own_schema = sl_schema_new (c->tools);
        schema = e->own_schema;
    }
    return sl_schema_check (schema, c->name, s_args (e), why) != 0;
}

//  Did the conversation make, for every entry, some earlier call that
//  matches it? Calls whose arguments were not JSON pass no args test.
static bool
s_history_match (const sl_policy_rule_t *r, s_eval_t *e)
{
    if (!e->hist_parsed) {
        e->hist_parsed = true;
        sl_str_t h = e->call->history;
        if (h.ptr && h.len)
            e->history = json_loadb (h.ptr, h.len, JSON_ALLOW_NUL, NULL);
    }
    if (!json_is_array (e->history))
        return false;
    for (int k = 0; k < r->history_count; k++) {
        const sl_policy_past_t *past = &r->history [k];
        bool found = false;
        size_t i;
        json_t *call;
        json_array_foreach (e->history, i, call) {
            json_t *name = json_object_get (call, "name");
            if (past->tools.count
            &&  !sl_policy_match_names (&past->tools, sl_str_n (json_string_value (name), json_string_length (name))))
                continue;
            json_t *args = json_object_get (call, "args");
            bool ok = true;
            for (int j = 0; ok && j < past->arg_count; j++)
                ok = args && sl_policy_match_arg (&past->args [j], args);
            if (ok) {
                found = true;
                break;
            }
        }
        if (!found)
            return false;
    }
    return true;
}

//  Would the rule let a call through? (Then it must not apply to a call
//  that did not end cleanly unless it says so: a prefix of the arguments
//  can show harm, never the absence of it.)
static bool
s_rule_passes (const sl_policy_rule_t *r)
{
    return r->action == SL_ACT_ALLOW || r->action == SL_ACT_REWRITE || r->llm || r->ask;
}

//  The conditions of rule r; detail gets what made a schema rule match.
static bool
s_rule_matches (const sl_policy_rule_t *r, s_eval_t *e, sl_buf_t *detail)
{
    const sl_call_t *c = e->call;
    sl_cut_t cut = s_cut (c);
    sl_buf_reset (detail);              //  what an earlier rule that did not match said is not this one's
    if (r->on_request || r->on_text)
        return false;                   //  a rule for the request or the text, not for calls
    if (!sl_policy_tools_match (e->policy, r, c->name))
        return false;
    if (r->definitions) {
        if (!e->digest_read) {
            e->digest_read = true;
            if (sl_policy_tools_call_digest (c->tool_digests, c->name, e->digest_text))
                e->digest = sl_str (e->digest_text);
        }
        if (!sl_policy_tools_definition_match (e->policy, r, c->team, c->name, e->digest))
            return false;
        sl_buf_reset (detail);
        sl_policy_tools_explain (e->policy, c->team, c->name, e->digest, detail);
    }
    if (r->incomplete != SL_FLAG_ANY && (r->incomplete == SL_FLAG_YES) != (cut != SL_CUT_NONE))
        return false;
    if (r->cuts && !(cut != SL_CUT_NONE && (r->cuts & (1u << cut))))
        return false;
    if (cut != SL_CUT_NONE && s_rule_passes (r) && r->incomplete != SL_FLAG_YES && !r->cuts)
        return false;
    if (r->models.count && !sl_policy_match_names (&r->models, c->model))
        return false;
    if (r->max_calls >= 0 && c->ordinal <= r->max_calls)
        return false;
    //  Arguments the aggregator found valid but that cannot be read here
    //  (nesting beyond jansson's limit, say) are invalid for the policy too.
    if (r->args_invalid != SL_FLAG_ANY && (r->args_invalid == SL_FLAG_YES) != !s_args (e))
        return false;
    if (r->args_repaired != SL_FLAG_ANY && (r->args_repaired == SL_FLAG_YES) != c->repaired)
        return false;
    for (int i = 0; i < r->header_count; i++)
        if (!sl_policy_match_header (&r->headers [i], c->headers))
            return false;
    if (r->arg_count) {
        json_t *args = s_seen_args (e);
        if (!args)
            return false;               //  no argument test passes on unreadable arguments
        for (int i = 0; i < r->arg_count; i++)
            if (!sl_policy_match_arg (&r->args [i], args))
                return false;
    }
    if (r->history_count && !s_history_match (r, e))
        return false;
    if (r->schema_violation != SL_FLAG_ANY) {
        sl_buf_reset (detail);
        bool violates = s_violates (e, detail);
        if ((r->schema_violation == SL_FLAG_YES) != violates)
            return false;
    }
    if ((r->tainted != SL_FLAG_ANY || r->tainted_by.count) && !sl_taint_holds (r, c->taint, detail))
        return false;
    return true;
}

//  --------------------------------------------------------------------------
//  What a rule does

static char *
s_render (const char *tmpl, const sl_call_t *call, const char *rule, const char *reason)
{
    return sl_policy_render (tmpl, call->name, s_cut (call), rule, reason);
}

//  Set (value) or delete (value NULL) at tokens in root; creates missing
//  objects on the way. 0 ok, -1 when the path cannot exist.
static int
s_edit (json_t *root, const sl_policy_edit_t *e)
{
    json_t *node = root;
    for (int i = 0; i < e->token_count; i++) {
        const char *t = e->tokens [i];
        bool last = i == e->token_count - 1;
        //  Values are copied in: the policy's own must never change.
        json_t *value = last && e->value ? json_deep_copy (e->value) : NULL;
        if (json_is_object (node)) {
            if (last)
                return value ? json_object_set_new (node, t, value) : (json_object_del (node, t), 0);
            json_t *next = json_object_get (node, t);
            if (!next && !e->value)
                return 0;               //  nothing to delete
            if (!next) {
                //  "/list/-" appends to a list that does not exist yet.
                next = strcmp (e->tokens [i + 1], "-") == 0 ? json_array () : json_object ();
                json_object_set_new (node, t, next);
            }
            node = next;
        }
        else
        if (json_is_array (node)) {
            size_t size = json_array_size (node);
            bool append = strcmp (t, "-") == 0;
            char *end = NULL;
            long k = append ? (long) size : strtol (t, &end, 10);
            if (!append && (!*t || *end || k < 0)) {
                json_decref (value);
                return -1;
            }
            if (last) {
                if (!value)
                    return (size_t) k < size ? json_array_remove (node, (size_t) k) : 0;
                if ((size_t) k < size)
                    return json_array_set_new (node, (size_t) k, value);
                if ((size_t) k == size)
                    return json_array_append_new (node, value);
                json_decref (value);
                return -1;
            }
            node = json_array_get (node, (size_t) k);
            if (!node)
                return e->value ? -1 : 0;
        }
        else {
            json_decref (value);
            return -1;
        }
    }
    return -1;                          //  an empty pointer is refused at load time
}

//  The rule's edits applied to a copy of the arguments.
static char *
s_rewrite (const sl_policy_rule_t *r, json_t *args, sl_buf_t *why)
{
    if (!json_is_object (args)) {
        sl_buf_puts (why, "the arguments are not a JSON object");
        return NULL;
    }
    json_t *copy = json_deep_copy (args);
    for (int i = 0; i < r->edit_count; i++)
        if (s_edit (copy, &r->edits [i])) {
            sl_buf_printf (why, "cannot %s %s", r->edits [i].value ? "set" : "delete", r->edits [i].pointer);
            json_decref (copy);
            return NULL;
        }
    char *text = json_dumps (copy, JSON_COMPACT);
    json_decref (copy);
    return text;
}

//  Take rule r's action for the call, with reason (copied).
static void
s_take_action (const sl_policy_rule_t *r, s_eval_t *e, sl_action_t action, const char *reason, sl_decision_t *d)
{
    d->action = action;
    d->rule = r->id;
    if (action == SL_ACT_REWRITE) {
        sl_buf_t why = { 0 };
        char *text = s_rewrite (r, s_args (e), &why);
        if (!text) {
            //  A rewrite that cannot be applied must not let the call pass
            //  as it was: the call is blocked and the check marked failed.
            d->action = SL_ACT_BLOCK;
            d->check = SL_CHK_ERROR;
            sl_buf_t r2 = { 0 };
            sl_buf_printf (&r2, "%s; rewrite failed: %s", reason, sl_buf_cstr (&why));
            d->reason = sl_xstrdup (sl_buf_cstr (&r2));
            sl_buf_free (&r2);
            sl_buf_free (&why);
            d->message = s_render (r->message ? r->message : S_DEFAULT_BLOCK, e->call, r->id, d->reason);
            return;
        }
        sl_buf_free (&why);
        //  json_dumps allocates with jansson's allocator (malloc by default);
        //  copy so the decision owns memory freed with free ().
        d->arguments = sl_xstrdup (text);
        free (text);
    }
    d->reason = sl_xstrdup (reason);
    if (action == SL_ACT_BLOCK || action == SL_ACT_TERMINATE)
        d->message = s_render (r->message ? r->message
                             : action == SL_ACT_BLOCK ? S_DEFAULT_BLOCK : S_DEFAULT_TERMINATE,
                               e->call, r->id, d->reason);
}

static void
s_eval_clear (s_eval_t *e)
{
    json_decref (e->args);
    json_decref (e->seen);
    json_decref (e->history);
    sl_schema_destroy (&e->own_schema);
}

//  --------------------------------------------------------------------------
//  Deciding

//  Say in a reason why the call did not end cleanly, when it did not.
static void
s_note_cut (sl_buf_t *reason, const sl_call_t *call)
{
    if (s_cut (call) != SL_CUT_NONE)
        sl_buf_printf (reason, "; the call was cut off (%s)", sl_cut_name (s_cut (call)));
}

//  Does some rule concern the tool: name it, or name no tool at all?
//  (Rules in shadow mode only when judging as if they were enforced.)
static bool
s_concerns (sl_policy_t *self, sl_str_t name, bool as_if)
{
    for (int i = 0; i < self->rule_count; i++)
        if (!self->rules [i].on_request && !self->rules [i].on_text && (as_if || !self->rules [i].shadow)
        &&  sl_policy_tools_match (self, &self->rules [i], name))
            return true;
    return false;
}

//  A call over a size bound was not kept whole, so nothing of it can be
//  released: a decision to let it through becomes a block.
static void
s_hold_oversize (sl_policy_t *self, const sl_call_t *call, sl_decision_t *d)
{
    if (s_cut (call) != SL_CUT_SIZE || (d->action != SL_ACT_ALLOW && d->action != SL_ACT_REWRITE))
        return;
    sl_buf_t reason = { 0 };
    sl_buf_printf (&reason, "%s; a call over a size bound is never released", d->reason ? d->reason : "");
    free (d->reason);
    d->reason = sl_xstrdup (sl_buf_cstr (&reason));
    sl_buf_free (&reason);
    free (d->arguments);
    d->arguments = NULL;
    free (d->message);
    const char *tmpl = self->incomplete_action == SL_ACT_BLOCK && self->incomplete_message
                     ? self->incomplete_message : S_INCOMPLETE_BLOCK;
    d->message = s_render (tmpl, call, d->rule ? d->rule : "default", d->reason);
    d->action = SL_ACT_BLOCK;
}

//  No rule matched: the default, or on_incomplete for a call that did not
//  end cleanly when some rule concerns its tool. A file in shadow mode
//  enforces neither: the call passes as it would without a policy.
static void
s_take_default (sl_policy_t *self, const sl_call_t *call, bool as_if, sl_decision_t *out)
{
    sl_cut_t cut = s_cut (call);
    bool incomplete = cut != SL_CUT_NONE && s_concerns (self, call->name, as_if);
    sl_buf_t reason = { 0 };
    out->check = SL_CHK_DEFAULT;
    const char *tmpl = NULL;
    if (self->shadow && !as_if) {
        out->action = SL_ACT_ALLOW;
        sl_buf_puts (&reason, "no enforcing rule matched; the policy's default is in shadow mode");
        s_note_cut (&reason, call);
    }
    else
    if (incomplete) {
        out->action = self->incomplete_action;
        out->rule = S_ON_INCOMPLETE;
        sl_buf_printf (&reason, "no rule matched a call that was cut off (%s); on_incomplete: %s",
                       sl_cut_name (cut), sl_action_name (out->action));
        tmpl = self->incomplete_message ? self->incomplete_message
             : out->action == SL_ACT_BLOCK ? S_INCOMPLETE_BLOCK : S_INCOMPLETE_TERMINATE;
    }
    else {
        out->action = self->default_action;
        sl_buf_puts (&reason, "no rule matched");
        s_note_cut (&reason, call);
        tmpl = self->default_message ? self->default_message
             : out->action == SL_ACT_BLOCK ? S_DEFAULT_BLOCK : S_DEFAULT_TERMINATE;
    }
    out->reason = sl_xstrdup (sl_buf_cstr (&reason));
    sl_buf_free (&reason);
    if (out->action == SL_ACT_BLOCK || out->action == SL_ACT_TERMINATE)
        out->message = s_render (tmpl, call, out->rule ? out->rule : "default", out->reason);
}

//  Judge the call; as_if: rules in shadow mode as if they were enforced
//  (else they are skipped). Returns the index of the deciding rule, -1
//  for the default.
static int
s_decide (sl_policy_t *self, const sl_call_t *call, bool as_if, sl_decision_t *out)
{
    sl_decision_init (out);
    s_eval_t e = { .call = call, .policy = self };
    sl_buf_t detail = { 0 };
    for (int i = 0; i < self->rule_count; i++) {
        const sl_policy_rule_t *r = &self->rules [i];
        if (r->shadow && !as_if)
            continue;
        sl_buf_reset (&detail);         //  what made an earlier rule nearly match says nothing here
        if (!s_rule_matches (r, &e, &detail))
            continue;
        out->check = SL_CHK_RAN;
        if (r->llm || r->ask) {
            out->rule = r->id;
            out->llm_rule = i;
            out->judge_model = r->llm ? r->llm->model : NULL;
        }
        else {
            sl_buf_t reason = { 0 };
            sl_buf_printf (&reason, "rule %s matched", r->id);
            if (detail.len)
                sl_buf_printf (&reason, ": %s", sl_buf_cstr (&detail));
            s_note_cut (&reason, call);
            s_take_action (r, &e, r->action, sl_buf_cstr (&reason), out);
            sl_buf_free (&reason);
            s_hold_oversize (self, call, out);
        }
        sl_buf_free (&detail);
        s_eval_clear (&e);
        return i;
    }
    sl_buf_free (&detail);
    s_eval_clear (&e);
    s_take_default (self, call, as_if, out);
    s_hold_oversize (self, call, out);
    return -1;
}

void
sl_policy_decide (sl_policy_t *self, const sl_call_t *call, sl_decision_t *out)
{
    s_decide (self, call, false, out);
}

bool
sl_policy_decide_shadow (sl_policy_t *self, const sl_call_t *call, bool whole, sl_decision_t *out)
{
    sl_decision_init (out);
    if (!whole && !self->shadow && self->shadow_count == 0)
        return false;
    int rule = s_decide (self, call, true, out);
    bool shadowed = whole || self->shadow || (rule >= 0 && self->rules [rule].shadow);
    if (!shadowed) {
        sl_decision_clear (out);
        sl_decision_init (out);
        return false;
    }
    if (rule >= 0 && self->rules [rule].ask) {
        //  Nobody is asked in shadow: the verdict says a person would have
        //  been, and what a denial does.
        const sl_policy_rule_t *r = &self->rules [rule];
        sl_buf_t reason = { 0 };
        sl_buf_printf (&reason, "rule %s would ask a person (shadow mode: nobody was asked); a denial would %s",
                       r->id, sl_action_name (r->action));
        s_note_cut (&reason, call);
        out->action = r->action;
        out->check = SL_CHK_WOULD_ASK;
        out->llm_rule = -1;
        out->reason = sl_xstrdup (sl_buf_cstr (&reason));
        sl_buf_free (&reason);
    }
    return true;
}

void
sl_policy_llm_prompt (sl_policy_t *self, int rule, const sl_call_t *call, sl_buf_t *out)
{
    const sl_llm_spec_t *spec = sl_policy_llm_spec (self, rule);
    if (spec)
        sl_llm_render_prompt (spec->prompt, call->name, call->arguments, call->last_user, call->model, out);
}

//  A decision service's check did not run cleanly (no answer, a bad one,
//  a rewrite that does not fit): on_error, and the reason says why.
static void
s_decide_failed (const sl_policy_rule_t *r, const sl_call_t *call, const char *why, sl_decision_t *d)
{
    sl_buf_t reason = { 0 };
    sl_buf_printf (&reason, "decision service %s: %s; on_error: %s",
                   d->check == SL_CHK_TIMEOUT ? "timed out" : "failed", why, sl_action_name (r->llm->on_error));
    s_note_cut (&reason, call);
    d->action = r->llm->on_error;
    d->reason = sl_xstrdup (sl_buf_cstr (&reason));
    if (d->action == SL_ACT_BLOCK || d->action == SL_ACT_TERMINATE)
        d->message = s_render (r->message ? r->message
                             : d->action == SL_ACT_BLOCK ? S_DEFAULT_BLOCK : S_DEFAULT_TERMINATE,
                               call, r->id, d->reason);
    sl_buf_free (&reason);
}

//  Finish a decision service's pending decision (sl_policy.h): deny takes
//  the rule's action, allow lets the call run (rewritten, when the
//  service's rewrite matches the tool's schema from the request).
static void
s_conclude_decide (const sl_policy_rule_t *r, const sl_call_t *call, const sl_llm_result_t *result,
                   sl_decision_t *d)
{
    d->rule = r->id;
    d->probability = NAN;
    d->judge_model = NULL;
    d->check = result->check == SL_CHK_RAN ? SL_CHK_RAN
             : result->check == SL_CHK_TIMEOUT ? SL_CHK_TIMEOUT : SL_CHK_ERROR;
    if (d->check != SL_CHK_RAN) {
        s_decide_failed (r, call, result->error ? result->error : "no answer", d);
        return;
    }
    const char *said = result->explanation && *result->explanation ? result->explanation : "no reason given";
    s_eval_t e = { .call = call };
    sl_buf_t reason = { 0 };
    if (!result->allow) {
        sl_buf_printf (&reason, "decision service denied: %s", said);
        s_note_cut (&reason, call);
        s_take_action (r, &e, r->action, sl_buf_cstr (&reason), d);
    }
    else
    if (result->rewrite) {
        json_t *args = json_loads (result->rewrite, JSON_ALLOW_NUL, NULL);
        sl_schema_t *schema = call->schema ? call->schema : (e.own_schema = sl_schema_new (call->tools));
        sl_buf_t violation = { 0 };
        if (args && sl_schema_check (schema, call->name, args, &violation) == 0) {
            sl_buf_printf (&reason, "decision service allowed with a rewrite: %s", said);
            s_note_cut (&reason, call);
            d->action = SL_ACT_REWRITE;
            d->arguments = sl_xstrdup (result->rewrite);
            d->reason = sl_xstrdup (sl_buf_cstr (&reason));
        }
        else {
            //  The service's arguments are not what the tool takes: they
            //  are not run, and neither is the call as the model sent it.
            d->check = SL_CHK_ERROR;
            sl_buf_printf (&reason, "its rewrite does not match the tool's schema (%s)",
                           violation.len ? sl_buf_cstr (&violation) : "not a JSON object");
            s_decide_failed (r, call, sl_buf_cstr (&reason), d);
        }
        sl_buf_free (&violation);
        json_decref (args);
    }
    else {
        sl_buf_printf (&reason, "decision service allowed: %s", said);
        s_note_cut (&reason, call);
        d->action = SL_ACT_ALLOW;
        d->reason = sl_xstrdup (sl_buf_cstr (&reason));
    }
    sl_buf_free (&reason);
    s_eval_clear (&e);
}

void
sl_policy_conclude (sl_policy_t *self, const sl_call_t *call,
                    const sl_llm_result_t *result, sl_decision_t *d)
{
    int index = d->llm_rule;
    if (index >= 0 && index < self->rule_count && self->rules [index].ask) {
        sl_ask_conclude (&self->rules [index], call, result, d);
        s_hold_oversize (self, call, d);
        return;
    }
    const sl_llm_spec_t *spec = sl_policy_llm_spec (self, index);
    if (!spec)
        return;                         //  not a pending decision of this policy
    const sl_policy_rule_t *r = &self->rules [index];
    if (spec->kind == SL_LLM_DECIDE) {
        s_conclude_decide (r, call, result, d);
        d->llm_rule = -1;
        s_hold_oversize (self, call, d);
        return;
    }
    s_eval_t e = { .call = call, .policy = self };
    sl_buf_t reason = { 0 };
    d->rule = r->id;
    bool harmful = sl_policy_llm_outcome (spec, result, d, &reason);
    s_note_cut (&reason, call);
    if (harmful)
        s_take_action (r, &e, r->action, sl_buf_cstr (&reason), d);
    else
    if (d->check == SL_CHK_RAN) {
        d->action = SL_ACT_ALLOW;
        d->reason = sl_xstrdup (sl_buf_cstr (&reason));
    }
    else {
        d->action = spec->on_error;
        d->reason = sl_xstrdup (sl_buf_cstr (&reason));
        if (d->action == SL_ACT_BLOCK)
            d->message = s_render (r->message ? r->message : S_DEFAULT_BLOCK, call, r->id, d->reason);
    }
    d->llm_rule = -1;
    sl_buf_free (&reason);
    s_eval_clear (&e);
    s_hold_oversize (self, call, d);
}
