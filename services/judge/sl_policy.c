/*  sl_policy.c - policy parsing (libyaml) and rule evaluation.

    The YAML document is loaded as a node tree; every node keeps its
    position, so each error points at the offending line and column.
    Argument matching parses the call's arguments once with jansson and
    resolves RFC 6901 JSON pointers in the tree.
*/
#include "sl_policy.h"

#include <errno.h>
#include <jansson.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "../../common/sl_alloc.h"
#include "../../common/sl_buf.h"

#define SL_POLICY_MAX_FILE (4u << 20)   //  bytes

typedef struct {
    char *pointer;                      //  JSON pointer, "" is the whole value
    regex_t regex;
    char *pattern;
} s_arg_match_t;

typedef struct {
    char *id;
    char *tool;                         //  NULL matches any tool
    s_arg_match_t *args;
    int arg_count;
    sl_action_t action;
    char *message;                      //  template, NULL for the default
    char *reason;                       //  "rule <id> matched"
} s_rule_t;

struct _sl_policy_t {
    int refs;
    char *name;
    sl_action_t default_action;
    s_rule_t *rules;
    int rule_count;
};

//  --------------------------------------------------------------------------
//  Errors with positions

typedef struct {
    const char *name;
    char **error;
    yaml_document_t *doc;
} s_ctx_t;

static void
s_error_at (s_ctx_t *ctx, yaml_node_t *node, const char *format, ...)
{
    if (*ctx->error)
        return;                         //  keep the first error
    sl_buf_t buf = { 0 };
    sl_buf_printf (&buf, "%s:%zu:%zu: ", ctx->name,
                   node ? node->start_mark.line + 1 : 1,
                   node ? node->start_mark.column + 1 : 1);
    va_list args;
    va_start (args, format);
    sl_buf_vprintf (&buf, format, args);
    va_end (args);
    *ctx->error = sl_xstrdup (sl_buf_cstr (&buf));
    sl_buf_free (&buf);
}

static const char *
s_scalar (yaml_node_t *node)
{
    return node && node->type == YAML_SCALAR_NODE ? (const char *) node->data.scalar.value : NULL;
}

//  --------------------------------------------------------------------------
//  Life cycle

static void
s_rule_free (s_rule_t *r)
{
    for (int i = 0; i < r->arg_count; i++) {
        if (r->args [i].pattern)        //  compiled only when pattern is set
            regfree (&r->args [i].regex);
        free (r->args [i].pointer);
        free (r->args [i].pattern);
    }
    free (r->args);
    free (r->id);
    free (r->tool);
    free (r->message);
    free (r->reason);
}

static void
s_policy_free (sl_policy_t *self)
{
    for (int i = 0; i < self->rule_count; i++)
        s_rule_free (&self->rules [i]);
    free (self->rules);
    free (self->name);
    free (self);
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
        s_policy_free (*self_p);
    *self_p = NULL;
}

sl_policy_t *
sl_policy_allow_all (void)
{
    sl_policy_t *self = sl_xcalloc (1, sizeof *self);
    self->refs = 1;
    self->name = sl_xstrdup ("(allow all)");
    self->default_action = SL_ACT_ALLOW;
    return self;
}

int
sl_policy_rule_count (sl_policy_t *self)
{
    return self->rule_count;
}

const char *
sl_policy_name (sl_policy_t *self)
{
    return self->name;
}

//  --------------------------------------------------------------------------
//  Parsing

static int
s_parse_action (s_ctx_t *ctx, yaml_node_t *node, sl_action_t *out)
{
    const char *v = s_scalar (node);
    int action = v ? sl_action_parse (v) : 0;
    if (action != SL_ACT_ALLOW && action != SL_ACT_BLOCK) {
        s_error_at (ctx, node, "action must be allow or block");
        return -1;
    }
    *out = (sl_action_t) action;
    return 0;
}

static int
s_parse_arg (s_ctx_t *ctx, yaml_node_t *node, s_arg_match_t *m)
{
    if (node->type != YAML_MAPPING_NODE) {
        s_error_at (ctx, node, "each args entry must be a mapping with pointer and regex");
        return -1;
    }
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node (ctx->doc, p->key);
        yaml_node_t *v = yaml_document_get_node (ctx->doc, p->value);
        const char *key = s_scalar (k);
        if (!key || !s_scalar (v)) {
            s_error_at (ctx, v, "args fields must be plain strings");
            return -1;
        }
        if (strcmp (key, "pointer") == 0) {
            const char *ptr = s_scalar (v);
            if (*ptr && *ptr != '/') {
                s_error_at (ctx, v, "a JSON pointer is empty or starts with '/'");
                return -1;
            }
            free (m->pointer);
            m->pointer = sl_xstrdup (ptr);
        }
        else
        if (strcmp (key, "regex") == 0) {
            if (m->pattern) {
                s_error_at (ctx, k, "regex given twice");
                return -1;
            }
            m->pattern = sl_xstrdup (s_scalar (v));
            int rc = regcomp (&m->regex, m->pattern, REG_EXTENDED | REG_NOSUB);
            if (rc) {
                char why [128];
                regerror (rc, &m->regex, why, sizeof why);
                free (m->pattern);
                m->pattern = NULL;
                s_error_at (ctx, v, "bad regex: %s", why);
                return -1;
            }
        }
        else {
            s_error_at (ctx, k, "unknown args field '%s' (expected pointer, regex)", key);
            return -1;
        }
    }
    if (!m->pointer || !m->pattern) {
        s_error_at (ctx, node, "an args entry needs both pointer and regex");
        return -1;
    }
    return 0;
}

static int
s_parse_rule (s_ctx_t *ctx, yaml_node_t *node, s_rule_t *r)
{
    if (node->type != YAML_MAPPING_NODE) {
        s_error_at (ctx, node, "a rule must be a mapping");
        return -1;
    }
    bool has_action = false;
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node (ctx->doc, p->key);
        yaml_node_t *v = yaml_document_get_node (ctx->doc, p->value);
        const char *key = s_scalar (k);
        if (!key) {
            s_error_at (ctx, k, "rule keys must be strings");
            return -1;
        }
        if (strcmp (key, "id") == 0 || strcmp (key, "tool") == 0 || strcmp (key, "message") == 0) {
            if (!s_scalar (v)) {
                s_error_at (ctx, v, "%s must be a string", key);
                return -1;
            }
            char **field = key [0] == 'i' ? &r->id : key [0] == 't' ? &r->tool : &r->message;
            free (*field);
            *field = sl_xstrdup (s_scalar (v));
        }
        else
        if (strcmp (key, "action") == 0) {
            if (s_parse_action (ctx, v, &r->action))
                return -1;
            has_action = true;
        }
        else
        if (strcmp (key, "args") == 0) {
            if (v->type != YAML_SEQUENCE_NODE) {
                s_error_at (ctx, v, "args must be a list");
                return -1;
            }
            int n = (int) (v->data.sequence.items.top - v->data.sequence.items.start);
            r->args = sl_xcalloc ((size_t) n + 1, sizeof (s_arg_match_t));
            for (int i = 0; i < n; i++) {
                yaml_node_t *item = yaml_document_get_node (ctx->doc, v->data.sequence.items.start [i]);
                r->arg_count = i + 1;
                if (s_parse_arg (ctx, item, &r->args [i]))
                    return -1;
            }
        }
        else {
            s_error_at (ctx, k, "unknown rule field '%s' (expected id, tool, args, action, message)", key);
            return -1;
        }
    }
    if (!r->id) {
        s_error_at (ctx, node, "a rule needs an id");
        return -1;
    }
    if (!has_action) {
        s_error_at (ctx, node, "rule '%s' needs an action", r->id);
        return -1;
    }
    sl_buf_t reason = { 0 };
    sl_buf_printf (&reason, "rule %s matched", r->id);
    r->reason = sl_xstrdup (sl_buf_cstr (&reason));
    sl_buf_free (&reason);
    return 0;
}

static int
s_parse_root (s_ctx_t *ctx, yaml_node_t *root, sl_policy_t *self)
{
    if (!root) {
        s_error_at (ctx, NULL, "the policy is empty");
        return -1;
    }
    if (root->type != YAML_MAPPING_NODE) {
        s_error_at (ctx, root, "the policy must be a mapping with default and rules");
        return -1;
    }
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node (ctx->doc, p->key);
        yaml_node_t *v = yaml_document_get_node (ctx->doc, p->value);
        const char *key = s_scalar (k);
        if (key && strcmp (key, "default") == 0) {
            if (s_parse_action (ctx, v, &self->default_action))
                return -1;
        }
        else
        if (key && strcmp (key, "version") == 0) {
            if (!s_scalar (v) || strcmp (s_scalar (v), "1") != 0) {
                s_error_at (ctx, v, "unsupported policy version (this sluice reads version 1)");
                return -1;
            }
        }
        else
        if (key && strcmp (key, "rules") == 0) {
            if (v->type != YAML_SEQUENCE_NODE) {
                s_error_at (ctx, v, "rules must be a list");
                return -1;
            }
            int n = (int) (v->data.sequence.items.top - v->data.sequence.items.start);
            self->rules = sl_xcalloc ((size_t) n + 1, sizeof (s_rule_t));
            for (int i = 0; i < n; i++) {
                yaml_node_t *item = yaml_document_get_node (ctx->doc, v->data.sequence.items.start [i]);
                self->rule_count = i + 1;
                if (s_parse_rule (ctx, item, &self->rules [i]))
                    return -1;
                for (int j = 0; j < i; j++)
                    if (strcmp (self->rules [j].id, self->rules [i].id) == 0) {
                        s_error_at (ctx, item, "duplicate rule id '%s'", self->rules [i].id);
                        return -1;
                    }
            }
        }
        else {
            s_error_at (ctx, k, "unknown top-level field '%s' (expected version, default, rules)",
                        key ? key : "?");
            return -1;
        }
    }
    return 0;
}

sl_policy_t *
sl_policy_parse (const char *text, size_t size, const char *name, char **error)
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
    sl_policy_t *self = sl_xcalloc (1, sizeof *self);
    self->refs = 1;
    self->name = sl_xstrdup (name);
    self->default_action = SL_ACT_ALLOW;
    s_ctx_t ctx = { name, error, &doc };
    int rc = s_parse_root (&ctx, yaml_document_get_root_node (&doc), self);
    yaml_document_delete (&doc);
    yaml_parser_delete (&parser);
    if (rc) {
        s_policy_free (self);
        return NULL;
    }
    return self;
}

sl_policy_t *
sl_policy_load (const char *path, char **error)
{
    FILE *f = fopen (path, "rb");
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
    sl_policy_t *self = sl_policy_parse (text.data ? text.data : "", text.len, path, error);
    sl_buf_free (&text);
    return self;
}

//  --------------------------------------------------------------------------
//  Evaluation

//  Resolve an RFC 6901 pointer; NULL when the path does not exist.
static json_t *
s_resolve (json_t *root, const char *pointer)
{
    json_t *node = root;
    const char *p = pointer;
    while (node && *p == '/') {
        p++;
        sl_buf_t token = { 0 };
        while (*p && *p != '/') {
            if (p [0] == '~' && p [1] == '0') {
                sl_buf_putc (&token, '~');
                p += 2;
            }
            else
            if (p [0] == '~' && p [1] == '1') {
                sl_buf_putc (&token, '/');
                p += 2;
            }
            else
                sl_buf_putc (&token, *p++);
        }
        const char *t = sl_buf_cstr (&token);
        if (json_is_object (node))
            node = json_object_get (node, t);
        else
        if (json_is_array (node)) {
            char *end;
            long i = strtol (t, &end, 10);
            node = (*t && !*end && i >= 0) ? json_array_get (node, (size_t) i) : NULL;
        }
        else
            node = NULL;
        sl_buf_free (&token);
    }
    return node;
}

static bool
s_arg_matches (const s_arg_match_t *m, json_t *args)
{
    json_t *value = s_resolve (args, m->pointer);
    if (!value)
        return false;
    if (json_is_string (value))
        return regexec (&m->regex, json_string_value (value), 0, NULL, 0) == 0;
    //  Non-strings are matched in their compact JSON form.
    char *text = json_dumps (value, JSON_ENCODE_ANY | JSON_COMPACT);
    bool hit = text && regexec (&m->regex, text, 0, NULL, 0) == 0;
    free (text);
    return hit;
}

static char *
s_render_message (const s_rule_t *r, sl_str_t tool)
{
    const char *tmpl = r->message
        ? r->message
        : "sluice blocked a call to the tool \"{tool}\" (policy rule {rule}).";
    sl_buf_t out = { 0 };
    for (const char *p = tmpl; *p; p++) {
        if (strncmp (p, "{tool}", 6) == 0) {
            sl_buf_append_str (&out, tool);
            p += 5;
        }
        else
        if (strncmp (p, "{rule}", 6) == 0) {
            sl_buf_puts (&out, r->id);
            p += 5;
        }
        else
            sl_buf_putc (&out, *p);
    }
    char *s = sl_xstrdup (sl_buf_cstr (&out));
    sl_buf_free (&out);
    return s;
}

void
sl_policy_decide (sl_policy_t *self, const sl_call_t *call, sl_decision_t *out)
{
    memset (out, 0, sizeof *out);
    json_t *args = NULL;
    bool parsed = false;
    for (int i = 0; i < self->rule_count; i++) {
        const s_rule_t *r = &self->rules [i];
        if (r->tool && !sl_str_eq (call->name, r->tool))
            continue;
        bool match = true;
        if (r->arg_count) {
            if (!parsed) {
                parsed = true;
                if (call->args_valid && call->arguments.ptr)
                    args = json_loadb (call->arguments.ptr, call->arguments.len, 0, NULL);
            }
            for (int j = 0; j < r->arg_count && match; j++)
                match = args && s_arg_matches (&r->args [j], args);
        }
        if (!match)
            continue;
        out->action = r->action;
        out->check = SL_CHK_RAN;
        out->rule = r->id;
        out->reason = r->reason;
        if (r->action == SL_ACT_BLOCK)
            out->message = s_render_message (r, call->name);
        json_decref (args);
        return;
    }
    json_decref (args);
    out->action = self->default_action;
    out->check = SL_CHK_DEFAULT;
    out->reason = "no rule matched";
    if (out->action == SL_ACT_BLOCK) {
        s_rule_t fallback = { .id = (char *) "default" };
        out->message = s_render_message (&fallback, call->name);
    }
}

void
sl_decision_clear (sl_decision_t *decision)
{
    free (decision->message);
    memset (decision, 0, sizeof *decision);
}
