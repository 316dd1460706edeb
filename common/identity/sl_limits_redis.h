/*  sl_limits_redis.h - limits counted in Redis, so that several gateways
    hold them together (SLUICE_REDIS_URL).

    A store of sl_limits.h over one asynchronous connection (hiredis) in
    the caller's zloop: a plan is admitted by one Lua script that checks
    every counter and adds to them only when all have room, so the count is
    atomic across gateways; usage at a stream's end goes as INCRBY with an
    expiry, and a stream's place in a concurrency set (a sorted set of
    stream ids scored by their lease's end) as ZREM.

    An answer that does not come within timeout_ms, a connection that
    cannot be made or is lost, or an answer that is not what the script
    returns is SL_LIMITS_UNREACHABLE, with why: the caller applies its
    limits_on_error. A lost connection is made again at most once a second.

    The caller of an answer that did not come in time holds nothing in the
    store, and never renews or finishes it. So when the script's answer
    comes after all and says it counted the request, that is taken back at
    once (the stream leaves the concurrency sets, the request leaves the
    minute's count; logged "limits_undone"): a stalled Redis does not leave
    phantom streams holding places for a lease (SL_LIMITS_LEASE_S). A
    connection lost with the answer leaves what the script did, if it ran,
    to the lease.
*/
#ifndef SL_LIMITS_REDIS_H
#define SL_LIMITS_REDIS_H

#include <czmq.h>

#include "common/identity/sl_limits.h"

#define SL_LIMITS_REDIS_RECONNECT_MS 1000   //  between two attempts to connect

//  A store at url ("redis://[:password@]host[:port][/db]"). NULL with
//  *error (static text) when the URL is not one.
sl_limits_store_t *sl_limits_redis_new (zloop_t *loop, const char *url, int timeout_ms, const char **error);
//  Is the connection up (tests, /healthz)?
bool sl_limits_redis_connected (sl_limits_store_t *self);

#endif
