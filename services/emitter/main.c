/*  sluice-emitter - renders judged streams for the client, publishes taps.

    Binds its inbox (judged events from the judges), renders frames with the
    emitter library and sends each to the gateway that owns the stream (the
    endpoint in the stream's start). Every event it receives is published
    on its PUB socket under the topic "<type>.<sid-hex>" for sluice-tap and
    other monitoring subscribers, in the order received: the stream's
    start (the request summary: model, dialects, tools), its blocks, the
    verdicts, the finish with its usage, errors, the end. Events the
    emitter itself raises (an illegal event withheld) are published too.

    Published messages are the stage's protocol messages: start carries no
    credential (the ingest keeps the client's key to itself) and the
    request headers in it never include credential headers.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../common/sl_log.h"
#include "../../common/sl_router.h"
#include "../../common/sl_service.h"
#include "../../common/sl_stage.h"
#include "sl_emitter.h"

typedef struct {
    sl_emitter_t *emitter;
    sl_metrics_t *metrics;
    sl_router_t *gateways;
    zsock_t *pub;                       //  XPUB: we see what taps subscribe to
    int subscriptions;                  //  distinct topics subscribed to; 0: publish nothing
    sl_buf_t tap;
    sl_counter_t *unroutable;
    sl_counter_t *published;
    sl_counter_t *tap_dropped;
    //  Copies of the library's running totals (sl_emitter_stats)
    sl_counter_t *streams_total;
    sl_counter_t *events_out;
    sl_counter_t *frames;
    sl_counter_t *illegal;
    sl_counter_t *dropped;
    sl_counter_t *http_errors;
} s_app_t;

static void s_publish (s_app_t *app, const sl_msg_t *msg);

//  Count a stream's error by the HTTP status it carries and by where it
//  came from: the upstream provider (or the way to it), or sluice itself
//  (a judge's terminate, a response over the limits, output withheld).
static void
s_count_error (s_app_t *app, const sl_msg_t *msg)
{
    bool upstream = (msg->flags & SL_F_UPSTREAM)
                 || (msg->code.len > 9 && memcmp (msg->code.ptr, "upstream_", 9) == 0);
    char labels [64];
    if (msg->status >= 100 && msg->status <= 599)
        snprintf (labels, sizeof labels, "source=\"%s\",status=\"%d\"", upstream ? "upstream" : "sluice",
                  msg->status);
    else
        snprintf (labels, sizeof labels, "source=\"%s\",status=\"none\"", upstream ? "upstream" : "sluice");
    sl_counter_inc (sl_metrics_counter (app->metrics, "sluice_stream_errors_total", labels,
                                        "Streams ended by an error, by its source and HTTP status"));
}

static void
s_emit (void *arg, const sl_msg_t *msg)
{
    s_app_t *app = arg;
    if (msg->type != SL_MSG_FRAME) {
        if (msg->type == SL_MSG_ERROR)
            s_count_error (app, msg);
        s_publish (app, msg);           //  the emitter's own events: monitoring only
        return;
    }
    sl_msg_t frame = *msg;
    frame.reply_to = SL_STR_NULL;       //  routing only; not on the wire
    if (!msg->reply_to.ptr || sl_router_send_to (app->gateways, msg->reply_to, &frame))
        sl_counter_inc (app->unroutable);
}

static void
s_publish (s_app_t *app, const sl_msg_t *msg)
{
    if (app->subscriptions <= 0)
        return;                         //  no tap listens: no work for nobody
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
    else
        sl_counter_inc (app->tap_dropped);
}

static void
s_on_msg (void *arg, const sl_msg_t *msg, sl_str_t peer)
{
    (void) peer;
    s_app_t *app = arg;
    if (msg->type == SL_MSG_ERROR)
        s_count_error (app, msg);
    s_publish (app, msg);
    sl_emitter_feed (app->emitter, msg, s_emit, app);
}

//  Subscriptions and unsubscriptions from taps: ZeroMQ passes each topic
//  on once (subscribe: 1, then the prefix) and its end when the last
//  subscriber to it leaves (0, then the prefix).
static int
s_on_subscription (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    s_app_t *app = arg;
    for (int n = 0; n < 64; n++) {
        zmq_msg_t frame;
        zmq_msg_init (&frame);
        if (zmq_msg_recv (&frame, zsock_resolve (reader), ZMQ_DONTWAIT) < 0) {
            zmq_msg_close (&frame);
            break;
        }
        const uint8_t *data = zmq_msg_data (&frame);
        if (zmq_msg_size (&frame) >= 1) {
            if (data [0] == 1)
                app->subscriptions++;
            else
            if (data [0] == 0 && app->subscriptions > 0)
                app->subscriptions--;
        }
        zmq_msg_close (&frame);
    }
    return 0;
}

static double
s_subscriptions (void *arg)
{
    return (double) ((s_app_t *) arg)->subscriptions;
}

static int64_t
s_clock (void *arg)
{
    (void) arg;
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
s_flush (void *arg)
{
    s_app_t *app = arg;
    sl_router_flush (app->gateways);
    const sl_emitter_stats_t *st = sl_emitter_stats (app->emitter);
    app->streams_total->value = st->streams;
    app->events_out->value = st->events_out;
    app->frames->value = st->frames;
    app->illegal->value = st->illegal;
    app->dropped->value = st->dropped;
    app->http_errors->value = st->http_errors;
}

//  Hold credit back from the previous stage while our own output has none.
static bool
s_congested (void *arg)
{
    return sl_router_congested (((s_app_t *) arg)->gateways);
}

static double
s_pending (void *arg)
{
    return (double) sl_router_pending (((s_app_t *) arg)->gateways);
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
    const char *max_streams = SL_STAGE_MAX_STREAMS;
    const char *expiry = SL_STAGE_EXPIRY_MS;
    sl_opt_t opts [] = {
        { "bind", NULL, &bind, "inbox endpoint (judged events from the judges)" },
        { "pub", NULL, &pub, "PUB endpoint for taps and monitoring" },
        { "max-streams", NULL, &max_streams, "streams at once; more are refused (503) (0: no bound)" },
        { "stream-expiry-ms", NULL, &expiry,
          "a stream silent this long is ended with an error (0: never; must exceed the ingest's upstream deadlines)" },
        SL_OPT_END
    };
    int code;
    sl_service_t *svc = sl_service_new ("emitter", opts, "9554", argc, argv, &code);
    if (!svc)
        return code;
    size_t streams_bound;
    int64_t expiry_ms;
    if (!sl_stage_stream_opts (max_streams, expiry, &streams_bound, &expiry_ms)) {
        sl_service_destroy (&svc);
        return 2;
    }
    s_app_t app = { 0 };
    app.emitter = sl_emitter_new ();
    sl_emitter_set_clock (app.emitter, s_clock, NULL);
    app.gateways = sl_router_new (sl_service_loop (svc), sl_service_name (svc),
                                  sl_service_incarnation (svc));
    sl_metrics_t *m = sl_service_metrics (svc);
    app.metrics = m;
    sl_router_set_metrics (app.gateways, m, "gateway");
    sl_router_watch_health (app.gateways, svc);
    app.unroutable = sl_metrics_counter (m, "sluice_unroutable_total", NULL,
                                         "Frames whose gateway could not be reached");
    app.published = sl_metrics_counter (m, "sluice_tap_published_total", NULL,
                                        "Events published to monitoring subscribers");
    app.tap_dropped = sl_metrics_counter (m, "sluice_tap_dropped_total", NULL,
                                          "Events not published (no room for a slow subscriber)");
    app.streams_total = sl_metrics_counter (m, "sluice_streams_total", NULL, "Streams started");
    app.events_out = sl_metrics_counter (m, "sluice_events_out_total", NULL,
                                         "Events (SSE events or whole bodies) sent to clients");
    app.frames = sl_metrics_counter (m, "sluice_frames_total", NULL, "Frames sent to gateways");
    app.illegal = sl_metrics_counter (m, "sluice_illegal_events_total", NULL,
                                      "Events withheld as illegal for the client's dialect");
    app.dropped = sl_metrics_counter (m, "sluice_dropped_events_total", NULL,
                                      "Messages dropped: unknown stream or stale epoch");
    app.http_errors = sl_metrics_counter (m, "sluice_http_error_responses_total", NULL,
                                          "Responses that were an HTTP error (nothing streamed)");
    sl_metrics_gauge_fn (m, "sluice_streams_active", NULL, "Streams in progress", s_streams, &app);
    sl_metrics_gauge_fn (m, "sluice_queue_bytes", "queue=\"gateway\"",
                         "Bytes queued for the next hop, not yet handed to ZeroMQ", s_pending, &app);
    sl_metrics_gauge_fn (m, "sluice_tap_subscriptions", NULL,
                         "Distinct topics taps subscribe to (0: events are not published)", s_subscriptions, &app);
    app.pub = zsock_new (ZMQ_XPUB);
    sl_stage_t *stage = NULL;
    if (zsock_bind (app.pub, "%s", pub) < 0)
        sl_log_error ("bind_failed", "cannot bind %s", pub);
    else {
        sl_log_info ("pub_bound", "endpoint=%s", zsock_endpoint (app.pub));
        zloop_reader (sl_service_loop (svc), app.pub, s_on_subscription, &app);
        stage = sl_stage_new (svc, bind, s_on_msg, s_flush, &app);
        if (stage) {
            sl_stage_set_congestion (stage, s_congested, &app);
            sl_stage_track_streams (stage, streams_bound, expiry_ms);
        }
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
