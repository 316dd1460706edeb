/*  sl_azauth.c - Entra ID access tokens as a credential source (see
    sl_azauth.h): sl_aztoken behind the bearer adapter (sl_bearerauth). */
#include "common/cloud/sl_azauth.h"

#include "common/cloud/sl_bearerauth.h"

static int
s_get (void *source, const char **token, sl_refresher_ready_fn *ready, void *arg, uint64_t *wait_id)
{
    return sl_aztoken_get (source, token, ready, arg, wait_id);
}

static void
s_cancel (void *source, uint64_t wait_id)
{
    sl_aztoken_cancel (source, wait_id);
}

static sl_refresher_t *
s_refresher (void *source)
{
    return sl_aztoken_refresher (source);
}

static void
s_destroy (void *source)
{
    sl_aztoken_t *token = source;
    sl_aztoken_destroy (&token);
}

static const sl_bearer_source_t s_ops = { "Entra ID access token", s_get, s_cancel, s_refresher, s_destroy,
                                          NULL };

sl_auth_t *
sl_azauth_new (zloop_t *loop, sl_curlm_t *curlm, const sl_aztoken_config_t *config,
                const sl_refresher_timing_t *timing, sl_auth_notify_fn *notify, void *notify_arg,
                char *why, size_t why_size)
{
    sl_aztoken_t *token = sl_aztoken_new (loop, curlm, config, timing, why, why_size);
    return token ? sl_bearerauth_new (token, &s_ops, notify, notify_arg) : NULL;
}

sl_aztoken_t *
sl_azauth_token (sl_auth_t *base)
{
    return sl_bearerauth_source (base);
}
