/*  ingest.c - upstream calls and delta emission for the ingest service.

    Each stream is a small state machine over its upstream call:

        BACKOFF --start_attempt--> CONNECTING --connected--> WAITING
        WAITING --first_byte--> STREAMING --bytes--> STREAMING
        any --done / failure / timeout--> (retry: BACKOFF) or closed

    and, once the upstream is over (or failed), DONE: the stream stays
    until the gateway acknowledges the end of the response, so that it can
    still be replayed.

    One reactor timer sweeps the live streams every SL_INGEST_TICK_MS and
    fires the deadline of each state (connect, first byte, idle, the end of
    a backoff); curl's own timers only back it up. A retry is allowed only
    while nothing but the START has gone downstream.

    Back-pressure: while the aggregators hold back credit, a stream's reads
    are paused (TCP pushes back to the provider); a 1 ms timer looks for the
    credit's return while any read is paused, and resumes them.

    Replay: everything a stream sends downstream is also kept in its log.
    When an instance holding the stream dies (an aggregator: our router sees
    its heartbeats stop; a judge or an emitter: the stage before it sees
    that and sends `lost` back, hop by hop), the stream is sent again from
    its log, in a new epoch, and the routers pin it afresh to live
    instances; every stage is a deterministic function of its input and the
    gateway writes each frame number once, so the client sees neither loss
    nor duplicates. As a safety net for anything else, the gateway
    acknowledges every 100 ms with an activity counter that moves whenever
    frames (or keep-alives) of the stream reach it; a stream whose counter
    stays still for the stall deadline after a send is replayed too, with
    the deadline doubling at each replay so that overload is not mistaken
    for death. A log over
    its bound is dropped and the stream marked not replayable (counted);
    such a stream that stalls ends with an error the ingest sends the
    gateway directly. When no ack comes at all for the gateway deadline,
    the gateway is gone: the upstream call is cancelled.
*/
#include "services/ingest/ingest.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/base/sl_alloc.h"
#include "common/http/sl_curlm.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/bus/sl_router.h"
#include "common/base/sl_sidmap.h"
#include "common/service/sl_stage.h"
#include "common/base/sl_utf8.h"
#include "common/dialects/sl_decoder.h"
#include "common/dialects/sl_upstream.h"
#include "common/llm/sl_retry.h"
#include "common/stages/sl_sse.h"

#define INGEST_ERROR_BODY_MAX 65536     //  bytes of a non-2xx body kept
#define INGEST_TICK_MS 25               //  deadline sweep period
#define INGEST_RESUME_MS 1              //  look again for credit while reads are paused
#define INGEST_CURL_SLACK_MS 1000       //  curl's own connect timeout: ours + this
#define INGEST_UPLOAD_BUFFER 16384L    //  curl's upload buffer per call (its minimum; default 64 KiB)
#define INGEST_LOG_STEP 1024           //  a replay log grows by a quarter, at least this (not by doubling)
#define INGEST_MAX_REPLAYS 8            //  replays of one stream before it is lost
#define INGEST_REFUSAL_LOG_MS 1000      //  at most one log line a second for refused streams

typedef enum {
    PHASE_BACKOFF,                      //  waiting to start an attempt
    PHASE_CONNECTING,                   //  transfer started, not connected yet
    PHASE_WAITING,                      //  request sent, no response byte yet
    PHASE_STREAMING,                    //  response arriving
    PHASE_DONE                          //  upstream over; waiting for the final ack
} s_phase_t;

typedef struct _s_stream_t s_stream_t;

struct _ingest_t {
    ingest_config_t config;
    sl_service_t *service;
    sl_stage_t *stage;
    sl_router_t *router;
    sl_curlm_t *curlm;
    sl_sidmap_t *streams;
    int sweep;                          //  deadline timer, -1 while no streams
    int resume;                         //  resume timer, -1 unless a read is paused
    sl_counter_t *started;
    sl_counter_t *upstream_errors;
    sl_counter_t *deltas;
    sl_counter_t *cancels;
    sl_counter_t *unroutable;
    sl_counter_t *malformed_upstream;
    sl_counter_t *unknown;
    sl_counter_t *retries;
    sl_counter_t *timeouts [3];         //  connect, first byte, idle
    sl_counter_t *replays;              //  streams sent again in a new epoch
    sl_counter_t *unreplayable;         //  logs dropped over their bound
    sl_counter_t *lost;                 //  streams that stalled and could not be replayed
    sl_counter_t *gateway_gone;         //  streams cancelled for want of acks
    sl_counter_t *unknown_acks;         //  acks for streams no longer held, answered
    sl_counter_t *paused;               //  transfers paused for back-pressure
    sl_counter_t *repaired;             //  events and error bodies that were not well-formed UTF-8
    sl_counter_t *refused;              //  streams refused over max_streams
    int64_t refusal_logged;             //  ms, the last log line about a refusal
    sl_buf_t repair;                    //  a repaired event, for the decoder
    sl_codec_t *codec;                  //  reads logs back
    size_t log_bytes;                   //  all streams' logs
    size_t body_bytes;                  //  request bodies held for a retry
};

struct _s_stream_t {
    ingest_t *ingest;
    uint8_t sid [SL_SID_SIZE];
    uint32_t epoch;
    uint64_t seq;                       //  next message sequence (START is 0)
    const sl_provider_t *provider;
    int dialect;
    sl_buf_t url;
    sl_buf_t body;                      //  the request body, kept for retries
    struct curl_slist *headers;
    CURL *easy;                         //  the current attempt, NULL between
    int attempt;                        //  0 for the first
    s_phase_t phase;
    int64_t deadline;                   //  ms, of the current phase
    int64_t last_byte;                  //  ms, last byte from upstream
    sl_sse_t *sse;
    sl_decoder_t *decoder;
    uint64_t unknown_seen;              //  decoder's unknown count already added
    long status;                        //  upstream HTTP status, 0 until known
    long retry_after_s;                 //  the answer's Retry-After, -1 when absent
    sl_buf_t error_body;                //  body of a non-2xx answer
    const char *failure;                //  why we stopped reading, or NULL
    const char *failure_code;
    bool ended;                         //  END sent downstream
    bool paused;                        //  transfer paused: downstream congested
    char errbuf [CURL_ERROR_SIZE];
    //  Replay
    sl_buf_t gateway;                   //  routing id of the gateway that sent the job
    sl_buf_t log;                       //  every message sent, encoded
    bool replayable;                    //  log within its bound
    int replays;
    uint64_t activity;                  //  the gateway's activity counter, last seen
    int64_t unacked_since;              //  ms, first send since activity last moved; 0: none
    int64_t last_ack;                   //  ms, last ack (or the job's arrival)
    int64_t last_replay;                //  ms
};

static const char *s_timeout_names [] = { "connect", "first_byte", "idle" };

static int64_t
s_now (void)
{
    return zclock_mono ();
}

//  --------------------------------------------------------------------------
//  Emitting into the pipeline

//  Send downstream without logging (a replay sends from the log).
static void
s_send_unlogged (s_stream_t *s, sl_msg_t *msg)
{
    memcpy (msg->sid, s->sid, SL_SID_SIZE);
    msg->epoch = s->epoch;
    msg->seq = s->seq++;
    if (sl_router_send (s->ingest->router, msg))
        sl_counter_inc (s->ingest->unroutable);
    //  The stall clock runs from a send the gateway will show activity
    //  for. A START makes none (nothing reaches the client before the
    //  model's first byte, which may take a reasoning model a minute):
    //  silence after it is the upstream's, and its deadlines judge it.
    if (!s->unacked_since && msg->type != SL_MSG_START)
        s->unacked_since = s_now ();
}

//  Keep a copy for a replay, within the per-stream and total bounds.
static void
s_log (s_stream_t *s, const sl_msg_t *msg)
{
    if (!s->replayable)
        return;
    ingest_t *self = s->ingest;
    size_t before = s->log.len, len;
    //  The router encoded it a moment ago: copy those bytes.
    const uint8_t *encoded = sl_router_last_encoded (self->router, &len);
    if (encoded) {
        memcpy (sl_buf_reserve_gently (&s->log, len, INGEST_LOG_STEP), encoded, len);
        s->log.len += len;
    }
    else
        sl_msg_encode (msg, &s->log);
    self->log_bytes += s->log.len - before;
    if (s->log.len > self->config.replay_log_max || self->log_bytes > self->config.replay_log_total) {
        self->log_bytes -= s->log.len;
        sl_buf_free (&s->log);
        s->replayable = false;
        sl_counter_inc (self->unreplayable);
        char hex [SL_SID_HEX_SIZE];
        sl_sid_hex (s->sid, hex);
        sl_log_warn ("replay_log_dropped", "sid=%s: over the replay log bound, no replay possible", hex);
    }
}

static void
s_send (s_stream_t *s, sl_msg_t *msg)
{
    s_send_unlogged (s, msg);
    s_log (s, msg);
}

//  True while nothing but the START went downstream: the client has seen
//  nothing, so the call may be retried and the error is the gateway's to
//  answer with a status.
static bool
s_untouched (s_stream_t *s)
{
    return s->seq <= 1;
}

//  The request body is kept for a retry, and a retry is only possible
//  while the client has seen nothing. An agent's request carries its whole
//  conversation (hundreds of KiB): once the response is under way and curl
//  has sent every byte of the body (it never reads it again then), let it
//  go rather than hold it for the stream's life.
static void
s_release_body (s_stream_t *s)
{
    if (!s->body.data || s_untouched (s))
        return;
    curl_off_t sent = -1;
    if (s->easy && (curl_easy_getinfo (s->easy, CURLINFO_SIZE_UPLOAD_T, &sent) != CURLE_OK
                ||  sent != (curl_off_t) s->body.len))
        return;
    s->ingest->body_bytes -= s->body.len;
    sl_buf_free (&s->body);
}

static void
s_count_unknown (s_stream_t *s)
{
    uint64_t now = sl_decoder_unknown (s->decoder);
    sl_counter_add (s->ingest->unknown, now - s->unknown_seen);
    s->unknown_seen = now;
}

static void
s_send_end (s_stream_t *s)
{
    if (s->ended)
        return;
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_END);
    s_send (s, &m);
    s->ended = true;
}

static void
s_emit_delta (void *arg, const sl_msg_t *msg)
{
    s_stream_t *s = arg;
    if (s->ended)
        return;
    sl_msg_t m = *msg;
    if (m.type == SL_MSG_DELTA)
        sl_counter_inc (s->ingest->deltas);
    else
    if (m.type == SL_MSG_ERROR) {
        if (s_untouched (s))
            m.flags |= SL_F_RETRYABLE;  //  the provider failed before saying anything
        sl_counter_inc (s->ingest->upstream_errors);
        sl_log_info ("upstream_error", "provider=%s code=%.*s", s->provider->name,
                     (int) m.code.len, m.code.ptr);
    }
    s_send (s, &m);
    s_release_body (s);
    //  The provider's own end (or its error) ends the stream now; the
    //  transfer may still drain its last bytes for connection reuse.
    if (m.type == SL_MSG_ERROR || (m.type == SL_MSG_DELTA && m.kind == SL_D_DONE))
        s_send_end (s);
}

static void
s_send_error (s_stream_t *s, const char *code, const char *message, int status, uint32_t flags)
{
    if (s->ended)
        return;
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_ERROR);
    m.code = sl_str (code);
    m.message = sl_str (message);
    m.status = status;
    m.flags = flags | (s_untouched (s) ? SL_F_RETRYABLE : 0);
    sl_counter_inc (s->ingest->upstream_errors);
    sl_log_info ("upstream_error", "provider=%s code=%s status=%d", s->provider ? s->provider->name : "-",
                 code, status);
    s_send (s, &m);
    s_send_end (s);
}

//  --------------------------------------------------------------------------
//  Stream life cycle

static void
s_drop_transfer (s_stream_t *s)
{
    if (s->easy) {
        sl_curlm_remove (s->ingest->curlm, s->easy);
        curl_easy_cleanup (s->easy);
        s->easy = NULL;
    }
}

static void
s_stream_free (s_stream_t *s)
{
    s_drop_transfer (s);
    s->ingest->log_bytes -= s->log.len;
    s->ingest->body_bytes -= s->body.len;
    sl_buf_free (&s->log);
    sl_buf_free (&s->gateway);
    curl_slist_free_all (s->headers);
    sl_sse_destroy (&s->sse);
    sl_decoder_destroy (&s->decoder);
    sl_buf_free (&s->error_body);
    sl_buf_free (&s->url);
    sl_buf_free (&s->body);
    free (s);
}

static void
s_stream_close (s_stream_t *s)
{
    sl_sidmap_remove (s->ingest->streams, s->sid);
    s_stream_free (s);
}

//  The upstream part is over and END went downstream: let the transfer go
//  and wait for the gateway's final ack, keeping the log for a replay.
static void
s_stream_done (s_stream_t *s)
{
    s_drop_transfer (s);
    s->phase = PHASE_DONE;
}

//  What the provider sent, made well-formed: bytes that are not UTF-8 and
//  lone surrogate escapes become U+FFFD (sl_utf8.h) here, once, so that
//  every stage after sees the text the client will see (the judge's policy
//  matches what is delivered; taps get well-formed strings). Returns data,
//  or its repaired copy in the ingest's buffer.
static sl_str_t
s_well_formed (ingest_t *self, sl_str_t data)
{
    if (!data.ptr || sl_utf8_json_clean (data.ptr, data.len))
        return data;
    sl_counter_inc (self->repaired);
    sl_buf_reset (&self->repair);
    sl_utf8_repair_json (&self->repair, data.ptr, data.len);
    return sl_buf_str (&self->repair);
}

static int
s_on_event (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    (void) id;
    s_stream_t *s = arg;
    data = s_well_formed (s->ingest, data);
    int rc = sl_decoder_event (s->decoder, type, data, s_emit_delta, s);
    s_count_unknown (s);
    if (rc == 0)
        return 0;
    s->failure = sl_decoder_error (s->decoder);
    s->failure_code = "upstream_malformed";
    sl_counter_inc (s->ingest->malformed_upstream);
    return -1;
}

//  curl: the connection is up (or reused) and the request is about to go.
static int
s_on_connected (void *arg, char *primary_ip, char *local_ip, int primary_port, int local_port)
{
    (void) primary_ip;
    (void) local_ip;
    (void) primary_port;
    (void) local_port;
    s_stream_t *s = arg;
    if (s->phase == PHASE_CONNECTING) {
        s->phase = PHASE_WAITING;
        s->deadline = s_now () + s->ingest->config.first_byte_timeout_ms;
    }
    return CURL_PREREQFUNC_OK;
}

static void
s_on_bytes (s_stream_t *s)
{
    s->last_byte = s_now ();
    s->phase = PHASE_STREAMING;
}

static int s_on_resume (zloop_t *loop, int timer_id, void *arg);

//  Look again shortly whether the aggregators gave credit back: paused
//  reads bring no event that would tell us, and waiting for the deadline
//  sweep left a fast stream idle for up to INGEST_TICK_MS at each pause.
static void
s_arm_resume (ingest_t *self)
{
    if (self->resume < 0)
        self->resume = zloop_timer (sl_service_loop (self->service), INGEST_RESUME_MS, 1, s_on_resume, self);
}

static size_t
s_on_header (char *ptr, size_t size, size_t nmemb, void *userdata)
{
    s_stream_t *s = userdata;
    size_t n = size * nmemb;
    static const char name [] = "retry-after:";
    s_on_bytes (s);
    if (n > sizeof name - 1 && strncasecmp (ptr, name, sizeof name - 1) == 0)
        s->retry_after_s = sl_retry_after (ptr + sizeof name - 1, n - (sizeof name - 1), time (NULL));
    return n;
}

static size_t
s_on_body (char *ptr, size_t size, size_t nmemb, void *userdata)
{
    s_stream_t *s = userdata;
    size_t n = size * nmemb;
    s_on_bytes (s);
    if (!s->status)
        curl_easy_getinfo (s->easy, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->status < 200 || s->status >= 300) {
        size_t room = INGEST_ERROR_BODY_MAX - s->error_body.len;
        sl_buf_append (&s->error_body, ptr, n < room ? n : room);
        return n;
    }
    if (s->ended)
        return n;                       //  draining after the provider's end
    if (sl_router_congested (s->ingest->router)) {
        //  The aggregators hold back credit: stop reading the upstream
        //  (TCP pushes back to the provider) until the resume timer sees it clear.
        s->paused = true;
        sl_counter_inc (s->ingest->paused);
        s_arm_resume (s->ingest);
        return CURL_WRITEFUNC_PAUSE;
    }
    int rc = sl_sse_feed (s->sse, ptr, n, s_on_event, s);
    if (rc == -1 && !s->failure) {
        s->failure = sl_sse_error (s->sse);
        s->failure_code = "upstream_event_too_large";
    }
    return rc ? 0 : n;                  //  0 makes curl stop the transfer
}

//  The provider's error code and message from a non-2xx JSON body (OpenAI,
//  Anthropic and Google shapes).
static void
s_status_error (s_stream_t *s)
{
    sl_buf_t scratch = { 0 };
    sl_str_t body = s_well_formed (s->ingest, sl_buf_str (&s->error_body));
    sl_str_t type = SL_STR_NULL, message = SL_STR_NULL, error, v;
    sl_buf_reserve (&scratch, body.len);
    if (sl_json_find (body, "error", &error) == 1) {
        if (sl_json_type (error) == SL_JSON_OBJECT) {
            if (((sl_json_find (error, "type", &v) == 1 && sl_json_type (v) == SL_JSON_STRING)
              || (sl_json_find (error, "status", &v) == 1 && sl_json_type (v) == SL_JSON_STRING)
              || (sl_json_find (error, "code", &v) == 1 && sl_json_type (v) == SL_JSON_STRING)))
                sl_json_str (v, &scratch, &type);
            if (sl_json_find (error, "message", &v) == 1 && sl_json_type (v) == SL_JSON_STRING)
                sl_json_str (v, &scratch, &message);
        }
        else
        if (sl_json_type (error) == SL_JSON_STRING)
            sl_json_str (error, &scratch, &message);
    }
    sl_buf_t text = { 0 }, code = { 0 };
    if (message.ptr && message.len)
        sl_buf_append_str (&text, message);
    else
        sl_buf_printf (&text, "%s answered HTTP %ld", s->provider->name, s->status);
    if (type.ptr && type.len)
        sl_buf_append_str (&code, type);
    else
        sl_buf_puts (&code, "upstream_http_error");
    s_send_error (s, sl_buf_cstr (&code), sl_buf_cstr (&text), (int) s->status, SL_F_UPSTREAM);
    sl_buf_free (&code);
    sl_buf_free (&text);
    sl_buf_free (&scratch);
}

static void s_start_attempt (s_stream_t *s);
static int s_on_sweep (zloop_t *loop, int timer_id, void *arg);

//  How long to wait before the next attempt (sl_retry.h); the spread comes
//  from the stream id, so a replay waits the same.
static long
s_backoff_ms (s_stream_t *s)
{
    const ingest_config_t *c = &s->ingest->config;
    return sl_retry_backoff_ms (c->retry_base_ms, c->retry_max_ms, s->attempt, s->retry_after_s,
                                s->sid [s->attempt % SL_SID_SIZE]);
}

//  Schedule another attempt if this failure allows one; false otherwise.
static bool
s_retry (s_stream_t *s)
{
    if (!s_untouched (s) || s->attempt >= s->ingest->config.max_retries)
        return false;
    long wait = s_backoff_ms (s);
    if (wait < 0)
        return false;
    sl_log_info ("upstream_retry", "provider=%s attempt=%d status=%ld wait_ms=%ld",
                 s->provider->name, s->attempt + 1, s->status, wait);
    sl_counter_inc (s->ingest->retries);
    s_drop_transfer (s);
    s->attempt++;
    s->phase = PHASE_BACKOFF;
    s->deadline = s_now () + wait;
    return true;
}

//  The transfer ended: curl let go of the handle, which is ours to clean
//  up (s_retry and s_stream_close do).
static void
s_on_done (void *arg, CURL *easy, CURLcode result)
{
    (void) easy;
    s_stream_t *s = arg;
    if (!s->status)
        curl_easy_getinfo (s->easy, CURLINFO_RESPONSE_CODE, &s->status);
    if (s->ended) {
        //  The provider's end already went downstream.
    }
    else
    if (s->failure)
        s_send_error (s, s->failure_code, s->failure, 502, 0);
    else
    if (result != CURLE_OK) {
        if (s_retry (s))
            return;
        bool connected = s->phase != PHASE_CONNECTING;
        //  curl's own message names the host and port it tried ("Failed to
        //  connect to 10.0.0.5 port 9090"): that stays in the log. The
        //  client gets the provider's name and curl's generic reason.
        const char *why = curl_easy_strerror (result);
        sl_log_info ("upstream_transport_error", "provider=%s phase=%s detail=%s", s->provider->name,
                     connected ? "connected" : "connecting", s->errbuf [0] ? s->errbuf : why);
        sl_buf_t text = { 0 };
        sl_buf_printf (&text, "%s: %s %s", s->provider->name,
                       connected ? "the connection broke:" : "cannot connect:", why);
        s_send_error (s, connected ? "upstream_connection_lost" : "upstream_unreachable",
                      sl_buf_cstr (&text), 502, 0);
        sl_buf_free (&text);
    }
    else
    if (s->status < 200 || s->status >= 300) {
        if ((s->status == 429 || s->status >= 500) && s_retry (s))
            return;
        s_status_error (s);
    }
    else {
        int rc = sl_sse_finish (s->sse, s_on_event, s);
        if (rc == 0)
            sl_decoder_finish (s->decoder, s_emit_delta, s);
        else
            s_send_error (s, s->failure_code ? s->failure_code : "upstream_malformed",
                          s->failure ? s->failure : sl_sse_error (s->sse), 502, 0);
        s_count_unknown (s);
    }
    s_send_end (s);
    s_stream_done (s);
}

//  URL and headers for the stream's dialect and provider (sl_upstream.h).
//  False when the request cannot be made (reported to the caller).
static bool
s_prepare (s_stream_t *s, const sl_msg_t *req)
{
    const sl_provider_t *p = s->provider;
    const char *key = p->key_env [0] ? getenv (p->key_env) : NULL;
    sl_upstream_t up;
    int rc = sl_upstream_prepare (sl_dialect_get (s->dialect), p->base_url, req->model, key, p->forward_auth,
                                  req->auth, req->passthrough, &up);
    if (rc == 0) {
        sl_buf_append_str (&s->url, sl_buf_str (&up.url));
        for (size_t i = 0; i < up.header_count; i++)
            s->headers = curl_slist_append (s->headers, sl_buf_cstr (&up.header [i]));
    }
    sl_upstream_clear (&up);
    return rc == 0;
}

static void
s_start_attempt (s_stream_t *s)
{
    ingest_t *self = s->ingest;
    s->status = 0;
    s->retry_after_s = -1;
    s->failure = NULL;
    s->failure_code = NULL;
    s->errbuf [0] = 0;
    sl_buf_reset (&s->error_body);
    sl_sse_reset (s->sse);
    if (s->attempt) {
        //  Nothing went downstream, so the decoder starts afresh too.
        sl_decoder_destroy (&s->decoder);
        s->decoder = sl_decoder_new (s->dialect);
        s->unknown_seen = 0;
    }
    s->easy = curl_easy_init ();
    curl_easy_setopt (s->easy, CURLOPT_URL, sl_buf_cstr (&s->url));
    curl_easy_setopt (s->easy, CURLOPT_POSTFIELDS, s->body.data ? s->body.data : "");
    curl_easy_setopt (s->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) s->body.len);
    //  A body over 64 KiB (an agent's conversation) goes out through curl's
    //  upload buffer, which the call keeps for its life: the smallest one
    //  curl takes, not its default 64 KiB per live stream.
    curl_easy_setopt (s->easy, CURLOPT_UPLOAD_BUFFERSIZE, INGEST_UPLOAD_BUFFER);
    curl_easy_setopt (s->easy, CURLOPT_HTTPHEADER, s->headers);
    curl_easy_setopt (s->easy, CURLOPT_WRITEFUNCTION, s_on_body);
    curl_easy_setopt (s->easy, CURLOPT_WRITEDATA, s);
    curl_easy_setopt (s->easy, CURLOPT_HEADERFUNCTION, s_on_header);
    curl_easy_setopt (s->easy, CURLOPT_HEADERDATA, s);
    curl_easy_setopt (s->easy, CURLOPT_PREREQFUNCTION, s_on_connected);
    curl_easy_setopt (s->easy, CURLOPT_PREREQDATA, s);
    curl_easy_setopt (s->easy, CURLOPT_ERRORBUFFER, s->errbuf);
    curl_easy_setopt (s->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (s->easy, CURLOPT_CONNECTTIMEOUT_MS,
                      self->config.connect_timeout_ms + INGEST_CURL_SLACK_MS);
    curl_easy_setopt (s->easy, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_2TLS);
    s->phase = PHASE_CONNECTING;
    s->deadline = s_now () + self->config.connect_timeout_ms;
    if (sl_curlm_add (self->curlm, s->easy, s_on_done, s)) {
        curl_easy_cleanup (s->easy);
        s->easy = NULL;
        s_send_error (s, "upstream_unreachable", "the upstream call could not be started", 502, 0);
        s_stream_done (s);
    }
}

//  A deadline passed: the phase says which one.
static void
s_on_deadline (s_stream_t *s)
{
    if (s->phase == PHASE_BACKOFF) {
        s_start_attempt (s);
        return;
    }
    s_drop_transfer (s);
    if (s->ended) {
        s_stream_done (s);              //  the response was complete; only the body hung
        return;
    }
    int which = s->phase == PHASE_CONNECTING ? 0 : s->phase == PHASE_WAITING ? 1 : 2;
    long limit = which == 0 ? s->ingest->config.connect_timeout_ms
               : which == 1 ? s->ingest->config.first_byte_timeout_ms
               : s->ingest->config.idle_timeout_ms;
    sl_counter_inc (s->ingest->timeouts [which]);
    //  A connect that never completed is a connection error: retry it.
    if (which == 0 && s_retry (s))
        return;
    char code [64], text [256];
    snprintf (code, sizeof code, "upstream_%s_timeout", s_timeout_names [which]);
    snprintf (text, sizeof text,
              which == 0 ? "%s: no connection within %ld ms (connect timeout)"
            : which == 1 ? "%s: no response within %ld ms of the request (first byte timeout)"
            : "%s: nothing received for %ld ms mid-stream (idle timeout)",
              s->provider->name, limit);
    s_send_error (s, code, text, 504, 0);
    s_stream_done (s);
}

//  A stream stalled with no log to replay from: tell its gateway directly
//  (the pipeline path is what broke), and let the upstream go.
static void
s_lose (s_stream_t *s, const char *why)
{
    ingest_t *self = s->ingest;
    sl_counter_inc (self->lost);
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (s->sid, hex);
    sl_log_warn ("stream_lost", "sid=%s: %s", hex, why);
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_ERROR);
    memcpy (m.sid, s->sid, SL_SID_SIZE);
    m.epoch = s->epoch;
    m.code = SL_STR_LIT ("stream_lost");
    m.message = sl_str (why);
    m.status = 502;
    sl_stage_reply (self->stage, sl_buf_str (&s->gateway), &m);
    //  The stages that still hold the stream let go of it too.
    s_drop_transfer (s);
    if (!s->ended) {
        s_send_unlogged (s, &m);
        sl_msg_init (&m, SL_MSG_END);
        s_send_unlogged (s, &m);
        s->ended = true;
    }
    s_stream_close (s);
}

//  Send the stream again from its log, in a new epoch.
static void
s_replay (s_stream_t *s, const char *why)
{
    ingest_t *self = s->ingest;
    if (!s->replayable) {
        s_lose (s, "a stage died and the stream's replay log was over its bound");
        return;
    }
    if (s->replays >= INGEST_MAX_REPLAYS) {
        s_lose (s, "the stream stalled again after every replay");
        return;
    }
    s->replays++;
    s->epoch++;
    s->seq = 0;
    s->unacked_since = 0;
    s->last_replay = s_now ();
    sl_counter_inc (self->replays);
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (s->sid, hex);
    sl_log_info ("stream_replay", "sid=%s epoch=%u why=%s", hex, s->epoch, why);
    size_t offset = 0;
    sl_msg_t m;
    while (sl_codec_decode (self->codec, s->log.data, s->log.len, &offset, &m) == 0)
        s_send_unlogged (s, &m);
}

//  An aggregator the ingest sent streams to died (or restarted): replay
//  every stream pinned there, at once.
static void
s_replay_if_current (ingest_t *self, const uint8_t *sid, uint32_t epoch, const char *why)
{
    s_stream_t *s = sl_sidmap_get (self->streams, sid);
    if (s && s->epoch == epoch)
        s_replay (s, why);
    else
    if (sl_log_enabled (SL_LOG_DEBUG)) {
        char hex [SL_SID_HEX_SIZE];
        sl_sid_hex (sid, hex);
        sl_log_debug ("replay_skipped", "sid=%s epoch=%u current=%d why=%s", hex, epoch,
                      s ? (int) s->epoch : -1, why);
    }
}

static void
s_replay_pinned (void *arg, const uint8_t *sid, uint32_t epoch)
{
    s_replay_if_current (arg, sid, epoch, "aggregator_died");
}

static void
s_on_aggregator_event (void *arg, const char *endpoint, sl_peer_event_t event)
{
    ingest_t *self = arg;
    if (event == SL_PEER_DEAD || event == SL_PEER_RESTARTED) {
        sl_router_each_pinned (self->router, endpoint, s_replay_pinned, self);
        sl_router_flush (self->router);
    }
}

//  A stage further on lost a stream (an instance holding it died).
static void
s_on_downstream (void *arg, const sl_msg_t *msg)
{
    ingest_t *self = arg;
    if (msg->type == SL_MSG_LOST) {
        s_replay_if_current (self, msg->sid, msg->epoch, "lost_downstream");
        sl_router_flush (self->router);
    }
}

//  No ack for the gateway deadline: the gateway (and its client) are gone.
static void
s_gateway_gone (s_stream_t *s)
{
    ingest_t *self = s->ingest;
    sl_counter_inc (self->gateway_gone);
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (s->sid, hex);
    sl_log_warn ("gateway_gone", "sid=%s: no ack for %ld ms, cancelling", hex, self->config.gateway_dead_ms);
    s_drop_transfer (s);
    if (!s->ended) {
        sl_msg_t m;
        sl_msg_init (&m, SL_MSG_ERROR);
        m.code = SL_STR_LIT ("client_cancelled");
        m.message = SL_STR_LIT ("the gateway holding the client went away");
        m.status = 499;
        s_send (s, &m);
        s_send_end (s);
    }
    s_stream_close (s);
}

static int
s_on_sweep (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    ingest_t *self = arg;
    int64_t now = s_now ();
    size_t count;
    void **streams = sl_sidmap_values (self->streams, &count);
    for (size_t i = 0; i < count; i++) {
        s_stream_t *s = streams [i];
        if (now - s->last_ack >= self->config.gateway_dead_ms) {
            s_gateway_gone (s);
            continue;
        }
        //  The safety net: a stream that stays silent long after a send,
        //  though no instance was seen dying. Each replay doubles the wait,
        //  so an overloaded pipeline is not answered with more load.
        long stall = self->config.stall_ms << (s->replays < 6 ? s->replays : 6);
        if (s->unacked_since && now - s->unacked_since >= stall
        &&  now - s->last_replay >= stall) {
            s_replay (s, "stalled");
            continue;
        }
        if (s->phase == PHASE_DONE || s->paused)
            continue;
        bool due = s->phase == PHASE_STREAMING
                 ? now - s->last_byte >= self->config.idle_timeout_ms
                 : now >= s->deadline;
        if (due)
            s_on_deadline (s);
    }
    free (streams);
    if (sl_sidmap_size (self->streams) == 0) {
        zloop_timer_end (sl_service_loop (self->service), self->sweep);
        self->sweep = -1;
    }
    sl_router_flush (self->router);
    return 0;
}

static int
s_on_resume (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    ingest_t *self = arg;
    self->resume = -1;
    if (sl_router_congested (self->router)) {
        s_arm_resume (self);
        return 0;
    }
    int64_t now = s_now ();
    size_t count;
    void **streams = sl_sidmap_values (self->streams, &count);
    for (size_t i = 0; i < count; i++) {
        s_stream_t *s = streams [i];
        if (s->paused && s->easy) {
            s->paused = false;
            s->last_byte = now;         //  the pause is not upstream idleness
            curl_easy_pause (s->easy, CURLPAUSE_CONT);
        }
    }
    free (streams);
    sl_router_flush (self->router);
    return 0;
}

//  --------------------------------------------------------------------------
//  Jobs from the gateway

//  Over max_streams: the request goes no further. Its gateway hears at once,
//  directly (nothing entered the pipeline), and answers the client with a
//  503 in its dialect.
static void
s_refuse (ingest_t *self, const sl_msg_t *req, sl_str_t peer)
{
    sl_counter_inc (self->refused);
    int64_t now = s_now ();
    if (now - self->refusal_logged >= INGEST_REFUSAL_LOG_MS) {
        self->refusal_logged = now;
        sl_log_warn ("streams_refused", "at the limit of %zu streams (--max-streams): %llu refused so far",
                     self->config.max_streams, (unsigned long long) self->refused->value);
    }
    char text [160];
    snprintf (text, sizeof text, "sluice is serving as many streams as it may at once (%zu); try again shortly",
              self->config.max_streams);
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_ERROR);
    memcpy (m.sid, req->sid, SL_SID_SIZE);
    m.epoch = req->epoch;
    m.code = SL_STR_LIT ("overloaded_error");
    m.message = sl_str (text);
    m.status = 503;
    m.flags = SL_F_RETRYABLE;
    sl_stage_reply (self->stage, peer, &m);
}

static void
s_start (ingest_t *self, const sl_msg_t *req, sl_str_t peer)
{
    if (sl_sidmap_get (self->streams, req->sid)) {
        //  A gateway sends a request again to an ingest that was taken for
        //  dead and speaks again (it may have lost it with its connection).
        sl_log_debug ("duplicate_request", "stream already running");
        return;
    }
    if (self->config.max_streams && sl_sidmap_size (self->streams) >= self->config.max_streams) {
        s_refuse (self, req, peer);
        return;
    }
    if (self->sweep < 0)
        self->sweep = zloop_timer (sl_service_loop (self->service), INGEST_TICK_MS, 0, s_on_sweep, self);
    s_stream_t *s = sl_xcalloc (1, sizeof *s);
    s->ingest = self;
    memcpy (s->sid, req->sid, SL_SID_SIZE);
    s->epoch = req->epoch;
    s->dialect = req->upstream_dialect;
    s->replayable = true;
    s->last_ack = s_now ();
    sl_buf_append_str (&s->gateway, peer);
    sl_sidmap_put (self->streams, s->sid, s);
    sl_counter_inc (self->started);
    //  The gateway may have routed already; otherwise the model decides.
    const sl_provider_t *p = req->provider.ptr ? sl_providers_find (self->config.routes, req->provider) : NULL;
    if (!p || p->dialect != s->dialect)
        p = sl_providers_match (self->config.routes, req->model, s->dialect);
    s->provider = p;

    //  The stream's first message carries what later stages need to know.
    sl_msg_t start = *req;
    start.type = SL_MSG_START;
    start.body = SL_STR_NULL;
    start.auth = SL_STR_NULL;           //  credentials stop here
    start.passthrough = SL_STR_NULL;    //  so do the client's headers
    start.provider = p ? sl_str (p->name) : SL_STR_NULL;
    start.flags &= ~SL_F_DENIED;
    start.code = start.message = SL_STR_NULL;
    start.status = 0;
    s_send (s, &start);

    if (req->flags & SL_F_DENIED) {
        //  The request policy refused it at the gateway: no upstream call.
        //  The stream still runs the pipeline, so its verdicts reach the
        //  taps and the client gets the refusal in its dialect.
        sl_msg_t m;
        sl_msg_init (&m, SL_MSG_ERROR);
        m.code = req->code.ptr ? req->code : SL_STR_LIT ("policy_violation");
        m.message = req->message;
        m.status = req->status ? req->status : 403;
        m.flags = SL_F_RETRYABLE;       //  nothing reached the client
        s_send (s, &m);
        s_send_end (s);
        s_stream_done (s);
        return;
    }

    s->decoder = sl_decoder_new (s->dialect);
    if (!s->decoder || !p) {
        char text [160];
        if (!s->decoder)
            snprintf (text, sizeof text, "no decoder for upstream dialect %d", s->dialect);
        else
            snprintf (text, sizeof text, "no provider serves the %s dialect", sl_dialect_name (s->dialect));
        s_send_error (s, !s->decoder ? "unsupported_dialect" : "no_provider", text, 400, 0);
        s_stream_done (s);
        return;
    }
    s->sse = sl_sse_new (self->config.max_event);
    sl_buf_append_str (&s->body, req->body);
    self->body_bytes += s->body.len;
    if (!s_prepare (s, req)) {
        s_send_error (s, "invalid_request_error", "the request names no usable model", 400, 0);
        s_stream_done (s);
        return;
    }
    sl_log_debug ("upstream_call", "provider=%s dialect=%s", p->name, sl_dialect_name (s->dialect));
    s_start_attempt (s);
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
    s_drop_transfer (s);
    if (!s->ended) {
        sl_msg_t m;
        sl_msg_init (&m, SL_MSG_ERROR);
        m.code = SL_STR_LIT ("client_cancelled");
        m.message = SL_STR_LIT ("the client went away");
        m.status = 499;
        s_send (s, &m);
        s_send_end (s);
    }
    s_stream_close (s);
}

//  The gateway's word on a stream: alive, how far, finished.
static void
s_ack (ingest_t *self, const sl_msg_t *msg, sl_str_t peer)
{
    s_stream_t *s = sl_sidmap_get (self->streams, msg->sid);
    if (!s) {
        //  The gateway waits for a stream this ingest no longer holds: it
        //  gave it up while the gateway was silent (stopped, starved, its
        //  connection dropped), or it restarted. A stream is held until
        //  its last frame is acknowledged, so nothing else is lost here:
        //  say so, and the gateway ends the response.
        sl_msg_t m;
        sl_msg_init (&m, SL_MSG_ERROR);
        memcpy (m.sid, msg->sid, SL_SID_SIZE);
        m.code = SL_STR_LIT ("upstream_lost");
        m.message = SL_STR_LIT ("the sluice instance calling the model let the model's answer go "
                                "while it heard nothing from this gateway");
        m.status = 502;
        sl_stage_reply (self->stage, peer, &m);
        sl_counter_inc (self->unknown_acks);
        return;
    }
    if (!sl_str_eq_str (peer, sl_buf_str (&s->gateway))) {
        //  The gateway's connection came back (a new routing id): what we
        //  tell it directly goes there now.
        sl_buf_reset (&s->gateway);
        sl_buf_append_str (&s->gateway, peer);
    }
    int64_t now = s_now ();
    s->last_ack = now;
    if ((uint64_t) msg->ts != s->activity) {
        s->activity = (uint64_t) msg->ts;
        s->unacked_since = 0;
    }
    if (!(msg->flags & SL_F_LAST))
        return;
    //  The client has the whole response. When it ended before the
    //  upstream did (the judge terminated it, the emitter cut it), the
    //  later stages still hold the stream: stop the upstream and end the
    //  stream at every hop, as a cancel does.
    if (!s->ended) {
        s_drop_transfer (s);
        sl_msg_t m;
        sl_msg_init (&m, SL_MSG_ERROR);
        m.code = SL_STR_LIT ("response_closed");
        m.message = SL_STR_LIT ("the client's response ended before the upstream's");
        m.status = 499;
        s_send (s, &m);
        s_send_end (s);
    }
    s_stream_close (s);
}

static void
s_on_msg (void *arg, const sl_msg_t *msg, sl_str_t peer)
{
    ingest_t *self = arg;
    switch (msg->type) {
        case SL_MSG_REQ:    s_start (self, msg, peer); break;
        case SL_MSG_CANCEL: s_cancel (self, msg); break;
        case SL_MSG_ACK:    s_ack (self, msg, peer); break;
        default:            break;
    }
}

static void
s_flush (void *arg)
{
    sl_router_flush (((ingest_t *) arg)->router);
}

static double
s_log_bytes (void *arg)
{
    return (double) ((ingest_t *) arg)->log_bytes;
}

static double
s_body_bytes (void *arg)
{
    return (double) ((ingest_t *) arg)->body_bytes;
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
    self->sweep = -1;
    self->resume = -1;
    self->streams = sl_sidmap_new ();
    zloop_t *loop = sl_service_loop (service);
    self->curlm = sl_curlm_new (loop);
    sl_curlm_set_after (self->curlm, s_flush, self);
    self->router = sl_router_new (loop, sl_service_name (service), sl_service_incarnation (service));
    sl_metrics_t *m = sl_service_metrics (service);
    sl_router_set_metrics (self->router, m, "aggregator");
    sl_service_watch_hop (service, self->router);
    self->started = sl_metrics_counter (m, "sluice_streams_total", NULL, "Upstream streams started");
    self->upstream_errors = sl_metrics_counter (m, "sluice_upstream_errors_total", NULL,
                                                "Streams ended by an upstream or transport error");
    self->deltas = sl_metrics_counter (m, "sluice_deltas_total", NULL, "Delta events decoded");
    self->cancels = sl_metrics_counter (m, "sluice_cancels_total", NULL, "Streams cancelled by the gateway");
    self->unroutable = sl_metrics_counter (m, "sluice_unroutable_total", NULL,
                                           "Messages with no aggregator to go to");
    self->malformed_upstream = sl_metrics_counter (m, "sluice_upstream_malformed_total", NULL,
                                                   "Upstream events that could not be decoded");
    self->unknown = sl_metrics_counter (m, "sluice_upstream_unknown_total", NULL,
                                        "Upstream event types and fields not known, skipped");
    self->retries = sl_metrics_counter (m, "sluice_upstream_retries_total", NULL,
                                        "Upstream calls retried (connection error, 429, 5xx)");
    for (int i = 0; i < 3; i++) {
        char labels [64];
        snprintf (labels, sizeof labels, "kind=\"%s\"", s_timeout_names [i]);
        self->timeouts [i] = sl_metrics_counter (m, "sluice_upstream_timeouts_total", labels,
                                                 "Upstream calls ended by a deadline");
    }
    self->replays = sl_metrics_counter (m, "sluice_replays_total", NULL,
                                        "Streams sent again from their log in a new epoch (a stage died)");
    self->unreplayable = sl_metrics_counter (m, "sluice_replay_logs_dropped_total", NULL,
                                             "Replay logs dropped over their bound (the stream is not replayable)");
    self->lost = sl_metrics_counter (m, "sluice_streams_lost_total", NULL,
                                     "Streams that stalled and could not be replayed");
    self->gateway_gone = sl_metrics_counter (m, "sluice_gateway_gone_total", NULL,
                                             "Streams cancelled because their gateway stopped acknowledging");
    self->unknown_acks = sl_metrics_counter (m, "sluice_acks_unknown_total", NULL,
                                             "Acks for streams this ingest no longer held (it told the gateway)");
    self->paused = sl_metrics_counter (m, "sluice_upstream_paused_total", NULL,
                                       "Upstream reads paused because the aggregators held back credit");
    self->refused = sl_metrics_counter (m, "sluice_streams_refused_total", NULL,
                                        "Requests refused at once: the ingest held --max-streams streams");
    self->repaired = sl_metrics_counter (m, "sluice_upstream_repaired_total", NULL,
                                         "Upstream events (and error bodies) that were not well-formed UTF-8 "
                                         "or held a lone surrogate escape, repaired to U+FFFD");
    sl_metrics_gauge_fn (m, "sluice_replay_log_bytes", NULL, "Bytes held in replay logs", s_log_bytes, self);
    sl_metrics_gauge_fn (m, "sluice_request_body_bytes", NULL,
                         "Bytes of request bodies held for a retry (until the response is under way)",
                         s_body_bytes, self);
    self->codec = sl_codec_new ();
    sl_router_on_peer (self->router, s_on_aggregator_event, self);
    sl_router_on_message (self->router, s_on_downstream, self);
    sl_metrics_gauge_fn (m, "sluice_streams_active", NULL, "Streams in progress", s_active, self);
    if (sl_router_set_bus (self->router, sl_service_bus (service), "aggregator")
    ||  sl_router_connect (self->router, config->next)) {
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
    if (self->sweep >= 0)
        zloop_timer_end (sl_service_loop (self->service), self->sweep);
    if (self->resume >= 0)
        zloop_timer_end (sl_service_loop (self->service), self->resume);
    sl_sidmap_destroy (&self->streams);
    sl_stage_destroy (&self->stage);
    sl_curlm_destroy (&self->curlm);
    sl_router_destroy (&self->router);
    sl_codec_destroy (&self->codec);
    sl_buf_free (&self->repair);
    free (self);
    *self_p = NULL;
}
