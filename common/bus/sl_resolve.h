/*  sl_resolve.h - endpoints whose host is a name, resolved to addresses.

    "tcp://emitter:5558,tcp://10.0.0.7:5558": each endpoint whose host is a
    name stands for every IPv4 address the name has now (docker compose
    --scale gives one name many addresses), each address one endpoint.
    A process that connects to every instance of a service resolves its
    names again every SL_RESOLVE_MS and connects to the new addresses,
    drops the gone ones. The one resolver of the code base: sl_router
    resolves each name it connects to with sl_resolve_name (the stages),
    sluice-audit its list of emitters with sl_resolve_list.
*/
#ifndef SL_RESOLVE_H
#define SL_RESOLVE_H

#include <stdbool.h>
#include <stddef.h>

#define SL_RESOLVE_MS 2000              //  period of DNS re-resolution
#define SL_RESOLVE_ENDPOINT_MAX 128     //  bytes of one endpoint

//  One endpoint a name resolved to (borrowed for the call).
typedef void (sl_resolve_fn) (void *arg, const char *endpoint);

//  True when host must be resolved: not an IPv4 or IPv6 address, not a
//  bracketed one, not "*".
bool sl_resolve_is_name (const char *host);
//  Resolve host (against the local resolver: docker's embedded DNS in a
//  compose network) and call fn with the endpoint prefix + address + ":"
//  + port of each of its IPv4 addresses. Never holds the caller for more
//  than a few tens of milliseconds: a lookup the resolver does not answer
//  at once goes on in the background, and meanwhile the name's last
//  answer stands (its addresses, or why it did not resolve); a name never
//  answered yet is -1, "not answered yet", until a later call. 0, or -1
//  when the name does not resolve now: *why says why (static).
int sl_resolve_name (const char *prefix, const char *host, const char *port,
                     sl_resolve_fn *fn, void *arg, const char **why);
//  Resolve list into at most max endpoints (each SL_RESOLVE_ENDPOINT_MAX
//  bytes); returns how many. A malformed entry or a name that does not
//  resolve now is left out and its text goes to *why (static, or NULL):
//  -1 when the list itself is malformed (nothing can be done with it).
int sl_resolve_list (const char *list, char (*out) [SL_RESOLVE_ENDPOINT_MAX], size_t max, const char **why);

//  A set of connections, one per endpoint, that a list keeps in step
//  (sl_resolve_sync): the caller's, seen through these.
typedef struct {
    size_t (*count) (void *arg);
    const char *(*endpoint) (void *arg, size_t index);
    //  Connect to a new endpoint, appended at index count (it may fail:
    //  then count does not grow).
    void (*add) (void *arg, const char *endpoint);
    //  Drop the connection at index; the last one may take its place.
    void (*remove) (void *arg, size_t index);
} sl_resolve_set_t;

//  Resolve list (at most max endpoints) and bring the set in step: add
//  the endpoints it lacks, remove those the list no longer gives, unless
//  a name did not resolve this time (a resolver hiccup is not a
//  scale-down). -1 when the list is malformed (nothing changes).
int sl_resolve_sync (const char *list, size_t max, const sl_resolve_set_t *set, void *arg);

#endif
