/*  sl_policy.c - the policy model: its life cycle, what it says about
    itself, decisions and their notices.

    The model (sl_policy_impl.h) is built by the loader (sl_policy_load.c)
    and read by the evaluations (sl_policy_call.c, sl_policy_request.c);
    this file makes and frees it and holds what the evaluations share
    about their outcome: an empty decision, a notice rendered from its
    template, an LLM judge's answer turned into a check and a reason.
*/
#include "common/policy/sl_policy_impl.h"

#include <ctype.h>
#include <czmq.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

//  --------------------------------------------------------------------------
//  Life cycle

void
sl_policy_tokens_free (char **tokens, int count)
{
    for (int i = 0; i < count; i++)
        free (tokens [i]);
    free (tokens);
}

static void
s_matcher_free (sl_policy_matcher_t *m)
{
    if (m->ops & SL_OP_REGEX)
        regfree (&m->regex);
    free (m->literal);
    free (m->pointer);
    sl_policy_tokens_free (m->tokens, m->token_count);
    json_decref (m->equals);
    json_decref (m->contains);
    free (m->prefix);
}

void
sl_policy_names_free (sl_policy_names_t *n)
{
    for (int i = 0; i < n->count; i++)
        free (n->names [i]);
    free (n->names);
    free (n->globs);
}

static void
s_matchers_free (sl_policy_matcher_t *m, int count)
{
    for (int i = 0; i < count; i++)
        s_matcher_free (&m [i]);
    free (m);
}

static void
s_rule_free (sl_policy_rule_t *r)
{
    s_matchers_free (r->texts, r->text_count);
    s_matchers_free (r->size, r->size ? 1 : 0);
    for (int i = 0; i < r->redact_count; i++) {
        regfree (&r->redacts [i].regex);
        free (r->redacts [i].literal);
        free (r->redacts [i].placeholder);
    }
    free (r->redacts);
    for (int i = 0; i < r->history_count; i++) {
        sl_policy_names_free (&r->history [i].tools);
        s_matchers_free (r->history [i].args, r->history [i].arg_count);
    }
    free (r->history);
    for (int i = 0; i < r->arg_count; i++)
        s_matcher_free (&r->args [i]);
    free (r->args);
    for (int i = 0; i < r->header_count; i++)
        s_matcher_free (&r->headers [i]);
    free (r->headers);
    for (int i = 0; i < r->edit_count; i++) {
        sl_policy_tokens_free (r->edits [i].tokens, r->edits [i].token_count);
        free (r->edits [i].pointer);
        json_decref (r->edits [i].value);
    }
    free (r->edits);
    sl_policy_names_free (&r->tools);
    sl_policy_names_free (&r->servers);
    sl_policy_names_free (&r->models);
    sl_policy_names_free (&r->tainted_by);
    if (r->llm) {
        sl_llm_spec_clear (r->llm);
        free (r->llm);
    }
    if (r->ask) {
        sl_ask_spec_free (r->ask);
        free (r->ask);
    }
    free (r->id);
    free (r->message);
}

void
sl_policy_free (sl_policy_t *self)
{
    for (int i = 0; i < self->rule_count; i++)
        s_rule_free (&self->rules [i]);
    free (self->rules);
    sl_policy_trust_free (self);
    free (self->name);
    free (self->default_message);
    free (self->incomplete_message);
    free (self->source);
    for (int i = 0; i < self->file_count; i++)
        free (self->files [i]);
    free (self->files);
    sl_policy_tools_free (self);
    free (self);
}

void
sl_policy_digest (const char *text, size_t size, char *id)
{
    zdigest_t *digest = zdigest_new ();
    zdigest_update (digest, (const byte *) text, size);
    const char *hex = zdigest_string (digest);
    for (int i = 0; i < SL_POLICY_ID_SIZE - 1; i++)
        id [i] = (char) tolower ((unsigned char) hex [i]);
    id [SL_POLICY_ID_SIZE - 1] = 0;
    zdigest_destroy (&digest);
}

sl_policy_t *
sl_policy_new (const char *name, const char *text, size_t size)
{
    sl_policy_t *self = sl_xcalloc (1, sizeof *self);
    self->refs = 1;
    self->name = sl_xstrdup (name);
    self->default_action = SL_ACT_ALLOW;
    self->incomplete_action = SL_ACT_BLOCK;
    self->source = sl_xstrndup (text, size);
    sl_policy_digest (text, size, self->id);
    return self;
}

sl_policy_t *
sl_policy_allow_all (void)
{
    sl_policy_t *self = sl_policy_new ("(allow all)", "", 0);
    snprintf (self->id, sizeof self->id, "%s", SL_POLICY_ALLOW_ALL_ID);
    return self;
}

sl_policy_t *
sl_policy_unloaded (const char *name)
{
    sl_policy_t *self = sl_policy_new (name, "", 0);
    snprintf (self->id, sizeof self->id, "%s", SL_POLICY_UNLOADED_ID);
    self->default_action = SL_ACT_BLOCK;
    return self;
}

sl_policy_t *
sl_policy_ref (sl_policy_t *self)
{
    self->refs++;
    return self;
}

void
sl_policy_unref (sl_policy_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    if (--(*self_p)->refs == 0)
        sl_policy_free (*self_p);
    *self_p = NULL;
}

//  --------------------------------------------------------------------------
//  What a policy says about itself

const char *
sl_policy_id (sl_policy_t *self)
{
    return self->id;
}

sl_str_t
sl_policy_source (sl_policy_t *self)
{
    return sl_str (self->source);
}

int sl_policy_request_count (sl_policy_t *self) { return self->request_count; }
int sl_policy_text_count (sl_policy_t *self) { return self->text_count; }
bool sl_policy_uses_history (sl_policy_t *self) { return self->uses_history; }

const char *
sl_policy_rule_id (sl_policy_t *self, int rule)
{
    return rule >= 0 && rule < self->rule_count ? self->rules [rule].id : NULL;
}

int sl_policy_rule_count (sl_policy_t *self) { return self->rule_count; }
int sl_policy_file_count (sl_policy_t *self) { return self->file_count; }

const char *
sl_policy_file (sl_policy_t *self, int index)
{
    return index >= 0 && index < self->file_count ? self->files [index] : NULL;
}
const char *sl_policy_name (sl_policy_t *self) { return self->name; }
bool sl_policy_uses_schema (sl_policy_t *self) { return self->uses_schema; }
int sl_policy_llm_count (sl_policy_t *self) { return self->llm_count; }
int sl_policy_ask_count (sl_policy_t *self) { return self->ask_count; }
int sl_policy_shadow_count (sl_policy_t *self) { return self->shadow_count; }
bool sl_policy_is_shadow (sl_policy_t *self) { return self->shadow; }

const sl_ask_spec_t *
sl_policy_ask_spec (sl_policy_t *self, int rule)
{
    return rule >= 0 && rule < self->rule_count ? self->rules [rule].ask : NULL;
}
int sl_policy_decide_count (sl_policy_t *self) { return self->decide_count; }

const sl_llm_spec_t *
sl_policy_llm_spec (sl_policy_t *self, int rule)
{
    return rule >= 0 && rule < self->rule_count ? self->rules [rule].llm : NULL;
}

//  --------------------------------------------------------------------------
//  Decisions and notices

void
sl_decision_init (sl_decision_t *d)
{
    memset (d, 0, sizeof *d);
    d->llm_rule = -1;
    d->probability = NAN;
}

void
sl_decision_clear (sl_decision_t *decision)
{
    free (decision->reason);
    free (decision->message);
    free (decision->arguments);
    free (decision->approver);
    sl_decision_init (decision);
}

//  Fill a notice template: {tool}, {rule}, {reason}, {cut}.
char *
sl_policy_render (const char *tmpl, sl_str_t tool, sl_cut_t cut, const char *rule, const char *reason)
{
    sl_buf_t out = { 0 };
    for (const char *p = tmpl; *p; p++) {
        if (strncmp (p, "{tool}", 6) == 0) {
            sl_buf_append_str (&out, tool.ptr ? tool : SL_STR_LIT (""));
            p += 5;
        }
        else
        if (strncmp (p, "{rule}", 6) == 0) {
            sl_buf_puts (&out, rule);
            p += 5;
        }
        else
        if (strncmp (p, "{reason}", 8) == 0) {
            sl_buf_puts (&out, reason ? reason : "");
            p += 7;
        }
        else
        if (strncmp (p, "{cut}", 5) == 0) {
            if (cut != SL_CUT_NONE)
                sl_buf_puts (&out, sl_cut_name (cut));
            p += 4;
        }
        else
            sl_buf_putc (&out, *p);
    }
    char *s = sl_xstrdup (sl_buf_cstr (&out));
    sl_buf_free (&out);
    return s;
}

bool
sl_policy_llm_outcome (const sl_llm_spec_t *spec, const sl_llm_result_t *result,
                       sl_decision_t *d, sl_buf_t *reason)
{
    d->judge_model = spec->model;
    if (result->check == SL_CHK_RAN) {
        d->check = SL_CHK_RAN;
        d->probability = result->probability;
        bool harmful = result->probability >= spec->threshold;
        sl_buf_printf (reason, "LLM judge %s: p=%.2f %s %.2f", spec->model, result->probability,
                       harmful ? ">=" : "<", spec->threshold);
        if (result->explanation && *result->explanation)
            sl_buf_printf (reason, ": %s", result->explanation);
        return harmful;
    }
    d->check = result->check == SL_CHK_TIMEOUT ? SL_CHK_TIMEOUT : SL_CHK_ERROR;
    d->probability = NAN;
    sl_buf_printf (reason, "LLM judge %s %s: %s; on_error: %s", spec->model,
                   d->check == SL_CHK_TIMEOUT ? "timed out" : "failed",
                   result->error ? result->error : "no answer", sl_action_name (spec->on_error));
    return false;
}
