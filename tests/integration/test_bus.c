/*  Integration: the bus against hostile peers on loopback.

    An attacker who reaches the bus's ports holds no key of the bus, or a
    valid CURVE key pair nobody knows, or a real key of the wrong role (a
    tap's key, the ingest's key at the emitter's inbox, ...). Whatever it
    sends to whichever inbox - request jobs, stream starts, thousands of
    deltas, blocks, verdicts, frames, cancels, acks, losses - and whatever
    it subscribes to, nothing gets in and nothing comes out:

    - every stage's count of stream messages received does not move on a
      quiet stack, and moves exactly as in an undisturbed run while a
      victim's stream runs;
    - ZAP refuses each keyed peer (sluice_zap_refused_total{domain}); the
      handshake of each peer without CURVE fails
      (sluice_bus_handshake_failures_total{reason="protocol"});
    - no upstream call is made for it (the mock's mock_streams_total);
    - the victim's stream is byte for byte what it is without the attack.

    Also: a metadata-only tap sees no text, and its key cannot read the full
    feed; processes without usable keys do not start, and --bus-auth off
    says loudly what it is; the emitter sends frames only to a gateway that
    announced its name, never to an address read from a message.
*/
#include <criterion/criterion.h>
#include <czmq.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <time.h>
#include <unistd.h>

#include "proto/sl_msg.h"
#include "tests/integration/harness.h"

#define TIMEOUT_MS 15000
#define FLOOD_DELTAS 1000               //  deltas in one injected batch
#define ATTACK_ROUNDS 200               //  batches sent by each peer while a victim runs (bounded)
#define MARK "INJECTED-by-the-attacker"

enum { P_INGEST = 1, P_AGGREGATOR, P_JUDGE, P_EMITTER, P_GATEWAY };
static const char *s_domain [] = { "", "ingest", "aggregator", "judge", "emitter", "gateway" };

static double
s_metric (sluice_stack_t *s, int proc, const char *name)
{
    return metric_value (atoi (s->metrics [proc]), name);
}

//  --------------------------------------------------------------------------
//  Hostile peers

typedef enum { NO_KEY, STRANGER, WRONG_KEY } s_kind_t;

typedef struct {
    zsock_t *sock;
    char label [96];
    bool sub;                           //  a subscriber (else a DEALER into an inbox)
} s_peer_t;

typedef struct {
    s_peer_t peers [64];
    int count;
    zcert_t *stranger;                  //  a valid key pair no directory holds
} s_attacker_t;

static void
s_peer (s_attacker_t *a, sluice_stack_t *s, int type, const char *endpoint, s_kind_t kind,
        const char *key, const char *server)
{
    cr_assert_lt (a->count, 64);
    s_peer_t *p = &a->peers [a->count++];
    p->sock = zsock_new (type);
    p->sub = type == ZMQ_SUB;
    zsock_set_sndhwm (p->sock, 10);     //  batches queued while it tries (bounded memory)
    if (kind == STRANGER) {
        //  It knows the server's public key: public keys are no secret.
        cr_assert_eq (harness_curve (p->sock, s->keys, "tap", server), 0);
        zcert_apply (a->stranger, zsock_resolve (p->sock));
    }
    else
    if (kind == WRONG_KEY)
        cr_assert_eq (harness_curve (p->sock, s->keys, key, server), 0);
    if (p->sub)
        zsock_set_subscribe (p->sock, "");
    cr_assert_eq (zsock_connect (p->sock, "%s", endpoint), 0);
    snprintf (p->label, sizeof p->label, "%s with %s -> %s", p->sub ? "SUB" : "DEALER",
              kind == NO_KEY ? "no key" : kind == STRANGER ? "an unknown key" : key, endpoint);
}

//  Every kind of peer at every socket of the bus; the wrong keys are real
//  keys of the deployment, each allowed somewhere else.
static void
s_attacker_open (s_attacker_t *a, sluice_stack_t *s)
{
    memset (a, 0, sizeof *a);
    a->stranger = zcert_new ();
    static const char *wrong [6][5] = {
        { NULL },
        { "emitter", "tap", NULL },                     //  at the ingest's inbox
        { "gateway", "judge", NULL },                   //  at the aggregator's
        { "ingest", "emitter", NULL },                  //  at the judge's
        { "ingest", "aggregator", "tap", "gateway", NULL },     //  at the emitter's
        { "judge", "ingest", "tap-meta", NULL },        //  at the gateway's
    };
    for (int p = P_INGEST; p <= P_GATEWAY; p++) {
        s_peer (a, s, ZMQ_DEALER, s->inbox [p], NO_KEY, NULL, NULL);
        s_peer (a, s, ZMQ_DEALER, s->inbox [p], STRANGER, NULL, s_domain [p]);
        for (int k = 0; wrong [p][k]; k++)
            s_peer (a, s, ZMQ_DEALER, s->inbox [p], WRONG_KEY, wrong [p][k], s_domain [p]);
    }
    //  The taps: the full feed refuses a metadata key and a stage's key;
    //  the metadata feed refuses stage keys.
    s_peer (a, s, ZMQ_SUB, s->pub, NO_KEY, NULL, NULL);
    s_peer (a, s, ZMQ_SUB, s->pub, STRANGER, NULL, "emitter");
    s_peer (a, s, ZMQ_SUB, s->pub, WRONG_KEY, "tap-meta", "emitter");
    s_peer (a, s, ZMQ_SUB, s->pub, WRONG_KEY, "judge", "emitter");
    s_peer (a, s, ZMQ_SUB, s->pub_meta, NO_KEY, NULL, NULL);
    s_peer (a, s, ZMQ_SUB, s->pub_meta, STRANGER, NULL, "emitter");
    s_peer (a, s, ZMQ_SUB, s->pub_meta, WRONG_KEY, "emitter", "emitter");
    s_peer (a, s, ZMQ_SUB, s->pub_meta, WRONG_KEY, "gateway", "emitter");
}

static void
s_attacker_close (s_attacker_t *a)
{
    for (int i = 0; i < a->count; i++)
        zsock_destroy (&a->peers [i].sock);
    zcert_destroy (&a->stranger);
}

//  What an attacker sends: a heartbeat asking for credit, a request job
//  naming its own reply-to, and every message of a stream (the victim's
//  when sid is given), a thousand deltas among them.
static void
s_hostile_batch (sl_buf_t *out, const uint8_t *sid, uint64_t round)
{
    uint8_t own [SL_SID_SIZE];
    sl_sid_new (own);
    if (!sid)
        sid = own;
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_HB);
    m.instance = SL_STR_LIT ("attacker");
    m.incarnation = 1;
    m.credit = 100000;
    sl_msg_encode (&m, out);

    sl_msg_init (&m, SL_MSG_REQ);
    sl_sid_new (m.sid);
    m.client_dialect = SL_DIALECT_OPENAI;
    m.upstream_dialect = SL_DIALECT_OPENAI;
    m.model = SL_STR_LIT ("mock-text");
    m.body = SL_STR_LIT ("{\"model\":\"mock-text\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}");
    m.reply_to = SL_STR_LIT ("tcp://127.0.0.1:9");
    m.flags = SL_F_STREAM;
    sl_msg_encode (&m, out);

    sl_msg_init (&m, SL_MSG_START);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.client_dialect = SL_DIALECT_OPENAI;
    m.upstream_dialect = SL_DIALECT_OPENAI;
    m.model = SL_STR_LIT ("mock-bench");
    m.reply_to = SL_STR_LIT ("attacker");
    m.flags = SL_F_STREAM;
    sl_msg_encode (&m, out);
    for (int i = 0; i < FLOOD_DELTAS; i++) {
        sl_msg_init (&m, SL_MSG_DELTA);
        memcpy (m.sid, sid, SL_SID_SIZE);
        m.seq = round * FLOOD_DELTAS + (uint64_t) i + 1;
        m.kind = SL_D_TEXT;
        m.index = -1;
        m.text = SL_STR_LIT (MARK);
        sl_msg_encode (&m, out);
    }
    sl_msg_init (&m, SL_MSG_BLOCK);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.seq = round + 1;
    m.kind = SL_B_DELTA;
    m.block = SL_BK_TEXT;
    m.index = 0;
    m.text = SL_STR_LIT (MARK);
    sl_msg_encode (&m, out);
    sl_msg_init (&m, SL_MSG_VERDICT);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.seq = round + 2;
    m.index = 1;
    m.action = SL_ACT_ALLOW;
    m.name = SL_STR_LIT ("run_shell");
    sl_msg_encode (&m, out);
    for (uint64_t seq = 0; seq < 4; seq++) {
        sl_msg_init (&m, SL_MSG_FRAME);
        memcpy (m.sid, sid, SL_SID_SIZE);
        m.seq = round + seq;
        m.flags = (seq == 0 ? SL_F_FIRST : 0) | (seq == 3 ? SL_F_LAST : 0);
        m.status = 200;
        m.content_type = SL_STR_LIT ("text/event-stream");
        m.body = SL_STR_LIT ("data: {\"choices\":[{\"delta\":{\"content\":\"" MARK "\"}}]}\n\n");
        sl_msg_encode (&m, out);
    }
    //  Each with what its type carries (the codec sends nothing else).
    const uint8_t others [] = { SL_MSG_ACK, SL_MSG_CANCEL, SL_MSG_LOST, SL_MSG_ERROR, SL_MSG_END };
    for (size_t i = 0; i < sizeof others; i++) {
        sl_msg_init (&m, others [i]);
        memcpy (m.sid, sid, SL_SID_SIZE);
        m.seq = round + 1000;
        if (others [i] == SL_MSG_ACK || others [i] == SL_MSG_ERROR)
            m.flags = SL_F_LAST;
        if (others [i] == SL_MSG_CANCEL || others [i] == SL_MSG_ERROR) {
            m.code = SL_STR_LIT ("client_gone");
            m.message = SL_STR_LIT (MARK);
        }
        sl_msg_encode (&m, out);
    }
}

//  Every DEALER sends a batch; nothing it sends may ever block the test.
static void
s_attack (s_attacker_t *a, const uint8_t *sid, uint64_t round)
{
    sl_buf_t batch = { 0 };
    s_hostile_batch (&batch, sid, round);
    for (int i = 0; i < a->count; i++)
        if (!a->peers [i].sub)
            zmq_send (zsock_resolve (a->peers [i].sock), batch.data, batch.len, ZMQ_DONTWAIT);
    sl_buf_free (&batch);
}

//  Messages the subscribers got: must be none.
static int
s_leaked (s_attacker_t *a)
{
    int got = 0;
    for (int i = 0; i < a->count; i++) {
        if (!a->peers [i].sub)
            continue;
        zmsg_t *msg;
        int n = 0;
        while ((msg = zmsg_recv_nowait (a->peers [i].sock))) {
            zmsg_destroy (&msg);
            n++;
        }
        cr_expect_eq (n, 0, "%s received %d messages", a->peers [i].label, n);
        got += n;
    }
    return got;
}

//  --------------------------------------------------------------------------
//  The legitimate side: a full tap (to learn the victim's stream id, as the
//  attacker of the finding did) and the victim's client.

typedef struct {
    zsock_t *sub;
    sl_codec_t *codec;
} s_tap_t;

static void
s_tap_open (s_tap_t *t, sluice_stack_t *s, const char *endpoint, const char *key)
{
    t->sub = zsock_new (ZMQ_SUB);
    t->codec = sl_codec_new ();
    cr_assert_eq (harness_curve (t->sub, s->keys, key, "emitter"), 0);
    zsock_set_subscribe (t->sub, "");
    cr_assert_eq (zsock_connect (t->sub, "%s", endpoint), 0);
}

static void
s_tap_close (s_tap_t *t)
{
    zsock_destroy (&t->sub);
    sl_codec_destroy (&t->codec);
}

//  Wait (bounded) for the next start of a stream of model; its sid to sid.
static bool
s_tap_start (s_tap_t *t, const char *model, uint8_t *sid, int timeout_ms)
{
    long deadline = zclock_mono () + timeout_ms;
    zsock_set_rcvtimeo (t->sub, 20);
    while (zclock_mono () < deadline) {
        zmsg_t *msg = zmsg_recv (t->sub);
        if (!msg)
            continue;
        zframe_t *topic = zmsg_first (msg);
        zframe_t *body = zmsg_next (msg);
        sl_msg_t m;
        size_t offset = 0;
        bool hit = topic && body
                && sl_codec_decode (t->codec, zframe_data (body), zframe_size (body), &offset, &m) == 0
                && m.type == SL_MSG_START && sl_str_eq (m.model, model);
        if (hit)
            memcpy (sid, m.sid, SL_SID_SIZE);
        zmsg_destroy (&msg);
        if (hit)
            return true;
    }
    return false;
}

typedef struct {
    int port;
    const char *body;
    sl_buf_t response;
    int status;
    volatile bool done;
} s_client_t;

static void *
s_client_run (void *arg)
{
    s_client_t *c = arg;
    c->status = http_request (c->port, "POST", "/v1/chat/completions", c->body, NULL, &c->response, TIMEOUT_MS);
    c->done = true;
    return NULL;
}

#define VICTIM "{\"model\":\"mock-bench\",\"max_tokens\":150,\"stream\":true," \
               "\"messages\":[{\"role\":\"user\",\"content\":\"the victim's prompt\"}]}"

//  Stream messages each process received so far (index by process).
static void
s_counts (sluice_stack_t *s, double *out)
{
    for (int p = P_INGEST; p <= P_GATEWAY; p++)
        out [p] = s_metric (s, p, "sluice_stream_messages_in_total");
}

//  No stream left at the gateway or the ingest (bounded wait).
static void
s_settle (sluice_stack_t *s)
{
    long deadline = zclock_mono () + TIMEOUT_MS;
    while (zclock_mono () < deadline
       &&  (s_metric (s, P_GATEWAY, "sluice_streams_active") != 0
        ||  s_metric (s, P_INGEST, "sluice_streams_active") != 0))
        usleep (20000);
    cr_assert_eq (s_metric (s, P_INGEST, "sluice_streams_active"), 0, "the stack is quiet");
}

//  The peer without CURVE failed its handshake: a mechanism mismatch, or,
//  when it hung up first on seeing the server's greeting, a failure
//  without detail.
static bool
s_unkeyed_refused (sluice_stack_t *s, int proc, const char *domain)
{
    char name [128];
    double n = 0;
    snprintf (name, sizeof name, "sluice_bus_handshake_failures_total{domain=\"%s\",reason=\"protocol\"}", domain);
    n += s_metric (s, proc, name);
    snprintf (name, sizeof name, "sluice_bus_handshake_failures_total{domain=\"%s\",reason=\"other\"}", domain);
    n += s_metric (s, proc, name);
    return n >= 1;
}

//  Wait (bounded) until every socket refused what it had to: the keyed
//  peers by ZAP, the peers without CURVE in their handshake.
static void
s_wait_refusals (sluice_stack_t *s, const double *zap_before)
{
    static const int keyed [6] = { 0, 3, 3, 3, 5, 4 };  //  a stranger and the wrong keys, per inbox
    long deadline = zclock_mono () + TIMEOUT_MS;
    bool all = false;
    while (!all && zclock_mono () < deadline) {
        all = true;
        char name [128];
        for (int p = P_INGEST; p <= P_GATEWAY && all; p++) {
            snprintf (name, sizeof name, "sluice_zap_refused_total{domain=\"%s\"}", s_domain [p]);
            all = s_metric (s, p, name) >= zap_before [p] + keyed [p];
            all = all && s_unkeyed_refused (s, p, s_domain [p]);
        }
        all = all && s_metric (s, P_EMITTER, "sluice_zap_refused_total{domain=\"tap\"}") >= 3
                  && s_metric (s, P_EMITTER, "sluice_zap_refused_total{domain=\"tap-meta\"}") >= 3
                  && s_unkeyed_refused (s, P_EMITTER, "tap") && s_unkeyed_refused (s, P_EMITTER, "tap-meta");
        if (!all)
            usleep (20000);
    }
    if (!all)
        for (int p = P_INGEST; p <= P_GATEWAY; p++) {
            sl_buf_t page = { 0 };
            http_request (atoi (s->metrics [p]), "GET", "/metrics", NULL, NULL, &page, 5000);
            const char *text = sl_buf_cstr (&page);
            for (const char *line = text; line && *line; line = strchr (line, '\n') ? strchr (line, '\n') + 1 : NULL)
                if (strncmp (line, "sluice_zap", 10) == 0 || strncmp (line, "sluice_bus_handshake", 20) == 0)
                    fprintf (stderr, "%s: %.*s\n", s_domain [p], (int) strcspn (line, "\n"), line);
            sl_buf_free (&page);
        }
    cr_expect (all, "every hostile peer was refused at its socket");
}

static void
s_allowed (sluice_stack_t *s, double *out)
{
    char name [128];
    for (int p = P_INGEST; p <= P_GATEWAY; p++) {
        snprintf (name, sizeof name, "sluice_zap_allowed_total{domain=\"%s\"}", s_domain [p]);
        out [p] = s_metric (s, p, name);
    }
    out [0] = s_metric (s, P_EMITTER, "sluice_zap_allowed_total{domain=\"tap\"}")
            + s_metric (s, P_EMITTER, "sluice_zap_allowed_total{domain=\"tap-meta\"}");
}

Test (bus, a_peer_without_an_allowed_key_gets_nothing_in_and_nothing_out)
{
    stack_opts_t opts = { .policy = "deploy/policy.yaml", .mock_delay_ms = 3 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    s_tap_t tap;
    s_tap_open (&tap, s, s->pub, "tap");
    int mock = s->mock_port;
    for (int p = P_INGEST; p <= P_GATEWAY; p++)
        cr_expect_eq (s_metric (s, p, "sluice_bus_insecure"), 0, "the %s runs CURVE", s_domain [p]);

    //  An undisturbed run of the victim's request: its bytes, and what each
    //  process received for it. The tap must see it (its subscription is live).
    double before [6], after [6], undisturbed [6];
    s_counts (s, before);
    uint8_t sid [SL_SID_SIZE];
    s_client_t first = { .port = s->http_port, .body = VICTIM };
    pthread_t thread;
    for (int attempt = 0; attempt < 20; attempt++) {
        //  (a subscription takes a moment to reach the emitter: retry the
        //  first request, bounded, until the tap saw it)
        sl_buf_reset (&first.response);
        s_counts (s, before);
        cr_assert_eq (pthread_create (&thread, NULL, s_client_run, &first), 0);
        bool seen = s_tap_start (&tap, "mock-bench", sid, 2000);
        pthread_join (thread, NULL);
        s_settle (s);
        if (seen)
            break;
    }
    cr_assert_eq (first.status, 200);
    s_counts (s, after);
    for (int p = P_INGEST; p <= P_GATEWAY; p++)
        undisturbed [p] = after [p] - before [p];
    cr_assert_gt (undisturbed [P_AGGREGATOR], 150, "the victim's stream is a real one");

    //  Quiet stack: every hostile peer, every message, every socket.
    double zap_before [6], streams0 = s_metric (s, P_INGEST, "sluice_streams_total");
    double mock0 = metric_value (mock, "mock_streams_total");
    for (int p = P_INGEST; p <= P_GATEWAY; p++) {
        char name [128];
        snprintf (name, sizeof name, "sluice_zap_refused_total{domain=\"%s\"}", s_domain [p]);
        zap_before [p] = s_metric (s, p, name);
    }
    double allowed_before [6], allowed_after [6];
    s_allowed (s, allowed_before);
    s_attacker_t attacker;
    s_attacker_open (&attacker, s);
    s_counts (s, before);
    for (uint64_t round = 0; round < 5; round++)
        s_attack (&attacker, NULL, round);
    s_wait_refusals (s, zap_before);
    for (uint64_t round = 5; round < 10; round++)
        s_attack (&attacker, NULL, round);
    usleep (300000);                    //  not a wait for an event: time for a leak to show, if any
    s_counts (s, after);
    for (int p = P_INGEST; p <= P_GATEWAY; p++)
        cr_expect_eq (after [p], before [p], "nothing reached the %s's stages (%.0f -> %.0f)",
                      s_domain [p], before [p], after [p]);
    cr_expect_eq (s_metric (s, P_INGEST, "sluice_streams_total"), streams0, "no job was started");
    cr_expect_eq (metric_value (mock, "mock_streams_total"), mock0, "no upstream call was made");
    cr_expect_eq (s_metric (s, P_EMITTER, "sluice_frames_unroutable_total"), 0);
    cr_expect_eq (s_leaked (&attacker), 0, "no subscriber got anything");
    s_allowed (s, allowed_after);
    for (int p = 0; p <= P_GATEWAY; p++)
        cr_expect_eq (allowed_after [p], allowed_before [p], "ZAP let nobody in at the %s",
                      p ? s_domain [p] : "taps");

    //  Live: the victim's request again, the attack aimed at its stream id.
    s_counts (s, before);
    double cancels0 = s_metric (s, P_INGEST, "sluice_cancels_total");
    double unknown0 = s_metric (s, P_GATEWAY, "sluice_frames_unknown_total");
    s_client_t victim = { .port = s->http_port, .body = VICTIM };
    cr_assert_eq (pthread_create (&thread, NULL, s_client_run, &victim), 0);
    cr_assert (s_tap_start (&tap, "mock-bench", sid, TIMEOUT_MS), "the victim's stream started");
    int rounds = 0;
    for (; rounds < ATTACK_ROUNDS && !victim.done; rounds++) {
        s_attack (&attacker, sid, (uint64_t) rounds);
        usleep (2000);
    }
    pthread_join (thread, NULL);
    cr_expect_gt (rounds, 5, "the attack ran while the stream did");
    s_settle (s);
    s_counts (s, after);
    cr_expect_eq (victim.status, 200);
    cr_expect_eq (victim.response.len, first.response.len);
    cr_expect (victim.response.len == first.response.len
               && memcmp (victim.response.data, first.response.data, first.response.len) == 0,
               "the victim's stream is byte for byte the undisturbed one");
    cr_expect_null (memmem (victim.response.data, victim.response.len, MARK, strlen (MARK)));
    for (int p = P_AGGREGATOR; p <= P_GATEWAY; p++)
        cr_expect_eq (after [p] - before [p], undisturbed [p],
                      "the %s received what it receives undisturbed (%.0f, not %.0f)",
                      s_domain [p], undisturbed [p], after [p] - before [p]);
    cr_expect_eq (s_metric (s, P_INGEST, "sluice_streams_total"), streams0 + 1, "one job: the victim's");
    cr_expect_eq (metric_value (mock, "mock_streams_total"), mock0 + 1, "one upstream call: the victim's");
    cr_expect_eq (s_metric (s, P_INGEST, "sluice_cancels_total"), cancels0, "nothing was cancelled");
    cr_expect_eq (s_metric (s, P_GATEWAY, "sluice_frames_unknown_total"), unknown0);
    cr_expect_eq (s_leaked (&attacker), 0, "no subscriber got anything");

    s_attacker_close (&attacker);
    s_tap_close (&tap);
    sl_buf_free (&first.response);
    sl_buf_free (&victim.response);
    cr_expect_eq (stack_stop (s), 0, "every process exits cleanly");
}

//  --------------------------------------------------------------------------
//  A tap limited to metadata: the emitter strips every event it publishes
//  on the metadata feed, and the metadata key cannot read the full one.

#define META_USER "the-users-private-question-8812"
#define META_TOOL_DOC "a-tool-description-from-the-prompt-5530"

//  The next stream of model on a tap, whole: from its start to its end
//  (bounded). Its sid goes to sid, the raw bytes of its messages to raw,
//  their types are counted.
static bool
s_tap_collect (s_tap_t *t, const char *model, uint8_t *sid, sl_buf_t *raw, int *types, int timeout_ms)
{
    long deadline = zclock_mono () + timeout_ms;
    bool started = false;
    zsock_set_rcvtimeo (t->sub, 20);
    while (zclock_mono () < deadline) {
        zmsg_t *msg = zmsg_recv (t->sub);
        if (!msg)
            continue;
        zframe_t *topic = zmsg_first (msg);
        zframe_t *body = zmsg_next (msg);
        sl_msg_t m;
        size_t offset = 0;
        bool end = false;
        if (topic && body
        &&  sl_codec_decode (t->codec, zframe_data (body), zframe_size (body), &offset, &m) == 0) {
            if (!started && m.type == SL_MSG_START && sl_str_eq (m.model, model)) {
                started = true;
                memcpy (sid, m.sid, SL_SID_SIZE);
            }
            if (started && memcmp (m.sid, sid, SL_SID_SIZE) == 0) {
                sl_buf_append (raw, zframe_data (body), zframe_size (body));
                types [m.type]++;
                end = m.type == SL_MSG_END;
            }
        }
        zmsg_destroy (&msg);
        if (end)
            return true;
    }
    return false;
}

Test (bus, a_metadata_tap_never_sees_text)
{
    stack_opts_t opts = { .policy = "deploy/policy.yaml", .mock_delay_ms = 1 };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    s_tap_t full, meta, meta_on_full;
    s_tap_open (&full, s, s->pub, "tap");
    s_tap_open (&meta, s, s->pub_meta, "tap-meta");
    s_tap_open (&meta_on_full, s, s->pub, "tap-meta");
    const char *request = "{\"model\":\"mock-tools\",\"stream\":true,"
        "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":"
        "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"description\":\"" META_TOOL_DOC "\"}}}}}],"
        "\"messages\":[{\"role\":\"user\",\"content\":\"" META_USER "\"}]}";
    //  Both feeds live: send until each tap saw a start (bounded).
    uint8_t sid [SL_SID_SIZE], meta_sid [SL_SID_SIZE];
    bool live = false;
    for (int attempt = 0; attempt < 20 && !live; attempt++) {
        sl_buf_t body = { 0 };
        cr_assert_eq (http_request (s->http_port, "POST", "/v1/chat/completions", request, NULL, &body,
                                    TIMEOUT_MS), 200);
        sl_buf_free (&body);
        live = s_tap_start (&full, "mock-tools", sid, 300) && s_tap_start (&meta, "mock-tools", meta_sid, 300);
    }
    cr_assert (live, "both feeds carry the stack's streams");

    //  One more stream, read whole on both feeds.
    s_client_t c = { .port = s->http_port, .body = request };
    pthread_t thread;
    cr_assert_eq (pthread_create (&thread, NULL, s_client_run, &c), 0);
    sl_buf_t full_raw = { 0 }, meta_raw = { 0 };
    int full_types [16] = { 0 }, meta_types [16] = { 0 };
    cr_assert (s_tap_collect (&full, "mock-tools", sid, &full_raw, full_types, TIMEOUT_MS));
    cr_assert (s_tap_collect (&meta, "mock-tools", meta_sid, &meta_raw, meta_types, TIMEOUT_MS));
    cr_assert_eq (memcmp (sid, meta_sid, SL_SID_SIZE), 0, "the same stream on both feeds");
    pthread_join (thread, NULL);
    cr_expect_eq (c.status, 200);

    //  What the request and the response hold: the full feed shows it (so
    //  this test can see a leak), the metadata feed shows none of it.
    const char *content [] = {
        META_USER,                      //  the last user message
        META_TOOL_DOC,                  //  a tool's schema (from the prompt)
        "Let me check the weather",     //  response text
        "Paris",                        //  tool arguments (the blocked call's never leave the judge)
        "sluice blocked a call",        //  the judge's notice
        "rule no-rm-rf matched",        //  a verdict's reason
    };
    for (size_t i = 0; i < sizeof content / sizeof content [0]; i++) {
        cr_expect_not_null (memmem (full_raw.data, full_raw.len, content [i], strlen (content [i])),
                            "the full feed carries \"%s\"", content [i]);
        cr_expect_null (memmem (meta_raw.data, meta_raw.len, content [i], strlen (content [i])),
                        "the metadata feed does not carry \"%s\"", content [i]);
    }
    //  It does carry what monitoring needs.
    cr_expect_eq (meta_types [SL_MSG_START], 1);
    cr_expect_eq (meta_types [SL_MSG_VERDICT], 2, "both verdicts");
    cr_expect_eq (meta_types [SL_MSG_BLOCK], full_types [SL_MSG_BLOCK], "every block event, stripped");
    cr_expect_not_null (memmem (meta_raw.data, meta_raw.len, "run_shell", 9), "tool names");
    cr_expect_not_null (memmem (meta_raw.data, meta_raw.len, "no-rm-rf", 8), "rule ids");
    cr_expect_not_null (memmem (meta_raw.data, meta_raw.len, "mock-tools", 10), "the model");

    //  The metadata key never got onto the full feed.
    zmsg_t *msg = zmsg_recv_nowait (meta_on_full.sub);
    cr_expect_null (msg, "a metadata key reads nothing on the full feed");
    zmsg_destroy (&msg);
    cr_expect_geq (s_metric (s, P_EMITTER, "sluice_zap_refused_total{domain=\"tap\"}"), 1);

    //  The same with sluice-tap: its metadata key reads the metadata feed,
    //  and says so when pointed at the full one.
    const char *cli_args [] = { "--keys", s->keys, "--key", "tap-meta", "--connect", s->pub_meta,
                                "--json", "yes", NULL };
    proc_t *cli = proc_start (s->dir, "tap", cli_args);
    const char *wrong_args [] = { "--keys", s->keys, "--key", "tap-meta", "--connect", s->pub, NULL };
    proc_t *wrong = proc_start_as (s->dir, "tap", "tap-wrong", wrong_args);
    cr_assert (proc_wait_log (cli, "\"connected\"", "access=", NULL, 0, TIMEOUT_MS));
    //  (its subscription takes a moment to reach the emitter: requests,
    //  bounded, until it saw a whole stream)
    bool seen = false;
    for (int attempt = 0; attempt < 20 && !seen; attempt++) {
        sl_buf_t body = { 0 };
        http_request (s->http_port, "POST", "/v1/chat/completions", request, NULL, &body, TIMEOUT_MS);
        sl_buf_free (&body);
        seen = proc_wait_log (cli, "\"type\":\"start\"", "\"model\":\"", NULL, 0, 300);
    }
    cr_expect (seen, "sluice-tap with a metadata key follows the metadata feed");
    cr_expect (proc_wait_log (cli, "\"type\":\"verdict\"", "\"rule\":\"no-rm-rf\"", NULL, 0, TIMEOUT_MS),
               "it sees verdicts");
    cr_expect_not (proc_wait_log (cli, META_USER, NULL, NULL, 0, 100), "and never the prompt");
    cr_expect_not (proc_wait_log (cli, "Let me check", NULL, NULL, 0, 100), "nor the response");
    cr_expect (proc_wait_log (wrong, "\"handshake_failed\"", "refused this process's key", NULL, 0, TIMEOUT_MS),
               "pointed at the full feed, it says its key was refused");
    cr_expect_eq (proc_stop (cli, 10000), 0);
    cr_expect_eq (proc_stop (wrong, 10000), 0);
    unlink (cli->log_path);
    unlink (wrong->log_path);
    free (cli);
    free (wrong);

    s_tap_close (&full);
    s_tap_close (&meta);
    s_tap_close (&meta_on_full);
    sl_buf_free (&full_raw);
    sl_buf_free (&meta_raw);
    sl_buf_free (&c.response);
    cr_expect_eq (stack_stop (s), 0);
}

//  --------------------------------------------------------------------------
//  Fail closed: no keys, no start; plaintext only when asked for, loudly.

//  Start a program, wait for it to exit by itself; its status.
static int
s_exit_status (const char *dir, const char *program, const char *const *args, proc_t **out)
{
    proc_t *p = proc_start (dir, program, args);
    cr_assert_not_null (p);
    int rc = proc_wait_exit (p, TIMEOUT_MS);
    *out = p;
    return rc;
}

Test (bus, without_keys_no_process_starts)
{
    unsetenv ("SLUICE_KEYS");
    unsetenv ("SLUICE_BUS_AUTH");
    char dir [] = "/tmp/sluice-nokeys-XXXXXX";
    cr_assert_not_null (mkdtemp (dir));
    char keys [300], public_only [300];
    cr_assert_eq (harness_keygen (dir, keys, sizeof keys), 0);
    //  A directory with every public key and nobody's secret.
    snprintf (public_only, sizeof public_only, "%s/public-only", dir);
    char cmd [1024];
    snprintf (cmd, sizeof cmd, "mkdir -p '%s' && cp '%s'/*.key '%s'/", public_only, keys, public_only);
    cr_assert_eq (system (cmd), 0);
    const char *programs [] = { "gateway", "ingest", "aggregator", "judge", "emitter", "tap" };
    for (size_t i = 0; i < sizeof programs / sizeof programs [0]; i++) {
        const char *args [8] = { "--metrics-port", "0", NULL };
        int n = 2;
        if (strcmp (programs [i], "gateway") == 0) {
            args [n++] = "--http-port";
            args [n++] = "0";
        }
        args [n] = NULL;
        proc_t *p;
        cr_expect_eq (s_exit_status (dir, programs [i], args, &p), 2, "%s without keys does not start",
                      programs [i]);
        cr_expect (proc_wait_log (p, "\"no_keys\"", "--keys DIR", NULL, 0, 1000), "%s says what to do",
                   programs [i]);
        unlink (p->log_path);
        free (p);

        args [n++] = "--keys";
        args [n++] = public_only;
        args [n] = NULL;
        cr_expect_eq (s_exit_status (dir, programs [i], args, &p), 2, "%s without its secret does not start",
                      programs [i]);
        char file [64];
        snprintf (file, sizeof file, "%s.key_secret", programs [i]);
        cr_expect (proc_wait_log (p, "\"no_keys\"", file, NULL, 0, 1000), "%s names the missing file",
                   programs [i]);
        unlink (p->log_path);
        free (p);
    }
    //  --bus-auth off: it starts, and says what it is, in the log and in
    //  its metrics.
    const char *off [] = { "--bind", "tcp://127.0.0.1:*", "--next", "tcp://127.0.0.1:1", "--bus-auth", "off",
                           "--metrics-port", "0", NULL };
    proc_t *agg = proc_start (dir, "aggregator", off);
    char port [16];
    cr_assert (proc_wait_log (agg, "\"started\"", "metrics_port=", port, sizeof port, TIMEOUT_MS));
    cr_expect (proc_wait_log (agg, "\"bus_insecure\"", NULL, NULL, 0, 1000), "a warning at start");
    cr_expect_eq (metric_value (atoi (port), "sluice_bus_insecure"), 1);
    cr_expect_eq (proc_stop (agg, 10000), 0);
    unlink (agg->log_path);
    free (agg);
    //  Anything but on or off is refused.
    const char *bad [] = { "--bus-auth", "maybe", "--keys", keys, "--metrics-port", "0", NULL };
    proc_t *p;
    cr_expect_eq (s_exit_status (dir, "judge", bad, &p), 2);
    unlink (p->log_path);
    free (p);
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}

//  --------------------------------------------------------------------------
//  Frames go to a gateway by the name it announced on its own link, never
//  to an address found in a message. The test plays the judge (it holds
//  the judge's key), as a compromised or buggy judge would.

static void
s_judged_stream (zsock_t *judge, const uint8_t *sid, const char *reply_to)
{
    sl_buf_t out = { 0 };
    sl_msg_t m;
    uint64_t seq = 0;
    sl_msg_init (&m, SL_MSG_START);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.seq = seq++;
    m.client_dialect = SL_DIALECT_OPENAI;
    m.upstream_dialect = SL_DIALECT_OPENAI;
    m.model = SL_STR_LIT ("mock-text");
    m.reply_to = sl_str (reply_to);
    m.flags = SL_F_STREAM;
    sl_msg_encode (&m, &out);
    sl_msg_init (&m, SL_MSG_BLOCK);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.seq = seq++;
    m.kind = SL_B_MESSAGE;
    m.id = SL_STR_LIT ("chatcmpl-1");
    m.model = SL_STR_LIT ("mock-text");
    sl_msg_encode (&m, &out);
    const uint8_t kinds [] = { SL_B_START, SL_B_DELTA, SL_B_END };
    for (size_t i = 0; i < sizeof kinds; i++) {
        sl_msg_init (&m, SL_MSG_BLOCK);
        memcpy (m.sid, sid, SL_SID_SIZE);
        m.seq = seq++;
        m.kind = kinds [i];
        m.block = SL_BK_TEXT;
        m.index = 0;
        if (kinds [i] != SL_B_START)
            m.text = SL_STR_LIT ("hello");
        sl_msg_encode (&m, &out);
    }
    sl_msg_init (&m, SL_MSG_BLOCK);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.seq = seq++;
    m.kind = SL_B_FINISH;
    m.finish = SL_FIN_STOP;
    sl_msg_encode (&m, &out);
    sl_msg_init (&m, SL_MSG_END);
    memcpy (m.sid, sid, SL_SID_SIZE);
    m.seq = seq++;
    sl_msg_encode (&m, &out);
    cr_assert_eq (zmq_send (zsock_resolve (judge), out.data, out.len, 0), (int) out.len);
    sl_buf_free (&out);
}

Test (bus, frames_go_to_a_named_gateway_never_to_an_address)
{
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .mock_delay_ms = 1 });
    cr_assert_not_null (s);
    char name [128];
    cr_assert (proc_wait_log (s->gateway, "\"listening\"", "name=", name, sizeof name, TIMEOUT_MS));
    //  A listener at an address a message will name: nobody may connect to it.
    int listener = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    socklen_t len = sizeof a;
    cr_assert_eq (bind (listener, (struct sockaddr *) &a, sizeof a), 0);
    cr_assert_eq (listen (listener, 8), 0);
    cr_assert_eq (getsockname (listener, (struct sockaddr *) &a, &len), 0);
    char address [64];
    snprintf (address, sizeof address, "tcp://127.0.0.1:%d", ntohs (a.sin_port));

    zsock_t *judge = zsock_new (ZMQ_DEALER);
    cr_assert_eq (harness_curve (judge, s->keys, "judge", "emitter"), 0);
    cr_assert_eq (zsock_connect (judge, "%s", s->inbox [P_EMITTER]), 0);
    double unroutable0 = s_metric (s, P_EMITTER, "sluice_frames_unroutable_total");
    double unknown0 = s_metric (s, P_GATEWAY, "sluice_frames_unknown_total");
    uint8_t sid [SL_SID_SIZE];
    sl_sid_new (sid);
    s_judged_stream (judge, sid, address);
    cr_expect (harness_wait_metric (atoi (s->metrics [P_EMITTER]), "sluice_frames_unroutable_total", unroutable0 + 1, TIMEOUT_MS) >= unroutable0 + 1,
               "frames for an address are dropped and counted");
    char rest [64];
    cr_expect (proc_wait_log (s->emitter, "\"frames_unroutable\"", "gateway=", rest, sizeof rest, 1000));
    cr_expect_str_eq (rest, address, "and the name logged");
    struct pollfd pfd = { .fd = listener, .events = POLLIN };
    cr_expect_eq (poll (&pfd, 1, 200), 0, "the emitter never connected to the address in the message");
    cr_expect_eq (s_metric (s, P_GATEWAY, "sluice_frames_unknown_total"), unknown0,
                  "nor sent them to the gateway it knows");

    //  The same stream naming the gateway: its frames reach that gateway
    //  (which holds no such stream and drops them, counted).
    sl_sid_new (sid);
    s_judged_stream (judge, sid, name);
    cr_expect (harness_wait_metric (atoi (s->metrics [P_GATEWAY]), "sluice_frames_unknown_total", unknown0 + 1, TIMEOUT_MS) >= unknown0 + 1,
               "frames reach the gateway of that name");
    cr_expect_eq (poll (&pfd, 1, 0), 0);
    close (listener);
    zsock_destroy (&judge);
    cr_expect_eq (stack_stop (s), 0);
}
