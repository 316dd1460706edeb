/*  sl_policytest.c - a policy's tests (see sl_policytest.h).

    Loading walks the file with sl_yaml (every error at its node's line and
    column) into one struct per case; values that are JSON to the policy
    (arguments, history, tool definitions, headers, taint) are turned into
    JSON text with YAML's typing of plain scalars, as the policy's own
    loader does. Running builds the sl_call_t the judge would build and
    asks the policy, answering an LLM judge, a decision service or a
    person from the case's fixtures.
*/
#include "common/policy/sl_policytest.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_yaml.h"

#define S_MAX_DEPTH 32                  //  nesting of a YAML value turned into JSON
#define S_ASK_APPROVER "sluice-policy test" //  who approves or denies in a fixture

//  A fixture for a rule that asks: nothing, or what the answer is.
typedef enum { S_ANSWER_NONE = 0, S_ANSWER_GIVEN } s_answer_t;

typedef struct {
    char *name;
    size_t line;
    //  the call
    char *tool;
    char *arguments;                    //  JSON text (raw_arguments: as written)
    bool args_valid;
    bool repaired;
    int cut;                            //  sl_cut_t
    int ordinal;
    char *model, *last_user, *tools, *history, *taint, *headers;
    char *key_id, *team, *user;
    //  or a part of a request (request rules), instead of a call
    bool is_part;
    int part_kind;                      //  sl_rpart_kind_t
    char *text;                         //  the part's text
    char *result_tool;                  //  a tool result's tool, a definition's name
    bool is_error;                      //  a tool result that is an error
    //  the fixtures
    s_answer_t llm;                     //  an LLM judge's answer
    int llm_check;                      //  RAN, TIMEOUT, ERROR
    double llm_p;
    s_answer_t decide;                  //  a decision service's answer
    int decide_check;
    bool decide_allow;
    char *decide_rewrite;               //  JSON, or NULL
    char *decide_reason;
    int ask;                            //  sl_check_t of a person's answer, 0: none
    //  the expectation
    char *expect_action;                //  an action's name, or "ask"
    char *expect_rule;                  //  NULL: not checked; "" : the default
    char *expect_args;                  //  rewrite: the arguments (JSON), NULL: not checked
    char *expect_text;                  //  redact: the part's text after it, NULL: not checked
    bool has_expect;
} s_case_t;

struct _sl_policytest_t {
    s_case_t *cases;
    size_t count;
};

//  --------------------------------------------------------------------------
//  YAML values as JSON

static json_t *s_json (sl_yaml_t *y, yaml_node_t *node, int depth);

typedef struct {
    json_t *out;
    int depth;
} s_walk_t;

static int
s_json_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *value, void *arg)
{
    (void) knode;
    s_walk_t *w = arg;
    json_t *v = s_json (y, value, w->depth + 1);
    if (!v)
        return -1;
    json_object_set_new (w->out, key, v);
    return 0;
}

static int
s_json_item (sl_yaml_t *y, yaml_node_t *item, size_t index, void *arg)
{
    (void) index;
    s_walk_t *w = arg;
    json_t *v = s_json (y, item, w->depth + 1);
    if (!v)
        return -1;
    json_array_append_new (w->out, v);
    return 0;
}

//  A plain scalar is typed as YAML types it (a number, true, false,
//  null); a quoted one is a string.
static json_t *
s_scalar_json (yaml_node_t *node)
{
    const char *s = (const char *) node->data.scalar.value;
    if (node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return json_string (s);
    if (!strcmp (s, "true"))
        return json_true ();
    if (!strcmp (s, "false"))
        return json_false ();
    if (!strcmp (s, "null") || !strcmp (s, "~") || !*s)
        return json_null ();
    char *end = NULL;
    errno = 0;
    long long i = strtoll (s, &end, 10);
    if (*s && end && !*end && errno == 0)
        return json_integer (i);
    errno = 0;
    double d = strtod (s, &end);
    if (*s && end && !*end && errno == 0 && isfinite (d) && strpbrk (s, "xXnN") == NULL)
        return json_real (d);
    return json_string (s);
}

static json_t *
s_json (sl_yaml_t *y, yaml_node_t *node, int depth)
{
    if (depth > S_MAX_DEPTH) {
        sl_yaml_error (y, node, "nested deeper than %d", S_MAX_DEPTH);
        return NULL;
    }
    s_walk_t w = { .depth = depth };
    switch (node->type) {
        case YAML_SCALAR_NODE:
            return s_scalar_json (node);
        case YAML_MAPPING_NODE:
            w.out = json_object ();
            if (sl_yaml_mapping (y, node, "a mapping", s_json_member, &w)) {
                json_decref (w.out);
                return NULL;
            }
            return w.out;
        case YAML_SEQUENCE_NODE:
            w.out = json_array ();
            if (sl_yaml_sequence (y, node, "a list", s_json_item, &w)) {
                json_decref (w.out);
                return NULL;
            }
            return w.out;
        default:
            sl_yaml_error (y, node, "not a YAML value");
            return NULL;
    }
}

//  A node as compact JSON text with sorted keys (owned), NULL on error.
static char *
s_json_text (sl_yaml_t *y, yaml_node_t *node)
{
    json_t *j = s_json (y, node, 0);
    if (!j)
        return NULL;
    char *text = json_dumps (j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref (j);
    return text;
}

//  A value given as JSON: a mapping or list as YAML, or a string holding
//  JSON text, which must be valid. Owned text in *out.
static int
s_json_value (sl_yaml_t *y, yaml_node_t *node, const char *what, char **out)
{
    const char *s = sl_yaml_scalar (node);
    if (s && node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) {
        json_error_t err;
        json_t *j = json_loads (s, JSON_DECODE_ANY, &err);
        if (!j)
            return sl_yaml_error (y, node, "%s: not valid JSON (%s at character %d); to test a call whose "
                                  "arguments are not JSON, give them as raw_arguments", what, err.text,
                                  err.position);
        *out = json_dumps (j, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        json_decref (j);
        return 0;
    }
    *out = s_json_text (y, node);
    return *out ? 0 : -1;
}

static int
s_string (sl_yaml_t *y, yaml_node_t *node, const char *what, char **out)
{
    const char *s = sl_yaml_scalar (node);
    if (!s)
        return sl_yaml_error (y, node, "%s: a string", what);
    free (*out);
    *out = sl_xstrdup (s);
    return 0;
}

//  --------------------------------------------------------------------------
//  The file

static int
s_identity_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_case_t *c = arg;
    if (!strcmp (key, "key"))
        return s_string (y, v, "identity key", &c->key_id);
    if (!strcmp (key, "team"))
        return s_string (y, v, "identity team", &c->team);
    if (!strcmp (key, "user"))
        return s_string (y, v, "identity user", &c->user);
    return sl_yaml_error (y, knode, "identity: unknown field '%s' (key, team, user)", key);
}

//  history: [{tool: NAME, arguments: {...}}] -> [{"name":..,"args":..}]
typedef struct {
    json_t *out;
} s_hist_t;

static int
s_past_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    json_t *entry = arg;
    if (!strcmp (key, "tool")) {
        const char *s = sl_yaml_scalar (v);
        if (!s)
            return sl_yaml_error (y, v, "history tool: a string");
        json_object_set_new (entry, "name", json_string (s));
        return 0;
    }
    if (!strcmp (key, "arguments")) {
        json_t *j = s_json (y, v, 1);
        if (!j)
            return -1;
        json_object_set_new (entry, "args", j);
        return 0;
    }
    return sl_yaml_error (y, knode, "history: unknown field '%s' (tool, arguments)", key);
}

static int
s_past_item (sl_yaml_t *y, yaml_node_t *item, size_t index, void *arg)
{
    (void) index;
    s_hist_t *h = arg;
    json_t *entry = json_object ();
    if (sl_yaml_mapping (y, item, "a history entry", s_past_member, entry)) {
        json_decref (entry);
        return -1;
    }
    if (!json_object_get (entry, "name")) {
        json_decref (entry);
        return sl_yaml_error (y, item, "a history entry needs its tool");
    }
    if (!json_object_get (entry, "args"))
        json_object_set_new (entry, "args", json_object ());
    json_array_append_new (h->out, entry);
    return 0;
}

static int
s_call_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_case_t *c = arg;
    if (!strcmp (key, "tool"))
        return s_string (y, v, "call tool", &c->tool);
    if (!strcmp (key, "arguments")) {
        if (c->arguments)
            return sl_yaml_error (y, knode, "arguments and raw_arguments: one or the other");
        return s_json_value (y, v, "call arguments", &c->arguments);
    }
    if (!strcmp (key, "raw_arguments")) {
        if (c->arguments)
            return sl_yaml_error (y, knode, "arguments and raw_arguments: one or the other");
        if (s_string (y, v, "call raw_arguments", &c->arguments))
            return -1;
        c->args_valid = sl_json_valid (sl_str (c->arguments));
        return 0;
    }
    if (!strcmp (key, "repaired"))
        return sl_yaml_bool (y, v, "call repaired", &c->repaired);
    if (!strcmp (key, "cut")) {
        const char *s = sl_yaml_scalar (v);
        c->cut = s ? sl_cut_parse (sl_str (s)) : 0;
        if (!c->cut)
            return sl_yaml_error (y, v, "call cut: length, filter, error, eof, size or invalid");
        return 0;
    }
    if (!strcmp (key, "ordinal")) {
        int64_t n = 0;
        if (sl_yaml_int (y, v, "call ordinal", 1, 100000, &n))
            return -1;
        c->ordinal = (int) n;
        return 0;
    }
    if (!strcmp (key, "model"))
        return s_string (y, v, "call model", &c->model);
    if (!strcmp (key, "last_user"))
        return s_string (y, v, "call last_user", &c->last_user);
    if (!strcmp (key, "identity"))
        return sl_yaml_mapping (y, v, "call identity", s_identity_member, c);
    if (!strcmp (key, "tools")) {
        if (v->type != YAML_SEQUENCE_NODE)
            return sl_yaml_error (y, v, "call tools: a list of tool definitions");
        free (c->tools);
        c->tools = s_json_text (y, v);
        return c->tools ? 0 : -1;
    }
    if (!strcmp (key, "headers")) {
        if (v->type != YAML_MAPPING_NODE)
            return sl_yaml_error (y, v, "call headers: a mapping of header names to values");
        free (c->headers);
        c->headers = s_json_text (y, v);
        return c->headers ? 0 : -1;
    }
    if (!strcmp (key, "taint")) {
        if (v->type != YAML_SEQUENCE_NODE)
            return sl_yaml_error (y, v, "call taint: a list of {tool, part}");
        free (c->taint);
        c->taint = s_json_text (y, v);
        return c->taint ? 0 : -1;
    }
    if (!strcmp (key, "history")) {
        s_hist_t h = { .out = json_array () };
        if (sl_yaml_sequence (y, v, "call history", s_past_item, &h)) {
            json_decref (h.out);
            return -1;
        }
        free (c->history);
        c->history = json_dumps (h.out, JSON_COMPACT);
        json_decref (h.out);
        return 0;
    }
    return sl_yaml_error (y, knode, "call: unknown field '%s' (tool, arguments, raw_arguments, repaired, cut, "
                          "ordinal, model, last_user, identity, history, tools, headers, taint)", key);
}

static const char *s_part_kinds [SL_RPART_MAX] = {
    NULL, "system", "user", "assistant", "tool_result", "tool", "text"
};

static int
s_part_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_case_t *c = arg;
    if (!strcmp (key, "kind")) {
        const char *s = sl_yaml_scalar (v);
        for (int k = 1; s && k < SL_RPART_MAX; k++)
            if (!strcmp (s, s_part_kinds [k]))
                c->part_kind = k;
        if (!c->part_kind)
            return sl_yaml_error (y, v, "part kind: system, user, assistant, tool_result, tool or text");
        return 0;
    }
    if (!strcmp (key, "text"))
        return s_string (y, v, "part text", &c->text);
    if (!strcmp (key, "tool"))
        return s_string (y, v, "part tool", &c->result_tool);
    if (!strcmp (key, "error"))
        return sl_yaml_bool (y, v, "part error", &c->is_error);
    if (!strcmp (key, "model"))
        return s_string (y, v, "part model", &c->model);
    if (!strcmp (key, "identity"))
        return sl_yaml_mapping (y, v, "part identity", s_identity_member, c);
    if (!strcmp (key, "headers")) {
        if (v->type != YAML_MAPPING_NODE)
            return sl_yaml_error (y, v, "part headers: a mapping of header names to values");
        free (c->headers);
        c->headers = s_json_text (y, v);
        return c->headers ? 0 : -1;
    }
    return sl_yaml_error (y, knode, "part: unknown field '%s' (kind, text, tool, error, model, identity, "
                          "headers)", key);
}

static int
s_expect_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_case_t *c = arg;
    if (!strcmp (key, "action")) {
        const char *s = sl_yaml_scalar (v);
        bool known = s && (!strcmp (s, "ask") || sl_action_parse (s) > SL_ACT_NONE);
        if (!known)
            return sl_yaml_error (y, v, "expect action: allow, block, drop, rewrite, terminate or ask (a "
                                  "call); allow, redact, block_result, withhold or terminate (a part)");
        return s_string (y, v, "expect action", &c->expect_action);
    }
    if (!strcmp (key, "rule")) {
        const char *s = sl_yaml_scalar (v);
        if (s && !strcmp (s, "(default)")) {
            free (c->expect_rule);
            c->expect_rule = sl_xstrdup ("");
            return 0;
        }
        return s_string (y, v, "expect rule", &c->expect_rule);
    }
    if (!strcmp (key, "arguments"))
        return s_json_value (y, v, "expect arguments", &c->expect_args);
    if (!strcmp (key, "text"))
        return s_string (y, v, "expect text", &c->expect_text);
    return sl_yaml_error (y, knode, "expect: unknown field '%s' (action, rule, arguments, text)", key);
}

static int
s_check_of (sl_yaml_t *y, yaml_node_t *v, const char *what, int *out)
{
    const char *s = sl_yaml_scalar (v);
    if (s && !strcmp (s, "timeout"))
        *out = SL_CHK_TIMEOUT;
    else if (s && !strcmp (s, "error"))
        *out = SL_CHK_ERROR;
    else
        return sl_yaml_error (y, v, "%s: timeout or error", what);
    return 0;
}

static int
s_llm_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_case_t *c = arg;
    if (!strcmp (key, "probability")) {
        c->llm_check = SL_CHK_RAN;
        return sl_yaml_number (y, v, "llm probability", 0, 1, &c->llm_p);
    }
    if (!strcmp (key, "fails"))
        return s_check_of (y, v, "llm fails", &c->llm_check);
    return sl_yaml_error (y, knode, "llm: unknown field '%s' (probability, fails)", key);
}

static int
s_decide_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_case_t *c = arg;
    if (!strcmp (key, "allow")) {
        c->decide_check = SL_CHK_RAN;
        return sl_yaml_bool (y, v, "decide allow", &c->decide_allow);
    }
    if (!strcmp (key, "rewrite")) {
        if (v->type != YAML_MAPPING_NODE)
            return sl_yaml_error (y, v, "decide rewrite: the arguments, a mapping");
        free (c->decide_rewrite);
        c->decide_rewrite = s_json_text (y, v);
        return c->decide_rewrite ? 0 : -1;
    }
    if (!strcmp (key, "reason"))
        return s_string (y, v, "decide reason", &c->decide_reason);
    if (!strcmp (key, "fails"))
        return s_check_of (y, v, "decide fails", &c->decide_check);
    return sl_yaml_error (y, knode, "decide: unknown field '%s' (allow, rewrite, reason, fails)", key);
}

static int
s_case_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    s_case_t *c = arg;
    if (!strcmp (key, "name"))
        return s_string (y, v, "name", &c->name);
    if (!strcmp (key, "call")) {
        if (c->is_part)
            return sl_yaml_error (y, knode, "a case tests a call or a part, not both");
        if (!c->tool)
            c->tool = sl_xstrdup ("");  //  a call without its tool is reported below
        return sl_yaml_mapping (y, v, "call", s_call_member, c);
    }
    if (!strcmp (key, "part")) {
        if (c->tool)
            return sl_yaml_error (y, knode, "a case tests a call or a part, not both");
        c->is_part = true;
        return sl_yaml_mapping (y, v, "part", s_part_member, c);
    }
    if (!strcmp (key, "expect")) {
        c->has_expect = true;
        return sl_yaml_mapping (y, v, "expect", s_expect_member, c);
    }
    if (!strcmp (key, "llm")) {
        c->llm = S_ANSWER_GIVEN;
        c->llm_check = -1;
        if (sl_yaml_mapping (y, v, "llm", s_llm_member, c))
            return -1;
        return c->llm_check < 0 ? sl_yaml_error (y, v, "llm: probability or fails") : 0;
    }
    if (!strcmp (key, "decide")) {
        c->decide = S_ANSWER_GIVEN;
        c->decide_check = -1;
        if (sl_yaml_mapping (y, v, "decide", s_decide_member, c))
            return -1;
        return c->decide_check < 0 ? sl_yaml_error (y, v, "decide: allow or fails") : 0;
    }
    if (!strcmp (key, "ask")) {
        const char *s = sl_yaml_scalar (v);
        if (s && !strcmp (s, "approve"))
            c->ask = SL_CHK_APPROVED;
        else if (s && !strcmp (s, "deny"))
            c->ask = SL_CHK_DENIED;
        else if (s && !strcmp (s, "timeout"))
            c->ask = SL_CHK_TIMEOUT;
        else
            return sl_yaml_error (y, v, "ask: approve, deny or timeout");
        return 0;
    }
    return sl_yaml_error (y, knode, "case: unknown field '%s' (name, call, part, expect, llm, decide, ask)", key);
}

static void
s_case_free (s_case_t *c)
{
    free (c->name);
    free (c->tool);
    free (c->arguments);
    free (c->model);
    free (c->last_user);
    free (c->tools);
    free (c->history);
    free (c->taint);
    free (c->headers);
    free (c->key_id);
    free (c->team);
    free (c->user);
    free (c->decide_rewrite);
    free (c->decide_reason);
    free (c->expect_action);
    free (c->expect_rule);
    free (c->expect_args);
    free (c->expect_text);
    free (c->text);
    free (c->result_tool);
}

static int
s_case_item (sl_yaml_t *y, yaml_node_t *item, size_t index, void *arg)
{
    (void) index;
    sl_policytest_t *self = arg;
    if (self->count >= SL_POLICYTEST_MAX_CASES)
        return sl_yaml_error (y, item, "more than %d cases in one file", SL_POLICYTEST_MAX_CASES);
    self->cases = sl_xrealloc (self->cases, (self->count + 1) * sizeof *self->cases);
    s_case_t *c = &self->cases [self->count++];
    memset (c, 0, sizeof *c);
    c->line = item->start_mark.line + 1;
    c->args_valid = true;
    c->ordinal = 1;
    if (sl_yaml_mapping (y, item, "a case", s_case_member, c))
        return -1;
    if (!c->name)
        return sl_yaml_error (y, item, "a case needs a name");
    if (c->is_part && !c->part_kind)
        return sl_yaml_error (y, item, "case '%s': needs part: {kind: ...}", c->name);
    if (!c->is_part && (!c->tool || !*c->tool))
        return sl_yaml_error (y, item, "case '%s': needs call: {tool: ...} (or part: {kind: ...})", c->name);
    if (!c->has_expect || !c->expect_action)
        return sl_yaml_error (y, item, "case '%s': needs expect: {action: ...}", c->name);
    if (c->expect_args && strcmp (c->expect_action, "rewrite"))
        return sl_yaml_error (y, item, "case '%s': expect arguments go with action rewrite", c->name);
    if (c->expect_text && !c->is_part)
        return sl_yaml_error (y, item, "case '%s': expect text goes with a part", c->name);
    if (!c->arguments)
        c->arguments = sl_xstrdup ("{}");
    return 0;
}

static int
s_top_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *v, void *arg)
{
    if (!strcmp (key, "cases"))
        return sl_yaml_sequence (y, v, "cases", s_case_item, arg);
    return sl_yaml_error (y, knode, "unknown field '%s' (cases)", key);
}

sl_policytest_t *
sl_policytest_parse (const char *text, size_t size, const char *name, char **error)
{
    *error = NULL;
    sl_yaml_t *y = sl_yaml_parse (text, size, name, error);
    if (!y)
        return NULL;
    sl_policytest_t *self = sl_xcalloc (1, sizeof *self);
    yaml_node_t *root = sl_yaml_root (y);
    int rc = root ? sl_yaml_mapping (y, root, "a test file (cases: ...)", s_top_member, self)
                  : sl_yaml_error (y, NULL, "empty: a test file lists cases");
    if (rc == 0 && self->count == 0)
        rc = sl_yaml_error (y, root, "no cases");
    if (rc) {
        *error = sl_yaml_take_error (y);
        if (!*error)
            *error = sl_xstrdup ("cannot read the test file");
        sl_policytest_destroy (&self);
    }
    sl_yaml_destroy (&y);
    return self;
}

sl_policytest_t *
sl_policytest_load (const char *path, char **error)
{
    sl_buf_t text = { 0 };
    if (sl_yaml_read (path, SL_POLICYTEST_MAX_FILE, &text, error)) {
        sl_buf_free (&text);
        return NULL;
    }
    sl_policytest_t *self = sl_policytest_parse (text.data ? text.data : "", text.len, path, error);
    sl_buf_free (&text);
    return self;
}

void
sl_policytest_destroy (sl_policytest_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_policytest_t *self = *self_p;
    for (size_t i = 0; i < self->count; i++)
        s_case_free (&self->cases [i]);
    free (self->cases);
    free (self);
    *self_p = NULL;
}

size_t
sl_policytest_count (sl_policytest_t *self)
{
    return self->count;
}

const char *
sl_policytest_name (sl_policytest_t *self, size_t index)
{
    return index < self->count ? self->cases [index].name : NULL;
}

size_t
sl_policytest_line (sl_policytest_t *self, size_t index)
{
    return index < self->count ? self->cases [index].line : 0;
}

//  --------------------------------------------------------------------------
//  Running

static sl_str_t
s_opt (const char *s)
{
    return s ? sl_str (s) : SL_STR_NULL;
}

//  "block no-rm-rf", "allow (default)", "rewrite r {json}".
static char *
s_describe (const char *action, const char *rule, const char *arguments)
{
    sl_buf_t b = { 0 };
    sl_buf_puts (&b, action);
    if (rule)
        sl_buf_printf (&b, " %s", *rule ? rule : "(default)");
    if (arguments)
        sl_buf_printf (&b, " %s", arguments);
    char *out = sl_xstrdup (sl_buf_cstr (&b));
    sl_buf_free (&b);
    return out;
}

static bool
s_same_json (const char *a, const char *b)
{
    json_t *ja = json_loads (a, JSON_DECODE_ANY, NULL);
    json_t *jb = json_loads (b, JSON_DECODE_ANY, NULL);
    bool same = ja && jb ? json_equal (ja, jb) : !strcmp (a, b);
    json_decref (ja);
    json_decref (jb);
    return same;
}

//  The fixture's answer to the pending rule, in result; false (with why)
//  when the case gives none.
static bool
s_answer (const s_case_t *c, sl_policy_t *policy, int rule, sl_llm_result_t *result, sl_buf_t *why)
{
    const char *id = sl_policy_rule_id (policy, rule);
    const sl_llm_spec_t *spec = sl_policy_llm_spec (policy, rule);
    if (spec && spec->kind == SL_LLM_DECIDE) {
        if (!c->decide) {
            sl_buf_printf (why, "rule %s asks a decision service: give the case decide: {allow: ...}", id);
            return false;
        }
        if (c->decide_check != SL_CHK_RAN) {
            sl_llm_result_fail (result, c->decide_check, "the fixture says it failed");
            return true;
        }
        result->check = SL_CHK_RAN;
        result->allow = c->decide_allow;
        result->rewrite = c->decide_rewrite ? sl_xstrdup (c->decide_rewrite) : NULL;
        result->explanation = c->decide_reason ? sl_xstrdup (c->decide_reason) : NULL;
        return true;
    }
    if (!c->llm) {
        sl_buf_printf (why, "rule %s asks an LLM judge: give the case llm: {probability: P}", id);
        return false;
    }
    if (c->llm_check != SL_CHK_RAN) {
        sl_llm_result_fail (result, c->llm_check, "the fixture says it failed");
        return true;
    }
    result->check = SL_CHK_RAN;
    result->probability = c->llm_p;
    return true;
}

//  A part of a request, judged as the gateway judges it: the redactions
//  of every matching redact rule, in order (each sees the text the one
//  before left), and the first rule with another action decides.
static void
s_run_part (const s_case_t *c, sl_policy_t *policy, sl_policytest_result_t *out)
{
    sl_rpart_t part = {
        .kind = c->part_kind,
        .text = sl_str (c->text ? c->text : ""),
        .tool = s_opt (c->result_tool),
        .is_error = c->is_error,
        .model = s_opt (c->model),
        .headers = s_opt (c->headers),
        .team = s_opt (c->team),
    };
    sl_rdecision_t d;
    sl_policy_decide_part (policy, &part, &d);
    sl_buf_t why = { 0 }, text = { 0 }, rules = { 0 };
    const char *action = NULL;
    if (d.decision.action == SL_ACT_NONE && d.decision.llm_rule >= 0) {
        int rule = d.decision.llm_rule;
        sl_llm_result_t result = { .probability = NAN };
        if (s_answer (c, policy, rule, &result, &why))
            sl_policy_conclude_part (policy, &part, &result, &d.decision);
        else
            action = "?";
        sl_llm_result_clear (&result);
    }
    //  The text after the redactions, and the rules that made them.
    sl_buf_append_str (&text, part.text);
    for (size_t i = 0; i < d.redact_count; i++) {
        sl_buf_t next = { 0 };
        sl_buf_putc (&text, '\0');      //  the rules may read the NUL after the text
        text.len--;
        if (sl_policy_redact (policy, d.redacts [i], sl_buf_str (&text), &next)) {
            sl_buf_reset (&text);
            sl_buf_append (&text, next.data, next.len);
        }
        sl_buf_free (&next);
        sl_buf_printf (&rules, "%s%s", i ? "," : "", sl_policy_rule_id (policy, d.redacts [i]));
    }
    bool redacted = d.redact_count > 0 && d.decision.action == SL_ACT_ALLOW;
    if (!action)
        action = redacted ? "redact" : sl_action_name (d.decision.action);
    const char *rule = redacted ? sl_buf_cstr (&rules) : d.decision.rule ? d.decision.rule : "";
    out->expected = s_describe (c->expect_action, c->expect_rule, c->expect_text);
    out->got = s_describe (action, c->expect_rule ? rule : NULL, c->expect_text ? sl_buf_cstr (&text) : NULL);
    if (!why.len) {
        if (strcmp (action, c->expect_action))
            sl_buf_printf (&why, "action %s, expected %s", action, c->expect_action);
        else if (c->expect_rule && strcmp (rule, c->expect_rule))
            sl_buf_printf (&why, "rule %s, expected %s", *rule ? rule : "(default)",
                           *c->expect_rule ? c->expect_rule : "(default)");
        else if (c->expect_text && strcmp (sl_buf_cstr (&text), c->expect_text))
            sl_buf_printf (&why, "text '%s', expected '%s'", sl_buf_cstr (&text), c->expect_text);
    }
    if (why.len)
        out->why = sl_xstrdup (sl_buf_cstr (&why));
    out->pass = !out->why;
    sl_buf_free (&why);
    sl_buf_free (&text);
    sl_buf_free (&rules);
    sl_rdecision_clear (&d);
}

int
sl_policytest_run (sl_policytest_t *self, size_t index, sl_policy_t *policy, sl_policytest_result_t *out)
{
    memset (out, 0, sizeof *out);
    if (index >= self->count)
        return -1;
    const s_case_t *c = &self->cases [index];
    if (c->is_part) {
        s_run_part (c, policy, out);
        return 0;
    }
    sl_call_t call = {
        .name = sl_str (c->tool),
        .arguments = sl_str (c->arguments),
        .args_valid = c->args_valid,
        .repaired = c->repaired,
        .cut = c->cut,
        .ordinal = c->ordinal,
        .model = s_opt (c->model),
        .headers = s_opt (c->headers),
        .last_user = s_opt (c->last_user),
        .tools = s_opt (c->tools),
        .history = s_opt (c->history),
        .taint = c->taint ? sl_str (c->taint) : sl_str ("[]"),
        .key_id = s_opt (c->key_id),
        .team = s_opt (c->team),
        .user = s_opt (c->user),
    };
    sl_decision_t d;
    sl_policy_decide (policy, &call, &d);
    sl_buf_t why = { 0 };
    const char *action = NULL;
    if (d.action == SL_ACT_NONE && d.llm_rule >= 0) {
        int rule = d.llm_rule;
        sl_llm_result_t result = { .probability = NAN };
        if (sl_policy_ask_spec (policy, rule)) {
            if (c->ask) {
                result.check = c->ask;
                result.approver = sl_xstrdup (S_ASK_APPROVER);
                sl_policy_conclude (policy, &call, &result, &d);
            }
            else
                action = "ask";     //  pending: a person would be asked
        }
        else if (s_answer (c, policy, rule, &result, &why))
            sl_policy_conclude (policy, &call, &result, &d);
        else
            action = "?";
        sl_llm_result_clear (&result);
    }
    if (!action)
        action = sl_action_name (d.action);
    const char *rule = d.rule ? d.rule : "";
    out->expected = s_describe (c->expect_action, c->expect_rule, c->expect_args);
    out->got = s_describe (action, c->expect_rule ? rule : NULL,
                           c->expect_args && d.action == SL_ACT_REWRITE ? d.arguments : NULL);
    if (!why.len) {
        if (strcmp (action, c->expect_action))
            sl_buf_printf (&why, "action %s, expected %s", action, c->expect_action);
        else if (c->expect_rule && strcmp (rule, c->expect_rule))
            sl_buf_printf (&why, "rule %s, expected %s", *rule ? rule : "(default)",
                           *c->expect_rule ? c->expect_rule : "(default)");
        else if (c->expect_args && (!d.arguments || !s_same_json (d.arguments, c->expect_args)))
            sl_buf_printf (&why, "arguments %s, expected %s", d.arguments ? d.arguments : "(none)",
                           c->expect_args);
    }
    if (why.len)
        out->why = sl_xstrdup (sl_buf_cstr (&why));
    out->pass = !out->why;
    sl_buf_free (&why);
    sl_decision_clear (&d);
    return 0;
}

void
sl_policytest_result_clear (sl_policytest_result_t *self)
{
    free (self->expected);
    free (self->got);
    free (self->why);
    memset (self, 0, sizeof *self);
}

size_t
sl_policytest_report (sl_policytest_t *self, sl_policy_t *policy, const char *file, sl_buf_t *out)
{
    size_t failed = 0;
    for (size_t i = 0; i < self->count; i++) {
        sl_policytest_result_t r;
        sl_policytest_run (self, i, policy, &r);
        sl_buf_printf (out, "%s:%zu: %s  %-40s  expected %-28s  got %s\n", file, self->cases [i].line,
                       r.pass ? "PASS" : "FAIL", self->cases [i].name, r.expected, r.got);
        if (!r.pass) {
            sl_buf_printf (out, "%s:%zu:   %s\n", file, self->cases [i].line, r.why);
            failed++;
        }
        sl_policytest_result_clear (&r);
    }
    sl_buf_printf (out, "%s: %zu cases, %zu passed, %zu failed (policy %s, %s)\n", file, self->count,
                   self->count - failed, failed, sl_policy_name (policy), sl_policy_id (policy));
    return failed;
}
