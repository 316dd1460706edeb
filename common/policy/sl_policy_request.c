/*  sl_policy_request.c - judging a part of a request
    (sl_policy_decide_part, see sl_policy.h).

    Request rules (on: request) judge the request before it leaves for the
    upstream, one part at a time (the system prompt, each message's text,
    each tool result, each tool definition); text rules (on: text) flag a
    text block of the response the same way. On one part every matching
    redact rule applies, in order, each later rule seeing the text redacted
    so far, and the first matching rule with another action decides.
*/
#include "common/policy/sl_policy_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

#define S_DEFAULT_BLOCK_RESULT \
    "[sluice removed this result of {tool}: {reason} (policy rule {rule}). Do not retry it.]"
#define S_DEFAULT_REFUSE "sluice refused this request: {reason} (policy rule {rule})."

//  Does rule r apply to this part, whose text (redacted so far) is text?
static bool
s_part_matches (const sl_policy_t *self, const sl_policy_rule_t *r, const sl_rpart_t *part, sl_str_t text)
{
    if (!(r->on_request || r->on_text) || part->kind <= 0 || part->kind >= SL_RPART_MAX
    ||  !(r->parts & (1u << part->kind)))
        return false;
    if (!sl_policy_tools_match (self, r, part->tool))
        return false;
    if (r->definitions && !sl_policy_tools_definition_match (self, r, part->team, part->tool, part->digest))
        return false;
    if (r->is_error != SL_FLAG_ANY
    &&  (part->kind != SL_RPART_TOOL_RESULT || (r->is_error == SL_FLAG_YES) != part->is_error))
        return false;
    if (r->models.count && !sl_policy_match_names (&r->models, part->model))
        return false;
    if (r->size && !sl_policy_match_number (r->size, (double) text.len))
        return false;
    for (int i = 0; i < r->header_count; i++)
        if (!sl_policy_match_header (&r->headers [i], part->headers))
            return false;
    for (int i = 0; i < r->text_count; i++)
        if (!sl_policy_match_text (&r->texts [i], text))
            return false;
    if (r->action == SL_ACT_REDACT) {
        //  A redaction applies where one of its patterns matches.
        bool any = false;
        for (int i = 0; !any && i < r->redact_count; i++)
            any = sl_policy_match_regex (&r->redacts [i].regex, r->redacts [i].literal, text);
        if (!any)
            return false;
    }
    return true;
}

//  The rule's action on a part, with reason (copied).
static void
s_take_part_action (const sl_policy_rule_t *r, const sl_rpart_t *part, sl_action_t action, const char *reason,
                    sl_decision_t *d)
{
    d->action = action;
    d->rule = r->id;
    d->reason = sl_xstrdup (reason);
    if (action == SL_ACT_BLOCK_RESULT || action == SL_ACT_TERMINATE)
        d->message = sl_policy_render (r->message ? r->message
                                     : action == SL_ACT_BLOCK_RESULT ? S_DEFAULT_BLOCK_RESULT : S_DEFAULT_REFUSE,
                                       part->tool, SL_CUT_NONE, r->id, reason);
}

//  Replace every match of one pattern; the number of matches.
static size_t
s_redact_one (const sl_policy_redaction_t *red, sl_str_t text, sl_buf_t *out)
{
    if (red->literal && !memmem (text.ptr ? text.ptr : "", text.len, red->literal, strlen (red->literal)))
        return 0;
    const char *base = text.ptr ? text.ptr : "";
    size_t pos = 0, copied = 0, count = 0;
    while (pos <= text.len) {
        regmatch_t m = { .rm_so = (regoff_t) pos, .rm_eo = (regoff_t) text.len };
        if (regexec (&red->regex, base, 1, &m, REG_STARTEND | (pos ? REG_NOTBOL : 0)) != 0)
            break;
        size_t so = (size_t) m.rm_so, eo = (size_t) m.rm_eo;
        if (so < pos || eo < so || eo > text.len)
            break;                      //  not what REG_STARTEND promises; stop safely
        if (eo == so) {
            pos = so + 1;               //  an empty match replaces nothing
            continue;
        }
        sl_buf_append (out, base + copied, so - copied);
        sl_buf_puts (out, red->placeholder);
        copied = pos = eo;
        count++;
    }
    if (count)
        sl_buf_append (out, base + copied, text.len - copied);
    return count;
}

size_t
sl_policy_redact (sl_policy_t *self, int rule, sl_str_t text, sl_buf_t *out)
{
    if (rule < 0 || rule >= self->rule_count)
        return 0;
    const sl_policy_rule_t *r = &self->rules [rule];
    sl_buf_t bufs [2] = { { 0 }, { 0 } };
    int cur = -1;                       //  which buffer holds the text so far, -1: none
    size_t total = 0;
    for (int i = 0; i < r->redact_count; i++) {
        sl_buf_t *next = &bufs [cur == 0 ? 1 : 0];
        sl_buf_reset (next);
        size_t n = s_redact_one (&r->redacts [i], cur < 0 ? text : sl_buf_str (&bufs [cur]), next);
        if (n) {
            total += n;
            cur = cur == 0 ? 1 : 0;
            sl_buf_cstr (next);         //  the next pattern's regexec wants a NUL after
        }
    }
    if (total)
        sl_buf_append_str (out, sl_buf_str (&bufs [cur]));
    sl_buf_free (&bufs [0]);
    sl_buf_free (&bufs [1]);
    return total;
}

void
sl_policy_decide_part (sl_policy_t *self, const sl_rpart_t *part, sl_rdecision_t *out)
{
    memset (out, 0, sizeof *out);
    sl_decision_init (&out->decision);
    sl_decision_t *d = &out->decision;
    sl_str_t text = part->text;
    sl_buf_t bufs [2] = { { 0 }, { 0 } };
    int cur = 0;
    for (int i = 0; i < self->rule_count; i++) {
        const sl_policy_rule_t *r = &self->rules [i];
        if (!s_part_matches (self, r, part, text))
            continue;
        if (r->action == SL_ACT_REDACT) {
            if (out->redact_count < SL_POLICY_MAX_REDACTS)
                out->redacts [out->redact_count++] = i;
            sl_buf_t *next = &bufs [cur ^ 1];
            sl_buf_reset (next);
            if (sl_policy_redact (self, i, text, next)) {
                cur ^= 1;
                sl_buf_cstr (next);     //  regexec (and its sanitizer) want a NUL after
                text = sl_buf_str (next);
            }
            continue;
        }
        d->check = SL_CHK_RAN;
        d->rule = r->id;
        if (r->llm) {
            d->llm_rule = i;
            d->judge_model = r->llm->model;
        }
        else {
            sl_buf_t reason = { 0 };
            sl_buf_printf (&reason, "rule %s matched", r->id);
            if (r->definitions) {
                sl_buf_puts (&reason, ": ");
                sl_policy_tools_explain (self, part->team, part->tool, part->digest, &reason);
            }
            s_take_part_action (r, part, r->action, sl_buf_cstr (&reason), d);
            sl_buf_free (&reason);
        }
        sl_buf_free (&bufs [0]);
        sl_buf_free (&bufs [1]);
        return;
    }
    sl_buf_free (&bufs [0]);
    sl_buf_free (&bufs [1]);
    d->action = SL_ACT_ALLOW;
    d->check = SL_CHK_DEFAULT;
    d->reason = sl_xstrdup ("no request rule decided");
}

void
sl_policy_llm_prompt_part (sl_policy_t *self, int rule, const sl_rpart_t *part, sl_buf_t *out)
{
    const sl_llm_spec_t *spec = sl_policy_llm_spec (self, rule);
    if (spec)
        sl_llm_render_prompt (spec->prompt, part->tool, part->text, SL_STR_NULL, part->model, out);
}

void
sl_policy_conclude_part (sl_policy_t *self, const sl_rpart_t *part,
                         const sl_llm_result_t *result, sl_decision_t *d)
{
    int index = d->llm_rule;
    const sl_llm_spec_t *spec = sl_policy_llm_spec (self, index);
    if (!spec || !self->rules [index].on_request)
        return;                         //  not a pending part decision of this policy
    const sl_policy_rule_t *r = &self->rules [index];
    sl_buf_t reason = { 0 };
    d->rule = r->id;
    bool harmful = sl_policy_llm_outcome (spec, result, d, &reason);
    //  A check that did not run takes on_error, and block means the rule's action.
    if (harmful || (d->check != SL_CHK_RAN && spec->on_error != SL_ACT_ALLOW))
        s_take_part_action (r, part, r->action, sl_buf_cstr (&reason), d);
    else {
        d->action = SL_ACT_ALLOW;
        d->reason = sl_xstrdup (sl_buf_cstr (&reason));
    }
    d->llm_rule = -1;
    sl_buf_free (&reason);
}

void
sl_rdecision_clear (sl_rdecision_t *self)
{
    sl_decision_clear (&self->decision);
    self->redact_count = 0;
}
