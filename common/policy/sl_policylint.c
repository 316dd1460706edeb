/*  sl_policylint.c - a policy's lint (see sl_policylint.h).

    The rule checks read the loaded model (sl_policy_impl.h): what a rule
    tests is there, as the judge evaluates it. Lines come from the
    files' YAML, read again: each rule's line by its id, and each regex's
    own line, as the author wrote it (the model keeps only the compiled
    pattern).
*/
#include "common/policy/sl_policylint.h"

#include <fnmatch.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_yaml.h"
#include "common/identity/sl_keyring.h"
#include "common/policy/sl_policy_impl.h"

#define S_MAX_FILE (4u << 20)           //  largest policy file read again for lines
#define S_MAX_DEPTH 64                  //  nesting walked for regexes
#define S_MAX_INVENTORY (64u << 20)     //  largest inventory read

//  Where rules and regexes stand in the files.
typedef struct {
    sl_buf_t *out;
    int found;
    const char *file;                   //  the file being walked
    sl_policy_t *policy;
    //  rule id -> "file:line", kept as parallel arrays (a policy has few rules)
    char **ids;
    char **places;
    size_t count;
    int depth;
} s_lint_t;

static const char *
s_place (s_lint_t *l, const char *id)
{
    for (size_t i = 0; id && i < l->count; i++)
        if (!strcmp (l->ids [i], id))
            return l->places [i];
    return sl_policy_name (l->policy);
}

static void
s_finding (s_lint_t *l, const char *place, const char *id, const char *kind, const char *what)
{
    sl_buf_printf (l->out, "%s: %s%s%s%s: %s\n", place, kind, id ? " (rule " : "", id ? id : "", id ? ")" : "",
                   what);
    l->found++;
}

//  --------------------------------------------------------------------------
//  Regexes

//  Does p start a repetition without bound: *, +, {n,}?
static bool
s_open_repeat (const char *p)
{
    if (*p == '*' || *p == '+')
        return true;
    if (*p != '{')
        return false;
    p++;
    while (*p >= '0' && *p <= '9')
        p++;
    return p [0] == ',' && p [1] == '}';
}

//  After an atom at p: skip its quantifier (if any), saying whether it
//  repeats without bound. Returns the last character of the atom's
//  quantifier (or p - 1 when there is none).
static const char *
s_quantifier (const char *p, bool *unbounded)
{
    *unbounded = s_open_repeat (p);
    if (*p == '*' || *p == '+' || *p == '?')
        return p;
    if (*p == '{') {
        const char *end = strchr (p, '}');
        return end ? end : p;
    }
    return p - 1;
}

//  Where a bracket expression starting at p ends (its ']').
static const char *
s_bracket_end (const char *p)
{
    const char *q = p + 1;
    if (*q == '^')
        q++;
    if (*q == ']')
        q++;
    while (*q && *q != ']') {
        if (*q == '[' && (q [1] == ':' || q [1] == '.' || q [1] == '=')) {
            const char *end = strstr (q + 2, q [1] == ':' ? ":]" : q [1] == '.' ? ".]" : "=]");
            q = end ? end + 2 : q + 1;
            continue;
        }
        q++;
    }
    return *q ? q : q - 1;
}

//  The classic shapes: a back-reference (glibc matches those by
//  backtracking), and a group repeated without bound whose every atom
//  also repeats without bound ((a+)+, (a*b*)*, ([a-z]+)*): an iteration
//  of the group can then match the same text in exponentially many ways.
//  A group with a fixed atom ((-[a-z]+ )+) is not one: each iteration
//  must consume that atom.
bool
sl_policylint_catastrophic (const char *re, const char **why)
{
    enum { S_GROUPS = 64 };
    int atoms [S_GROUPS + 1] = { 0 }, fixed [S_GROUPS + 1] = { 0 };
    int depth = 0;
    for (const char *p = re; *p; p++) {
        bool unbounded = false;
        if (*p == '\\') {
            if (p [1] >= '1' && p [1] <= '9') {
                *why = "a back-reference: matching it backtracks, in time exponential in the text";
                return true;
            }
            if (p [1])
                p++;
        }
        else if (*p == '[')
            p = s_bracket_end (p);
        else if (*p == '(') {
            if (depth < S_GROUPS) {
                depth++;
                atoms [depth] = fixed [depth] = 0;
            }
            continue;
        }
        else if (*p == ')' && depth > 0) {
            bool all_repeat = atoms [depth] > 0 && fixed [depth] == 0;
            depth--;
            p = s_quantifier (p + 1, &unbounded);
            if (all_repeat && unbounded) {
                *why = "a group repeated without bound whose every part repeats too (like (a+)+): "
                       "matching may take time exponential in the text";
                return true;
            }
            atoms [depth]++;
            if (!unbounded && !all_repeat)
                fixed [depth]++;
            continue;
        }
        else if (*p == '^' || *p == '$' || *p == '|')
            continue;
        //  an atom: a character, an escape, a bracket expression, '.'
        p = s_quantifier (p + 1, &unbounded);
        atoms [depth]++;
        if (!unbounded)
            fixed [depth]++;
    }
    return false;
}

static int s_walk_node (sl_yaml_t *y, yaml_node_t *node, s_lint_t *l);

static int
s_walk_member (sl_yaml_t *y, const char *key, yaml_node_t *knode, yaml_node_t *value, void *arg)
{
    (void) knode;
    s_lint_t *l = arg;
    const char *s = sl_yaml_scalar (value);
    if (s && !strcmp (key, "regex")) {
        const char *why = NULL;
        if (sl_policylint_catastrophic (s, &why)) {
            char place [4096];
            snprintf (place, sizeof place, "%s:%zu", l->file, value->start_mark.line + 1);
            sl_buf_t what = { 0 };
            sl_buf_printf (&what, "'%s': %s", s, why);
            s_finding (l, place, NULL, "regex", sl_buf_cstr (&what));
            sl_buf_free (&what);
        }
        return 0;
    }
    return s_walk_node (y, value, l);
}

static int
s_walk_item (sl_yaml_t *y, yaml_node_t *item, size_t index, void *arg)
{
    (void) index;
    return s_walk_node (y, item, arg);
}

static int
s_walk_node (sl_yaml_t *y, yaml_node_t *node, s_lint_t *l)
{
    if (l->depth >= S_MAX_DEPTH)
        return 0;
    l->depth++;
    int rc = 0;
    if (node->type == YAML_MAPPING_NODE)
        rc = sl_yaml_mapping (y, node, "a mapping", s_walk_member, l);
    else if (node->type == YAML_SEQUENCE_NODE)
        rc = sl_yaml_sequence (y, node, "a list", s_walk_item, l);
    l->depth--;
    return rc;
}

//  Each rule's id and line.
static int
s_rule_item (sl_yaml_t *y, yaml_node_t *item, size_t index, void *arg)
{
    (void) index;
    s_lint_t *l = arg;
    yaml_node_t *id = item->type == YAML_MAPPING_NODE ? sl_yaml_get (y, item, "id") : NULL;
    const char *s = id ? sl_yaml_scalar (id) : NULL;
    if (s) {
        char place [4096];
        snprintf (place, sizeof place, "%s:%zu", l->file, item->start_mark.line + 1);
        l->ids = sl_xrealloc (l->ids, (l->count + 1) * sizeof *l->ids);
        l->places = sl_xrealloc (l->places, (l->count + 1) * sizeof *l->places);
        l->ids [l->count] = sl_xstrdup (s);
        l->places [l->count++] = sl_xstrdup (place);
    }
    return 0;
}

//  Read a file of the policy again: its rules' lines, its regexes.
static void
s_read_file (s_lint_t *l, const char *path, const char *text, size_t size)
{
    char *error = NULL;
    sl_yaml_t *y = text ? sl_yaml_parse (text, size, path, &error) : sl_yaml_load (path, S_MAX_FILE, &error);
    free (error);
    if (!y)
        return;                         //  it loaded as a policy: this does not happen
    yaml_node_t *root = sl_yaml_root (y);
    l->file = path;
    yaml_node_t *rules = root && root->type == YAML_MAPPING_NODE ? sl_yaml_get (y, root, "rules") : NULL;
    if (rules && rules->type == YAML_SEQUENCE_NODE)
        sl_yaml_sequence (y, rules, "rules", s_rule_item, l);
    if (root)
        s_walk_node (y, root, l);
    sl_yaml_destroy (&y);
}

//  --------------------------------------------------------------------------
//  Rules

static bool
s_is_call_rule (const sl_policy_rule_t *r)
{
    return !r->on_request && !r->on_text;
}

//  Does the rule test nothing but tool and model names?
static bool
s_names_only (const sl_policy_rule_t *r)
{
    return r->servers.count == 0 && r->definitions == 0 && r->arg_count == 0 && r->header_count == 0
           && r->args_invalid == SL_FLAG_ANY && r->args_repaired == SL_FLAG_ANY
           && r->schema_violation == SL_FLAG_ANY && r->incomplete == SL_FLAG_ANY && r->cuts == 0
           && r->max_calls < 0 && r->tainted == SL_FLAG_ANY && r->tainted_by.count == 0 && r->history_count == 0;
}

//  Does every name b matches match a too? (count 0: every name.)
static bool
s_names_cover (const sl_policy_names_t *a, const sl_policy_names_t *b)
{
    if (a->count == 0)
        return true;
    if (b->count == 0)
        return false;
    for (int j = 0; j < b->count; j++) {
        bool covered = false;
        for (int i = 0; i < a->count && !covered; i++)
            covered = !strcmp (a->names [i], b->names [j])
                      || (a->globs [i] && !b->globs [j] && fnmatch (a->names [i], b->names [j], 0) == 0);
        if (!covered)
            return false;
    }
    return true;
}

//  Would rule a, tried first, decide every call rule b matches?
static bool
s_shadows (const sl_policy_rule_t *a, const sl_policy_rule_t *b)
{
    if (!s_is_call_rule (a) || !s_is_call_rule (b) || !s_names_only (a))
        return false;
    //  A rule that lets calls through applies to an incomplete call only
    //  when it names the incompleteness: b may still decide those.
    bool lets_through = a->action == SL_ACT_ALLOW || a->action == SL_ACT_REWRITE || a->llm || a->ask;
    if (lets_through && (b->incomplete == SL_FLAG_YES || b->cuts))
        return false;
    return s_names_cover (&a->tools, &b->tools) && s_names_cover (&a->models, &b->models);
}

//  Why the rule's argument tests can never all hold, or NULL.
static const char *
s_contradiction (const sl_policy_rule_t *r)
{
    for (int i = 0; i < r->arg_count; i++) {
        const sl_policy_matcher_t *a = &r->args [i];
        if (a->negate)
            continue;
        if ((a->ops & SL_OP_EXISTS) && !a->exists && (a->ops & ~SL_OP_EXISTS))
            return "exists: false beside a test of the same value";
        double lo = -INFINITY, hi = INFINITY;
        bool lo_strict = false, hi_strict = false;
        for (int j = 0; j < r->arg_count; j++) {
            const sl_policy_matcher_t *b = &r->args [j];
            if (b->negate || strcmp (a->pointer, b->pointer))
                continue;
            if (j > i && (a->ops & SL_OP_EQUALS) && (b->ops & SL_OP_EQUALS) && !json_equal (a->equals, b->equals))
                return "two different equals on one pointer";
            if (j != i && (b->ops & SL_OP_EXISTS) && !b->exists && a->ops != SL_OP_EXISTS)
                return "exists: false beside a test of the same value";
            if ((b->ops & SL_OP_GT) && (b->gt > lo || (b->gt == lo && !lo_strict)))
                lo = b->gt, lo_strict = true;
            if ((b->ops & SL_OP_GE) && b->ge > lo)
                lo = b->ge, lo_strict = false;
            if ((b->ops & SL_OP_LT) && (b->lt < hi || (b->lt == hi && !hi_strict)))
                hi = b->lt, hi_strict = true;
            if ((b->ops & SL_OP_LE) && b->le < hi)
                hi = b->le, hi_strict = false;
        }
        if (lo > hi || (lo == hi && (lo_strict || hi_strict)))
            return "numeric bounds no number meets";
    }
    return NULL;
}

//  --------------------------------------------------------------------------
//  Approvers

//  Can someone of the keyring decide an ask of spec?
static bool
s_reachable (const sl_ask_spec_t *spec, const sl_keyring_t *keys)
{
    bool tokens = sl_keyring_jwt (keys) != NULL;    //  a token may name any team or user
    size_t n = sl_keyring_count (keys);
    if (spec->approver_count == 0) {
        //  approver keys and the console: with no approver key, only the console
        return true;
    }
    for (int a = 0; a < spec->approver_count; a++) {
        const char *who = spec->approvers [a];
        if (!strcmp (who, "console"))
            return true;
        if (tokens && (!strncmp (who, "team:", 5) || !strncmp (who, "user:", 5)))
            return true;
        for (size_t i = 0; i < n; i++) {
            const sl_keyentry_t *k = sl_keyring_at (keys, i);
            if ((!strncmp (who, "team:", 5) && k->team && !strcmp (k->team->name, who + 5))
                || (!strncmp (who, "user:", 5) && k->user && !strcmp (k->user, who + 5))
                || (!strncmp (who, "key:", 4) && k->id && !strcmp (k->id, who + 4)))
                return true;
        }
    }
    return false;
}

//  --------------------------------------------------------------------------
//  The inventory

//  The tool names of an inventory export: {"tools":[{"name":..},..]} or
//  a list of names or of such objects.
static json_t *
s_inventory (const char *path, char **error)
{
    json_error_t err;
    json_t *doc = json_load_file (path, 0, &err);
    if (!doc) {
        sl_buf_t why = { 0 };
        sl_buf_printf (&why, "%s:%d: not JSON: %s", path, err.line, err.text);
        *error = sl_xstrdup (sl_buf_cstr (&why));
        sl_buf_free (&why);
        return NULL;
    }
    json_t *list = json_is_array (doc) ? doc : json_object_get (doc, "tools");
    if (!json_is_array (list)) {
        json_decref (doc);
        sl_buf_t why = { 0 };
        sl_buf_printf (&why, "%s: not a tool inventory ({\"tools\":[...]} as GET /api/tools answers)", path);
        *error = sl_xstrdup (sl_buf_cstr (&why));
        sl_buf_free (&why);
        return NULL;
    }
    json_t *names = json_array ();
    size_t i;
    json_t *t;
    json_array_foreach (list, i, t) {
        json_t *name = json_is_string (t) ? t : json_object_get (t, "name");
        if (json_is_string (name))
            json_array_append (names, name);
        json_t *tool = json_is_object (t) ? json_object_get (t, "tool") : NULL;
        if (json_is_string (tool))
            json_array_append (names, tool);
    }
    json_decref (doc);
    return names;
}

static bool
s_known (json_t *names, const char *name, bool glob)
{
    size_t i;
    json_t *n;
    json_array_foreach (names, i, n) {
        const char *s = json_string_value (n);
        if (glob ? fnmatch (name, s, 0) == 0 : !strcmp (name, s))
            return true;
    }
    return false;
}

//  --------------------------------------------------------------------------

int
sl_policylint_run (sl_policy_t *policy, const sl_policylint_opts_t *opts, sl_buf_t *out, char **error)
{
    *error = NULL;
    json_t *inventory = NULL;
    sl_keyring_t *keys = NULL;
    if (opts && opts->inventory && !(inventory = s_inventory (opts->inventory, error)))
        return -1;
    if (opts && opts->keys_file && !(keys = sl_keyring_load (opts->keys_file, error))) {
        json_decref (inventory);
        return -1;
    }
    s_lint_t l = { .out = out, .policy = policy };
    if (policy->file_count == 0)
        s_read_file (&l, policy->name, policy->source, strlen (policy->source));
    for (int f = 0; f < policy->file_count; f++)
        s_read_file (&l, policy->files [f], NULL, 0);
    for (int j = 0; j < policy->rule_count; j++) {
        const sl_policy_rule_t *b = &policy->rules [j];
        const char *place = s_place (&l, b->id);
        for (int i = 0; i < j; i++)
            if (s_shadows (&policy->rules [i], b)) {
                sl_buf_t what = { 0 };
                sl_buf_printf (&what, "never decides: rule %s, tried first, matches every call it matches",
                               policy->rules [i].id);
                s_finding (&l, place, b->id, "shadowed", sl_buf_cstr (&what));
                sl_buf_free (&what);
                break;
            }
        const char *never = s_contradiction (b);
        if (never)
            s_finding (&l, place, b->id, "never", never);
        if (keys && b->ask && !s_reachable (b->ask, keys))
            s_finding (&l, place, b->id, "approver",
                       "no one in the keys file can decide this ask: its approvers name no team, user or key "
                       "the file has, nor the console");
        for (int t = 0; inventory && t < b->tools.count; t++)
            if (!s_known (inventory, b->tools.names [t], b->tools.globs [t])) {
                sl_buf_t what = { 0 };
                sl_buf_printf (&what, "%s '%s': no tool of the inventory %s", b->tools.globs [t] ? "glob" : "tool",
                               b->tools.names [t], b->tools.globs [t] ? "matches it" : "has this name");
                s_finding (&l, place, b->id, "tool", sl_buf_cstr (&what));
                sl_buf_free (&what);
            }
    }
    for (size_t i = 0; i < l.count; i++) {
        free (l.ids [i]);
        free (l.places [i]);
    }
    free (l.ids);
    free (l.places);
    json_decref (inventory);
    sl_keyring_unref (&keys);
    return l.found;
}
