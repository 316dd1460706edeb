/*  sl_policy_fields.c - a rule's structured fields, read from YAML (see
    sl_policy_impl.h).

    What a rule tests (argument, header and text matchers, names and
    globs, part kinds, cut reasons, earlier calls) and what it does beyond
    its action (rewrite edits, redactions, the LLM judge's and the decision
    service's settings). Each
    value is checked as it is read, its error at its own line and column;
    what the rule's kind allows of them is the loader's (sl_policy_load.c).
    JSON pointers are split into tokens here, once, and a regex's required
    literal is found here, once (sl_policy_match_literal).
*/
#include "common/policy/sl_policy_impl.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/dialects/sl_dialect.h"

//  --------------------------------------------------------------------------
//  Names, cuts, pointers

//  Split an RFC 6901 pointer ("" or "/a/b~1c") into unescaped tokens.
static int
s_split_pointer (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *ptr, char ***tokens, int *count)
{
    if (*ptr && *ptr != '/') {
        sl_policy_yaml_error (ctx, node, "a JSON pointer is empty or starts with '/'");
        return -1;
    }
    *tokens = NULL;
    *count = 0;
    const char *p = ptr;
    while (*p == '/') {
        p++;
        sl_buf_t token = { 0 };
        while (*p && *p != '/') {
            if (p [0] == '~' && (p [1] == '0' || p [1] == '1')) {
                sl_buf_putc (&token, p [1] == '0' ? '~' : '/');
                p += 2;
            }
            else
            if (p [0] == '~') {
                sl_buf_free (&token);
                sl_policy_yaml_error (ctx, node, "bad escape in JSON pointer (use ~0 for ~ and ~1 for /)");
                return -1;
            }
            else
                sl_buf_putc (&token, *p++);
        }
        *tokens = sl_xrealloc (*tokens, (size_t) (*count + 1) * sizeof (char *));
        (*tokens) [(*count)++] = sl_xstrdup (sl_buf_cstr (&token));
        sl_buf_free (&token);
    }
    return 0;
}

//  One name or glob, or a list of them.
int
sl_policy_fields_names (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *what, sl_policy_names_t *out)
{
    yaml_node_item_t one = 0;
    yaml_node_item_t *start = &one, *top = &one;
    if (node->type == YAML_SEQUENCE_NODE) {
        start = node->data.sequence.items.start;
        top = node->data.sequence.items.top;
        if (start == top) {
            sl_policy_yaml_error (ctx, node, "%s: the list is empty", what);
            return -1;
        }
    }
    else
        top = start + 1;
    for (yaml_node_item_t *it = start; it < top; it++) {
        yaml_node_t *item = it == &one ? node : sl_policy_yaml_node (ctx, *it);
        const char *v = sl_policy_yaml_scalar (item);
        if (!v || !*v) {
            sl_policy_yaml_error (ctx, item, "%s must be a name, a glob or a list of them", what);
            return -1;
        }
        out->names = sl_xrealloc (out->names, (size_t) (out->count + 1) * sizeof (char *));
        out->globs = sl_xrealloc (out->globs, (size_t) (out->count + 1) * sizeof (bool));
        out->names [out->count] = sl_xstrdup (v);
        out->globs [out->count] = strpbrk (v, "*?[") != NULL;
        out->count++;
    }
    return 0;
}

//  cut: one reason or a list of them, as a bit set.
int
sl_policy_fields_cuts (sl_policy_yaml_t *ctx, yaml_node_t *node, unsigned *out)
{
    sl_policy_names_t names = { 0 };
    int rc = sl_policy_fields_names (ctx, node, "cut", &names);
    for (int i = 0; rc == 0 && i < names.count; i++) {
        int cut = sl_cut_parse (sl_str (names.names [i]));
        if (!cut) {
            sl_policy_yaml_error (ctx, node, "cut must be length, filter, error, eof, size or invalid, "
                                  "or a list of them");
            rc = -1;
        }
        else
            *out |= 1u << cut;
    }
    sl_policy_names_free (&names);
    return rc;
}

//  --------------------------------------------------------------------------
//  Matchers and part kinds

//  One entry of args (key "pointer"), headers (key "name") or text (no
//  locator: locator NULL).
static int
s_parse_matcher (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *locator, sl_policy_matcher_t *m)
{
    bool is_args = locator && strcmp (locator, "pointer") == 0;
    const char *what = !locator ? "text" : is_args ? "args" : "headers";
    if (node->type != YAML_MAPPING_NODE) {
        sl_policy_yaml_error (ctx, node, "each %s entry must be a mapping with %s%s a test", what,
                              locator ? locator : "", locator ? " and" : "");
        return -1;
    }
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = sl_policy_yaml_node (ctx, p->key);
        yaml_node_t *v = sl_policy_yaml_node (ctx, p->value);
        const char *key = sl_policy_yaml_scalar (k);
        if (!key) {
            sl_policy_yaml_error (ctx, k, "keys must be strings");
            return -1;
        }
        if (locator && strcmp (key, locator) == 0) {
            if (sl_policy_yaml_string (ctx, v, locator, &m->pointer))
                return -1;
            if (is_args) {
                sl_policy_tokens_free (m->tokens, m->token_count);
                if (s_split_pointer (ctx, v, m->pointer, &m->tokens, &m->token_count))
                    return -1;
            }
            else
                for (char *c = m->pointer; *c; c++)
                    *c = (char) (*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
            continue;
        }
        static const struct { const char *name; unsigned op; } ops [] = {
            { "regex", SL_OP_REGEX }, { "equals", SL_OP_EQUALS }, { "contains", SL_OP_CONTAINS },
            { "prefix", SL_OP_PREFIX }, { "gt", SL_OP_GT }, { "ge", SL_OP_GE }, { "lt", SL_OP_LT },
            { "le", SL_OP_LE }, { "exists", SL_OP_EXISTS }
        };
        unsigned op = 0;
        for (size_t i = 0; i < sizeof ops / sizeof ops [0]; i++)
            if (strcmp (key, ops [i].name) == 0)
                op = ops [i].op;
        if (strcmp (key, "not") == 0) {
            if (sl_policy_yaml_bool (ctx, v, "not", &m->negate))
                return -1;
            continue;
        }
        if (!op) {
            sl_policy_yaml_error (ctx, k, "unknown %s field '%s' (expected %s%sregex, equals, contains, prefix, "
                                  "gt, ge, lt, le, exists, not)", what, key, locator ? locator : "",
                                  locator ? ", " : "");
            return -1;
        }
        if (m->ops & op) {
            sl_policy_yaml_error (ctx, k, "%s given twice", key);
            return -1;
        }
        int rc = 0;
        switch (op) {
            case SL_OP_REGEX: {
                const char *written = sl_policy_yaml_scalar (v);
                sl_buf_t bytes = { 0 };
                if (!written || sl_policy_regex_bytes (written, &bytes)) {
                    sl_buf_free (&bytes);
                    sl_policy_yaml_error (ctx, v, written ? "bad regex: \\x00 (a NUL byte)" : "regex must be a string");
                    return -1;
                }
                const char *pattern = sl_buf_cstr (&bytes);
                int err = regcomp (&m->regex, pattern, REG_EXTENDED | REG_NOSUB);
                if (err) {
                    char why [128];
                    regerror (err, &m->regex, why, sizeof why);
                    sl_buf_free (&bytes);
                    sl_policy_yaml_error (ctx, v, "bad regex: %s", why);
                    return -1;
                }
                m->literal = sl_policy_match_literal (pattern);
                sl_buf_free (&bytes);
                break;
            }
            case SL_OP_EQUALS:
                rc = (m->equals = sl_policy_yaml_json (ctx, v)) ? 0 : -1;
                break;
            case SL_OP_CONTAINS:
                rc = (m->contains = sl_policy_yaml_json (ctx, v)) ? 0 : -1;
                break;
            case SL_OP_PREFIX:
                rc = sl_policy_yaml_string (ctx, v, "prefix", &m->prefix);
                break;
            case SL_OP_GT: rc = sl_policy_yaml_number (ctx, v, "gt", &m->gt); break;
            case SL_OP_GE: rc = sl_policy_yaml_number (ctx, v, "ge", &m->ge); break;
            case SL_OP_LT: rc = sl_policy_yaml_number (ctx, v, "lt", &m->lt); break;
            case SL_OP_LE: rc = sl_policy_yaml_number (ctx, v, "le", &m->le); break;
            default: rc = sl_policy_yaml_bool (ctx, v, "exists", &m->exists); break;
        }
        if (rc)
            return -1;
        m->ops |= op;
    }
    if (!m->pointer && locator) {
        sl_policy_yaml_error (ctx, node, "%s entry needs %s", is_args ? "an args" : "a headers", locator);
        return -1;
    }
    if (!m->ops) {
        sl_policy_yaml_error (ctx, node, "a%s %s entry needs a test (regex, equals, contains, prefix, gt, ge, "
                              "lt, le or exists)", is_args ? "n" : "", what);
        return -1;
    }
    return 0;
}

int
sl_policy_fields_matchers (sl_policy_yaml_t *ctx, yaml_node_t *node, const char *what, const char *locator,
                           sl_policy_matcher_t **out, int *count)
{
    if (node->type != YAML_SEQUENCE_NODE) {
        sl_policy_yaml_error (ctx, node, "%s must be a list", what);
        return -1;
    }
    int n = (int) (node->data.sequence.items.top - node->data.sequence.items.start);
    *out = sl_xcalloc ((size_t) n + 1, sizeof (sl_policy_matcher_t));
    for (int i = 0; i < n; i++) {
        *count = i + 1;
        yaml_node_t *item = sl_policy_yaml_node (ctx, node->data.sequence.items.start [i]);
        if (s_parse_matcher (ctx, item, locator, &(*out) [i]))
            return -1;
    }
    return 0;
}

//  text: one test mapping, or a list of them (all must pass).
int
sl_policy_fields_texts (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_matcher_t **out, int *count)
{
    if (node->type != YAML_MAPPING_NODE)
        return sl_policy_fields_matchers (ctx, node, "text", NULL, out, count);
    *out = sl_xcalloc (1, sizeof (sl_policy_matcher_t));
    *count = 1;
    return s_parse_matcher (ctx, node, NULL, *out);
}

//  size: numeric tests on a part's size in bytes.
int
sl_policy_fields_size (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_matcher_t **out)
{
    *out = sl_xcalloc (1, sizeof (sl_policy_matcher_t));
    if (s_parse_matcher (ctx, node, NULL, *out))
        return -1;
    if ((*out)->ops & ~(unsigned) (SL_OP_GT | SL_OP_GE | SL_OP_LT | SL_OP_LE)) {
        sl_policy_yaml_error (ctx, node, "size takes gt, ge, lt, le (bytes) and not");
        return -1;
    }
    return 0;
}

//  part: one part kind or a list of them, as a bit set.
int
sl_policy_fields_parts (sl_policy_yaml_t *ctx, yaml_node_t *node, unsigned *out)
{
    static const char *names [SL_RPART_MAX] = {
        NULL, "system", "user", "assistant", "tool_result", "tool"
    };
    sl_policy_names_t list = { 0 };
    int rc = sl_policy_fields_names (ctx, node, "part", &list);
    for (int i = 0; rc == 0 && i < list.count; i++) {
        int kind = 0;
        for (int k = 1; k < SL_RPART_MAX; k++)
            if (names [k] && strcmp (list.names [i], names [k]) == 0)
                kind = k;
        if (!kind) {
            sl_policy_yaml_error (ctx, node, "part must be system, user, assistant, tool_result or tool, "
                                  "or a list of them");
            rc = -1;
        }
        else
            *out |= 1u << kind;
    }
    sl_policy_names_free (&list);
    return rc;
}

//  --------------------------------------------------------------------------
//  Redactions, history, rewrites, the LLM judge

//  redact: a mapping {regex, placeholder}, or a list of them.
int
sl_policy_fields_redacts (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_rule_t *r)
{
    yaml_node_item_t one = 0;
    yaml_node_item_t *start = &one, *top = &one + 1;
    if (node->type == YAML_SEQUENCE_NODE) {
        start = node->data.sequence.items.start;
        top = node->data.sequence.items.top;
    }
    for (yaml_node_item_t *it = start; it < top; it++) {
        yaml_node_t *item = it == &one ? node : sl_policy_yaml_node (ctx, *it);
        if (item->type != YAML_MAPPING_NODE) {
            sl_policy_yaml_error (ctx, item, "each redact entry must be a mapping with regex (and placeholder)");
            return -1;
        }
        r->redacts = sl_xrealloc (r->redacts, (size_t) (r->redact_count + 1) * sizeof (sl_policy_redaction_t));
        sl_policy_redaction_t *red = &r->redacts [r->redact_count];
        memset (red, 0, sizeof *red);
        const char *pattern = NULL;
        for (yaml_node_pair_t *p = item->data.mapping.pairs.start; p < item->data.mapping.pairs.top; p++) {
            yaml_node_t *k = sl_policy_yaml_node (ctx, p->key);
            yaml_node_t *v = sl_policy_yaml_node (ctx, p->value);
            const char *key = sl_policy_yaml_scalar (k);
            if (key && strcmp (key, "regex") == 0 && sl_policy_yaml_scalar (v))
                pattern = sl_policy_yaml_scalar (v);
            else
            if (key && strcmp (key, "placeholder") == 0) {
                if (sl_policy_yaml_string (ctx, v, "placeholder", &red->placeholder)) {
                    free (red->placeholder);
                    return -1;
                }
            }
            else {
                free (red->placeholder);
                sl_policy_yaml_error (ctx, k, "unknown redact field '%s' (expected regex, placeholder)",
                                      key ? key : "?");
                return -1;
            }
        }
        sl_buf_t bytes = { 0 };
        if (pattern && sl_policy_regex_bytes (pattern, &bytes)) {
            free (red->placeholder);
            sl_buf_free (&bytes);
            sl_policy_yaml_error (ctx, item, "bad regex: \\x00 (a NUL byte)");
            return -1;
        }
        if (pattern)
            pattern = sl_buf_cstr (&bytes);
        int err = pattern ? regcomp (&red->regex, pattern, REG_EXTENDED) : -1;
        if (err) {
            char why [128] = "redact needs a regex";
            if (pattern)
                regerror (err, &red->regex, why, sizeof why);
            free (red->placeholder);
            sl_buf_free (&bytes);
            sl_policy_yaml_error (ctx, item, "%s%s", pattern ? "bad regex: " : "", why);
            return -1;
        }
        red->literal = sl_policy_match_literal (pattern);
        sl_buf_free (&bytes);
        r->redact_count++;
    }
    return 0;
}

//  history: a list of {tool, args}: earlier calls that must have happened.
int
sl_policy_fields_history (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_rule_t *r)
{
    if (node->type != YAML_SEQUENCE_NODE || node->data.sequence.items.start == node->data.sequence.items.top) {
        sl_policy_yaml_error (ctx, node, "history must be a list of {tool, args} entries");
        return -1;
    }
    for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
        yaml_node_t *item = sl_policy_yaml_node (ctx, *it);
        if (item->type != YAML_MAPPING_NODE) {
            sl_policy_yaml_error (ctx, item, "each history entry must be a mapping with tool and/or args");
            return -1;
        }
        r->history = sl_xrealloc (r->history, (size_t) (r->history_count + 1) * sizeof (sl_policy_past_t));
        sl_policy_past_t *past = &r->history [r->history_count++];
        memset (past, 0, sizeof *past);
        for (yaml_node_pair_t *p = item->data.mapping.pairs.start; p < item->data.mapping.pairs.top; p++) {
            yaml_node_t *k = sl_policy_yaml_node (ctx, p->key);
            yaml_node_t *v = sl_policy_yaml_node (ctx, p->value);
            const char *key = sl_policy_yaml_scalar (k);
            int rc;
            if (key && strcmp (key, "tool") == 0)
                rc = sl_policy_fields_names (ctx, v, "tool", &past->tools);
            else
            if (key && strcmp (key, "args") == 0)
                rc = sl_policy_fields_matchers (ctx, v, "args", "pointer", &past->args, &past->arg_count);
            else {
                sl_policy_yaml_error (ctx, k, "unknown history field '%s' (expected tool, args)", key ? key : "?");
                rc = -1;
            }
            if (rc)
                return -1;
        }
        if (!past->tools.count && !past->arg_count) {
            sl_policy_yaml_error (ctx, item, "a history entry needs tool or args");
            return -1;
        }
    }
    return 0;
}

static sl_policy_edit_t *
s_new_edit (sl_policy_rule_t *r)
{
    r->edits = sl_xrealloc (r->edits, (size_t) (r->edit_count + 1) * sizeof (sl_policy_edit_t));
    sl_policy_edit_t *e = &r->edits [r->edit_count++];
    memset (e, 0, sizeof *e);
    return e;
}

static int
s_parse_edit_pointer (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_policy_edit_t *e)
{
    const char *ptr = sl_policy_yaml_scalar (node);
    if (!ptr || *ptr != '/') {
        sl_policy_yaml_error (ctx, node, "a rewrite names a field by a JSON pointer starting with '/'");
        return -1;
    }
    e->pointer = sl_xstrdup (ptr);
    return s_split_pointer (ctx, node, ptr, &e->tokens, &e->token_count);
}

//  set: a mapping of pointer to value; delete: a list of pointers.
int
sl_policy_fields_edits (sl_policy_yaml_t *ctx, yaml_node_t *node, bool is_set, sl_policy_rule_t *r)
{
    if (is_set && node->type != YAML_MAPPING_NODE) {
        sl_policy_yaml_error (ctx, node, "set must be a mapping of JSON pointer to value");
        return -1;
    }
    if (!is_set && node->type != YAML_SEQUENCE_NODE) {
        sl_policy_yaml_error (ctx, node, "delete must be a list of JSON pointers");
        return -1;
    }
    if (is_set)
        for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
            sl_policy_edit_t *e = s_new_edit (r);
            if (s_parse_edit_pointer (ctx, sl_policy_yaml_node (ctx, p->key), e))
                return -1;
            if (!(e->value = sl_policy_yaml_json (ctx, sl_policy_yaml_node (ctx, p->value))))
                return -1;
        }
    else
        for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++)
            if (s_parse_edit_pointer (ctx, sl_policy_yaml_node (ctx, *it), s_new_edit (r)))
                return -1;
    return 0;
}

//  What an LLM judge and a decision service are both asked with: url,
//  timeout_ms and concurrency. True when key is one of them (*rc: 0, or
//  -1 with the error recorded).
static bool
s_spec_field (sl_policy_yaml_t *ctx, const char *key, yaml_node_t *v, sl_llm_spec_t *spec, int *rc)
{
    long n = 0;
    if (strcmp (key, "url") == 0) {
        *rc = sl_policy_yaml_string (ctx, v, "url", &spec->url);
        if (!*rc && strncmp (spec->url, "http://", 7) != 0 && strncmp (spec->url, "https://", 8) != 0) {
            sl_policy_yaml_error (ctx, v, "url must start with http:// or https://");
            *rc = -1;
        }
    }
    else
    if (strcmp (key, "timeout_ms") == 0) {
        *rc = sl_policy_yaml_int (ctx, v, "timeout_ms", 1, 600000, &n);
        spec->timeout_ms = (int) n;
    }
    else
    if (strcmp (key, "concurrency") == 0) {
        *rc = sl_policy_yaml_int (ctx, v, "concurrency", 1, 100000, &n);
        spec->concurrency = (int) n;
    }
    else
        return false;
    return true;
}

//  One field of an llm_judge: mapping.
static int
s_llm_field (sl_policy_yaml_t *ctx, yaml_node_t *k, yaml_node_t *v, const char *key, void *arg)
{
    sl_llm_spec_t *spec = arg;
    long n;
    int rc;
    if (strcmp (key, "api") == 0) {
        //  A dialect whose module can be asked a question.
        const char *api = sl_policy_yaml_scalar (v);
        const sl_dialect_t *d = api ? sl_dialect_find (api) : NULL;
        if (!sl_dialect_asks (d)) {
            sl_buf_t names = { 0 };
            sl_dialect_names (", ", " or ", sl_dialect_asks, &names);
            sl_policy_yaml_error (ctx, v, "api must be %s", sl_buf_cstr (&names));
            sl_buf_free (&names);
            return -1;
        }
        spec->dialect = d->id;
        rc = 0;
    }
    else
    if (s_spec_field (ctx, key, v, spec, &rc))
        ;
    else
    if (strcmp (key, "model") == 0)
        rc = sl_policy_yaml_string (ctx, v, "model", &spec->model);
    else
    if (strcmp (key, "api_key_env") == 0)
        rc = sl_policy_yaml_string (ctx, v, "api_key_env", &spec->api_key_env);
    else
    if (strcmp (key, "prompt") == 0)
        rc = sl_policy_yaml_string (ctx, v, "prompt", &spec->prompt);
    else
    if (strcmp (key, "threshold") == 0) {
        rc = sl_policy_yaml_number (ctx, v, "threshold", &spec->threshold);
        if (!rc && !(spec->threshold >= 0.0 && spec->threshold <= 1.0)) {
            sl_policy_yaml_error (ctx, v, "threshold must be from 0 to 1");
            rc = -1;
        }
    }
    else
    if (strcmp (key, "max_tokens") == 0) {
        rc = sl_policy_yaml_int (ctx, v, "max_tokens", 1, 100000, &n);
        spec->max_tokens = (int) n;
    }
    else
    if (strcmp (key, "on_error") == 0) {
        int action = sl_policy_yaml_scalar (v) ? sl_action_parse (sl_policy_yaml_scalar (v)) : 0;
        if (action != SL_ACT_ALLOW && action != SL_ACT_BLOCK) {
            sl_policy_yaml_error (ctx, v, "on_error must be block or allow");
            return -1;
        }
        spec->on_error = (sl_action_t) action;
        rc = 0;
    }
    else {
        sl_policy_yaml_error (ctx, k, "unknown llm_judge field '%s' (expected api, url, model, api_key_env, "
                              "prompt, threshold, timeout_ms, on_error, concurrency, max_tokens)", key);
        return -1;
    }
    return rc;
}

int
sl_policy_fields_llm (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_llm_spec_t *spec)
{
    if (sl_policy_yaml_mapping (ctx, node, "llm_judge must be a mapping", s_llm_field, spec))
        return -1;
    if (!spec->model) {
        sl_policy_yaml_error (ctx, node, "llm_judge needs a model");
        return -1;
    }
    if (!spec->url)
        spec->url = sl_llm_default_url (spec->dialect, spec->model);
    if (!spec->prompt)
        spec->prompt = sl_xstrdup (sl_llm_default_prompt);
    return 0;
}

//  One field of a decide: mapping.
static int
s_decide_field (sl_policy_yaml_t *ctx, yaml_node_t *k, yaml_node_t *v, const char *key, void *arg)
{
    sl_llm_spec_t *spec = arg;
    int rc;
    if (s_spec_field (ctx, key, v, spec, &rc))
        return rc;
    if (strcmp (key, "on_error") == 0) {
        int action = sl_policy_yaml_scalar (v) ? sl_action_parse (sl_policy_yaml_scalar (v)) : 0;
        if (action != SL_ACT_ALLOW && action != SL_ACT_BLOCK && action != SL_ACT_TERMINATE) {
            sl_policy_yaml_error (ctx, v, "on_error must be block, allow or terminate");
            return -1;
        }
        spec->on_error = (sl_action_t) action;
        return 0;
    }
    sl_policy_yaml_error (ctx, k, "unknown decide field '%s' (expected url, timeout_ms, on_error, "
                          "concurrency)", key);
    return -1;
}

//  A decision service: where, how long, how many at once, and what a
//  check that did not run does. The LLM judge's limits, and on_error may
//  also end the response (terminate).
int
sl_policy_fields_decide (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_llm_spec_t *spec)
{
    if (sl_policy_yaml_mapping (ctx, node, "decide must be a mapping {url, timeout_ms, on_error, concurrency}",
                                s_decide_field, spec))
        return -1;
    if (!spec->url) {
        sl_policy_yaml_error (ctx, node, "decide needs a url (the decision service's, e.g. "
                              "http://127.0.0.1:8181/v1/data/sluice/decision)");
        return -1;
    }
    return 0;
}
