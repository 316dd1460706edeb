/*  Unit tests: common/stages/sl_upcall (the ingest's upstream calls: each
    deadline, retries and Retry-After, the delta log and its bound,
    re-sending in a new epoch, the gateway deadline, the request body let
    go, back-pressure). Transfers, the next stage, gateways and both clocks
    are fakes driven by the test. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "common/cloud/sl_evstream.h"
#include "common/stages/sl_ended.h"
#include "common/stages/sl_upcall.h"
#include "tests/unit/recorder.h"

#define MAX_TRANSFERS 16
#define PEER "gateway-1"
#define BODY "{\"model\":\"gpt-4o\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":true}"
#define CHUNK "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hello\"}}]}\n\n"
#define WALL_2026 1767225600            //  2026-01-01T00:00:00Z, a Thursday

//  One attempt's transfer, as the service would hold it.
typedef struct {
    sl_upcall_call_t *call;
    char url [256];
    size_t header_count;
    char headers [1024];                //  the header lines, each ending "\n"
    char last_header [128];             //  the attempt's last header line
    int authorizations;                 //  lines of the fake credential source among them
    char body [256];
    long status;                        //  of the answer; 0 until "received"
    int64_t uploaded;                   //  body bytes "sent"
    bool stopped;
    bool resumed;
} s_transfer_t;

static struct {
    sl_metrics_t *metrics;
    sl_providers_t *routes;
    sl_upcall_t *up;
    recorder_t sent;                    //  downstream
    recorder_t replies;                 //  to gateways directly
    char reply_peer [64];
    s_transfer_t transfers [MAX_TRANSFERS];
    int transfer_count;
    bool congested;
    int64_t now;                        //  ms, the monotonic clock
    time_t wall;                        //  s, the calendar
    sl_auth_t *auth;                    //  every provider's credential source, or NULL
    int later;                          //  inline answers the service was asked to read
    uint8_t later_sid [SL_SID_SIZE];    //  the last one's stream
} f;

//  --------------------------------------------------------------------------
//  The service's side, faked

static int
s_send (void *arg, const sl_msg_t *msg)
{
    (void) arg;
    recorder_emit (&f.sent, msg);
    return 0;
}

static void
s_reply (void *arg, sl_str_t peer, const sl_msg_t *msg)
{
    (void) arg;
    snprintf (f.reply_peer, sizeof f.reply_peer, "%.*s", (int) peer.len, peer.ptr);
    recorder_emit (&f.replies, msg);
}

static void *
s_start (void *arg, sl_upcall_call_t *call, const sl_upcall_attempt_t *attempt)
{
    (void) arg;
    cr_assert_lt (f.transfer_count, MAX_TRANSFERS);
    s_transfer_t *t = &f.transfers [f.transfer_count++];
    memset (t, 0, sizeof *t);
    t->call = call;
    snprintf (t->url, sizeof t->url, "%s", attempt->url);
    t->header_count = attempt->header_count;
    for (size_t i = 0; i < attempt->header_count; i++) {
        snprintf (t->headers + strlen (t->headers), sizeof t->headers - strlen (t->headers), "%s\n",
                  attempt->header [i]);
        t->authorizations += strncmp (attempt->header [i], "Authorization:", 14) == 0;
    }
    if (attempt->header_count)
        snprintf (t->last_header, sizeof t->last_header, "%s", attempt->header [attempt->header_count - 1]);
    snprintf (t->body, sizeof t->body, "%.*s", (int) attempt->body.len, attempt->body.ptr);
    t->uploaded = (int64_t) attempt->body.len;
    return t;
}

static void
s_stop (void *arg, void *transfer)
{
    (void) arg;
    s_transfer_t *t = transfer;
    cr_assert_not (t->stopped, "a transfer is stopped once");
    t->stopped = true;
}

static void
s_resume (void *arg, void *transfer)
{
    (void) arg;
    ((s_transfer_t *) transfer)->resumed = true;
}

static long
s_status (void *arg, void *transfer)
{
    (void) arg;
    return ((s_transfer_t *) transfer)->status;
}

static int64_t
s_uploaded (void *arg, void *transfer)
{
    (void) arg;
    return ((s_transfer_t *) transfer)->uploaded;
}

static bool
s_congested (void *arg)
{
    (void) arg;
    return f.congested;
}

static int64_t
s_clock (void *arg)
{
    (void) arg;
    return f.now;
}

static time_t
s_wall (void *arg)
{
    (void) arg;
    return f.wall;
}

static void
s_later (void *arg, const uint8_t *sid)
{
    (void) arg;
    f.later++;
    memcpy (f.later_sid, sid, SL_SID_SIZE);
}

static sl_auth_t *
s_auth (void *arg, const sl_provider_t *provider)
{
    (void) arg;
    (void) provider;
    return f.auth;
}

static const sl_upcall_ops_t s_ops = {
    .send = s_send,
    .reply = s_reply,
    .start = s_start,
    .stop = s_stop,
    .resume = s_resume,
    .status = s_status,
    .uploaded = s_uploaded,
    .congested = s_congested,
    .clock = s_clock,
    .wall = s_wall,
    .later = s_later,
    .auth = s_auth
};

//  --------------------------------------------------------------------------
//  Helpers

static sl_upcall_config_t
s_config (void)
{
    return (sl_upcall_config_t) {
        .connect_timeout_ms = 1000,
        .first_byte_timeout_ms = 5000,
        .idle_timeout_ms = 3000,
        .max_event = 1 << 20,
        .max_retries = 2,
        .retry_base_ms = 100,
        .retry_max_ms = 1000,
        .stall_ms = 200,
        .gateway_dead_ms = 60000,
        .log_max = 1 << 20,
        .log_total = 16 << 20,
        .max_streams = 0
    };
}

static void
s_open (sl_upcall_config_t config)
{
    memset (&f, 0, sizeof f);
    f.wall = WALL_2026;
    f.metrics = sl_metrics_new ();
    const char *urls[SL_DIALECT_MAX] = { 0 };
    urls[SL_DIALECT_OPENAI] = "http://openai.test/v1";
    urls[SL_DIALECT_RESPONSES] = "http://openai.test/v1";
    urls[SL_DIALECT_ANTHROPIC] = "http://anthropic.test";
    urls[SL_DIALECT_GEMINI] = "http://gemini.test/v1beta";
    f.routes = sl_providers_new_default (urls);
    cr_assert_not_null (f.routes);
    config.routes = f.routes;
    f.up = sl_upcall_new (&config, &s_ops, NULL, f.metrics);
}

static void
s_close (void)
{
    sl_upcall_destroy (&f.up);
    sl_providers_destroy (&f.routes);
    sl_metrics_destroy (&f.metrics);
    recorder_clear (&f.sent);
    recorder_clear (&f.replies);
}

static uint64_t
s_counter (const char *name, const char *labels)
{
    //  Registering a metric again returns the one the library counts in.
    return sl_metrics_counter (f.metrics, name, labels, "")->value;
}

//  A request job for stream (all its sid bytes).
static sl_msg_t
s_job (uint8_t stream)
{
    sl_msg_t req;
    sl_msg_init (&req, SL_MSG_REQ);
    memset (req.sid, stream, SL_SID_SIZE);
    req.upstream_dialect = SL_DIALECT_OPENAI;
    req.client_dialect = SL_DIALECT_OPENAI;
    req.model = SL_STR_LIT ("gpt-4o");
    req.body = SL_STR_LIT (BODY);
    return req;
}

//  ... sent from PEER.
static void
s_request (uint8_t stream)
{
    sl_msg_t req = s_job (stream);
    sl_upcall_request (f.up, &req, SL_STR_LIT (PEER));
}

static void
s_ack (uint8_t stream, int64_t activity, uint32_t flags)
{
    sl_msg_t ack;
    sl_msg_init (&ack, SL_MSG_ACK);
    memset (ack.sid, stream, SL_SID_SIZE);
    ack.ts = activity;
    ack.flags = flags;
    sl_upcall_ack (f.up, &ack, SL_STR_LIT (PEER));
}

static s_transfer_t *
s_transfer (void)
{
    cr_assert_gt (f.transfer_count, 0, "a transfer was started");
    return &f.transfers [f.transfer_count - 1];
}

//  The current transfer connects and answers status with its first header line.
static void
s_answer (long status)
{
    s_transfer_t *t = s_transfer ();
    sl_upcall_connected (f.up, t->call);
    char line [64];
    snprintf (line, sizeof line, "HTTP/1.1 %ld\r\n", status);
    sl_upcall_header (f.up, t->call, line, strlen (line));
    t->status = status;
}

static void
s_header (const char *line)
{
    sl_upcall_header (f.up, s_transfer ()->call, line, strlen (line));
}

static sl_upcall_take_t
s_body (const char *text)
{
    return sl_upcall_body (f.up, s_transfer ()->call, text, strlen (text));
}

static size_t
s_sent_of (sl_msg_type_t type)
{
    size_t n = 0;
    for (size_t i = 0; i < f.sent.count; i++)
        n += f.sent.msgs [i]->type == type;
    return n;
}

static const sl_msg_t *
s_last_error (void)
{
    for (size_t i = f.sent.count; i-- > 0;)
        if (f.sent.msgs [i]->type == SL_MSG_ERROR)
            return f.sent.msgs [i];
    cr_assert_fail ("an error went downstream");
    return NULL;
}

static void
s_tick_at (int64_t now)
{
    f.now = now;
    sl_upcall_tick (f.up);
}

//  --------------------------------------------------------------------------
//  Deadlines

Test (sl_upcall, the_connect_deadline_runs_on_the_injected_clock)
{
    sl_upcall_config_t c = s_config ();
    c.max_retries = 0;
    s_open (c);
    s_request (0x11);
    cr_assert_eq (f.transfer_count, 1);
    cr_expect_str_eq (f.transfers [0].url, "http://openai.test/v1/chat/completions");
    cr_expect_gt (f.transfers [0].header_count, 0);
    cr_expect_eq (f.sent.count, 0, "the START waits for the call to commit");
    s_tick_at (999);
    cr_expect_eq (f.sent.count, 0, "not yet");
    s_tick_at (1000);
    cr_assert_eq (f.sent.count, 3, "START, ERROR, END");
    cr_expect_eq (f.sent.msgs [0]->type, SL_MSG_START);
    cr_expect (sl_str_eq (f.sent.msgs [0]->provider, "openai"));
    const sl_msg_t *e = s_last_error ();
    cr_expect (sl_str_eq (e->code, "upstream_connect_timeout"));
    cr_expect_eq (e->status, 504);
    cr_expect (e->flags & SL_F_RETRYABLE, "the client saw nothing");
    cr_expect_eq (f.sent.msgs [2]->type, SL_MSG_END);
    cr_expect (f.transfers [0].stopped);
    cr_expect_eq (s_counter ("sluice_upstream_timeouts_total", "kind=\"connect\""), 1);
    s_close ();
}

Test (sl_upcall, the_first_byte_deadline_runs_from_the_connection)
{
    s_open (s_config ());
    s_request (0x11);
    f.now = 500;
    sl_upcall_connected (f.up, s_transfer ()->call);
    s_tick_at (5499);
    cr_expect_eq (f.sent.count, 0, "the connect deadline no longer applies; the first byte's not yet");
    s_tick_at (5500);
    const sl_msg_t *e = s_last_error ();
    cr_expect (sl_str_eq (e->code, "upstream_first_byte_timeout"));
    cr_expect_eq (e->status, 504);
    cr_expect_eq (f.transfer_count, 1, "a request that went out is not retried on this deadline");
    cr_expect (f.transfers [0].stopped);
    cr_expect_eq (s_counter ("sluice_upstream_timeouts_total", "kind=\"first_byte\""), 1);
    s_close ();
}

Test (sl_upcall, the_idle_deadline_runs_from_the_last_byte)
{
    sl_upcall_config_t c = s_config ();
    c.stall_ms = 60000;                 //  acks are not this test's business
    s_open (c);
    s_request (0x11);
    f.now = 100;
    s_answer (200);
    f.now = 2000;
    cr_assert_eq (s_body (CHUNK), SL_UPCALL_TAKEN);
    cr_assert_geq (s_sent_of (SL_MSG_DELTA), 1, "the chunk's text went downstream");
    size_t before = f.sent.count;
    s_tick_at (4999);
    cr_expect_eq (f.sent.count, before, "3 s after the header, not after the last byte");
    s_tick_at (5000);
    const sl_msg_t *e = s_last_error ();
    cr_expect (sl_str_eq (e->code, "upstream_idle_timeout"));
    cr_expect_eq (e->status, 504);
    cr_expect_not (e->flags & SL_F_RETRYABLE, "the client saw output");
    cr_expect (f.transfers [0].stopped);
    cr_expect_eq (s_counter ("sluice_upstream_timeouts_total", "kind=\"idle\""), 1);
    s_close ();
}

//  --------------------------------------------------------------------------
//  Retries

Test (sl_upcall, a_call_is_retried_only_while_nothing_but_the_start_went_downstream)
{
    s_open (s_config ());
    s_request (0x11);
    //  A 503 before any output: retried after the backoff (100 ms and a
    //  spread of at most a quarter).
    s_answer (503);
    s_body ("{\"error\":{\"type\":\"server_error\",\"message\":\"busy\"}}");
    sl_upcall_done (f.up, s_transfer ()->call, NULL, NULL);
    cr_expect (f.transfers [0].stopped);
    cr_expect_eq (f.sent.count, 0, "nothing downstream");
    cr_expect_eq (s_counter ("sluice_upstream_retries_total", NULL), 1);
    s_tick_at (99);
    cr_expect_eq (f.transfer_count, 1, "not before the backoff");
    s_tick_at (125);
    cr_assert_eq (f.transfer_count, 2, "the second attempt");
    cr_expect_str_eq (f.transfers [1].body, BODY, "with the whole body");
    //  The second attempt streams, then its connection breaks: attempts
    //  remain, but the client saw output, so the stream ends.
    s_answer (200);
    s_body (CHUNK);
    sl_upcall_done (f.up, s_transfer ()->call, "Connection reset", "reset by 10.0.0.5");
    cr_expect_eq (f.transfer_count, 2, "no third attempt");
    cr_expect_eq (s_counter ("sluice_upstream_retries_total", NULL), 1);
    const sl_msg_t *e = s_last_error ();
    cr_expect (sl_str_eq (e->code, "upstream_connection_lost"));
    cr_expect (sl_str_eq (e->message, "openai: the connection broke: Connection reset"),
               "the provider's name and the generic reason, not the address");
    cr_expect_not (e->flags & SL_F_RETRYABLE);
    cr_expect_eq (f.sent.msgs [f.sent.count - 1]->type, SL_MSG_END);
    cr_expect (f.transfers [1].stopped);
    s_close ();
}

Test (sl_upcall, a_connect_deadline_is_retried_until_the_retries_run_out)
{
    s_open (s_config ());
    s_request (0x11);
    s_tick_at (1000);
    cr_expect_eq (f.sent.count, 0, "retried, not ended");
    s_tick_at (1000 + 125);
    cr_assert_eq (f.transfer_count, 2);
    s_tick_at (1125 + 1000);
    s_tick_at (2125 + 250);
    cr_assert_eq (f.transfer_count, 3, "max_retries 2: three attempts");
    s_tick_at (2375 + 1000);
    cr_expect_eq (f.transfer_count, 3);
    const sl_msg_t *e = s_last_error ();
    cr_expect (sl_str_eq (e->code, "upstream_connect_timeout"));
    cr_expect (e->flags & SL_F_RETRYABLE);
    cr_expect_eq (s_counter ("sluice_upstream_timeouts_total", "kind=\"connect\""), 3);
    s_close ();
}

Test (sl_upcall, retry_after_is_honoured_up_to_retry_max)
{
    s_open (s_config ());                //  retry_max_ms 1000
    s_request (0x11);
    s_answer (429);
    s_header ("Retry-After: 1\r\n");
    sl_upcall_done (f.up, s_transfer ()->call, NULL, NULL);
    s_tick_at (999);
    cr_expect_eq (f.transfer_count, 1, "Retry-After: 1 is waited for, whole");
    s_tick_at (1000);
    cr_assert_eq (f.transfer_count, 2);
    //  Longer than retry_max_ms: not waited for; the 429 goes to the client.
    s_answer (429);
    s_header ("retry-after: 2\r\n");
    s_body ("{\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}");
    sl_upcall_done (f.up, s_transfer ()->call, NULL, NULL);
    s_tick_at (10000);
    cr_expect_eq (f.transfer_count, 2);
    cr_expect_eq (s_counter ("sluice_upstream_retries_total", NULL), 1);
    const sl_msg_t *e = s_last_error ();
    cr_expect_eq (e->status, 429);
    cr_expect (sl_str_eq (e->code, "rate_limit_error"));
    cr_expect (sl_str_eq (e->message, "slow down"));
    cr_expect_eq (e->flags & (SL_F_UPSTREAM | SL_F_RETRYABLE), SL_F_UPSTREAM | SL_F_RETRYABLE);
    s_close ();
}

Test (sl_upcall, a_retry_after_date_is_read_on_the_injected_calendar)
{
    s_open (s_config ());
    s_request (0x11);
    s_answer (503);
    s_header ("Retry-After: Thu, 01 Jan 2026 00:00:01 GMT\r\n");
    sl_upcall_done (f.up, s_transfer ()->call, NULL, NULL);
    s_tick_at (999);
    cr_expect_eq (f.transfer_count, 1, "one second after the injected now");
    s_tick_at (1000);
    cr_expect_eq (f.transfer_count, 2);
    s_close ();
}

//  --------------------------------------------------------------------------
//  Provider errors

//  A new stream whose call is answered status with body; the error sent.
static const sl_msg_t *
s_error_answer (uint8_t stream, long status, const char *body)
{
    s_request (stream);
    s_answer (status);
    s_body (body);
    sl_upcall_done (f.up, s_transfer ()->call, NULL, NULL);
    return s_last_error ();
}

Test (sl_upcall, a_provider_error_body_is_read_by_the_stream_s_decoder)
{
    sl_upcall_config_t c = s_config ();
    c.max_retries = 0;
    s_open (c);
    const sl_msg_t *e = s_error_answer (0x11, 400, "{\"error\":{\"message\":\"no such model\","
                                        "\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}");
    cr_expect (sl_str_eq (e->code, "invalid_request_error"), "the type names it");
    cr_expect (sl_str_eq (e->message, "no such model"));
    cr_expect_eq (e->status, 400, "the answer's status");
    cr_expect_eq (e->flags & (SL_F_UPSTREAM | SL_F_RETRYABLE), SL_F_UPSTREAM | SL_F_RETRYABLE);
    //  A numeric code is no name; a body that is no JSON has no message.
    e = s_error_answer (0x22, 404, "{\"error\":{\"code\":404,\"message\":\"gone\"}}");
    cr_expect (sl_str_eq (e->code, "upstream_http_error"));
    cr_expect (sl_str_eq (e->message, "gone"));
    e = s_error_answer (0x33, 502, "<html>Bad Gateway</html>");
    cr_expect (sl_str_eq (e->code, "upstream_http_error"));
    cr_expect (sl_str_eq (e->message, "openai answered HTTP 502"));
    cr_expect_eq (e->status, 502);
    s_close ();
}

//  --------------------------------------------------------------------------
//  The delta log and re-sending

Test (sl_upcall, a_lost_stream_is_sent_again_from_its_log_in_a_new_epoch)
{
    s_open (s_config ());
    s_request (0x11);
    s_answer (200);
    s_body (CHUNK);
    s_body (CHUNK);
    size_t first = f.sent.count;
    cr_assert_geq (first, 3);
    cr_expect_gt (sl_upcall_log_bytes (f.up), 0);
    sl_upcall_lost (f.up, f.sent.msgs [0]->sid, 0, "lost_downstream");
    cr_assert_eq (f.sent.count, 2 * first, "everything again");
    for (size_t i = 0; i < first; i++) {
        const sl_msg_t *a = f.sent.msgs [i], *b = f.sent.msgs [first + i];
        cr_expect_eq (b->epoch, 1);
        cr_expect_eq (b->seq, i, "numbered from 0 again");
        cr_expect_eq (b->type, a->type);
        cr_expect (sl_str_eq_str (b->text, a->text));
    }
    cr_expect_eq (s_counter ("sluice_replays_total", NULL), 1);
    //  A loss in an epoch that is over is old news.
    sl_upcall_lost (f.up, f.sent.msgs [0]->sid, 0, "lost_downstream");
    cr_expect_eq (f.sent.count, 2 * first);
    s_close ();
}

//  The current call streams chunks until a log bound drops its delta log.
static void
s_stream_until_the_log_is_dropped (void)
{
    for (int i = 0; i < 20 && s_counter ("sluice_replay_logs_dropped_total", NULL) == 0; i++)
        s_body (CHUNK);
}

Test (sl_upcall, a_log_over_its_bound_makes_the_stream_not_resendable)
{
    sl_upcall_config_t c = s_config ();
    c.log_max = 400;
    s_open (c);
    s_request (0x11);
    s_answer (200);
    s_stream_until_the_log_is_dropped ();
    cr_assert_eq (s_counter ("sluice_replay_logs_dropped_total", NULL), 1, "dropped and counted");
    cr_expect_eq (sl_upcall_log_bytes (f.up), 0, "its bytes let go");
    s_body (CHUNK);
    cr_expect_eq (s_counter ("sluice_replay_logs_dropped_total", NULL), 1, "once");
    size_t before = f.sent.count;
    sl_upcall_lost (f.up, f.sent.msgs [0]->sid, 0, "aggregator_died");
    //  Nothing to send again: the gateway hears directly, the later
    //  stages get an error and the end, and the call stops.
    cr_expect_eq (s_counter ("sluice_replays_total", NULL), 0);
    cr_expect_eq (s_counter ("sluice_streams_lost_total", NULL), 1);
    cr_assert_eq (f.replies.count, 1);
    cr_expect_str_eq (f.reply_peer, PEER);
    cr_expect (sl_str_eq (f.replies.msgs [0]->code, "stream_lost"));
    cr_expect_eq (f.replies.msgs [0]->status, 502);
    cr_assert_eq (f.sent.count, before + 2);
    cr_expect_eq (f.sent.msgs [before]->type, SL_MSG_ERROR);
    cr_expect_eq (f.sent.msgs [before + 1]->type, SL_MSG_END);
    cr_expect_eq (f.sent.msgs [before]->epoch, 0, "in the epoch the stages hold");
    cr_expect (f.transfers [0].stopped);
    cr_expect_eq (sl_upcall_count (f.up), 0);
    s_close ();
}

Test (sl_upcall, the_total_log_bound_drops_the_log_that_passes_it)
{
    sl_upcall_config_t c = s_config ();
    c.log_total = 600;
    s_open (c);
    s_request (0x11);
    s_answer (200);
    s_body (CHUNK);
    size_t one = sl_upcall_log_bytes (f.up);
    cr_assert_lt (one, 600);
    s_request (0x22);
    s_answer (200);
    s_stream_until_the_log_is_dropped ();
    cr_assert_eq (s_counter ("sluice_replay_logs_dropped_total", NULL), 1);
    cr_expect_eq (sl_upcall_log_bytes (f.up), one, "the first stream's log stays");
    uint8_t sid [SL_SID_SIZE];
    memset (sid, 0x11, sizeof sid);
    sl_upcall_lost (f.up, sid, 0, "lost_downstream");
    cr_expect_eq (s_counter ("sluice_replays_total", NULL), 1, "the first can still be sent again");
    s_close ();
}

Test (sl_upcall, stalled_acks_resend_with_a_doubling_deadline)
{
    s_open (s_config ());               //  stall_ms 200
    s_request (0x11);
    s_answer (200);
    f.now = 10;
    s_body (CHUNK);
    size_t first = f.sent.count;
    s_tick_at (209);
    cr_expect_eq (s_counter ("sluice_replays_total", NULL), 0);
    s_tick_at (210);
    cr_expect_eq (s_counter ("sluice_replays_total", NULL), 1);
    cr_expect_eq (f.sent.msgs [f.sent.count - 1]->epoch, 1);
    cr_expect_eq (f.sent.count, 2 * first);
    //  No ack moves: the next waits twice as long (400), then 800.
    s_tick_at (609);
    cr_expect_eq (s_counter ("sluice_replays_total", NULL), 1);
    s_tick_at (610);
    cr_expect_eq (s_counter ("sluice_replays_total", NULL), 2);
    s_tick_at (1409);
    cr_expect_eq (s_counter ("sluice_replays_total", NULL), 2);
    s_tick_at (1410);
    cr_expect_eq (s_counter ("sluice_replays_total", NULL), 3);
    cr_expect_eq (f.sent.msgs [f.sent.count - 1]->epoch, 3);
    s_close ();
}

Test (sl_upcall, moving_acks_keep_the_stall_clock_still)
{
    s_open (s_config ());
    s_request (0x11);
    s_answer (200);
    f.now = 10;
    s_body (CHUNK);
    f.now = 150;
    s_ack (0x11, 1, 0);                 //  the gateway delivered it
    s_tick_at (1000);
    cr_expect_eq (s_counter ("sluice_replays_total", NULL), 0, "nothing unacknowledged");
    s_body (CHUNK);                     //  at 1000
    f.now = 1100;
    s_ack (0x11, 1, 0);                 //  alive, but the counter stands still
    s_tick_at (1199);
    cr_expect_eq (s_counter ("sluice_replays_total", NULL), 0);
    s_tick_at (1200);
    cr_expect_eq (s_counter ("sluice_replays_total", NULL), 1, "stalled since the send at 1000");
    s_close ();
}

Test (sl_upcall, a_start_alone_does_not_start_the_stall_clock)
{
    s_open (s_config ());               //  stall_ms 200, first byte 5000
    f.now = 100;                        //  (0 would read as "no send yet")
    s_request (0x11);
    sl_upcall_connected (f.up, s_transfer ()->call);
    s_tick_at (5099);
    cr_expect_eq (s_counter ("sluice_replays_total", NULL), 0, "a model thinking is the upstream's silence");
    cr_expect_eq (f.sent.count, 0, "not even the START before the call commits");
    s_close ();
}

Test (sl_upcall, a_stream_lost_again_after_every_resend_is_given_up)
{
    s_open (s_config ());
    s_request (0x11);
    s_answer (200);
    s_body (CHUNK);
    //  Re-sent SL_UPCALL_MAX_RESENDS times, then given up.
    for (int i = 0; i <= SL_UPCALL_MAX_RESENDS; i++)
        sl_upcall_lost (f.up, f.sent.msgs [0]->sid, (uint32_t) i, "lost_downstream");
    cr_expect_eq (s_counter ("sluice_replays_total", NULL), SL_UPCALL_MAX_RESENDS);
    cr_expect_eq (s_counter ("sluice_streams_lost_total", NULL), 1);
    cr_assert_eq (f.replies.count, 1);
    cr_expect (sl_str_eq (f.replies.msgs [0]->code, "stream_lost"));
    cr_expect_eq (sl_upcall_count (f.up), 0);
    s_close ();
}

//  --------------------------------------------------------------------------
//  The request body, the gateway, back-pressure, the bound on streams

Test (sl_upcall, the_body_is_let_go_once_the_response_is_under_way)
{
    s_open (s_config ());
    s_request (0x11);
    cr_expect_eq (sl_upcall_body_bytes (f.up), strlen (BODY));
    s_answer (200);
    s_transfer ()->uploaded = (int64_t) strlen (BODY) - 1;
    s_body (CHUNK);
    cr_expect_eq (sl_upcall_body_bytes (f.up), strlen (BODY), "held while the transfer still sends it");
    s_transfer ()->uploaded = (int64_t) strlen (BODY);
    s_body (CHUNK);
    cr_expect_eq (sl_upcall_body_bytes (f.up), 0, "let go: no retry can need it now");
    s_close ();
}

//  What an attempt is made of (its URL, headers, the credential lines)
//  goes with the body: no retry can need it once the client saw a byte.
Test (sl_upcall, an_attempts_url_headers_and_keys_are_let_go_with_the_body)
{
    s_open (s_config ());
    s_request (0x11);
    size_t held = sl_upcall_attempt_bytes (f.up);
    cr_expect_gt (held, 0);
    s_answer (200);
    s_transfer ()->uploaded = (int64_t) strlen (BODY) - 1;
    s_body (CHUNK);
    cr_expect_eq (sl_upcall_attempt_bytes (f.up), held, "held while the transfer still sends");
    s_transfer ()->uploaded = (int64_t) strlen (BODY);
    s_body (CHUNK);
    cr_expect_eq (sl_upcall_attempt_bytes (f.up), 0, "let go with the body");
    cr_expect_eq (sl_upcall_count (f.up), 1, "the stream goes on");
    s_close ();
}

Test (sl_upcall, no_ack_for_the_gateway_deadline_cancels_the_call)
{
    sl_upcall_config_t c = s_config ();
    c.gateway_dead_ms = 2000;
    c.first_byte_timeout_ms = 60000;
    s_open (c);
    s_request (0x11);
    sl_upcall_connected (f.up, s_transfer ()->call);
    f.now = 1000;
    s_ack (0x11, 0, 0);
    s_tick_at (2999);
    cr_expect_eq (sl_upcall_count (f.up), 1);
    s_tick_at (3000);
    cr_expect_eq (sl_upcall_count (f.up), 0);
    cr_expect (f.transfers [0].stopped, "the upstream call is cancelled");
    const sl_msg_t *e = s_last_error ();
    cr_expect (sl_str_eq (e->code, "client_cancelled"));
    cr_expect_eq (e->status, 499);
    cr_expect_eq (f.sent.msgs [f.sent.count - 1]->type, SL_MSG_END);
    cr_expect_eq (s_counter ("sluice_gateway_gone_total", NULL), 1);
    s_close ();
}

Test (sl_upcall, the_last_ack_ends_the_stream_and_an_unknown_one_is_answered)
{
    s_open (s_config ());
    s_request (0x11);
    s_answer (200);
    s_body (CHUNK);
    s_ack (0x11, 1, SL_F_LAST);         //  the client's response ended first
    cr_expect_eq (sl_upcall_count (f.up), 0);
    cr_expect (f.transfers [0].stopped);
    const sl_msg_t *e = s_last_error ();
    cr_expect (sl_str_eq (e->code, "response_closed"));
    cr_expect_eq (f.sent.msgs [f.sent.count - 1]->type, SL_MSG_END);
    s_ack (0x11, 2, 0);
    cr_assert_eq (f.replies.count, 1);
    cr_expect (sl_str_eq (f.replies.msgs [0]->code, "upstream_lost"));
    cr_expect_eq (s_counter ("sluice_acks_unknown_total", NULL), 1);
    s_close ();
}

//  A stream let go of early (here: cancelled) whose ERROR and END a stage
//  lost is ended again in a new epoch, from its START; a normal end, an
//  old epoch and a stream forgotten after SL_ENDED_KEEP_MS are not.
Test (sl_upcall, a_stream_let_go_of_early_is_ended_again_when_its_end_is_lost)
{
    s_open (s_config ());
    s_request (0x11);
    s_answer (200);
    s_body (CHUNK);
    sl_msg_t cancel;
    sl_msg_init (&cancel, SL_MSG_CANCEL);
    memset (cancel.sid, 0x11, SL_SID_SIZE);
    sl_upcall_cancel (f.up, &cancel);
    cr_assert_eq (sl_upcall_count (f.up), 0, "let go of");
    size_t before = f.sent.count;
    const sl_msg_t *start = f.sent.msgs [0];
    cr_assert_eq (start->type, SL_MSG_START);
    sl_upcall_lost (f.up, cancel.sid, 0, "aggregator_reconnected");
    cr_assert_eq (f.sent.count, before + 3, "START, ERROR, END");
    const sl_msg_t *again = f.sent.msgs [before];
    cr_expect_eq (again->type, SL_MSG_START);
    cr_expect_eq (again->epoch, 1, "in a new epoch");
    cr_expect_eq (again->seq, 0);
    cr_expect (sl_str_eq_str (again->model, start->model), "the stream's own START");
    cr_expect_eq (again->client_dialect, start->client_dialect);
    cr_expect (sl_str_eq (f.sent.msgs [before + 1]->code, "client_cancelled"));
    cr_expect_eq (f.sent.msgs [before + 1]->status, 499);
    cr_expect_eq (f.sent.msgs [before + 1]->seq, 1);
    cr_expect_eq (f.sent.msgs [before + 2]->type, SL_MSG_END);
    cr_expect_eq (f.sent.msgs [before + 2]->epoch, 1);
    cr_expect_eq (s_counter ("sluice_streams_ended_again_total", NULL), 1);
    //  The old epoch is over; a loss of the new end is answered again.
    sl_upcall_lost (f.up, cancel.sid, 0, "lost_downstream");
    cr_expect_eq (f.sent.count, before + 3);
    sl_upcall_lost (f.up, cancel.sid, 1, "lost_downstream");
    cr_expect_eq (f.sent.count, before + 6);
    cr_expect_eq (f.sent.msgs [before + 3]->epoch, 2);
    //  Forgotten once kept long enough.
    s_tick_at (f.now + SL_ENDED_KEEP_MS + 1);
    sl_upcall_lost (f.up, cancel.sid, 2, "lost_downstream");
    cr_expect_eq (f.sent.count, before + 6);

    //  A stream whose client had all of it is not remembered.
    s_request (0x22);
    s_answer (200);
    s_body (CHUNK);
    s_body ("data: [DONE]\n\n");
    sl_upcall_done (f.up, s_transfer ()->call, NULL, NULL);
    s_ack (0x22, 5, SL_F_LAST);
    cr_assert_eq (sl_upcall_count (f.up), 0);
    before = f.sent.count;
    uint8_t sid [SL_SID_SIZE];
    memset (sid, 0x22, SL_SID_SIZE);
    sl_upcall_lost (f.up, sid, 0, "lost_downstream");
    cr_expect_eq (f.sent.count, before, "its end reached the client: nothing to end again");
    s_close ();
}

Test (sl_upcall, back_pressure_pauses_the_read_and_is_not_idleness)
{
    s_open (s_config ());               //  idle 3000
    s_request (0x11);
    s_answer (200);
    f.congested = true;
    cr_expect_eq (s_body (CHUNK), SL_UPCALL_PAUSE);
    cr_expect_eq (s_sent_of (SL_MSG_DELTA), 0, "the bytes were not taken");
    cr_expect_eq (s_counter ("sluice_upstream_paused_total", NULL), 1);
    s_tick_at (10000);
    cr_expect_eq (s_sent_of (SL_MSG_ERROR), 0, "no idle deadline while paused");
    f.congested = false;
    sl_upcall_resume (f.up);
    cr_expect (s_transfer ()->resumed);
    s_tick_at (12999);
    cr_expect_eq (s_sent_of (SL_MSG_ERROR), 0, "idleness counts from the resume");
    cr_expect_eq (s_body (CHUNK), SL_UPCALL_TAKEN);
    cr_expect_geq (s_sent_of (SL_MSG_DELTA), 1);
    s_close ();
}

Test (sl_upcall, over_max_streams_a_request_is_refused_to_its_gateway)
{
    sl_upcall_config_t c = s_config ();
    c.max_streams = 1;
    s_open (c);
    s_request (0x11);
    s_request (0x22);
    cr_expect_eq (sl_upcall_count (f.up), 1);
    cr_expect_eq (f.transfer_count, 1, "no upstream call for it");
    cr_assert_eq (f.replies.count, 1);
    cr_expect (sl_str_eq (f.replies.msgs [0]->code, "overloaded_error"));
    cr_expect_eq (f.replies.msgs [0]->status, 503);
    cr_expect (f.replies.msgs [0]->flags & SL_F_RETRYABLE);
    cr_expect_eq (s_counter ("sluice_streams_refused_total", NULL), 1);
    s_request (0x11);
    cr_expect_eq (f.transfer_count, 1, "a duplicate request is ignored");
    s_close ();
}

//  --------------------------------------------------------------------------
//  The stream's start

Test (sl_upcall, the_start_carries_the_request_bytes_for_a_usage_estimate)
{
    s_open (s_config ());
    s_request (0x31);
    s_answer (200);
    s_body (CHUNK);
    cr_assert_gt (f.sent.count, 0);
    const sl_msg_t *start = f.sent.msgs [0];
    cr_assert_eq (start->type, SL_MSG_START);
    cr_expect_eq (start->request_bytes, strlen (BODY), "rqb: the body the upstream is sent");
    cr_expect_null (start->body.ptr, "but not the body itself");
    s_close ();
}

//  --------------------------------------------------------------------------
//  Inline answers

#define INLINE_ANSWER \
    "data: {\"id\":\"c1\",\"model\":\"mcp\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"," \
    "\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":" \
    "{\"name\":\"mcp__github__create_issue\",\"arguments\":\"{\\\"title\\\":\\\"x\\\"}\"}}]}}]}\n\n" \
    "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n" \
    "data: [DONE]\n\n"

//  A job that carries its answer, with every field that would otherwise
//  make a call: a routed provider, a model, a credential, a body.
static void
s_request_inline (uint8_t stream, const char *answer)
{
    sl_msg_t req = s_job (stream);
    req.auth = SL_STR_LIT ("Authorization: Bearer sk-client");
    req.provider = SL_STR_LIT ("mcp:github");
    req.mcp = SL_STR_LIT ("tools/call create_issue");
    req.inline_answer = sl_str (answer);
    sl_upcall_request (f.up, &req, SL_STR_LIT (PEER));
}

Test (sl_upcall, an_inline_answer_makes_no_upstream_call_and_is_decoded_later)
{
    s_open (s_config ());
    s_request_inline (0x41, INLINE_ANSWER);
    cr_expect_eq (f.transfer_count, 0, "no transfer for an inline answer");
    cr_assert_eq (f.sent.count, 1, "the start only: nothing is decoded inside the job's handling");
    const sl_msg_t *start = f.sent.msgs [0];
    cr_expect (sl_str_eq (start->provider, "mcp:github"), "the provider named is the job's");
    cr_expect (sl_str_eq (start->mcp, "tools/call create_issue"), "mcp goes into the start");
    cr_expect_null (start->inline_answer.ptr, "the answer does not");
    cr_expect_null (start->auth.ptr);
    cr_assert_eq (f.later, 1, "the service is asked to read it later");
    uint8_t sid [SL_SID_SIZE];
    memset (sid, 0x41, SL_SID_SIZE);
    cr_expect (memcmp (f.later_sid, sid, SL_SID_SIZE) == 0);
    sl_upcall_inline (f.up, sid);
    cr_expect_eq (f.transfer_count, 0, "still no transfer");
    bool call = false, done = false;
    for (size_t i = 0; i < f.sent.count; i++) {
        const sl_msg_t *m = f.sent.msgs [i];
        if (m->type == SL_MSG_DELTA && m->kind == SL_D_TOOL_CALL && sl_str_eq (m->name, "mcp__github__create_issue"))
            call = true;
        if (m->type == SL_MSG_DELTA && m->kind == SL_D_DONE)
            done = true;
    }
    cr_expect (call, "the tool call was decoded by the openai decoder");
    cr_expect (done, "and the answer's end");
    cr_expect_eq (s_sent_of (SL_MSG_ERROR), 0);
    cr_expect_eq (s_sent_of (SL_MSG_END), 1);
    //  Read once: a second turn adds nothing.
    size_t sent = f.sent.count;
    sl_upcall_inline (f.up, sid);
    cr_expect_eq (f.sent.count, sent);
    //  The stream is held until the gateway's last ack, replayable.
    sl_upcall_lost (f.up, sid, 0, "lost_downstream");
    cr_expect_eq (f.sent.count, 2 * sent, "replayed from the log in a new epoch");
    cr_expect_eq (f.transfer_count, 0, "a replay calls nobody either");
    s_ack (0x41, 1, SL_F_LAST);
    cr_expect_eq (sl_upcall_count (f.up), 0);
    s_close ();
}

Test (sl_upcall, a_failed_inline_answer_is_not_retried)
{
    s_open (s_config ());
    s_request_inline (0x42, "data: {not json\n\n");
    uint8_t sid [SL_SID_SIZE];
    memset (sid, 0x42, SL_SID_SIZE);
    sl_upcall_inline (f.up, sid);
    cr_expect_eq (f.transfer_count, 0);
    cr_expect (sl_str_eq (s_last_error ()->code, "upstream_malformed"));
    cr_expect_eq (s_sent_of (SL_MSG_END), 1);
    s_tick_at (60000 - 1);
    cr_expect_eq (f.transfer_count, 0, "no retry");
    cr_expect_eq (s_counter ("sluice_upstream_retries_total", NULL), 0);
    s_close ();
}

Test (sl_upcall, an_inline_answer_waits_for_credit_like_a_transfer)
{
    s_open (s_config ());
    s_request_inline (0x43, INLINE_ANSWER);
    uint8_t sid [SL_SID_SIZE];
    memset (sid, 0x43, SL_SID_SIZE);
    f.congested = true;
    sl_upcall_inline (f.up, sid);
    cr_expect_eq (s_sent_of (SL_MSG_DELTA), 0, "nothing taken while the next stage holds back credit");
    cr_expect_eq (s_counter ("sluice_upstream_paused_total", NULL), 1);
    s_tick_at (10000);
    cr_expect_eq (s_sent_of (SL_MSG_ERROR), 0, "no idle deadline while paused");
    f.congested = false;
    sl_upcall_resume (f.up);
    cr_expect_eq (f.later, 2, "the resume asks for another turn");
    sl_upcall_inline (f.up, sid);
    cr_expect_geq (s_sent_of (SL_MSG_DELTA), 2);
    cr_expect_eq (s_sent_of (SL_MSG_END), 1);
    s_close ();
}

Test (sl_upcall, a_cancelled_inline_answer_is_never_read)
{
    s_open (s_config ());
    s_request_inline (0x44, INLINE_ANSWER);
    sl_msg_t cancel;
    sl_msg_init (&cancel, SL_MSG_CANCEL);
    memset (cancel.sid, 0x44, SL_SID_SIZE);
    sl_upcall_cancel (f.up, &cancel);
    size_t sent = f.sent.count;
    sl_upcall_inline (f.up, cancel.sid);
    cr_expect_eq (f.sent.count, sent, "its turn finds nothing");
    cr_expect_eq (s_sent_of (SL_MSG_DELTA), 0);
    s_close ();
}

Test (sl_upcall, a_refused_inline_job_names_its_own_provider_and_reads_nothing)
{
    s_open (s_config ());
    sl_msg_t req = s_job (0x45);
    req.provider = SL_STR_LIT ("mcp:github");
    req.inline_answer = SL_STR_LIT (INLINE_ANSWER);
    req.flags = SL_F_DENIED;
    req.body = SL_STR_NULL;
    req.code = SL_STR_LIT ("policy_violation");
    req.status = 403;
    sl_upcall_request (f.up, &req, SL_STR_LIT (PEER));
    cr_expect_eq (f.transfer_count, 0);
    cr_expect_eq (f.later, 0, "no answer is read for a refused job");
    cr_assert_gt (f.sent.count, 0);
    cr_expect (sl_str_eq (f.sent.msgs [0]->provider, "mcp:github"), "not a provider routed by model");
    cr_expect (sl_str_eq (s_last_error ()->code, "policy_violation"));
    cr_expect_eq (s_sent_of (SL_MSG_DELTA), 0);
    cr_expect_eq (s_sent_of (SL_MSG_END), 1);
    s_close ();
}

//  --------------------------------------------------------------------------
//  Several providers: failover, holds, keys, ejection

#define ABODY "{\"model\":\"claude-x\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]," \
              "\"stream\":true}"
#define OVERLOADED "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}"

//  Providers a (Anthropic), b (OpenAI, two keys) and c (OpenAI).
static void
s_open_route (sl_upcall_config_t config)
{
    s_open (config);
    sl_providers_destroy (&f.routes);
    f.routes = sl_providers_new ();
    const char *keys [] = { "SL_TEST_FO_K1", "SL_TEST_FO_K2" };
    const sl_provider_t a = { .name = "a", .dialect = SL_DIALECT_ANTHROPIC, .base_url = "http://a.test",
                              .key_env = "", .forward_auth = false };
    const sl_provider_t b = { .name = "b", .dialect = SL_DIALECT_OPENAI, .base_url = "http://b.test/v1",
                              .key_env = "", .forward_auth = false, .key_envs = keys, .key_env_count = 2 };
    const sl_provider_t c = { .name = "c", .dialect = SL_DIALECT_OPENAI, .base_url = "http://c.test/v1",
                              .key_env = "", .forward_auth = false };
    cr_assert_eq (sl_providers_add_provider (f.routes, &a), 0);
    cr_assert_eq (sl_providers_add_provider (f.routes, &b), 0);
    cr_assert_eq (sl_providers_add_provider (f.routes, &c), 0);
    setenv ("SL_TEST_FO_K1", "key-one", 1);
    setenv ("SL_TEST_FO_K2", "key-two", 1);
    sl_upcall_destroy (&f.up);
    sl_metrics_destroy (&f.metrics);
    f.metrics = sl_metrics_new ();
    config.routes = f.routes;
    f.up = sl_upcall_new (&config, &s_ops, NULL, f.metrics);
    cr_assert_not_null (f.up);
}

//  A job for a's Anthropic body that may fail over to b (the OpenAI body)
//  and, with three, to c.
static void
s_request_route (uint8_t stream, bool three)
{
    sl_buf_t fo = { 0 };
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_STEP);
    m.provider = SL_STR_LIT ("a");
    m.upstream_dialect = SL_DIALECT_ANTHROPIC;
    m.model = SL_STR_LIT ("claude-x");
    sl_msg_encode (&m, &fo);
    sl_msg_init (&m, SL_MSG_STEP);
    m.provider = SL_STR_LIT ("b");
    m.upstream_dialect = SL_DIALECT_OPENAI;
    m.model = SL_STR_LIT ("gpt-4o");
    m.body = SL_STR_LIT (BODY);
    sl_msg_encode (&m, &fo);
    if (three) {
        m.provider = SL_STR_LIT ("c");
        sl_msg_encode (&m, &fo);
    }
    sl_msg_t req = s_job (stream);
    req.upstream_dialect = SL_DIALECT_ANTHROPIC;
    req.model = SL_STR_LIT ("claude-sonnet");
    req.provider = SL_STR_LIT ("a");
    req.body = SL_STR_LIT (ABODY);
    req.failover = sl_buf_str (&fo);
    sl_upcall_request (f.up, &req, SL_STR_LIT (PEER));
    sl_buf_free (&fo);
}

static bool
s_contains (sl_str_t s, const char *needle)
{
    return s.ptr && memmem (s.ptr, s.len, needle, strlen (needle)) != NULL;
}

static void
s_done (void)
{
    sl_upcall_done (f.up, s_transfer ()->call, NULL, NULL);
}

static const sl_msg_t *
s_first_sent (sl_msg_type_t type)
{
    for (size_t i = 0; i < f.sent.count; i++)
        if (f.sent.msgs [i]->type == type)
            return f.sent.msgs [i];
    cr_assert_fail ("a %s went downstream", sl_msg_type_name (type));
    return NULL;
}

Test (sl_upcall_failover, a_529_moves_to_the_next_provider_at_once_in_its_dialect)
{
    sl_upcall_config_t config = s_config ();
    config.max_retries = 0;
    s_open_route (config);
    s_request_route (0x51, false);
    cr_assert_eq (f.transfer_count, 1);
    cr_expect_str_eq (f.transfers [0].url, "http://a.test/v1/messages");
    cr_expect_str_eq (f.transfers [0].body, ABODY);
    s_answer (529);
    s_body (OVERLOADED);
    s_done ();
    cr_expect_eq (f.sent.count, 0, "nothing downstream: no START before the call commits");
    cr_assert_eq (f.transfer_count, 2, "the next provider, at once, no backoff");
    cr_expect_str_eq (f.transfers [1].url, "http://b.test/v1/chat/completions");
    cr_expect_str_eq (f.transfers [1].body, BODY, "its own body, in its dialect");
    cr_expect (strstr (f.transfers [1].headers, "Authorization: Bearer key-"), "%s", f.transfers [1].headers);
    s_answer (200);
    s_body (CHUNK);
    const sl_msg_t *start = s_first_sent (SL_MSG_START);
    cr_expect_eq (f.sent.msgs [0], start, "the START first");
    cr_expect (sl_str_eq (start->provider, "b"), "the provider that served");
    cr_expect_eq (start->upstream_dialect, SL_DIALECT_OPENAI, "its dialect, what the stages translate from");
    cr_expect (sl_str_eq (start->model, "claude-sonnet"), "the client's model");
    cr_expect_eq (start->request_bytes, strlen (BODY));
    cr_expect_null (start->failover.ptr);
    char att [512];
    snprintf (att, sizeof att, "%.*s", (int) start->attempts.len, start->attempts.ptr);
    cr_expect_str_eq (att, "[{\"provider\":\"a\",\"dialect\":\"anthropic\",\"model\":\"claude-x\","
                           "\"result\":\"http_status\",\"status\":529},"
                           "{\"provider\":\"b\",\"dialect\":\"openai\",\"model\":\"gpt-4o\",\"result\":\"ok\","
                           "\"key\":0}]");
    cr_expect_geq (s_sent_of (SL_MSG_DELTA), 1, "b's chunk, decoded as OpenAI's");
    cr_expect_eq (s_counter ("sluice_upstream_failovers_total", NULL), 1);
    s_close ();
}

Test (sl_upcall_failover, a_retry_after_holds_a_provider_for_every_stream)
{
    sl_upcall_config_t config = s_config ();
    config.max_retries = 0;
    s_open_route (config);
    f.now = 1000;
    s_request_route (0x52, false);
    s_answer (429);
    s_header ("Retry-After: 30\r\n");
    s_done ();
    cr_assert_eq (f.transfer_count, 2, "not waited on: b at once");
    cr_expect_str_eq (f.transfers [1].url, "http://b.test/v1/chat/completions");
    //  Another stream, 10 s later: a is passed by.
    f.now = 11000;
    s_request_route (0x53, false);
    cr_assert_eq (f.transfer_count, 3);
    cr_expect_str_eq (f.transfers [2].url, "http://b.test/v1/chat/completions", "a is held for 20 s more");
    s_answer (200);
    s_body (CHUNK);
    const sl_msg_t *start = NULL;
    for (size_t i = 0; i < f.sent.count; i++)
        if (f.sent.msgs [i]->type == SL_MSG_START && f.sent.msgs [i]->sid [0] == 0x53)
            start = f.sent.msgs [i];
    cr_assert_not_null (start);
    cr_expect (s_contains (start->attempts, "{\"provider\":\"a\",\"dialect\":\"anthropic\",\"model\":"
                                                 "\"claude-x\",\"result\":\"held\",\"until_ms\":20000}"),
               "%.*s", (int) start->attempts.len, start->attempts.ptr);
    //  Its time passed: a is the first choice again.
    f.now = 31000;
    s_request_route (0x54, false);
    cr_expect_str_eq (s_transfer ()->url, "http://a.test/v1/messages");
    s_close ();
}

Test (sl_upcall_failover, every_provider_down_ends_with_the_last_cause_and_each_tried)
{
    sl_upcall_config_t config = s_config ();
    config.max_retries = 0;
    s_open_route (config);
    s_request_route (0x55, false);
    s_answer (429);
    s_header ("Retry-After: 1\r\n");
    s_done ();
    s_answer (503);
    s_body ("{\"error\":{\"type\":\"server_error\",\"message\":\"b is down\"}}");
    s_done ();
    cr_expect_eq (f.transfer_count, 2, "one attempt each, no round");
    cr_assert_eq (f.sent.count, 3, "START, ERROR, END");
    const sl_msg_t *e = s_last_error ();
    cr_expect_eq (e->status, 503, "the last provider's status");
    cr_expect (sl_str_eq (e->code, "server_error"));
    cr_expect (sl_str_eq (e->message, "b is down (providers tried: a: HTTP 429 (retry after 1 s); b: HTTP 503)"),
               "%.*s", (int) e->message.len, e->message.ptr);
    cr_expect (e->flags & SL_F_RETRYABLE, "the client saw nothing: a status, not a broken stream");
    s_close ();
}

Test (sl_upcall_failover, a_refused_key_moves_to_the_provider_s_next_key_only)
{
    sl_upcall_config_t config = s_config ();
    config.max_retries = 0;
    s_open_route (config);
    s_request_route (0x56, false);
    s_answer (500);
    s_done ();
    cr_assert_eq (f.transfer_count, 2);
    bool first_one = strstr (f.transfers [1].headers, "Bearer key-one") != NULL;
    s_answer (401);
    s_done ();
    cr_assert_eq (f.transfer_count, 3, "the other key, at once");
    cr_expect_str_eq (f.transfers [2].url, "http://b.test/v1/chat/completions");
    cr_expect (strstr (f.transfers [2].headers, first_one ? "Bearer key-two" : "Bearer key-one"), "%s",
               f.transfers [2].headers);
    s_answer (403);
    s_body ("{\"error\":{\"type\":\"permission_error\",\"message\":\"no\"}}");
    s_done ();
    cr_expect_eq (f.transfer_count, 3, "every key refused: no other provider, no round");
    cr_expect_eq (s_last_error ()->status, 403);
    //  The next stream starts on the key after.
    s_request_route (0x57, false);
    s_answer (500);
    s_done ();
    cr_expect (strstr (s_transfer ()->headers, first_one ? "Bearer key-two" : "Bearer key-one"), "keys in turn");
    s_close ();
}

Test (sl_upcall_failover, a_provider_failing_repeatedly_is_ejected_then_probed_and_readmitted)
{
    sl_upcall_config_t config = s_config ();
    config.max_retries = 0;
    config.eject = (sl_failover_config_t) { 2, 10000, 5000 };
    s_open_route (config);
    f.now = 100;
    for (uint8_t i = 0; i < 2; i++) {
        s_request_route (0x60 + i, false);
        cr_expect_str_eq (s_transfer ()->url, "http://a.test/v1/messages");
        sl_upcall_done (f.up, s_transfer ()->call, "Couldn't connect to server", NULL);
        s_answer (200);
        s_body (CHUNK);
    }
    cr_expect_eq (s_counter ("sluice_provider_ejections_total", "provider=\"a\""), 1);
    cr_expect_eq (s_counter ("sluice_provider_ejections_total", "provider=\"b\""), 0);
    cr_expect_eq (sl_failover_state (sl_upcall_failover (f.up), "a", f.now), SL_FAILOVER_COOLING);
    int before = f.transfer_count;
    s_request_route (0x62, false);
    cr_expect_eq (f.transfer_count, before + 1, "one attempt");
    cr_expect_str_eq (s_transfer ()->url, "http://b.test/v1/chat/completions", "a passed by");
    //  After the cool-down: one probe goes to a, the next stream passes
    //  it by while the probe is out; the probe is served: readmitted.
    f.now = 5100;
    s_request_route (0x63, false);
    s_transfer_t *probe = s_transfer ();
    cr_expect_str_eq (probe->url, "http://a.test/v1/messages");
    s_request_route (0x64, false);
    cr_expect_str_eq (s_transfer ()->url, "http://b.test/v1/chat/completions");
    sl_upcall_connected (f.up, probe->call);
    sl_upcall_header (f.up, probe->call, "HTTP/1.1 200\r\n", 14);
    probe->status = 200;
    const char *event = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m1\","
                        "\"model\":\"claude-x\",\"usage\":{\"input_tokens\":1}}}\n\n";
    sl_upcall_body (f.up, probe->call, event, strlen (event));
    cr_expect_eq (sl_failover_state (sl_upcall_failover (f.up), "a", f.now), SL_FAILOVER_HEALTHY);
    s_request_route (0x65, false);
    cr_expect_str_eq (s_transfer ()->url, "http://a.test/v1/messages", "a serves again");
    s_close ();
}

Test (sl_upcall_failover, an_answer_that_does_not_decode_is_not_retried_but_counts)
{
    sl_upcall_config_t config = s_config ();
    config.eject = (sl_failover_config_t) { 1, 10000, 5000 };
    s_open_route (config);
    s_request_route (0x66, false);
    s_answer (200);
    s_body ("event: message_start\ndata: {not json at all\n\n");
    s_done ();
    cr_expect_eq (f.transfer_count, 1, "committed to a: not failed over, not retried");
    cr_expect (sl_str_eq (s_last_error ()->code, "upstream_malformed"));
    cr_expect_eq (s_counter ("sluice_provider_ejections_total", "provider=\"a\""), 1, "it counts: ejected");
    s_close ();
}

//  Each attempt's body is cut by its own provider's framing: a call that
//  fails over from an SSE provider to Bedrock reads AWS's event stream.
Test (sl_upcall_failover, the_next_provider_s_stream_is_read_in_its_own_framing)
{
    sl_upcall_config_t config = s_config ();
    config.max_retries = 0;
    s_open_route (config);
    const sl_provider_t d = { .name = "d", .dialect = SL_DIALECT_BEDROCK, .base_url = "http://d.test",
                              .region = "us-east-1", .key_env = "", .forward_auth = false };
    cr_assert_eq (sl_providers_add_provider (f.routes, &d), 0);
    sl_buf_t fo = { 0 };
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_STEP);
    m.provider = SL_STR_LIT ("a");
    m.upstream_dialect = SL_DIALECT_ANTHROPIC;
    m.model = SL_STR_LIT ("claude-x");
    sl_msg_encode (&m, &fo);
    m.provider = SL_STR_LIT ("d");
    m.upstream_dialect = SL_DIALECT_BEDROCK;
    m.model = SL_STR_LIT ("amazon.nova-x");
    m.body = SL_STR_LIT ("{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"hi\"}]}]}");
    sl_msg_encode (&m, &fo);
    sl_msg_t req = s_job (0x67);
    req.upstream_dialect = SL_DIALECT_ANTHROPIC;
    req.model = SL_STR_LIT ("claude-sonnet");
    req.provider = SL_STR_LIT ("a");
    req.body = SL_STR_LIT (ABODY);
    req.failover = sl_buf_str (&fo);
    sl_upcall_request (f.up, &req, SL_STR_LIT (PEER));
    sl_buf_free (&fo);
    cr_assert_eq (f.transfer_count, 1);
    s_answer (529);
    s_body (OVERLOADED);
    s_done ();
    cr_assert_eq (f.transfer_count, 2, "failed over to d");
    cr_expect (strstr (f.transfers [1].url, "/converse-stream"), "%s", f.transfers [1].url);
    s_answer (200);
    sl_buf_t events = { 0 };
    cr_assert_eq (sl_evstream_encode_event (&events, "messageStart", SL_STR_LIT ("{\"role\":\"assistant\"}")), 0);
    cr_assert_eq (sl_evstream_encode_event (&events, "contentBlockDelta",
                                            SL_STR_LIT ("{\"contentBlockIndex\":0,\"delta\":{\"text\":\"Hi\"}}")), 0);
    cr_assert_eq (sl_evstream_encode_event (&events, "contentBlockStop", SL_STR_LIT ("{\"contentBlockIndex\":0}")), 0);
    cr_assert_eq (sl_evstream_encode_event (&events, "messageStop", SL_STR_LIT ("{\"stopReason\":\"end_turn\"}")), 0);
    cr_expect_eq (sl_upcall_body (f.up, s_transfer ()->call, events.data, events.len), SL_UPCALL_TAKEN);
    sl_buf_free (&events);
    s_done ();
    const sl_msg_t *start = s_first_sent (SL_MSG_START);
    cr_expect (sl_str_eq (start->provider, "d"));
    cr_expect_eq (start->upstream_dialect, SL_DIALECT_BEDROCK);
    cr_expect_geq (s_sent_of (SL_MSG_DELTA), 1, "d's events, decoded as Converse's");
    cr_expect_eq (s_sent_of (SL_MSG_ERROR), 0, "no framing error");
    s_close ();
}

//  A route of d (Bedrock's Converse) first, then b (OpenAI): d's stream
//  begins with an exception frame of type.
static void
s_bedrock_first (const char *type)
{
    const sl_provider_t d = { .name = "d", .dialect = SL_DIALECT_BEDROCK, .base_url = "http://d.test",
                              .region = "us-east-1", .key_env = "", .forward_auth = false };
    cr_assert_eq (sl_providers_add_provider (f.routes, &d), 0);
    sl_buf_t fo = { 0 };
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_STEP);
    m.provider = SL_STR_LIT ("d");
    m.upstream_dialect = SL_DIALECT_BEDROCK;
    m.model = SL_STR_LIT ("amazon.nova-x");
    sl_msg_encode (&m, &fo);
    sl_msg_init (&m, SL_MSG_STEP);
    m.provider = SL_STR_LIT ("b");
    m.upstream_dialect = SL_DIALECT_OPENAI;
    m.model = SL_STR_LIT ("gpt-4o");
    m.body = SL_STR_LIT (BODY);
    sl_msg_encode (&m, &fo);
    sl_msg_t req = s_job (0x68);
    req.upstream_dialect = SL_DIALECT_BEDROCK;
    req.model = SL_STR_LIT ("claude-sonnet");
    req.provider = SL_STR_LIT ("d");
    req.body = SL_STR_LIT ("{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"hi\"}]}]}");
    req.failover = sl_buf_str (&fo);
    sl_upcall_request (f.up, &req, SL_STR_LIT (PEER));
    sl_buf_free (&fo);
    cr_assert_eq (f.transfer_count, 1);
    s_answer (200);
    sl_buf_t frame = { 0 };
    cr_assert_eq (sl_evstream_encode_exception (&frame, type, SL_STR_LIT ("{\"message\":\"Too many requests\"}")), 0);
    cr_expect_eq (sl_upcall_body (f.up, s_transfer ()->call, frame.data, frame.len), SL_UPCALL_STOP,
                  "nothing more is read of d's answer");
    sl_buf_free (&frame);
    //  The transfer ends as curl ends a write the callback refused.
    sl_upcall_done (f.up, s_transfer ()->call, "Failure writing output to destination", NULL);
}

Test (sl_upcall_failover, an_exception_before_the_first_byte_moves_to_the_next_provider)
{
    const char *types [] = { "throttlingException", "serviceUnavailableException", "internalServerException",
                             "modelStreamErrorException" };
    const long status [] = { 429, 503, 500, 502 };
    for (size_t i = 0; i < 4; i++) {
        sl_upcall_config_t config = s_config ();
        config.max_retries = 0;
        s_open_route (config);
        s_bedrock_first (types [i]);
        cr_expect_eq (s_sent_of (SL_MSG_ERROR), 0, "%s: no error downstream", types [i]);
        cr_assert_eq (f.transfer_count, 2, "%s: failed over to b", types [i]);
        cr_expect_str_eq (f.transfers [1].url, "http://b.test/v1/chat/completions");
        s_answer (200);
        s_body (CHUNK);
        const sl_msg_t *start = s_first_sent (SL_MSG_START);
        cr_expect (sl_str_eq (start->provider, "b"), "%s", types [i]);
        char att [512], want [256];
        snprintf (att, sizeof att, "%.*s", (int) start->attempts.len, start->attempts.ptr);
        snprintf (want, sizeof want, "[{\"provider\":\"d\",\"dialect\":\"bedrock\",\"model\":\"amazon.nova-x\","
                                     "\"result\":\"exception\",\"status\":%ld},", status [i]);
        cr_expect_eq (strncmp (att, want, strlen (want)), 0, "%s", att);
        cr_expect_geq (s_sent_of (SL_MSG_DELTA), 1, "b's chunk");
        cr_expect_eq (s_counter ("sluice_upstream_failovers_total", NULL), 1);
        s_close ();
    }
}

Test (sl_upcall_failover, an_exception_no_provider_serves_is_the_stream_s_error)
{
    sl_upcall_config_t config = s_config ();
    config.max_retries = 0;
    s_open_route (config);
    s_bedrock_first ("throttlingException");
    cr_assert_eq (f.transfer_count, 2);
    s_answer (503);
    s_body ("{\"error\":{\"message\":\"down\",\"type\":\"server_error\"}}");
    s_done ();
    const sl_msg_t *error = s_first_sent (SL_MSG_ERROR);
    cr_expect_eq (error->status, 503, "the last provider's cause");
    cr_expect (s_contains (error->message, "d: HTTP 429"), "every provider tried: %.*s", (int) error->message.len,
               error->message.ptr);
    s_close ();

    //  One provider only, the exception is its answer: sent as its error.
    config = s_config ();
    config.max_retries = 0;
    s_open_route (config);
    const sl_provider_t d = { .name = "d", .dialect = SL_DIALECT_BEDROCK, .base_url = "http://d.test",
                              .region = "us-east-1", .key_env = "", .forward_auth = false };
    cr_assert_eq (sl_providers_add_provider (f.routes, &d), 0);
    sl_buf_t fo = { 0 };
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_STEP);
    m.provider = SL_STR_LIT ("d");
    m.upstream_dialect = SL_DIALECT_BEDROCK;
    m.model = SL_STR_LIT ("amazon.nova-x");
    sl_msg_encode (&m, &fo);
    sl_msg_t req = s_job (0x69);
    req.upstream_dialect = SL_DIALECT_BEDROCK;
    req.model = SL_STR_LIT ("nova");
    req.provider = SL_STR_LIT ("d");
    req.body = SL_STR_LIT ("{\"messages\":[]}");
    req.failover = sl_buf_str (&fo);
    sl_upcall_request (f.up, &req, SL_STR_LIT (PEER));
    sl_buf_free (&fo);
    cr_assert_eq (f.transfer_count, 1);
    s_answer (200);
    sl_buf_t frame = { 0 };
    cr_assert_eq (sl_evstream_encode_exception (&frame, "throttlingException",
                                                SL_STR_LIT ("{\"message\":\"Too many requests\"}")), 0);
    sl_upcall_body (f.up, s_transfer ()->call, frame.data, frame.len);
    sl_buf_free (&frame);
    sl_upcall_done (f.up, s_transfer ()->call, "Failure writing output to destination", NULL);
    cr_expect_eq (f.transfer_count, 1, "nowhere else to go");
    error = s_first_sent (SL_MSG_ERROR);
    cr_expect_eq (error->status, 429);
    cr_expect (sl_str_eq (error->code, "throttlingException"), "%.*s", (int) error->code.len, error->code.ptr);
    cr_expect (s_contains (error->message, "Too many requests"), "%.*s", (int) error->message.len,
               error->message.ptr);
    s_close ();
}

//  An Anthropic client's anthropic-beta header reaches Claude on Bedrock
//  in the body's anthropic_beta, not as a header; the Anthropic provider
//  after it gets the header as sent.
Test (sl_upcall_failover, the_beta_header_goes_in_the_body_for_claude_on_bedrock)
{
    sl_upcall_config_t config = s_config ();
    config.max_retries = 0;
    s_open_route (config);
    const sl_provider_t e = { .name = "e", .dialect = SL_DIALECT_BEDROCK_ANTHROPIC, .base_url = "http://e.test",
                              .region = "us-east-1", .key_env = "", .forward_auth = false };
    cr_assert_eq (sl_providers_add_provider (f.routes, &e), 0);
    sl_buf_t fo = { 0 };
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_STEP);
    m.provider = SL_STR_LIT ("e");
    m.upstream_dialect = SL_DIALECT_BEDROCK_ANTHROPIC;
    m.model = SL_STR_LIT ("anthropic.claude-x");
    m.body = SL_STR_LIT ("{\"max_tokens\":5,\"messages\":[]}");
    sl_msg_encode (&m, &fo);
    sl_msg_init (&m, SL_MSG_STEP);
    m.provider = SL_STR_LIT ("a");
    m.upstream_dialect = SL_DIALECT_ANTHROPIC;
    m.model = SL_STR_LIT ("claude-x");
    sl_msg_encode (&m, &fo);
    sl_msg_t req = s_job (0x6a);
    req.client_dialect = SL_DIALECT_ANTHROPIC;
    req.upstream_dialect = SL_DIALECT_BEDROCK_ANTHROPIC;
    req.model = SL_STR_LIT ("claude-sonnet");
    req.provider = SL_STR_LIT ("e");
    req.body = SL_STR_LIT ("{\"max_tokens\":5,\"messages\":[]}");
    req.passthrough = SL_STR_LIT ("anthropic-beta: context-1m-2025-08-07\n");
    req.failover = sl_buf_str (&fo);
    sl_upcall_request (f.up, &req, SL_STR_LIT (PEER));
    sl_buf_free (&fo);
    cr_assert_eq (f.transfer_count, 1);
    cr_expect_str_eq (f.transfers [0].body, "{\"max_tokens\":5,\"messages\":[],"
                                            "\"anthropic_beta\":[\"context-1m-2025-08-07\"]}");
    cr_expect_null (strcasestr (f.transfers [0].headers, "anthropic-beta"), "%s", f.transfers [0].headers);
    s_answer (529);
    s_body (OVERLOADED);
    s_done ();
    cr_assert_eq (f.transfer_count, 2, "failed over to a");
    cr_expect (strcasestr (f.transfers [1].headers, "anthropic-beta: context-1m-2025-08-07"), "%s",
               f.transfers [1].headers);
    cr_expect_null (strstr (f.transfers [1].body, "anthropic_beta"), "%s", f.transfers [1].body);
    s_close ();
}

Test (sl_upcall_failover, a_missing_first_byte_moves_on_and_the_rounds_are_bounded)
{
    sl_upcall_config_t config = s_config ();    //  max_retries 2, first byte 5000
    s_open_route (config);
    s_request_route (0x67, true);
    sl_upcall_connected (f.up, s_transfer ()->call);
    s_tick_at (5000);
    cr_assert_eq (f.transfer_count, 2, "no first byte from a: b");
    cr_expect_str_eq (s_transfer ()->url, "http://b.test/v1/chat/completions");
    //  Every provider fails every time: bounded by the rounds.
    int64_t now = 5000;
    int answered = 0;
    for (int i = 0; i < 40 && !s_sent_of (SL_MSG_END); i++) {
        if (f.transfer_count > answered) {
            //  A new attempt: it fails too.
            answered = f.transfer_count;
            s_answer (503);
            s_done ();
        }
        else
            s_tick_at (now += 500);     //  a round's backoff
    }
    cr_expect_eq (s_sent_of (SL_MSG_END), 1, "the stream ended");
    //  a (once: its missing first byte starts no round), then b and c in
    //  each of the three rounds (a again in rounds 2 and 3).
    cr_expect_leq (f.transfer_count, 1 + 3 * 3);
    cr_expect (sl_str_eq (s_last_error ()->code, "upstream_http_error") || s_last_error ()->status == 503);
    s_close ();
}

//  --------------------------------------------------------------------------
//  Credentials from a source (sl_auth.h)

//  A credential source the test drives: each attempt asks it; it answers
//  what state says, and counts the asking.
typedef struct {
    sl_auth_t base;
    int state;                          //  sl_auth_state_t
    int asked;
} s_source_t;

static int
s_source_authorize (sl_auth_t *base, const sl_auth_request_t *req, sl_buf_t *lines, size_t *count, sl_buf_t *why)
{
    s_source_t *self = (s_source_t *) base;
    self->asked++;
    cr_expect_str_eq (req->method, "POST");
    cr_expect_eq (req->body.len, strlen (BODY), "a signature sees the whole body");
    if (self->state == SL_AUTH_READY) {
        sl_buf_printf (lines, "Authorization: Bearer token-%d", self->asked);
        sl_buf_putc (lines, 0);
        (*count)++;
    }
    else
    if (self->state == SL_AUTH_FAILED)
        sl_buf_puts (why, "the token service said no");
    return self->state;
}

static void
s_source_destroy (sl_auth_t *base)
{
    (void) base;
}

static const sl_auth_vt_t s_source_vt = { s_source_authorize, s_source_destroy };

//  A request from a client that sent a key of its own, which a provider
//  with a credential source must never get.
static void
s_request_with_client_key (uint8_t stream)
{
    sl_msg_t req = s_job (stream);
    req.auth = SL_STR_LIT ("Authorization: Bearer client-key");
    sl_upcall_request (f.up, &req, SL_STR_LIT (PEER));
}

Test (sl_upcall, a_call_waits_for_credentials_being_fetched_and_starts_on_news)
{
    s_source_t source = { { &s_source_vt }, SL_AUTH_PENDING, 0 };
    sl_upcall_config_t config = s_config ();
    config.auth_timeout_ms = 2000;
    s_open (config);
    f.auth = &source.base;
    s_request_with_client_key (1);
    cr_expect_eq (f.transfer_count, 0, "nothing is sent without credentials");
    cr_expect_eq (source.asked, 1);
    s_tick_at (1500);                   //  within the wait: still waiting
    cr_expect_eq (f.transfer_count, 0);
    cr_expect_eq (s_sent_of (SL_MSG_ERROR), 0);
    sl_upcall_authorized (f.up);        //  news, but still fetching
    cr_expect_eq (f.transfer_count, 0);
    source.state = SL_AUTH_READY;
    sl_upcall_authorized (f.up);
    cr_assert_eq (f.transfer_count, 1);
    cr_expect_str_eq (s_transfer ()->last_header, "Authorization: Bearer token-3");
    cr_expect_eq (s_transfer ()->authorizations, 1, "the source's credential alone, not the client's key");
    //  Past the credential deadline, a call under way is not touched by it.
    s_tick_at (2500);
    cr_expect_eq (s_sent_of (SL_MSG_ERROR), 0);
    s_close ();
}

Test (sl_upcall, a_credential_that_cannot_be_had_ends_the_call_cleanly)
{
    s_source_t source = { { &s_source_vt }, SL_AUTH_FAILED, 0 };
    s_open (s_config ());
    f.auth = &source.base;
    s_request_with_client_key (1);
    cr_expect_eq (f.transfer_count, 0, "never a request without its credentials");
    const sl_msg_t *e = s_last_error ();
    cr_expect (sl_str_eq (e->code, "upstream_credentials"));
    cr_expect_eq (e->status, 502);
    cr_expect (e->flags & SL_F_RETRYABLE, "nothing was sent: another provider may serve it");
    char text [256];
    snprintf (text, sizeof text, "%.*s", (int) e->message.len, e->message.ptr);
    cr_expect_not_null (strstr (text, "the token service said no"), "%s", text);
    cr_expect_eq (s_sent_of (SL_MSG_END), 1);
    s_close ();
}

Test (sl_upcall, credentials_that_never_come_end_the_call_at_their_deadline)
{
    s_source_t source = { { &s_source_vt }, SL_AUTH_PENDING, 0 };
    sl_upcall_config_t config = s_config ();
    config.auth_timeout_ms = 2000;
    s_open (config);
    f.auth = &source.base;
    s_request (1);
    s_tick_at (1999);
    cr_expect_eq (s_sent_of (SL_MSG_ERROR), 0);
    s_tick_at (2000);
    const sl_msg_t *e = s_last_error ();
    cr_expect (sl_str_eq (e->code, "upstream_credentials_timeout"));
    cr_expect_eq (e->status, 504);
    cr_expect_eq (f.transfer_count, 0);
    s_close ();
}

Test (sl_upcall, every_attempt_is_authorized_afresh)
{
    s_source_t source = { { &s_source_vt }, SL_AUTH_READY, 0 };
    s_open (s_config ());
    f.auth = &source.base;
    s_request (1);
    cr_assert_eq (f.transfer_count, 1);
    s_answer (429);
    sl_upcall_done (f.up, s_transfer ()->call, NULL, NULL);
    s_tick_at (10000);                  //  the backoff is over: the second attempt
    cr_assert_eq (f.transfer_count, 2);
    cr_expect_eq (source.asked, 2, "a signature is made for each attempt");
    cr_expect_str_eq (s_transfer ()->last_header, "Authorization: Bearer token-2");
    s_close ();
}
