/*  sl_resolve.h - a list of endpoints, with names resolved to addresses.

    "tcp://emitter:5558,tcp://10.0.0.7:5558": each endpoint whose host is a
    name stands for every IPv4 address the name has now (docker compose
    --scale gives one name many addresses), each address one endpoint.
    A process that connects to every instance of a service resolves the
    list again every few seconds (SL_RESOLVE_MS) and connects to the new
    addresses, drops the gone ones. (sl_router does the same for the
    stages; sluice-audit uses this for the emitters it takes records from.)
*/
#ifndef SL_RESOLVE_H
#define SL_RESOLVE_H

#include <stddef.h>

#define SL_RESOLVE_ENDPOINT_MAX 128     //  bytes of one endpoint

//  Resolve list into at most max endpoints (each SL_RESOLVE_ENDPOINT_MAX
//  bytes); returns how many. A malformed entry or a name that does not
//  resolve now is left out and its text goes to *why (static, or NULL):
//  -1 when the list itself is malformed (nothing can be done with it).
int sl_resolve_list (const char *list, char (*out) [SL_RESOLVE_ENDPOINT_MAX], size_t max, const char **why);

#endif
