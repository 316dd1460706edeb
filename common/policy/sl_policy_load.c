/*  sl_policy_load.c - a policy file to the model (see sl_policy.h).

    The document: its top-level settings (version, default, message,
    on_incomplete), the rule list, each rule, and what each kind of rule
    (a tool call's, on: request, on: text) may say and do. Every error
    names the file, line, column and reason (sl_policy_yaml.c); a rule's
    structured fields are read by sl_policy_fields.c. Evaluating the model
    is sl_policy_call.c's and sl_policy_request.c's.

    A file's includes are loaded first (each a policy of its own, loaded
    the same way), then the file; the included rules are moved in front
    of the file's own, so evaluation sees one list and knows nothing of
    includes.
*/
#include "common/policy/sl_policy_impl.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/llm/sl_decide.h"

#define SL_POLICY_MAX_FILE (4u << 20)   //  bytes
//  Part kinds a request rule applies to when it names none.
#define S_PARTS_DEFAULT ((1u << SL_RPART_SYSTEM) | (1u << SL_RPART_USER) | (1u << SL_RPART_TOOL_RESULT))
#define S_PARTS_RESULTS (1u << SL_RPART_TOOL_RESULT)
#define S_MAX_INCLUDE_DEPTH 8           //  files in a chain of includes
#define S_MAX_INCLUDES 16               //  files one file includes

//  The files being loaded, outermost first (real paths): an include of
//  one of them is a cycle. NULL for a text parsed without a file.
typedef struct {
    const char *chain [S_MAX_INCLUDE_DEPTH];
    int depth;
} s_chain_t;

//  The policies a file includes, loaded, in the order named.
typedef struct {
    sl_policy_t *policy [S_MAX_INCLUDES];
    int count;
} s_bases_t;

static sl_policy_t *s_load (const char *path, s_chain_t *chain, char **error);

//  --------------------------------------------------------------------------
//  Flags and actions

static int
s_parse_flag (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *what, sl_policy_flag_t *out)
{
    bool b;
    if (sl_policy_yaml_bool (ctx, node, what, &b))
        return -1;
    *out = b ? SL_FLAG_YES : SL_FLAG_NO;
    return 0;
}

static int
s_parse_action (sl_policy_yaml_t *ctx, yaml_node_t *node, bool is_default, sl_action_t *out)
{
    const char *v = sl_policy_yaml_scalar (node);
    int action = v ? sl_action_parse (v) : 0;
    if (is_default && (action == SL_ACT_REWRITE || action == SL_ACT_REDACT || action == SL_ACT_BLOCK_RESULT
                       || action == SL_ACT_WITHHOLD || action == 0)) {
        sl_policy_yaml_error (ctx, node, "default must be allow, block, drop or terminate");
        return -1;
    }
    if (action == 0) {
        sl_policy_yaml_error (ctx, node, "action must be allow, block, drop, rewrite or terminate (on: request: "
                              "allow, redact, block_result, withhold or terminate)");
        return -1;
    }
    *out = (sl_action_t) action;
    return 0;
}

//  --------------------------------------------------------------------------
//  Rules

//  decide: a decision service, which a rule asks instead of an LLM judge.
static int
s_parse_decide (sl_policy_yaml_t *ctx, yaml_node_t *k, yaml_node_t *v, sl_policy_rule_t *r)
{
    if (r->llm) {
        sl_policy_yaml_error (ctx, k, r->llm->kind == SL_LLM_DECIDE ? "decide given twice"
                                      : "a rule asks an llm_judge or a decide service, not both");
        return -1;
    }
    r->llm = sl_xmalloc (sizeof *r->llm);
    sl_decide_spec_defaults (r->llm);
    return sl_policy_fields_decide (ctx, v, r->llm);
}

//  What a rule that asks a decision service may be: one of a tool call,
//  acting on the calls the service denies.
static int
s_check_decide_rule (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_rule_t *r, bool has_action)
{
    if (!r->llm || r->llm->kind != SL_LLM_DECIDE)
        return 0;
    if (r->on_request || r->on_text) {
        sl_policy_yaml_error (ctx, node, "rule '%s': decide judges tool calls (on: response), not %s", r->id,
                              r->on_request ? "a request" : "the text");
        return -1;
    }
    if (has_action && r->action == SL_ACT_ALLOW) {
        sl_policy_yaml_error (ctx, node, "rule '%s': a decide rule acts on the calls its service denies, "
                              "so its action cannot be allow", r->id);
        return -1;
    }
    return 0;
}

//  mode: enforce (the default) or shadow, of a rule or a whole file.
static int
s_parse_mode (sl_policy_yaml_t *ctx, yaml_node_t *node, bool *shadow)
{
    const char *v = sl_policy_yaml_scalar (node);
    if (v && strcmp (v, "enforce") == 0)
        *shadow = false;
    else
    if (v && strcmp (v, "shadow") == 0)
        *shadow = true;
    else {
        sl_policy_yaml_error (ctx, node, "mode must be enforce or shadow, not '%s'", v ? v : "a collection");
        return -1;
    }
    return 0;
}

static int
s_parse_rule_field (sl_policy_yaml_t *ctx, yaml_node_t *k, yaml_node_t *v, const char *key,
                    sl_policy_rule_t *r, bool *has_action)
{
    if (strcmp (key, "id") == 0)
        return sl_policy_yaml_string (ctx, v, "id", &r->id);
    if (strcmp (key, "message") == 0)
        return sl_policy_yaml_string (ctx, v, "message", &r->message);
    if (strcmp (key, "description") == 0)
        return sl_policy_yaml_scalar (v) ? 0 : (sl_policy_yaml_error (ctx, v, "description must be a string"), -1);
    if (strcmp (key, "mode") == 0)
        return s_parse_mode (ctx, v, &r->shadow);
    if (strcmp (key, "action") == 0) {
        *has_action = true;
        const char *name = sl_policy_yaml_scalar (v);
        if (name && strcmp (name, "ask") == 0) {
            //  A person decides; a denial blocks the call with the
            //  rule's notice.
            r->action = SL_ACT_BLOCK;
            if (!r->ask) {
                r->ask = sl_xmalloc (sizeof *r->ask);
                sl_ask_spec_defaults (r->ask);
            }
            r->asks = true;
            return 0;
        }
        return s_parse_action (ctx, v, false, &r->action);
    }
    if (strcmp (key, "ask") == 0) {
        if (r->ask_given) {
            sl_policy_yaml_error (ctx, k, "ask given twice");
            return -1;
        }
        r->ask_given = true;
        if (!r->ask) {
            r->ask = sl_xmalloc (sizeof *r->ask);
            sl_ask_spec_defaults (r->ask);
        }
        return sl_policy_fields_ask (ctx, v, r->ask);
    }
    if (strcmp (key, "tool") == 0)
        return sl_policy_fields_names (ctx, v, "tool", &r->tools);
    if (strcmp (key, "server") == 0)
        return sl_policy_fields_names (ctx, v, "server", &r->servers);
    if (strcmp (key, "definition") == 0)
        return sl_policy_tools_definition (ctx, v, &r->definitions);
    if (strcmp (key, "model") == 0)
        return sl_policy_fields_names (ctx, v, "model", &r->models);
    if (strcmp (key, "args") == 0)
        return sl_policy_fields_matchers (ctx, v, "args", "pointer", &r->args, &r->arg_count);
    if (strcmp (key, "headers") == 0)
        return sl_policy_fields_matchers (ctx, v, "headers", "name", &r->headers, &r->header_count);
    if (strcmp (key, "args_invalid") == 0)
        return s_parse_flag (ctx, v, key, &r->args_invalid);
    if (strcmp (key, "args_repaired") == 0)
        return s_parse_flag (ctx, v, key, &r->args_repaired);
    if (strcmp (key, "schema_violation") == 0)
        return s_parse_flag (ctx, v, key, &r->schema_violation);
    if (strcmp (key, "incomplete") == 0)
        return s_parse_flag (ctx, v, key, &r->incomplete);
    if (strcmp (key, "cut") == 0)
        return sl_policy_fields_cuts (ctx, v, &r->cuts);
    if (strcmp (key, "max_calls") == 0)
        return sl_policy_yaml_int (ctx, v, "max_calls", 0, 1000000, &r->max_calls);
    if (strcmp (key, "set") == 0 || strcmp (key, "delete") == 0)
        return sl_policy_fields_edits (ctx, v, key [0] == 's', r);
    if (strcmp (key, "on") == 0) {
        const char *v_on = sl_policy_yaml_scalar (v);
        if (!v_on || (strcmp (v_on, "request") != 0 && strcmp (v_on, "response") != 0
                      && strcmp (v_on, "text") != 0)) {
            sl_policy_yaml_error (ctx, v, "on must be request, response (a tool call, the default) or text");
            return -1;
        }
        r->on_request = strcmp (v_on, "request") == 0;
        r->on_text = strcmp (v_on, "text") == 0;
        return 0;
    }
    if (strcmp (key, "part") == 0)
        return sl_policy_fields_parts (ctx, v, &r->parts);
    if (strcmp (key, "text") == 0)
        return sl_policy_fields_texts (ctx, v, &r->texts, &r->text_count);
    if (strcmp (key, "size") == 0)
        return sl_policy_fields_size (ctx, v, &r->size);
    if (strcmp (key, "is_error") == 0)
        return s_parse_flag (ctx, v, key, &r->is_error);
    if (strcmp (key, "redact") == 0)
        return sl_policy_fields_redacts (ctx, v, r);
    if (strcmp (key, "history") == 0)
        return sl_policy_fields_history (ctx, v, r);
    if (strcmp (key, "tainted") == 0 || strcmp (key, "tainted_by") == 0)
        return sl_policy_trust_field (ctx, v, key, r);
    if (strcmp (key, "decide") == 0)
        return s_parse_decide (ctx, k, v, r);
    if (strcmp (key, "llm_judge") == 0) {
        if (r->llm) {
            sl_policy_yaml_error (ctx, k, r->llm->kind == SL_LLM_DECIDE
                                          ? "a rule asks an llm_judge or a decide service, not both"
                                          : "llm_judge given twice");
            return -1;
        }
        r->llm = sl_xmalloc (sizeof *r->llm);
        sl_llm_spec_defaults (r->llm);
        return sl_policy_fields_llm (ctx, v, r->llm);
    }
    sl_policy_yaml_error (ctx, k, "unknown rule field '%s' (expected id, description, mode, on, tool, server, definition, model, headers, "
                          "args, args_invalid, args_repaired, schema_violation, incomplete, cut, max_calls, history, "
                          "tainted, tainted_by, part, text, size, is_error, llm_judge, decide, ask, action, message, set, delete, redact)",
                          key);
    return -1;
}

//  What a request rule may say, and what only a response rule may.
static int
s_check_request_rule (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_rule_t *r, bool has_action)
{
    if (r->arg_count || r->args_invalid != SL_FLAG_ANY || r->args_repaired != SL_FLAG_ANY
    ||  r->schema_violation != SL_FLAG_ANY || r->incomplete != SL_FLAG_ANY || r->cuts || r->max_calls >= 0
    ||  r->edit_count || r->history_count || r->tainted != SL_FLAG_ANY || r->tainted_by.count) {
        sl_policy_yaml_error (ctx, node, "rule '%s': on: request judges the request's parts (part, tool, text, size, "
                              "is_error, model, headers); args, args_invalid, args_repaired, schema_violation, "
                              "incomplete, cut, max_calls, history, tainted, tainted_by, set and delete are for "
                              "tool calls", r->id);
        return -1;
    }
    if (!has_action && r->llm)
        r->action = SL_ACT_BLOCK_RESULT;
    if (r->action != SL_ACT_ALLOW && r->action != SL_ACT_REDACT && r->action != SL_ACT_BLOCK_RESULT
    &&  r->action != SL_ACT_WITHHOLD && r->action != SL_ACT_TERMINATE) {
        sl_policy_yaml_error (ctx, node, "rule '%s': a request rule's action is allow, redact, block_result, "
                              "withhold or terminate", r->id);
        return -1;
    }
    if (sl_policy_tools_check_request (ctx, node, r))
        return -1;
    if (!r->parts)
        r->parts = r->action == SL_ACT_BLOCK_RESULT || r->llm ? S_PARTS_RESULTS : S_PARTS_DEFAULT;
    if ((r->action == SL_ACT_BLOCK_RESULT || r->llm) && (r->parts & ~S_PARTS_RESULTS)) {
        sl_policy_yaml_error (ctx, node, "rule '%s': block_result and llm_judge apply to tool results only "
                              "(part: tool_result)", r->id);
        return -1;
    }
    if ((r->action == SL_ACT_REDACT) != (r->redact_count > 0)) {
        sl_policy_yaml_error (ctx, node, "rule '%s': %s", r->id,
                              r->redact_count ? "redact needs action: redact"
                                              : "action redact needs redact: {regex, placeholder}");
        return -1;
    }
    if (r->action == SL_ACT_REDACT && r->llm) {
        sl_policy_yaml_error (ctx, node, "rule '%s': a redact rule cannot ask an LLM judge", r->id);
        return -1;
    }
    for (int i = 0; i < r->redact_count; i++)
        if (!r->redacts [i].placeholder) {
            sl_buf_t ph = { 0 };
            sl_buf_printf (&ph, "[REDACTED:%s]", r->id);
            r->redacts [i].placeholder = sl_xstrdup (sl_buf_cstr (&ph));
            sl_buf_free (&ph);
        }
    if (r->llm) {
        //  A judge of tool results asks another question than one of calls.
        r->llm->system = sl_llm_result_system_prompt;
        if (strcmp (r->llm->prompt, sl_llm_default_prompt) == 0) {
            free (r->llm->prompt);
            r->llm->prompt = sl_xstrdup (sl_llm_default_result_prompt);
        }
    }
    return 0;
}

static int
s_parse_rule (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_rule_t *r)
{
    r->args_invalid = r->args_repaired = r->schema_violation = r->incomplete = SL_FLAG_ANY;
    r->is_error = r->tainted = SL_FLAG_ANY;
    r->max_calls = -1;
    if (node->type != YAML_MAPPING_NODE) {
        sl_policy_yaml_error (ctx, node, "a rule must be a mapping");
        return -1;
    }
    bool has_action = false;
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = sl_policy_yaml_node (ctx, p->key);
        const char *key = sl_policy_yaml_scalar (k);
        if (!key) {
            sl_policy_yaml_error (ctx, k, "rule keys must be strings");
            return -1;
        }
        if (s_parse_rule_field (ctx, k, sl_policy_yaml_node (ctx, p->value), key, r, &has_action))
            return -1;
    }
    if (!r->id) {
        sl_policy_yaml_error (ctx, node, "a rule needs an id");
        return -1;
    }
    if (!has_action && !r->llm) {
        sl_policy_yaml_error (ctx, node, "rule '%s' needs an action", r->id);
        return -1;
    }
    if (r->ask && (!r->asks || r->on_request || r->on_text || r->llm)) {
        sl_policy_yaml_error (ctx, node, "rule '%s': %s", r->id,
                              !r->asks ? "ask: settings need action: ask"
                              : r->llm ? "a rule asks a person, an LLM judge or a decision service: one of them"
                              : "action ask judges a tool call of the response, not a request or its text");
        return -1;
    }
    if (s_check_decide_rule (ctx, node, r, has_action))
        return -1;
    if (r->shadow && (r->on_request || r->on_text)) {
        sl_policy_yaml_error (ctx, node, "rule '%s': mode: shadow judges tool calls of the response; a rule "
                              "on: %s is enforced", r->id, r->on_request ? "request" : "text");
        return -1;
    }
    if (r->on_request)
        return s_check_request_rule (ctx, node, r, has_action);
    if (r->on_text) {
        if (r->action != SL_ACT_ALLOW || r->llm || r->parts || r->tools.count || r->servers.count || r->definitions
        ||  r->is_error != SL_FLAG_ANY
        ||  r->redact_count || r->arg_count || r->args_invalid != SL_FLAG_ANY || r->args_repaired != SL_FLAG_ANY
        ||  r->schema_violation != SL_FLAG_ANY || r->incomplete != SL_FLAG_ANY || r->cuts || r->max_calls >= 0
        ||  r->edit_count || r->history_count || r->tainted != SL_FLAG_ANY || r->tainted_by.count) {
            sl_policy_yaml_error (ctx, node, "rule '%s': on: text flags the response's text, which has gone to the "
                                  "client already: text, size, model and headers, and action allow", r->id);
            return -1;
        }
        r->parts = 1u << SL_RPART_TEXT;
        return 0;
    }
    if (r->parts || r->text_count || r->size || r->is_error != SL_FLAG_ANY || r->redact_count) {
        sl_policy_yaml_error (ctx, node, "rule '%s': part, text, size, is_error and redact judge a request "
                              "(on: request)", r->id);
        return -1;
    }
    if (r->action == SL_ACT_REDACT || r->action == SL_ACT_BLOCK_RESULT || r->action == SL_ACT_WITHHOLD) {
        sl_policy_yaml_error (ctx, node, "rule '%s': %s judges a request (on: request)", r->id,
                              sl_action_name (r->action));
        return -1;
    }
    if (!has_action && r->llm)
        r->action = SL_ACT_BLOCK;       //  what an LLM judge's "no" does by default
    else
    if (!has_action) {
        sl_policy_yaml_error (ctx, node, "rule '%s' needs an action", r->id);
        return -1;
    }
    if (r->llm && r->action == SL_ACT_ALLOW) {
        sl_policy_yaml_error (ctx, node, "rule '%s': an llm_judge rule acts on the calls its judge rejects, "
                              "so its action cannot be allow", r->id);
        return -1;
    }
    if (r->action == SL_ACT_REWRITE && r->edit_count == 0) {
        sl_policy_yaml_error (ctx, node, "rule '%s': rewrite needs set or delete", r->id);
        return -1;
    }
    if (r->action != SL_ACT_REWRITE && r->edit_count > 0) {
        sl_policy_yaml_error (ctx, node, "rule '%s': set and delete need action: rewrite", r->id);
        return -1;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  The document

//  The included file that has a rule id already, or NULL.
static const char *
s_base_with (const s_bases_t *bases, const char *id)
{
    for (int b = 0; b < bases->count; b++)
        for (int i = 0; i < bases->policy [b]->rule_count; i++)
            if (strcmp (bases->policy [b]->rules [i].id, id) == 0)
                return bases->policy [b]->name;
    return NULL;
}

static int
s_parse_rules (sl_policy_yaml_t *ctx, yaml_node_t *v, sl_policy_t *self, const s_bases_t *bases)
{
    if (v->type != YAML_SEQUENCE_NODE) {
        sl_policy_yaml_error (ctx, v, "rules must be a list");
        return -1;
    }
    int n = (int) (v->data.sequence.items.top - v->data.sequence.items.start);
    self->rules = sl_xcalloc ((size_t) n + 1, sizeof (sl_policy_rule_t));
    for (int i = 0; i < n; i++) {
        yaml_node_t *item = sl_policy_yaml_node (ctx, v->data.sequence.items.start [i]);
        self->rule_count = i + 1;
        sl_policy_rule_t *r = &self->rules [i];
        if (s_parse_rule (ctx, item, r))
            return -1;
        for (int j = 0; j < i; j++)
            if (strcmp (self->rules [j].id, r->id) == 0) {
                sl_policy_yaml_error (ctx, item, "duplicate rule id '%s'", r->id);
                return -1;
            }
        if (s_base_with (bases, r->id)) {
            sl_policy_yaml_error (ctx, item, "duplicate rule id '%s': %s, which this file includes, has it "
                                  "(a base's rules cannot be replaced)", r->id, s_base_with (bases, r->id));
            return -1;
        }
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Includes

//  path as the including file names it: relative to that file's directory.
static void
s_include_path (const char *including, const char *path, sl_buf_t *out)
{
    if (path [0] == '/') {
        sl_buf_puts (out, path);
        return;
    }
    char *copy = sl_xstrdup (including);
    sl_buf_printf (out, "%s/%s", dirname (copy), path);
    free (copy);
}

//  Load one include named at node into bases.
static int
s_include_one (sl_policy_yaml_t *ctx, yaml_node_t *node, s_chain_t *chain, s_bases_t *bases)
{
    const char *name = sl_policy_yaml_scalar (node);
    if (!name || !*name) {
        sl_policy_yaml_error (ctx, node, "include must be a file name, or a list of them");
        return -1;
    }
    if (!chain) {
        sl_policy_yaml_error (ctx, node, "include '%s': only a policy file may include another (this policy "
                              "is a text, not a file)", name);
        return -1;
    }
    if (bases->count == S_MAX_INCLUDES || chain->depth == S_MAX_INCLUDE_DEPTH) {
        sl_policy_yaml_error (ctx, node, "include '%s': more than %d includes in one file, or %d deep", name,
                              S_MAX_INCLUDES, S_MAX_INCLUDE_DEPTH);
        return -1;
    }
    sl_buf_t path = { 0 };
    s_include_path (ctx->name, name, &path);
    char real [PATH_MAX];
    int rc = -1;
    if (!realpath (sl_buf_cstr (&path), real))
        sl_policy_yaml_error (ctx, node, "include '%s': cannot open %s: %s", name, sl_buf_cstr (&path),
                              strerror (errno));
    else {
        int cycle = -1;
        for (int i = 0; i < chain->depth; i++)
            if (strcmp (chain->chain [i], real) == 0)
                cycle = i;
        if (cycle >= 0) {
            sl_buf_t names = { 0 };
            for (int i = cycle; i < chain->depth; i++)
                sl_buf_printf (&names, "%s includes ", chain->chain [i]);
            sl_buf_puts (&names, real);
            sl_policy_yaml_error (ctx, node, "include '%s' makes a cycle: %s", name, sl_buf_cstr (&names));
            sl_buf_free (&names);
        }
        else {
            char *error = NULL;
            sl_policy_t *base = s_load (sl_buf_cstr (&path), chain, &error);
            if (base) {
                const char *clash = NULL;
                for (int i = 0; i < base->rule_count && !clash; i++)
                    clash = s_base_with (bases, base->rules [i].id) ? base->rules [i].id : NULL;
                if (clash) {
                    sl_policy_yaml_error (ctx, node, "include '%s': rule id '%s' is in %s too", name, clash,
                                          s_base_with (bases, clash));
                    sl_policy_free (base);
                }
                else {
                    bases->policy [bases->count++] = base;
                    rc = 0;
                }
            }
            else
                sl_policy_yaml_error (ctx, node, "included here: %s", error ? error : name);
            free (error);
        }
    }
    sl_buf_free (&path);
    return rc;
}

//  include: one file or a list of them.
static int
s_parse_include (sl_policy_yaml_t *ctx, yaml_node_t *node, s_chain_t *chain, s_bases_t *bases)
{
    if (node->type != YAML_SEQUENCE_NODE)
        return s_include_one (ctx, node, chain, bases);
    for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++)
        if (s_include_one (ctx, sl_policy_yaml_node (ctx, *it), chain, bases))
            return -1;
    return 0;
}

//  The included rules in front of the file's own (moved: the bases keep
//  none), the settings the file did not give from the first base that
//  did, the files and the id of the whole.
static void
s_merge (sl_policy_t *self, s_bases_t *bases)
{
    int total = self->rule_count;
    for (int b = 0; b < bases->count; b++)
        total += bases->policy [b]->rule_count;
    sl_policy_rule_t *rules = sl_xcalloc ((size_t) total + 1, sizeof *rules);
    int n = 0;
    sl_buf_t whole = { 0 };
    sl_buf_append (&whole, self->source, strlen (self->source));
    for (int b = 0; b < bases->count; b++) {
        sl_policy_t *base = bases->policy [b];
        memcpy (rules + n, base->rules, (size_t) base->rule_count * sizeof *rules);
        n += base->rule_count;
        base->rule_count = 0;
        if (!self->default_set && base->default_set) {
            self->default_set = true;
            self->default_action = base->default_action;
            free (self->default_message);
            self->default_message = base->default_message ? sl_xstrdup (base->default_message) : NULL;
        }
        if (!self->incomplete_set && base->incomplete_set) {
            self->incomplete_set = true;
            self->incomplete_action = base->incomplete_action;
            free (self->incomplete_message);
            self->incomplete_message = base->incomplete_message ? sl_xstrdup (base->incomplete_message) : NULL;
        }
        sl_policy_trust_merge (self, base);
        sl_buf_printf (&whole, "%cinclude %s", 0, base->id);
        sl_policy_tools_inherit (self, base);
    }
    if (self->rule_count)
        memcpy (rules + n, self->rules, (size_t) self->rule_count * sizeof *rules);
    free (self->rules);
    self->rules = rules;
    self->rule_count = total;
    for (int i = 0; i < total; i++) {
        sl_policy_rule_t *r = &rules [i];
        self->uses_schema |= r->schema_violation != SL_FLAG_ANY;
        self->llm_count += r->llm && r->llm->kind == SL_LLM_JUDGE;
        self->decide_count += r->llm && r->llm->kind == SL_LLM_DECIDE;
        self->ask_count += r->ask != NULL;
        self->request_count += r->on_request;
        self->text_count += r->on_text;
        self->shadow_count += r->shadow;
        //  (a decision service is told the conversation's earlier calls)
        self->uses_history |= r->history_count > 0 || (r->llm && r->llm->kind == SL_LLM_DECIDE);
        self->uses_taint |= r->tainted != SL_FLAG_ANY || r->tainted_by.count > 0;
    }
    sl_policy_tools_finish (self, &whole);
    if (bases->count || self->pins)
        sl_policy_digest (whole.data, whole.len, self->id);
    sl_buf_free (&whole);
}

//  The files of a policy loaded from path: its own, then its bases'.
static void
s_files (sl_policy_t *self, const char *path, const s_bases_t *bases)
{
    int count = 1;
    for (int b = 0; b < bases->count; b++)
        count += bases->policy [b]->file_count;
    self->files = sl_xcalloc ((size_t) count, sizeof (char *));
    self->files [self->file_count++] = sl_xstrdup (path);
    for (int b = 0; b < bases->count; b++)
        for (int i = 0; i < bases->policy [b]->file_count; i++)
            self->files [self->file_count++] = sl_xstrdup (bases->policy [b]->files [i]);
}

//  on_incomplete: an action, or a mapping of action and message.
static int
s_parse_on_incomplete (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_t *self)
{
    yaml_node_t *action = node;
    if (node->type == YAML_MAPPING_NODE) {
        action = NULL;
        for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
            yaml_node_t *k = sl_policy_yaml_node (ctx, p->key);
            const char *key = sl_policy_yaml_scalar (k);
            if (key && strcmp (key, "action") == 0)
                action = sl_policy_yaml_node (ctx, p->value);
            else
            if (key && strcmp (key, "message") == 0) {
                yaml_node_t *v = sl_policy_yaml_node (ctx, p->value);
                if (sl_policy_yaml_string (ctx, v, "message", &self->incomplete_message))
                    return -1;
            }
            else {
                sl_policy_yaml_error (ctx, k, "unknown on_incomplete field '%s' (expected action, message)",
                                      key ? key : "?");
                return -1;
            }
        }
        if (!action) {
            sl_policy_yaml_error (ctx, node, "on_incomplete needs an action");
            return -1;
        }
    }
    const char *v = sl_policy_yaml_scalar (action);
    int a = v ? sl_action_parse (v) : 0;
    if (a == 0 || a == SL_ACT_REWRITE || a == SL_ACT_REDACT || a == SL_ACT_BLOCK_RESULT || a == SL_ACT_WITHHOLD) {
        sl_policy_yaml_error (ctx, action, "on_incomplete must be allow, block, drop or terminate");
        return -1;
    }
    self->incomplete_action = (sl_action_t) a;
    return 0;
}

static int
s_parse_root (sl_policy_yaml_t *ctx, yaml_node_t *root, sl_policy_t *self, s_chain_t *chain, s_bases_t *bases)
{
    if (!root) {
        sl_policy_yaml_error (ctx, NULL, "the policy is empty");
        return -1;
    }
    if (root->type != YAML_MAPPING_NODE) {
        sl_policy_yaml_error (ctx, root, "the policy must be a mapping with default and rules");
        return -1;
    }
    yaml_node_t *mode = NULL;           //  the file's mode:, for errors
    //  Includes first, wherever the key is: the file's rules are checked
    //  against theirs.
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
        const char *key = sl_policy_yaml_scalar (sl_policy_yaml_node (ctx, p->key));
        if (key && strcmp (key, "include") == 0
        &&  s_parse_include (ctx, sl_policy_yaml_node (ctx, p->value), chain, bases))
            return -1;
    }
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *k = sl_policy_yaml_node (ctx, p->key);
        yaml_node_t *v = sl_policy_yaml_node (ctx, p->value);
        const char *key = sl_policy_yaml_scalar (k);
        int rc;
        if (key && strcmp (key, "include") == 0)
            rc = 0;
        else
        if (key && strcmp (key, "default") == 0) {
            rc = s_parse_action (ctx, v, true, &self->default_action);
            self->default_set = true;
        }
        else
        if (key && strcmp (key, "message") == 0)
            rc = sl_policy_yaml_string (ctx, v, "message", &self->default_message);
        else
        if (key && strcmp (key, "on_incomplete") == 0) {
            rc = s_parse_on_incomplete (ctx, v, self);
            self->incomplete_set = true;
        }
        else
        if (key && strcmp (key, "version") == 0) {
            rc = 0;
            if (!sl_policy_yaml_scalar (v) || strcmp (sl_policy_yaml_scalar (v), "1") != 0) {
                sl_policy_yaml_error (ctx, v, "unsupported policy version (this sluice reads version 1)");
                rc = -1;
            }
        }
        else
        if (key && strcmp (key, "rules") == 0)
            rc = s_parse_rules (ctx, v, self, bases);
        else
        if (key && strcmp (key, "servers") == 0)
            rc = sl_policy_tools_servers (ctx, v, self);
        else
        if (key && strcmp (key, "pins") == 0)
            rc = sl_policy_tools_pins (ctx, v, chain != NULL, self);
        else
        if (key && strcmp (key, "trust") == 0)
            rc = sl_policy_trust_parse (ctx, v, self);
        else
        if (key && strcmp (key, "mode") == 0) {
            rc = s_parse_mode (ctx, v, &self->shadow);
            mode = v;
        }
        else {
            sl_policy_yaml_error (ctx, k, "unknown top-level field '%s' (expected version, include, mode, "
                                  "default, message, on_incomplete, servers, pins, trust, rules)",
                                  key ? key : "?");
            rc = -1;
        }
        if (rc)
            return -1;
    }
    //  A file in shadow: every rule of its own is (those it includes keep
    //  their own mode), and only tool-call rules can be.
    for (int i = 0; self->shadow && i < self->rule_count; i++) {
        sl_policy_rule_t *r = &self->rules [i];
        if (r->on_request || r->on_text) {
            sl_policy_yaml_error (ctx, mode, "mode: shadow judges tool calls of the response; rule '%s' is "
                                  "on: %s, which is enforced (move it to a file in mode enforce)",
                                  r->id, r->on_request ? "request" : "text");
            return -1;
        }
        r->shadow = true;
    }
    return 0;
}

//  Parse text; chain (NULL: a text, not a file) holds the files being
//  loaded, path among them when it is one.
static sl_policy_t *
s_parse (const char *text, size_t size, const char *name, s_chain_t *chain, char **error)
{
    *error = NULL;
    yaml_parser_t parser;
    yaml_document_t doc;
    yaml_parser_initialize (&parser);
    yaml_parser_set_input_string (&parser, (const unsigned char *) text, size);
    if (!yaml_parser_load (&parser, &doc)) {
        sl_buf_t buf = { 0 };
        sl_buf_printf (&buf, "%s:%zu:%zu: %s", name, parser.problem_mark.line + 1,
                       parser.problem_mark.column + 1,
                       parser.problem ? parser.problem : "malformed YAML");
        *error = sl_xstrdup (sl_buf_cstr (&buf));
        sl_buf_free (&buf);
        yaml_parser_delete (&parser);
        return NULL;
    }
    sl_policy_t *self = sl_policy_new (name, text, size);
    sl_policy_yaml_t ctx = { name, error, &doc };
    s_bases_t bases = { .count = 0 };
    int rc = s_parse_root (&ctx, yaml_document_get_root_node (&doc), self, chain, &bases);
    yaml_document_delete (&doc);
    yaml_parser_delete (&parser);
    if (rc == 0) {
        if (chain) {
            s_files (self, name, &bases);
            sl_policy_tools_files (self);
        }
        s_merge (self, &bases);
    }
    for (int b = 0; b < bases.count; b++)
        sl_policy_free (bases.policy [b]);
    if (rc) {
        sl_policy_free (self);
        return NULL;
    }
    return self;
}

sl_policy_t *
sl_policy_parse (const char *text, size_t size, const char *name, char **error)
{
    return s_parse (text, size, name, NULL, error);
}

//  Load the file at path, one more link of chain.
static sl_policy_t *
s_load (const char *path, s_chain_t *chain, char **error)
{
    *error = NULL;
    char real [PATH_MAX];
    FILE *f = realpath (path, real) ? fopen (real, "rb") : NULL;
    if (!f) {
        sl_buf_t buf = { 0 };
        sl_buf_printf (&buf, "%s:1:1: cannot open: %s", path, strerror (errno));
        *error = sl_xstrdup (sl_buf_cstr (&buf));
        sl_buf_free (&buf);
        return NULL;
    }
    sl_buf_t text = { 0 };
    char chunk [65536];
    size_t n;
    while ((n = fread (chunk, 1, sizeof chunk, f)) > 0) {
        sl_buf_append (&text, chunk, n);
        if (text.len > SL_POLICY_MAX_FILE)
            break;
    }
    fclose (f);
    if (text.len > SL_POLICY_MAX_FILE) {
        sl_buf_free (&text);
        sl_buf_t buf = { 0 };
        sl_buf_printf (&buf, "%s:1:1: file is over %u bytes", path, SL_POLICY_MAX_FILE);
        *error = sl_xstrdup (sl_buf_cstr (&buf));
        sl_buf_free (&buf);
        return NULL;
    }
    chain->chain [chain->depth++] = real;
    sl_policy_t *self = s_parse (text.data ? text.data : "", text.len, path, chain, error);
    chain->depth--;
    sl_buf_free (&text);
    return self;
}

sl_policy_t *
sl_policy_load (const char *path, char **error)
{
    s_chain_t chain = { .depth = 0 };
    return s_load (path, &chain, error);
}
