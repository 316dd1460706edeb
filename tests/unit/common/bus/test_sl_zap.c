/*  Unit tests: common/bus/sl_zap - the access table, the reading of ZAP
    requests, and the handler on real CURVE sockets: allowed keys connect,
    others never complete a handshake, and with no handler nothing does. */
#include <criterion/criterion.h>
#include <czmq.h>
#include <string.h>

#include "common/bus/sl_bus.h"
#include "common/bus/sl_zap.h"
#include "tests/unit/keydir.h"

static const char *s_domains [] = { "gateway", "ingest", "aggregator", "judge", "emitter", "tap", "tap-meta",
                                    "audit" };
static const char *s_keys [] = { "gateway", "ingest", "aggregator", "judge", "emitter", "tap", "tap-meta",
                                 "audit" };
#define S_ROLES (sizeof s_keys / sizeof s_keys [0])

//  The one expected table: which key may reach which domain.
static bool
s_allowed (const char *domain, const char *key)
{
    static const char *pairs [][2] = {
        { "gateway", "emitter" }, { "ingest", "gateway" }, { "aggregator", "ingest" },
        { "judge", "aggregator" }, { "emitter", "judge" }, { "tap", "tap" },
        { "tap-meta", "tap" }, { "tap-meta", "tap-meta" }, { "audit", "audit" },
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs [0]; i++)
        if (strcmp (pairs [i][0], domain) == 0 && strcmp (pairs [i][1], key) == 0)
            return true;
    return false;
}

Test (sl_zap, every_key_reaches_exactly_the_domains_of_the_table)
{
    char dir [64];
    keydir_make (dir, sizeof dir);
    sl_keys_t *keys = sl_keys_new ();
    char *error = NULL;
    cr_assert_eq (sl_keys_load (keys, dir, &error), (int) S_ROLES);
    int allowed = 0;
    for (size_t d = 0; d < S_ROLES; d++)
        for (size_t k = 0; k < S_ROLES; k++) {
            const sl_key_t *key = sl_keys_named (keys, s_keys [k]);
            sl_zap_verdict_t v;
            sl_zap_decide (keys, s_domains [d], SL_STR_LIT ("CURVE"), key->public_key, SL_KEY_SIZE, &v);
            bool expect = s_allowed (s_domains [d], s_keys [k]);
            cr_expect_eq (v.status, expect ? 200 : 400, "%s -> %s: %d %s", s_keys [k], s_domains [d],
                          v.status, v.text);
            if (expect) {
                cr_expect_str_eq (v.user_id, s_keys [k], "the user id names the key");
                allowed++;
            }
            else {
                cr_expect_str_eq (v.user_id, "");
                cr_expect_not (v.unknown_key);
            }
        }
    cr_expect_eq (allowed, 9);

    const sl_key_t *judge = sl_keys_named (keys, "judge");
    sl_zap_verdict_t v;
    sl_zap_decide (keys, "emitter", SL_STR_LIT ("PLAIN"), judge->public_key, SL_KEY_SIZE, &v);
    cr_expect_eq (v.status, 400, "only CURVE");
    sl_zap_decide (keys, "emitter", SL_STR_LIT ("NULL"), NULL, 0, &v);
    cr_expect_eq (v.status, 400);
    sl_zap_decide (keys, "emitter", SL_STR_LIT ("CURVE"), judge->public_key, SL_KEY_SIZE - 1, &v);
    cr_expect_eq (v.status, 400, "a short key");
    sl_zap_decide (keys, "bogus", SL_STR_LIT ("CURVE"), judge->public_key, SL_KEY_SIZE, &v);
    cr_expect_eq (v.status, 400, "a domain not in the table");
    sl_zap_decide (keys, "", SL_STR_LIT ("CURVE"), judge->public_key, SL_KEY_SIZE, &v);
    cr_expect_eq (v.status, 400, "no domain");
    uint8_t stranger [SL_KEY_SIZE];
    memset (stranger, 7, sizeof stranger);
    sl_zap_decide (keys, "emitter", SL_STR_LIT ("CURVE"), stranger, SL_KEY_SIZE, &v);
    cr_expect_eq (v.status, 400);
    cr_expect (v.unknown_key, "an unknown key may be a new one: the handler reads the keys again");
    sl_keys_destroy (&keys);
    keydir_remove (dir);
}

Test (sl_zap, requests_are_read_without_trusting_them)
{
    char dir [64];
    keydir_make (dir, sizeof dir);
    sl_keys_t *keys = sl_keys_new ();
    char *error = NULL;
    sl_keys_load (keys, dir, &error);
    const sl_key_t *judge = sl_keys_named (keys, "judge");
    sl_str_t frames [7] = {
        SL_STR_LIT ("1.0"), SL_STR_LIT ("7"), SL_STR_LIT ("emitter"), SL_STR_LIT ("127.0.0.1"),
        SL_STR_LIT (""), SL_STR_LIT ("CURVE"), sl_str_n (judge->public_key, SL_KEY_SIZE)
    };
    sl_zap_verdict_t v;
    char domain [32];
    sl_zap_handle (keys, frames, 7, &v, domain, sizeof domain);
    cr_expect_eq (v.status, 200);
    cr_expect_str_eq (domain, "emitter");
    cr_expect_str_eq (v.user_id, "judge");
    sl_zap_handle (keys, frames, 5, &v, domain, sizeof domain);
    cr_expect_eq (v.status, 500, "too few frames");
    sl_zap_handle (keys, frames, 6, &v, domain, sizeof domain);
    cr_expect_eq (v.status, 400, "no credentials");
    frames [0] = SL_STR_LIT ("2.0");
    sl_zap_handle (keys, frames, 7, &v, domain, sizeof domain);
    cr_expect_eq (v.status, 500, "unknown version");
    frames [0] = SL_STR_LIT ("1.0");
    //  A domain with a NUL inside must not read as the domain before it.
    frames [2] = sl_str_n ("emitter\0x", 9);
    sl_zap_handle (keys, frames, 7, &v, domain, sizeof domain);
    cr_expect_eq (v.status, 400);
    cr_expect_str_eq (domain, "");
    //  A domain longer than the buffer is cut, and then matches nothing.
    frames [2] = SL_STR_LIT ("emitteremitteremitteremitteremitteremitter");
    sl_zap_handle (keys, frames, 7, &v, domain, sizeof domain);
    cr_expect_eq (v.status, 400);
    sl_keys_destroy (&keys);
    keydir_remove (dir);
}

//  --------------------------------------------------------------------------
//  On sockets: a server of the emitter's inbox domain in a reactor, and
//  clients with keys of every kind.

typedef struct {
    zsock_t *server;
    int received;                       //  messages that got through
    char last_user [64];                //  User-Id of the last one
} s_server_t;

static int
s_on_server (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    s_server_t *s = arg;
    zmq_msg_t part;
    zmq_msg_init (&part);
    while (zmq_msg_recv (&part, zsock_resolve (reader), ZMQ_DONTWAIT) >= 0)
        if (!zmq_msg_more (&part)) {
            s->received++;
            const char *user = zmq_msg_gets (&part, "User-Id");
            snprintf (s->last_user, sizeof s->last_user, "%s", user ? user : "");
        }
    zmq_msg_close (&part);
    return 0;
}

static int
s_on_deadline (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    (void) arg;
    return -1;
}

typedef struct {
    s_server_t *server;
    int want;
} s_wait_t;

static int
s_on_check (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_wait_t *w = arg;
    return w->server->received >= w->want ? -1 : 0;
}

//  Run the reactor until want messages arrived, or for at most ms.
static void
s_run (zloop_t *loop, s_server_t *s, int want, int ms)
{
    s_wait_t w = { s, want };
    int check = zloop_timer (loop, 10, 0, s_on_check, &w);
    int deadline = zloop_timer (loop, (size_t) ms, 1, s_on_deadline, NULL);
    zloop_start (loop);
    zloop_timer_end (loop, check);
    zloop_timer_end (loop, deadline);
}

//  A counter's value in a Prometheus text page, -1 when absent.
static double
s_metric (sl_metrics_t *m, const char *line_start)
{
    sl_buf_t text = { 0 };
    sl_metrics_render (m, &text);
    const char *hit = strstr (sl_buf_cstr (&text), line_start);
    double v = hit ? atof (hit + strlen (line_start)) : -1;
    sl_buf_free (&text);
    return v;
}

static zsock_t *
s_client (const char *endpoint, zcert_t *cert, const uint8_t *server_key)
{
    zsock_t *c = zsock_new (ZMQ_DEALER);
    if (cert) {
        zcert_apply (cert, zsock_resolve (c));
        zsock_set_curve_serverkey_bin (c, server_key);
    }
    zsock_connect (c, "%s", endpoint);
    zstr_send (c, "hello");
    return c;
}

Test (sl_zap, on_the_wire_only_the_allowed_key_gets_through)
{
    char dir [64];
    keydir_make (dir, sizeof dir);
    zloop_t *loop = zloop_new ();
    sl_metrics_t *m = sl_metrics_new ();
    sl_bus_opts_t opts = { .keys = dir, .auth = "on" };
    sl_bus_t *bus = sl_bus_new (loop, m, &opts, "emitter");
    cr_assert_not_null (bus);
    s_server_t s = { 0 };
    s.server = zsock_new (ZMQ_ROUTER);
    cr_assert_eq (sl_bus_server (bus, s.server, "emitter"), 0);
    int port = zsock_bind (s.server, "tcp://127.0.0.1:*");
    cr_assert_gt (port, 0);
    char endpoint [64];
    snprintf (endpoint, sizeof endpoint, "tcp://127.0.0.1:%d", port);
    zloop_reader (loop, s.server, s_on_server, &s);

    sl_keys_t *keys = sl_keys_new ();
    char *error = NULL;
    sl_keys_load (keys, dir, &error);
    const uint8_t *server_key = sl_keys_named (keys, "emitter")->public_key;
    bool loose;
    zcert_t *judge = sl_keys_load_secret (dir, "judge", &loose, &error);
    zcert_t *aggregator = sl_keys_load_secret (dir, "aggregator", &loose, &error);
    zcert_t *tap = sl_keys_load_secret (dir, "tap", &loose, &error);
    zcert_t *stranger = zcert_new ();
    zsock_t *clients [] = {
        s_client (endpoint, aggregator, server_key),    //  a real key of another role
        s_client (endpoint, tap, server_key),           //  a tap key at an inbox
        s_client (endpoint, stranger, server_key),      //  a valid pair nobody knows
        s_client (endpoint, NULL, NULL),                //  no CURVE at all
        s_client (endpoint, judge, server_key),         //  the one allowed
    };
    //  The allowed one's message, then time for any other to get in.
    s_run (loop, &s, 1, 5000);
    s_run (loop, &s, 1000, 500);
    cr_expect_eq (s.received, 1, "only the judge's message arrived");
    cr_expect_str_eq (s.last_user, "judge", "its User-Id names the key");
    cr_expect_geq (s_metric (m, "sluice_zap_refused_total{domain=\"emitter\"} "), 3,
                   "the three keys were refused by ZAP");
    cr_expect_eq (s_metric (m, "sluice_zap_allowed_total{domain=\"emitter\"} "), 1);
    cr_expect_geq (s_metric (m, "sluice_bus_handshake_failures_total{domain=\"emitter\",reason=\"protocol\"} "), 1,
                   "the plaintext peer failed its handshake");
    for (size_t i = 0; i < sizeof clients / sizeof clients [0]; i++)
        zsock_destroy (&clients [i]);
    zcert_destroy (&judge);
    zcert_destroy (&aggregator);
    zcert_destroy (&tap);
    zcert_destroy (&stranger);
    sl_keys_destroy (&keys);
    zsock_destroy (&s.server);
    sl_bus_destroy (&bus);
    zloop_destroy (&loop);
    sl_metrics_destroy (&m);
    keydir_remove (dir);
}

//  The domain is enforced: with no handler in the process, even the right
//  key is refused (fail closed), never let in unchecked.
Test (sl_zap, without_a_handler_nobody_gets_through)
{
    zcert_t *server = zcert_new ();
    zsock_t *sock = zsock_new (ZMQ_ROUTER);
    zcert_apply (server, zsock_resolve (sock));
    zsock_set_curve_server (sock, 1);
    zsock_set_zap_domain (sock, "emitter");
    int on = 1;
    cr_assert_eq (zmq_setsockopt (zsock_resolve (sock), 93 /* ZMQ_ZAP_ENFORCE_DOMAIN */, &on, sizeof on), 0);
    int port = zsock_bind (sock, "tcp://127.0.0.1:*");
    char endpoint [64];
    snprintf (endpoint, sizeof endpoint, "tcp://127.0.0.1:%d", port);
    zcert_t *client = zcert_new ();
    zsock_t *c = s_client (endpoint, client, zcert_public_key (server));
    zsock_set_rcvtimeo (sock, 1000);
    zmsg_t *msg = zmsg_recv (sock);
    cr_expect_null (msg, "no handler, no connection");
    zmsg_destroy (&msg);
    zsock_destroy (&c);
    zsock_destroy (&sock);
    zcert_destroy (&client);
    zcert_destroy (&server);
}

//  Keys change on disk while a process runs: a tap key added is let in
//  at once, a key removed is refused within a second or so.
Test (sl_zap, keys_added_and_removed_while_running)
{
    char dir [64];
    keydir_make (dir, sizeof dir);
    zloop_t *loop = zloop_new ();
    sl_metrics_t *m = sl_metrics_new ();
    sl_bus_opts_t opts = { .keys = dir, .auth = "on" };
    sl_bus_t *bus = sl_bus_new (loop, m, &opts, "emitter");
    cr_assert_not_null (bus);
    s_server_t s = { 0 };
    s.server = zsock_new (ZMQ_ROUTER);
    cr_assert_eq (sl_bus_server (bus, s.server, "tap-meta"), 0);
    int port = zsock_bind (s.server, "tcp://127.0.0.1:*");
    char endpoint [64];
    snprintf (endpoint, sizeof endpoint, "tcp://127.0.0.1:%d", port);
    zloop_reader (loop, s.server, s_on_server, &s);
    sl_keys_t *keys = sl_keys_new ();
    char *error = NULL;
    sl_keys_load (keys, dir, &error);
    const uint8_t *server_key = sl_keys_named (keys, "emitter")->public_key;

    //  A new tap key, made after the process read its keys.
    sl_buf_t report = { 0 };
    cr_assert_eq (sl_keygen_tap (dir, "alice", SL_ACCESS_METADATA, &report, &error), 0);
    bool loose;
    zcert_t *alice = sl_keys_load_secret (dir, "alice", &loose, &error);
    cr_assert_not_null (alice);
    zsock_t *c = s_client (endpoint, alice, server_key);
    s_run (loop, &s, 1, 5000);
    cr_expect_eq (s.received, 1, "a key added on disk is let in");
    cr_expect_str_eq (s.last_user, "alice");
    zsock_destroy (&c);

    //  Removed: new connections with it are refused (bounded: a few tries
    //  over at most 5 s; the directory is looked at once a second).
    char path [256];
    snprintf (path, sizeof path, "%s/alice.key", dir);
    cr_assert_eq (unlink (path), 0);
    snprintf (path, sizeof path, "%s/alice.key_secret", dir);
    cr_assert_eq (unlink (path), 0);
    bool refused = false;
    for (int attempt = 0; attempt < 10 && !refused; attempt++) {
        int before = s.received;
        c = s_client (endpoint, alice, server_key);
        s_run (loop, &s, 1 << 30, 300);  //  300 ms per try, whatever happens
        refused = s.received == before;
        zsock_destroy (&c);
    }
    cr_expect (refused, "a key removed on disk is refused");
    zcert_destroy (&alice);
    sl_buf_free (&report);
    sl_keys_destroy (&keys);
    zsock_destroy (&s.server);
    sl_bus_destroy (&bus);
    zloop_destroy (&loop);
    sl_metrics_destroy (&m);
    keydir_remove (dir);
}
