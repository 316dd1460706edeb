/*  sluice-judge - holds tool calls, applies the policy, releases or replaces.

    Binds its inbox (block events from the aggregators), feeds them to the
    judge library and routes the judged stream to the emitters. On SIGHUP
    the policy file is read again; a bad file is reported and the running
    policy stays.
*/
#include <stdlib.h>

#include "../../common/sl_log.h"
#include "../../common/sl_router.h"
#include "../../common/sl_service.h"
#include "../../common/sl_stage.h"
#include "sl_judge.h"

typedef struct {
    sl_judge_t *judge;
    sl_router_t *router;
    const char *policy_path;
    sl_counter_t *unroutable;
    sl_counter_t *reloads_failed;
} s_app_t;

static void
s_emit (void *arg, const sl_msg_t *msg)
{
    s_app_t *app = arg;
    if (sl_router_send (app->router, msg))
        sl_counter_inc (app->unroutable);
}

static void
s_on_msg (void *arg, const sl_msg_t *msg, sl_str_t peer)
{
    (void) peer;
    s_app_t *app = arg;
    sl_judge_feed (app->judge, msg, s_emit, app);
}

static void
s_flush (void *arg)
{
    sl_router_flush (((s_app_t *) arg)->router);
}

static double
s_streams (void *arg)
{
    return (double) sl_judge_streams (((s_app_t *) arg)->judge);
}

//  Load the policy named on the command line (allow-all when none).
static sl_policy_t *
s_load_policy (const char *path)
{
    if (!path || !*path)
        return sl_policy_allow_all ();
    char *error = NULL;
    sl_policy_t *policy = sl_policy_load (path, &error);
    if (!policy) {
        sl_log_error ("policy_invalid", "%s", error);
        free (error);
    }
    return policy;
}

static void
s_reload (void *arg)
{
    s_app_t *app = arg;
    sl_policy_t *policy = s_load_policy (app->policy_path);
    if (!policy) {
        sl_counter_inc (app->reloads_failed);
        sl_log_warn ("policy_kept", "the running policy stays in force");
        return;
    }
    sl_judge_set_policy (app->judge, policy);
    sl_log_info ("policy_loaded", "%s: %d rules", sl_policy_name (policy), sl_policy_rule_count (policy));
    sl_policy_unref (&policy);
}

int
main (int argc, char **argv)
{
    const char *bind = "tcp://127.0.0.1:5553";
    const char *next = "tcp://127.0.0.1:5554";
    const char *policy_path = "";
    sl_opt_t opts [] = {
        { "bind", NULL, &bind, "inbox endpoint (blocks from the aggregators)" },
        { "next", NULL, &next, "emitter endpoints, comma-separated" },
        { "policy", "SLUICE_POLICY", &policy_path, "policy file (YAML); none allows every call" },
        SL_OPT_END
    };
    int code;
    sl_service_t *svc = sl_service_new ("judge", opts, "9553", argc, argv, &code);
    if (!svc)
        return code;
    sl_policy_t *policy = s_load_policy (policy_path);
    if (!policy) {
        sl_service_destroy (&svc);
        return 2;
    }
    sl_log_info ("policy_loaded", "%s: %d rules", sl_policy_name (policy), sl_policy_rule_count (policy));
    s_app_t app = { 0 };
    app.policy_path = policy_path;
    app.judge = sl_judge_new (policy);
    sl_policy_unref (&policy);
    app.router = sl_router_new (sl_service_loop (svc), sl_service_name (svc),
                                sl_service_incarnation (svc));
    sl_metrics_t *m = sl_service_metrics (svc);
    sl_router_set_metrics (app.router, m, "emitter");
    app.unroutable = sl_metrics_counter (m, "sluice_unroutable_total", NULL,
                                         "Messages with no next-stage instance to go to");
    app.reloads_failed = sl_metrics_counter (m, "sluice_policy_reload_failures_total", NULL,
                                             "Policy reloads rejected (the old policy stayed)");
    sl_metrics_gauge_fn (m, "sluice_streams_active", NULL, "Streams in progress", s_streams, &app);
    sl_service_on_reload (svc, s_reload, &app);
    sl_stage_t *stage = NULL;
    if (sl_router_connect (app.router, next) == 0)
        stage = sl_stage_new (svc, bind, s_on_msg, s_flush, &app);
    int rc = stage ? sl_service_run (svc) : 1;
    sl_stage_destroy (&stage);
    sl_router_destroy (&app.router);
    sl_judge_destroy (&app.judge);
    sl_service_destroy (&svc);
    return rc;
}
