/*  sl_bearerauth.h - an access token source as a credential source
    (sl_auth.h): what Google's (sl_gcpauth) and Entra ID's (sl_azauth)
    sources share.

    The token source fetches in the reactor and again before its token
    expires (sl_refresher); each attempt gets "Authorization: Bearer
    <token>". While none is valid the attempt is PENDING, and notify is
    called once the fetch ends. A fetch that fails fails the attempts
    waiting for it, with the source's reason, while notify runs: the
    waiting calls ask again inside it (sl_upcall_authorized) and are told
    FAILED; a call that comes after starts a new fetch. A token a header
    cannot carry (a line break) is refused, never sent. Tokens are never
    logged.
*/
#ifndef SL_BEARERAUTH_H
#define SL_BEARERAUTH_H

#include <stdint.h>

#include "common/cloud/sl_refresher.h"
#include "common/http/sl_auth.h"

//  What the adapter asks of its token source.
typedef struct {
    const char *what;                   //  "Google access token": in every reason
    //  As sl_gcptoken_get: 0 with *token, or 1 and ready called once.
    int (*get) (void *source, const char **token, sl_refresher_ready_fn *ready, void *arg, uint64_t *wait_id);
    void (*cancel) (void *source, uint64_t wait_id);
    sl_refresher_t *(*refresher) (void *source);
    void (*destroy) (void *source);
    //  A failed fetch's reason made more helpful (NULL: as it is).
    void (*explain) (void *source, const char *error, char *why, size_t size);
} sl_bearer_source_t;

//  A credential source over source (owned from now on, destroyed with it).
sl_auth_t *sl_bearerauth_new (void *source, const sl_bearer_source_t *ops, sl_auth_notify_fn *notify,
                              void *notify_arg);
//  Its token source, borrowed (NULL for NULL).
void *sl_bearerauth_source (sl_auth_t *self);

#endif
