/*  sluice-aggregator - turns provider deltas into blocks.

    Binds its inbox (deltas from the ingest instances), feeds every message
    to the aggregator library and routes the block events to the judges.
    --max-blocks and --max-bytes bound each stream (see sl_agg.h).
*/
#include <stdio.h>
#include <stdlib.h>

#include "common/base/sl_log.h"
#include "common/bus/sl_router.h"
#include "common/service/sl_service.h"
#include "common/service/sl_stage.h"
#include "common/stages/sl_agg.h"

typedef struct {
    sl_agg_t *agg;
    sl_router_t *router;
    sl_counter_t *unroutable;
    sl_counter_t *streams_total;        //  stream starts (a re-send starts again)
    sl_counter_t *too_large;            //  mirrors of the library's counts
    sl_counter_t *ignored;
    sl_counter_t *dropped;
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
    if (msg->type == SL_MSG_START)
        sl_counter_inc (app->streams_total);
    sl_agg_feed (app->agg, msg, s_emit, app);
    app->too_large->value = sl_agg_too_large (app->agg);
    app->ignored->value = sl_agg_ignored (app->agg);
    app->dropped->value = sl_agg_dropped (app->agg);
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

static double
s_streams (void *arg)
{
    return (double) sl_agg_streams (((s_app_t *) arg)->agg);
}

static double
s_pending (void *arg)
{
    return (double) sl_router_pending (((s_app_t *) arg)->router);
}

int
main (int argc, char **argv)
{
    const char *bind = "tcp://127.0.0.1:5552";
    const char *next = "tcp://127.0.0.1:5553";
    char default_blocks [32], default_bytes [32];
    snprintf (default_blocks, sizeof default_blocks, "%u", (unsigned) SL_AGG_DEFAULT_MAX_BLOCKS);
    snprintf (default_bytes, sizeof default_bytes, "%u", (unsigned) SL_AGG_DEFAULT_MAX_BYTES);
    const char *max_blocks = default_blocks;
    const char *max_bytes = default_bytes;
    const char *max_streams = SL_STAGE_MAX_STREAMS;
    const char *expiry = SL_STAGE_EXPIRY_MS;
    sl_bus_opts_t bus = SL_BUS_OPTS_INIT;
    sl_opt_t opts [] = {
        { "bind", NULL, &bind, "inbox endpoint (deltas from the ingest)" },
        { "next", NULL, &next, "judge endpoints, comma-separated" },
        { "max-blocks", NULL, &max_blocks, "most blocks one response may have" },
        { "max-bytes", NULL, &max_bytes, "most content bytes one response may carry" },
        { "max-streams", NULL, &max_streams, "streams at once; more are refused (503) (0: no bound)" },
        { "stream-expiry-ms", NULL, &expiry,
          "a stream silent this long is ended with an error (0: never; must exceed the ingest's upstream deadlines)" },
        SL_BUS_OPT_KEYS (bus),
        SL_BUS_OPT_AUTH (bus),
        SL_OPT_END
    };
    int code;
    sl_service_t *svc = sl_service_new ("aggregator", opts, "9552", argc, argv, &code);
    if (!svc)
        return code;
    size_t streams_bound;
    int64_t expiry_ms;
    if (sl_opts_long (max_blocks) <= 0 || sl_opts_long (max_bytes) <= 0) {
        sl_log_error ("bad_option", "--max-blocks and --max-bytes must be positive integers");
        sl_service_destroy (&svc);
        return 2;
    }
    if (!sl_stage_stream_opts (max_streams, expiry, &streams_bound, &expiry_ms)) {
        sl_service_destroy (&svc);
        return 2;
    }
    if (sl_service_start_bus (svc, &bus, "aggregator")) {
        sl_service_destroy (&svc);
        return 2;
    }
    s_app_t app = { 0 };
    app.agg = sl_agg_new ();
    sl_agg_set_limits (app.agg, (size_t) sl_opts_long (max_blocks), (size_t) sl_opts_long (max_bytes));
    app.router = sl_router_new (sl_service_loop (svc), sl_service_name (svc),
                                sl_service_incarnation (svc));
    sl_metrics_t *m = sl_service_metrics (svc);
    sl_router_set_metrics (app.router, m, "judge");
    sl_service_watch_hop (svc, app.router);
    app.unroutable = sl_metrics_counter (m, "sluice_unroutable_total", NULL,
                                         "Messages with no next-stage instance to go to");
    sl_metrics_gauge_fn (m, "sluice_streams_active", NULL, "Streams in progress", s_streams, &app);
    app.streams_total = sl_metrics_counter (m, "sluice_streams_total", NULL,
                                            "Streams started (a replayed stream starts again)");
    sl_metrics_gauge_fn (m, "sluice_queue_bytes", "queue=\"judge\"",
                         "Bytes queued for the next hop, not yet handed to ZeroMQ", s_pending, &app);
    app.too_large = sl_metrics_counter (m, "sluice_streams_too_large_total", NULL,
                                        "Streams ended for going over --max-blocks or --max-bytes");
    app.ignored = sl_metrics_counter (m, "sluice_deltas_ignored_total", NULL,
                                      "Deltas that changed nothing (after the end, stops of unopened blocks)");
    app.dropped = sl_metrics_counter (m, "sluice_messages_dropped_total", NULL,
                                      "Messages of unknown streams, stale epochs or duplicate starts");
    sl_stage_t *stage = NULL;
    if (sl_router_set_bus (app.router, sl_service_bus (svc), "judge") == 0
    &&  sl_router_connect (app.router, next) == 0)
        stage = sl_stage_new (svc, bind, s_on_msg, s_flush, &app);
    if (stage) {
        sl_stage_set_congestion (stage, s_congested, &app);
        sl_stage_relay_losses (stage, app.router);
        sl_stage_track_streams (stage, streams_bound, expiry_ms);
        sl_stage_drain_with (stage, app.router, NULL, NULL);
    }
    int rc = stage ? sl_service_run (svc) : 1;
    sl_stage_destroy (&stage);
    sl_router_destroy (&app.router);
    sl_agg_destroy (&app.agg);
    sl_service_destroy (&svc);
    return rc;
}
