/*  sl_gcpauth.h - Google's access tokens as a credential source
    (sl_auth.h, SL_AUTH_GOOGLE): what a Vertex AI provider without a token
    variable is authorized with.

    A source over sl_gcptoken: the token of a service-account key's grant
    or of the metadata server, fetched in the reactor when the source is
    made and again before it expires; each attempt gets
    "Authorization: Bearer <token>". While none is valid the attempt is
    PENDING, and the source calls notify once the fetch ends. A fetch that
    fails fails the attempts waiting for it, with the endpoint's reason,
    while notify runs: the waiting calls ask again inside it
    (sl_upcall_authorized) and are told FAILED; a call that comes after
    starts a new fetch. A token a header cannot carry (a line break) is
    refused, never sent. Tokens are never logged.

    Tests: tests/unit/common/cloud/test_sl_gcpauth.c.
*/
#ifndef SL_GCPAUTH_H
#define SL_GCPAUTH_H

#include <czmq.h>

#include "common/cloud/sl_gcptoken.h"
#include "common/http/sl_auth.h"
#include "common/http/sl_curlm.h"

//  A source of config's tokens (copied); notify (notify_arg) is called
//  from the reactor when a waiting attempt may ask again. NULL with why
//  set when the source cannot be made (a key file that is not a usable
//  key, named). timing: NULL for sl_refresher's defaults.
sl_auth_t *sl_gcpauth_new (zloop_t *loop, sl_curlm_t *curlm, const sl_gcptoken_config_t *config,
                           const sl_refresher_timing_t *timing, sl_auth_notify_fn *notify, void *notify_arg,
                           char *why, size_t why_size);
//  Its token source (for tests and metrics), borrowed.
sl_gcptoken_t *sl_gcpauth_token (sl_auth_t *self);

#endif
