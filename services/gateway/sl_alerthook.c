/*  sl_alerthook.c - the limits' alerts webhook (see sl_alerthook.h). */
#include "services/gateway/sl_alerthook.h"

#include <curl/curl.h>
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

//  A post in flight.
typedef struct {
    sl_alerthook_t *owner;
    sl_webhook_event_t *event;
    struct curl_slist *headers;         //  with this attempt's signature
    CURL *easy;
} s_post_t;

struct _sl_alerthook_t {
    sl_service_t *svc;
    char *url, *secret;
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
    sl_buf_puts (out, "{\"type\":\"limits_alert\"");
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
    snprintf (text, sizeof text, "%lld", (long long) (daily ? w.day : w.month));
    s_put_field (out, "window", text);
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
    bool ok = result == CURLE_OK && status >= 200 && status < 300;
    if (!ok)
        sl_log_warn ("alerts_webhook_failed", "attempt %d: %s (status %ld)", sl_webhook_attempt (post->event),
                     curl_easy_strerror (result), status);
    if (!sl_webhook_done (self->webhook, post->event, ok, 0, zclock_time ()) && !ok)
        sl_log_error ("alerts_webhook_given_up", "a limits alert is dropped after its last attempt");
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
        char signature [SL_WEBHOOK_SIGNATURE_HEX], line [128];
        sl_webhook_sign (self->secret, now_s, body, signature);
        s_post_t *post = sl_xcalloc (1, sizeof *post);
        post->owner = self;
        post->event = event;
        post->headers = curl_slist_append (NULL, "Content-Type: application/json");
        post->headers = curl_slist_append (post->headers, "User-Agent: sluice-gateway");
        snprintf (line, sizeof line, "X-Sluice-Timestamp: %lld", (long long) now_s);
        post->headers = curl_slist_append (post->headers, line);
        snprintf (line, sizeof line, "X-Sluice-Signature: sha256=%s", signature);
        post->headers = curl_slist_append (post->headers, line);
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
    if (sl_webhook_push (self->webhook, sl_buf_str (&self->body), zclock_time ()))
        sl_log_warn ("alerts_webhook_full", "a limits alert is dropped: the queue is full");
    s_pump (self);
}

//  --------------------------------------------------------------------------

sl_alerthook_t *
sl_alerthook_new (sl_service_t *svc, const sl_alerthook_config_t *config, bool *failed)
{
    *failed = false;
    if (!config->url || !*config->url)
        return NULL;
    if (!config->secret || !*config->secret) {
        sl_log_error ("bad_option", "--alerts-webhook needs SLUICE_APPROVALS_WEBHOOK_SECRET: its posts are signed");
        *failed = true;
        return NULL;
    }
    sl_alerthook_t *self = sl_xcalloc (1, sizeof *self);
    self->svc = svc;
    self->posts = zlistx_new ();
    sl_metrics_t *m = sl_service_metrics (svc);
    sl_webhook_opts_t opts = { SL_ALERTHOOK_QUEUE, SL_ALERTHOOK_ATTEMPTS, S_BASE_MS, S_MAX_MS, S_CONCURRENCY };
    self->webhook = sl_webhook_new (&opts);
    self->curlm = sl_curlm_new (sl_service_loop (svc));
    self->url = sl_xstrdup (config->url);
    self->secret = sl_xstrdup (config->secret);
    self->timer = zloop_timer (sl_service_loop (svc), S_TICK_MS, 0, s_on_tick, self);
    self->sent = sl_metrics_counter (m, "sluice_alerts_webhook_sent_total", NULL, "Limits alerts the webhook took");
    self->failures = sl_metrics_counter (m, "sluice_alerts_webhook_failures_total", NULL,
                                         "Limits alerts webhook posts that failed (tried again)");
    self->dropped = sl_metrics_counter (m, "sluice_alerts_webhook_dropped_total", NULL,
                                        "Limits alerts dropped: the queue was full");
    self->given_up = sl_metrics_counter (m, "sluice_alerts_webhook_given_up_total", NULL,
                                         "Limits alerts dropped after their last attempt");
    sl_log_info ("alerts_webhook", "signed posts (X-Sluice-Signature) for every limits alert");
    return self;
}

void
sl_alerthook_destroy (sl_alerthook_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_alerthook_t *self = *self_p;
    if (sl_webhook_queued (self->webhook))
        sl_log_warn ("alerts_webhook_unsent", "%zu limits alerts are lost with this process",
                     sl_webhook_queued (self->webhook));
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
    sl_buf_free (&self->body);
    free (self);
    *self_p = NULL;
}
