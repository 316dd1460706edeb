/*  sl_approvals.c - the approvals a judge holds (see sl_approvals.h).

    Approvals live in a hash table by id (czmq's zhashx) from the ask to
    SL_APPROVALS_KEEP_MS after they ended; memories in a list (a handful at
    a time, looked through once per ask). Everything an approval says is
    copied in when it is added: the judge's policy may be reloaded, the
    stream may go, the approval stays readable.
*/
#include "services/judge/sl_approvals.h"

#include <czmq.h>
#include <math.h>
#include <stdarg.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"

#define S_WHY_SIZE 256

struct _sl_approval_t {
    char id [SL_APPROVAL_ID_SIZE];
    uint8_t raw_id [SL_SID_SIZE];
    char stream [SL_SID_HEX_SIZE];
    uint64_t ticket;
    sl_approval_state_t state;
    int32_t index;
    char *rule, *tool, *arguments, *message, *digest, *policy, *policy_name;
    char *key_id, *team, *user, *model, *last_user;
    sl_ask_spec_t spec;                 //  approvers, on_timeout, remember_max_minutes (copied)
    int64_t created_ms, expires_ms, ended_ms;
    const char *judge;                  //  the registry's instance name (borrowed)
    uint64_t incarnation;
    char *approver;                     //  who decided
    char *comment;                      //  their comment, or why it ended otherwise
    int remember_minutes;
    bool self_approved;                 //  decided by its own caller (the rule's allow_self)
};

typedef struct {
    char digest [SL_ASK_DIGEST_SIZE];
    char *key_id, *team, *user;
    char approval [SL_APPROVAL_ID_SIZE];
    char *approver;
    int64_t expires_ms;
} s_grant_t;

struct _sl_approvals_t {
    char *instance;
    uint64_t incarnation;
    zhashx_t *by_id;                    //  id -> sl_approval_t (owned)
    size_t pending;
    s_grant_t *grants;
    size_t grant_count, grant_cap;
    char why [S_WHY_SIZE];
};

static const char *s_state_names [] = {
    "pending", "approved", "denied", "timeout", "cancelled", "failed"
};
_Static_assert (sizeof s_state_names / sizeof s_state_names [0] == SL_APPROVAL_STATE_MAX, "a name for every state");

const char *
sl_approval_state_name (int state)
{
    return state >= 0 && state < SL_APPROVAL_STATE_MAX ? s_state_names [state] : "?";
}

static char *
s_dup (sl_str_t s)
{
    return s.ptr ? sl_xstrndup (s.ptr, s.len) : NULL;
}

static void
s_approval_free (void **item)
{
    sl_approval_t *a = *item;
    if (!a)
        return;
    free (a->rule);
    free (a->tool);
    free (a->arguments);
    free (a->message);
    free (a->digest);
    free (a->policy);
    free (a->policy_name);
    free (a->key_id);
    free (a->team);
    free (a->user);
    free (a->model);
    free (a->last_user);
    free (a->approver);
    free (a->comment);
    sl_ask_spec_free (&a->spec);
    free (a);
    *item = NULL;
}

sl_approvals_t *
sl_approvals_new (const char *instance, uint64_t incarnation)
{
    sl_approvals_t *self = sl_xcalloc (1, sizeof *self);
    self->instance = sl_xstrdup (instance ? instance : "judge");
    self->incarnation = incarnation;
    self->by_id = zhashx_new ();
    zhashx_set_destructor (self->by_id, s_approval_free);
    return self;
}

static void
s_grant_clear (s_grant_t *g)
{
    free (g->key_id);
    free (g->team);
    free (g->user);
    free (g->approver);
}

void
sl_approvals_destroy (sl_approvals_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_approvals_t *self = *self_p;
    zhashx_destroy (&self->by_id);
    for (size_t i = 0; i < self->grant_count; i++)
        s_grant_clear (&self->grants [i]);
    free (self->grants);
    free (self->instance);
    free (self);
    *self_p = NULL;
}

uint64_t sl_approval_ticket (const sl_approval_t *a) { return a->ticket; }
sl_approval_state_t sl_approval_state (const sl_approval_t *a) { return a->state; }
const char *sl_approval_id (const sl_approval_t *a) { return a->id; }
int sl_approval_remember_minutes (const sl_approval_t *a) { return a->remember_minutes; }
bool sl_approval_self_approved (const sl_approval_t *a) { return a->self_approved; }
size_t sl_approvals_pending (sl_approvals_t *self) { return self->pending; }
size_t sl_approvals_grants (sl_approvals_t *self) { return self->grant_count; }

//  --------------------------------------------------------------------------
//  Memories

static bool
s_same (const char *held, sl_str_t given)
{
    return held ? sl_str_eq (given, held) : !given.ptr;
}

static const s_grant_t *
s_grant_find (sl_approvals_t *self, const char *digest, sl_str_t key_id, sl_str_t team, sl_str_t user,
              int64_t now_ms)
{
    for (size_t i = 0; i < self->grant_count; i++) {
        const s_grant_t *g = &self->grants [i];
        if (g->expires_ms > now_ms && strcmp (g->digest, digest) == 0
        &&  s_same (g->key_id, key_id) && s_same (g->team, team) && s_same (g->user, user))
            return g;
    }
    return NULL;
}

void
sl_approvals_grant (sl_approvals_t *self, const char *digest, sl_str_t key_id, sl_str_t team,
                    sl_str_t user, const char *approval, const char *approver, int64_t expires_ms)
{
    if (!digest || strlen (digest) != SL_ASK_DIGEST_SIZE - 1)
        return;
    if (self->grant_count == self->grant_cap) {
        self->grant_cap = self->grant_cap ? self->grant_cap * 2 : 8;
        self->grants = sl_xrealloc (self->grants, self->grant_cap * sizeof (s_grant_t));
    }
    s_grant_t *g = &self->grants [self->grant_count++];
    memset (g, 0, sizeof *g);
    snprintf (g->digest, sizeof g->digest, "%s", digest);
    g->key_id = s_dup (key_id);
    g->team = s_dup (team);
    g->user = s_dup (user);
    snprintf (g->approval, sizeof g->approval, "%s", approval ? approval : "");
    g->approver = sl_xstrdup (approver ? approver : "?");
    g->expires_ms = expires_ms;
}

//  --------------------------------------------------------------------------
//  Asking

int
sl_approvals_add (sl_approvals_t *self, const sl_judge_ask_t *ask, int64_t now_ms,
                  const sl_approval_t **out, sl_llm_result_t *earlier)
{
    const s_grant_t *g = s_grant_find (self, ask->digest, ask->key_id, ask->team, ask->user, now_ms);
    if (g) {
        memset (earlier, 0, sizeof *earlier);
        earlier->check = SL_CHK_APPROVED_EARLIER;
        earlier->probability = NAN;
        earlier->approver = sl_xstrdup (g->approver);
        earlier->approval = sl_xstrdup (g->approval);
        return 1;
    }
    sl_approval_t *a = sl_xcalloc (1, sizeof *a);
    sl_sid_new (a->raw_id);
    sl_sid_hex (a->raw_id, a->id);
    sl_sid_hex (ask->sid, a->stream);
    a->ticket = ask->ticket;
    a->state = SL_APPROVAL_PENDING;
    a->index = ask->index;
    a->rule = sl_xstrdup (ask->rule ? ask->rule : "");
    a->tool = s_dup (ask->tool);
    a->arguments = s_dup (ask->arguments);
    a->message = s_dup (ask->message);
    a->digest = sl_xstrdup (ask->digest ? ask->digest : "");
    a->policy = sl_xstrdup (ask->policy ? ask->policy : "");
    a->policy_name = s_dup (ask->policy_name);
    a->key_id = s_dup (ask->key_id);
    a->team = s_dup (ask->team);
    a->user = s_dup (ask->user);
    a->model = s_dup (ask->model);
    a->last_user = s_dup (ask->last_user);
    sl_ask_spec_defaults (&a->spec);
    if (ask->person) {
        a->spec.timeout_ms = ask->person->timeout_ms;
        a->spec.on_timeout = ask->person->on_timeout;
        a->spec.remember_max_minutes = ask->person->remember_max_minutes;
        a->spec.allow_self = ask->person->allow_self;
        if (ask->person->approver_count) {
            a->spec.approvers = sl_xcalloc ((size_t) ask->person->approver_count, sizeof (char *));
            for (int i = 0; i < ask->person->approver_count; i++)
                a->spec.approvers [i] = sl_xstrdup (ask->person->approvers [i]);
            a->spec.approver_count = ask->person->approver_count;
        }
    }
    a->judge = self->instance;
    a->incarnation = self->incarnation;
    a->created_ms = now_ms;
    a->expires_ms = now_ms + a->spec.timeout_ms;
    zhashx_insert (self->by_id, a->id, a);
    self->pending++;
    *out = a;
    return 0;
}

//  End a pending approval.
static void
s_end (sl_approvals_t *self, sl_approval_t *a, sl_approval_state_t state, int64_t now_ms, const char *comment)
{
    a->state = state;
    a->ended_ms = now_ms;
    free (a->comment);
    a->comment = comment && *comment ? sl_xstrdup (comment) : NULL;
    self->pending--;
}

static const char *
s_why (sl_approvals_t *self, const char *format, ...) __attribute__ ((format (printf, 2, 3)));

//  Does by ask about its own call?
static bool
s_own_call (const sl_approval_t *a, const sl_ask_by_t *by)
{
    return sl_ask_is_caller (sl_str (a->key_id), sl_str (a->user), by);
}

//  May by decide a: the rule admits them, and they are not the caller
//  whose call waits unless the rule allows that.
static bool
s_may_decide (const sl_approval_t *a, const sl_ask_by_t *by)
{
    return sl_ask_may_decide (&a->spec, by) && (a->spec.allow_self || !s_own_call (a, by));
}

static const char *
s_why (sl_approvals_t *self, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    vsnprintf (self->why, sizeof self->why, format, args);
    va_end (args);
    return self->why;
}

int
sl_approvals_decide (sl_approvals_t *self, const char *id, const sl_approval_decision_t *d,
                     int64_t now_ms, const sl_approval_t **out, const char **why)
{
    *out = NULL;
    sl_approval_t *a = id ? zhashx_lookup (self->by_id, id) : NULL;
    if (!a) {
        *why = "no such approval here";
        return 404;
    }
    *out = a;
    if (!sl_ask_may_decide (&a->spec, &d->by)) {
        *why = "you may not decide this approval: its rule names who may";
        return 403;
    }
    bool own = s_own_call (a, &d->by);
    if (own && !a->spec.allow_self) {
        *why = "you may not decide this approval: it holds your own call, and another person must decide "
               "it (the rule's ask: allow_self lets a call's caller decide it)";
        return 403;
    }
    if (a->state == SL_APPROVAL_APPROVED || a->state == SL_APPROVAL_DENIED) {
        *why = s_why (self, "decided already: %s by %s", sl_approval_state_name (a->state),
                      a->approver ? a->approver : "?");
        return 409;
    }
    if (a->state != SL_APPROVAL_PENDING || now_ms >= a->expires_ms) {
        *why = a->state == SL_APPROVAL_PENDING || a->state == SL_APPROVAL_TIMEOUT
             ? "expired: nobody decided in time, and on_timeout applied"
             : s_why (self, "over: %s%s%s", sl_approval_state_name (a->state), a->comment ? ": " : "",
                      a->comment ? a->comment : "");
        return 410;
    }
    if (d->digest && strcmp (d->digest, a->digest) != 0) {
        *why = "another call: the digest does not match the call this approval holds";
        return 409;
    }
    if (d->policy && strcmp (d->policy, a->policy) != 0) {
        *why = s_why (self, "stale: the call runs under policy %s, not %s", a->policy, d->policy);
        return 409;
    }
    if (d->remember_minutes < 0 || d->remember_minutes > a->spec.remember_max_minutes) {
        *why = s_why (self, "remember_minutes must be from 0 to %d for this rule", a->spec.remember_max_minutes);
        return 400;
    }
    s_end (self, a, d->approve ? SL_APPROVAL_APPROVED : SL_APPROVAL_DENIED, now_ms, d->comment);
    a->approver = sl_xstrdup (d->approver ? d->approver : "?");
    a->self_approved = own;
    if (d->approve && d->remember_minutes > 0) {
        a->remember_minutes = d->remember_minutes;
        sl_approvals_grant (self, a->digest, sl_str (a->key_id), sl_str (a->team), sl_str (a->user), a->id,
                            a->approver, now_ms + (int64_t) d->remember_minutes * 60000);
    }
    *why = "";
    return 200;
}

void
sl_approvals_outcome (const sl_approval_t *a, sl_llm_result_t *out)
{
    memset (out, 0, sizeof *out);
    out->probability = NAN;
    out->approval = sl_xstrdup (a->id);
    switch (a->state) {
        case SL_APPROVAL_APPROVED:
        case SL_APPROVAL_DENIED:
            out->check = a->state == SL_APPROVAL_APPROVED ? SL_CHK_APPROVED : SL_CHK_DENIED;
            out->approver = sl_xstrdup (a->approver ? a->approver : "?");
            out->explanation = a->comment ? sl_xstrdup (a->comment) : NULL;
            break;
        case SL_APPROVAL_TIMEOUT:
            out->check = SL_CHK_TIMEOUT;
            out->error = sl_xstrdup (a->comment ? a->comment : "nobody decided in time");
            break;
        case SL_APPROVAL_FAILED:
            //  The process holding it leaves: not time running out, so
            //  not on_timeout's to decide. An error blocks (sl_ask_conclude).
            out->check = SL_CHK_ERROR;
            out->error = sl_xstrdup (a->comment ? a->comment : "the judge holding it stopped");
            break;
        default:
            out->check = SL_CHK_ERROR;
            out->error = sl_xstrdup (a->comment ? a->comment : "the approval was cancelled");
            break;
    }
}

//  --------------------------------------------------------------------------
//  Ending without a decision

size_t
sl_approvals_expire (sl_approvals_t *self, int64_t now_ms, sl_approvals_each_fn *fn, void *arg)
{
    size_t timed_out = 0;
    zlistx_t *gone = zlistx_new ();
    for (sl_approval_t *a = zhashx_first (self->by_id); a; a = zhashx_next (self->by_id)) {
        if (a->state == SL_APPROVAL_PENDING && now_ms >= a->expires_ms) {
            char why [96];
            snprintf (why, sizeof why, "nobody decided within %d ms", a->spec.timeout_ms);
            s_end (self, a, SL_APPROVAL_TIMEOUT, now_ms, why);
            if (fn)
                fn (arg, a);
            timed_out++;
        }
        else
        if (a->state != SL_APPROVAL_PENDING && now_ms - a->ended_ms >= SL_APPROVALS_KEEP_MS)
            zlistx_add_end (gone, a->id);
    }
    for (const char *id = zlistx_first (gone); id; id = zlistx_next (gone))
        zhashx_delete (self->by_id, id);
    zlistx_destroy (&gone);
    size_t kept = 0;
    for (size_t i = 0; i < self->grant_count; i++) {
        if (self->grants [i].expires_ms > now_ms)
            self->grants [kept++] = self->grants [i];
        else
            s_grant_clear (&self->grants [i]);
    }
    self->grant_count = kept;
    return timed_out;
}

//  End every pending approval a test picks, with a state and why.
static size_t
s_end_where (sl_approvals_t *self, bool (*pick) (const sl_approval_t *, const void *), const void *what,
             sl_approval_state_t state, int64_t now_ms, const char *why, sl_approvals_each_fn *fn, void *arg)
{
    size_t ended = 0;
    for (sl_approval_t *a = zhashx_first (self->by_id); a; a = zhashx_next (self->by_id))
        if (a->state == SL_APPROVAL_PENDING && pick (a, what)) {
            s_end (self, a, state, now_ms, why);
            if (fn)
                fn (arg, a);
            ended++;
        }
    return ended;
}

static bool
s_of_ticket (const sl_approval_t *a, const void *ticket)
{
    return a->ticket == *(const uint64_t *) ticket;
}

static bool
s_of_stream (const sl_approval_t *a, const void *sid)
{
    return strcmp (a->stream, sid) == 0;
}

static bool
s_any (const sl_approval_t *a, const void *unused)
{
    (void) a;
    (void) unused;
    return true;
}

void
sl_approvals_cancel_ticket (sl_approvals_t *self, uint64_t ticket, int64_t now_ms,
                            sl_approvals_each_fn *fn, void *arg)
{
    s_end_where (self, s_of_ticket, &ticket, SL_APPROVAL_CANCELLED, now_ms,
                 "the stream ended before a decision", fn, arg);
}

size_t
sl_approvals_cancel_stream (sl_approvals_t *self, const char *sid, int64_t now_ms,
                            sl_approvals_each_fn *fn, void *arg)
{
    return sid ? s_end_where (self, s_of_stream, sid, SL_APPROVAL_CANCELLED, now_ms,
                              "the client went away", fn, arg) : 0;
}

size_t
sl_approvals_fail_all (sl_approvals_t *self, int64_t now_ms, const char *why,
                       sl_approvals_each_fn *fn, void *arg)
{
    return s_end_where (self, s_any, NULL, SL_APPROVAL_FAILED, now_ms, why, fn, arg);
}

//  --------------------------------------------------------------------------
//  What others see

static json_t *
s_json_str (const char *s)
{
    return s ? json_string (s) : json_null ();
}

static json_t *
s_json (const sl_approval_t *a)
{
    json_t *args = a->arguments ? json_loads (a->arguments, JSON_DECODE_ANY, NULL) : NULL;
    if (!args)
        args = s_json_str (a->arguments);
    json_t *approvers = json_array ();
    for (int i = 0; i < a->spec.approver_count; i++)
        json_array_append_new (approvers, json_string (a->spec.approvers [i]));
    json_t *o = json_object ();
    json_object_set_new (o, "id", json_string (a->id));
    json_object_set_new (o, "state", json_string (sl_approval_state_name (a->state)));
    json_object_set_new (o, "stream", json_string (a->stream));
    json_object_set_new (o, "index", json_integer (a->index));
    json_object_set_new (o, "tool", s_json_str (a->tool));
    json_object_set_new (o, "arguments", args);
    json_object_set_new (o, "rule", s_json_str (a->rule));
    json_object_set_new (o, "message", s_json_str (a->message));
    json_object_set_new (o, "digest", s_json_str (a->digest));
    json_object_set_new (o, "policy", s_json_str (a->policy));
    json_object_set_new (o, "policy_name", s_json_str (a->policy_name));
    json_object_set_new (o, "identity", json_pack ("{s:o, s:o, s:o}", "key_id", s_json_str (a->key_id),
                                                   "team", s_json_str (a->team), "user", s_json_str (a->user)));
    json_object_set_new (o, "model", s_json_str (a->model));
    json_object_set_new (o, "last_user", s_json_str (a->last_user));
    json_object_set_new (o, "approvers", approvers);
    json_object_set_new (o, "on_timeout", json_string (sl_action_name (a->spec.on_timeout)));
    json_object_set_new (o, "remember_max_minutes", json_integer (a->spec.remember_max_minutes));
    if (a->spec.allow_self)
        json_object_set_new (o, "allow_self", json_true ());
    json_object_set_new (o, "created_at", json_integer (a->created_ms));
    json_object_set_new (o, "expires_at", json_integer (a->expires_ms));
    json_object_set_new (o, "judge", json_string (a->judge));
    if (a->state != SL_APPROVAL_PENDING) {
        json_object_set_new (o, "decided_at", json_integer (a->ended_ms));
        json_object_set_new (o, "approver", s_json_str (a->approver));
        json_object_set_new (o, "comment", s_json_str (a->comment));
        json_object_set_new (o, "remember_minutes", json_integer (a->remember_minutes));
        if (a->self_approved)
            json_object_set_new (o, "self_approved", json_true ());
        if (a->remember_minutes)
            json_object_set_new (o, "remember_until",
                                 json_integer (a->ended_ms + (int64_t) a->remember_minutes * 60000));
    }
    return o;
}

static void
s_dump (json_t *o, sl_buf_t *out)
{
    char *text = json_dumps (o, JSON_COMPACT);
    sl_buf_puts (out, text ? text : "null");
    free (text);
    json_decref (o);
}

void
sl_approvals_json (const sl_approval_t *a, sl_buf_t *out)
{
    s_dump (s_json (a), out);
}

void
sl_approvals_list (sl_approvals_t *self, const sl_ask_by_t *by, sl_buf_t *out)
{
    json_t *list = json_array ();
    for (sl_approval_t *a = zhashx_first (self->by_id); a; a = zhashx_next (self->by_id))
        if (a->state == SL_APPROVAL_PENDING && s_may_decide (a, by))
            json_array_append_new (list, s_json (a));
    s_dump (json_pack ("{s:o}", "approvals", list), out);
}

void
sl_approvals_message (const sl_approval_t *a, sl_msg_t *msg, sl_buf_t *scratch)
{
    sl_msg_init (msg, SL_MSG_APPROVAL);
    memcpy (msg->sid, a->raw_id, SL_SID_SIZE);
    msg->code = sl_str (sl_approval_state_name (a->state));
    msg->stream = sl_str (a->stream);
    msg->index = a->index;
    msg->name = sl_str (a->tool);
    msg->text = sl_str (a->arguments);
    msg->rule = sl_str (a->rule);
    msg->message = sl_str (a->message);
    msg->digest = sl_str (a->digest);
    msg->policy = sl_str (a->policy);
    msg->policy_name = sl_str (a->policy_name);
    msg->key_id = sl_str (a->key_id);
    msg->team = sl_str (a->team);
    msg->user = sl_str (a->user);
    msg->model = sl_str (a->model);
    msg->last_user = sl_str (a->last_user);
    msg->ts = a->state == SL_APPROVAL_PENDING ? a->created_ms : a->ended_ms;
    msg->expires = a->expires_ms;
    msg->approver = sl_str (a->approver);
    msg->reason = sl_str (a->comment);
    msg->instance = sl_str (a->judge);
    msg->incarnation = a->incarnation;
    json_t *approvers = json_array ();
    for (int i = 0; i < a->spec.approver_count; i++)
        json_array_append_new (approvers, json_string (a->spec.approvers [i]));
    json_t *details = json_pack ("{s:o, s:s, s:i}", "approvers", approvers, "on_timeout",
                                 sl_action_name (a->spec.on_timeout), "remember_minutes", a->remember_minutes);
    if (a->self_approved)
        json_object_set_new (details, "self_approved", json_true ());
    sl_buf_reset (scratch);
    s_dump (details, scratch);
    msg->body = sl_buf_str (scratch);
}
