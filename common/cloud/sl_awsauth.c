/*  sl_awsauth.c - AWS credentials as a provider's credential source (see
    sl_awsauth.h). */
#include "common/cloud/sl_awsauth.h"

#include <sodium.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_alloc.h"

#define S_HEADERS_MAX 32                //  an attempt's lines; more is refused, never cut

typedef struct {
    sl_auth_t base;
    sl_awscreds_t *creds;
    char *region;
    sl_auth_notify_fn *notify;
    void *notify_arg;
    bool waiting;                       //  a wait is registered with the refresher
    uint64_t wait_id;
    bool telling;                       //  inside notify, telling waiters the fetch failed
    char error [320];                   //  why the last fetch failed
} s_self_t;

int
sl_awsauth_url_parts (const char *url, sl_buf_t *out, size_t *host, size_t *path, size_t *query)
{
    const char *scheme_end = url ? strstr (url, "://") : NULL;
    if (!scheme_end || scheme_end == url)
        return -1;
    bool https = (size_t) (scheme_end - url) == 5 && strncasecmp (url, "https", 5) == 0;
    const char *h = scheme_end + 3;
    size_t hlen = strcspn (h, "/?#");
    if (hlen == 0)
        return -1;
    //  What curl sends as Host: the port only when it is not the scheme's.
    const char *colon = memchr (h, ':', hlen);
    size_t keep = hlen;
    if (colon) {
        sl_str_t port = { colon + 1, hlen - (size_t) (colon + 1 - h) };
        if (sl_str_eq (port, https ? "443" : "80"))
            keep = (size_t) (colon - h);
    }
    *host = out->len;
    sl_buf_append (out, h, keep);
    sl_buf_putc (out, 0);
    const char *p = h + hlen;
    size_t plen = strcspn (p, "?#");
    *path = out->len;
    if (plen)
        sl_buf_append (out, p, plen);
    else
        sl_buf_putc (out, '/');
    sl_buf_putc (out, 0);
    *query = out->len;
    if (p [plen] == '?')
        sl_buf_append (out, p + plen + 1, strcspn (p + plen + 1, "#"));
    sl_buf_putc (out, 0);
    return 0;
}

//  The refresher's news: ask again, or the fetch failed.
static void
s_ready (void *arg, const char *error)
{
    s_self_t *self = arg;
    self->waiting = false;
    if (error)
        snprintf (self->error, sizeof self->error, "%s", error);
    self->telling = error != NULL;
    if (self->notify)
        self->notify (self->notify_arg);
    self->telling = false;
}

//  Sign the attempt with use's keys, or give its bearer line.
static int
s_sign (s_self_t *self, const sl_auth_request_t *req, const sl_awscreds_use_t *use, sl_buf_t *lines, size_t *count,
        sl_buf_t *why)
{
    if (req->header_count > S_HEADERS_MAX) {
        sl_buf_puts (why, "too many headers to sign");
        return SL_AUTH_FAILED;
    }
    sl_buf_t parts = { 0 };
    size_t host, path, query;
    if (sl_awsauth_url_parts (req->url, &parts, &host, &path, &query)) {
        sl_buf_free (&parts);
        sl_buf_puts (why, "the upstream URL cannot be signed");
        return SL_AUTH_FAILED;
    }
    //  The header lines split into names and values, in one copy.
    sl_buf_t names = { 0 };
    size_t at [S_HEADERS_MAX], value_at [S_HEADERS_MAX];
    size_t n = 0;
    for (size_t i = 0; i < req->header_count; i++) {
        const char *line = req->headers [i];
        const char *colon = strchr (line, ':');
        if (!colon)
            continue;
        const char *v = colon + 1;
        while (*v == ' ' || *v == '\t')
            v++;
        at [n] = names.len;
        sl_buf_append (&names, line, (size_t) (colon - line));
        sl_buf_putc (&names, 0);
        value_at [n] = names.len;
        sl_buf_puts (&names, v);
        sl_buf_putc (&names, 0);
        n++;
    }
    sl_sigv4_header_t headers [S_HEADERS_MAX];
    for (size_t i = 0; i < n; i++)
        headers [i] = (sl_sigv4_header_t) { names.data + at [i], names.data + value_at [i] };
    const char *q = parts.data + query;
    sl_sigv4_request_t sreq = {
        .method = req->method, .host = parts.data + host, .path = parts.data + path,
        .query = *q ? q : NULL, .headers = headers, .header_count = n, .body = req->body
    };
    sl_sigv4_params_t params = { self->region, SL_AWSAUTH_SERVICE, (time_t) req->wall_s, true };
    struct curl_slist *added = NULL;
    int rc = sl_awscreds_authorize (use, &params, &sreq, &added);
    sl_buf_free (&names);
    sl_buf_free (&parts);
    if (rc) {
        curl_slist_free_all (added);
        sl_buf_puts (why, "the request cannot be signed (a header or the credentials are not fit for SigV4)");
        return SL_AUTH_FAILED;
    }
    for (struct curl_slist *l = added; l; l = l->next) {
        sl_buf_puts (lines, l->data);
        sl_buf_putc (lines, 0);
        (*count)++;
        sodium_memzero (l->data, strlen (l->data));
    }
    curl_slist_free_all (added);
    return SL_AUTH_READY;
}

static int
s_authorize (sl_auth_t *base, const sl_auth_request_t *req, sl_buf_t *lines, size_t *count, sl_buf_t *why)
{
    s_self_t *self = (s_self_t *) base;
    if (self->telling) {
        sl_buf_puts (why, self->error);
        return SL_AUTH_FAILED;
    }
    if (self->waiting)
        return SL_AUTH_PENDING;
    sl_awscreds_use_t use;
    uint64_t id = 0;
    int rc = sl_awscreds_get (self->creds, &use, s_ready, self, &id);
    if (rc) {
        self->waiting = true;
        self->wait_id = id;
        return SL_AUTH_PENDING;
    }
    return s_sign (self, req, &use, lines, count, why);
}

static void
s_destroy (sl_auth_t *base)
{
    s_self_t *self = (s_self_t *) base;
    if (self->waiting)
        sl_awscreds_cancel (self->creds, self->wait_id);
    sl_awscreds_destroy (&self->creds);
    free (self->region);
    free (self);
}

static const sl_auth_vt_t s_vt = { s_authorize, s_destroy };

sl_auth_t *
sl_awsauth_new (zloop_t *loop, sl_curlm_t *curlm, const sl_awscreds_config_t *config,
                const char *region, const sl_refresher_timing_t *timing,
                sl_auth_notify_fn *notify, void *notify_arg)
{
    s_self_t *self = sl_xcalloc (1, sizeof *self);
    self->base.vt = &s_vt;
    self->region = sl_xstrdup (region ? region : "");
    self->notify = notify;
    self->notify_arg = notify_arg;
    self->creds = sl_awscreds_new (loop, curlm, config, timing);
    return &self->base;
}

sl_awscreds_t *
sl_awsauth_creds (sl_auth_t *base)
{
    return ((s_self_t *) base)->creds;
}
