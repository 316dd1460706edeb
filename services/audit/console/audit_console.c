/*  audit_console.c - sluice-audit's console on its reactor (see audit_console.h). */
#include "services/audit/console/audit_console.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"
#include "common/http/sl_curlm.h"
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
#define S_ANSWER_MAX (1u << 20)         //  bytes of a provider's answer

//  A request to the OpenID provider under way.
typedef struct _s_fetch_t {
    struct _s_fetch_t *next;
    audit_console_t *owner;
    CURL *easy;
    sl_buf_t body;
    sl_oidc_answer_fn *answer;
    void *ctx;
} s_fetch_t;

//  A browser waiting for its sign-in (/login, /login/callback).
typedef struct _s_signin_t {
    struct _s_signin_t *next;
    audit_console_t *owner;
    sl_http_req_t *req;
    sl_console_wait_t *wait;
    int timer;
} s_signin_t;

struct _audit_console_t {
    sl_service_t *svc;
    sl_console_t *console;              //  the requests' answers
    sl_live_t *live;                    //  streams in flight
    sl_httpd_t *httpd;
    audit_decisions_t *decisions;       //  decisions to the judges
    sl_keywatch_t *file_keys;           //  the gateways' keys file, NULL: none
    sl_oidc_t *oidc;                    //  sign-in with a provider, or NULL
    sl_curlm_t *curlm;                  //  its requests to the provider, on the reactor
    s_fetch_t *fetches;                 //  those under way
    s_signin_t *signins;                //  browsers waiting for them
    int signin_wait_ms;
    sl_http_req_t *sse [S_MAX_SSE];     //  the pages watching live
    bool sse_viewer [S_MAX_SSE];        //  ... each a viewer's (sent redacted) or not
    size_t sse_count;
    sl_buf_t events;                    //  scratch: the SSE text of a batch
    sl_buf_t redacted;                  //  scratch: the same for the viewers
    int keepalive_timer, tick_timer;
};

//  --------------------------------------------------------------------------
//  Live pages

static void
s_sse_remove (audit_console_t *self, size_t i)
{
    self->sse_count--;
    self->sse [i] = self->sse [self->sse_count];
    self->sse_viewer [i] = self->sse_viewer [self->sse_count];
}

//  text to every page watching; a viewer's redacted (sl_live_redact), the
//  redaction made once, when a viewer watches.
static void
s_broadcast (audit_console_t *self, sl_str_t text)
{
    if (!text.len)
        return;
    bool redacted = false;
    for (size_t i = 0; i < self->sse_count;) {
        sl_str_t send = text;
        if (self->sse_viewer [i]) {
            if (!redacted) {
                sl_buf_reset (&self->redacted);
                sl_live_redact (text, &self->redacted);
                redacted = true;
            }
            send = sl_buf_str (&self->redacted);
        }
        if (send.len && sl_http_stream_write (self->sse [i], send.ptr, send.len)) {
            //  Gone, or too slow to keep up: it is closed, and
            //  on_closed takes it off the list.
            sl_http_stream_abort (self->sse [i]);
            s_sse_remove (self, i);
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

//  The headers of every console answer.
static void
s_add_headers (sl_http_req_t *req, sl_console_resp_t *resp)
{
    if (resp->cookie [0])
        sl_http_add_header (req, "Set-Cookie", resp->cookie);
    if (resp->location.len)
        sl_http_add_header (req, "Location", sl_buf_cstr (&resp->location));
    if (resp->cache)
        sl_http_add_header (req, "Cache-Control", resp->cache);
    sl_http_add_header (req, "X-Content-Type-Options", "nosniff");
    sl_http_add_header (req, "Content-Security-Policy",
                        "default-src 'self'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
                        "connect-src 'self'; frame-ancestors 'none'");
}

//  --------------------------------------------------------------------------
//  Sign-ins: the provider asked on the reactor (sl_curlm), the browser
//  answered when it has answered, or refused after signin_wait_ms

static size_t
s_fetch_write (char *data, size_t size, size_t nmemb, void *arg)
{
    sl_buf_t *out = arg;
    if (out->len + size * nmemb > S_ANSWER_MAX)
        return 0;                       //  too long: curl fails the transfer
    sl_buf_append (out, data, size * nmemb);
    return size * nmemb;
}

static void
s_fetch_unlink (audit_console_t *self, s_fetch_t *f)
{
    for (s_fetch_t **p = &self->fetches; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
}

//  The request ended (err: how, when no answer came): its answer to sl_oidc.
static void
s_fetch_end (s_fetch_t *f, int rc, const char *err)
{
    audit_console_t *self = f->owner;
    long code = 0;
    if (f->easy)
        curl_easy_getinfo (f->easy, CURLINFO_RESPONSE_CODE, &code);
    s_fetch_unlink (self, f);
    if (f->easy)
        curl_easy_cleanup (f->easy);
    f->answer (f->ctx, rc, (int) code, &f->body, err);
    sl_buf_free (&f->body);
    free (f);
}

static void
s_fetch_done (void *arg, CURL *easy, CURLcode result)
{
    (void) easy;
    s_fetch_t *f = arg;
    audit_console_t *self = f->owner;
    s_fetch_end (f, result == CURLE_OK ? 0 : -1, curl_easy_strerror (result));
    sl_httpd_run (self->httpd);         //  the answers it gave
}

static void
s_oidc_start (void *arg, const char *url, const char *form, const char *user, const char *password,
              sl_oidc_answer_fn *answer, void *ctx)
{
    audit_console_t *self = arg;
    s_fetch_t *f = sl_xcalloc (1, sizeof *f);
    f->owner = self;
    f->answer = answer;
    f->ctx = ctx;
    f->next = self->fetches;
    self->fetches = f;
    f->easy = curl_easy_init ();
    if (!f->easy) {
        s_fetch_end (f, -1, "cannot make an HTTP request");
        return;
    }
    curl_easy_setopt (f->easy, CURLOPT_URL, url);
    curl_easy_setopt (f->easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt (f->easy, CURLOPT_TIMEOUT_MS, (long) SL_OIDC_TIMEOUT_MS);
    curl_easy_setopt (f->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (f->easy, CURLOPT_WRITEFUNCTION, s_fetch_write);
    curl_easy_setopt (f->easy, CURLOPT_WRITEDATA, &f->body);
    if (form) {
        curl_easy_setopt (f->easy, CURLOPT_COPYPOSTFIELDS, form);
        if (user) {
            curl_easy_setopt (f->easy, CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC);
            curl_easy_setopt (f->easy, CURLOPT_USERNAME, user);
            curl_easy_setopt (f->easy, CURLOPT_PASSWORD, password ? password : "");
        }
    }
    if (sl_curlm_add (self->curlm, f->easy, s_fetch_done, f))
        s_fetch_end (f, -1, "cannot start an HTTP request");
}

static void
s_signin_free (s_signin_t *w)
{
    audit_console_t *self = w->owner;
    for (s_signin_t **p = &self->signins; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    if (w->timer >= 0)
        zloop_timer_end (sl_service_loop (self->svc), w->timer);
    free (w);
}

static void
s_signin_answered (void *arg, sl_console_resp_t *resp)
{
    s_signin_t *w = arg;
    s_add_headers (w->req, resp);
    sl_http_respond (w->req, resp->status, resp->content_type, resp->body.data, resp->body.len);
    s_signin_free (w);
}

static int
s_signin_timeout (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_signin_t *w = arg;
    audit_console_t *self = w->owner;
    w->timer = -1;                      //  a one-shot timer, ended by zloop
    sl_console_wait_drop (w->wait);
    sl_console_resp_t resp = { 0 };
    sl_console_sign_in_failed (&resp, "the provider did not answer in time: try again later");
    s_signin_answered (w, &resp);
    sl_buf_free (&resp.body);
    sl_buf_free (&resp.location);
    sl_httpd_run (self->httpd);
    return 0;
}

static void
s_signin_wait (audit_console_t *self, sl_http_req_t *req, sl_console_wait_t *wait)
{
    s_signin_t *w = sl_xcalloc (1, sizeof *w);
    w->owner = self;
    w->req = req;
    w->wait = wait;
    w->next = self->signins;
    self->signins = w;
    w->timer = zloop_timer (sl_service_loop (self->svc), (size_t) self->signin_wait_ms, 1, s_signin_timeout, w);
    sl_console_wait_on (wait, s_signin_answered, w);
}

//  req's client left: true when it was waiting for its sign-in.
static bool
s_signin_closed (audit_console_t *self, sl_http_req_t *req)
{
    for (s_signin_t *w = self->signins; w; w = w->next)
        if (w->req == req) {
            sl_console_wait_drop (w->wait);
            s_signin_free (w);
            return true;
        }
    return false;
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
    if (resp.kind == SL_CONSOLE_WAIT)
        s_signin_wait (self, req, resp.wait);
    else
    if (resp.kind == SL_CONSOLE_DECIDE) {
        s_add_headers (req, &resp);
        audit_decisions_decide (self->decisions, req, resp.approval, &resp.decision.decision, &resp.caller);
        sl_approvals_parsed_clear (&resp.decision);
    }
    else
    if (resp.kind == SL_CONSOLE_LIVE) {
        s_add_headers (req, &resp);
        if (self->sse_count == S_MAX_SSE) {
            sl_http_respond (req, 503, "text/plain", "too many live pages\n", 20);
        }
        else
        if (sl_http_stream_start (req, 200, "text/event-stream") == 0) {
            //  The snapshot first, then whatever is committed from now on.
            sl_buf_t first = { 0 }, redacted = { 0 };
            sl_buf_puts (&first, "retry: 1000\n\nevent: snapshot\ndata: ");
            sl_live_snapshot (self->live, &first);
            sl_buf_puts (&first, "\n\n");
            //  A viewer's feed is redacted here, on the server: it never
            //  carries contents for a page to hide.
            bool viewer = resp.caller.role < SL_CONSOLE_AUDITOR;
            if (viewer)
                sl_live_redact (sl_buf_str (&first), &redacted);
            sl_buf_t *send = viewer ? &redacted : &first;
            sl_http_stream_write (req, send->data, send->len);
            sl_buf_free (&first);
            sl_buf_free (&redacted);
            self->sse_viewer [self->sse_count] = viewer;
            self->sse [self->sse_count++] = req;
        }
    }
    else {
        s_add_headers (req, &resp);
        sl_http_respond (req, resp.status, resp.content_type, resp.body.data, resp.body.len);
    }
    sl_buf_free (&resp.body);
    sl_buf_free (&resp.location);
}

static void
s_on_closed (void *arg, sl_http_req_t *req, bool aborted)
{
    (void) aborted;
    audit_console_t *self = arg;
    if (audit_decisions_closed (self->decisions, req) || s_signin_closed (self, req))
        return;
    for (size_t i = 0; i < self->sse_count; i++)
        if (self->sse [i] == req) {
            s_sse_remove (self, i);
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
        self->curlm = sl_curlm_new (loop);
        sl_oidc_set_start (self->oidc, s_oidc_start, self);
        self->signin_wait_ms = config->signin_wait_ms > 0 ? config->signin_wait_ms : SL_OIDC_WAIT_MS;
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
    //  Requests to the provider still under way fail, so that the
    //  sign-ins waiting for them are answered (and freed) while the
    //  server is still there.
    while (self->fetches) {
        s_fetch_t *f = self->fetches;
        sl_curlm_remove (self->curlm, f->easy);
        s_fetch_end (f, -1, "the console is stopping");
    }
    while (self->signins) {
        sl_console_wait_drop (self->signins->wait);
        s_signin_free (self->signins);
    }
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
    sl_curlm_destroy (&self->curlm);
    sl_live_destroy (&self->live);
    sl_buf_free (&self->events);
    sl_buf_free (&self->redacted);
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
