/*  gateway_judge.c - the request policy's turn (see gateway_judge.h).

    A request being judged is kept by its stream id until it is decided:
    an LLM judge's answer names only its ticket, and the ticket its stream
    (sl_llm_tickets). It leaves the table before its done is called, so
    whatever done does to the stream (its end, another stream's start)
    never finds it half-decided.
*/
#include "services/gateway/gateway_judge.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"
#include "common/base/sl_sidmap.h"
#include "common/identity/sl_teamlabel.h"
#include "common/llm/sl_llm_cache.h"
#include "common/llm/sl_llm_client.h"
#include "common/llm/sl_llm_tickets.h"
#include "common/policy/sl_reqjudge.h"
#include "common/service/sl_policyset.h"

#define S_VERDICTS_HELP "Request verdicts by action, whether the check ran, and team"

struct _gateway_judge_t {
    sl_service_t *service;
    sl_policyset_t *policies;           //  the default and the keys' files (request rules, history)
    sl_keyring_t *keys;                 //  the keyring whose files the set holds (a reference)
    sl_llm_client_t *llm;               //  LLM judges of tool results
    sl_llm_cache_t *llm_cache;          //  their answers, by content
    sl_llm_tickets_t *tickets;          //  asks in flight: their stream, their ask's index
    sl_sidmap_t *judging;               //  requests being judged (s_judging_t), by stream id
    sl_counter_t *denied;               //  requests refused by the request policy
    sl_counter_t *unjudged;             //  requests whose policy file is not loaded here
    sl_histo_t *latency;                //  request to its last request verdict
    gateway_judge_after_fn *after;
    void *after_arg;
};

//  One request until it is decided.
typedef struct {
    gateway_judge_t *judge;
    uint8_t sid [SL_SID_SIZE];
    sl_req_t *req;                      //  borrowed, changed by the decisions
    sl_str_t headers;                   //  borrowed
    const sl_caller_t *caller;          //  borrowed
    int64_t started_us;
    sl_policy_t *policy;                //  the version it is judged under (a reference)
    sl_reqjudge_t *rj;                  //  its request judge, when the policy has request rules
    gateway_judged_fn *done;
    void *arg;
} s_judging_t;

//  --------------------------------------------------------------------------
//  Verdicts

//  Log and count a request verdict, like the judge does a call's.
static void
s_log_verdict (gateway_judge_t *self, const uint8_t *sid, const sl_caller_t *caller, const sl_msg_t *v)
{
    const char *team = sl_caller_team_label (caller);
    if (v->action < SL_ACT_MAX && v->check < SL_CHK_MAX)
        sl_counter_inc (sl_service_verdict_counter (self->service, "sluice_request_verdicts_total", S_VERDICTS_HELP,
                                                    v->action, v->check, team));
    char user [SL_TEAMLABEL_TEXT];
    const char *who = sl_caller_identity (caller)->user;
    sl_label_safe (who, strlen (who), user, sizeof user);
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (sid, hex);
    char p [32] = "";
    if (!isnan (v->probability))
        snprintf (p, sizeof p, " p=%.3f", v->probability);
    sl_log_info ("verdict", "sid=%.8s part=%.*s call_id=%.*s tool=%.*s action=%s check=%s rule=%.*s latency_us=%u"
                 " judge=%.*s%s team=%s user=%s reason=%.*s", hex, (int) v->part.len, v->part.ptr,
                 (int) v->id.len, v->id.ptr ? v->id.ptr : "", (int) v->name.len, v->name.ptr ? v->name.ptr : "",
                 sl_action_name (v->action), sl_check_name (v->check),
                 (int) v->rule.len, v->rule.ptr ? v->rule.ptr : "-", v->latency_us,
                 (int) v->judge_model.len, v->judge_model.ptr ? v->judge_model.ptr : "-", p, team,
                 *user ? user : "-", (int) v->reason.len, v->reason.ptr ? v->reason.ptr : "");
}

//  The request's verdicts as they travel (REQ rv): each says whose
//  request it judged.
static void
s_encode_verdict (const uint8_t *sid, const sl_caller_t *caller, sl_msg_t *v, uint64_t seq, sl_buf_t *out)
{
    const sl_identity_t *who = sl_caller_identity (caller);
    memcpy (v->sid, sid, SL_SID_SIZE);
    v->seq = seq;
    if (*who->team)
        v->team = sl_str (who->team);
    if (*who->user)
        v->user = sl_str (who->user);
    sl_msg_encode (v, out);
}

void
gateway_judge_refused (gateway_judge_t *self, const uint8_t *sid, const sl_caller_t *caller, int64_t started_us,
                       int check, const char *rule, const char *reason, sl_buf_t *verdicts)
{
    sl_msg_t v;
    sl_msg_init (&v, SL_MSG_VERDICT);
    v.part = SL_STR_LIT ("request");
    v.action = SL_ACT_BLOCK;
    v.check = (uint8_t) check;
    v.rule = sl_str (rule);
    v.reason = sl_str (reason);
    v.probability = NAN;
    int64_t latency = zclock_usecs () - started_us;
    v.latency_us = (uint32_t) (latency <= 0 ? 0 : latency > UINT32_MAX ? UINT32_MAX : latency);
    s_log_verdict (self, sid, caller, &v);
    s_encode_verdict (sid, caller, &v, 0, verdicts);
}

//  --------------------------------------------------------------------------
//  Judging

static void
s_judging_destroy (s_judging_t **j_p)
{
    s_judging_t *j = *j_p;
    if (!j)
        return;
    sl_reqjudge_destroy (&j->rj);
    sl_policy_unref (&j->policy);
    free (j);
    *j_p = NULL;
}

static void
s_stop_ask (void *arg, uint64_t ticket)
{
    sl_llm_client_cancel (arg, ticket);
}

//  Every part is decided (or the policy has no request rules): the
//  stream's done hears it, with what its job carries of the policy.
static void
s_decided (gateway_judge_t *self, s_judging_t *j, const gateway_judged_t *refusal)
{
    sl_sidmap_remove (self->judging, j->sid);
    gateway_judged_t judged = { 0 };
    if (refusal)
        judged = *refusal;
    sl_buf_t verdicts = { 0 };
    sl_annotations_t annotations = { 0 };
    if (j->rj) {
        size_t count = sl_reqjudge_verdicts (j->rj);
        for (size_t i = 0; i < count; i++) {
            sl_msg_t v;
            sl_reqjudge_verdict (j->rj, i, &v);
            s_log_verdict (self, j->sid, j->caller, &v);
        }
        sl_histo_observe (self->latency, (double) (zclock_usecs () - j->started_us) / 1e6);
        const char *refused = sl_reqjudge_refusal (j->rj);
        judged.changed = !refused && sl_reqjudge_changed (j->rj);
        if (refused) {
            sl_counter_inc (self->denied);
            judged.code = "policy_violation";
            judged.status = 403;
            judged.message = refused;
        }
        for (size_t i = 0; i < count; i++) {
            sl_msg_t v;
            sl_reqjudge_verdict (j->rj, i, &v);
            s_encode_verdict (j->sid, j->caller, &v, i, &verdicts);
        }
    }
    else
    if (refusal)
        sl_buf_append_str (&verdicts, refusal->verdicts);
    //  The version the request was judged under (its request rules, its
    //  history), which the judge answers under too. A request the gateway
    //  did not judge names none: the judge's current policy decides.
    bool annotated = sl_annotations_make (j->policy, j->req, j->rj, &annotations);
    const sl_identity_t *who = sl_caller_identity (j->caller);
    if (j->policy && (who->policy || sl_policywatch_has_file (sl_policyset_default (self->policies)))
    &&  (j->rj || annotated))
        judged.policy = sl_policy_id (j->policy);
    judged.verdicts = sl_buf_str (&verdicts);
    judged.annotations = &annotations;
    j->done (j->arg, &judged);
    sl_buf_free (&verdicts);
    sl_annotations_clear (&annotations);
    s_judging_destroy (&j);
}

//  Ask the LLM judges a request's parts need: from the cache when the
//  same content was asked about before, else over HTTP.
static void
s_ask_judges (gateway_judge_t *self, s_judging_t *j, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const sl_reqjudge_ask_t *ask = sl_reqjudge_ask (j->rj, i);
        sl_llm_result_t kept = { 0 };
        if (sl_llm_cache_get (self->llm_cache, ask->rule, ask->body, &kept)) {
            sl_reqjudge_done (j->rj, i, &kept, true, zclock_usecs ());
            sl_llm_result_clear (&kept);
            continue;
        }
        sl_llm_ask_t a = { .ticket = sl_llm_tickets_next (self->tickets), .rule = ask->rule, .spec = ask->spec,
                           .body = ask->body };
        if (sl_llm_client_ask (self->llm, &a)) {
            sl_llm_result_t failed = { 0 };
            sl_llm_result_fail (&failed, SL_CHK_ERROR, "the request to the judge could not be started");
            sl_reqjudge_done (j->rj, i, &failed, false, zclock_usecs ());
            sl_llm_result_clear (&failed);
            continue;
        }
        sl_llm_tickets_add (self->tickets, a.ticket, j->sid, i);
    }
}

//  A caller whose policy file is not loaded here (it did not load, or the
//  keys file named it a moment ago and the set has not caught up): the
//  request cannot be judged, so it is refused as a server error, never
//  judged under the default (a 403 would blame the client).
static void
s_unjudged (gateway_judge_t *self, s_judging_t *j, const char *file)
{
    char message [256];
    snprintf (message, sizeof message, "the policy this key runs under (%s) is not loaded: the request cannot be "
              "judged", file);
    sl_counter_inc (self->unjudged);
    sl_log_warn ("policy_unknown", "a request names policy %s, which this gateway does not have: refused", file);
    sl_buf_t verdicts = { 0 };
    gateway_judge_refused (self, j->sid, j->caller, j->started_us, SL_CHK_ERROR, "policy", message, &verdicts);
    gateway_judged_t refusal = { .code = "api_error", .status = 500, .message = message, .unjudged = true,
                                 .verdicts = sl_buf_str (&verdicts) };
    s_decided (self, j, &refusal);
    sl_buf_free (&verdicts);
}

void
gateway_judge_start (gateway_judge_t *self, const uint8_t *sid, sl_req_t *req, sl_str_t headers,
                     const sl_caller_t *caller, int64_t started_us, gateway_judged_fn *done, void *arg)
{
    s_judging_t *j = sl_xcalloc (1, sizeof *j);
    j->judge = self;
    memcpy (j->sid, sid, SL_SID_SIZE);
    j->req = req;
    j->headers = headers;
    j->caller = caller;
    j->started_us = started_us;
    j->done = done;
    j->arg = arg;
    sl_sidmap_put (self->judging, j->sid, j);
    const char *file = sl_caller_identity (caller)->policy;
    sl_policy_t *policy = sl_policyset_policy (self->policies, sl_str (file));
    if (!policy) {
        s_unjudged (self, j, file);
        return;
    }
    //  Judged under this version to the end, whatever reloads meanwhile.
    j->policy = sl_policy_ref (policy);
    if (sl_policy_request_count (policy) == 0) {
        s_decided (self, j, NULL);      //  nothing to judge here
        return;
    }
    j->rj = sl_reqjudge_new (policy, req, headers);
    sl_reqjudge_set_team (j->rj, sl_str (sl_caller_identity (caller)->team));
    size_t asks = sl_reqjudge_run (j->rj, started_us);
    if (asks)
        s_ask_judges (self, j, asks);
    if (!sl_reqjudge_pending (j->rj))
        s_decided (self, j, NULL);
}

void
gateway_judge_cancel (gateway_judge_t *self, const uint8_t *sid)
{
    sl_llm_tickets_drop_stream (self->tickets, sid, s_stop_ask, self->llm);
    s_judging_t *j = sl_sidmap_remove (self->judging, sid);
    s_judging_destroy (&j);
}

//  An LLM judge's answer (sl_llm_client).
static void
s_llm_done (void *arg, uint64_t ticket, const sl_llm_result_t *result)
{
    gateway_judge_t *self = arg;
    uint8_t sid [SL_SID_SIZE];
    size_t index;
    if (!sl_llm_tickets_take (self->tickets, ticket, sid, &index))
        return;
    s_judging_t *j = sl_sidmap_get (self->judging, sid);
    if (!j || !j->rj)
        return;
    const sl_reqjudge_ask_t *ask = sl_reqjudge_ask (j->rj, index);
    if (ask)
        sl_llm_cache_put (self->llm_cache, ask->rule, ask->body, result);
    sl_reqjudge_done (j->rj, index, result, false, zclock_usecs ());
    if (!sl_reqjudge_pending (j->rj))
        s_decided (self, j, NULL);
}

static void
s_llm_after (void *arg)
{
    gateway_judge_t *self = arg;
    self->after (self->after_arg);
}

//  --------------------------------------------------------------------------
//  Policies

void
gateway_judge_keys (gateway_judge_t *self, sl_keyring_t *keyring)
{
    if (keyring == self->keys)
        return;
    sl_keyring_unref (&self->keys);
    self->keys = keyring ? sl_keyring_ref (keyring) : NULL;
    sl_policyset_keys (self->policies, keyring);
}

sl_policy_t *
gateway_judge_policy (gateway_judge_t *self, const char *file)
{
    return sl_policyset_policy (self->policies, sl_str (file));
}

//  What the "policy_loaded" line says of a policy here (requests read it
//  from the set as they arrive: nothing to do on a reload).
static void
s_describe (sl_policy_t *policy, sl_buf_t *out)
{
    sl_buf_printf (out, "%d request rules, history %s, id=%s", sl_policy_request_count (policy),
                   sl_policy_uses_history (policy) ? "yes" : "no", sl_policy_id (policy));
}

gateway_judge_t *
gateway_judge_new (sl_service_t *service, const char *policy_path, long watch_ms, gateway_judge_after_fn *after,
                   void *arg)
{
    sl_policyset_t *policies = sl_policyset_new (service, policy_path, watch_ms, s_describe);
    if (!policies)
        return NULL;
    gateway_judge_t *self = sl_xcalloc (1, sizeof *self);
    self->service = service;
    self->policies = policies;
    self->after = after;
    self->after_arg = arg;
    self->judging = sl_sidmap_new ();
    sl_metrics_t *m = sl_service_metrics (service);
    //  The series of requests without a team are there from the start.
    for (int a = SL_ACT_ALLOW; a < SL_ACT_MAX; a++)
        for (int c = 0; c < SL_CHK_MAX; c++)
            sl_service_verdict_counter (service, "sluice_request_verdicts_total", S_VERDICTS_HELP, a, c,
                                        SL_TEAMLABEL_DEFAULT);
    self->denied = sl_metrics_counter (m, "sluice_requests_denied_total", NULL,
                                       "Requests the request policy refused (403)");
    self->unjudged = sl_metrics_counter (m, "sluice_policy_unknown_total", NULL,
                                         "Requests whose policy file this gateway does not have (refused, 500)");
    self->latency = sl_metrics_histogram (m, "sluice_request_judge_seconds", NULL,
                                          "Time from a request to its last request verdict",
                                          sl_metrics_latency_bounds, sl_metrics_latency_bounds_count);
    self->llm = sl_llm_client_new (sl_service_loop (service), m, s_llm_done, s_llm_after, self);
    self->llm_cache = sl_llm_cache_new (SL_LLM_CACHE_DEFAULT);
    self->tickets = sl_llm_tickets_new ();
    return self;
}

void
gateway_judge_destroy (gateway_judge_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    gateway_judge_t *self = *self_p;
    size_t count;
    void **judging = sl_sidmap_values (self->judging, &count);
    for (size_t i = 0; i < count; i++) {
        s_judging_t *j = judging [i];
        s_judging_destroy (&j);
    }
    free (judging);
    sl_sidmap_destroy (&self->judging);
    sl_llm_client_destroy (&self->llm);
    sl_llm_cache_destroy (&self->llm_cache);
    sl_llm_tickets_destroy (&self->tickets);
    sl_keyring_unref (&self->keys);
    sl_policyset_destroy (&self->policies);
    free (self);
    *self_p = NULL;
}
