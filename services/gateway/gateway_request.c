/*  gateway_request.c - a request's way in (see gateway_impl.h): from the
    client's credential to the job an ingest gets.

    Who sent it is the admission's answer (sl_admission: the keys file, a
    signed token, SLUICE_CLIENT_KEYS), and so is whether it may start now
    (the key's models, its and its team's limits, counted in this process
    or in Redis). A refusal is a request verdict like any other: it runs
    the pipeline without an upstream call, to the client's own error.

    Then the request policy: the caller's (the file its key or team names
    in the keys file, a policy set following the keys file; else
    --policy). When it has request rules, they run here on the normalized
    request (sl_reqjudge), LLM judges of tool results over curl multi in
    the same loop (sl_llm_client, answers kept by content in
    sl_llm_cache), and the job leaves only once every part is decided,
    carrying the verdicts, the policy's id and, when the policy has
    history conditions, the conversation's earlier calls. A caller whose
    file is not loaded here is refused (500 api_error, a verdict with
    check error): the request cannot be judged, and is never judged under
    the default.
*/
#include "services/gateway/gateway_impl.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/otel/sl_trace.h"
#include "common/tools/sl_tooldef.h"
#include "common/policy/sl_taint.h"

//  An error answer in the client's dialect (for a path no dialect claims,
//  GATEWAY_DEFAULT_DIALECT's).
void
gateway_respond_error (sl_http_req_t *req, int dialect, int status, const char *type, const char *message)
{
    const sl_renderer_t *r = sl_render_for (dialect ? dialect : GATEWAY_DEFAULT_DIALECT);
    sl_buf_t body = { 0 };
    r->error_body (status, sl_str (type), sl_str (message), &body);
    sl_http_respond (req, status, "application/json", body.data, body.len);
    sl_buf_free (&body);
}

//  Headers a policy may match on: all but credentials, names lower-cased.
static bool
s_secret_header (const char *name)
{
    static const char *secrets [] = {
        "authorization", "proxy-authorization", "x-api-key", "x-goog-api-key",
        "api-key", "cookie", NULL
    };
    for (int i = 0; secrets [i]; i++)
        if (strcasecmp (name, secrets [i]) == 0)
            return true;
    return false;
}

typedef struct {
    sl_buf_t *out;
    bool first;
} s_hdr_walk_t;

static void
s_collect_header (void *arg, const char *name, const char *value)
{
    s_hdr_walk_t *walk = arg;
    if (s_secret_header (name))
        return;
    char lower [128];
    size_t n = strlen (name);
    if (n >= sizeof lower)
        return;
    for (size_t i = 0; i <= n; i++)
        lower [i] = (char) tolower ((unsigned char) name [i]);
    sl_buf_putc (walk->out, walk->first ? '{' : ',');
    walk->first = false;
    sl_json_put_str (walk->out, lower, n);
    sl_buf_putc (walk->out, ':');
    sl_json_put_str (walk->out, value, strlen (value));
}

const char *
gateway_header (void *arg, const char *name)
{
    return sl_http_req_header (arg, name);
}

const char *
gateway_query (void *arg, const char *name)
{
    return sl_http_req_query (arg, name);
}

//  Who sent req: its caller (the identity its credential stands for), or
//  NULL when the credential is refused (answered here: 401 in dialect,
//  counted by reason). The caller is the request's until its stream ends.
sl_caller_t *
gateway_identify (gateway_t *self, sl_http_req_t *req, int dialect)
{
    const char *reason;
    sl_caller_t *caller = sl_admission_identify (self->admission, sl_clientkey_of (gateway_header, gateway_query, req), &reason);
    if (!caller) {
        char message [128];
        if (strncmp (reason, "token_", 6) == 0)
            snprintf (message, sizeof message, "the token is not accepted (%s)", reason + 6);
        else
            snprintf (message, sizeof message, "invalid or missing API key");
        gateway_respond_error (req, dialect, 401, "authentication_error", message);
    }
    return caller;
}

//  A request that needs a caller only to be let in (/metrics, /v1/models):
//  false when it was refused (and answered).
bool
gateway_authorized (gateway_t *self, sl_http_req_t *req, int dialect)
{
    sl_caller_t *caller = gateway_identify (self, req, dialect);
    if (!caller)
        return false;
    sl_admission_finish (self->admission, &caller, NULL, NULL, false);
    return true;
}

//  Requests (their caller known) by dialect and team.
sl_counter_t *
gateway_request_counter (gateway_t *self, int dialect, const char *team)
{
    char labels [SL_TEAMLABEL_TEXT + 64];
    snprintf (labels, sizeof labels, "dialect=\"%s\",team=\"%s\"", sl_dialect_name (dialect), team);
    return sl_metrics_counter (self->metrics, "sluice_requests_total", labels,
                               "Client requests for a completion whose caller is known, by client dialect and team");
}

//  Count what a translation dropped, by feature (a name from the dialect
//  modules' tables, so the label set stays small).
static void
s_count_drops (gateway_t *self, const sl_job_t *parsed)
{
    if (parsed->upstream_dialect == parsed->client_dialect)
        return;
    sl_counter_inc (self->translated);
    for (size_t i = 0; i < parsed->drop_count; i++) {
        char labels [160];
        snprintf (labels, sizeof labels, "side=\"request\",feature=\"%s\"", parsed->dropped [i]);
        sl_counter_inc (sl_metrics_counter (self->metrics, "sluice_translation_dropped_total", labels,
                                            "What a translation between dialects left out, only informative"));
    }
}

//  Why a request goes no further than the pipeline's verdicts: its
//  error, as the client will get it in its dialect.
typedef struct {
    const char *code;
    int status;
    const char *message;
} s_refusal_t;

//  Send the stream's job: the request as prepared, with who sent it,
//  what the request policy decided (its verdicts; refused: no upstream
//  call, the ingest ends the stream with the refusal), the policy's id
//  and, for history conditions, the conversation's earlier calls.
static void
s_send_job (gateway_t *self, gateway_stream_t *s, const s_refusal_t *refusal, sl_buf_t *verdicts)
{
    sl_http_req_t *req = s->req;
    sl_job_t *parsed = &s->parsed;
    //  The client's own credential goes along only when sluice does not
    //  check client keys itself: then the client's key is sluice's, not
    //  the provider's.
    sl_buf_t auth = { 0 };
    if (req && !sl_admission_checks (self->admission))
        sl_clientkey_line (sl_dialect_get (parsed->client_dialect), gateway_header, gateway_query, req, &auth);
    s_count_drops (self, parsed);
    sl_policy_t *policy = s->policy;    //  NULL: refused before its policy was looked up
    sl_buf_t history = { 0 }, taint = { 0 };
    if (policy && sl_policy_uses_history (policy))
        sl_reqjudge_history (parsed->req, SL_REQJUDGE_HISTORY_CALLS, SL_REQJUDGE_HISTORY_BYTES, &history);
    //  Definition conditions on calls: the tools as the client sent them.
    sl_buf_t digests = { 0 };
    if (policy && sl_policy_uses_definitions (policy)) {
        if (s->rj)
            sl_reqjudge_digests (s->rj, &digests);
        else
            sl_tooldef_digests (parsed->req->tools, parsed->req->tool_count, &digests);
    }
    if (policy && sl_policy_uses_taint (policy))
        sl_taint_scan (policy, parsed->req, &taint);

    sl_msg_t job;
    sl_msg_init (&job, SL_MSG_REQ);
    memcpy (job.sid, s->sid, SL_SID_SIZE);
    job.client_dialect = (uint8_t) parsed->client_dialect;
    job.upstream_dialect = (uint8_t) parsed->upstream_dialect;
    job.model = sl_buf_str (&parsed->model);
    if (parsed->provider)
        job.provider = sl_str (parsed->provider);
    job.body = sl_buf_str (&parsed->upstream_body);
    //  The emitters deliver frames to the gateway of this name, among the
    //  gateways they connect to themselves: a name, never an address.
    job.reply_to = sl_str (sl_service_name (self->service));
    job.flags = (parsed->stream ? SL_F_STREAM : 0) | (parsed->include_usage ? SL_F_USAGE : 0);
    job.tools = sl_buf_str (&parsed->tools);
    job.headers = sl_buf_str (&s->headers);
    job.last_user = sl_buf_str (&parsed->last_user);
    if (auth.len)
        job.auth = sl_buf_str (&auth);
    //  The headers the client's dialect sends its own upstream as they are
    //  (the beta features an Anthropic body uses), when it goes to one.
    sl_buf_t passthrough = { 0 };
    if (req && parsed->upstream_dialect == parsed->client_dialect)
        sl_upstream_passthrough (sl_dialect_get (parsed->client_dialect), gateway_header, req, &passthrough);
    if (passthrough.len)
        job.passthrough = sl_buf_str (&passthrough);
    //  Whose request it is: the id of the key, never the key; its team and
    //  user; the policy file it runs under. Without keys, the id of the
    //  credential the client sent (its own provider key, forwarded).
    char key_id [SL_KEY_ID_SIZE];
    const sl_identity_t *who = sl_caller_identity (s->caller);
    const char *key = req ? sl_clientkey_of (gateway_header, gateway_query, req) : NULL;
    if (who->outcome == SL_WHO_OK)
        job.key_id = sl_str (who->key_id);
    else
    if (key && *key) {
        sl_key_id (key, strlen (key), key_id);
        job.key_id = sl_str (key_id);
    }
    if (*who->team)
        job.team = sl_str (who->team);
    if (*who->user)
        job.user = sl_str (who->user);
    if (who->policy)
        job.policy_name = sl_str (who->policy);
    //  The version the request was judged under (its request rules, its
    //  history), which the judge answers under too. A request the gateway
    //  did not judge names none: the judge's current policy decides.
    if (policy && (who->policy || sl_policywatch_has_file (sl_policyset_default (self->policies)))
    &&  (s->rj || history.len || digests.len || taint.len))
        job.policy = sl_str (sl_policy_id (policy));
    //  The trace the stream continues: the client's, or one begun here
    //  when this gateway traces. The client's own headers never go
    //  upstream as sent: the ingest writes the child's.
    sl_trace_in_t trace;
    const char *tracestate = req ? gateway_header (req, "tracestate") : gateway_leg_tracestate (s);
    const char *traceparent = req ? gateway_header (req, "traceparent") : gateway_leg_traceparent (s);
    sl_trace_accept (traceparent, tracestate, s->sid, self->config.tracing, &trace);
    if (trace.bad_parent)
        sl_counter_inc (self->bad_traceparent);
    if (trace.bad_state)
        sl_counter_inc (self->bad_tracestate);
    if (trace.has_trace) {
        job.trace = sl_str (trace.tc);
        job.received_us = s->received_us;
    }
    if (trace.keep_state)
        job.trace_state = sl_str (tracestate);
    if (verdicts && verdicts->len)
        job.req_verdicts = sl_buf_str (verdicts);
    if (history.len)
        job.history = sl_buf_str (&history);
    if (digests.len)
        job.tool_digests = sl_buf_str (&digests);
    if (taint.len)
        job.taint = sl_buf_str (&taint);
    if (refusal) {
        job.flags |= SL_F_DENIED;
        job.body = SL_STR_NULL;
        job.code = sl_str (refusal->code);
        job.status = refusal->status;
        job.message = sl_str (refusal->message);
    }
    if (s->leg)
        gateway_leg_job (s, &job, refusal && !s->refused);
    s->request_bytes = job.body.len;
    //  Kept until the first frame: if its ingest dies before, the job goes
    //  to another one. Judging the request took its own time: the stream's
    //  silence counts from now.
    sl_delivery_dispatch (s->delivery, &job);
    gateway_send (self, &job);
    sl_router_flush (self->router);
    sl_buf_free (&auth);
    sl_buf_free (&passthrough);
    sl_buf_free (&history);
    sl_buf_free (&digests);
    sl_buf_free (&taint);
    //  The job (the request as it goes upstream) is kept apart until an
    //  ingest answers; the client's own body is not needed any more, and
    //  the response may stream for minutes.
    if (req)
        sl_http_req_drop_body (req);
}

//  Log and count a request verdict, like the judge does a call's.
static void
s_log_verdict (gateway_t *self, const gateway_stream_t *s, const sl_msg_t *v)
{
    const char *team = sl_caller_team_label (s->caller);
    if (v->action < SL_ACT_MAX && v->check < SL_CHK_MAX)
        sl_counter_inc (sl_service_verdict_counter (self->service, "sluice_request_verdicts_total", GATEWAY_VERDICTS_HELP,
                                                    v->action, v->check, team));
    char user [SL_TEAMLABEL_TEXT];
    const char *who = sl_caller_identity (s->caller)->user;
    sl_label_safe (who, strlen (who), user, sizeof user);
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (s->sid, hex);
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

//  The request's verdicts as they travel (START rv): each says whose
//  request it judged.
static void
s_encode_verdict (const gateway_stream_t *s, sl_msg_t *v, uint64_t seq, sl_buf_t *out)
{
    const sl_identity_t *who = sl_caller_identity (s->caller);
    memcpy (v->sid, s->sid, SL_SID_SIZE);
    v->seq = seq;
    if (*who->team)
        v->team = sl_str (who->team);
    if (*who->user)
        v->user = sl_str (who->user);
    sl_msg_encode (v, out);
}

//  Every part of the request is decided: apply, log, and send the job.
static void
s_request_judged (gateway_t *self, gateway_stream_t *s)
{
    const char *refusal = sl_reqjudge_refusal (s->rj);
    size_t count = sl_reqjudge_verdicts (s->rj);
    for (size_t i = 0; i < count; i++) {
        sl_msg_t v;
        sl_reqjudge_verdict (s->rj, i, &v);
        s_log_verdict (self, s, &v);
    }
    sl_histo_observe (self->judge_latency, (double) (zclock_usecs () - s->started_us) / 1e6);
    if (!refusal && sl_reqjudge_changed (s->rj) && sl_job_refresh (&s->parsed)) {
        sl_counter_inc (self->refused);
        if (s->leg) {
            gateway_leg_fail (self, s, s->parsed.status, s->parsed.error_type,
                              sl_buf_cstr (&s->parsed.error_message));
            return;
        }
        gateway_respond_error (s->req, s->dialect, s->parsed.status, s->parsed.error_type,
                         sl_buf_cstr (&s->parsed.error_message));
        gateway_stream_forget (self, s);
        return;
    }
    if (refusal)
        sl_counter_inc (self->denied);
    sl_buf_t verdicts = { 0 };
    for (size_t i = 0; i < count; i++) {
        sl_msg_t v;
        sl_reqjudge_verdict (s->rj, i, &v);
        s_encode_verdict (s, &v, i, &verdicts);
    }
    s_refusal_t refused = { "policy_violation", 403, refusal };
    s_send_job (self, s, refusal ? &refused : NULL, &verdicts);
    sl_buf_free (&verdicts);
    gateway_stream_release (self, s);
}

//  Ask the LLM judges a request's parts need: from the cache when the
//  same content was asked about before, else over HTTP.
static void
s_ask_judges (gateway_t *self, gateway_stream_t *s, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const sl_reqjudge_ask_t *ask = sl_reqjudge_ask (s->rj, i);
        sl_llm_result_t kept = { 0 };
        if (sl_llm_cache_get (self->llm_cache, ask->rule, ask->body, &kept)) {
            sl_reqjudge_done (s->rj, i, &kept, true, zclock_usecs ());
            sl_llm_result_clear (&kept);
            continue;
        }
        sl_llm_ask_t a = { .ticket = sl_llm_tickets_next (self->tickets), .rule = ask->rule, .spec = ask->spec,
                           .body = ask->body };
        if (sl_llm_client_ask (self->llm, &a)) {
            sl_llm_result_t failed = { 0 };
            sl_llm_result_fail (&failed, SL_CHK_ERROR, "the request to the judge could not be started");
            sl_reqjudge_done (s->rj, i, &failed, false, zclock_usecs ());
            sl_llm_result_clear (&failed);
            continue;
        }
        sl_llm_tickets_add (self->tickets, a.ticket, s->sid, i);
    }
}

void
gateway_llm_done (void *arg, uint64_t ticket, const sl_llm_result_t *result)
{
    gateway_t *self = arg;
    uint8_t sid [SL_SID_SIZE];
    size_t index;
    if (!sl_llm_tickets_take (self->tickets, ticket, sid, &index))
        return;
    gateway_stream_t *s = sl_sidmap_get (self->streams, sid);
    if (!s || !s->rj)
        return;
    const sl_reqjudge_ask_t *ask = sl_reqjudge_ask (s->rj, index);
    if (ask)
        sl_llm_cache_put (self->llm_cache, ask->rule, ask->body, result);
    sl_reqjudge_done (s->rj, index, result, false, zclock_usecs ());
    if (!sl_reqjudge_pending (s->rj))
        s_request_judged (self, s);
}

void
gateway_llm_after (void *arg)
{
    gateway_t *self = arg;
    sl_router_flush (self->router);
    sl_httpd_run (self->httpd);
}

int64_t
gateway_clock (void *arg)
{
    (void) arg;
    return zclock_usecs ();
}

static void s_refuse (gateway_t *self, gateway_stream_t *s, const sl_admission_answer_t *answer, int check);

//  The policy set follows the keys file: when the admission runs a new
//  keyring, the files it names are loaded and those it no longer names let
//  go. (The keyring is held, so a new one is never mistaken for it.)
void
gateway_policies_follow_keys (gateway_t *self)
{
    sl_keyring_t *ring = sl_admission_keyring (self->admission);
    if (ring == self->policy_keys)
        return;
    sl_keyring_unref (&self->policy_keys);
    self->policy_keys = ring ? sl_keyring_ref (ring) : NULL;
    sl_policyset_keys (self->policies, ring);
}

//  A caller whose policy file is not loaded here (it did not load, or the
//  keys file named it a moment ago and the set has not caught up): the
//  request cannot be judged, so it is refused as a server error, never
//  judged under the default (a 403 would blame the client).
static void
s_refuse_unjudged (gateway_t *self, gateway_stream_t *s, const char *file)
{
    sl_admission_answer_t answer = { .outcome = SL_ADMIT_UNAVAILABLE, .status = 500, .code = "api_error",
                                     .rule = "policy" };
    snprintf (answer.message, sizeof answer.message, "the policy this key runs under (%s) is not loaded: the "
              "request cannot be judged", file);
    sl_counter_inc (self->unjudged);
    sl_log_warn ("policy_unknown", "a request names policy %s, which this gateway does not have: refused", file);
    s_refuse (self, s, &answer, SL_CHK_ERROR);
}

//  The request policy's turn: the caller's (its key's or team's file, else
//  the default), with its request rules, if the policy has any.
void
gateway_judge_request (gateway_t *self, gateway_stream_t *s)
{
    gateway_policies_follow_keys (self);
    const char *file = sl_caller_identity (s->caller)->policy;
    sl_policy_t *policy = sl_policyset_policy (self->policies, sl_str (file));
    if (!policy) {
        s_refuse_unjudged (self, s, file);
        return;
    }
    //  Judged under this version to the end, whatever reloads meanwhile.
    s->policy = sl_policy_ref (policy);
    if (sl_policy_request_count (policy) == 0) {
        s_send_job (self, s, NULL, NULL);       //  nothing to judge here: today's path
        gateway_stream_release (self, s);
        return;
    }
    s->rj = sl_reqjudge_new (policy, s->parsed.req, sl_buf_str (&s->headers));
    sl_reqjudge_set_team (s->rj, sl_str (sl_caller_identity (s->caller)->team));
    size_t asks = sl_reqjudge_run (s->rj, s->started_us);
    if (asks)
        s_ask_judges (self, s, asks);
    if (!sl_reqjudge_pending (s->rj))
        s_request_judged (self, s);
}

//  Refused by the admission (a model the key may not use, a limit, the
//  limits store): a verdict like any other, and the stream ends with the
//  refusal in the client's dialect, nothing sent upstream.
static void
s_refuse (gateway_t *self, gateway_stream_t *s, const sl_admission_answer_t *answer, int check)
{
    sl_msg_t v;
    sl_msg_init (&v, SL_MSG_VERDICT);
    v.part = SL_STR_LIT ("request");
    v.action = SL_ACT_BLOCK;
    v.check = (uint8_t) check;
    v.rule = sl_str (answer->rule);
    v.reason = sl_str (answer->message);
    v.probability = NAN;
    int64_t latency = zclock_usecs () - s->started_us;
    v.latency_us = (uint32_t) (latency <= 0 ? 0 : latency > UINT32_MAX ? UINT32_MAX : latency);
    s_log_verdict (self, s, &v);
    sl_buf_t verdicts = { 0 };
    s_encode_verdict (s, &v, 0, &verdicts);
    s->refused = true;
    s->retry_after = answer->retry_after;
    s_refusal_t refusal = { answer->code, answer->status, answer->message };
    s_send_job (self, s, &refusal, &verdicts);
    sl_buf_free (&verdicts);
    gateway_stream_release (self, s);
}

static void
s_refuse_admission (gateway_t *self, gateway_stream_t *s, const sl_admission_answer_t *answer)
{
    s_refuse (self, s, answer, SL_CHK_RAN);
}

static void
s_on_admitted (void *arg, sl_caller_t *caller, const sl_admission_answer_t *answer)
{
    (void) caller;
    gateway_stream_t *s = arg;
    gateway_t *self = s->owner;
    if (answer->outcome == SL_ADMITTED)
        gateway_judge_request (self, s);
    else
        s_refuse_admission (self, s, answer);
    sl_router_flush (self->router);
}

void
gateway_start_stream (gateway_t *self, sl_http_req_t *req, sl_job_t *parsed, sl_caller_t *caller)
{
    gateway_stream_t *s = sl_xcalloc (1, sizeof *s);
    s->owner = self;
    s->caller = caller;
    s->req = req;
    s->dialect = parsed->client_dialect;
    s->started_us = zclock_usecs ();
    s->received_us = sl_trace_now_us ();
    sl_sid_new (s->sid);
    s->delivery = sl_delivery_new (s->sid, self->config.stream_expiry_ms, gateway_clock, NULL);
    sl_sidmap_put (self->streams, s->sid, s);
    sl_http_req_set_data (req, s);
    sl_counter_inc (self->streams_total);
    //  The stream holds the request until its job leaves.
    s->parsed = *parsed;
    memset (parsed, 0, sizeof *parsed);
    s->model = sl_xstrdup (sl_buf_cstr (&s->parsed.model));

    s_hdr_walk_t walk = { &s->headers, true };
    sl_http_req_headers (req, s_collect_header, &walk);
    if (walk.first)
        sl_buf_putc (&s->headers, '{');
    sl_buf_putc (&s->headers, '}');
    //  Its key's models and limits first: a refused request costs nothing.
    sl_admission_admit (self->admission, caller, s->model, s->sid, s_on_admitted, s);
}
