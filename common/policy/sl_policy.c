/*  sl_policy.c - policy parsing (libyaml) and rule evaluation.

    The YAML document is loaded as a node tree; every node keeps its
    position, so each error points at the offending line and column. Values
    the policy compares arguments with (equals, contains, set) are converted
    to JSON once at load time, with YAML's own typing: a plain 5 is a
    number, a quoted "5" a string.

    Evaluation parses a call's arguments once with jansson, and only when a
    rule that the cheaper conditions (tool name, flags, position) did not
    rule out needs them. JSON pointers are split into tokens at load time.
*/
#include "common/policy/sl_policy.h"

#include <ctype.h>
#include <czmq.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/dialects/sl_dialect.h"

#define SL_POLICY_MAX_FILE (4u << 20)   //  bytes
#define SL_POLICY_MAX_DEPTH 32          //  nesting of YAML values turned into JSON
#define SL_POLICY_NAME_MAX 256          //  tool and model names matched on the stack

#define S_DEFAULT_BLOCK "sluice blocked a call to the tool \"{tool}\" (policy rule {rule})."
#define S_DEFAULT_TERMINATE \
    "sluice ended this response: a call to the tool \"{tool}\" is not allowed (policy rule {rule})."
#define S_INCOMPLETE_BLOCK \
    "sluice blocked a call to {tool}: the model's call was cut off ({cut}) and cannot be judged."
#define S_INCOMPLETE_TERMINATE \
    "sluice ended this response: the model's call to {tool} was cut off ({cut}) and cannot be judged."
#define S_ON_INCOMPLETE "on_incomplete" //  the setting, named as the rule of its verdicts
#define S_DEFAULT_BLOCK_RESULT \
    "[sluice removed this result of {tool}: {reason} (policy rule {rule}). Do not retry it.]"
#define S_DEFAULT_REFUSE "sluice refused this request: {reason} (policy rule {rule})."
#define S_LITERAL_MIN 3                 //  a regex's required literal worth a memmem first
//  Part kinds a request rule applies to when it names none.
#define S_PARTS_DEFAULT ((1u << SL_RPART_SYSTEM) | (1u << SL_RPART_USER) | (1u << SL_RPART_TOOL_RESULT))
#define S_PARTS_RESULTS (1u << SL_RPART_TOOL_RESULT)

//  Operators of an argument or header matcher (bit set).
enum {
    OP_REGEX = 1 << 0,
    OP_EQUALS = 1 << 1,
    OP_CONTAINS = 1 << 2,
    OP_PREFIX = 1 << 3,
    OP_GT = 1 << 4,
    OP_GE = 1 << 5,
    OP_LT = 1 << 6,
    OP_LE = 1 << 7,
    OP_EXISTS = 1 << 8
};

typedef struct {
    char *pointer;                      //  JSON pointer (args) or header name (headers)
    char **tokens;                      //  the pointer's unescaped tokens
    int token_count;
    unsigned ops;                       //  OP_* present
    regex_t regex;                      //  OP_REGEX
    char *literal;                      //  OP_REGEX: text every match holds, or NULL
    json_t *equals;                     //  OP_EQUALS
    json_t *contains;                   //  OP_CONTAINS
    char *prefix;                       //  OP_PREFIX
    double gt, ge, lt, le;              //  OP_GT ... OP_LE
    bool exists;                        //  OP_EXISTS: the value must (not) be there
    bool negate;                        //  not: true inverts the result
} s_matcher_t;

//  A list of names, each exact or a glob (fnmatch).
typedef struct {
    char **names;
    bool *globs;
    int count;                          //  0: the condition is absent
} s_names_t;

typedef struct {
    char **tokens;                      //  where (split pointer)
    int token_count;
    char *pointer;                      //  as written, for reasons
    json_t *value;                      //  NULL: delete
} s_edit_t;

//  A tri-state flag condition: absent, must be false, must be true.
typedef enum { FLAG_ANY = -1, FLAG_NO = 0, FLAG_YES = 1 } s_flag_t;

//  A redaction: every match of the pattern becomes the placeholder.
typedef struct {
    regex_t regex;                      //  compiled with match positions
    char *literal;                      //  text every match holds, or NULL
    char *placeholder;
} s_redact_t;

//  A history condition: some earlier call of the conversation matches.
typedef struct {
    s_names_t tools;
    s_matcher_t *args;
    int arg_count;
} s_past_t;

typedef struct {
    char *id;
    bool on_request;                    //  on: request (else a tool call of the response)
    bool on_text;                       //  on: text: a text block of the response (a flag)
    unsigned parts;                     //  request: bit (1 << sl_rpart_kind_t) per kind it judges
    s_matcher_t *texts;                 //  request: tests on the part's text
    int text_count;
    s_matcher_t *size;                  //  request: numeric tests on the part's size, or NULL
    s_flag_t is_error;                  //  request: the tool result is (not) an error
    s_redact_t *redacts;                //  request, redact: the patterns
    int redact_count;
    s_past_t *history;                  //  response: earlier calls that must have happened
    int history_count;
    s_names_t tools;
    s_names_t models;
    s_matcher_t *args;
    int arg_count;
    s_matcher_t *headers;
    int header_count;
    s_flag_t args_invalid;
    s_flag_t args_repaired;
    s_flag_t schema_violation;
    s_flag_t incomplete;                //  the call did (not) end cleanly
    unsigned cuts;                      //  cut: bit (1 << sl_cut_t) per reason named, 0 absent
    long max_calls;                     //  -1: absent; else matches calls after the first N
    sl_llm_spec_t *llm;                 //  NULL: the rule decides by itself
    sl_action_t action;
    char *message;                      //  notice template, NULL for the default
    s_edit_t *edits;                    //  rewrite: set and delete, in order
    int edit_count;
} s_rule_t;

struct _sl_policy_t {
    int refs;
    char *name;
    sl_action_t default_action;
    char *default_message;              //  notice of the default block / terminate
    sl_action_t incomplete_action;      //  on_incomplete: an incomplete call no rule matched
    char *incomplete_message;           //  its notice, NULL for the built-in one
    s_rule_t *rules;
    int rule_count;
    bool uses_schema;
    int llm_count;
    int request_count;                  //  rules on: request
    int text_count;                     //  rules on: text
    bool uses_history;                  //  some rule has a history condition
    char *source;                       //  the text it was parsed from ("" for allow-all)
    char id [SL_POLICY_ID_SIZE];        //  short digest of the source (sl_policy_id)
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
    __attribute__ ((format (printf, 3, 4)));

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

static bool
s_plain (yaml_node_t *node)
{
    return node && node->type == YAML_SCALAR_NODE && node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static yaml_node_t *
s_node (s_ctx_t *ctx, int index)
{
    return yaml_document_get_node (ctx->doc, index);
}

//  --------------------------------------------------------------------------
//  Life cycle

static void
s_tokens_free (char **tokens, int count)
{
    for (int i = 0; i < count; i++)
        free (tokens [i]);
    free (tokens);
}

static void
s_matcher_free (s_matcher_t *m)
{
    if (m->ops & OP_REGEX)
        regfree (&m->regex);
    free (m->literal);
    free (m->pointer);
    s_tokens_free (m->tokens, m->token_count);
    json_decref (m->equals);
    json_decref (m->contains);
    free (m->prefix);
}

static void
s_names_free (s_names_t *n)
{
    for (int i = 0; i < n->count; i++)
        free (n->names [i]);
    free (n->names);
    free (n->globs);
}

static void
s_matchers_free (s_matcher_t *m, int count)
{
    for (int i = 0; i < count; i++)
        s_matcher_free (&m [i]);
    free (m);
}

static void
s_rule_free (s_rule_t *r)
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
        s_names_free (&r->history [i].tools);
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
        s_tokens_free (r->edits [i].tokens, r->edits [i].token_count);
        free (r->edits [i].pointer);
        json_decref (r->edits [i].value);
    }
    free (r->edits);
    s_names_free (&r->tools);
    s_names_free (&r->models);
    if (r->llm) {
        sl_llm_spec_clear (r->llm);
        free (r->llm);
    }
    free (r->id);
    free (r->message);
}

static void
s_policy_free (sl_policy_t *self)
{
    for (int i = 0; i < self->rule_count; i++)
        s_rule_free (&self->rules [i]);
    free (self->rules);
    free (self->name);
    free (self->default_message);
    free (self->incomplete_message);
    free (self->source);
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
    self->incomplete_action = SL_ACT_BLOCK;
    self->source = sl_xstrdup ("");
    snprintf (self->id, sizeof self->id, "%s", SL_POLICY_ALLOW_ALL_ID);
    return self;
}

//  The first SL_POLICY_ID_SIZE - 1 hex digits of the text's SHA-1.
static void
s_digest (const char *text, size_t size, char *id)
{
    zdigest_t *digest = zdigest_new ();
    zdigest_update (digest, (const byte *) text, size);
    const char *hex = zdigest_string (digest);
    for (int i = 0; i < SL_POLICY_ID_SIZE - 1; i++)
        id [i] = (char) tolower ((unsigned char) hex [i]);
    id [SL_POLICY_ID_SIZE - 1] = 0;
    zdigest_destroy (&digest);
}

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
const char *sl_policy_name (sl_policy_t *self) { return self->name; }
bool sl_policy_uses_schema (sl_policy_t *self) { return self->uses_schema; }
int sl_policy_llm_count (sl_policy_t *self) { return self->llm_count; }

//  --------------------------------------------------------------------------
//  Parsing: values

//  Split an RFC 6901 pointer ("" or "/a/b~1c") into unescaped tokens.
static int
s_split_pointer (s_ctx_t *ctx, yaml_node_t *node, const char *ptr, char ***tokens, int *count)
{
    if (*ptr && *ptr != '/') {
        s_error_at (ctx, node, "a JSON pointer is empty or starts with '/'");
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
                s_error_at (ctx, node, "bad escape in JSON pointer (use ~0 for ~ and ~1 for /)");
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

//  A YAML value as JSON, with YAML's typing of plain scalars.
static json_t *
s_to_json (s_ctx_t *ctx, yaml_node_t *node, int depth)
{
    if (!node || depth > SL_POLICY_MAX_DEPTH) {
        s_error_at (ctx, node, "value nested too deeply");
        return NULL;
    }
    if (node->type == YAML_SCALAR_NODE) {
        const char *v = s_scalar (node);
        if (!s_plain (node))
            return json_string (v);
        if (!*v || strcmp (v, "null") == 0 || strcmp (v, "~") == 0)
            return json_null ();
        if (strcmp (v, "true") == 0)
            return json_true ();
        if (strcmp (v, "false") == 0)
            return json_false ();
        char *end;
        errno = 0;
        long long i = strtoll (v, &end, 10);
        if (*end == 0 && errno == 0)
            return json_integer (i);
        double d = strtod (v, &end);
        if (*end == 0 && isfinite (d))
            return json_real (d);
        return json_string (v);
    }
    if (node->type == YAML_SEQUENCE_NODE) {
        json_t *array = json_array ();
        for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
            json_t *elem = s_to_json (ctx, s_node (ctx, *it), depth + 1);
            if (!elem) {
                json_decref (array);
                return NULL;
            }
            json_array_append_new (array, elem);
        }
        return array;
    }
    json_t *object = json_object ();
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        const char *key = s_scalar (s_node (ctx, p->key));
        json_t *value = key ? s_to_json (ctx, s_node (ctx, p->value), depth + 1) : NULL;
        if (!key)
            s_error_at (ctx, s_node (ctx, p->key), "mapping keys must be strings");
        if (!value) {
            json_decref (object);
            return NULL;
        }
        json_object_set_new (object, key, value);
    }
    return object;
}

static int
s_parse_bool (s_ctx_t *ctx, yaml_node_t *node, const char *what, bool *out)
{
    const char *v = s_plain (node) ? s_scalar (node) : NULL;
    if (v && strcmp (v, "true") == 0)
        *out = true;
    else
    if (v && strcmp (v, "false") == 0)
        *out = false;
    else {
        s_error_at (ctx, node, "%s must be true or false", what);
        return -1;
    }
    return 0;
}

static int
s_parse_flag (s_ctx_t *ctx, yaml_node_t *node, const char *what, s_flag_t *out)
{
    bool b;
    if (s_parse_bool (ctx, node, what, &b))
        return -1;
    *out = b ? FLAG_YES : FLAG_NO;
    return 0;
}

static int
s_parse_number (s_ctx_t *ctx, yaml_node_t *node, const char *what, double *out)
{
    const char *v = s_plain (node) ? s_scalar (node) : NULL;
    char *end = NULL;
    double d = v && *v ? strtod (v, &end) : NAN;
    if (!v || !*v || *end || !isfinite (d)) {
        s_error_at (ctx, node, "%s must be a number", what);
        return -1;
    }
    *out = d;
    return 0;
}

static int
s_parse_int (s_ctx_t *ctx, yaml_node_t *node, const char *what, long min, long max, long *out)
{
    double d;
    if (s_parse_number (ctx, node, what, &d))
        return -1;
    if (d != floor (d) || d < (double) min || d > (double) max) {
        s_error_at (ctx, node, "%s must be a whole number from %ld to %ld", what, min, max);
        return -1;
    }
    *out = (long) d;
    return 0;
}

static int
s_parse_string (s_ctx_t *ctx, yaml_node_t *node, const char *what, char **out)
{
    const char *v = s_scalar (node);
    if (!v) {
        s_error_at (ctx, node, "%s must be a string", what);
        return -1;
    }
    free (*out);
    *out = sl_xstrdup (v);
    return 0;
}

//  One name or glob, or a list of them.
static int
s_parse_names (s_ctx_t *ctx, yaml_node_t *node, const char *what, s_names_t *out)
{
    yaml_node_item_t one = 0;
    yaml_node_item_t *start = &one, *top = &one;
    if (node->type == YAML_SEQUENCE_NODE) {
        start = node->data.sequence.items.start;
        top = node->data.sequence.items.top;
        if (start == top) {
            s_error_at (ctx, node, "%s: the list is empty", what);
            return -1;
        }
    }
    else
        top = start + 1;
    for (yaml_node_item_t *it = start; it < top; it++) {
        yaml_node_t *item = it == &one ? node : s_node (ctx, *it);
        const char *v = s_scalar (item);
        if (!v || !*v) {
            s_error_at (ctx, item, "%s must be a name, a glob or a list of them", what);
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
static int
s_parse_cuts (s_ctx_t *ctx, yaml_node_t *node, unsigned *out)
{
    s_names_t names = { 0 };
    int rc = s_parse_names (ctx, node, "cut", &names);
    for (int i = 0; rc == 0 && i < names.count; i++) {
        int cut = sl_cut_parse (sl_str (names.names [i]));
        if (!cut) {
            s_error_at (ctx, node, "cut must be length, filter, error, eof, size or invalid, or a list of them");
            rc = -1;
        }
        else
            *out |= 1u << cut;
    }
    s_names_free (&names);
    return rc;
}

static int
s_parse_action (s_ctx_t *ctx, yaml_node_t *node, bool is_default, sl_action_t *out)
{
    const char *v = s_scalar (node);
    int action = v ? sl_action_parse (v) : 0;
    if (is_default && (action == SL_ACT_REWRITE || action == SL_ACT_REDACT || action == SL_ACT_BLOCK_RESULT
                       || action == 0)) {
        s_error_at (ctx, node, "default must be allow, block, drop or terminate");
        return -1;
    }
    if (action == 0) {
        s_error_at (ctx, node, "action must be allow, block, drop, rewrite or terminate (on: request: "
                    "allow, redact, block_result or terminate)");
        return -1;
    }
    *out = (sl_action_t) action;
    return 0;
}

//  --------------------------------------------------------------------------
//  Parsing: matchers, edits, LLM judges

//  The longest run of text every match of an extended regex must hold
//  (the regex has no alternation outside brackets; atoms under a
//  quantifier and groups break runs), or NULL when none is S_LITERAL_MIN
//  long: when a text lacks it, the regex cannot match and is not run.
static char *
s_regex_literal (const char *re)
{
    int depth = 0;
    for (const char *p = re; *p; p++) {
        if (*p == '\\' && p [1])
            p++;
        else
        if (*p == '[') {
            p += p [1] == '^' ? 2 : 1;
            if (*p == ']')
                p++;
            while (*p && *p != ']')
                p++;
            if (!*p)
                return NULL;
        }
        else
        if (*p == '(')
            depth++;
        else
        if (*p == ')')
            depth--;
        else
        if (*p == '|' && depth == 0)
            return NULL;
    }
    sl_buf_t run = { 0 }, best = { 0 };
    for (const char *p = re; *p; ) {
        char literal = 0;
        bool atom = false;
        if (*p == '\\' && p [1] && !isalnum ((unsigned char) p [1])) {
            literal = p [1];
            atom = true;
            p += 2;
        }
        else
        if (*p == '\\' && p [1])
            p += 2;                     //  \w, \b ...: not a literal
        else
        if (*p == '[') {
            p += p [1] == '^' ? 2 : 1;
            if (*p == ']')
                p++;
            while (*p && *p != ']')
                p++;
            if (*p)
                p++;
        }
        else
        if (*p == '(') {
            int d = 0;
            do {
                if (*p == '\\' && p [1])
                    p++;
                else
                if (*p == '(')
                    d++;
                else
                if (*p == ')')
                    d--;
                p++;
            } while (*p && d > 0);
        }
        else
        if (strchr (".^$)*+?{", *p)) {
            if (*p == '{')
                while (*p && *p != '}')
                    p++;
            if (*p)
                p++;
        }
        else {
            literal = *p++;
            atom = true;
        }
        bool optional = *p == '*' || *p == '?' || *p == '{';
        if (atom && !optional)
            sl_buf_putc (&run, literal);
        if (!atom || optional || *p == '+' || !*p) {
            if (run.len > best.len) {
                sl_buf_reset (&best);
                sl_buf_append (&best, run.data, run.len);
            }
            sl_buf_reset (&run);
        }
    }
    char *out = best.len >= S_LITERAL_MIN ? sl_xstrndup (best.data, best.len) : NULL;
    sl_buf_free (&run);
    sl_buf_free (&best);
    return out;
}

//  One entry of args (key "pointer"), headers (key "name") or text (no
//  locator: locator NULL).
static int
s_parse_matcher (s_ctx_t *ctx, yaml_node_t *node, const char *locator, s_matcher_t *m)
{
    bool is_args = locator && strcmp (locator, "pointer") == 0;
    const char *what = !locator ? "text" : is_args ? "args" : "headers";
    if (node->type != YAML_MAPPING_NODE) {
        s_error_at (ctx, node, "each %s entry must be a mapping with %s%s a test", what,
                    locator ? locator : "", locator ? " and" : "");
        return -1;
    }
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = s_node (ctx, p->key);
        yaml_node_t *v = s_node (ctx, p->value);
        const char *key = s_scalar (k);
        if (!key) {
            s_error_at (ctx, k, "keys must be strings");
            return -1;
        }
        if (locator && strcmp (key, locator) == 0) {
            if (s_parse_string (ctx, v, locator, &m->pointer))
                return -1;
            if (is_args) {
                s_tokens_free (m->tokens, m->token_count);
                if (s_split_pointer (ctx, v, m->pointer, &m->tokens, &m->token_count))
                    return -1;
            }
            else
                for (char *c = m->pointer; *c; c++)
                    *c = (char) (*c >= 'A' && *c <= 'Z' ? *c - 'A' + 'a' : *c);
            continue;
        }
        static const struct { const char *name; unsigned op; } ops [] = {
            { "regex", OP_REGEX }, { "equals", OP_EQUALS }, { "contains", OP_CONTAINS },
            { "prefix", OP_PREFIX }, { "gt", OP_GT }, { "ge", OP_GE }, { "lt", OP_LT },
            { "le", OP_LE }, { "exists", OP_EXISTS }
        };
        unsigned op = 0;
        for (size_t i = 0; i < sizeof ops / sizeof ops [0]; i++)
            if (strcmp (key, ops [i].name) == 0)
                op = ops [i].op;
        if (strcmp (key, "not") == 0) {
            if (s_parse_bool (ctx, v, "not", &m->negate))
                return -1;
            continue;
        }
        if (!op) {
            s_error_at (ctx, k, "unknown %s field '%s' (expected %s%sregex, equals, contains, prefix, "
                        "gt, ge, lt, le, exists, not)", what, key, locator ? locator : "", locator ? ", " : "");
            return -1;
        }
        if (m->ops & op) {
            s_error_at (ctx, k, "%s given twice", key);
            return -1;
        }
        int rc = 0;
        switch (op) {
            case OP_REGEX: {
                const char *pattern = s_scalar (v);
                if (!pattern) {
                    s_error_at (ctx, v, "regex must be a string");
                    return -1;
                }
                int err = regcomp (&m->regex, pattern, REG_EXTENDED | REG_NOSUB);
                if (err) {
                    char why [128];
                    regerror (err, &m->regex, why, sizeof why);
                    s_error_at (ctx, v, "bad regex: %s", why);
                    return -1;
                }
                m->literal = s_regex_literal (pattern);
                break;
            }
            case OP_EQUALS:
                rc = (m->equals = s_to_json (ctx, v, 0)) ? 0 : -1;
                break;
            case OP_CONTAINS:
                rc = (m->contains = s_to_json (ctx, v, 0)) ? 0 : -1;
                break;
            case OP_PREFIX:
                rc = s_parse_string (ctx, v, "prefix", &m->prefix);
                break;
            case OP_GT: rc = s_parse_number (ctx, v, "gt", &m->gt); break;
            case OP_GE: rc = s_parse_number (ctx, v, "ge", &m->ge); break;
            case OP_LT: rc = s_parse_number (ctx, v, "lt", &m->lt); break;
            case OP_LE: rc = s_parse_number (ctx, v, "le", &m->le); break;
            default: rc = s_parse_bool (ctx, v, "exists", &m->exists); break;
        }
        if (rc)
            return -1;
        m->ops |= op;
    }
    if (!m->pointer && locator) {
        s_error_at (ctx, node, "%s entry needs %s", is_args ? "an args" : "a headers", locator);
        return -1;
    }
    if (!m->ops) {
        s_error_at (ctx, node, "a%s %s entry needs a test (regex, equals, contains, prefix, gt, ge, "
                    "lt, le or exists)", is_args ? "n" : "", what);
        return -1;
    }
    return 0;
}

static int
s_parse_matchers (s_ctx_t *ctx, yaml_node_t *node, const char *what, const char *locator,
                  s_matcher_t **out, int *count)
{
    if (node->type != YAML_SEQUENCE_NODE) {
        s_error_at (ctx, node, "%s must be a list", what);
        return -1;
    }
    int n = (int) (node->data.sequence.items.top - node->data.sequence.items.start);
    *out = sl_xcalloc ((size_t) n + 1, sizeof (s_matcher_t));
    for (int i = 0; i < n; i++) {
        *count = i + 1;
        if (s_parse_matcher (ctx, s_node (ctx, node->data.sequence.items.start [i]), locator, &(*out) [i]))
            return -1;
    }
    return 0;
}

//  text: one test mapping, or a list of them (all must pass).
static int
s_parse_texts (s_ctx_t *ctx, yaml_node_t *node, s_matcher_t **out, int *count)
{
    if (node->type != YAML_MAPPING_NODE)
        return s_parse_matchers (ctx, node, "text", NULL, out, count);
    *out = sl_xcalloc (1, sizeof (s_matcher_t));
    *count = 1;
    return s_parse_matcher (ctx, node, NULL, *out);
}

//  size: numeric tests on a part's size in bytes.
static int
s_parse_size (s_ctx_t *ctx, yaml_node_t *node, s_matcher_t **out)
{
    *out = sl_xcalloc (1, sizeof (s_matcher_t));
    if (s_parse_matcher (ctx, node, NULL, *out))
        return -1;
    if ((*out)->ops & ~(unsigned) (OP_GT | OP_GE | OP_LT | OP_LE)) {
        s_error_at (ctx, node, "size takes gt, ge, lt, le (bytes) and not");
        return -1;
    }
    return 0;
}

//  part: one part kind or a list of them, as a bit set.
static int
s_parse_parts (s_ctx_t *ctx, yaml_node_t *node, unsigned *out)
{
    static const char *names [SL_RPART_MAX] = {
        NULL, "system", "user", "assistant", "tool_result", "tool"
    };
    s_names_t list = { 0 };
    int rc = s_parse_names (ctx, node, "part", &list);
    for (int i = 0; rc == 0 && i < list.count; i++) {
        int kind = 0;
        for (int k = 1; k < SL_RPART_MAX; k++)
            if (names [k] && strcmp (list.names [i], names [k]) == 0)
                kind = k;
        if (!kind) {
            s_error_at (ctx, node, "part must be system, user, assistant, tool_result or tool, or a list of them");
            rc = -1;
        }
        else
            *out |= 1u << kind;
    }
    s_names_free (&list);
    return rc;
}

//  redact: a mapping {regex, placeholder}, or a list of them.
static int
s_parse_redacts (s_ctx_t *ctx, yaml_node_t *node, s_rule_t *r)
{
    yaml_node_item_t one = 0;
    yaml_node_item_t *start = &one, *top = &one + 1;
    if (node->type == YAML_SEQUENCE_NODE) {
        start = node->data.sequence.items.start;
        top = node->data.sequence.items.top;
    }
    for (yaml_node_item_t *it = start; it < top; it++) {
        yaml_node_t *item = it == &one ? node : s_node (ctx, *it);
        if (item->type != YAML_MAPPING_NODE) {
            s_error_at (ctx, item, "each redact entry must be a mapping with regex (and placeholder)");
            return -1;
        }
        r->redacts = sl_xrealloc (r->redacts, (size_t) (r->redact_count + 1) * sizeof (s_redact_t));
        s_redact_t *red = &r->redacts [r->redact_count];
        memset (red, 0, sizeof *red);
        const char *pattern = NULL;
        for (yaml_node_pair_t *p = item->data.mapping.pairs.start; p < item->data.mapping.pairs.top; p++) {
            yaml_node_t *k = s_node (ctx, p->key);
            yaml_node_t *v = s_node (ctx, p->value);
            const char *key = s_scalar (k);
            if (key && strcmp (key, "regex") == 0 && s_scalar (v))
                pattern = s_scalar (v);
            else
            if (key && strcmp (key, "placeholder") == 0) {
                if (s_parse_string (ctx, v, "placeholder", &red->placeholder)) {
                    free (red->placeholder);
                    return -1;
                }
            }
            else {
                free (red->placeholder);
                s_error_at (ctx, k, "unknown redact field '%s' (expected regex, placeholder)", key ? key : "?");
                return -1;
            }
        }
        int err = pattern ? regcomp (&red->regex, pattern, REG_EXTENDED) : -1;
        if (err) {
            char why [128] = "redact needs a regex";
            if (pattern)
                regerror (err, &red->regex, why, sizeof why);
            free (red->placeholder);
            s_error_at (ctx, item, "%s%s", pattern ? "bad regex: " : "", why);
            return -1;
        }
        red->literal = s_regex_literal (pattern);
        r->redact_count++;
    }
    return 0;
}

//  history: a list of {tool, args}: earlier calls that must have happened.
static int
s_parse_history (s_ctx_t *ctx, yaml_node_t *node, s_rule_t *r)
{
    if (node->type != YAML_SEQUENCE_NODE || node->data.sequence.items.start == node->data.sequence.items.top) {
        s_error_at (ctx, node, "history must be a list of {tool, args} entries");
        return -1;
    }
    for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
        yaml_node_t *item = s_node (ctx, *it);
        if (item->type != YAML_MAPPING_NODE) {
            s_error_at (ctx, item, "each history entry must be a mapping with tool and/or args");
            return -1;
        }
        r->history = sl_xrealloc (r->history, (size_t) (r->history_count + 1) * sizeof (s_past_t));
        s_past_t *past = &r->history [r->history_count++];
        memset (past, 0, sizeof *past);
        for (yaml_node_pair_t *p = item->data.mapping.pairs.start; p < item->data.mapping.pairs.top; p++) {
            yaml_node_t *k = s_node (ctx, p->key);
            yaml_node_t *v = s_node (ctx, p->value);
            const char *key = s_scalar (k);
            int rc;
            if (key && strcmp (key, "tool") == 0)
                rc = s_parse_names (ctx, v, "tool", &past->tools);
            else
            if (key && strcmp (key, "args") == 0)
                rc = s_parse_matchers (ctx, v, "args", "pointer", &past->args, &past->arg_count);
            else {
                s_error_at (ctx, k, "unknown history field '%s' (expected tool, args)", key ? key : "?");
                rc = -1;
            }
            if (rc)
                return -1;
        }
        if (!past->tools.count && !past->arg_count) {
            s_error_at (ctx, item, "a history entry needs tool or args");
            return -1;
        }
    }
    return 0;
}

static s_edit_t *
s_new_edit (s_rule_t *r)
{
    r->edits = sl_xrealloc (r->edits, (size_t) (r->edit_count + 1) * sizeof (s_edit_t));
    s_edit_t *e = &r->edits [r->edit_count++];
    memset (e, 0, sizeof *e);
    return e;
}

static int
s_parse_edit_pointer (s_ctx_t *ctx, yaml_node_t *node, s_edit_t *e)
{
    const char *ptr = s_scalar (node);
    if (!ptr || *ptr != '/') {
        s_error_at (ctx, node, "a rewrite names a field by a JSON pointer starting with '/'");
        return -1;
    }
    e->pointer = sl_xstrdup (ptr);
    return s_split_pointer (ctx, node, ptr, &e->tokens, &e->token_count);
}

//  set: a mapping of pointer to value; delete: a list of pointers.
static int
s_parse_edits (s_ctx_t *ctx, yaml_node_t *node, bool is_set, s_rule_t *r)
{
    if (is_set && node->type != YAML_MAPPING_NODE) {
        s_error_at (ctx, node, "set must be a mapping of JSON pointer to value");
        return -1;
    }
    if (!is_set && node->type != YAML_SEQUENCE_NODE) {
        s_error_at (ctx, node, "delete must be a list of JSON pointers");
        return -1;
    }
    if (is_set)
        for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
            s_edit_t *e = s_new_edit (r);
            if (s_parse_edit_pointer (ctx, s_node (ctx, p->key), e))
                return -1;
            if (!(e->value = s_to_json (ctx, s_node (ctx, p->value), 0)))
                return -1;
        }
    else
        for (yaml_node_item_t *it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++)
            if (s_parse_edit_pointer (ctx, s_node (ctx, *it), s_new_edit (r)))
                return -1;
    return 0;
}

static int
s_parse_llm (s_ctx_t *ctx, yaml_node_t *node, sl_llm_spec_t *spec)
{
    if (node->type != YAML_MAPPING_NODE) {
        s_error_at (ctx, node, "llm_judge must be a mapping");
        return -1;
    }
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = s_node (ctx, p->key);
        yaml_node_t *v = s_node (ctx, p->value);
        const char *key = s_scalar (k);
        long n;
        int rc;
        if (!key) {
            s_error_at (ctx, k, "keys must be strings");
            return -1;
        }
        if (strcmp (key, "api") == 0) {
            //  A dialect whose module can be asked a question.
            const sl_dialect_t *d = s_scalar (v) ? sl_dialect_find (s_scalar (v)) : NULL;
            if (!sl_dialect_asks (d)) {
                sl_buf_t names = { 0 };
                sl_dialect_names (", ", " or ", sl_dialect_asks, &names);
                s_error_at (ctx, v, "api must be %s", sl_buf_cstr (&names));
                sl_buf_free (&names);
                return -1;
            }
            spec->dialect = d->id;
            rc = 0;
        }
        else
        if (strcmp (key, "url") == 0) {
            rc = s_parse_string (ctx, v, "url", &spec->url);
            if (!rc && strncmp (spec->url, "http://", 7) != 0 && strncmp (spec->url, "https://", 8) != 0) {
                s_error_at (ctx, v, "url must start with http:// or https://");
                rc = -1;
            }
        }
        else
        if (strcmp (key, "model") == 0)
            rc = s_parse_string (ctx, v, "model", &spec->model);
        else
        if (strcmp (key, "api_key_env") == 0)
            rc = s_parse_string (ctx, v, "api_key_env", &spec->api_key_env);
        else
        if (strcmp (key, "prompt") == 0)
            rc = s_parse_string (ctx, v, "prompt", &spec->prompt);
        else
        if (strcmp (key, "threshold") == 0) {
            rc = s_parse_number (ctx, v, "threshold", &spec->threshold);
            if (!rc && !(spec->threshold >= 0.0 && spec->threshold <= 1.0)) {
                s_error_at (ctx, v, "threshold must be from 0 to 1");
                rc = -1;
            }
        }
        else
        if (strcmp (key, "timeout_ms") == 0) {
            rc = s_parse_int (ctx, v, "timeout_ms", 1, 600000, &n);
            spec->timeout_ms = (int) n;
        }
        else
        if (strcmp (key, "concurrency") == 0) {
            rc = s_parse_int (ctx, v, "concurrency", 1, 100000, &n);
            spec->concurrency = (int) n;
        }
        else
        if (strcmp (key, "max_tokens") == 0) {
            rc = s_parse_int (ctx, v, "max_tokens", 1, 100000, &n);
            spec->max_tokens = (int) n;
        }
        else
        if (strcmp (key, "on_error") == 0) {
            int action = s_scalar (v) ? sl_action_parse (s_scalar (v)) : 0;
            if (action != SL_ACT_ALLOW && action != SL_ACT_BLOCK) {
                s_error_at (ctx, v, "on_error must be block or allow");
                return -1;
            }
            spec->on_error = (sl_action_t) action;
            rc = 0;
        }
        else {
            s_error_at (ctx, k, "unknown llm_judge field '%s' (expected api, url, model, api_key_env, "
                        "prompt, threshold, timeout_ms, on_error, concurrency, max_tokens)", key);
            return -1;
        }
        if (rc)
            return -1;
    }
    if (!spec->model) {
        s_error_at (ctx, node, "llm_judge needs a model");
        return -1;
    }
    if (!spec->url)
        spec->url = sl_llm_default_url (spec->dialect, spec->model);
    if (!spec->prompt)
        spec->prompt = sl_xstrdup (sl_llm_default_prompt);
    return 0;
}

//  --------------------------------------------------------------------------
//  Parsing: rules and the document

static int
s_parse_rule_field (s_ctx_t *ctx, yaml_node_t *k, yaml_node_t *v, const char *key,
                    s_rule_t *r, bool *has_action)
{
    if (strcmp (key, "id") == 0)
        return s_parse_string (ctx, v, "id", &r->id);
    if (strcmp (key, "message") == 0)
        return s_parse_string (ctx, v, "message", &r->message);
    if (strcmp (key, "description") == 0)
        return s_scalar (v) ? 0 : (s_error_at (ctx, v, "description must be a string"), -1);
    if (strcmp (key, "action") == 0) {
        *has_action = true;
        return s_parse_action (ctx, v, false, &r->action);
    }
    if (strcmp (key, "tool") == 0)
        return s_parse_names (ctx, v, "tool", &r->tools);
    if (strcmp (key, "model") == 0)
        return s_parse_names (ctx, v, "model", &r->models);
    if (strcmp (key, "args") == 0)
        return s_parse_matchers (ctx, v, "args", "pointer", &r->args, &r->arg_count);
    if (strcmp (key, "headers") == 0)
        return s_parse_matchers (ctx, v, "headers", "name", &r->headers, &r->header_count);
    if (strcmp (key, "args_invalid") == 0)
        return s_parse_flag (ctx, v, key, &r->args_invalid);
    if (strcmp (key, "args_repaired") == 0)
        return s_parse_flag (ctx, v, key, &r->args_repaired);
    if (strcmp (key, "schema_violation") == 0)
        return s_parse_flag (ctx, v, key, &r->schema_violation);
    if (strcmp (key, "incomplete") == 0)
        return s_parse_flag (ctx, v, key, &r->incomplete);
    if (strcmp (key, "cut") == 0)
        return s_parse_cuts (ctx, v, &r->cuts);
    if (strcmp (key, "max_calls") == 0)
        return s_parse_int (ctx, v, "max_calls", 0, 1000000, &r->max_calls);
    if (strcmp (key, "set") == 0 || strcmp (key, "delete") == 0)
        return s_parse_edits (ctx, v, key [0] == 's', r);
    if (strcmp (key, "on") == 0) {
        const char *v_on = s_scalar (v);
        if (!v_on || (strcmp (v_on, "request") != 0 && strcmp (v_on, "response") != 0
                      && strcmp (v_on, "text") != 0)) {
            s_error_at (ctx, v, "on must be request, response (a tool call, the default) or text");
            return -1;
        }
        r->on_request = strcmp (v_on, "request") == 0;
        r->on_text = strcmp (v_on, "text") == 0;
        return 0;
    }
    if (strcmp (key, "part") == 0)
        return s_parse_parts (ctx, v, &r->parts);
    if (strcmp (key, "text") == 0)
        return s_parse_texts (ctx, v, &r->texts, &r->text_count);
    if (strcmp (key, "size") == 0)
        return s_parse_size (ctx, v, &r->size);
    if (strcmp (key, "is_error") == 0)
        return s_parse_flag (ctx, v, key, &r->is_error);
    if (strcmp (key, "redact") == 0)
        return s_parse_redacts (ctx, v, r);
    if (strcmp (key, "history") == 0)
        return s_parse_history (ctx, v, r);
    if (strcmp (key, "llm_judge") == 0) {
        if (r->llm) {
            s_error_at (ctx, k, "llm_judge given twice");
            return -1;
        }
        r->llm = sl_xmalloc (sizeof *r->llm);
        sl_llm_spec_defaults (r->llm);
        return s_parse_llm (ctx, v, r->llm);
    }
    s_error_at (ctx, k, "unknown rule field '%s' (expected id, description, on, tool, model, headers, "
                "args, args_invalid, args_repaired, schema_violation, incomplete, cut, max_calls, history, "
                "part, text, size, is_error, llm_judge, action, message, set, delete, redact)", key);
    return -1;
}

//  What a request rule may say, and what only a response rule may.
static int
s_check_request_rule (s_ctx_t *ctx, yaml_node_t *node, s_rule_t *r, bool has_action)
{
    if (r->arg_count || r->args_invalid != FLAG_ANY || r->args_repaired != FLAG_ANY
    ||  r->schema_violation != FLAG_ANY || r->incomplete != FLAG_ANY || r->cuts || r->max_calls >= 0
    ||  r->edit_count || r->history_count) {
        s_error_at (ctx, node, "rule '%s': on: request judges the request's parts (part, tool, text, size, "
                    "is_error, model, headers); args, args_invalid, args_repaired, schema_violation, "
                    "incomplete, cut, max_calls, history, set and delete are for tool calls", r->id);
        return -1;
    }
    if (!has_action && r->llm)
        r->action = SL_ACT_BLOCK_RESULT;
    if (r->action != SL_ACT_ALLOW && r->action != SL_ACT_REDACT && r->action != SL_ACT_BLOCK_RESULT
    &&  r->action != SL_ACT_TERMINATE) {
        s_error_at (ctx, node, "rule '%s': a request rule's action is allow, redact, block_result or terminate", r->id);
        return -1;
    }
    if (!r->parts)
        r->parts = r->action == SL_ACT_BLOCK_RESULT || r->llm ? S_PARTS_RESULTS : S_PARTS_DEFAULT;
    if ((r->action == SL_ACT_BLOCK_RESULT || r->llm) && (r->parts & ~S_PARTS_RESULTS)) {
        s_error_at (ctx, node, "rule '%s': block_result and llm_judge apply to tool results only (part: tool_result)", r->id);
        return -1;
    }
    if ((r->action == SL_ACT_REDACT) != (r->redact_count > 0)) {
        s_error_at (ctx, node, "rule '%s': %s", r->id, r->redact_count ? "redact needs action: redact"
                                                                       : "action redact needs redact: {regex, placeholder}");
        return -1;
    }
    if (r->action == SL_ACT_REDACT && r->llm) {
        s_error_at (ctx, node, "rule '%s': a redact rule cannot ask an LLM judge", r->id);
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
s_parse_rule (s_ctx_t *ctx, yaml_node_t *node, s_rule_t *r)
{
    r->args_invalid = r->args_repaired = r->schema_violation = r->incomplete = FLAG_ANY;
    r->is_error = FLAG_ANY;
    r->max_calls = -1;
    if (node->type != YAML_MAPPING_NODE) {
        s_error_at (ctx, node, "a rule must be a mapping");
        return -1;
    }
    bool has_action = false;
    for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
        yaml_node_t *k = s_node (ctx, p->key);
        const char *key = s_scalar (k);
        if (!key) {
            s_error_at (ctx, k, "rule keys must be strings");
            return -1;
        }
        if (s_parse_rule_field (ctx, k, s_node (ctx, p->value), key, r, &has_action))
            return -1;
    }
    if (!r->id) {
        s_error_at (ctx, node, "a rule needs an id");
        return -1;
    }
    if (!has_action && !r->llm) {
        s_error_at (ctx, node, "rule '%s' needs an action", r->id);
        return -1;
    }
    if (r->on_request)
        return s_check_request_rule (ctx, node, r, has_action);
    if (r->on_text) {
        if (r->action != SL_ACT_ALLOW || r->llm || r->parts || r->tools.count || r->is_error != FLAG_ANY
        ||  r->redact_count || r->arg_count || r->args_invalid != FLAG_ANY || r->args_repaired != FLAG_ANY
        ||  r->schema_violation != FLAG_ANY || r->incomplete != FLAG_ANY || r->cuts || r->max_calls >= 0
        ||  r->edit_count || r->history_count) {
            s_error_at (ctx, node, "rule '%s': on: text flags the response's text, which has gone to the "
                        "client already: text, size, model and headers, and action allow", r->id);
            return -1;
        }
        r->parts = 1u << SL_RPART_TEXT;
        return 0;
    }
    if (r->parts || r->text_count || r->size || r->is_error != FLAG_ANY || r->redact_count) {
        s_error_at (ctx, node, "rule '%s': part, text, size, is_error and redact judge a request "
                    "(on: request)", r->id);
        return -1;
    }
    if (r->action == SL_ACT_REDACT || r->action == SL_ACT_BLOCK_RESULT) {
        s_error_at (ctx, node, "rule '%s': %s judges a request (on: request)", r->id, sl_action_name (r->action));
        return -1;
    }
    if (!has_action && r->llm)
        r->action = SL_ACT_BLOCK;       //  what an LLM judge's "no" does by default
    else
    if (!has_action) {
        s_error_at (ctx, node, "rule '%s' needs an action", r->id);
        return -1;
    }
    if (r->llm && r->action == SL_ACT_ALLOW) {
        s_error_at (ctx, node, "rule '%s': an llm_judge rule acts on the calls its judge rejects, "
                    "so its action cannot be allow", r->id);
        return -1;
    }
    if (r->action == SL_ACT_REWRITE && r->edit_count == 0) {
        s_error_at (ctx, node, "rule '%s': rewrite needs set or delete", r->id);
        return -1;
    }
    if (r->action != SL_ACT_REWRITE && r->edit_count > 0) {
        s_error_at (ctx, node, "rule '%s': set and delete need action: rewrite", r->id);
        return -1;
    }
    return 0;
}

static int
s_parse_rules (s_ctx_t *ctx, yaml_node_t *v, sl_policy_t *self)
{
    if (v->type != YAML_SEQUENCE_NODE) {
        s_error_at (ctx, v, "rules must be a list");
        return -1;
    }
    int n = (int) (v->data.sequence.items.top - v->data.sequence.items.start);
    self->rules = sl_xcalloc ((size_t) n + 1, sizeof (s_rule_t));
    for (int i = 0; i < n; i++) {
        yaml_node_t *item = s_node (ctx, v->data.sequence.items.start [i]);
        self->rule_count = i + 1;
        s_rule_t *r = &self->rules [i];
        if (s_parse_rule (ctx, item, r))
            return -1;
        for (int j = 0; j < i; j++)
            if (strcmp (self->rules [j].id, r->id) == 0) {
                s_error_at (ctx, item, "duplicate rule id '%s'", r->id);
                return -1;
            }
        if (r->schema_violation != FLAG_ANY)
            self->uses_schema = true;
        if (r->llm)
            self->llm_count++;
        if (r->on_request)
            self->request_count++;
        if (r->on_text)
            self->text_count++;
        if (r->history_count)
            self->uses_history = true;
    }
    return 0;
}

//  on_incomplete: an action, or a mapping of action and message.
static int
s_parse_on_incomplete (s_ctx_t *ctx, yaml_node_t *node, sl_policy_t *self)
{
    yaml_node_t *action = node;
    if (node->type == YAML_MAPPING_NODE) {
        action = NULL;
        for (yaml_node_pair_t *p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
            yaml_node_t *k = s_node (ctx, p->key);
            const char *key = s_scalar (k);
            if (key && strcmp (key, "action") == 0)
                action = s_node (ctx, p->value);
            else
            if (key && strcmp (key, "message") == 0) {
                if (s_parse_string (ctx, s_node (ctx, p->value), "message", &self->incomplete_message))
                    return -1;
            }
            else {
                s_error_at (ctx, k, "unknown on_incomplete field '%s' (expected action, message)",
                            key ? key : "?");
                return -1;
            }
        }
        if (!action) {
            s_error_at (ctx, node, "on_incomplete needs an action");
            return -1;
        }
    }
    const char *v = s_scalar (action);
    int a = v ? sl_action_parse (v) : 0;
    if (a == 0 || a == SL_ACT_REWRITE || a == SL_ACT_REDACT || a == SL_ACT_BLOCK_RESULT) {
        s_error_at (ctx, action, "on_incomplete must be allow, block, drop or terminate");
        return -1;
    }
    self->incomplete_action = (sl_action_t) a;
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
        yaml_node_t *k = s_node (ctx, p->key);
        yaml_node_t *v = s_node (ctx, p->value);
        const char *key = s_scalar (k);
        int rc;
        if (key && strcmp (key, "default") == 0)
            rc = s_parse_action (ctx, v, true, &self->default_action);
        else
        if (key && strcmp (key, "message") == 0)
            rc = s_parse_string (ctx, v, "message", &self->default_message);
        else
        if (key && strcmp (key, "on_incomplete") == 0)
            rc = s_parse_on_incomplete (ctx, v, self);
        else
        if (key && strcmp (key, "version") == 0) {
            rc = 0;
            if (!s_scalar (v) || strcmp (s_scalar (v), "1") != 0) {
                s_error_at (ctx, v, "unsupported policy version (this sluice reads version 1)");
                rc = -1;
            }
        }
        else
        if (key && strcmp (key, "rules") == 0)
            rc = s_parse_rules (ctx, v, self);
        else {
            s_error_at (ctx, k, "unknown top-level field '%s' (expected version, default, message, "
                        "on_incomplete, rules)",
                        key ? key : "?");
            rc = -1;
        }
        if (rc)
            return -1;
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
    self->incomplete_action = SL_ACT_BLOCK;
    self->source = sl_xstrndup (text, size);
    s_digest (text, size, self->id);
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
    *error = NULL;
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

//  What one evaluation knows about the call, computed when first needed.
typedef struct {
    const sl_call_t *call;
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

static json_t *
s_resolve (json_t *root, char **tokens, int count)
{
    json_t *node = root;
    for (int i = 0; node && i < count; i++) {
        if (json_is_object (node))
            node = json_object_get (node, tokens [i]);
        else
        if (json_is_array (node)) {
            char *end;
            long k = strtol (tokens [i], &end, 10);
            node = (*tokens [i] && !*end && k >= 0) ? json_array_get (node, (size_t) k) : NULL;
        }
        else
            node = NULL;
    }
    return node;
}

//  Run a regex over bytes that may hold NUL: a NUL would end the match
//  early and hide what follows it, so NULs are matched as spaces.
static bool
s_regex_bytes (const regex_t *re, const char *s, size_t len)
{
    if (!memchr (s, 0, len))
        return regexec (re, s, 0, NULL, 0) == 0;
    char *copy = sl_xstrndup (s, len);
    for (size_t i = 0; i < len; i++)
        if (!copy [i])
            copy [i] = ' ';
    bool hit = regexec (re, copy, 0, NULL, 0) == 0;
    free (copy);
    return hit;
}

static bool
s_equal (json_t *a, json_t *b)
{
    if (json_is_number (a) && json_is_number (b))
        return json_number_value (a) == json_number_value (b);
    return json_equal (a, b);
}

//  Does the value (NULL: not there) pass every test of m?
static bool
s_matcher_eval (const s_matcher_t *m, json_t *value)
{
    bool hit;
    if (!value)
        hit = m->ops == OP_EXISTS && !m->exists;
    else {
        hit = true;
        bool str = json_is_string (value);
        const char *s = str ? json_string_value (value) : NULL;
        size_t len = str ? json_string_length (value) : 0;
        bool num = json_is_number (value);
        double d = num ? json_number_value (value) : 0;
        if (m->ops & OP_EXISTS)
            hit = hit && m->exists;
        if (hit && (m->ops & OP_REGEX)) {
            if (str)
                hit = s_regex_bytes (&m->regex, s, len);
            else {
                //  Non-strings are matched in their compact JSON form.
                char *text = json_dumps (value, JSON_ENCODE_ANY | JSON_COMPACT);
                hit = text && regexec (&m->regex, text, 0, NULL, 0) == 0;
                free (text);
            }
        }
        if (hit && (m->ops & OP_EQUALS))
            hit = s_equal (value, m->equals);
        if (hit && (m->ops & OP_CONTAINS)) {
            if (str && json_is_string (m->contains))
                hit = json_string_length (m->contains) == 0
                   || memmem (s, len, json_string_value (m->contains), json_string_length (m->contains));
            else
            if (json_is_array (value)) {
                hit = false;
                size_t i;
                json_t *elem;
                json_array_foreach (value, i, elem)
                    if (s_equal (elem, m->contains)) {
                        hit = true;
                        break;
                    }
            }
            else
                hit = false;
        }
        if (hit && (m->ops & OP_PREFIX))
            hit = str && len >= strlen (m->prefix) && memcmp (s, m->prefix, strlen (m->prefix)) == 0;
        if (hit && (m->ops & OP_GT)) hit = num && d > m->gt;
        if (hit && (m->ops & OP_GE)) hit = num && d >= m->ge;
        if (hit && (m->ops & OP_LT)) hit = num && d < m->lt;
        if (hit && (m->ops & OP_LE)) hit = num && d <= m->le;
    }
    return hit != m->negate;
}

static bool
s_names_match (const s_names_t *n, sl_str_t name)
{
    if (!name.ptr)
        return false;
    char stack [SL_POLICY_NAME_MAX];
    char *cname = NULL;
    bool hit = false;
    for (int i = 0; i < n->count && !hit; i++) {
        if (!n->globs [i]) {
            hit = sl_str_eq (name, n->names [i]);
            continue;
        }
        if (!cname) {
            cname = name.len < sizeof stack ? stack : sl_xmalloc (name.len + 1);
            memcpy (cname, name.ptr, name.len);
            cname [name.len] = 0;
        }
        hit = fnmatch (n->names [i], cname, 0) == 0;
    }
    if (cname && cname != stack)
        free (cname);
    return hit;
}

//  Run a regex over text of a known length (REG_STARTEND: no NUL needed,
//  and a NUL inside does not end it), after the literal every match must
//  hold was found (when the regex has one).
static bool
s_regex_text (const regex_t *re, const char *literal, sl_str_t text)
{
    if (literal && !memmem (text.ptr ? text.ptr : "", text.len, literal, strlen (literal)))
        return false;
    regmatch_t range = { .rm_so = 0, .rm_eo = (regoff_t) text.len };
    return regexec (re, text.ptr ? text.ptr : "", 1, &range, REG_STARTEND) == 0;
}

//  Does the text of a request part pass every test of m? (It is a
//  string: numeric tests fail on it.)
static bool
s_text_eval (const s_matcher_t *m, sl_str_t text)
{
    bool hit = true;
    if (m->ops & OP_EXISTS)
        hit = m->exists;
    if (hit && (m->ops & OP_REGEX))
        hit = s_regex_text (&m->regex, m->literal, text);
    if (hit && (m->ops & OP_EQUALS))
        hit = json_is_string (m->equals) && text.len == json_string_length (m->equals)
           && memcmp (text.ptr ? text.ptr : "", json_string_value (m->equals), text.len) == 0;
    if (hit && (m->ops & OP_CONTAINS))
        hit = json_is_string (m->contains)
           && (json_string_length (m->contains) == 0
               || memmem (text.ptr ? text.ptr : "", text.len, json_string_value (m->contains),
                          json_string_length (m->contains)));
    if (hit && (m->ops & OP_PREFIX))
        hit = text.len >= strlen (m->prefix) && memcmp (text.ptr, m->prefix, strlen (m->prefix)) == 0;
    if (hit && (m->ops & (OP_GT | OP_GE | OP_LT | OP_LE)))
        hit = false;
    return hit != m->negate;
}

//  Numeric tests on a number (a part's size).
static bool
s_number_eval (const s_matcher_t *m, double d)
{
    bool hit = true;
    if (m->ops & OP_GT) hit = hit && d > m->gt;
    if (m->ops & OP_GE) hit = hit && d >= m->ge;
    if (m->ops & OP_LT) hit = hit && d < m->lt;
    if (m->ops & OP_LE) hit = hit && d <= m->le;
    return hit != m->negate;
}

//  Header values are strings; a header the request did not send is absent.
static bool
s_header_match (const s_matcher_t *m, sl_str_t headers)
{
    sl_str_t raw;
    json_t *value = NULL;
    if (headers.ptr && sl_json_find (headers, m->pointer, &raw) == 1) {
        sl_buf_t text = { 0 };
        if (sl_json_unescape (raw, &text) == 0)
            value = json_stringn (text.data ? text.data : "", text.len);
        sl_buf_free (&text);
    }
    bool hit = s_matcher_eval (m, value);
    json_decref (value);
    return hit;
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
s_history_match (const s_rule_t *r, s_eval_t *e)
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
        const s_past_t *past = &r->history [k];
        bool found = false;
        size_t i;
        json_t *call;
        json_array_foreach (e->history, i, call) {
            if (past->tools.count && !s_names_match (&past->tools, sl_str_n (json_string_value (json_object_get (call, "name")),
                                                                             json_string_length (json_object_get (call, "name")))))
                continue;
            json_t *args = json_object_get (call, "args");
            bool ok = true;
            for (int j = 0; ok && j < past->arg_count; j++)
                ok = args && s_matcher_eval (&past->args [j], s_resolve (args, past->args [j].tokens, past->args [j].token_count));
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

//  The conditions of rule r; detail gets what made a schema rule match.
//  Would the rule let a call through? (Then it must not apply to a call
//  that did not end cleanly unless it says so: a prefix of the arguments
//  can show harm, never the absence of it.)
static bool
s_rule_passes (const s_rule_t *r)
{
    return r->action == SL_ACT_ALLOW || r->action == SL_ACT_REWRITE || r->llm;
}

static bool
s_rule_matches (const s_rule_t *r, s_eval_t *e, sl_buf_t *detail)
{
    const sl_call_t *c = e->call;
    sl_cut_t cut = s_cut (c);
    if (r->on_request || r->on_text)
        return false;                   //  a rule for the request or the text, not for calls
    if (r->tools.count && !s_names_match (&r->tools, c->name))
        return false;
    if (r->incomplete != FLAG_ANY && (r->incomplete == FLAG_YES) != (cut != SL_CUT_NONE))
        return false;
    if (r->cuts && !(cut != SL_CUT_NONE && (r->cuts & (1u << cut))))
        return false;
    if (cut != SL_CUT_NONE && s_rule_passes (r) && r->incomplete != FLAG_YES && !r->cuts)
        return false;
    if (r->models.count && !s_names_match (&r->models, c->model))
        return false;
    if (r->max_calls >= 0 && c->ordinal <= r->max_calls)
        return false;
    //  Arguments the aggregator found valid but that cannot be read here
    //  (nesting beyond jansson's limit, say) are invalid for the policy too.
    if (r->args_invalid != FLAG_ANY && (r->args_invalid == FLAG_YES) != !s_args (e))
        return false;
    if (r->args_repaired != FLAG_ANY && (r->args_repaired == FLAG_YES) != c->repaired)
        return false;
    for (int i = 0; i < r->header_count; i++)
        if (!s_header_match (&r->headers [i], c->headers))
            return false;
    if (r->arg_count) {
        json_t *args = s_seen_args (e);
        if (!args)
            return false;               //  no argument test passes on unreadable arguments
        for (int i = 0; i < r->arg_count; i++)
            if (!s_matcher_eval (&r->args [i], s_resolve (args, r->args [i].tokens, r->args [i].token_count)))
                return false;
    }
    if (r->history_count && !s_history_match (r, e))
        return false;
    if (r->schema_violation != FLAG_ANY) {
        sl_buf_reset (detail);
        bool violates = s_violates (e, detail);
        if ((r->schema_violation == FLAG_YES) != violates)
            return false;
    }
    return true;
}

//  Fill a notice template: {tool}, {rule}, {reason}, {cut}.
static char *
s_render_with (const char *tmpl, sl_str_t tool, sl_cut_t cut, const char *rule, const char *reason)
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

static char *
s_render (const char *tmpl, const sl_call_t *call, const char *rule, const char *reason)
{
    return s_render_with (tmpl, call->name, s_cut (call), rule, reason);
}

//  Set (value) or delete (value NULL) at tokens in root; creates missing
//  objects on the way. 0 ok, -1 when the path cannot exist.
static int
s_edit (json_t *root, const s_edit_t *e)
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
s_rewrite (const s_rule_t *r, json_t *args, sl_buf_t *why)
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

static void
s_decision_init (sl_decision_t *d)
{
    memset (d, 0, sizeof *d);
    d->llm_rule = -1;
    d->probability = NAN;
}

//  Take rule r's action for the call, with reason (copied).
static void
s_take_action (const s_rule_t *r, s_eval_t *e, sl_action_t action, const char *reason, sl_decision_t *d)
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

//  Say in a reason why the call did not end cleanly, when it did not.
static void
s_note_cut (sl_buf_t *reason, const sl_call_t *call)
{
    if (s_cut (call) != SL_CUT_NONE)
        sl_buf_printf (reason, "; the call was cut off (%s)", sl_cut_name (s_cut (call)));
}

//  Does some rule concern the tool: name it, or name no tool at all?
static bool
s_concerns (sl_policy_t *self, sl_str_t name)
{
    for (int i = 0; i < self->rule_count; i++)
        if (!self->rules [i].on_request && !self->rules [i].on_text
        &&  (!self->rules [i].tools.count || s_names_match (&self->rules [i].tools, name)))
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
//  end cleanly when some rule concerns its tool.
static void
s_take_default (sl_policy_t *self, const sl_call_t *call, sl_decision_t *out)
{
    sl_cut_t cut = s_cut (call);
    bool incomplete = cut != SL_CUT_NONE && s_concerns (self, call->name);
    sl_buf_t reason = { 0 };
    out->check = SL_CHK_DEFAULT;
    const char *tmpl = NULL;
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

void
sl_policy_decide (sl_policy_t *self, const sl_call_t *call, sl_decision_t *out)
{
    s_decision_init (out);
    s_eval_t e = { .call = call };
    sl_buf_t detail = { 0 };
    for (int i = 0; i < self->rule_count; i++) {
        const s_rule_t *r = &self->rules [i];
        if (!s_rule_matches (r, &e, &detail))
            continue;
        out->check = SL_CHK_RAN;
        if (r->llm) {
            out->rule = r->id;
            out->llm_rule = i;
            out->judge_model = r->llm->model;
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
        return;
    }
    sl_buf_free (&detail);
    s_eval_clear (&e);
    s_take_default (self, call, out);
    s_hold_oversize (self, call, out);
}

const sl_llm_spec_t *
sl_policy_llm_spec (sl_policy_t *self, int rule)
{
    return rule >= 0 && rule < self->rule_count ? self->rules [rule].llm : NULL;
}

void
sl_policy_llm_prompt (sl_policy_t *self, int rule, const sl_call_t *call, sl_buf_t *out)
{
    const sl_llm_spec_t *spec = sl_policy_llm_spec (self, rule);
    if (spec)
        sl_llm_render_prompt (spec->prompt, call->name, call->arguments, call->last_user, call->model, out);
}

void
sl_policy_conclude (sl_policy_t *self, const sl_call_t *call,
                    const sl_llm_result_t *result, sl_decision_t *d)
{
    int index = d->llm_rule;
    const sl_llm_spec_t *spec = sl_policy_llm_spec (self, index);
    if (!spec)
        return;                         //  not a pending decision of this policy
    const s_rule_t *r = &self->rules [index];
    s_eval_t e = { .call = call };
    sl_buf_t reason = { 0 };
    d->judge_model = spec->model;
    d->rule = r->id;
    if (result->check == SL_CHK_RAN) {
        d->check = SL_CHK_RAN;
        d->probability = result->probability;
        bool harmful = result->probability >= spec->threshold;
        sl_buf_printf (&reason, "LLM judge %s: p=%.2f %s %.2f", spec->model, result->probability,
                       harmful ? ">=" : "<", spec->threshold);
        if (result->explanation && *result->explanation)
            sl_buf_printf (&reason, ": %s", result->explanation);
        s_note_cut (&reason, call);
        if (harmful)
            s_take_action (r, &e, r->action, sl_buf_cstr (&reason), d);
        else {
            d->action = SL_ACT_ALLOW;
            d->reason = sl_xstrdup (sl_buf_cstr (&reason));
        }
    }
    else {
        d->check = result->check == SL_CHK_TIMEOUT ? SL_CHK_TIMEOUT : SL_CHK_ERROR;
        d->probability = NAN;
        sl_buf_printf (&reason, "LLM judge %s %s: %s; on_error: %s", spec->model,
                       d->check == SL_CHK_TIMEOUT ? "timed out" : "failed",
                       result->error ? result->error : "no answer", sl_action_name (spec->on_error));
        s_note_cut (&reason, call);
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

void
sl_decision_clear (sl_decision_t *decision)
{
    free (decision->reason);
    free (decision->message);
    free (decision->arguments);
    s_decision_init (decision);
}

//  --------------------------------------------------------------------------
//  Request rules

//  Does rule r apply to this part, whose text (redacted so far) is text?
static bool
s_part_matches (const s_rule_t *r, const sl_rpart_t *part, sl_str_t text)
{
    if (!(r->on_request || r->on_text) || part->kind <= 0 || part->kind >= SL_RPART_MAX
    ||  !(r->parts & (1u << part->kind)))
        return false;
    if (r->tools.count && !s_names_match (&r->tools, part->tool))
        return false;
    if (r->is_error != FLAG_ANY
    &&  (part->kind != SL_RPART_TOOL_RESULT || (r->is_error == FLAG_YES) != part->is_error))
        return false;
    if (r->models.count && !s_names_match (&r->models, part->model))
        return false;
    if (r->size && !s_number_eval (r->size, (double) text.len))
        return false;
    for (int i = 0; i < r->header_count; i++)
        if (!s_header_match (&r->headers [i], part->headers))
            return false;
    for (int i = 0; i < r->text_count; i++)
        if (!s_text_eval (&r->texts [i], text))
            return false;
    if (r->action == SL_ACT_REDACT) {
        //  A redaction applies where one of its patterns matches.
        bool any = false;
        for (int i = 0; !any && i < r->redact_count; i++)
            any = s_regex_text (&r->redacts [i].regex, r->redacts [i].literal, text);
        if (!any)
            return false;
    }
    return true;
}

//  The rule's action on a part, with reason (copied).
static void
s_take_part_action (const s_rule_t *r, const sl_rpart_t *part, sl_action_t action, const char *reason,
                    sl_decision_t *d)
{
    d->action = action;
    d->rule = r->id;
    d->reason = sl_xstrdup (reason);
    if (action == SL_ACT_BLOCK_RESULT || action == SL_ACT_TERMINATE)
        d->message = s_render_with (r->message ? r->message
                                  : action == SL_ACT_BLOCK_RESULT ? S_DEFAULT_BLOCK_RESULT : S_DEFAULT_REFUSE,
                                    part->tool, SL_CUT_NONE, r->id, reason);
}

//  Replace every match of one pattern; the number of matches.
static size_t
s_redact_one (const s_redact_t *red, sl_str_t text, sl_buf_t *out)
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
    const s_rule_t *r = &self->rules [rule];
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
    s_decision_init (&out->decision);
    sl_decision_t *d = &out->decision;
    sl_str_t text = part->text;
    sl_buf_t bufs [2] = { { 0 }, { 0 } };
    int cur = 0;
    for (int i = 0; i < self->rule_count; i++) {
        const s_rule_t *r = &self->rules [i];
        if (!s_part_matches (r, part, text))
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
    const s_rule_t *r = &self->rules [index];
    sl_buf_t reason = { 0 };
    d->judge_model = spec->model;
    d->rule = r->id;
    if (result->check == SL_CHK_RAN) {
        d->check = SL_CHK_RAN;
        d->probability = result->probability;
        bool harmful = result->probability >= spec->threshold;
        sl_buf_printf (&reason, "LLM judge %s: p=%.2f %s %.2f", spec->model, result->probability,
                       harmful ? ">=" : "<", spec->threshold);
        if (result->explanation && *result->explanation)
            sl_buf_printf (&reason, ": %s", result->explanation);
        if (harmful)
            s_take_part_action (r, part, r->action, sl_buf_cstr (&reason), d);
        else {
            d->action = SL_ACT_ALLOW;
            d->reason = sl_xstrdup (sl_buf_cstr (&reason));
        }
    }
    else {
        d->check = result->check == SL_CHK_TIMEOUT ? SL_CHK_TIMEOUT : SL_CHK_ERROR;
        d->probability = NAN;
        sl_action_t action = spec->on_error == SL_ACT_ALLOW ? SL_ACT_ALLOW : r->action;
        sl_buf_printf (&reason, "LLM judge %s %s: %s; on_error: %s", spec->model,
                       d->check == SL_CHK_TIMEOUT ? "timed out" : "failed",
                       result->error ? result->error : "no answer", sl_action_name (spec->on_error));
        if (action == SL_ACT_ALLOW) {
            d->action = SL_ACT_ALLOW;
            d->reason = sl_xstrdup (sl_buf_cstr (&reason));
        }
        else
            s_take_part_action (r, part, action, sl_buf_cstr (&reason), d);
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
