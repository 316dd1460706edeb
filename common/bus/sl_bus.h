/*  sl_bus.h - the security of one process's ZeroMQ bus: its own key, the
    public keys it knows, its ZAP handler, and CURVE on every socket.

    Every link of the bus is CURVE (libzmq's): the side that binds is the
    server, authenticated by its public key, which every client must know;
    the client is authenticated by ZAP (sl_zap.h) against the key directory.
    A process reads its key directory once at start (--keys DIR or
    SLUICE_KEYS): its own secret certificate, named after its role (or the
    tap key it was given), and the public certificates. Without usable keys
    it does not start. --bus-auth off runs the bus in plaintext, with a
    warning at start and the gauge sluice_bus_insecure at 1: for
    measurement and debugging only.

    Server sockets also get a monitor that counts handshakes that failed
    before ZAP could be asked (a peer without CURVE, or without the
    server's public key): sluice_bus_handshake_failures_total{domain,reason}.
*/
#ifndef SL_BUS_H
#define SL_BUS_H

#include <czmq.h>
#include <stdbool.h>

#include "common/bus/sl_keys.h"
#include "common/base/sl_metrics.h"

typedef struct {
    const char *keys;                   //  key directory ("" : none)
    const char *auth;                   //  "on" or "off"
} sl_bus_opts_t;

#define SL_BUS_OPTS_INIT { .keys = "", .auth = "on" }
//  The two options of every process on the bus, for its sl_opt_t table.
#define SL_BUS_OPT_KEYS(o) \
    { "keys", "SLUICE_KEYS", &(o).keys, "key directory of the bus (sluice-keygen --dir DIR makes one)" }
#define SL_BUS_OPT_AUTH(o) \
    { "bus-auth", "SLUICE_BUS_AUTH", &(o).auth, \
      "on: CURVE, keys required; off: plaintext bus, for measurement and debugging only" }

typedef struct _sl_bus_t sl_bus_t;

//  key_name: this process's key in the directory (its role; a tap's key
//  name). loop may be NULL (no ZAP handler: clients only, for tests).
//  NULL (the reason logged) when the options are bad or the keys unusable.
sl_bus_t *sl_bus_new (zloop_t *loop, sl_metrics_t *metrics, const sl_bus_opts_t *opts, const char *key_name);
//  Destroy after every socket set up through it is closed.
void sl_bus_destroy (sl_bus_t **self_p);
//  Make sock, before it binds, a CURVE server whose clients ZAP checks for
//  domain (one of sl_zap.h's table). 0 ok, -1 (logged) on failure.
int sl_bus_server (sl_bus_t *self, zsock_t *sock, const char *domain);
//  Make sock, before it connects, a CURVE client of the key named server.
//  0 ok, -1 (logged) when that public key is not known.
int sl_bus_client (sl_bus_t *self, zsock_t *sock, const char *server);
//  Log (rate-limited) why handshakes of a client socket fail: a server
//  that refuses this process's key, or one that is not who it should be.
//  For clients whose failures a person must see (sluice-tap); routers
//  rely on their peers' heartbeats instead.
void sl_bus_watch_client (sl_bus_t *self, zsock_t *sock, const char *server);
//  True when the public key named server is known (or the bus is
//  plaintext): checked at start by processes that connect later (DNS).
bool sl_bus_knows (sl_bus_t *self, const char *server);
//  What this process's own key may see (taps); SL_ACCESS_FULL when the bus
//  is plaintext.
sl_access_t sl_bus_access (sl_bus_t *self);

#endif
