/*  sluice-judge - holds tool calls, applies the policy, releases or replaces.

    Binds its inbox (block events from the aggregators), feeds them to the
    judge library and routes the judged stream to the emitters. The library
    is pure; this file gives it what it may not take itself:

    - LLM judges and decision services (decide): asks go to sl_llm_client
      (libcurl multi in this reactor), outcomes come back through
      sl_judge_llm_done;
    - time: a monotonic clock for verdict latencies, and a periodic tick
      that lets the library send keep-alives for streams it holds back;
    - the policies: the default (--policy) and, with --keys-file, every
      file the keys and teams name (sl_policyset), each read at start (a
      bad default stops the judge; a bad named file only fails its own
      streams), again on SIGHUP and when it changes (polled), keeping the
      running version when the new one is bad; the files named follow the
      keys file as it reloads. A stream runs under the file its START
      names (pn), looked up here and handed to the library; a file this
      judge does not have fails the stream closed (every call blocked,
      counted in sluice_policy_unknown_total, logged "policy_unknown").
      Streams keep the policy they started with.

    Every verdict is also logged (event "verdict"), so the audit trail
    survives even when no tap is listening.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/sl_log.h"
#include "common/bus/sl_router.h"
#include "common/service/sl_service.h"
#include "common/service/sl_stage.h"
#include "common/llm/sl_llm_client.h"
#include "common/stages/sl_judge.h"
#include "common/policy/sl_policy_report.h"
#include "common/service/sl_keywatch.h"
#include "common/service/sl_policyset.h"
#include "common/identity/sl_teamlabel.h"
#include "services/judge/judge_approvals.h"

#define JUDGE_TICK_MIN_MS 10            //  keep-alive tick, at most this often
#define JUDGE_VERDICTS_HELP "Verdicts by action, whether the check ran, and team"

typedef struct {
    sl_service_t *svc;
    sl_judge_t *judge;
    sl_router_t *router;
    sl_llm_client_t *llm;
    judge_approvals_t *approvals;       //  calls waiting for a person, or NULL (--approvals-bind off)
    sl_policyset_t *policies;           //  the default and the keys' files, loaded and reloaded
    sl_keywatch_t *keys;                //  the keys file naming them, or NULL
    sl_counter_t *unroutable;
    sl_counter_t *streams_total;        //  stream starts (a re-send starts again)
    sl_counter_t *keepalives;
    sl_teamlabels_t *teams;             //  team labels in use (bounded)
    sl_histo_t *decision_latency;
    sl_counter_t *skew;                 //  streams that named a policy version not kept here
    sl_counter_t *unknown;              //  streams that named a policy file not loaded here
} s_app_t;

static int64_t
s_clock (void *arg)
{
    (void) arg;
    return zclock_usecs ();
}

static void
s_log_verdict (const sl_msg_t *v, const char *team)
{
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (v->sid, hex);
    char p [32] = "";
    if (!isnan (v->probability))
        snprintf (p, sizeof p, " p=%.3f", v->probability);
    char user [SL_TEAMLABEL_TEXT];
    sl_label_safe (v->user.ptr, v->user.len, user, sizeof user);
    sl_log_info ("verdict", "sid=%.8s index=%d tool=%.*s action=%s check=%s rule=%.*s latency_us=%u"
                 " judge=%.*s%s team=%s user=%s mode=%s reason=%.*s", hex, v->index,
                 (int) v->name.len, v->name.ptr ? v->name.ptr : "",
                 sl_action_name (v->action), sl_check_name (v->check),
                 (int) v->rule.len, v->rule.ptr ? v->rule.ptr : "-", v->latency_us,
                 (int) v->judge_model.len, v->judge_model.ptr ? v->judge_model.ptr : "-", p, team,
                 *user ? user : "-", sl_mode_name (v->mode), (int) v->reason.len,
                 v->reason.ptr ? v->reason.ptr : "");
}

//  The series of a would-be verdict (a rule in shadow mode):
//  sluice_verdicts_total with mode="shadow".
static sl_counter_t *
s_shadow_counter (s_app_t *app, int action, int check, const char *team)
{
    char labels [SL_TEAMLABEL_TEXT + 80];
    snprintf (labels, sizeof labels, "action=\"%s\",check=\"%s\",mode=\"shadow\",team=\"%s\"",
              sl_action_name (action), sl_check_name (check), team);
    return sl_metrics_counter (sl_service_metrics (app->svc), "sluice_verdicts_total", labels,
                               JUDGE_VERDICTS_HELP);
}

static void
s_emit (void *arg, const sl_msg_t *msg)
{
    s_app_t *app = arg;
    if (msg->type == SL_MSG_VERDICT && !msg->part.ptr) {
        //  (a request's verdicts were counted and logged by the gateway)
        char team [SL_TEAMLABEL_TEXT];
        sl_teamlabels_get (app->teams, msg->team.ptr, msg->team.len, team, sizeof team);
        if (msg->mode == SL_MODE_SHADOW) {
            //  A would-be verdict: its own series (mode="shadow"), so that
            //  what was enforced is counted as before; its latency is not
            //  the call's.
            if (msg->action < SL_ACT_MAX && msg->check < SL_CHK_MAX)
                sl_counter_inc (s_shadow_counter (app, msg->action, msg->check, team));
        }
        else {
            if (msg->action < SL_ACT_MAX && msg->check < SL_CHK_MAX)
                sl_counter_inc (sl_service_verdict_counter (app->svc, "sluice_verdicts_total",
                                                            JUDGE_VERDICTS_HELP, msg->action, msg->check, team));
            sl_histo_observe (app->decision_latency, msg->latency_us / 1e6);
        }
        s_log_verdict (msg, team);
    }
    if (msg->type == SL_MSG_BLOCK && msg->kind == SL_B_KEEPALIVE)
        sl_counter_inc (app->keepalives);
    if (sl_router_send (app->router, msg))
        sl_counter_inc (app->unroutable);
}

static void
s_flush (void *arg)
{
    sl_router_flush (((s_app_t *) arg)->router);
}

//  Hold credit back from the previous stage while our own output has none.
static bool
s_congested (void *arg)
{
    return sl_router_congested (((s_app_t *) arg)->router);
}

static void
s_on_msg (void *arg, const sl_msg_t *msg, sl_str_t peer)
{
    (void) peer;
    s_app_t *app = arg;
    if (msg->type == SL_MSG_START)
        sl_counter_inc (app->streams_total);
    sl_judge_feed (app->judge, msg, s_emit, app);
    if (msg->type == SL_MSG_START && sl_judge_skew (app->judge) > (uint64_t) app->skew->value) {
        sl_counter_inc (app->skew);
        sl_log_warn ("policy_version_skew", "a stream names policy %.*s, which this judge does not have: "
                     "it runs the current one", (int) msg->policy.len, msg->policy.ptr ? msg->policy.ptr : "");
    }
    if (msg->type == SL_MSG_START && sl_judge_unknown (app->judge) > (uint64_t) app->unknown->value) {
        sl_counter_inc (app->unknown);
        char hex [SL_SID_HEX_SIZE];
        sl_sid_hex (msg->sid, hex);
        sl_log_warn ("policy_unknown", "sid=%.8s names policy %.*s, which this judge does not have: every tool "
                     "call of the stream is blocked", hex, (int) msg->policy_name.len,
                     msg->policy_name.ptr ? msg->policy_name.ptr : "");
    }
}

//  The policy of the file a stream names, for the library.
static sl_policy_t *
s_lookup (void *arg, sl_str_t name)
{
    return sl_policyset_policy (((s_app_t *) arg)->policies, name);
}

//  --------------------------------------------------------------------------
//  LLM judges

static int
s_ask (void *arg, const sl_judge_ask_t *ask)
{
    s_app_t *app = arg;
    if (ask->kind == SL_JUDGE_ASK_PERSON)
        return judge_approvals_ask (app->approvals, ask);
    sl_llm_ask_t a = { .ticket = ask->ticket, .rule = ask->rule, .spec = ask->spec, .body = ask->body };
    return sl_llm_client_ask (app->llm, &a);
}

//  (Tickets are unique in this judge: each side ignores the other's.)
static void
s_cancel (void *arg, uint64_t ticket)
{
    s_app_t *app = arg;
    sl_llm_client_cancel (app->llm, ticket);
    judge_approvals_cancel (app->approvals, ticket);
}

//  --------------------------------------------------------------------------
//  Approvals

//  An approval message for monitoring: to one live emitter, like a
//  policy report (not part of a stream).
static void
s_publish_approval (void *arg, const sl_msg_t *msg)
{
    s_app_t *app = arg;
    if (sl_router_send (app->router, msg) == 0)
        sl_router_flush (app->router);
    else
        sl_counter_inc (app->unroutable);
    sl_router_unpin (app->router, msg->sid);
}

static void
s_approval_outcome (void *arg, uint64_t ticket, const sl_llm_result_t *result)
{
    s_app_t *app = arg;
    sl_judge_llm_done (app->judge, ticket, result, s_emit, app);
    sl_router_flush (app->router);
}

//  --drain-ms passed with calls still waiting for a person: they are
//  blocked now, before the stage ends what it still holds, so that their
//  clients and the records hear why (the judge holding it stopped)
//  rather than only that the stream was cut.
static void
s_approvals_give_up (void *arg)
{
    s_app_t *app = arg;
    judge_approvals_stop (app->approvals);
    sl_router_flush (app->router);
}

static void
s_llm_done (void *arg, uint64_t ticket, const sl_llm_result_t *result)
{
    s_app_t *app = arg;
    sl_judge_llm_done (app->judge, ticket, result, s_emit, app);
}

static int
s_on_tick (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_app_t *app = arg;
    sl_judge_tick (app->judge, s_emit, app);
    sl_router_flush (app->router);
    return 0;
}

//  --------------------------------------------------------------------------
//  The policy

//  Tell monitoring which policies run here (sl_policy_report.h), one
//  report each: to one live emitter, which spools it for the audit.
static void
s_report_one (s_app_t *app, sl_policywatch_t *watch, const char *name)
{
    sl_policy_t *policy = sl_policywatch_policy (watch);
    if (!policy)
        return;                         //  a named file that never loaded: its log says why
    sl_policy_report_t report = {
        .instance = sl_service_name (app->svc),
        .incarnation = sl_service_incarnation (app->svc),
        .loaded_ms = sl_policywatch_loaded_ms (watch),
        .failures = sl_policywatch_failures (watch),
        .last_error = sl_policywatch_last_error (watch),
        .policy_name = name
    };
    sl_msg_t msg;
    sl_policy_report (policy, &report, &msg);
    if (sl_router_send (app->router, &msg) == 0)
        sl_router_flush (app->router);
    sl_router_unpin (app->router, msg.sid);
}

static void
s_report_policy (s_app_t *app)
{
    if (!app->router)
        return;
    s_report_one (app, sl_policyset_default (app->policies), NULL);
    for (size_t i = 0; i < sl_policyset_count (app->policies); i++) {
        const char *name = NULL;
        sl_policywatch_t *watch = sl_policyset_at (app->policies, i, &name);
        s_report_one (app, watch, name);
    }
}

static int
s_on_report (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_report_policy (arg);
    return 0;
}

//  What the "policy_loaded" line says of a policy here.
static void
s_describe (sl_policy_t *policy, sl_buf_t *out)
{
    sl_buf_printf (out, "%d rules, %d with an LLM judge, %d with a decision service id=%s",
                   sl_policy_rule_count (policy), sl_policy_llm_count (policy), sl_policy_decide_count (policy),
                   sl_policy_id (policy));
}

//  After a reload (SIGHUP, file change): new streams start under a policy
//  that loaded (the default's, or a named file's: its version is kept for
//  requests the gateway judged under it); monitoring hears of a refused
//  one too.
static void
s_on_reload (void *arg, const char *name, sl_policy_t *policy, bool loaded)
{
    s_app_t *app = arg;
    if (loaded && !name)
        sl_judge_set_policy (app->judge, policy);
    else
    if (loaded)
        sl_judge_keep (app->judge, policy);
    s_report_policy (app);
}

//  The keys file reloaded: the files it names now are the named policies.
static void
s_on_keys (void *arg, sl_keyring_t *keyring, bool loaded)
{
    s_app_t *app = arg;
    if (loaded)
        sl_policyset_keys (app->policies, keyring);
}

static void
s_health (void *arg, sl_buf_t *out)
{
    s_app_t *app = arg;
    sl_buf_printf (out, ",\"streams\":%zu,\"llm_pending\":%zu,\"approvals_pending\":%zu",
                   sl_judge_streams (app->judge), sl_judge_pending (app->judge),
                   judge_approvals_pending (app->approvals));
}

static double
s_streams (void *arg)
{
    return (double) sl_judge_streams (((s_app_t *) arg)->judge);
}

static double
s_pending (void *arg)
{
    return (double) sl_router_pending (((s_app_t *) arg)->router);
}

static void
s_metrics (s_app_t *app, sl_metrics_t *m)
{
    app->unroutable = sl_metrics_counter (m, "sluice_unroutable_total", NULL,
                                          "Messages with no next-stage instance to go to");
    app->skew = sl_metrics_counter (m, "sluice_policy_version_skew_total", NULL,
                                    "Streams whose request was judged under a policy version this judge "
                                    "does not have (judged under its current one)");
    app->unknown = sl_metrics_counter (m, "sluice_policy_unknown_total", NULL,
                                       "Streams that named a policy file this judge does not have (every tool "
                                       "call blocked)");
    app->keepalives = sl_metrics_counter (m, "sluice_keepalives_total", NULL,
                                          "Keep-alive events sent for held streams");
    //  The series of a stream without a team are there from the start.
    app->teams = sl_teamlabels_new (SL_TEAMLABEL_MAX);
    for (int a = SL_ACT_ALLOW; a < SL_ACT_MAX; a++)
        for (int c = 0; c < SL_CHK_MAX; c++)
            sl_service_verdict_counter (app->svc, "sluice_verdicts_total", JUDGE_VERDICTS_HELP, a, c,
                                        SL_TEAMLABEL_DEFAULT);
    app->decision_latency = sl_metrics_histogram (m, "sluice_verdict_latency_seconds", NULL,
                                                  "Time from a tool call's end to its verdict",
                                                  sl_metrics_latency_bounds, sl_metrics_latency_bounds_count);
    sl_metrics_gauge_fn (m, "sluice_streams_active", NULL, "Streams in progress", s_streams, app);
    app->streams_total = sl_metrics_counter (m, "sluice_streams_total", NULL,
                                             "Streams started (a replayed stream starts again)");
    sl_metrics_gauge_fn (m, "sluice_queue_bytes", "queue=\"emitter\"",
                         "Bytes queued for the next hop, not yet handed to ZeroMQ", s_pending, app);
}

int
main (int argc, char **argv)
{
    const char *bind = "tcp://127.0.0.1:5553";
    const char *next = "tcp://127.0.0.1:5554";
    const char *policy_path = "";
    const char *keys_path = "";
    const char *keepalive = "2000";
    const char *watch = "1000";
    const char *approvals_bind = "tcp://127.0.0.1:5563";
    char default_call_bytes [24];
    snprintf (default_call_bytes, sizeof default_call_bytes, "%u", (unsigned) SL_JUDGE_DEFAULT_MAX_CALL_BYTES);
    const char *max_call_bytes = default_call_bytes;
    const char *max_streams = SL_STAGE_MAX_STREAMS;
    const char *expiry = SL_STAGE_EXPIRY_MS;
    sl_bus_opts_t bus = SL_BUS_OPTS_INIT;
    sl_opt_t opts [] = {
        { "bind", NULL, &bind, "inbox endpoint (blocks from the aggregators)" },
        { "next", NULL, &next, "emitter endpoints, comma-separated" },
        { "policy", "SLUICE_POLICY", &policy_path, "policy file (YAML); none allows every call" },
        { "keys-file", "SLUICE_KEYS_FILE", &keys_path,
          "keys file: the policy files its keys and teams name are loaded too, and each stream runs under "
          "the one its request names" },
        { "approvals-bind", "SLUICE_APPROVALS_BIND", &approvals_bind,
          "control endpoint the gateways and sluice-audit decide approvals through (action ask); off: no "
          "approvals, and a rule that asks a person blocks its calls" },
        { "keepalive-ms", NULL, &keepalive, "keep-alive to the client while a call is held this long (0: off)" },
        { "watch-ms", NULL, &watch, "check the policy and keys files for changes this often (0: only on SIGHUP)" },
        { "max-call-bytes", NULL, &max_call_bytes,
          "argument bytes one tool call may have; a call over it is judged as cut off and never released" },
        { "max-streams", NULL, &max_streams, "streams at once; more are refused (503) (0: no bound)" },
        { "stream-expiry-ms", NULL, &expiry,
          "a stream silent this long is ended with an error (0: never; must exceed the ingest's upstream "
          "deadlines and every LLM judge's timeout)" },
        SL_BUS_OPT_KEYS (bus),
        SL_BUS_OPT_AUTH (bus),
        SL_OPT_END
    };
    int code;
    sl_service_t *svc = sl_service_new ("judge", opts, "9553", argc, argv, &code);
    if (!svc)
        return code;
    long keepalive_ms = sl_opts_long (keepalive), watch_ms = sl_opts_long (watch);
    if (keepalive_ms < 0 || watch_ms < 0) {
        sl_log_error ("bad_option", "--keepalive-ms and --watch-ms must be non-negative integers");
        sl_service_destroy (&svc);
        return 2;
    }
    long call_bytes = sl_opts_long (max_call_bytes);
    if (call_bytes <= 0) {
        sl_log_error ("bad_option", "--max-call-bytes must be a positive integer");
        sl_service_destroy (&svc);
        return 2;
    }
    size_t streams_bound;
    int64_t expiry_ms;
    if (!sl_stage_stream_opts (max_streams, expiry, &streams_bound, &expiry_ms)) {
        sl_service_destroy (&svc);
        return 2;
    }
    s_app_t app = { .svc = svc };
    app.policies = sl_policyset_new (svc, policy_path, watch_ms, s_describe);
    if (app.policies && *keys_path) {
        app.keys = sl_keywatch_new (svc, keys_path, NULL, watch_ms);
        if (app.keys)
            sl_policyset_keys (app.policies, sl_keywatch_keyring (app.keys));
    }
    if (!app.policies || (*keys_path && !app.keys) || sl_service_start_bus (svc, &bus, "judge")) {
        sl_keywatch_destroy (&app.keys);
        sl_policyset_destroy (&app.policies);
        sl_service_destroy (&svc);
        return 2;
    }
    sl_policy_t *policy = sl_policyset_policy (app.policies, SL_STR_NULL);
    zloop_t *loop = sl_service_loop (svc);
    sl_metrics_t *m = sl_service_metrics (svc);
    s_metrics (&app, m);
    app.judge = sl_judge_new (policy);
    app.router = sl_router_new (loop, sl_service_name (svc), sl_service_incarnation (svc));
    sl_router_set_metrics (app.router, m, "emitter");
    sl_service_watch_hop (svc, app.router);
    app.llm = sl_llm_client_new (loop, m, s_llm_done, s_flush, &app);
    //  A control socket that cannot be bound stops the judge (exit 2).
    bool approvals_up = strcmp (approvals_bind, "off") == 0
                     || (app.approvals = judge_approvals_new (svc, approvals_bind, s_publish_approval,
                                                              s_approval_outcome, &app)) != NULL;
    sl_judge_set_llm (app.judge, s_ask, s_cancel, &app);
    sl_judge_set_clock (app.judge, s_clock, NULL);
    sl_judge_set_keepalive (app.judge, keepalive_ms * 1000);
    sl_judge_set_max_call_bytes (app.judge, (size_t) call_bytes);
    {
        //  Ticks drive both keep-alives: the client's and the liveness one.
        long period = SL_JUDGE_LIVENESS_US / 1000;
        if (keepalive_ms > 0 && keepalive_ms < period)
            period = keepalive_ms;
        long tick = period / 4 > JUDGE_TICK_MIN_MS ? period / 4 : JUDGE_TICK_MIN_MS;
        zloop_timer (loop, (size_t) tick, 0, s_on_tick, &app);
    }
    zloop_timer (loop, SL_POLICY_REPORT_MS, 0, s_on_report, &app);
    sl_judge_set_lookup (app.judge, s_lookup, &app);
    sl_policyset_on_reload (app.policies, s_on_reload, &app);
    if (app.keys)
        sl_keywatch_on_reload (app.keys, s_on_keys, &app);
    sl_service_on_health (svc, s_health, &app);
    sl_stage_t *stage = NULL;
    if (approvals_up
    &&  sl_router_set_bus (app.router, sl_service_bus (svc), "emitter") == 0
    &&  sl_router_connect (app.router, next) == 0)
        stage = sl_stage_new (svc, bind, s_on_msg, s_flush, &app);
    if (stage) {
        sl_stage_set_congestion (stage, s_congested, &app);
        sl_stage_relay_losses (stage, app.router);
        sl_stage_track_streams (stage, streams_bound, expiry_ms);
        //  Drainers give up in the order they were added: the approvals
        //  first, then the stage's streams.
        sl_service_on_drain (svc, NULL, NULL, s_approvals_give_up, &app);
        sl_stage_drain_with (stage, app.router, NULL, NULL);
    }
    int rc = stage ? sl_service_run (svc) : approvals_up ? 1 : 2;
    //  Calls still waiting for a person fail and are blocked (never
    //  on_timeout's to decide: this is no timeout), and the notices go
    //  out before the judge does.
    judge_approvals_stop (app.approvals);
    sl_router_flush (app.router);
    sl_stage_destroy (&stage);
    judge_approvals_destroy (&app.approvals);
    sl_llm_client_destroy (&app.llm);
    sl_router_destroy (&app.router);
    sl_judge_destroy (&app.judge);
    sl_keywatch_destroy (&app.keys);
    sl_policyset_destroy (&app.policies);
    sl_teamlabels_destroy (&app.teams);
    sl_service_destroy (&svc);
    return rc;
}
