/*  sl_backtest.c - a new policy against recorded verdicts (see sl_backtest.h).

    Counts live in hash tables keyed by rule, team and tool (czmq's
    zhashx), each value a row of counts by category; examples are kept
    as JSON text, the first few of each category. Nothing grows with the
    number of calls but the counts themselves.
*/
#include "common/policy/sl_backtest.h"

#include <czmq.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"

#define S_DEFAULT_RULE "(default)"      //  the rule of a verdict no rule decided
#define S_OTHER "(other)"               //  a key past SL_BACKTEST_MAX_KEYS
#define S_NONE "(none)"                 //  a call without a team

static const char *s_kind_names [SL_BACKTEST_KINDS] = {
    "unchanged", "newly_blocked", "newly_allowed", "rewritten", "asked", "needs_judge"
};

typedef struct {
    int64_t n [SL_BACKTEST_KINDS];
} s_row_t;

struct _sl_backtest_t {
    sl_policy_t *policy;
    int examples;                       //  kept per category
    int64_t calls;
    int64_t totals [SL_BACKTEST_KINDS];
    zhashx_t *by_rule, *by_team, *by_tool;  //  key -> s_row_t
    sl_buf_t kept [SL_BACKTEST_KINDS];  //  examples, JSON objects joined by commas
    int kept_count [SL_BACKTEST_KINDS];
};

static void
s_row_free (void **item)
{
    free (*item);
    *item = NULL;
}

static zhashx_t *
s_table (void)
{
    zhashx_t *t = zhashx_new ();
    zhashx_set_destructor (t, s_row_free);
    return t;
}

sl_backtest_t *
sl_backtest_new (sl_policy_t *policy, int examples)
{
    sl_backtest_t *self = sl_xcalloc (1, sizeof *self);
    self->policy = sl_policy_ref (policy);
    self->examples = examples < 0 ? 0 : examples > SL_BACKTEST_MAX_EXAMPLES ? SL_BACKTEST_MAX_EXAMPLES : examples;
    self->by_rule = s_table ();
    self->by_team = s_table ();
    self->by_tool = s_table ();
    return self;
}

void
sl_backtest_destroy (sl_backtest_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_backtest_t *self = *self_p;
    sl_policy_unref (&self->policy);
    zhashx_destroy (&self->by_rule);
    zhashx_destroy (&self->by_team);
    zhashx_destroy (&self->by_tool);
    for (int k = 0; k < SL_BACKTEST_KINDS; k++)
        sl_buf_free (&self->kept [k]);
    free (self);
    *self_p = NULL;
}

const char *
sl_backtest_kind_name (sl_backtest_kind_t kind)
{
    return kind >= 0 && kind < SL_BACKTEST_KINDS ? s_kind_names [kind] : "?";
}

int64_t
sl_backtest_calls (sl_backtest_t *self)
{
    return self->calls;
}

int64_t
sl_backtest_count (sl_backtest_t *self, sl_backtest_kind_t kind)
{
    return kind >= 0 && kind < SL_BACKTEST_KINDS ? self->totals [kind] : 0;
}

//  --------------------------------------------------------------------------
//  Judging again

static bool
s_blocking (sl_str_t action)
{
    return sl_str_eq (action, "block") || sl_str_eq (action, "drop") || sl_str_eq (action, "terminate");
}

static bool
s_same_text (const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp (a, b));
}

//  The rule of policy whose id is id, or -1.
static int
s_rule_index (sl_policy_t *policy, sl_str_t id)
{
    int n = sl_policy_rule_count (policy);
    for (int i = 0; id.ptr && i < n; i++)
        if (sl_str_eq (id, sl_policy_rule_id (policy, i)))
            return i;
    return -1;
}

//  Would the recorded answer be the answer to the same question? The
//  recorded verdict came from a rule of the same id, asking the same judge
//  the same way, and its check ran.
static bool
s_reusable (sl_backtest_t *self, int rule, const sl_backtest_call_t *rec)
{
    const char *id = sl_policy_rule_id (self->policy, rule);
    if (!rec->recorded_policy || !sl_str_eq (rec->rule, id) || !sl_str_eq (rec->check, "ran"))
        return false;
    int old = s_rule_index (rec->recorded_policy, rec->rule);
    const sl_llm_spec_t *a = sl_policy_llm_spec (self->policy, rule);
    const sl_llm_spec_t *b = old >= 0 ? sl_policy_llm_spec (rec->recorded_policy, old) : NULL;
    return a && b && a->kind == b->kind && a->dialect == b->dialect && s_same_text (a->url, b->url)
           && s_same_text (a->model, b->model) && s_same_text (a->prompt, b->prompt)
           && s_same_text (a->system, b->system);
}

//  Conclude a pending LLM judge or decision service from the recorded
//  answer; false when there is none to reuse.
static bool
s_reuse (sl_backtest_t *self, const sl_backtest_call_t *rec, sl_decision_t *d)
{
    int rule = d->llm_rule;
    if (!s_reusable (self, rule, rec))
        return false;
    const sl_llm_spec_t *spec = sl_policy_llm_spec (self->policy, rule);
    sl_llm_result_t result = { .check = SL_CHK_RAN, .probability = NAN };
    if (spec->kind == SL_LLM_DECIDE) {
        //  A rewrite's arguments are not recorded with the verdict: ask again.
        if (sl_str_eq (rec->action, "rewrite"))
            return false;
        result.allow = sl_str_eq (rec->action, "allow");
    }
    else {
        if (isnan (rec->probability))
            return false;
        result.probability = rec->probability;
    }
    sl_policy_conclude (self->policy, &rec->call, &result, d);
    sl_llm_result_clear (&result);
    return true;
}

static bool
s_was_asked (sl_str_t check)
{
    return sl_str_eq (check, "approved") || sl_str_eq (check, "denied") || sl_str_eq (check, "approved_earlier");
}

//  The category of a resolved decision against the recorded one.
static sl_backtest_kind_t
s_compare (const sl_backtest_call_t *rec, const sl_decision_t *d)
{
    bool was_blocked = s_blocking (rec->action);
    bool is_blocked = d->action != SL_ACT_ALLOW && d->action != SL_ACT_REWRITE;
    if (!was_blocked && is_blocked)
        return SL_BACKTEST_NEWLY_BLOCKED;
    if (was_blocked && !is_blocked)
        return SL_BACKTEST_NEWLY_ALLOWED;
    if (is_blocked)
        return SL_BACKTEST_SAME;
    bool was_rewrite = sl_str_eq (rec->action, "rewrite");
    bool is_rewrite = d->action == SL_ACT_REWRITE;
    if (was_rewrite != is_rewrite)
        return SL_BACKTEST_REWRITTEN;
    if (is_rewrite && !sl_str_eq (rec->rule, d->rule ? d->rule : ""))
        return SL_BACKTEST_REWRITTEN;
    return SL_BACKTEST_SAME;
}

//  --------------------------------------------------------------------------
//  Counting

static void
s_count (zhashx_t *table, const char *key, sl_backtest_kind_t kind)
{
    s_row_t *row = zhashx_lookup (table, key);
    if (!row && zhashx_size (table) >= SL_BACKTEST_MAX_KEYS) {
        key = S_OTHER;
        row = zhashx_lookup (table, key);
    }
    if (!row) {
        row = sl_xcalloc (1, sizeof *row);
        zhashx_insert (table, key, row);
    }
    row->n [kind]++;
}

static void
s_put_verdict (sl_buf_t *out, const char *name, sl_str_t action, sl_str_t rule)
{
    sl_buf_printf (out, "\"%s\":{\"action\":", name);
    sl_json_put_sl (out, action);
    sl_buf_puts (out, ",\"rule\":");
    if (rule.ptr && rule.len)
        sl_json_put_sl (out, rule);
    else
        sl_buf_puts (out, "null");
    sl_buf_putc (out, '}');
}

static void
s_keep (sl_backtest_t *self, sl_backtest_kind_t kind, const sl_backtest_call_t *rec, const char *action,
        const char *rule)
{
    if (self->kept_count [kind] >= self->examples)
        return;
    sl_buf_t *out = &self->kept [kind];
    if (self->kept_count [kind]++)
        sl_buf_putc (out, ',');
    sl_buf_printf (out, "{\"kind\":\"%s\",\"sid\":", s_kind_names [kind]);
    sl_json_put_sl (out, rec->sid);
    sl_buf_printf (out, ",\"at\":%lld,\"tool\":", (long long) rec->at);
    sl_json_put_sl (out, rec->call.name);
    sl_buf_puts (out, ",\"team\":");
    if (rec->call.team.ptr)
        sl_json_put_sl (out, rec->call.team);
    else
        sl_buf_puts (out, "null");
    sl_buf_putc (out, ',');
    s_put_verdict (out, "recorded", rec->action, rec->rule);
    sl_buf_putc (out, ',');
    s_put_verdict (out, "now", sl_str (action), sl_str (rule));
    sl_buf_putc (out, '}');
}

sl_backtest_kind_t
sl_backtest_add (sl_backtest_t *self, const sl_backtest_call_t *rec)
{
    sl_decision_t d;
    sl_policy_decide (self->policy, &rec->call, &d);
    sl_backtest_kind_t kind;
    const char *action;
    if (d.action == SL_ACT_NONE && d.llm_rule >= 0 && sl_policy_ask_spec (self->policy, d.llm_rule)) {
        kind = s_was_asked (rec->check) && sl_str_eq (rec->rule, d.rule) ? SL_BACKTEST_SAME : SL_BACKTEST_ASKED;
        action = "ask";
    }
    else if (d.action == SL_ACT_NONE && d.llm_rule >= 0 && !s_reuse (self, rec, &d)) {
        kind = SL_BACKTEST_NEEDS_JUDGE;
        action = "needs the judge";
    }
    else {
        kind = s_compare (rec, &d);
        action = sl_action_name (d.action);
    }
    const char *rule = d.rule ? d.rule : S_DEFAULT_RULE;
    self->calls++;
    self->totals [kind]++;
    s_count (self->by_rule, rule, kind);
    char *team = rec->call.team.ptr && rec->call.team.len ? strndup (rec->call.team.ptr, rec->call.team.len)
                                                            : sl_xstrdup (S_NONE);
    char *tool = strndup (rec->call.name.ptr ? rec->call.name.ptr : "", rec->call.name.len);
    s_count (self->by_team, team, kind);
    s_count (self->by_tool, tool, kind);
    free (team);
    free (tool);
    if (kind != SL_BACKTEST_SAME)
        s_keep (self, kind, rec, action, d.rule);
    sl_decision_clear (&d);
    return kind;
}

//  --------------------------------------------------------------------------
//  Output

static int
s_cmp_keys (const void *a, const void *b)
{
    return strcmp (*(const char *const *) a, *(const char *const *) b);
}

//  The table's keys, sorted (caller frees the array, not the keys).
static const char **
s_sorted_keys (zhashx_t *table, size_t *count)
{
    zlistx_t *keys = zhashx_keys (table);
    *count = zlistx_size (keys);
    const char **out = sl_xcalloc (*count + 1, sizeof *out);
    size_t i = 0;
    for (const char *k = zlistx_first (keys); k && i < *count; k = zlistx_next (keys))
        out [i++] = k;
    qsort (out, *count, sizeof *out, s_cmp_keys);
    //  The keys are owned by the list: copy them before it goes.
    for (i = 0; i < *count; i++)
        out [i] = sl_xstrdup (out [i]);
    zlistx_destroy (&keys);
    return out;
}

static void
s_free_keys (const char **keys, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free ((char *) keys [i]);
    free (keys);
}

static void
s_json_table (sl_buf_t *out, const char *name, zhashx_t *table)
{
    size_t count = 0;
    const char **keys = s_sorted_keys (table, &count);
    sl_buf_printf (out, ",\"%s\":{", name);
    bool first_key = true;
    for (size_t i = 0; i < count; i++) {
        const s_row_t *row = zhashx_lookup (table, keys [i]);
        int64_t changed = 0;
        for (int k = 1; k < SL_BACKTEST_KINDS; k++)
            changed += row->n [k];
        if (!changed)
            continue;                   //  only what changes
        if (!first_key)
            sl_buf_putc (out, ',');
        first_key = false;
        sl_json_put_str (out, keys [i], strlen (keys [i]));
        sl_buf_putc (out, ':');
        sl_buf_putc (out, '{');
        for (int k = 1; k < SL_BACKTEST_KINDS; k++)
            sl_buf_printf (out, "%s\"%s\":%lld", k > 1 ? "," : "", s_kind_names [k], (long long) row->n [k]);
        sl_buf_putc (out, '}');
    }
    sl_buf_putc (out, '}');
    s_free_keys (keys, count);
}

void
sl_backtest_json (sl_backtest_t *self, sl_buf_t *out)
{
    sl_buf_puts (out, "{\"policy\":");
    const char *name = sl_policy_name (self->policy);
    sl_json_put_str (out, name ? name : "", name ? strlen (name) : 0);
    sl_buf_printf (out, ",\"policy_id\":\"%s\",\"calls\":%lld,\"changed\":{", sl_policy_id (self->policy),
                   (long long) self->calls);
    for (int k = SL_BACKTEST_NEWLY_BLOCKED; k <= SL_BACKTEST_ASKED; k++)
        sl_buf_printf (out, "%s\"%s\":%lld", k > SL_BACKTEST_NEWLY_BLOCKED ? "," : "", s_kind_names [k],
                       (long long) self->totals [k]);
    sl_buf_printf (out, "},\"needs_judge\":%lld,\"unchanged\":%lld",
                   (long long) self->totals [SL_BACKTEST_NEEDS_JUDGE], (long long) self->totals [SL_BACKTEST_SAME]);
    s_json_table (out, "by_rule", self->by_rule);
    s_json_table (out, "by_team", self->by_team);
    s_json_table (out, "by_tool", self->by_tool);
    sl_buf_puts (out, ",\"examples\":[");
    bool first = true;
    for (int k = 1; k < SL_BACKTEST_KINDS; k++) {
        if (!self->kept [k].len)
            continue;
        if (!first)
            sl_buf_putc (out, ',');
        first = false;
        sl_buf_append (out, self->kept [k].data, self->kept [k].len);
    }
    sl_buf_puts (out, "]}\n");
}

static void
s_text_table (sl_buf_t *out, const char *title, zhashx_t *table)
{
    size_t count = 0;
    const char **keys = s_sorted_keys (table, &count);
    sl_buf_printf (out, "\n%-32s", title);
    for (int k = 1; k < SL_BACKTEST_KINDS; k++)
        sl_buf_printf (out, " %14s", s_kind_names [k]);
    sl_buf_putc (out, '\n');
    for (size_t i = 0; i < count; i++) {
        const s_row_t *row = zhashx_lookup (table, keys [i]);
        int64_t changed = 0;
        for (int k = 1; k < SL_BACKTEST_KINDS; k++)
            changed += row->n [k];
        if (!changed)
            continue;
        sl_buf_printf (out, "%-32s", keys [i]);
        for (int k = 1; k < SL_BACKTEST_KINDS; k++)
            sl_buf_printf (out, " %14lld", (long long) row->n [k]);
        sl_buf_putc (out, '\n');
    }
    s_free_keys (keys, count);
}

void
sl_backtest_text (sl_backtest_t *self, sl_buf_t *out)
{
    sl_buf_printf (out, "policy %s (%s): %lld calls judged again\n", sl_policy_name (self->policy),
                   sl_policy_id (self->policy), (long long) self->calls);
    for (int k = 1; k < SL_BACKTEST_KINDS; k++)
        sl_buf_printf (out, "  %-14s %lld\n", s_kind_names [k], (long long) self->totals [k]);
    sl_buf_printf (out, "  %-14s %lld\n", s_kind_names [0], (long long) self->totals [0]);
    if (self->calls == self->totals [SL_BACKTEST_SAME])
        return;
    s_text_table (out, "by rule (now)", self->by_rule);
    s_text_table (out, "by team", self->by_team);
    s_text_table (out, "by tool", self->by_tool);
    sl_buf_puts (out, "\nexamples (JSON):\n");
    for (int k = 1; k < SL_BACKTEST_KINDS; k++)
        if (self->kept [k].len) {
            sl_buf_append (out, self->kept [k].data, self->kept [k].len);
            sl_buf_putc (out, '\n');
        }
}
