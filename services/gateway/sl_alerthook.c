/*  sl_alerthook.c - the limits' alerts webhook (see sl_alerthook.h). */
#include "services/gateway/sl_alerthook.h"

#include <curl/curl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/http/sl_curlm.h"
#include "common/http/sl_webhook.h"

#define S_TICK_MS 200
#define S_TIMEOUT_MS 10000
#define S_BASE_MS 500                   //  first wait after a failed post
#define S_MAX_MS 30000                  //  longest wait
#define S_CONCURRENCY 4
#define S_SERVED_PATH "/api/keys/served"  //  the audit's served keys (sl_console_keys.h)

//  A post in flight.
typedef struct {
    sl_alerthook_t *owner;
    sl_webhook_event_t *event;
    struct curl_slist *headers;         //  with this attempt's signature
    CURL *easy;
} s_post_t;

struct _sl_alerthook_t {
    sl_service_t *svc;
    char *url, *secret, *bearer;
    char name [16];                     //  "webhook" or "audit"
    bool conflict_is_done;
    sl_webhook_t *webhook;
    sl_curlm_t *curlm;
    zlistx_t *posts;                    //  s_post_t in flight
    int timer;
    sl_buf_t body;
    sl_counter_t *sent, *failures, *dropped, *given_up;
};

static void
s_put_field (sl_buf_t *out, const char *name, const char *value)
{
    sl_buf_puts (out, ",\"");
    sl_buf_puts (out, name);
    sl_buf_puts (out, "\":");
    if (value && *value)
        sl_json_put_str (out, value, strlen (value));
    else
        sl_buf_puts (out, "null");
}

void
sl_alerthook_body (const sl_limits_plan_t *plan, const sl_limits_alert_t *alert, sl_buf_t *out)
{
    const sl_limits_counter_t *c = &plan->counters [alert->counter];
    sl_limits_windows_t w;
    sl_limits_windows (plan->now, &w);
    bool daily = c->kind == SL_LIMIT_TOKENS_PER_DAY;
    bool usd = c->kind == SL_LIMIT_BUDGET_USD;
    char text [64];
    char window [24], id [SL_LIMITS_ALERT_ID_HEX + 1];
    snprintf (window, sizeof window, "%lld", (long long) (daily ? w.day : w.month));
    sl_limits_alert_id (plan->subjects [c->subject].name, sl_limits_kind_name (c->kind), alert->at, window, id);
    sl_buf_puts (out, "{\"type\":\"limits_alert\"");
    s_put_field (out, "id", id);
    sl_buf_printf (out, ",\"at\":%lld", (long long) plan->now * 1000);
    s_put_field (out, "team", plan->team);
    s_put_field (out, "key", plan->key_id);
    s_put_field (out, "user", plan->user);
    s_put_field (out, "subject", plan->subjects [c->subject].name);
    s_put_field (out, "limit", sl_limits_kind_name (c->kind));
    snprintf (text, sizeof text, ",\"threshold\":%d", alert->at);
    sl_buf_puts (out, text);
    if (usd)
        snprintf (text, sizeof text, ",\"used\":%.6f,\"max\":%.6f", (double) alert->used / SL_LIMITS_USD_MICRO,
                  (double) alert->limit / SL_LIMITS_USD_MICRO);
    else
        snprintf (text, sizeof text, ",\"used\":%lld,\"max\":%lld", (long long) alert->used,
                  (long long) alert->limit);
    sl_buf_puts (out, text);
    s_put_field (out, "period", daily ? "day" : "month");
    s_put_field (out, "window", window);
    sl_buf_putc (out, '}');
}

//  --------------------------------------------------------------------------
//  The webhook

static size_t
s_ignore (char *data, size_t size, size_t count, void *arg)
{
    (void) data;
    (void) arg;
    return size * count;
}

static void s_pump (sl_alerthook_t *self);

static void
s_posted (void *arg, CURL *easy, CURLcode result)
{
    s_post_t *post = arg;
    sl_alerthook_t *self = post->owner;
    long status = 0;
    curl_easy_getinfo (easy, CURLINFO_RESPONSE_CODE, &status);
    bool ok = result == CURLE_OK && ((status >= 200 && status < 300) || (self->conflict_is_done && status == 409));
    char event [48];
    if (!ok) {
        snprintf (event, sizeof event, "alerts_%s_failed", self->name);
        sl_log_warn (event, "attempt %d: %s (status %ld)", sl_webhook_attempt (post->event),
                     curl_easy_strerror (result), status);
    }
    if (!sl_webhook_done (self->webhook, post->event, ok, 0, zclock_time ()) && !ok) {
        snprintf (event, sizeof event, "alerts_%s_given_up", self->name);
        sl_log_error (event, "a limits alert is dropped after its last attempt: %.*s",
                      (int) sl_webhook_body (post->event).len, sl_webhook_body (post->event).ptr);
    }
    void *item = zlistx_find (self->posts, post);
    if (item)
        zlistx_delete (self->posts, item);
    curl_slist_free_all (post->headers);
    curl_easy_cleanup (easy);
    free (post);
    s_pump (self);
}

static void
s_pump (sl_alerthook_t *self)
{
    sl_webhook_event_t *event;
    while ((event = sl_webhook_next (self->webhook, zclock_time ()))) {
        sl_str_t body = sl_webhook_body (event);
        int64_t now_s = zclock_time () / 1000;
        char signature [SL_WEBHOOK_SIGNATURE_HEX], line [SL_ALERTHOOK_URL_MAX];
        s_post_t *post = sl_xcalloc (1, sizeof *post);
        post->owner = self;
        post->event = event;
        post->headers = curl_slist_append (NULL, "Content-Type: application/json");
        post->headers = curl_slist_append (post->headers, "User-Agent: sluice-gateway");
        if (self->bearer) {
            snprintf (line, sizeof line, "Authorization: Bearer %s", self->bearer);
            post->headers = curl_slist_append (post->headers, line);
            sodium_memzero (line, sizeof line);
        }
        else {
            sl_webhook_sign (self->secret, now_s, body, signature);
            snprintf (line, sizeof line, "X-Sluice-Timestamp: %lld", (long long) now_s);
            post->headers = curl_slist_append (post->headers, line);
            snprintf (line, sizeof line, "X-Sluice-Signature: sha256=%s", signature);
            post->headers = curl_slist_append (post->headers, line);
        }
        CURL *easy = curl_easy_init ();
        curl_easy_setopt (easy, CURLOPT_URL, self->url);
        curl_easy_setopt (easy, CURLOPT_POST, 1L);
        curl_easy_setopt (easy, CURLOPT_POSTFIELDS, body.ptr);
        curl_easy_setopt (easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) body.len);
        curl_easy_setopt (easy, CURLOPT_HTTPHEADER, post->headers);
        curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, (long) S_TIMEOUT_MS);
        curl_easy_setopt (easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_ignore);
        post->easy = easy;
        if (sl_curlm_add (self->curlm, easy, s_posted, post)) {
            sl_webhook_done (self->webhook, event, false, 0, zclock_time ());
            curl_slist_free_all (post->headers);
            curl_easy_cleanup (easy);
            free (post);
            break;
        }
        zlistx_add_end (self->posts, post);
    }
    const sl_webhook_stats_t *st = sl_webhook_stats (self->webhook);
    self->sent->value = st->sent;
    self->failures->value = st->failures;
    self->dropped->value = st->dropped;
    self->given_up->value = st->given_up;
}

static int
s_on_tick (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_pump (arg);
    return 0;
}

void
sl_alerthook_post (sl_alerthook_t *self, const sl_limits_plan_t *plan, const sl_limits_alert_t *alert)
{
    if (!self)
        return;
    sl_buf_reset (&self->body);
    sl_alerthook_body (plan, alert, &self->body);
    if (sl_webhook_push (self->webhook, sl_buf_str (&self->body), zclock_time ())) {
        char event [48];
        snprintf (event, sizeof event, "alerts_%s_full", self->name);
        sl_log_error (event, "a limits alert is dropped: the queue is full: %s", sl_buf_cstr (&self->body));
    }
    s_pump (self);
}

//  --------------------------------------------------------------------------

sl_alerthook_t *
sl_alerthook_new (sl_service_t *svc, const sl_alerthook_config_t *config, bool *failed)
{
    *failed = false;
    if (!config->url || !*config->url)
        return NULL;
    bool bearer = config->bearer && *config->bearer;
    if (!bearer && (!config->secret || !*config->secret)) {
        sl_log_error ("bad_option", "--alerts-webhook needs SLUICE_APPROVALS_WEBHOOK_SECRET: its posts are signed");
        *failed = true;
        return NULL;
    }
    sl_alerthook_t *self = sl_xcalloc (1, sizeof *self);
    self->svc = svc;
    self->posts = zlistx_new ();
    sl_metrics_t *m = sl_service_metrics (svc);
    snprintf (self->name, sizeof self->name, "%s", config->name ? config->name : "webhook");
    int attempts = config->attempts > 0 ? config->attempts : SL_ALERTHOOK_ATTEMPTS;
    sl_webhook_opts_t opts = { SL_ALERTHOOK_QUEUE, attempts, S_BASE_MS, S_MAX_MS, S_CONCURRENCY };
    self->webhook = sl_webhook_new (&opts);
    self->curlm = sl_curlm_new (sl_service_loop (svc));
    self->url = sl_xstrdup (config->url);
    self->secret = bearer ? NULL : sl_xstrdup (config->secret);
    self->bearer = bearer ? sl_xstrdup (config->bearer) : NULL;
    self->conflict_is_done = config->conflict_is_done;
    self->timer = zloop_timer (sl_service_loop (svc), S_TICK_MS, 0, s_on_tick, self);
    char name [64], help [128];
    snprintf (name, sizeof name, "sluice_alerts_%s_sent_total", self->name);
    snprintf (help, sizeof help, "Limits alerts the %s took", self->name);
    self->sent = sl_metrics_counter (m, name, NULL, help);
    snprintf (name, sizeof name, "sluice_alerts_%s_failures_total", self->name);
    snprintf (help, sizeof help, "Limits alerts posts to the %s that failed (tried again)", self->name);
    self->failures = sl_metrics_counter (m, name, NULL, help);
    snprintf (name, sizeof name, "sluice_alerts_%s_dropped_total", self->name);
    snprintf (help, sizeof help, "Limits alerts for the %s dropped: the queue was full", self->name);
    self->dropped = sl_metrics_counter (m, name, NULL, help);
    snprintf (name, sizeof name, "sluice_alerts_%s_given_up_total", self->name);
    snprintf (help, sizeof help, "Limits alerts for the %s dropped after their last attempt", self->name);
    self->given_up = sl_metrics_counter (m, name, NULL, help);
    snprintf (name, sizeof name, "alerts_%s", self->name);
    sl_log_info (name, bearer ? "every limits alert posted to %s (Bearer), kept while it does not answer"
                              : "signed posts (X-Sluice-Signature) for every limits alert to %s", self->url);
    return self;
}

void
sl_alerthook_destroy (sl_alerthook_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_alerthook_t *self = *self_p;
    if (sl_webhook_queued (self->webhook)) {
        char event [48];
        snprintf (event, sizeof event, "alerts_%s_unsent", self->name);
        sl_log_warn (event, "%zu limits alerts are lost with this process", sl_webhook_queued (self->webhook));
    }
    //  The client lets go of the transfers in flight; their posts are ours.
    sl_curlm_destroy (&self->curlm);
    for (s_post_t *post = zlistx_first (self->posts); post; post = zlistx_next (self->posts)) {
        curl_easy_cleanup (post->easy);
        curl_slist_free_all (post->headers);
        free (post);
    }
    zlistx_destroy (&self->posts);
    sl_webhook_destroy (&self->webhook);
    if (self->timer > 0)
        zloop_timer_end (sl_service_loop (self->svc), self->timer);
    free (self->url);
    free (self->secret);
    if (self->bearer)
        sodium_memzero (self->bearer, strlen (self->bearer));
    free (self->bearer);
    sl_buf_free (&self->body);
    free (self);
    *self_p = NULL;
}

int
sl_alerthook_audit_url (const char *keys_url, char out [SL_ALERTHOOK_URL_MAX])
{
    out [0] = 0;
    if (!keys_url)
        return -1;
    size_t scheme = strncmp (keys_url, "http://", 7) == 0 ? 7 : strncmp (keys_url, "https://", 8) == 0 ? 8 : 0;
    if (!scheme)
        return -1;
    //  The origin: up to the path, the query or the fragment.
    size_t origin = scheme + strcspn (keys_url + scheme, "/?#");
    //  An audit behind a path (a proxy's /audit/api/keys/served) keeps it.
    size_t n = strcspn (keys_url, "?#");
    size_t served = strlen (S_SERVED_PATH);
    if (n >= origin + served && strncmp (keys_url + n - served, S_SERVED_PATH, served) == 0)
        origin = n - served;
    if (origin == scheme || origin + sizeof "/api/alerts" > SL_ALERTHOOK_URL_MAX)
        return -1;
    snprintf (out, SL_ALERTHOOK_URL_MAX, "%.*s/api/alerts", (int) origin, keys_url);
    return 0;
}
