/*  sl_gcpauth.c - Google's access tokens as a credential source (see
    sl_gcpauth.h): sl_gcptoken behind the bearer adapter (sl_bearerauth). */
#include "common/cloud/sl_gcpauth.h"

#include <stdio.h>

#include "common/cloud/sl_bearerauth.h"

static int
s_get (void *source, const char **token, sl_refresher_ready_fn *ready, void *arg, uint64_t *wait_id)
{
    return sl_gcptoken_get (source, token, ready, arg, wait_id);
}

static void
s_cancel (void *source, uint64_t wait_id)
{
    sl_gcptoken_cancel (source, wait_id);
}

static sl_refresher_t *
s_refresher (void *source)
{
    return sl_gcptoken_refresher (source);
}

static void
s_destroy (void *source)
{
    sl_gcptoken_t *token = source;
    sl_gcptoken_destroy (&token);
}

//  The metadata server is the source of last resort: off Google Cloud,
//  say what else to set.
static void
s_explain (void *source, const char *error, char *why, size_t size)
{
    bool metadata = sl_gcptoken_kind (source) == SL_GCPTOKEN_METADATA;
    snprintf (why, size, "%s%s", error, metadata ? " (no key file: set credentials_file, "
              "GOOGLE_APPLICATION_CREDENTIALS or token_env off Google Cloud)" : "");
}

static const sl_bearer_source_t s_ops = { "Google access token", s_get, s_cancel, s_refresher, s_destroy,
                                          s_explain };

sl_auth_t *
sl_gcpauth_new (zloop_t *loop, sl_curlm_t *curlm, const sl_gcptoken_config_t *config,
                const sl_refresher_timing_t *timing, sl_auth_notify_fn *notify, void *notify_arg,
                char *why, size_t why_size)
{
    sl_gcptoken_t *token = sl_gcptoken_new (loop, curlm, config, timing, why, why_size);
    return token ? sl_bearerauth_new (token, &s_ops, notify, notify_arg) : NULL;
}

sl_gcptoken_t *
sl_gcpauth_token (sl_auth_t *base)
{
    return sl_bearerauth_source (base);
}
