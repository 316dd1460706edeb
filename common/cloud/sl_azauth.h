/*  sl_azauth.h - Entra ID access tokens as a credential source
    (sl_auth.h, SL_AUTH_AZURE): what an Azure OpenAI provider without a
    key or token variable is authorized with.

    A source over sl_aztoken: the token of a client secret's or a
    federated token's grant, fetched in the reactor when the source is
    made and again before it expires; each attempt gets
    "Authorization: Bearer <token>". While none is valid the attempt is
    PENDING, and the source calls notify once the fetch ends. A fetch that
    fails fails the attempts waiting for it, with the endpoint's reason
    (its error_description), while notify runs: the waiting calls ask
    again inside it (sl_upcall_authorized) and are told FAILED; a call
    that comes after starts a new fetch. A token a header cannot carry (a
    line break) is refused, never sent. Tokens are never logged.

    Tests: tests/unit/common/cloud/test_sl_azauth.c.
*/
#ifndef SL_AZAUTH_H
#define SL_AZAUTH_H

#include <czmq.h>

#include "common/cloud/sl_aztoken.h"
#include "common/http/sl_auth.h"
#include "common/http/sl_curlm.h"

//  A source of config's tokens (copied); notify (notify_arg) is called
//  from the reactor when a waiting attempt may ask again. NULL with why
//  set when the source cannot be made. timing: NULL for sl_refresher's
//  defaults.
sl_auth_t *sl_azauth_new (zloop_t *loop, sl_curlm_t *curlm, const sl_aztoken_config_t *config,
                          const sl_refresher_timing_t *timing, sl_auth_notify_fn *notify, void *notify_arg,
                          char *why, size_t why_size);
//  Its token source (for tests), borrowed.
sl_aztoken_t *sl_azauth_token (sl_auth_t *self);

#endif
