/*  sl_admission.c - who may start a stream, now (see sl_admission.h).
*/
#include "services/gateway/sl_admission.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"
#include "common/dialects/sl_providers.h"
#include "common/identity/sl_limits_redis.h"
#include "common/identity/sl_teamlabel.h"
#include "common/service/sl_keywatch.h"
#include "services/gateway/sl_alerthook.h"

#define S_LOG_EVERY_MS 1000             //  a store error is logged at most this often

struct _sl_caller_t {
    sl_keyring_t *keyring;              //  what the identity borrows from (a reference)
    sl_identity_t who;
    char team_label [SL_IDENTITY_TEXT_MAX];
    sl_limits_plan_t *plan;             //  admitted with limits: what finish counts against
    bool waiting;                       //  the store has not answered yet
    bool abandoned;                     //  finished while waiting: freed when the answer comes
    //  While waiting
    sl_admission_t *owner;
    sl_admission_done_fn *done;
    void *done_arg;
};

struct _sl_admission_t {
    sl_service_t *service;
    sl_metrics_t *metrics;
    sl_keywatch_t *keys;
    sl_limits_store_t *store;
    bool remote;                        //  the store is Redis
    const sl_providers_t *routes;
    sl_teamlabels_t *teams;             //  team labels in use (bounded)
    int64_t store_error_logged;         //  ms
    sl_alerthook_t *hook;               //  --alerts-webhook, NULL: none
    sl_alerthook_t *audit;              //  the audit's /api/alerts (beside --keys-url), NULL: none
    zhash_t *ratios;                    //  the budget gauges' values (double), by their labels
};

//  --------------------------------------------------------------------------
//  Labels

static void
s_count (sl_admission_t *self, const char *name, const char *labels, const char *help, uint64_t n)
{
    sl_counter_add (sl_metrics_counter (self->metrics, name, labels, help), n);
}

//  A threshold of a day's tokens or a month's budget was crossed (once per
//  window in all the gateways: sl_limits.h): said and counted.
static void
s_on_alert (void *arg, const sl_limits_plan_t *plan, const sl_limits_alert_t *alert)
{
    sl_admission_t *self = arg;
    const sl_limits_counter_t *c = &plan->counters [alert->counter];
    sl_limits_windows_t w;
    sl_limits_windows (plan->now, &w);
    bool daily = c->kind == SL_LIMIT_TOKENS_PER_DAY;
    sl_log_warn ("limits_alert", "%s reached %d%% of its %s: %lld of %lld (%s %lld)",
                 plan->subjects [c->subject].name, alert->at, sl_limits_kind_name (c->kind),
                 (long long) alert->used, (long long) alert->limit, daily ? "day" : "month",
                 (long long) (daily ? w.day : w.month));
    char labels [96];
    snprintf (labels, sizeof labels, "limit=\"%s\",at=\"%d\"", sl_limits_kind_name (c->kind), alert->at);
    s_count (self, "sluice_limits_alerts_total", labels,
             "Alert thresholds of daily tokens and monthly budgets crossed, by limit and percent", 1);
    sl_alerthook_post (self->hook, plan, alert);
    sl_alerthook_post (self->audit, plan, alert);
}

//  A team's use of a monthly budget, as a fraction: what its gauge reads.
static double
s_read_ratio (void *arg)
{
    return *(double *) arg;
}

//  Usage a stream added: a team's monthly budget's use, in its gauge (the
//  counter Redis or this process holds after it, so every gateway shows
//  the team's whole month as of its own last stream).
static void
s_on_used (void *arg, const sl_limits_plan_t *plan, int counter, int64_t used)
{
    sl_admission_t *self = arg;
    const sl_limits_counter_t *c = &plan->counters [counter];
    const char *name = plan->subjects [c->subject].name;
    if ((c->kind != SL_LIMIT_BUDGET_TOKENS && c->kind != SL_LIMIT_BUDGET_USD) || c->limit <= 0
    ||  strncmp (name, "team:", 5) != 0)
        return;
    char team [SL_TEAMLABEL_TEXT], labels [SL_TEAMLABEL_TEXT + 64];
    sl_teamlabels_get (self->teams, name + 5, strlen (name + 5), team, sizeof team);
    snprintf (labels, sizeof labels, "team=\"%s\",limit=\"%s\"", team,
              c->kind == SL_LIMIT_BUDGET_USD ? "usd" : "tokens");
    double *ratio = zhash_lookup (self->ratios, labels);
    if (!ratio) {
        ratio = sl_xcalloc (1, sizeof *ratio);
        zhash_insert (self->ratios, labels, ratio);
        zhash_freefn (self->ratios, labels, free);
        sl_metrics_gauge_fn (self->metrics, "sluice_limits_budget_used_ratio", labels,
                             "A team's use of its monthly budget (tokens or usd), a fraction: 1 is all of it",
                             s_read_ratio, ratio);
    }
    *ratio = (double) used / (double) c->limit;
}

//  --------------------------------------------------------------------------
//  The object

sl_admission_t *
sl_admission_new (sl_service_t *service, const sl_admission_config_t *config)
{
    sl_keywatch_t *keys = sl_keywatch_new (service, config->keys_path, config->client_keys, config->watch_ms);
    bool no_other_keys = !(config->keys_path && *config->keys_path) && !(config->client_keys && *config->client_keys);
    if (!keys || sl_keywatch_set_url (keys, config->keys_url, config->keys_token,
                                      no_other_keys && config->open_until_issued)) {
        sl_keywatch_destroy (&keys);
        return NULL;
    }
    bool failed;
    sl_alerthook_t *hook = sl_alerthook_new (service, &(sl_alerthook_config_t) { .url = config->alerts_url,
                                                                                  .secret = config->alerts_secret }, &failed);
    sl_alerthook_t *audit = NULL;
    if (!failed && config->keys_url && *config->keys_url) {
        char url [SL_ALERTHOOK_URL_MAX];
        if (!config->keys_token || !*config->keys_token)
            sl_log_warn ("alerts_audit", "limits alerts are not recorded in the audit: it takes them with the "
                                         "keys token (SLUICE_KEYS_TOKEN), and none is set");
        else
        if (sl_alerthook_audit_url (config->keys_url, url)) {
            sl_log_error ("bad_option", "--keys-url: no audit's alerts endpoint beside it (http(s)://host...)");
            failed = true;
        }
        else
            audit = sl_alerthook_new (service, &(sl_alerthook_config_t) {
                                          .url = url, .bearer = config->keys_token, .name = "audit",
                                          .attempts = SL_ALERTHOOK_AUDIT_ATTEMPTS, .conflict_is_done = true },
                                      &failed);
    }
    if (failed) {
        sl_alerthook_destroy (&hook);
        sl_keywatch_destroy (&keys);
        return NULL;
    }
    sl_limits_store_t *store;
    bool remote = config->redis_url && *config->redis_url;
    if (remote) {
        const char *error = NULL;
        int timeout = config->limits_timeout_ms > 0 ? config->limits_timeout_ms : SL_ADMISSION_TIMEOUT_MS;
        store = sl_limits_redis_new (sl_service_loop (service), config->redis_url, timeout, &error);
        if (!store) {
            sl_log_error ("bad_redis_url", "SLUICE_REDIS_URL: %s", error ? error : "?");
            sl_alerthook_destroy (&hook);
            sl_alerthook_destroy (&audit);
            sl_keywatch_destroy (&keys);
            return NULL;
        }
        sl_log_info ("limits_store", "redis, answers waited for %d ms at most", timeout);
    }
    else
        store = sl_limits_memory_new ();
    sl_admission_t *self = sl_xcalloc (1, sizeof *self);
    self->service = service;
    self->metrics = sl_service_metrics (service);
    self->keys = keys;
    self->store = store;
    self->remote = remote;
    self->routes = config->routes;
    self->teams = sl_teamlabels_new (SL_TEAMLABEL_MAX);
    self->hook = hook;
    self->audit = audit;
    self->ratios = zhash_new ();
    sl_limits_store_alerts (store, s_on_alert, self);
    sl_limits_store_used (store, s_on_used, self);
    return self;
}

void
sl_admission_destroy (sl_admission_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_admission_t *self = *self_p;
    sl_limits_store_destroy (&self->store);
    sl_alerthook_destroy (&self->hook);
    sl_alerthook_destroy (&self->audit);
    zhash_destroy (&self->ratios);
    sl_keywatch_destroy (&self->keys);
    sl_teamlabels_destroy (&self->teams);
    free (self);
    *self_p = NULL;
}

bool
sl_admission_checks (sl_admission_t *self)
{
    return sl_keywatch_keyring (self->keys) != NULL;
}

sl_keyring_t *sl_admission_keyring (sl_admission_t *self) { return sl_keywatch_keyring (self->keys); }

//  --------------------------------------------------------------------------
//  Who

static void
s_caller_free (sl_caller_t **caller_p)
{
    sl_caller_t *c = *caller_p;
    if (!c)
        return;
    sl_keyring_unref (&c->keyring);
    free (c->plan);
    free (c);
    *caller_p = NULL;
}

sl_caller_t *
sl_admission_identify (sl_admission_t *self, const char *credential, const char **reason)
{
    sl_keyring_t *ring = sl_keywatch_keyring (self->keys);
    sl_caller_t *c = sl_xcalloc (1, sizeof *c);
    sl_identity_resolve (ring, sl_keywatch_jwtkeys (self->keys), credential, (int64_t) time (NULL), &c->who);
    *reason = sl_identity_reason (&c->who);
    if (c->who.outcome != SL_WHO_OK && c->who.outcome != SL_WHO_OPEN) {
        char labels [80];
        snprintf (labels, sizeof labels, "reason=\"%s\"", *reason);
        s_count (self, "sluice_requests_unauthorized_total", labels,
                 "Requests refused for their credential (401), by reason", 1);
        free (c);
        return NULL;
    }
    c->keyring = ring ? sl_keyring_ref (ring) : NULL;
    sl_teamlabels_get (self->teams, c->who.team, strlen (c->who.team), c->team_label, sizeof c->team_label);
    return c;
}

const sl_identity_t *sl_caller_identity (const sl_caller_t *caller) { return &caller->who; }
const char *sl_caller_team_label (const sl_caller_t *caller) { return caller->team_label; }

//  --------------------------------------------------------------------------
//  May it

static void
s_refuse (sl_admission_answer_t *a, int outcome, int status, const char *code, const char *rule)
{
    a->outcome = outcome;
    a->status = status;
    a->code = code;
    snprintf (a->rule, sizeof a->rule, "%s", rule);
}

//  What the client reads when a limit has no room: whose limit, which,
//  and when to come back; never another caller's counts.
static void
s_limited (const sl_limits_plan_t *plan, const sl_limits_answer_t *la, sl_admission_answer_t *a)
{
    const sl_limits_counter_t *k = &plan->counters [la->refused];
    const char *kind = sl_limits_kind_name (k->kind);
    char rule [48];
    snprintf (rule, sizeof rule, "limit:%s", kind);
    s_refuse (a, SL_ADMIT_LIMITED, 429, "rate_limit_error", rule);
    a->retry_after = la->retry_after > 0 ? la->retry_after : 1;
    const char *subject = plan->subjects [k->subject].name;
    if (k->kind == SL_LIMIT_BUDGET_USD)
        snprintf (a->message, sizeof a->message, "%s has spent its budget of %.2f USD this month; it starts again "
                  "in %lld s", subject, (double) k->limit / SL_LIMITS_USD_MICRO, (long long) a->retry_after);
    else
        snprintf (a->message, sizeof a->message, "%s is at its limit of %lld (%s); retry after %lld s", subject,
                  (long long) k->limit, kind, (long long) a->retry_after);
}

static void
s_answer (sl_caller_t *c, const sl_limits_answer_t *la)
{
    sl_admission_t *self = c->owner;
    sl_admission_answer_t a = { 0 };
    char labels [160];
    if (la->outcome == SL_LIMITS_ADMITTED)
        a.outcome = SL_ADMITTED;
    else
    if (la->outcome == SL_LIMITS_REFUSED && la->refused >= 0 && (size_t) la->refused < c->plan->count) {
        s_limited (c->plan, la, &a);
        snprintf (labels, sizeof labels, "team=\"%s\",limit=\"%s\"", c->team_label,
                  sl_limits_kind_name (c->plan->counters [la->refused].kind));
        s_count (self, "sluice_limits_refused_total", labels, "Requests refused over a limit (429)", 1);
    }
    else {
        //  The store could not answer: the team decides, and it is said.
        bool allow = c->who.on_error == SL_ON_ERROR_ALLOW;
        snprintf (labels, sizeof labels, "outcome=\"%s\"", allow ? "allowed" : "denied");
        s_count (self, "sluice_limits_store_errors_total", labels,
                 "Requests the limits store could not answer for, by what limits_on_error made of them", 1);
        int64_t now = zclock_mono ();
        if (now - self->store_error_logged >= S_LOG_EVERY_MS) {
            self->store_error_logged = now;
            sl_log_warn ("limits_store_error", "%s: team %s's limits_on_error %s it", la->why ? la->why : "no answer",
                         c->team_label, allow ? "allows" : "denies");
        }
        if (allow)
            a.outcome = SL_ADMITTED;
        else {
            s_refuse (&a, SL_ADMIT_UNAVAILABLE, 503, "overloaded_error", "limits_store");
            a.retry_after = SL_ADMISSION_RETRY_S;
            snprintf (a.message, sizeof a.message, "sluice cannot check this request's limits now (%s); try again "
                      "shortly", la->why ? la->why : "no answer");
        }
    }
    if (a.outcome != SL_ADMITTED || la->outcome != SL_LIMITS_ADMITTED) {
        //  Nothing of this request is held in the store: nothing to finish.
        free (c->plan);
        c->plan = NULL;
    }
    c->done (c->done_arg, c, &a);
}

static void
s_on_store (void *arg, const sl_limits_answer_t *la)
{
    sl_caller_t *c = arg;
    c->waiting = false;
    if (c->abandoned) {
        //  Its stream is gone: an admission gives its place back at once.
        if (la->outcome == SL_LIMITS_ADMITTED)
            c->owner->store->finish (c->owner->store, c->plan, 0, 0);
        s_caller_free (&c);
        return;
    }
    s_answer (c, la);
}

void
sl_admission_admit (sl_admission_t *self, sl_caller_t *caller, const char *model, const uint8_t *sid,
                    sl_admission_done_fn *done, void *arg)
{
    sl_admission_answer_t a = { 0 };
    if (model && !sl_identity_allows_model (&caller->who, model)) {
        s_refuse (&a, SL_ADMIT_FORBIDDEN, 403, "permission_error", "models");
        snprintf (a.message, sizeof a.message, "the key %s may not use the model %s", caller->who.key_id, model);
        char labels [160];
        snprintf (labels, sizeof labels, "team=\"%s\"", caller->team_label);
        s_count (self, "sluice_models_refused_total", labels, "Requests for a model their key may not use (403)", 1);
        done (arg, caller, &a);
        return;
    }
    if (!caller->who.subject_count) {
        done (arg, caller, &a);         //  no limits: nothing to ask
        return;
    }
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (sid, hex);
    caller->plan = sl_xcalloc (1, sizeof *caller->plan);
    sl_limits_plan (caller->plan, caller->who.subjects, caller->who.subject_count, (int64_t) time (NULL), hex);
    snprintf (caller->plan->team, sizeof caller->plan->team, "%s", caller->who.team);
    snprintf (caller->plan->key_id, sizeof caller->plan->key_id, "%s", caller->who.key_id);
    snprintf (caller->plan->user, sizeof caller->plan->user, "%s", caller->who.user);
    caller->owner = self;
    caller->done = done;
    caller->done_arg = arg;
    caller->waiting = true;
    self->store->admit (self->store, caller->plan, s_on_store, caller);
}

void
sl_admission_renew (sl_admission_t *self, sl_caller_t *caller)
{
    if (caller && caller->plan && !caller->waiting)
        self->store->renew (self->store, caller->plan, (int64_t) time (NULL));
}

//  --------------------------------------------------------------------------
//  What it spent

void
sl_admission_finish (sl_admission_t *self, sl_caller_t **caller_p, const char *model, const sl_usage_t *usage,
                     bool estimated)
{
    sl_caller_t *c = *caller_p;
    if (!c)
        return;
    *caller_p = NULL;
    int64_t in = usage && usage->input > 0 ? usage->input : 0;
    int64_t out = usage && usage->output > 0 ? usage->output : 0;
    //  Money at the routes file's prices; a model without a price costs
    //  nothing (its tokens still count).
    double in_per_m, out_per_m;
    int64_t usd_micro = (in || out) && sl_providers_price (self->routes, model, &in_per_m, &out_per_m) == 0
                      ? sl_limits_usd_micro (in, out, in_per_m, out_per_m) : 0;
    if (usd_micro > 0) {
        char labels [160];
        snprintf (labels, sizeof labels, "team=\"%s\"", c->team_label);
        s_count (self, "sluice_cost_usd_micro_total", labels,
                 "Money finished streams cost at the routes file's prices, in micro-dollars", (uint64_t) usd_micro);
    }
    if (in || out) {
        char labels [160];
        snprintf (labels, sizeof labels, "team=\"%s\",kind=\"input\"", c->team_label);
        s_count (self, "sluice_tokens_total", labels, "Tokens of finished streams, as reported (or estimated)",
                 (uint64_t) in);
        snprintf (labels, sizeof labels, "team=\"%s\",kind=\"output\"", c->team_label);
        s_count (self, "sluice_tokens_total", labels, "Tokens of finished streams, as reported (or estimated)",
                 (uint64_t) out);
        if (estimated) {
            snprintf (labels, sizeof labels, "team=\"%s\"", c->team_label);
            s_count (self, "sluice_tokens_estimated_total", labels,
                     "Of them, tokens estimated from bytes (the upstream reported none)", (uint64_t) (in + out));
        }
    }
    if (c->waiting) {
        c->abandoned = true;            //  freed when the store answers
        return;
    }
    if (c->plan)
        self->store->finish (self->store, c->plan, in + out, usd_micro);
    s_caller_free (&c);
}
