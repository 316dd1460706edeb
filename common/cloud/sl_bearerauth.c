/*  sl_bearerauth.c - an access token source as a credential source (see
    sl_bearerauth.h). */
#include "common/cloud/sl_bearerauth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

#define S_BEARER "Authorization: Bearer "
#define S_WHY_MAX 420

typedef struct {
    sl_auth_t base;
    void *source;
    const sl_bearer_source_t *ops;
    sl_auth_notify_fn *notify;
    void *notify_arg;
    bool waiting;                       //  a wait is registered with the token source
    uint64_t wait_id;
    const char *failing;                //  while notify runs after a failed fetch: why
} s_bearerauth_t;

//  The fetch a wait was for ended.
static void
s_ready (void *arg, const char *error)
{
    s_bearerauth_t *self = arg;
    self->waiting = false;
    char why [S_WHY_MAX];
    if (error) {
        //  The waiting calls ask again inside notify and are refused with
        //  the reason; later ones start a fetch afresh.
        if (self->ops->explain)
            self->ops->explain (self->source, error, why, sizeof why);
        else
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
    s_bearerauth_t *self = (s_bearerauth_t *) base;
    if (self->failing) {
        sl_buf_printf (why, "%s: %s", self->ops->what, self->failing);
        return SL_AUTH_FAILED;
    }
    const char *token = NULL;
    if (self->waiting) {
        //  One wait stands for every call waiting: no new one, but the
        //  token may have come before the wait is told.
        if (!sl_refresher_valid (self->ops->refresher (self->source)))
            return SL_AUTH_PENDING;
        self->ops->get (self->source, &token, s_ready, self, &self->wait_id);
    }
    else
    if (self->ops->get (self->source, &token, s_ready, self, &self->wait_id) == 1) {
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
        sl_buf_printf (why, "the %s is not fit for a header", self->ops->what);
        return SL_AUTH_FAILED;
    }
    sl_buf_putc (lines, 0);
    (*count)++;
    return SL_AUTH_READY;
}

static void
s_destroy (sl_auth_t *base)
{
    s_bearerauth_t *self = (s_bearerauth_t *) base;
    if (self->waiting)
        self->ops->cancel (self->source, self->wait_id);
    self->ops->destroy (self->source);
    free (self);
}

static const sl_auth_vt_t s_vt = { s_authorize, s_destroy };

sl_auth_t *
sl_bearerauth_new (void *source, const sl_bearer_source_t *ops, sl_auth_notify_fn *notify, void *notify_arg)
{
    s_bearerauth_t *self = sl_xcalloc (1, sizeof *self);
    self->base.vt = &s_vt;
    self->source = source;
    self->ops = ops;
    self->notify = notify;
    self->notify_arg = notify_arg;
    return &self->base;
}

void *
sl_bearerauth_source (sl_auth_t *base)
{
    return base ? ((s_bearerauth_t *) base)->source : NULL;
}
