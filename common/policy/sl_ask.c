/*  sl_ask.c - rules that ask a person (action: ask): their settings, what
    an approval is bound to, what approvers read, who may decide, and how
    a person's decision (or its absence) becomes the call's decision.

    The policy only describes; holding the call is the judge library's
    (sl_judge.h), keeping the approvals and hearing the decisions its
    service's. A decision that did not come from a person is never a
    pass: a timeout takes on_timeout, which the policy's author chose,
    and anything else (no one to ask, the ask could not start, the judge
    holding it stopped) blocks. The person is another than the caller
    whose call waits (sl_ask_is_caller), unless the rule says allow_self.
*/
#include "common/policy/sl_policy_impl.h"

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

#define S_DEFAULT_MESSAGE "A call to {tool} waits for your approval (rule {rule}, {user}): {arguments}"
#define S_DENIED_NOTICE "sluice blocked a call to the tool \"{tool}\": it was not approved ({reason})."
#define S_TIMEOUT_NOTICE \
    "sluice blocked a call to the tool \"{tool}\": it needed a person's approval, and none came ({reason})."
#define S_TERMINATE_NOTICE \
    "sluice ended this response: a call to the tool \"{tool}\" needed a person's approval ({reason})."
#define S_MESSAGE_ARGS_MAX 2000         //  bytes of arguments quoted in an approver's message
#define S_TOKEN_KEY "jwt"               //  a signed token's key id, alone or before ":<kid>"

void
sl_ask_spec_defaults (sl_ask_spec_t *spec)
{
    memset (spec, 0, sizeof *spec);
    spec->timeout_ms = SL_ASK_DEFAULT_TIMEOUT_MS;
    spec->on_timeout = SL_ACT_BLOCK;
    spec->remember_max_minutes = SL_ASK_DEFAULT_REMEMBER_MINUTES;
}

void
sl_ask_spec_free (sl_ask_spec_t *spec)
{
    for (int i = 0; i < spec->approver_count; i++)
        free (spec->approvers [i]);
    free (spec->approvers);
    free (spec->message);
    memset (spec, 0, sizeof *spec);
}

//  --------------------------------------------------------------------------
//  Reading the ask: mapping

//  An approver as a rule names it: team:NAME, user:NAME, key:ID, console.
static bool
s_approver_valid (const char *name)
{
    if (strcmp (name, "console") == 0)
        return true;
    const char *colon = strchr (name, ':');
    if (!colon || !colon [1])
        return false;
    size_t kind = (size_t) (colon - name);
    return (kind == 4 && strncmp (name, "team", 4) == 0) || (kind == 4 && strncmp (name, "user", 4) == 0)
        || (kind == 3 && strncmp (name, "key", 3) == 0);
}

static int
s_parse_approvers (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_ask_spec_t *spec)
{
    yaml_node_item_t *start = NULL, *top = NULL;
    if (node->type == YAML_SEQUENCE_NODE) {
        start = node->data.sequence.items.start;
        top = node->data.sequence.items.top;
    }
    if (node->type != YAML_SEQUENCE_NODE && !sl_policy_yaml_scalar (node)) {
        sl_policy_yaml_error (ctx, node, "approvers must be a name or a list of names");
        return -1;
    }
    size_t count = start ? (size_t) (top - start) : 1;
    spec->approvers = sl_xcalloc (count, sizeof (char *));
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = start ? sl_policy_yaml_node (ctx, start [i]) : node;
        const char *name = item ? sl_policy_yaml_scalar (item) : NULL;
        if (!name || !s_approver_valid (name)) {
            sl_policy_yaml_error (ctx, item ? item : node, "an approver is team:NAME, user:NAME, key:ID or console");
            return -1;
        }
        spec->approvers [spec->approver_count++] = sl_xstrdup (name);
    }
    return 0;
}

//  One field of an ask: mapping.
static int
s_ask_field (sl_policy_yaml_t *ctx, yaml_node_t *k, yaml_node_t *v, const char *key, void *arg)
{
    sl_ask_spec_t *spec = arg;
    long n;
    int rc;
    if (strcmp (key, "timeout_ms") == 0) {
        rc = sl_policy_yaml_int (ctx, v, "timeout_ms", 1, SL_ASK_MAX_TIMEOUT_MS, &n);
        spec->timeout_ms = (int) n;
        return rc;
    }
    if (strcmp (key, "on_timeout") == 0) {
        const char *name = sl_policy_yaml_scalar (v);
        int action = name ? sl_action_parse (name) : 0;
        if (action != SL_ACT_BLOCK && action != SL_ACT_ALLOW && action != SL_ACT_TERMINATE) {
            sl_policy_yaml_error (ctx, v, "on_timeout must be block, allow or terminate");
            return -1;
        }
        spec->on_timeout = (sl_action_t) action;
        return 0;
    }
    if (strcmp (key, "approvers") == 0) {
        if (spec->approvers) {
            sl_policy_yaml_error (ctx, k, "approvers given twice");
            return -1;
        }
        return s_parse_approvers (ctx, v, spec);
    }
    if (strcmp (key, "message") == 0)
        return sl_policy_yaml_string (ctx, v, "message", &spec->message);
    if (strcmp (key, "remember_max_minutes") == 0) {
        rc = sl_policy_yaml_int (ctx, v, "remember_max_minutes", 0, SL_ASK_MAX_REMEMBER_MINUTES, &n);
        spec->remember_max_minutes = (int) n;
        return rc;
    }
    if (strcmp (key, "allow_self") == 0)
        return sl_policy_yaml_bool (ctx, v, "allow_self", &spec->allow_self);
    sl_policy_yaml_error (ctx, k, "unknown ask field '%s' (expected timeout_ms, on_timeout, approvers, "
                          "message, remember_max_minutes, allow_self)", key);
    return -1;
}

int
sl_policy_fields_ask (sl_policy_yaml_t *ctx, yaml_node_t *node, sl_ask_spec_t *spec)
{
    return sl_policy_yaml_mapping (ctx, node, "ask must be a mapping", s_ask_field, spec);
}

//  --------------------------------------------------------------------------
//  What an approval is bound to, and what approvers read

//  The arguments in canonical JSON (keys sorted, compact) into out, or
//  as they are when they are not JSON.
static void
s_canonical (sl_str_t arguments, sl_buf_t *out)
{
    json_t *args = arguments.ptr ? json_loadb (arguments.ptr, arguments.len, JSON_DECODE_ANY, NULL) : NULL;
    char *text = args ? json_dumps (args, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
    if (text)
        sl_buf_puts (out, text);
    else
        sl_buf_append_str (out, arguments);
    free (text);
    json_decref (args);
}

void
sl_ask_digest (sl_str_t tool, sl_str_t arguments, const char *policy_id, char *out)
{
    sl_buf_t text = { 0 };
    sl_buf_append_str (&text, tool);
    sl_buf_putc (&text, 0);
    s_canonical (arguments, &text);
    sl_buf_putc (&text, 0);
    sl_buf_puts (&text, policy_id ? policy_id : "");
    uint8_t hash [crypto_hash_sha256_BYTES];
    crypto_hash_sha256 (hash, (const uint8_t *) text.data, text.len);
    sodium_bin2hex (out, SL_ASK_DIGEST_SIZE, hash, sizeof hash);
    sl_buf_free (&text);
}

void
sl_ask_message (const sl_ask_spec_t *spec, const char *rule, const sl_call_t *call,
                sl_str_t team, sl_str_t user, sl_buf_t *out)
{
    const char *tmpl = spec && spec->message ? spec->message : S_DEFAULT_MESSAGE;
    for (const char *p = tmpl; *p; p++) {
        if (strncmp (p, "{tool}", 6) == 0) {
            sl_buf_append_str (out, call->name);
            p += 5;
        }
        else
        if (strncmp (p, "{arguments}", 11) == 0) {
            sl_str_t a = call->arguments;
            sl_buf_append (out, a.ptr, a.len > S_MESSAGE_ARGS_MAX ? S_MESSAGE_ARGS_MAX : a.len);
            if (a.len > S_MESSAGE_ARGS_MAX)
                sl_buf_puts (out, "...");
            p += 10;
        }
        else
        if (strncmp (p, "{rule}", 6) == 0) {
            sl_buf_puts (out, rule ? rule : "");
            p += 5;
        }
        else
        if (strncmp (p, "{team}", 6) == 0) {
            sl_buf_append_str (out, team.ptr ? team : SL_STR_LIT ("no team"));
            p += 5;
        }
        else
        if (strncmp (p, "{user}", 6) == 0) {
            sl_buf_append_str (out, user.ptr ? user : team.ptr ? team : SL_STR_LIT ("anonymous"));
            p += 5;
        }
        else
        if (strncmp (p, "{model}", 7) == 0) {
            sl_buf_append_str (out, call->model);
            p += 6;
        }
        else
            sl_buf_putc (out, *p);
    }
}

//  --------------------------------------------------------------------------
//  Who may decide

//  Does an approver entry (kind:NAME) name value?
static bool
s_names (const char *entry, const char *kind, sl_str_t value)
{
    size_t n = strlen (kind);
    return value.ptr && strncmp (entry, kind, n) == 0 && entry [n] == ':' && sl_str_eq (value, entry + n + 1);
}

bool
sl_ask_may_decide (const sl_ask_spec_t *spec, const sl_ask_by_t *by)
{
    if (!spec || !by)
        return false;
    if (spec->approver_count == 0)
        return by->approver || by->console || by->loopback;
    for (int i = 0; i < spec->approver_count; i++) {
        const char *a = spec->approvers [i];
        if ((strcmp (a, "console") == 0 && by->console)
        ||  s_names (a, "team", by->team) || s_names (a, "user", by->user) || s_names (a, "key", by->key_id))
            return true;
    }
    return false;
}

//  A key id every user of a signing key shares (sl_identity.h): "jwt",
//  "jwt:<kid>".
static bool
s_token_key (sl_str_t key_id)
{
    return sl_str_eq (key_id, S_TOKEN_KEY) || sl_str_starts (key_id, S_TOKEN_KEY ":");
}

bool
sl_ask_is_caller (sl_str_t key_id, sl_str_t user, const sl_ask_by_t *by)
{
    if (!by)
        return false;
    bool users = user.len && by->user.len;
    if (users && sl_str_eq_str (user, by->user))
        return true;
    if (!key_id.len || !sl_str_eq_str (key_id, by->key_id))
        return false;
    //  The same key: one caller, unless it is a signing key whose tokens
    //  name two users (a token that names none cannot be told apart).
    return !(users && s_token_key (key_id));
}

//  --------------------------------------------------------------------------
//  A person's decision, or its absence

void
sl_ask_conclude (const sl_policy_rule_t *r, const sl_call_t *call, const sl_llm_result_t *result,
                 sl_decision_t *d)
{
    const sl_ask_spec_t *spec = r->ask;
    const char *who = result->approver ? result->approver : "?";
    const char *comment = result->explanation && *result->explanation ? result->explanation : NULL;
    sl_buf_t reason = { 0 };
    const char *notice = S_DENIED_NOTICE;
    d->rule = r->id;
    d->llm_rule = -1;
    d->check = result->check;
    switch (result->check) {
        case SL_CHK_APPROVED:
            d->action = SL_ACT_ALLOW;
            sl_buf_printf (&reason, "approved by %s", who);
            break;
        case SL_CHK_APPROVED_EARLIER:
            d->action = SL_ACT_ALLOW;
            sl_buf_printf (&reason, "approved earlier by %s (approval %s)", who,
                           result->approval ? result->approval : "?");
            break;
        case SL_CHK_DENIED:
            d->action = SL_ACT_BLOCK;
            sl_buf_printf (&reason, "denied by %s", who);
            break;
        case SL_CHK_TIMEOUT:
            d->action = spec->on_timeout;
            notice = S_TIMEOUT_NOTICE;
            sl_buf_printf (&reason, "%s; on_timeout: %s",
                           result->error ? result->error : "no decision in time", sl_action_name (d->action));
            break;
        default:
            //  Nobody could be asked, or the ask ended without a person:
            //  never a pass, whatever on_timeout says.
            d->check = SL_CHK_ERROR;
            d->action = spec->on_timeout == SL_ACT_TERMINATE ? SL_ACT_TERMINATE : SL_ACT_BLOCK;
            notice = S_TIMEOUT_NOTICE;
            sl_buf_printf (&reason, "not decided: %s", result->error ? result->error : "the ask failed");
            break;
    }
    if (comment && (result->check == SL_CHK_APPROVED || result->check == SL_CHK_DENIED))
        sl_buf_printf (&reason, ": %s", comment);
    d->reason = sl_xstrdup (sl_buf_cstr (&reason));
    if (result->approver)
        d->approver = sl_xstrdup (result->approver);
    if (d->action == SL_ACT_BLOCK || d->action == SL_ACT_TERMINATE) {
        const char *tmpl = r->message ? r->message : d->action == SL_ACT_TERMINATE ? S_TERMINATE_NOTICE : notice;
        d->message = sl_policy_render (tmpl, call->name, call->cut, r->id, d->reason);
    }
    sl_buf_free (&reason);
}
