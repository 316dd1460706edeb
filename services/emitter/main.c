/*  sluice-emitter - renders judged streams for the client, publishes taps.

    Binds its inbox (judged events from the judges), renders frames with the
    emitter library and sends each to the gateway that owns the stream: the
    gateway instance named in the stream's start (`rt`), among the gateways
    of --gateways, each connected with the gateway's public key and known by
    the name it announces in its heartbeats. It never connects to an
    address read from a message; frames for a name no gateway answers to are
    dropped and counted (sluice_frames_unroutable_total).

    Every event it receives is published on its PUB socket (--pub) under
    the topic "<type>.<sid-hex>" for sluice-tap and other monitoring
    subscribers, in the order received: the stream's start (the request
    summary: model, dialects, tools), its blocks, the verdicts, the finish
    with its usage, errors, the end. Events the emitter itself raises (an
    illegal event withheld; a usage estimated from bytes when the upstream
    reported none, as a "message" flagged ESTIMATED) are published too. Only tap keys with access
    "full" may subscribe there (ZAP domain "tap"). A second PUB socket
    (--pub-meta, ZAP domain "tap-meta", every tap key) carries the same
    events through sl_meta_strip: no text, no arguments, no prompt. Each is
    encoded only while someone subscribes to it.

    Two sockets, rather than one XPUB in manual mode that rewrites a
    metadata key's subscriptions (telling keys apart by the User-Id of each
    subscription): libzmq 4.3 applies a manual subscription to "the pipe of
    the last subscription read", and a subscriber that sends anything that
    is not a subscription puts that bookkeeping one message out of step, so
    a full tap's subscription can land on a metadata tap's pipe. With two
    sockets, which feed a key may read is decided by ZAP alone.

    Published messages are the stage's protocol messages: start carries no
    credential (the ingest keeps the client's key to itself) and the
    request headers in it never include credential headers.

    With SLUICE_OTLP_ENDPOINT set, every traced stream (its start carries
    a sampled "tc") is also reported as OpenTelemetry spans: the stream's
    and one per verdict (common/stages/sl_genai.h), exported over OTLP
    (common/otel/sl_otlp.h) from this reactor, never holding a stream up.

    With --audit, what the audit store needs is also spooled and sent to
    sluice-audit over an acknowledged link (audit_link.h): a PUB socket
    drops what a subscriber that is down or slow does not take.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/sl_log.h"
#include "common/base/sl_ratelimit.h"
#include "common/bus/sl_router.h"
#include "common/stages/sl_genai.h"
#include "common/otel/sl_otlp.h"
#include "common/otel/sl_trace.h"
#include "common/service/sl_service.h"
#include "common/service/sl_stage.h"
#include "services/emitter/audit_link.h"
#include "common/stages/sl_spool.h"
#include "common/stages/sl_emitter.h"
#include "services/emitter/sl_meta.h"

#define EMITTER_UNROUTABLE_LOG_BURST 5          //  unroutable lines logged per window
#define EMITTER_UNROUTABLE_LOG_WINDOW_MS 10000
#define EMITTER_TRACE_EXPIRY_MS 60000           //  how often traced streams that never ended are looked for

//  One PUB socket for taps: XPUB, so that we see what taps subscribe to.
typedef struct {
    zsock_t *sock;
    int subscriptions;                  //  distinct topics subscribed to; 0: publish nothing
} s_feed_t;

typedef struct {
    sl_emitter_t *emitter;
    sl_metrics_t *metrics;
    sl_router_t *gateways;
    s_feed_t full;                      //  --pub: every event, whole
    s_feed_t meta;                      //  --pub-meta: metadata only
    sl_buf_t tap;
    sl_buf_t meta_scratch;              //  what a stripped event points into
    sl_counter_t *unroutable;
    sl_ratelimit_t unroutable_log;
    sl_counter_t *published;
    sl_counter_t *tap_dropped;
    //  Copies of the library's running totals (sl_emitter_stats)
    sl_counter_t *streams_total;
    sl_counter_t *events_out;
    sl_counter_t *frames;
    sl_counter_t *illegal;
    sl_counter_t *dropped;
    //  Traces (NULL when SLUICE_OTLP_ENDPOINT is unset)
    sl_otlp_config_t otlp_config;
    sl_otlp_t *otlp;
    sl_genai_t *genai;
    sl_counter_t *trace_streams;
    sl_counter_t *trace_untraced;
    sl_counter_t *trace_expired;
    sl_counter_t *http_errors;
    sl_counter_t *translated;
    sl_counter_t *translation_dropped;
    audit_link_t *audit;                //  --audit: records for the audit store, NULL when off
} s_app_t;

static void s_publish (s_app_t *app, const sl_msg_t *msg);

//  Frames no gateway of that name took: dropped, counted, logged (rate-limited).
static void
s_unroutable (s_app_t *app, const char *name, size_t frames)
{
    sl_counter_add (app->unroutable, frames);
    uint32_t held;
    if (sl_ratelimit_allow (&app->unroutable_log, zclock_mono (), &held))
        sl_log_warn ("frames_unroutable", "gateway=%s frames=%zu: no live gateway of that name "
                     "(and %u more not logged)", *name ? name : "-", frames, held);
}

static void
s_on_unroutable (void *arg, const char *name, size_t messages)
{
    s_unroutable (arg, name, messages);
}

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

//  The upstream reported no usage and the library estimated it on the
//  stream's LAST frame: the audit store and the taps learn it as a
//  "message" event of the emitter's own carrying only that usage, flagged
//  ESTIMATED (a frame goes to the gateway alone).
static void
s_estimated (s_app_t *app, const sl_msg_t *frame)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_BLOCK);
    memcpy (m.sid, frame->sid, SL_SID_SIZE);
    m.epoch = frame->epoch;
    m.seq = frame->seq;
    m.kind = SL_B_MESSAGE;
    m.flags = SL_F_ESTIMATED;
    m.has_usage = true;
    m.usage = frame->usage;
    s_publish (app, &m);
    audit_link_own (app->audit, &m);
}

static void
s_emit (void *arg, const sl_msg_t *msg)
{
    s_app_t *app = arg;
    if (msg->type != SL_MSG_FRAME) {
        if (msg->type == SL_MSG_ERROR)
            s_count_error (app, msg);
        s_publish (app, msg);           //  the emitter's own events: monitoring only
        audit_link_own (app->audit, msg);
        return;
    }
    if ((msg->flags & SL_F_LAST) && (msg->flags & SL_F_ESTIMATED))
        s_estimated (app, msg);
    sl_msg_t frame = *msg;
    frame.reply_to = SL_STR_NULL;       //  routing only; not on the wire
    if (sl_router_send_named (app->gateways, msg->reply_to, &frame)) {
        char name [64];
        snprintf (name, sizeof name, "%.*s", (int) (msg->reply_to.len < 63 ? msg->reply_to.len : 63),
                  msg->reply_to.ptr ? msg->reply_to.ptr : "");
        s_unroutable (app, name, 1);
    }
}

static void
s_send_tap (s_app_t *app, s_feed_t *feed, const sl_msg_t *msg)
{
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (msg->sid, hex);
    char topic [64];
    int n = snprintf (topic, sizeof topic, "%s.%s", sl_msg_type_name (msg->type), hex);
    sl_buf_reset (&app->tap);
    sl_msg_encode (msg, &app->tap);
    void *sock = zsock_resolve (feed->sock);
    //  PUB never blocks: a slow subscriber loses tap messages, not the stream.
    if (zmq_send (sock, topic, (size_t) n, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0
    &&  zmq_send (sock, app->tap.data, app->tap.len, ZMQ_DONTWAIT) >= 0)
        sl_counter_inc (app->published);
    else
        sl_counter_inc (app->tap_dropped);
}

//  No tap listens: no work for nobody.
static void
s_publish (s_app_t *app, const sl_msg_t *msg)
{
    if (app->full.subscriptions > 0)
        s_send_tap (app, &app->full, msg);
    if (app->meta.subscriptions > 0) {
        sl_msg_t meta;
        sl_meta_strip (msg, &meta, &app->meta_scratch);
        s_send_tap (app, &app->meta, &meta);
    }
}

static void
s_on_msg (void *arg, const sl_msg_t *msg, sl_str_t peer)
{
    (void) peer;
    s_app_t *app = arg;
    if (msg->type == SL_MSG_ERROR)
        s_count_error (app, msg);
    s_publish (app, msg);
    audit_link_judged (app->audit, msg);
    if (app->genai)
        sl_genai_feed (app->genai, msg, sl_trace_now_us ());
    if (msg->type == SL_MSG_POLICY || msg->type == SL_MSG_APPROVAL)
        return;                         //  a judge's policy report, an approval: for monitoring only
    sl_emitter_feed (app->emitter, msg, s_emit, app);
}

//  Subscriptions and unsubscriptions from taps: ZeroMQ passes each topic
//  on once (subscribe: 1, then the prefix) and its end when the last
//  subscriber to it leaves (0, then the prefix).
static int
s_on_subscription (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    s_feed_t *feed = arg;
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
                feed->subscriptions++;
            else
            if (data [0] == 0 && feed->subscriptions > 0)
                feed->subscriptions--;
        }
        zmq_msg_close (&frame);
    }
    return 0;
}

static double
s_subscriptions (void *arg)
{
    return (double) ((s_feed_t *) arg)->subscriptions;
}

//  A PUB socket for taps of one ZAP domain; 0 ok (or "off"), -1 on failure.
static int
s_feed_open (sl_service_t *svc, s_feed_t *feed, const char *endpoint, const char *domain)
{
    if (strcmp (endpoint, "off") == 0)
        return 0;
    feed->sock = zsock_new (ZMQ_XPUB);
    if (sl_bus_server (sl_service_bus (svc), feed->sock, domain))
        return -1;
    if (zsock_bind (feed->sock, "%s", endpoint) < 0) {
        sl_log_error ("bind_failed", "cannot bind %s: %s", endpoint, zmq_strerror (zmq_errno ()));
        return -1;
    }
    sl_log_info (strcmp (domain, "tap") == 0 ? "pub_bound" : "pub_meta_bound", "endpoint=%s",
                 zsock_endpoint (feed->sock));
    zloop_reader (sl_service_loop (svc), feed->sock, s_on_subscription, feed);
    return 0;
}

static int64_t
s_clock (void *arg)
{
    (void) arg;
    return zclock_usecs ();
}

static void
s_flush (void *arg)
{
    s_app_t *app = arg;
    sl_router_flush (app->gateways);
    audit_link_flush (app->audit);
    const sl_emitter_stats_t *st = sl_emitter_stats (app->emitter);
    app->streams_total->value = st->streams;
    app->events_out->value = st->events_out;
    app->frames->value = st->frames;
    app->illegal->value = st->illegal;
    app->dropped->value = st->dropped;
    app->http_errors->value = st->http_errors;
    app->translated->value = st->translated;
    app->translation_dropped->value = st->translation_dropped;
    if (app->genai) {
        const sl_genai_stats_t *gs = sl_genai_stats (app->genai);
        app->trace_streams->value = gs->streams;
        app->trace_untraced->value = gs->untraced_full;
        app->trace_expired->value = gs->expired;
    }
}

//  A finished span goes to the exporter, which owns it from now on.
static void
s_on_span (void *arg, sl_span_t **span_p)
{
    sl_otlp_submit (((s_app_t *) arg)->otlp, span_p);
}

static int
s_on_trace_expiry (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_app_t *app = arg;
    sl_genai_expire (app->genai, sl_trace_now_us ());
    return 0;
}

static double
s_trace_streams_active (void *arg)
{
    return (double) sl_genai_streams (((s_app_t *) arg)->genai);
}

//  The exporter and the span maker, when SLUICE_OTLP_ENDPOINT is set.
//  0 ok (tracing on or off), -1 on a setting that cannot be used.
static int
s_traces_open (s_app_t *app, sl_service_t *svc, sl_metrics_t *m)
{
    char *error = NULL;
    if (sl_otlp_config_env (&app->otlp_config, "sluice-emitter", sl_service_name (svc), &error)) {
        sl_log_error ("otlp_config", "%s", error);
        free (error);
        return -1;
    }
    if (!app->otlp_config.endpoint)
        return 0;
    app->otlp = sl_otlp_new (sl_service_loop (svc), &app->otlp_config, m);
    if (!app->otlp) {
        sl_log_error ("otlp_config", "the OTLP exporter could not be made for %s", app->otlp_config.endpoint);
        return -1;
    }
    const char *capture = getenv ("SLUICE_OTEL_CAPTURE_CONTENT");
    int capture_content = sl_genai_capture_env (capture);
    if (capture_content < 0) {
        sl_log_error ("otlp_config", "SLUICE_OTEL_CAPTURE_CONTENT=%s: not 1, true, 0 or false", capture);
        return -1;
    }
    sl_genai_config_t config = { .capture_content = capture_content == 1 };
    app->genai = sl_genai_new (&config, s_on_span, app);
    app->trace_streams = sl_metrics_counter (m, "sluice_trace_streams_total", NULL,
                                             "Traced streams (a sampled trace context) reported as spans");
    app->trace_untraced = sl_metrics_counter (m, "sluice_trace_streams_untraced_total", NULL,
                                              "Traced streams not reported: too many followed at once");
    app->trace_expired = sl_metrics_counter (m, "sluice_trace_streams_expired_total", NULL,
                                             "Traced streams forgotten without an end (no span made)");
    sl_metrics_gauge_fn (m, "sluice_trace_streams_active", NULL, "Traced streams followed until their end",
                         s_trace_streams_active, app);
    zloop_timer (sl_service_loop (svc), EMITTER_TRACE_EXPIRY_MS, 0, s_on_trace_expiry, app);
    sl_log_info ("otlp_on", "endpoint=%s capture_content=%s", app->otlp_config.endpoint,
                 config.capture_content ? "true" : "false");
    return 0;
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
s_gateways_alive (void *arg)
{
    return (double) sl_router_alive_count (((s_app_t *) arg)->gateways);
}

static double
s_streams (void *arg)
{
    return (double) sl_emitter_streams (((s_app_t *) arg)->emitter);
}

//  A drain waits for the audit to commit what this emitter spooled.
static bool
s_audit_settled (void *arg)
{
    return audit_link_settled (((s_app_t *) arg)->audit);
}

int
main (int argc, char **argv)
{
    const char *bind = "tcp://127.0.0.1:5554";
    const char *pub = "tcp://127.0.0.1:5556";
    const char *pub_meta = "tcp://127.0.0.1:5557";
    const char *gateways = "tcp://127.0.0.1:5555";
    const char *audit = "off";
    char default_spool [24];
    snprintf (default_spool, sizeof default_spool, "%u", (unsigned) SL_SPOOL_DEFAULT_BYTES);
    const char *audit_spool = default_spool;
    sl_bus_opts_t bus = SL_BUS_OPTS_INIT;
    const char *max_streams = SL_STAGE_MAX_STREAMS;
    const char *expiry = SL_STAGE_EXPIRY_MS;
    sl_opt_t opts [] = {
        { "bind", NULL, &bind, "inbox endpoint (judged events from the judges)" },
        { "gateways", NULL, &gateways, "gateway inbox endpoints, comma-separated (names are re-resolved)" },
        { "pub", NULL, &pub, "PUB endpoint for taps with full access (off: none)" },
        { "pub-meta", NULL, &pub_meta, "PUB endpoint for metadata-only taps (off: none)" },
        { "audit", NULL, &audit, "endpoint for sluice-audit (its records, acknowledged; off: none)" },
        { "audit-spool", NULL, &audit_spool, "bytes of records held for sluice-audit until it commits them" },
        { "max-streams", NULL, &max_streams, "streams at once; more are refused (503) (0: no bound)" },
        { "stream-expiry-ms", NULL, &expiry,
          "a stream silent this long is ended with an error (0: never; must exceed the ingest's upstream deadlines)" },
        SL_BUS_OPT_KEYS (bus),
        SL_BUS_OPT_AUTH (bus),
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
    if (sl_service_start_bus (svc, &bus, "emitter")) {
        sl_service_destroy (&svc);
        return 2;
    }
    s_app_t app = { 0 };
    app.unroutable_log = (sl_ratelimit_t) SL_RATELIMIT_INIT (EMITTER_UNROUTABLE_LOG_BURST,
                                                             EMITTER_UNROUTABLE_LOG_WINDOW_MS);
    app.emitter = sl_emitter_new ();
    sl_emitter_set_clock (app.emitter, s_clock, NULL);
    app.gateways = sl_router_new (sl_service_loop (svc), sl_service_name (svc),
                                  sl_service_incarnation (svc));
    sl_metrics_t *m = sl_service_metrics (svc);
    app.metrics = m;
    sl_router_set_metrics (app.gateways, m, "gateway");
    sl_service_watch_hop (svc, app.gateways);
    app.unroutable = sl_metrics_counter (m, "sluice_frames_unroutable_total", NULL,
                                         "Frames dropped: no live gateway announced the stream's gateway name");
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
    app.translated = sl_metrics_counter (m, "sluice_streams_translated_total", NULL,
                                         "Streams from a provider of another dialect than the client's");
    app.translation_dropped = sl_metrics_counter (m, "sluice_translation_dropped_total", "side=\"response\"",
                                                  "What a translation between dialects left out, only informative");
    sl_metrics_gauge_fn (m, "sluice_streams_active", NULL, "Streams in progress", s_streams, &app);
    sl_metrics_gauge_fn (m, "sluice_queue_bytes", "queue=\"gateway\"",
                         "Bytes queued for the next hop, not yet handed to ZeroMQ", s_pending, &app);
    sl_metrics_gauge_fn (m, "sluice_gateways_alive", NULL,
                         "Gateways that announced themselves and heartbeat (frames go only to these)",
                         s_gateways_alive, &app);
    sl_metrics_gauge_fn (m, "sluice_tap_subscriptions", NULL,
                         "Distinct topics taps with full access subscribe to (0: events are not published)",
                         s_subscriptions, &app.full);
    sl_metrics_gauge_fn (m, "sluice_tap_metadata_subscriptions", NULL,
                         "Distinct topics metadata-only taps subscribe to (0: nothing is stripped or published)",
                         s_subscriptions, &app.meta);
    sl_router_on_unroutable (app.gateways, s_on_unroutable, &app);
    sl_stage_t *stage = NULL;
    if (s_traces_open (&app, svc, m) == 0
    &&  sl_router_set_bus (app.gateways, sl_service_bus (svc), "gateway") == 0
    &&  sl_router_connect (app.gateways, gateways) == 0
    &&  s_feed_open (svc, &app.full, pub, "tap") == 0
    &&  s_feed_open (svc, &app.meta, pub_meta, "tap-meta") == 0
    &&  (strcmp (audit, "off") == 0 || (app.audit = audit_link_new (svc, audit, audit_spool)))) {
        stage = sl_stage_new (svc, bind, s_on_msg, s_flush, &app);
        if (stage) {
            sl_stage_set_congestion (stage, s_congested, &app);
            sl_stage_track_streams (stage, streams_bound, expiry_ms);
            sl_stage_drain_with (stage, app.gateways, s_audit_settled, &app);
        }
    }
    int rc = stage ? sl_service_run (svc) : 1;
    sl_stage_destroy (&stage);
    if (app.full.sock)
        zloop_reader_end (sl_service_loop (svc), app.full.sock);
    if (app.meta.sock)
        zloop_reader_end (sl_service_loop (svc), app.meta.sock);
    zsock_destroy (&app.full.sock);
    zsock_destroy (&app.meta.sock);
    sl_router_destroy (&app.gateways);
    audit_link_destroy (&app.audit);
    sl_emitter_destroy (&app.emitter);
    sl_genai_destroy (&app.genai);
    sl_otlp_destroy (&app.otlp);         //  sends what waits, within a short bound
    sl_otlp_config_free (&app.otlp_config);
    sl_buf_free (&app.tap);
    sl_buf_free (&app.meta_scratch);
    sl_service_destroy (&svc);
    return rc;
}
