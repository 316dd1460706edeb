/*  audit_console.c - sluice-audit's console on its reactor (see audit_console.h). */
#include "services/audit/console/audit_console.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"
#include "common/http/sl_httpd.h"
#include "common/service/sl_keywatch.h"
#include "services/audit/console/audit_decisions.h"
#include "services/audit/console/sl_live.h"

#define S_SSE_KEEPALIVE_MS 15000
#define S_MAX_SSE 256                   //  live pages at once
#define S_SSE_CAP (4u << 20)            //  bytes buffered for one slow page
#define S_MAX_BODY (10u << 20)          //  a console request (a capture to try)
#define S_LIVE_TICK_MS 60000            //  idle streams leave the live view this often
#define S_KEYS_WATCH_MS 1000            //  the keys file is looked at this often (the gateways' default)

struct _audit_console_t {
    sl_service_t *svc;
    sl_console_t *console;              //  the requests' answers
    sl_live_t *live;                    //  streams in flight
    sl_httpd_t *httpd;
    audit_decisions_t *decisions;       //  decisions to the judges
    sl_keywatch_t *file_keys;           //  the gateways' keys file, NULL: none
    sl_oidc_t *oidc;                    //  sign-in with a provider, or NULL
    sl_http_req_t *sse [S_MAX_SSE];     //  the pages watching live
    size_t sse_count;
    sl_buf_t events;                    //  scratch: the SSE text of a batch
    int keepalive_timer, tick_timer;
};

//  --------------------------------------------------------------------------
//  Live pages

static void
s_broadcast (audit_console_t *self, sl_str_t text)
{
    if (!text.len)
        return;
    for (size_t i = 0; i < self->sse_count;) {
        if (sl_http_stream_write (self->sse [i], text.ptr, text.len)) {
            //  Gone, or too slow to keep up: it is closed, and
            //  on_closed takes it off the list.
            sl_http_stream_abort (self->sse [i]);
            self->sse [i] = self->sse [--self->sse_count];
            continue;
        }
        i++;
    }
    sl_httpd_run (self->httpd);
}

void
audit_console_committed (audit_console_t *self, const sl_record_t *records, size_t count)
{
    sl_buf_reset (&self->events);
    for (size_t i = 0; i < count; i++)
        sl_live_feed (self->live, &records [i].meta, records [i].msg, &self->events);
    s_broadcast (self, sl_buf_str (&self->events));
}

static int
s_on_sse_keepalive (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_broadcast (arg, SL_STR_LIT (": keep-alive\n\n"));
    return 0;
}

static int
s_on_live_tick (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    audit_console_t *self = arg;
    sl_live_tick (self->live, zclock_time ());
    return 0;
}

//  --------------------------------------------------------------------------
//  Requests

static const char *
s_req_query (void *arg, const char *name)
{
    return sl_http_req_query (arg, name);
}

static const char *
s_req_header (void *arg, const char *name)
{
    return sl_http_req_header (arg, name);
}

static void
s_on_request (void *arg, sl_http_req_t *req)
{
    audit_console_t *self = arg;
    sl_console_req_t creq = {
        .method = sl_http_req_method (req),
        .path = sl_http_req_path (req),
        .query = s_req_query,
        .header = s_req_header,
        .arg = req,
        .body = sl_http_req_body (req),
        .loopback = sl_http_req_loopback (req)
    };
    sl_console_resp_t resp = { 0 };
    if (sl_http_req_too_large (req) || sl_http_req_bad_framing (req)) {
        sl_http_respond (req, sl_http_req_too_large (req) ? 413 : 400, "text/plain", "refused\n", 8);
        return;
    }
    //  Probes of the console's port (an orchestrator's readiness is the
    //  console's): as on the metrics port, no more than up, and taking
    //  records or draining.
    if (strcmp (creq.method, "GET") == 0 && sl_service_answer_probe (self->svc, req, creq.path))
        return;
    sl_console_handle (self->console, &creq, &resp);
    if (resp.cookie [0])
        sl_http_add_header (req, "Set-Cookie", resp.cookie);
    if (resp.location.len)
        sl_http_add_header (req, "Location", sl_buf_cstr (&resp.location));
    if (resp.cache)
        sl_http_add_header (req, "Cache-Control", resp.cache);
    sl_http_add_header (req, "X-Content-Type-Options", "nosniff");
    sl_http_add_header (req, "Content-Security-Policy",
                        "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
                        "connect-src 'self'; frame-ancestors 'none'");
    if (resp.kind == SL_CONSOLE_DECIDE) {
        audit_decisions_decide (self->decisions, req, resp.approval, &resp.decision.decision, &resp.caller);
        sl_approvals_parsed_clear (&resp.decision);
    }
    else
    if (resp.kind == SL_CONSOLE_LIVE) {
        if (self->sse_count == S_MAX_SSE) {
            sl_http_respond (req, 503, "text/plain", "too many live pages\n", 20);
        }
        else
        if (sl_http_stream_start (req, 200, "text/event-stream") == 0) {
            //  The snapshot first, then whatever is committed from now on.
            sl_buf_t first = { 0 };
            sl_buf_puts (&first, "retry: 1000\n\nevent: snapshot\ndata: ");
            sl_live_snapshot (self->live, &first);
            sl_buf_puts (&first, "\n\n");
            sl_http_stream_write (req, first.data, first.len);
            sl_buf_free (&first);
            self->sse [self->sse_count++] = req;
        }
    }
    else
        sl_http_respond (req, resp.status, resp.content_type, resp.body.data, resp.body.len);
    sl_buf_free (&resp.body);
    sl_buf_free (&resp.location);
}

static void
s_on_closed (void *arg, sl_http_req_t *req, bool aborted)
{
    (void) aborted;
    audit_console_t *self = arg;
    if (audit_decisions_closed (self->decisions, req))
        return;
    for (size_t i = 0; i < self->sse_count; i++)
        if (self->sse [i] == req) {
            self->sse [i] = self->sse [--self->sse_count];
            break;
        }
}

static void
s_on_file_keys (void *arg, sl_keyring_t *keyring, bool loaded)
{
    (void) loaded;
    audit_console_t *self = arg;
    sl_console_set_file_keys (self->console, keyring);
}

static int64_t
s_clock (void *arg)
{
    (void) arg;
    return zclock_time ();
}

//  --------------------------------------------------------------------------
//  Metrics

static double
s_gauge_live (void *arg)
{
    return (double) audit_console_live_streams (arg);
}

static double
s_gauge_pages (void *arg)
{
    return (double) ((audit_console_t *) arg)->sse_count;
}

//  --------------------------------------------------------------------------
//  Life cycle

audit_console_t *
audit_console_new (sl_service_t *svc, sl_store_t *store, const audit_console_config_t *config)
{
    audit_console_t *self = sl_xcalloc (1, sizeof *self);
    self->svc = svc;
    self->keepalive_timer = self->tick_timer = -1;
    self->live = sl_live_new ();
    self->decisions = audit_decisions_new (svc, config->judges);
    if (!self->decisions) {
        audit_console_destroy (&self);
        return NULL;
    }
    self->console = sl_console_new (store, config->keys);
    sl_console_set_clock (self->console, s_clock, NULL);
    sl_console_set_keys_token (self->console, config->keys_token);
    if (config->keys_file && *config->keys_file) {
        self->file_keys = sl_keywatch_new (svc, config->keys_file, NULL, S_KEYS_WATCH_MS);
        if (!self->file_keys) {
            audit_console_destroy (&self);
            return NULL;
        }
        sl_console_set_file_keys (self->console, sl_keywatch_keyring (self->file_keys));
        sl_keywatch_on_reload (self->file_keys, s_on_file_keys, self);
    }
    zloop_t *loop = sl_service_loop (svc);
    self->httpd = sl_httpd_new (loop, config->host, config->port, S_MAX_BODY, s_on_request, s_on_closed, self);
    if (!self->httpd) {
        sl_log_error ("bind_failed", "cannot listen on %s:%d for the console", config->host, config->port);
        audit_console_destroy (&self);
        return NULL;
    }
    if (config->oidc.issuer && *config->oidc.issuer) {
        char redirect [512];
        sl_oidc_config_t oidc = config->oidc;
        if (!oidc.redirect_uri || !*oidc.redirect_uri) {
            snprintf (redirect, sizeof redirect, "http://%s:%d/login/callback", config->host,
                      sl_httpd_port (self->httpd));
            oidc.redirect_uri = redirect;
        }
        self->oidc = sl_oidc_new (&oidc);
        if (!self->oidc) {
            sl_log_error ("bad_config", "SLUICE_OIDC_ISSUER needs SLUICE_OIDC_CLIENT_ID");
            audit_console_destroy (&self);
            return NULL;
        }
        sl_console_set_oidc (self->console, self->oidc);
        sl_log_info ("console_sign_in", "issuer=%s redirect_uri=%s", oidc.issuer, oidc.redirect_uri);
    }
    sl_httpd_set_stream_cap (self->httpd, S_SSE_CAP);
    audit_decisions_set_httpd (self->decisions, self->httpd);
    sl_httpd_set_counters (self->httpd, &(sl_httpd_counters_t) {
        .bad_framing = sl_service_framing_counter (svc, "console") });
    self->keepalive_timer = zloop_timer (loop, S_SSE_KEEPALIVE_MS, 0, s_on_sse_keepalive, self);
    self->tick_timer = zloop_timer (loop, S_LIVE_TICK_MS, 0, s_on_live_tick, self);
    sl_metrics_t *m = sl_service_metrics (svc);
    sl_metrics_gauge_fn (m, "sluice_audit_live_streams", NULL, "Streams in flight in the live view",
                         s_gauge_live, self);
    sl_metrics_gauge_fn (m, "sluice_audit_console_live_pages", NULL, "Console pages watching live",
                         s_gauge_pages, self);
    sl_log_info ("console_listening", "url=http://%s:%d/ keys=%s", config->host, sl_httpd_port (self->httpd),
                 sl_console_has_keys (self->console) ? "yes" : "none (loopback clients only)");
    return self;
}

void
audit_console_destroy (audit_console_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    audit_console_t *self = *self_p;
    zloop_t *loop = sl_service_loop (self->svc);
    if (self->keepalive_timer >= 0)
        zloop_timer_end (loop, self->keepalive_timer);
    if (self->tick_timer >= 0)
        zloop_timer_end (loop, self->tick_timer);
    //  Live pages wait in suspended connections: end them first (MHD
    //  refuses to stop with a connection suspended).
    for (size_t i = 0; i < self->sse_count; i++)
        sl_http_stream_abort (self->sse [i]);
    if (self->httpd && self->sse_count)
        sl_httpd_run (self->httpd);
    sl_httpd_destroy (&self->httpd);
    audit_decisions_destroy (&self->decisions);     //  after its requests were closed
    sl_keywatch_destroy (&self->file_keys);
    sl_console_destroy (&self->console);
    sl_oidc_destroy (&self->oidc);
    sl_live_destroy (&self->live);
    sl_buf_free (&self->events);
    free (self);
    *self_p = NULL;
}

void
audit_console_on_meta (audit_console_t *self, sl_console_meta_fn *fn, void *arg)
{
    sl_console_on_meta (self->console, fn, arg);
}

void
audit_console_set_chain (audit_console_t *self, sl_chain_t *chain)
{
    sl_console_set_chain (self->console, chain);
}

void
audit_console_on_chain (audit_console_t *self, sl_console_meta_fn *fn, void *arg)
{
    sl_console_on_chain (self->console, fn, arg);
}

size_t audit_console_live_streams (audit_console_t *self) { return sl_live_streams (self->live); }
int audit_console_port (audit_console_t *self) { return sl_httpd_port (self->httpd); }
