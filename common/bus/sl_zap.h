/*  sl_zap.h - who may talk to which socket of the bus: the ZAP handler.

    Every server socket of the bus (a stage's inbox, the emitter's tap
    sockets) is a CURVE server with a ZAP domain naming what it is, and
    ZMQ_ZAP_ENFORCE_DOMAIN set: libzmq then asks the ZAP handler of the
    process (RFC 27, a REP socket at inproc://zeromq.zap.01) about every
    client key during the handshake, and refuses the connection when no
    handler answers. The rule is one table:

        domain      socket                      keys allowed
        gateway     gateway inbox (frames)      emitter
        ingest      ingest inbox (jobs, acks)   gateway
        aggregator  aggregator inbox (deltas)   ingest
        judge       judge inbox (blocks)        aggregator
        emitter     emitter inbox (judged)      judge
        tap         emitter PUB, everything     tap keys with access full
        tap-meta    emitter PUB, metadata only  every tap key
        audit       emitter audit records       audit
        approvals   judge approvals control     gateway, audit

    A refused key never completes its handshake, so it can neither send a
    message nor subscribe to one. The user id of an allowed connection is
    the key's name.

    The decision (sl_zap_decide) and the reading of a request
    (sl_zap_handle) are pure; sl_zap_t is the REP socket serving them in
    the process's reactor, counting sluice_zap_refused_total{domain} and
    logging refusals (rate-limited).
*/
#ifndef SL_ZAP_H
#define SL_ZAP_H

#include <czmq.h>

#include "common/bus/sl_keys.h"
#include "common/base/sl_metrics.h"
#include "common/base/sl_str.h"

#define SL_ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define SL_ZAP_MAX_FRAMES 8             //  frames of a request read (CURVE has 7)

typedef struct {
    int status;                         //  200 allowed, 400 refused, 500 malformed request
    const char *text;                   //  why (static)
    const char *user_id;                //  the key's name when allowed (borrowed), else ""
    bool unknown_key;                   //  refused because no key of the directory matched
} sl_zap_verdict_t;

//  May a client with this key connect to a socket of this domain?
//  mechanism is the ZAP request's ("CURVE": anything else is refused).
void sl_zap_decide (sl_keys_t *keys, const char *domain, sl_str_t mechanism,
                    const uint8_t *key, size_t key_len, sl_zap_verdict_t *verdict);
//  True when the domain is one of the table's.
bool sl_zap_domain_known (const char *domain);
//  The role a domain admits ("tap" for the tap sockets), NULL if unknown;
//  the first, for a domain that admits two.
const char *sl_zap_domain_role (const char *domain);
//  Does the domain admit keys of this role?
bool sl_zap_domain_admits (const char *domain, const char *role);

//  A whole request: frames as received (version, request id, domain,
//  address, identity, mechanism, credentials). Fills verdict and
//  *domain (the request's, cut to size, "" when absent).
void sl_zap_handle (sl_keys_t *keys, const sl_str_t *frames, size_t count,
                    sl_zap_verdict_t *verdict, char *domain, size_t domain_size);

typedef struct _sl_zap_t sl_zap_t;
//  Asked before every decision: reload the keys if they changed on disk
//  (a key added, rotated or removed); true when they did. Unless force,
//  the caller may skip looking more than once a second; force comes
//  before a key is refused as unknown (it may have been added just now).
typedef bool (sl_zap_refresh_fn) (void *arg, bool force);

//  Bind the handler (keys are borrowed and must outlive it). NULL when
//  the endpoint is taken (a second handler in one process).
sl_zap_t *sl_zap_new (zloop_t *loop, sl_keys_t *keys, sl_metrics_t *metrics);
void sl_zap_destroy (sl_zap_t **self_p);
//  Register the counters of a domain this process serves (so they read 0
//  before the first refusal).
void sl_zap_serve_domain (sl_zap_t *self, const char *domain);
void sl_zap_on_refresh (sl_zap_t *self, sl_zap_refresh_fn *fn, void *arg);

#endif
