/*  Integration: the ingest against the mock's misbehaviours, over real
    sockets.

    Through the gateway (the OpenAI dialect works end to end): every
    misbehaviour ends the client's response with the right clear error,
    and the same ingest goes on serving other streams.

    Without the gateway, for all four dialects: the test plays gateway and
    aggregator itself (a DEALER into the ingest's inbox sends REQ
    messages, a ROUTER bound as the ingest's --next collects what it
    emits), so every decoder and every upstream path runs over HTTP.
*/
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <czmq.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_dialect.h"
#include "proto/sl_msg.h"
#include "tests/integration/harness.h"
#include "tests/integration/sse_client.h"

#define TIMEOUT_MS 15000
#define COLLECT_MS 20000                //  bound on waiting for every END

//  Short deadlines, one quick retry: the misbehaviours end fast.
static const char *const s_ingest_flags [] = {
    "--idle-timeout-ms", "500", "--first-byte-timeout-ms", "500", "--connect-timeout-ms", "1000",
    "--max-retries", "1", "--retry-base-ms", "50", "--retry-max-ms", "2000", NULL
};

static const char *
s_chat (const char *model)
{
    static char body [256];
    snprintf (body, sizeof body,
              "{\"model\":\"%s\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", model);
    return body;
}

//  A normal request still works: the ingest is serving.
static void
s_expect_serving (sluice_stack_t *s)
{
    sl_buf_t body = { 0 };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-text"),
                                NULL, &body, TIMEOUT_MS), 200);
    chat_stream_t cs;
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect (cs.done_last, "a normal stream completes after a misbehaving one");
    chat_stream_free (&cs);
    sl_buf_free (&body);
}

Test (ingest, misbehaviours_through_the_gateway)
{
    stack_opts_t opts = { .mock_delay_ms = 1, .ingest_args = s_ingest_flags };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s, "the stack came up");
    struct {
        const char *model;
        int status;                     //  HTTP status the client gets
        const char *type;               //  error type it reads
    } cases [] = {
        { "mock-stall", 200, "upstream_idle_timeout" },
        { "mock-hang", 504, "upstream_first_byte_timeout" },
        { "mock-drop", 200, "upstream_connection_lost" },
        //  Only the role chunk came before the garbage: the client saw
        //  nothing, so it gets a real HTTP error.
        { "mock-garbage", 502, "upstream_malformed" },
        { "mock-429", 429, "rate_limit_exceeded" },
        { "mock-500", 500, "server_error" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_buf_t body = { 0 };
        int status = http_request (s->http_port, "POST", "/v1/chat/completions", s_chat (cases [i].model),
                                   NULL, &body, TIMEOUT_MS);
        cr_expect_eq (status, cases [i].status, "%s: HTTP %d", cases [i].model, status);
        const char *text = sl_buf_cstr (&body);
        if (status == 200) {
            chat_stream_t cs;
            chat_stream_parse (text, &cs);
            cr_expect_eq (cs.errors, 1, "%s: one error event", cases [i].model);
            cr_expect_str_eq (sl_buf_cstr (&cs.error_type), cases [i].type, "%s", cases [i].model);
            cr_expect_not (cs.saw_done, "%s: a failed stream does not end with [DONE]", cases [i].model);
            chat_stream_free (&cs);
        }
        else {
            char want [96];
            snprintf (want, sizeof want, "\"type\":\"%s\"", cases [i].type);
            cr_expect_not_null (strstr (text, want), "%s: %s", cases [i].model, text);
        }
        sl_buf_free (&body);
        s_expect_serving (s);
    }
    //  429 and 500 were each retried once before the error reached the client.
    int ingest_metrics = atoi (s->metrics [1]);
    cr_expect_eq (metric_value (ingest_metrics, "sluice_upstream_retries_total"), 2);
    cr_expect_eq (metric_value (ingest_metrics, "sluice_streams_active"), 0);
    //  A flaky upstream (503, then fine) is invisible to the client.
    sl_buf_t body = { 0 };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-flaky"),
                                NULL, &body, TIMEOUT_MS), 200);
    chat_stream_t cs;
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect_eq (cs.errors, 0);
    cr_expect (cs.done_last);
    cr_expect_gt (cs.content.len, 50);
    chat_stream_free (&cs);
    sl_buf_free (&body);
    cr_expect_eq (metric_value (ingest_metrics, "sluice_upstream_retries_total"), 3);
    cr_expect_eq (stack_stop (s), 0, "every process exits cleanly");
}

//  An agent's request carries its whole conversation. The gateway keeps the
//  client's body until the job leaves, the ingest keeps it for a retry only
//  while one is possible: once the response is under way (and curl sent the
//  body), holding it for the rest of the stream would cost hundreds of KiB
//  per live stream in each.
#define BIG_HISTORY (256u << 10)

static int
s_connect_local (int port)
{
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port),
                             .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    if (fd >= 0 && connect (fd, (struct sockaddr *) &a, sizeof a) != 0) {
        close (fd);
        fd = -1;
    }
    return fd;
}

Test (ingest, a_request_body_is_let_go_once_the_response_is_under_way, .timeout = 60)
{
    static const char *const flags [] = { "--idle-timeout-ms", "20000", NULL };
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .mock_delay_ms = 1, .ingest_args = flags });
    cr_assert_not_null (s, "the stack came up");
    int im = atoi (s->metrics [1]);
    //  mock-stall: three events, then silence with the connection open, so
    //  the stream stays live while the test looks.
    sl_buf_t body = { 0 };
    sl_buf_puts (&body, "{\"model\":\"mock-stall\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"");
    for (size_t i = 0; i < BIG_HISTORY; i++)
        sl_buf_putc (&body, 'a' + (char) (i % 26));
    sl_buf_puts (&body, "\"}]}");
    sl_buf_t head = { 0 };
    sl_buf_printf (&head, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                   "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", body.len);
    int fd = s_connect_local (s->http_port);
    cr_assert_geq (fd, 0);
    cr_assert_eq (send (fd, head.data, head.len, MSG_NOSIGNAL), (ssize_t) head.len);
    size_t off = 0;
    while (off < body.len) {
        ssize_t n = send (fd, body.data + off, body.len - off, MSG_NOSIGNAL);
        cr_assert_gt (n, 0);
        off += (size_t) n;
    }
    //  Its first events went downstream: the response is under way.
    int64_t deadline = zclock_mono () + TIMEOUT_MS;
    while (metric_value (im, "sluice_deltas_total") < 1 && zclock_mono () < deadline)
        zclock_sleep (10);
    cr_assert_geq (metric_value (im, "sluice_deltas_total"), 1, "the stream started");
    cr_expect_eq (metric_value (im, "sluice_streams_active"), 1, "the stream is live");
    cr_expect_eq (metric_value (im, "sluice_request_body_bytes"), 0,
                  "the ingest holds no %u KiB request body once the response is under way", BIG_HISTORY >> 10);
    cr_expect_eq (metric_value (atoi (s->metrics [5]), "sluice_request_body_bytes"), 0,
                  "nor does the gateway, once the job left");
    close (fd);
    sl_buf_free (&head);
    sl_buf_free (&body);
    s_expect_serving (s);
    cr_expect_eq (stack_stop (s), 0, "every process exits cleanly");
}

//  A model slow to its first byte (a reasoning model thinks for tens of
//  seconds) is not a stalled pipeline: only the START went downstream,
//  and it makes nothing the gateway could acknowledge. Taking its silence
//  for a stall replayed the stream every --stall-ms, doubling, into a
//  pipeline that had lost nothing.
Test (ingest, a_slow_first_byte_is_waited_for_not_replayed)
{
    static const char *const flags [] = { "--stall-ms", "200", "--first-byte-timeout-ms", "2500", NULL };
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .mock_delay_ms = 1, .ingest_args = flags });
    cr_assert_not_null (s, "the stack came up");
    sl_buf_t body = { 0 };
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", s_chat ("mock-hang"),
                               NULL, &body, TIMEOUT_MS);
    cr_expect_eq (status, 504, "the first byte deadline ends it: %d %s", status, sl_buf_cstr (&body));
    cr_expect_not_null (strstr (sl_buf_cstr (&body), "upstream_first_byte_timeout"), "%s", sl_buf_cstr (&body));
    sl_buf_free (&body);
    int ingest_metrics = atoi (s->metrics [1]);
    cr_expect_eq (metric_value (ingest_metrics, "sluice_replays_total"), 0,
                  "2.5 s of silence before the first byte with --stall-ms 200: no replay");
    s_expect_serving (s);
    cr_expect_eq (stack_stop (s), 0, "every process exits cleanly");
}

//  --------------------------------------------------------------------------
//  Playing gateway and aggregator

typedef struct {
    uint8_t sid [SL_SID_SIZE];
    int dialect;
    const char *model;
    sl_buf_t prov;
    sl_buf_t text;
    sl_buf_t calls;                     //  "name(args);" per call
    sl_buf_t error_code;
    int error_status;
    uint32_t error_flags;
    int errors;
    bool started, done, ended;
    uint64_t next_seq;                  //  sequence numbers arrive in order
    bool out_of_order;
} s_stream_t;

typedef struct {
    char dir [256];
    proc_t *mock, *ingest;
    int mock_port;
    zsock_t *gateway;                   //  DEALER into the ingest's inbox
    zsock_t *aggregator;                //  ROUTER the ingest sends to
    char keys [300];                    //  the bus's keys (the test plays two stages)
    sl_codec_t *codec;
    int ingest_metrics;                 //  port of its /metrics
} s_rig_t;

//  The mock (replaying files from the rig's directory), and the ROUTER the
//  ingest will send to.
static bool
s_rig_mock (s_rig_t *rig)
{
    memset (rig, 0, sizeof *rig);
    snprintf (rig->dir, sizeof rig->dir, "/tmp/sluice-ingest-XXXXXX");
    if (!mkdtemp (rig->dir))
        return false;
    const char *mock_args [] = { "--host", "127.0.0.1", "--port", "0", "--delay-ms", "1",
                                 "--replay-dir", rig->dir, NULL };
    rig->mock = proc_start (rig->dir, "mock", mock_args);
    char port [16];
    if (!proc_wait_log (rig->mock, "\"listening\"", "http=127.0.0.1:", port, sizeof port, TIMEOUT_MS))
        return false;
    rig->mock_port = atoi (port);
    if (harness_keygen (rig->dir, rig->keys, sizeof rig->keys))
        return false;
    //  The aggregator's inbox: a CURVE server with the aggregator's key.
    rig->aggregator = zsock_new (ZMQ_ROUTER);
    rig->codec = sl_codec_new ();
    return harness_curve (rig->aggregator, rig->keys, "aggregator", NULL) == 0
        && zsock_bind (rig->aggregator, "tcp://127.0.0.1:*") > 0;
}

//  The ingest, with the mock as every dialect's default provider. The test
//  plays the gateway without acks, so the ingest's stall and gateway
//  deadlines are set past any test's length.
static bool
s_rig_ingest (s_rig_t *rig, const char *const *extra)
{
    char next [128], inbox [128], openai [64], anthropic [64], gemini [64];
    snprintf (next, sizeof next, "%s", zsock_endpoint (rig->aggregator));
    snprintf (openai, sizeof openai, "http://127.0.0.1:%d/v1", rig->mock_port);
    snprintf (anthropic, sizeof anthropic, "http://127.0.0.1:%d", rig->mock_port);
    snprintf (gemini, sizeof gemini, "http://127.0.0.1:%d/v1beta", rig->mock_port);
    const char *args [48] = { "--bind", "tcp://127.0.0.1:*", "--next", next, "--metrics-port", "0",
                              "--openai-base-url", openai, "--anthropic-base-url", anthropic,
                              "--gemini-base-url", gemini, "--stall-ms", "600000",
                              "--gateway-dead-ms", "600000", "--keys", rig->keys, NULL };
    for (int i = 0, n = 18; extra && extra [i] && n < 47; i++)
        args [n++] = extra [i];
    rig->ingest = proc_start (rig->dir, "ingest", args);
    char port [16];
    if (!proc_wait_log (rig->ingest, "\"inbox_bound\"", "endpoint=", inbox, sizeof inbox, TIMEOUT_MS)
    ||  !proc_wait_log (rig->ingest, "\"started\"", "metrics_port=", port, sizeof port, TIMEOUT_MS)) {
        proc_dump (rig->ingest);
        return false;
    }
    rig->ingest_metrics = atoi (port);
    //  The gateway: a CURVE client with the gateway's key.
    rig->gateway = zsock_new (ZMQ_DEALER);
    return harness_curve (rig->gateway, rig->keys, "gateway", "ingest") == 0
        && zsock_connect (rig->gateway, "%s", inbox) == 0;
}

static bool
s_rig_start (s_rig_t *rig, const char *const *extra)
{
    return s_rig_mock (rig) && s_rig_ingest (rig, extra);
}

static int
s_rig_stop (s_rig_t *rig)
{
    int unclean = 0;
    proc_t *procs [] = { rig->ingest, rig->mock };
    for (int i = 0; i < 2; i++) {
        if (!procs [i])
            continue;
        if (proc_stop (procs [i], 10000) != 0) {
            unclean++;
            proc_dump (procs [i]);
        }
        unlink (procs [i]->log_path);
        free (procs [i]);
    }
    zsock_destroy (&rig->gateway);
    zsock_destroy (&rig->aggregator);
    sl_codec_destroy (&rig->codec);
    char replay [300];
    snprintf (replay, sizeof replay, "%s/error-first.sse", rig->dir);
    unlink (replay);
    if (rig->keys [0]) {
        char cmd [400];
        snprintf (cmd, sizeof cmd, "rm -rf '%s'", rig->keys);
        if (system (cmd) != 0)
            fprintf (stderr, "cannot remove %s\n", rig->keys);
    }
    rmdir (rig->dir);
    return unclean;
}

//  The request body of a dialect (Gemini names the model in the path).
static void
s_body (int dialect, const char *model, int nonce, sl_buf_t *out)
{
    if (dialect == SL_DIALECT_GEMINI)
        sl_buf_printf (out, "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi %d\"}]}]}", nonce);
    else
    if (dialect == SL_DIALECT_RESPONSES)
        sl_buf_printf (out, "{\"model\":\"%s\",\"stream\":true,\"input\":\"hi %d\"}", model, nonce);
    else
        sl_buf_printf (out, "{\"model\":\"%s\",\"stream\":true,\"max_tokens\":64,"
                            "\"messages\":[{\"role\":\"user\",\"content\":\"hi %d\"}]}", model, nonce);
}

static void
s_send (s_rig_t *rig, const sl_msg_t *msg)
{
    sl_buf_t wire = { 0 };
    sl_msg_encode (msg, &wire);
    zframe_t *frame = zframe_new (wire.data, wire.len);
    cr_assert_eq (zframe_send (&frame, rig->gateway, 0), 0);
    sl_buf_free (&wire);
}

static void
s_request (s_rig_t *rig, s_stream_t *st, int nonce)
{
    sl_buf_t body = { 0 };
    s_body (st->dialect, st->model, nonce, &body);
    sl_msg_t req;
    sl_msg_init (&req, SL_MSG_REQ);
    sl_sid_new (st->sid);
    memcpy (req.sid, st->sid, SL_SID_SIZE);
    req.client_dialect = SL_DIALECT_OPENAI;
    req.upstream_dialect = (uint8_t) st->dialect;
    req.model = sl_str (st->model);
    req.body = sl_buf_str (&body);
    req.reply_to = SL_STR_LIT ("test-gateway");
    req.flags = SL_F_STREAM;
    s_send (rig, &req);
    sl_buf_free (&body);
}

static void
s_on_message (s_stream_t *streams, size_t count, const sl_msg_t *m)
{
    for (size_t i = 0; i < count; i++) {
        s_stream_t *st = &streams [i];
        if (memcmp (st->sid, m->sid, SL_SID_SIZE) != 0)
            continue;
        if (m->seq != st->next_seq)
            st->out_of_order = true;
        st->next_seq = m->seq + 1;
        if (m->type == SL_MSG_START) {
            st->started = true;
            sl_buf_append_str (&st->prov, m->provider);
        }
        else
        if (m->type == SL_MSG_ERROR) {
            st->errors++;
            sl_buf_append_str (&st->error_code, m->code);
            st->error_status = m->status;
            st->error_flags = m->flags;
        }
        else
        if (m->type == SL_MSG_END)
            st->ended = true;
        else
        if (m->type == SL_MSG_DELTA) {
            if (m->kind == SL_D_TEXT)
                sl_buf_append_str (&st->text, m->text);
            if (m->kind == SL_D_DONE)
                st->done = true;
            if (m->kind == SL_D_TOOL_CALL) {
                if (m->name.ptr) {
                    if (st->calls.len)
                        sl_buf_puts (&st->calls, ");");
                    sl_buf_append_str (&st->calls, m->name);
                    sl_buf_putc (&st->calls, '(');
                }
                sl_buf_append_str (&st->calls, m->text);
            }
        }
        return;
    }
}

static bool
s_all_ended (s_stream_t *streams, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (!streams [i].ended)
            return false;
    return true;
}

//  Read what the ingest sends until every stream ended (bounded).
static void
s_collect (s_rig_t *rig, s_stream_t *streams, size_t count)
{
    zpoller_t *poller = zpoller_new (rig->aggregator, NULL);
    int64_t deadline = zclock_mono () + COLLECT_MS;
    while (!s_all_ended (streams, count) && zclock_mono () < deadline) {
        if (!zpoller_wait (poller, 100))
            continue;
        zmsg_t *msg = zmsg_recv (rig->aggregator);
        if (!msg)
            break;
        zframe_t *identity = zmsg_pop (msg);
        zframe_t *data = zmsg_pop (msg);
        size_t offset = 0;
        sl_msg_t m;
        while (data && sl_codec_decode (rig->codec, zframe_data (data), zframe_size (data), &offset, &m) == 0)
            if (m.type != SL_MSG_HB)
                s_on_message (streams, count, &m);
        zframe_destroy (&identity);
        zframe_destroy (&data);
        zmsg_destroy (&msg);
    }
    zpoller_destroy (&poller);
}

static void
s_stream_free (s_stream_t *st)
{
    sl_buf_free (&st->prov);
    sl_buf_free (&st->text);
    sl_buf_free (&st->calls);
    sl_buf_free (&st->error_code);
}

static const int s_dialects [] = {
    SL_DIALECT_OPENAI, SL_DIALECT_ANTHROPIC, SL_DIALECT_RESPONSES, SL_DIALECT_GEMINI
};
#define DIALECTS 4

Test (ingest, every_dialect_and_every_misbehaviour_at_once)
{
    s_rig_t rig;
    cr_assert (s_rig_start (&rig, s_ingest_flags), "mock and ingest came up");
    //  The expected outcome of each model, per dialect where it differs.
    struct {
        const char *model;
        const char *code [DIALECTS];    //  NULL: ends with done
        int status;
        uint32_t flags;
    } cases [] = {
        { "mock-tools", { NULL, NULL, NULL, NULL }, 0, 0 },
        { "mock-flaky", { NULL, NULL, NULL, NULL }, 0, 0 },
        { "mock-stall", { "upstream_idle_timeout", "upstream_idle_timeout", "upstream_idle_timeout",
                          "upstream_idle_timeout" }, 504, 0 },
        { "mock-hang", { "upstream_first_byte_timeout", "upstream_first_byte_timeout",
                         "upstream_first_byte_timeout", "upstream_first_byte_timeout" }, 504, SL_F_RETRYABLE },
        { "mock-drop", { "upstream_connection_lost", "upstream_connection_lost", "upstream_connection_lost",
                         "upstream_connection_lost" }, 502, 0 },
        { "mock-garbage", { "upstream_malformed", "upstream_malformed", "upstream_malformed",
                            "upstream_malformed" }, 502, 0 },
        { "mock-429", { "rate_limit_exceeded", "rate_limit_error", "rate_limit_exceeded",
                        "RESOURCE_EXHAUSTED" }, 429, SL_F_UPSTREAM | SL_F_RETRYABLE },
        { "mock-500", { "server_error", "api_error", "server_error", "INTERNAL" }, 500,
          SL_F_UPSTREAM | SL_F_RETRYABLE },
        { "mock-error", { "server_error", "overloaded_error", "server_error", "INTERNAL" }, -1, SL_F_UPSTREAM },
    };
    enum { CASES = sizeof cases / sizeof cases [0] };
    static s_stream_t streams [CASES * DIALECTS];
    memset (streams, 0, sizeof streams);
    for (size_t c = 0; c < CASES; c++)
        for (size_t d = 0; d < DIALECTS; d++) {
            s_stream_t *st = &streams [c * DIALECTS + d];
            st->dialect = s_dialects [d];
            st->model = cases [c].model;
            s_request (&rig, st, (int) (c * DIALECTS + d));
        }
    s_collect (&rig, streams, CASES * DIALECTS);
    for (size_t c = 0; c < CASES; c++)
        for (size_t d = 0; d < DIALECTS; d++) {
            s_stream_t *st = &streams [c * DIALECTS + d];
            const char *what = cases [c].model, *dialect = sl_dialect_name (st->dialect);
            cr_expect (st->started && st->ended, "%s/%s: START and END", what, dialect);
            cr_expect_not (st->out_of_order, "%s/%s: sequence numbers in order", what, dialect);
            cr_expect_str_eq (sl_buf_cstr (&st->prov), dialect, "%s: the default provider of %s", what, dialect);
            if (!cases [c].code [d]) {
                cr_expect (st->done, "%s/%s ends with done", what, dialect);
                cr_expect_eq (st->errors, 0, "%s/%s: %s", what, dialect, sl_buf_cstr (&st->error_code));
                continue;
            }
            cr_expect_eq (st->errors, 1, "%s/%s: one error", what, dialect);
            cr_expect_not (st->done, "%s/%s", what, dialect);
            cr_expect_str_eq (sl_buf_cstr (&st->error_code), cases [c].code [d], "%s/%s: got %s", what,
                              dialect, sl_buf_cstr (&st->error_code));
            if (cases [c].status >= 0)
                cr_expect_eq (st->error_status, cases [c].status, "%s/%s: status %d", what, dialect,
                              st->error_status);
            cr_expect_eq (st->error_flags, cases [c].flags, "%s/%s: flags %u", what, dialect, st->error_flags);
        }
    //  mock-tools in every dialect: the same text and calls.
    for (size_t d = 0; d < DIALECTS; d++) {
        s_stream_t *st = &streams [d];
        cr_expect_str_eq (sl_buf_cstr (&st->text), "Let me check the weather and tidy up.");
        cr_expect_str_eq (sl_buf_cstr (&st->calls),
                          "get_weather({\"city\":\"Paris\"});run_shell({\"command\":\"rm -rf /\"}",
                          "%s", sl_dialect_name (st->dialect));
    }
    for (size_t i = 0; i < CASES * DIALECTS; i++)
        s_stream_free (&streams [i]);
    cr_expect_eq (s_rig_stop (&rig), 0, "mock and ingest exit cleanly");
}

Test (ingest, cancel_frees_the_upstream_connection_at_once)
{
    s_rig_t rig;
    cr_assert (s_rig_start (&rig, NULL));
    s_stream_t st = { .dialect = SL_DIALECT_ANTHROPIC, .model = "mock-stall" };
    s_request (&rig, &st, 1);
    //  Wait for the stream to be under way (its START and first deltas).
    zpoller_t *poller = zpoller_new (rig.aggregator, NULL);
    int64_t deadline = zclock_mono () + TIMEOUT_MS;
    while (st.next_seq < 2 && zclock_mono () < deadline) {
        if (!zpoller_wait (poller, 100))
            continue;
        zmsg_t *msg = zmsg_recv (rig.aggregator);
        zframe_t *identity = zmsg_pop (msg), *data = zmsg_pop (msg);
        size_t offset = 0;
        sl_msg_t m;
        while (sl_codec_decode (rig.codec, zframe_data (data), zframe_size (data), &offset, &m) == 0)
            if (m.type != SL_MSG_HB)
                s_on_message (&st, 1, &m);
        zframe_destroy (&identity);
        zframe_destroy (&data);
        zmsg_destroy (&msg);
    }
    zpoller_destroy (&poller);
    cr_assert_geq (st.next_seq, 2, "the stream started");
    sl_msg_t cancel;
    sl_msg_init (&cancel, SL_MSG_CANCEL);
    memcpy (cancel.sid, st.sid, SL_SID_SIZE);
    s_send (&rig, &cancel);
    s_collect (&rig, &st, 1);
    cr_expect (st.ended);
    cr_expect_str_eq (sl_buf_cstr (&st.error_code), "client_cancelled");
    //  The mock sees its client leave long before any idle timeout.
    bool gone = false;
    for (int i = 0; i < 200 && !gone; i++) {
        gone = metric_value (rig.mock_port, "mock_streams_abandoned_total") == 1;
        if (!gone)
            zclock_sleep (10);
    }
    cr_expect (gone, "the upstream connection was closed");
    s_stream_free (&st);
    cr_expect_eq (s_rig_stop (&rig), 0);
}

Test (ingest, routes_file_picks_the_provider_and_names_it)
{
    s_rig_t rig;
    cr_assert (s_rig_mock (&rig));
    char path [] = "/tmp/sluice-routes-XXXXXX";
    int fd = mkstemp (path);
    cr_assert (fd >= 0);
    int holder, refusing = harness_refusing_port (&holder);
    cr_assert_gt (refusing, 0);
    sl_buf_t text = { 0 };
    sl_buf_printf (&text,
                   "providers:\n"
                   "  - name: local-mock\n    dialect: openai\n    base_url: http://127.0.0.1:%d/v1\n"
                   "  - name: nowhere\n    dialect: openai\n    base_url: http://127.0.0.1:%d/v1\n"
                   "  - name: claude-mock\n    dialect: anthropic\n    base_url: http://127.0.0.1:%d\n"
                   "routes:\n  - model: 'mock-t*'\n    provider: local-mock\n"
                   "  - model: '*'\n    provider: nowhere\n",
                   rig.mock_port, refusing, rig.mock_port);
    cr_assert_eq (write (fd, text.data, text.len), (ssize_t) text.len);
    close (fd);
    sl_buf_free (&text);
    const char *flags [] = { "--routes", path, "--max-retries", "1", "--retry-base-ms", "20", NULL };
    cr_assert (s_rig_ingest (&rig, flags));
    s_stream_t streams [3] = {
        { .dialect = SL_DIALECT_OPENAI, .model = "mock-text" },
        { .dialect = SL_DIALECT_OPENAI, .model = "mock-error" },        //  routed nowhere
        { .dialect = SL_DIALECT_ANTHROPIC, .model = "mock-text" },     //  its dialect's only provider
    };
    for (int i = 0; i < 3; i++)
        s_request (&rig, &streams [i], i);
    s_collect (&rig, streams, 3);
    cr_expect_str_eq (sl_buf_cstr (&streams [0].prov), "local-mock");
    cr_expect (streams [0].done);
    cr_expect_str_eq (sl_buf_cstr (&streams [1].prov), "nowhere");
    cr_expect_str_eq (sl_buf_cstr (&streams [1].error_code), "upstream_unreachable");
    cr_expect_eq (streams [1].error_flags, SL_F_RETRYABLE, "nothing reached the client");
    cr_expect_str_eq (sl_buf_cstr (&streams [2].prov), "claude-mock");
    cr_expect (streams [2].done);
    cr_expect_eq (metric_value (rig.ingest_metrics, "sluice_upstream_retries_total"), 1,
                  "the refused connection was retried once");
    //  No provider for a dialect the file does not name.
    s_stream_t gemini = { .dialect = SL_DIALECT_GEMINI, .model = "gemini-x" };
    s_request (&rig, &gemini, 9);
    s_collect (&rig, &gemini, 1);
    cr_expect_str_eq (sl_buf_cstr (&gemini.error_code), "no_provider");
    cr_expect_eq (gemini.error_status, 400);
    for (int i = 0; i < 3; i++)
        s_stream_free (&streams [i]);
    s_stream_free (&gemini);
    unlink (path);
    close (holder);
    cr_expect_eq (s_rig_stop (&rig), 0);
}

Test (ingest, a_connect_that_never_completes_hits_the_connect_deadline)
{
    //  A listening socket whose one-slot accept queue is already full:
    //  the kernel drops further handshakes, so a connect to it hangs.
    int listener = socket (AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    cr_assert_eq (bind (listener, (struct sockaddr *) &a, sizeof a), 0);
    cr_assert_eq (listen (listener, 0), 0);
    getsockname (listener, (struct sockaddr *) &a, &len);
    int fillers [4];
    for (int i = 0; i < 4; i++) {
        fillers [i] = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect (fillers [i], (struct sockaddr *) &a, sizeof a);
    }
    s_rig_t rig;
    cr_assert (s_rig_mock (&rig));
    char base [64];
    snprintf (base, sizeof base, "http://127.0.0.1:%d/v1", ntohs (a.sin_port));
    const char *flags [] = { "--connect-timeout-ms", "300", "--max-retries", "1", "--retry-base-ms", "20",
                             "--openai-base-url", base, NULL };
    cr_assert (s_rig_ingest (&rig, flags));
    s_stream_t st = { .dialect = SL_DIALECT_OPENAI, .model = "mock-text" };
    s_request (&rig, &st, 1);
    s_collect (&rig, &st, 1);
    cr_expect (st.ended);
    cr_expect_str_eq (sl_buf_cstr (&st.error_code), "upstream_connect_timeout");
    cr_expect_eq (st.error_status, 504);
    cr_expect_eq (st.error_flags, SL_F_RETRYABLE);
    cr_expect_eq (metric_value (rig.ingest_metrics, "sluice_upstream_retries_total"), 1,
                  "a connect that timed out is retried");
    s_stream_free (&st);
    for (int i = 0; i < 4; i++)
        close (fillers [i]);
    close (listener);
    cr_expect_eq (s_rig_stop (&rig), 0);
}

Test (ingest, a_provider_error_before_any_output_is_retryable_for_the_client)
{
    s_rig_t rig;
    cr_assert (s_rig_start (&rig, NULL));
    //  A recorded Anthropic stream that fails at once, replayed by the mock.
    char path [300];
    snprintf (path, sizeof path, "%s/error-first.sse", rig.dir);
    FILE *f = fopen (path, "w");
    cr_assert_not_null (f);
    fputs ("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
           "\"message\":\"Overloaded\"}}\n\n", f);
    fclose (f);
    s_stream_t st = { .dialect = SL_DIALECT_ANTHROPIC, .model = "mock-replay/error-first.sse" };
    s_request (&rig, &st, 1);
    s_collect (&rig, &st, 1);
    cr_expect (st.ended);
    cr_expect_str_eq (sl_buf_cstr (&st.error_code), "overloaded_error");
    cr_expect_eq (st.error_status, 529);
    cr_expect_eq (st.error_flags, SL_F_UPSTREAM | SL_F_RETRYABLE, "nothing reached the client: %u",
                  st.error_flags);
    s_stream_free (&st);
    cr_expect_eq (s_rig_stop (&rig), 0);
}
