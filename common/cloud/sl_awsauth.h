/*  sl_awsauth.h - AWS credentials as the credential source of a Bedrock
    provider (sl_auth.h): each attempt signed, or given its Bedrock API key.

    The ingest makes one per provider of a dialect whose credential is
    AWS's (bedrock, bedrock-anthropic) that names neither key_env nor
    token_env, over the credentials sl_awscreds finds in the environment
    (a Bedrock API key, static keys, or web identity through STS, whose
    endpoint is in the provider's region). Each attempt is signed afresh
    with SigV4 (service "bedrock", the provider's region, the attempt's
    method, URL, header lines and body, and the wall clock), so a retry or
    a refresh of the keys never reuses a stale signature.

    While web identity's keys are fetched, authorize answers PENDING and
    the notify hook is called when the fetch ends; a fetch that failed is
    told to every attempt waiting at that moment (FAILED, with STS's
    reason), and the next attempt starts a new fetch. Secrets are never
    logged and are wiped with the source.

    Tests: tests/unit/common/cloud/test_sl_awsauth.c.
*/
#ifndef SL_AWSAUTH_H
#define SL_AWSAUTH_H

#include <czmq.h>

#include "common/cloud/sl_awscreds.h"
#include "common/http/sl_auth.h"
#include "common/http/sl_curlm.h"

#define SL_AWSAUTH_SERVICE "bedrock"    //  the signing name of bedrock-runtime

//  A source over config (copied) for region (the signature's; copied).
//  notify (notify_arg) is called from the reactor when an attempt that
//  was told PENDING may ask again; NULL: nobody is told. timing: NULL for
//  sl_refresher's defaults.
sl_auth_t *sl_awsauth_new (zloop_t *loop, sl_curlm_t *curlm, const sl_awscreds_config_t *config,
                           const char *region, const sl_refresher_timing_t *timing,
                           sl_auth_notify_fn *notify, void *notify_arg);
//  The source of credentials it holds (tests, metrics).
sl_awscreds_t *sl_awsauth_creds (sl_auth_t *self);

//  A URL's parts as SigV4 signs them: the host (with its port when the
//  URL names one), the path as sent, and the query without its '?' (""
//  when none), each appended NUL-terminated to out at the offsets
//  returned. 0 ok; -1 when url is not scheme://host/... .
int sl_awsauth_url_parts (const char *url, sl_buf_t *out, size_t *host, size_t *path, size_t *query);

#endif
