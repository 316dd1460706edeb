/*  audit_approvals.c - the approvals webhook (see audit_approvals.h). */
#include "services/audit/recorder/audit_approvals.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/http/sl_curlm.h"
#include "services/audit/store/sl_approval.h"
#include "common/http/sl_webhook.h"

#define S_WEBHOOK_TICK_MS 200
#define S_WEBHOOK_TIMEOUT_MS 10000
#define S_WEBHOOK_BASE_MS 500           //  first wait after a failed post
#define S_WEBHOOK_MAX_MS 30000          //  longest wait
#define S_WEBHOOK_CONCURRENCY 4

//  A post in flight.
typedef struct {
    audit_approvals_t *owner;
    sl_webhook_event_t *event;
    struct curl_slist *headers;         //  with this attempt's signature
    CURL *easy;
} s_post_t;

struct _audit_approvals_t {
    sl_service_t *svc;
    char *url;                          //  the hook, NULL: none
    char *secret;
    sl_webhook_t *webhook;
    sl_curlm_t *curlm;
    zlistx_t *posts;                    //  s_post_t in flight
    int timer;
    sl_buf_t body;
    sl_counter_t *sent, *failures, *dropped, *given_up;
};

//  --------------------------------------------------------------------------
//  The webhook

static size_t
s_ignore (char *data, size_t size, size_t count, void *arg)
{
    (void) data;
    (void) arg;
    return size * count;
}

static void s_pump (audit_approvals_t *self);

static void
s_posted (void *arg, CURL *easy, CURLcode result)
{
    s_post_t *post = arg;
    audit_approvals_t *self = post->owner;
    long status = 0;
    curl_easy_getinfo (easy, CURLINFO_RESPONSE_CODE, &status);
    bool ok = result == CURLE_OK && status >= 200 && status < 300;
    if (!ok)
        sl_log_warn ("approvals_webhook_failed", "attempt %d: %s (status %ld)", sl_webhook_attempt (post->event),
                     curl_easy_strerror (result), status);
    if (!sl_webhook_done (self->webhook, post->event, ok, 0, zclock_time ()) && !ok)
        sl_log_error ("approvals_webhook_given_up", "an approval event is dropped after its last attempt");
    void *item = zlistx_find (self->posts, post);
    if (item)
        zlistx_delete (self->posts, item);
    curl_slist_free_all (post->headers);
    curl_easy_cleanup (easy);
    free (post);
    s_pump (self);
}

static void
s_pump (audit_approvals_t *self)
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
        post->headers = curl_slist_append (post->headers, "User-Agent: sluice-audit");
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
        curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, (long) S_WEBHOOK_TIMEOUT_MS);
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
audit_approvals_committed (audit_approvals_t *self, const sl_msg_t *msg)
{
    if (!self->webhook)
        return;
    sl_approval_t a;
    sl_approval_from_msg (msg, &a);
    sl_buf_reset (&self->body);
    sl_buf_puts (&self->body, "{\"type\":\"approval\",\"state\":");
    sl_json_put_sl (&self->body, a.state);
    sl_buf_puts (&self->body, ",\"approval\":");
    sl_approval_json (&a, &self->body);
    sl_buf_putc (&self->body, '}');
    if (sl_webhook_push (self->webhook, sl_buf_str (&self->body), zclock_time ()))
        sl_log_warn ("approvals_webhook_full", "an approval event is dropped: the queue is full");
    s_pump (self);
}

//  --------------------------------------------------------------------------

audit_approvals_t *
audit_approvals_new (sl_service_t *svc, const audit_approvals_config_t *config)
{
    bool hook = config->webhook_url && *config->webhook_url;
    if (hook && (!config->webhook_secret || !*config->webhook_secret)) {
        sl_log_error ("bad_option", "--approvals-webhook needs SLUICE_APPROVALS_WEBHOOK_SECRET: its posts are signed");
        return NULL;
    }
    audit_approvals_t *self = sl_xcalloc (1, sizeof *self);
    self->svc = svc;
    self->posts = zlistx_new ();
    zloop_t *loop = sl_service_loop (svc);
    sl_metrics_t *m = sl_service_metrics (svc);
    if (hook) {
        sl_webhook_opts_t opts = { config->webhook_queue, config->webhook_attempts, S_WEBHOOK_BASE_MS,
                                   S_WEBHOOK_MAX_MS, S_WEBHOOK_CONCURRENCY };
        self->webhook = sl_webhook_new (&opts);
        self->curlm = sl_curlm_new (loop);
        self->url = sl_xstrdup (config->webhook_url);
        self->secret = sl_xstrdup (config->webhook_secret);
        self->timer = zloop_timer (loop, S_WEBHOOK_TICK_MS, 0, s_on_tick, self);
        self->sent = sl_metrics_counter (m, "sluice_audit_approvals_webhook_sent_total", NULL,
                                         "Approval events the approvals webhook took");
        self->failures = sl_metrics_counter (m, "sluice_audit_approvals_webhook_failures_total", NULL,
                                             "Approvals webhook posts that failed (tried again)");
        self->dropped = sl_metrics_counter (m, "sluice_audit_approvals_webhook_dropped_total", NULL,
                                            "Approval events dropped: the queue was full");
        self->given_up = sl_metrics_counter (m, "sluice_audit_approvals_webhook_given_up_total", NULL,
                                             "Approval events dropped after their last attempt");
        sl_log_info ("approvals_webhook", "signed posts (X-Sluice-Signature) for every approval's changes");
    }
    return self;
}

void
audit_approvals_destroy (audit_approvals_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    audit_approvals_t *self = *self_p;
    if (self->webhook && sl_webhook_queued (self->webhook))
        sl_log_warn ("approvals_webhook_unsent", "%zu approval events are lost with this process",
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
