/*  sluice-aggregator - turns provider deltas into blocks.

    Binds its inbox (deltas from the ingest instances), feeds every message
    to the aggregator library and routes the block events to the judges.
*/
#include <stdlib.h>

#include "../../common/sl_log.h"
#include "../../common/sl_router.h"
#include "../../common/sl_service.h"
#include "../../common/sl_stage.h"
#include "sl_agg.h"

typedef struct {
    sl_agg_t *agg;
    sl_router_t *router;
    sl_counter_t *unroutable;
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
    sl_agg_feed (app->agg, msg, s_emit, app);
}

static void
s_flush (void *arg)
{
    sl_router_flush (((s_app_t *) arg)->router);
}

static double
s_streams (void *arg)
{
    return (double) sl_agg_streams (((s_app_t *) arg)->agg);
}

int
main (int argc, char **argv)
{
    const char *bind = "tcp://127.0.0.1:5552";
    const char *next = "tcp://127.0.0.1:5553";
    sl_opt_t opts [] = {
        { "bind", NULL, &bind, "inbox endpoint (deltas from the ingest)" },
        { "next", NULL, &next, "judge endpoints, comma-separated" },
        SL_OPT_END
    };
    int code;
    sl_service_t *svc = sl_service_new ("aggregator", opts, "9552", argc, argv, &code);
    if (!svc)
        return code;
    s_app_t app = { 0 };
    app.agg = sl_agg_new ();
    app.router = sl_router_new (sl_service_loop (svc), sl_service_name (svc),
                                sl_service_incarnation (svc));
    sl_metrics_t *m = sl_service_metrics (svc);
    sl_router_set_metrics (app.router, m, "judge");
    app.unroutable = sl_metrics_counter (m, "sluice_unroutable_total", NULL,
                                         "Messages with no next-stage instance to go to");
    sl_metrics_gauge_fn (m, "sluice_streams_active", NULL, "Streams in progress", s_streams, &app);
    sl_stage_t *stage = NULL;
    if (sl_router_connect (app.router, next) == 0)
        stage = sl_stage_new (svc, bind, s_on_msg, s_flush, &app);
    int rc = stage ? sl_service_run (svc) : 1;
    sl_stage_destroy (&stage);
    sl_router_destroy (&app.router);
    sl_agg_destroy (&app.agg);
    sl_service_destroy (&svc);
    return rc;
}
