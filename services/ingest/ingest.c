/*  ingest.c - upstream calls and delta emission for the ingest service. */
#include "ingest.h"

#include <stdlib.h>
#include <string.h>

#include "../../common/sl_alloc.h"
#include "../../common/sl_curlm.h"
#include "../../common/sl_json.h"
#include "../../common/sl_log.h"
#include "../../common/sl_router.h"
#include "../../common/sl_sidmap.h"
#include "../../common/sl_stage.h"
#include "sl_decoder.h"
#include "sl_sse.h"

#define INGEST_ERROR_BODY_MAX 65536     //  bytes of a non-2xx body kept

typedef struct _s_stream_t s_stream_t;

struct _ingest_t {
    ingest_config_t config;
    sl_service_t *service;
    sl_stage_t *stage;
    sl_router_t *router;
    sl_curlm_t *curlm;
    sl_sidmap_t *streams;
    sl_counter_t *started;
    sl_counter_t *upstream_errors;
    sl_counter_t *deltas;
    sl_counter_t *cancels;
    sl_counter_t *unroutable;
    sl_counter_t *malformed_upstream;
};

struct _s_stream_t {
    ingest_t *ingest;
    uint8_t sid [SL_SID_SIZE];
    uint32_t epoch;
    uint64_t seq;                       //  next delta sequence
    CURL *easy;
    struct curl_slist *headers;
    sl_sse_t *sse;
    sl_decoder_t *decoder;
    long status;                        //  upstream HTTP status, 0 until known
    sl_buf_t error_body;                //  body of a non-2xx answer
    const char *failure;                //  why we stopped reading, or NULL
    const char *failure_code;
    char errbuf [CURL_ERROR_SIZE];
};

//  --------------------------------------------------------------------------
//  Emitting into the pipeline

static void
s_send (s_stream_t *s, sl_msg_t *msg)
{
    memcpy (msg->sid, s->sid, SL_SID_SIZE);
    msg->epoch = s->epoch;
    msg->seq = s->seq++;
    if (sl_router_send (s->ingest->router, msg))
        sl_counter_inc (s->ingest->unroutable);
}

static void
s_emit_delta (void *arg, const sl_msg_t *msg)
{
    s_stream_t *s = arg;
    sl_msg_t m = *msg;
    if (m.type == SL_MSG_DELTA)
        sl_counter_inc (s->ingest->deltas);
    else
    if (m.type == SL_MSG_ERROR)
        sl_counter_inc (s->ingest->upstream_errors);
    s_send (s, &m);
}

static void
s_send_error (s_stream_t *s, const char *code, const char *message, int status, uint32_t flags)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_ERROR);
    m.code = sl_str (code);
    m.message = sl_str (message);
    m.status = status;
    m.flags = flags;
    sl_counter_inc (s->ingest->upstream_errors);
    s_send (s, &m);
}

static void
s_send_end (s_stream_t *s)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_END);
    s_send (s, &m);
}

//  --------------------------------------------------------------------------
//  Stream life cycle

static void
s_stream_free (s_stream_t *s)
{
    if (s->easy) {
        sl_curlm_remove (s->ingest->curlm, s->easy);
        curl_easy_cleanup (s->easy);
    }
    curl_slist_free_all (s->headers);
    sl_sse_destroy (&s->sse);
    sl_decoder_destroy (&s->decoder);
    sl_buf_free (&s->error_body);
    free (s);
}

static void
s_stream_close (s_stream_t *s)
{
    sl_sidmap_remove (s->ingest->streams, s->sid);
    s_stream_free (s);
}

static int
s_on_event (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    (void) id;
    s_stream_t *s = arg;
    if (sl_decoder_event (s->decoder, type, data, s_emit_delta, s) == 0)
        return 0;
    s->failure = sl_decoder_error (s->decoder);
    s->failure_code = "upstream_malformed";
    sl_counter_inc (s->ingest->malformed_upstream);
    return -1;
}

static size_t
s_on_body (char *ptr, size_t size, size_t nmemb, void *userdata)
{
    s_stream_t *s = userdata;
    size_t n = size * nmemb;
    if (!s->status)
        curl_easy_getinfo (s->easy, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status < 200 || s->status >= 300) {
        size_t room = INGEST_ERROR_BODY_MAX - s->error_body.len;
        sl_buf_append (&s->error_body, ptr, n < room ? n : room);
        return n;
    }
    int rc = sl_sse_feed (s->sse, ptr, n, s_on_event, s);
    if (rc == -1 && !s->failure) {
        s->failure = sl_sse_error (s->sse);
        s->failure_code = "upstream_event_too_large";
    }
    return rc ? 0 : n;                  //  0 makes curl stop the transfer
}

//  Turn a non-2xx answer into an error carrying the provider's words.
static void
s_send_status_error (s_stream_t *s)
{
    sl_buf_t scratch = { 0 };
    sl_str_t body = sl_buf_str (&s->error_body);
    sl_str_t type = SL_STR_NULL, message = SL_STR_NULL, error, v;
    sl_buf_reserve (&scratch, body.len);
    if (sl_json_find (body, "error", &error) == 1) {
        if (sl_json_type (error) == SL_JSON_OBJECT) {
            if (sl_json_find (error, "type", &v) == 1 && sl_json_type (v) == SL_JSON_STRING)
                sl_json_str (v, &scratch, &type);
            if (sl_json_find (error, "message", &v) == 1 && sl_json_type (v) == SL_JSON_STRING)
                sl_json_str (v, &scratch, &message);
        }
        else
        if (sl_json_type (error) == SL_JSON_STRING)
            sl_json_str (error, &scratch, &message);
    }
    sl_buf_t text = { 0 };
    if (message.ptr)
        sl_buf_append_str (&text, message);
    else
        sl_buf_printf (&text, "the upstream answered HTTP %ld", s->status);
    sl_buf_t code = { 0 };
    if (type.ptr)
        sl_buf_append_str (&code, type);
    else
        sl_buf_puts (&code, "upstream_http_error");
    s_send_error (s, sl_buf_cstr (&code), sl_buf_cstr (&text), (int) s->status,
                  SL_F_UPSTREAM | SL_F_RETRYABLE);
    sl_buf_free (&code);
    sl_buf_free (&text);
    sl_buf_free (&scratch);
}

static void
s_on_done (void *arg, CURL *easy, CURLcode result)
{
    (void) easy;
    s_stream_t *s = arg;
    if (!s->status)
        curl_easy_getinfo (s->easy, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->failure) {
        s_send_error (s, s->failure_code, s->failure, 502, 0);
    }
    else
    if (result != CURLE_OK) {
        bool timeout = result == CURLE_OPERATION_TIMEDOUT;
        const char *why = s->errbuf [0] ? s->errbuf : curl_easy_strerror (result);
        sl_buf_t text = { 0 };
        sl_buf_printf (&text, "upstream %s: %s", timeout ? "timed out" : "connection failed", why);
        s_send_error (s, timeout ? "upstream_timeout" : "upstream_unreachable",
                      sl_buf_cstr (&text), timeout ? 504 : 502,
                      s->seq <= 1 ? SL_F_RETRYABLE : 0);
        sl_buf_free (&text);
    }
    else
    if (s->status < 200 || s->status >= 300)
        s_send_status_error (s);
    else {
        int rc = sl_sse_finish (s->sse, s_on_event, s);
        if (rc == 0)
            sl_decoder_finish (s->decoder, s_emit_delta, s);
        else
            s_send_error (s, s->failure_code ? s->failure_code : "upstream_malformed",
                          s->failure ? s->failure : sl_sse_error (s->sse), 502, 0);
    }
    s_send_end (s);
    //  The transfer is over: curl no longer owns the handle.
    curl_easy_cleanup (s->easy);
    s->easy = NULL;
    s_stream_close (s);
}

//  --------------------------------------------------------------------------
//  Jobs from the gateway

static void
s_start (ingest_t *self, const sl_msg_t *req)
{
    if (sl_sidmap_get (self->streams, req->sid)) {
        sl_log_warn ("duplicate_request", "stream already running");
        return;
    }
    s_stream_t *s = sl_xcalloc (1, sizeof *s);
    s->ingest = self;
    memcpy (s->sid, req->sid, SL_SID_SIZE);
    s->epoch = req->epoch;
    sl_sidmap_put (self->streams, s->sid, s);
    sl_counter_inc (self->started);

    //  The stream's first message carries what later stages need to know.
    sl_msg_t start = *req;
    start.type = SL_MSG_START;
    start.body = SL_STR_NULL;
    start.auth = SL_STR_NULL;           //  credentials stop here
    s_send (s, &start);

    s->decoder = sl_decoder_new (req->upstream_dialect);
    if (!s->decoder) {
        s_send_error (s, "unsupported_dialect", "no decoder for this upstream dialect", 400, 0);
        s_send_end (s);
        s_stream_close (s);
        return;
    }
    s->sse = sl_sse_new (self->config.max_event);
    s->easy = curl_easy_init ();
    sl_buf_t url = { 0 };
    sl_buf_printf (&url, "%s/chat/completions", self->config.openai_base_url);
    curl_easy_setopt (s->easy, CURLOPT_URL, sl_buf_cstr (&url));
    sl_buf_free (&url);
    curl_easy_setopt (s->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) req->body.len);
    curl_easy_setopt (s->easy, CURLOPT_COPYPOSTFIELDS, req->body.ptr ? req->body.ptr : "");
    s->headers = curl_slist_append (s->headers, "Content-Type: application/json");
    s->headers = curl_slist_append (s->headers, "Accept: text/event-stream");
    if (self->config.openai_key && *self->config.openai_key) {
        sl_buf_t auth = { 0 };
        sl_buf_printf (&auth, "Authorization: Bearer %s", self->config.openai_key);
        s->headers = curl_slist_append (s->headers, sl_buf_cstr (&auth));
        sl_buf_free (&auth);
    }
    else
    if (req->auth.ptr && req->auth.len) {
        char *line = sl_xstrndup (req->auth.ptr, req->auth.len);
        s->headers = curl_slist_append (s->headers, line);
        free (line);
    }
    curl_easy_setopt (s->easy, CURLOPT_HTTPHEADER, s->headers);
    curl_easy_setopt (s->easy, CURLOPT_WRITEFUNCTION, s_on_body);
    curl_easy_setopt (s->easy, CURLOPT_WRITEDATA, s);
    curl_easy_setopt (s->easy, CURLOPT_ERRORBUFFER, s->errbuf);
    curl_easy_setopt (s->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (s->easy, CURLOPT_CONNECTTIMEOUT_MS, self->config.connect_timeout_ms);
    curl_easy_setopt (s->easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt (s->easy, CURLOPT_LOW_SPEED_TIME, self->config.idle_timeout_s);
    curl_easy_setopt (s->easy, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_2TLS);
    if (sl_curlm_add (self->curlm, s->easy, s_on_done, s)) {
        s_send_error (s, "upstream_unreachable", "the upstream call could not be started", 502,
                      SL_F_RETRYABLE);
        s_send_end (s);
        s_stream_close (s);
    }
}

static void
s_cancel (ingest_t *self, const sl_msg_t *msg)
{
    s_stream_t *s = sl_sidmap_get (self->streams, msg->sid);
    if (!s)
        return;
    sl_counter_inc (self->cancels);
    //  Closing the stream frees the upstream connection now; the error and
    //  end tell the later stages to let go of it too.
    s_send_error (s, "client_cancelled", "the client went away", 499, 0);
    s_send_end (s);
    s_stream_close (s);
}

static void
s_on_msg (void *arg, const sl_msg_t *msg, sl_str_t peer)
{
    (void) peer;
    ingest_t *self = arg;
    switch (msg->type) {
        case SL_MSG_REQ:    s_start (self, msg); break;
        case SL_MSG_CANCEL: s_cancel (self, msg); break;
        case SL_MSG_ACK:    break;      //  progress; used for replay decisions
        default:            break;
    }
}

static void
s_flush (void *arg)
{
    sl_router_flush (((ingest_t *) arg)->router);
}

static double
s_active (void *arg)
{
    return (double) sl_sidmap_size (((ingest_t *) arg)->streams);
}

ingest_t *
ingest_new (sl_service_t *service, const ingest_config_t *config)
{
    ingest_t *self = sl_xcalloc (1, sizeof *self);
    self->config = *config;
    self->service = service;
    self->streams = sl_sidmap_new ();
    zloop_t *loop = sl_service_loop (service);
    self->curlm = sl_curlm_new (loop);
    sl_curlm_set_after (self->curlm, s_flush, self);
    self->router = sl_router_new (loop, sl_service_name (service), sl_service_incarnation (service));
    sl_metrics_t *m = sl_service_metrics (service);
    sl_router_set_metrics (self->router, m, "aggregator");
    self->started = sl_metrics_counter (m, "sluice_streams_total", NULL, "Upstream streams started");
    self->upstream_errors = sl_metrics_counter (m, "sluice_upstream_errors_total", NULL,
                                                "Streams ended by an upstream or transport error");
    self->deltas = sl_metrics_counter (m, "sluice_deltas_total", NULL, "Delta events decoded");
    self->cancels = sl_metrics_counter (m, "sluice_cancels_total", NULL, "Streams cancelled by the gateway");
    self->unroutable = sl_metrics_counter (m, "sluice_unroutable_total", NULL,
                                           "Messages with no aggregator to go to");
    self->malformed_upstream = sl_metrics_counter (m, "sluice_upstream_malformed_total", NULL,
                                                   "Upstream events that could not be decoded");
    sl_metrics_gauge_fn (m, "sluice_streams_active", NULL, "Streams in progress", s_active, self);
    if (sl_router_connect (self->router, config->next)) {
        ingest_destroy (&self);
        return NULL;
    }
    self->stage = sl_stage_new (service, config->bind, s_on_msg, s_flush, self);
    if (!self->stage) {
        ingest_destroy (&self);
        return NULL;
    }
    return self;
}

void
ingest_destroy (ingest_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    ingest_t *self = *self_p;
    size_t count;
    void **streams = sl_sidmap_values (self->streams, &count);
    for (size_t i = 0; i < count; i++)
        s_stream_free (streams [i]);
    free (streams);
    sl_sidmap_destroy (&self->streams);
    sl_stage_destroy (&self->stage);
    sl_curlm_destroy (&self->curlm);
    sl_router_destroy (&self->router);
    free (self);
    *self_p = NULL;
}
