/*  sl_azauth.c - Entra ID access tokens as a credential source (see
    sl_azauth.h). */
#include "common/cloud/sl_azauth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

#define S_BEARER "Authorization: Bearer "
#define S_WHY_MAX 420

typedef struct {
    sl_auth_t base;
    sl_aztoken_t *token;
    sl_auth_notify_fn *notify;
    void *notify_arg;
    bool waiting;                       //  a wait is registered with the token source
    uint64_t wait_id;
    const char *failing;                //  while notify runs after a failed fetch: why
} s_azauth_t;

//  The fetch a wait was for ended.
static void
s_ready (void *arg, const char *error)
{
    s_azauth_t *self = arg;
    self->waiting = false;
    char why [S_WHY_MAX];
    if (error) {
        //  The waiting calls ask again inside notify and are refused with
        //  the reason; later ones start a fetch afresh.
        snprintf (why, sizeof why, "%s", error);
        self->failing = why;
    }
    if (self->notify)
        self->notify (self->notify_arg);
    self->failing = NULL;
}

static int
s_authorize (sl_auth_t *base, const sl_auth_request_t *req, sl_buf_t *lines, size_t *count, sl_buf_t *why)
{
    (void) req;
    s_azauth_t *self = (s_azauth_t *) base;
    if (self->failing) {
        sl_buf_printf (why, "Entra ID access token: %s", self->failing);
        return SL_AUTH_FAILED;
    }
    const char *token = NULL;
    if (self->waiting) {
        //  One wait stands for every call waiting: no new one, but the
        //  token may have come before the wait is told.
        if (!sl_refresher_valid (sl_aztoken_refresher (self->token)))
            return SL_AUTH_PENDING;
        sl_aztoken_get (self->token, &token, s_ready, self, &self->wait_id);
    }
    else
    if (sl_aztoken_get (self->token, &token, s_ready, self, &self->wait_id) == 1) {
        self->waiting = true;
        return SL_AUTH_PENDING;
    }
    size_t mark = lines->len;
    sl_buf_puts (lines, S_BEARER);
    sl_buf_puts (lines, token ? token : "");
    if (!token || !*token || !sl_auth_line_ok (sl_str_n (lines->data + mark, lines->len - mark))) {
        //  A token with a line break would add headers of its own.
        memset (lines->data + mark, 0, lines->len - mark);
        lines->len = mark;
        sl_buf_puts (why, "the Entra ID access token is not fit for a header");
        return SL_AUTH_FAILED;
    }
    sl_buf_putc (lines, 0);
    (*count)++;
    return SL_AUTH_READY;
}

static void
s_destroy (sl_auth_t *base)
{
    s_azauth_t *self = (s_azauth_t *) base;
    if (self->waiting)
        sl_aztoken_cancel (self->token, self->wait_id);
    sl_aztoken_destroy (&self->token);
    free (self);
}

static const sl_auth_vt_t s_vt = { s_authorize, s_destroy };

sl_auth_t *
sl_azauth_new (zloop_t *loop, sl_curlm_t *curlm, const sl_aztoken_config_t *config,
                const sl_refresher_timing_t *timing, sl_auth_notify_fn *notify, void *notify_arg,
                char *why, size_t why_size)
{
    sl_aztoken_t *token = sl_aztoken_new (loop, curlm, config, timing, why, why_size);
    if (!token)
        return NULL;
    s_azauth_t *self = sl_xcalloc (1, sizeof *self);
    self->base.vt = &s_vt;
    self->token = token;
    self->notify = notify;
    self->notify_arg = notify_arg;
    return &self->base;
}

sl_aztoken_t *
sl_azauth_token (sl_auth_t *base)
{
    return base ? ((s_azauth_t *) base)->token : NULL;
}
