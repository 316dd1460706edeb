/*  sluice-emitter - renders judged streams for the client, publishes taps.

    Binds its inbox (judged events from the judges), renders frames with the
    emitter library and sends each to the gateway that owns the stream (the
    endpoint in the stream's start). Every event it receives is published
    on its PUB socket under the topic "<type>.<sid-hex>" for sluice-tap and
    other monitoring subscribers.
*/
#include <stdlib.h>

#include "../../common/sl_log.h"
#include "../../common/sl_router.h"
#include "../../common/sl_service.h"
#include "../../common/sl_stage.h"
#include "sl_emitter.h"

typedef struct {
    sl_emitter_t *emitter;
    sl_router_t *gateways;
    zsock_t *pub;
    sl_buf_t tap;
    sl_counter_t *unroutable;
    sl_counter_t *published;
} s_app_t;

static void
s_emit (void *arg, const sl_msg_t *msg)
{
    s_app_t *app = arg;
    sl_msg_t frame = *msg;
    frame.reply_to = SL_STR_NULL;       //  routing only; not on the wire
    if (!msg->reply_to.ptr || sl_router_send_to (app->gateways, msg->reply_to, &frame))
        sl_counter_inc (app->unroutable);
}

static void
s_publish (s_app_t *app, const sl_msg_t *msg)
{
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (msg->sid, hex);
    char topic [64];
    int n = snprintf (topic, sizeof topic, "%s.%s", sl_msg_type_name (msg->type), hex);
    sl_buf_reset (&app->tap);
    sl_msg_encode (msg, &app->tap);
    void *sock = zsock_resolve (app->pub);
    //  PUB never blocks: a slow subscriber loses tap messages, not the stream.
    if (zmq_send (sock, topic, (size_t) n, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0
    &&  zmq_send (sock, app->tap.data, app->tap.len, ZMQ_DONTWAIT) >= 0)
        sl_counter_inc (app->published);
}

static void
s_on_msg (void *arg, const sl_msg_t *msg, sl_str_t peer)
{
    (void) peer;
    s_app_t *app = arg;
    s_publish (app, msg);
    sl_emitter_feed (app->emitter, msg, s_emit, app);
}

static void
s_flush (void *arg)
{
    sl_router_flush (((s_app_t *) arg)->gateways);
}

static double
s_streams (void *arg)
{
    return (double) sl_emitter_streams (((s_app_t *) arg)->emitter);
}

int
main (int argc, char **argv)
{
    const char *bind = "tcp://127.0.0.1:5554";
    const char *pub = "tcp://127.0.0.1:5556";
    sl_opt_t opts [] = {
        { "bind", NULL, &bind, "inbox endpoint (judged events from the judges)" },
        { "pub", NULL, &pub, "PUB endpoint for taps and monitoring" },
        SL_OPT_END
    };
    int code;
    sl_service_t *svc = sl_service_new ("emitter", opts, "9554", argc, argv, &code);
    if (!svc)
        return code;
    s_app_t app = { 0 };
    app.emitter = sl_emitter_new ();
    app.gateways = sl_router_new (sl_service_loop (svc), sl_service_name (svc),
                                  sl_service_incarnation (svc));
    sl_metrics_t *m = sl_service_metrics (svc);
    sl_router_set_metrics (app.gateways, m, "gateway");
    app.unroutable = sl_metrics_counter (m, "sluice_unroutable_total", NULL,
                                         "Frames whose gateway could not be reached");
    app.published = sl_metrics_counter (m, "sluice_tap_published_total", NULL,
                                        "Events published to monitoring subscribers");
    sl_metrics_gauge_fn (m, "sluice_streams_active", NULL, "Streams in progress", s_streams, &app);
    app.pub = zsock_new (ZMQ_PUB);
    sl_stage_t *stage = NULL;
    if (zsock_bind (app.pub, "%s", pub) < 0)
        sl_log_error ("bind_failed", "cannot bind %s", pub);
    else {
        sl_log_info ("pub_bound", "endpoint=%s", zsock_endpoint (app.pub));
        stage = sl_stage_new (svc, bind, s_on_msg, s_flush, &app);
    }
    int rc = stage ? sl_service_run (svc) : 1;
    sl_stage_destroy (&stage);
    zsock_destroy (&app.pub);
    sl_router_destroy (&app.gateways);
    sl_emitter_destroy (&app.emitter);
    sl_buf_free (&app.tap);
    sl_service_destroy (&svc);
    return rc;
}
