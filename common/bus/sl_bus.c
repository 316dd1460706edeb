/*  sl_bus.c - keys, ZAP and CURVE for one process (see sl_bus.h).

    Tests: tests/unit/common/bus/test_sl_zap.c (CURVE on real sockets:
    the server's keys, ZAP, what is refused) and test_sl_router.c (its
    clients).
*/
#include "common/bus/sl_bus.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"
#include "common/base/sl_ratelimit.h"
#include "common/bus/sl_zap.h"

//  libzmq 4.3 implements ZMQ_ZAP_ENFORCE_DOMAIN but its header lists it with
//  the draft options (and czmq's setter, built without drafts, does
//  nothing): set it by number and read it back.
#ifndef ZMQ_ZAP_ENFORCE_DOMAIN
#define ZMQ_ZAP_ENFORCE_DOMAIN 93
#endif

#define SL_BUS_MAX_MONITORS 8           //  server sockets of one process
#define SL_BUS_REFRESH_MS 1000          //  the key directory is looked at no more often
#define SL_BUS_LOG_BURST 5              //  failed handshakes logged per window and socket
#define SL_BUS_LOG_WINDOW_MS 10000
#define SL_BUS_MONITOR_DRAIN 64

static const int s_failure_events = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
                                  | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
                                  | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;

typedef struct {
    zsock_t *pair;                      //  receives the monitored socket's events
    bool client;                        //  a client socket (else a server)
    char domain [16];
    sl_counter_t *protocol;             //  no CURVE, or not the server's key
    sl_counter_t *auth;                 //  refused by ZAP
    sl_counter_t *other;
    sl_ratelimit_t log;
} s_monitor_t;

struct _sl_bus_t {
    zloop_t *loop;
    sl_metrics_t *metrics;
    bool secure;
    char *dir;
    char name [SL_KEY_NAME_MAX + 1];
    zcert_t *cert;                      //  our own key
    sl_access_t access;
    sl_keys_t *keys;                    //  the public keys of the directory
    sl_zap_t *zap;                      //  the handler, once a server socket exists
    struct timespec dir_mtime;          //  of the directory when last read
    int64_t refreshed_at;               //  ms, last look at the directory
    s_monitor_t monitors [SL_BUS_MAX_MONITORS];
    size_t monitor_count;
};

static void
s_dir_mtime (const char *dir, struct timespec *out)
{
    struct stat st;
    memset (out, 0, sizeof *out);
    if (stat (dir, &st) == 0)
        *out = st.st_mtim;
}

static void
s_log_skipped (sl_keys_t *keys)
{
    const char *skipped = sl_keys_skipped (keys);
    while (*skipped) {
        size_t n = strcspn (skipped, "\n");
        sl_log_warn ("key_skipped", "%.*s", (int) n, skipped);
        skipped += n + (skipped [n] == '\n');
    }
}

//  ZAP asks before each decision: read the directory again when it changed
//  (a tap key added or removed, a key rotated). Its modification time is
//  looked at once a second at most, or at once before an unknown key is
//  refused.
static bool
s_refresh (void *arg, bool force)
{
    sl_bus_t *self = arg;
    int64_t now = zclock_mono ();
    if (!force && now - self->refreshed_at < SL_BUS_REFRESH_MS)
        return false;
    self->refreshed_at = now;
    struct timespec mtime;
    s_dir_mtime (self->dir, &mtime);
    if (mtime.tv_sec == self->dir_mtime.tv_sec && mtime.tv_nsec == self->dir_mtime.tv_nsec)
        return false;
    char *error = NULL;
    int count = sl_keys_load (self->keys, self->dir, &error);
    if (count < 0) {
        sl_log_error ("keys_reload_failed", "%s", error);
        free (error);
        return false;
    }
    self->dir_mtime = mtime;
    s_log_skipped (self->keys);
    sl_log_info ("keys_reloaded", "dir=%s keys=%d", self->dir, count);
    return true;
}

sl_bus_t *
sl_bus_new (zloop_t *loop, sl_metrics_t *metrics, const sl_bus_opts_t *opts, const char *key_name)
{
    sl_gauge_t *insecure = sl_metrics_gauge (metrics, "sluice_bus_insecure", NULL,
                                             "1 when the ZeroMQ bus runs without CURVE (--bus-auth off)");
    bool off = opts->auth && strcmp (opts->auth, "off") == 0;
    if (!off && !(opts->auth && strcmp (opts->auth, "on") == 0)) {
        sl_log_error ("bad_option", "--bus-auth must be on or off, not '%s'", opts->auth ? opts->auth : "");
        return NULL;
    }
    sl_bus_t *self = sl_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->metrics = metrics;
    snprintf (self->name, sizeof self->name, "%s", key_name);
    if (off) {
        insecure->value = 1;
        self->access = SL_ACCESS_FULL;
        sl_log_warn ("bus_insecure", "--bus-auth off: the ZeroMQ bus is plaintext and unauthenticated; "
                     "anyone who reaches its ports can read, inject and cancel streams. "
                     "For measurement and debugging only");
        return self;
    }
    self->secure = true;
    if (!zmq_has ("curve")) {
        sl_log_error ("curve_unavailable", "this libzmq has no CURVE (built without libsodium)");
        sl_bus_destroy (&self);
        return NULL;
    }
    if (!opts->keys || !*opts->keys) {
        sl_log_error ("no_keys", "the bus needs keys: give --keys DIR or SLUICE_KEYS "
                      "(sluice-keygen --dir DIR creates them); --bus-auth off runs without "
                      "authentication, for measurement and debugging only");
        sl_bus_destroy (&self);
        return NULL;
    }
    self->dir = sl_xstrdup (opts->keys);
    char *error = NULL;
    bool loose = false;
    self->cert = sl_keys_load_secret (self->dir, key_name, &loose, &error);
    if (!self->cert) {
        sl_log_error ("no_keys", "%s", error);
        free (error);
        sl_bus_destroy (&self);
        return NULL;
    }
    if (loose)
        sl_log_warn ("key_readable", "%s/%s.key_secret can be read by other users (chmod 600 it)",
                     self->dir, key_name);
    const char *access = zcert_meta (self->cert, "access");
    self->access = access ? sl_access_parse (access) : SL_ACCESS_NONE;
    self->keys = sl_keys_new ();
    s_dir_mtime (self->dir, &self->dir_mtime);
    int count = sl_keys_load (self->keys, self->dir, &error);
    if (count < 0) {
        sl_log_error ("no_keys", "%s", error);
        free (error);
        sl_bus_destroy (&self);
        return NULL;
    }
    s_log_skipped (self->keys);
    self->refreshed_at = zclock_mono ();
    sl_log_info ("bus_secure", "CURVE on every link: key=%s public=%s dir=%s known_keys=%d",
                 key_name, zcert_public_txt (self->cert), self->dir, count);
    return self;
}

void
sl_bus_destroy (sl_bus_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_bus_t *self = *self_p;
    for (size_t i = 0; i < self->monitor_count; i++) {
        if (self->loop)
            zloop_reader_end (self->loop, self->monitors [i].pair);
        zsock_destroy (&self->monitors [i].pair);
    }
    sl_zap_destroy (&self->zap);
    sl_keys_destroy (&self->keys);
    zcert_destroy (&self->cert);
    free (self->dir);
    free (self);
    *self_p = NULL;
}

sl_access_t
sl_bus_access (sl_bus_t *self)
{
    return self->access;
}

//  Failed handshakes on a server socket: counted by reason, logged
//  (rate-limited). ZAP refusals are logged by the handler, with the key.
static int
s_on_monitor (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    s_monitor_t *m = arg;
    for (int n = 0; n < SL_BUS_MONITOR_DRAIN; n++) {
        zmsg_t *msg = zmsg_recv_nowait (reader);
        if (!msg)
            break;
        zframe_t *event = zmsg_first (msg);
        zframe_t *address = zmsg_next (msg);
        if (event && zframe_size (event) == 6) {
            uint16_t id;
            uint32_t value;
            memcpy (&id, zframe_data (event), sizeof id);
            memcpy (&value, zframe_data (event) + 2, sizeof value);
            const char *why = NULL;
            if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
                sl_counter_inc (m->auth);
                if (m->client)
                    why = "the server refused this process's key";
            }
            else {
                sl_counter_inc (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL ? m->protocol : m->other);
                why = value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH ? "the peer does not speak CURVE"
                    : value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC
                      ? (m->client ? "the server is not the one of the key we know"
                                   : "the peer does not have this server's key")
                    : "handshake failed";
            }
            uint32_t held;
            if (why && sl_ratelimit_allow (&m->log, zclock_mono (), &held))
                sl_log_warn ("handshake_failed", "domain=%s endpoint=%.*s error=0x%x reason=%s "
                             "(and %u more not logged)", m->domain,
                             address ? (int) zframe_size (address) : 0,
                             address ? (const char *) zframe_data (address) : "", value, why, held);
        }
        zmsg_destroy (&msg);
    }
    return 0;
}

static void
s_monitor (sl_bus_t *self, zsock_t *sock, const char *domain, bool client)
{
    if (!self->loop || self->monitor_count == SL_BUS_MAX_MONITORS)
        return;
    s_monitor_t *m = &self->monitors [self->monitor_count];
    char endpoint [64];
    snprintf (endpoint, sizeof endpoint, "inproc://sl-bus-monitor-%p-%zu", (void *) self, self->monitor_count);
    if (zmq_socket_monitor (zsock_resolve (sock), endpoint, s_failure_events) != 0)
        return;
    m->pair = zsock_new (ZMQ_PAIR);
    //  Unbounded: libzmq writes events from its I/O thread with a blocking
    //  send, so a full pipe would stall every connection of the socket.
    zsock_set_rcvhwm (m->pair, 0);
    if (zsock_connect (m->pair, "%s", endpoint) != 0) {
        zsock_destroy (&m->pair);
        zmq_socket_monitor (zsock_resolve (sock), NULL, 0);
        return;
    }
    snprintf (m->domain, sizeof m->domain, "%s", domain);
    m->client = client;
    const char *help = "Bus handshakes that failed, by reason: protocol (no CURVE, or not this server's key), "
                       "auth (refused by ZAP)";
    char labels [96];
    snprintf (labels, sizeof labels, "domain=\"%s\",reason=\"protocol\"", domain);
    m->protocol = sl_metrics_counter (self->metrics, "sluice_bus_handshake_failures_total", labels, help);
    snprintf (labels, sizeof labels, "domain=\"%s\",reason=\"auth\"", domain);
    m->auth = sl_metrics_counter (self->metrics, "sluice_bus_handshake_failures_total", labels, help);
    snprintf (labels, sizeof labels, "domain=\"%s\",reason=\"other\"", domain);
    m->other = sl_metrics_counter (self->metrics, "sluice_bus_handshake_failures_total", labels, help);
    m->log = (sl_ratelimit_t) SL_RATELIMIT_INIT (SL_BUS_LOG_BURST, SL_BUS_LOG_WINDOW_MS);
    zloop_reader (self->loop, m->pair, s_on_monitor, m);
    self->monitor_count++;
}

int
sl_bus_server (sl_bus_t *self, zsock_t *sock, const char *domain)
{
    assert (sl_zap_domain_known (domain));
    if (!self->secure)
        return 0;
    //  The handler exists before any server socket: with the domain
    //  enforced, a handshake with no handler to ask is refused.
    if (!self->zap) {
        self->zap = sl_zap_new (self->loop, self->keys, self->metrics);
        if (!self->zap)
            return -1;
        sl_zap_on_refresh (self->zap, s_refresh, self);
    }
    sl_zap_serve_domain (self->zap, domain);
    const char *role = sl_zap_domain_role (domain);
    size_t admitted = 0;
    for (size_t i = 0; i < sl_keys_count (self->keys); i++) {
        const sl_key_t *k = sl_keys_at (self->keys, i);
        admitted += sl_zap_domain_admits (domain, k->role)
                 && (strcmp (domain, "tap") != 0 || k->access == SL_ACCESS_FULL);
    }
    if (!admitted)
        sl_log_warn ("no_client_keys", "domain=%s: %s holds no key that may connect here (role %s)",
                     domain, self->dir, role);
    zcert_apply (self->cert, zsock_resolve (sock));
    zsock_set_curve_server (sock, 1);
    zsock_set_zap_domain (sock, domain);
    int on = 1, check = 0;
    size_t size = sizeof check;
    if (zmq_setsockopt (zsock_resolve (sock), ZMQ_ZAP_ENFORCE_DOMAIN, &on, sizeof on) != 0
    ||  zmq_getsockopt (zsock_resolve (sock), ZMQ_ZAP_ENFORCE_DOMAIN, &check, &size) != 0 || check != 1) {
        sl_log_error ("zap_unenforced", "this libzmq cannot enforce ZAP on a socket (%s): refusing to serve",
                      zmq_strerror (zmq_errno ()));
        return -1;
    }
    s_monitor (self, sock, domain, false);
    return 0;
}

void
sl_bus_watch_client (sl_bus_t *self, zsock_t *sock, const char *server)
{
    if (self->secure)
        s_monitor (self, sock, server, true);
}

bool
sl_bus_knows (sl_bus_t *self, const char *server)
{
    return !self->secure || sl_keys_named (self->keys, server) != NULL;
}

int
sl_bus_client (sl_bus_t *self, zsock_t *sock, const char *server)
{
    if (!self->secure)
        return 0;
    const sl_key_t *k = sl_keys_named (self->keys, server);
    if (!k) {
        sl_log_error ("no_keys", "%s has no public key named %s (%s.key): cannot connect to the %s",
                      self->dir, server, server, server);
        return -1;
    }
    zcert_apply (self->cert, zsock_resolve (sock));
    zsock_set_curve_serverkey_bin (sock, k->public_key);
    return 0;
}
