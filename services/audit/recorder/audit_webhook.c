/*  audit_webhook.c - the recorder's posts to a SIEM (see audit_webhook.h). */
#include "services/audit/recorder/audit_webhook.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/base/sl_ratelimit.h"
#include "common/http/sl_curlm.h"
#include "services/audit/store/sl_query.h"

#define S_TICK_MS 200                   //  due retries are posted this often
#define S_TIMEOUT_MS 10000              //  one post at most
#define S_BASE_MS 500                   //  first wait after a failed post
#define S_MAX_MS 30000                  //  longest wait
#define S_CONCURRENCY 4                 //  posts in flight at once
#define S_LOG_BURST 5
#define S_LOG_WINDOW_MS 10000

//  A post in flight.
typedef struct {
    audit_webhook_t *owner;
    sl_webhook_event_t *event;
    char retry_after [32];              //  the answer's Retry-After, if any
} s_post_t;

struct _audit_webhook_t {
    sl_service_t *svc;
    sl_store_t *store;
    audit_webhook_config_t config;
    char *url;                          //  NULL: off
    char *actions;
    bool streams;                       //  one post per stream (else per verdict)
    sl_webhook_t *queue;
    sl_curlm_t *curlm;
    struct curl_slist *headers;         //  the posts' headers (the token among them)
    int timer;
    sl_ratelimit_t error_log;
    sl_buf_t body;
    sl_counter_t *sent, *failures, *dropped, *given_up;
};

//  --------------------------------------------------------------------------
//  Events

static bool
s_action_wanted (audit_webhook_t *self, const char *action)
{
    const char *list = self->actions;
    if (!list || !*list || strcmp (list, "all") == 0)
        return true;
    size_t n = strlen (action);
    for (const char *p = list; *p;) {
        const char *comma = strchr (p, ',');
        size_t len = comma ? (size_t) (comma - p) : strlen (p);
        if (len == n && strncmp (p, action, n) == 0)
            return true;
        p += len + (comma ? 1 : 0);
    }
    return false;
}

static void
s_put_cstr (sl_buf_t *out, const char *key, const char *value)
{
    sl_buf_printf (out, ",\"%s\":", key);
    if (value)
        sl_json_put_str (out, value, strlen (value));
    else
        sl_buf_puts (out, "null");
}

//  What the store has of a verdict's stream: its request, as the post's
//  "model", "provider", "client" and "client_key" (null when the store
//  has no such value).
static const char *s_context_keys [] = { "model", "provider", "client", "client_key" };

typedef struct {
    sl_buf_t *out;
    bool found;
} s_context_t;

static int
s_context_row (void *arg, const sl_row_t *row)
{
    s_context_t *c = arg;
    for (int i = 0; i < 4; i++) {
        sl_str_t v = sl_row_text (row, i);
        sl_buf_printf (c->out, ",\"%s\":", s_context_keys [i]);
        if (v.ptr)
            sl_json_put_sl (c->out, v);
        else
            sl_buf_puts (c->out, "null");
    }
    c->found = true;
    return 1;
}

static void
s_post_verdict (audit_webhook_t *self, const sl_record_t *record)
{
    const sl_msg_t *v = record->msg;
    if (!s_action_wanted (self, sl_action_name (v->action)))
        return;
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (v->sid, hex);
    sl_buf_t *out = &self->body;
    sl_buf_reset (out);
    sl_buf_printf (out, "{\"type\":\"verdict\",\"sid\":\"%s\",\"at\":%lld,\"emitter\":", hex,
                   (long long) record->meta.at);
    sl_str_t emitter = record->meta.emitter;
    sl_json_put_str (out, emitter.ptr ? emitter.ptr : "", emitter.ptr ? emitter.len : 0);
    //  Its stream's start is committed before it (a stream's records come
    //  in order): its row has the request. A store that cannot say posts
    //  the verdict without it.
    s_context_t ctx = { out, false };
    sl_val_t p [] = { sl_val_text (hex) };
    if (sl_store_query (self->store, "SELECT model, provider, client_dialect, client_key FROM streams "
                                     "WHERE sid = $1", p, 1, s_context_row, &ctx) || !ctx.found)
        for (int i = 0; i < 4; i++)
            s_put_cstr (out, s_context_keys [i], NULL);
    sl_buf_printf (out, ",\"index\":%d,\"tool\":", v->index);
    sl_json_put_sl (out, v->name);
    sl_buf_puts (out, ",\"call_id\":");
    sl_json_put_sl (out, v->id);
    s_put_cstr (out, "action", sl_action_name (v->action));
    s_put_cstr (out, "check", sl_check_name (v->check));
    sl_buf_puts (out, ",\"rule\":");
    if (v->rule.ptr)
        sl_json_put_sl (out, v->rule);
    else
        sl_buf_puts (out, "null");
    sl_buf_puts (out, ",\"reason\":");
    sl_json_put_sl (out, v->reason);
    if (v->judge_model.ptr) {
        sl_buf_puts (out, ",\"judge_model\":");
        sl_json_put_sl (out, v->judge_model);
    }
    sl_buf_printf (out, ",\"latency_us\":%u,\"arguments\":", v->latency_us);
    sl_str_t args = v->text;
    if (args.len > self->config.max_text)
        args.len = self->config.max_text;
    sl_json_put_sl (out, args);
    sl_buf_putc (out, '}');
    if (sl_webhook_push (self->queue, sl_buf_str (out), zclock_time ()))
        sl_log_warn ("webhook_full", "the webhook's queue is full: a verdict event is dropped");
}

typedef struct {
    audit_webhook_t *owner;
    bool wanted;
} s_actions_t;

static int
s_action_row (void *arg, const sl_row_t *row)
{
    s_actions_t *a = arg;
    sl_str_t action = sl_row_text (row, 0);
    char name [16];
    snprintf (name, sizeof name, "%.*s", (int) action.len, action.ptr ? action.ptr : "");
    a->wanted |= s_action_wanted (a->owner, name);
    return a->wanted ? 1 : 0;
}

static void
s_post_stream (audit_webhook_t *self, const sl_record_t *record)
{
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (record->msg->sid, hex);
    const char *list = self->actions;
    if (list && *list && strcmp (list, "all") != 0) {
        s_actions_t a = { self, false };
        sl_val_t p [] = { sl_val_text (hex) };
        if (sl_store_query (self->store, "SELECT action FROM verdicts WHERE sid = $1 AND side <> 'shadow'", p, 1, s_action_row, &a) == 0
        &&  !a.wanted)
            return;
    }
    sl_buf_t *out = &self->body;
    sl_buf_reset (out);
    sl_buf_puts (out, "{\"type\":\"stream\",\"data\":");
    if (sl_query_stream (self->store, hex, out) != 0)
        return;
    sl_buf_putc (out, '}');
    if (sl_webhook_push (self->queue, sl_buf_str (out), zclock_time ()))
        sl_log_warn ("webhook_full", "the webhook's queue is full: a stream event is dropped");
}

void
audit_webhook_committed (audit_webhook_t *self, const sl_record_t *record)
{
    if (!self->url)
        return;
    if (!self->streams && record->msg->type == SL_MSG_VERDICT)
        s_post_verdict (self, record);
    else
    if (self->streams && record->msg->type == SL_MSG_END)
        s_post_stream (self, record);
}

//  --------------------------------------------------------------------------
//  Posts

static size_t
s_post_header (char *data, size_t size, size_t count, void *arg)
{
    s_post_t *post = arg;
    size_t n = size * count;
    if (n > 12 && strncasecmp (data, "Retry-After:", 12) == 0) {
        size_t len = n - 12 < sizeof post->retry_after - 1 ? n - 12 : sizeof post->retry_after - 1;
        memcpy (post->retry_after, data + 12, len);
        post->retry_after [len] = 0;
    }
    return n;
}

static size_t
s_post_body (char *data, size_t size, size_t count, void *arg)
{
    (void) data;
    (void) arg;
    return size * count;                //  the answer's body is not needed
}

static void
s_post_done (void *arg, CURL *easy, CURLcode result)
{
    s_post_t *post = arg;
    audit_webhook_t *self = post->owner;
    long status = 0;
    curl_easy_getinfo (easy, CURLINFO_RESPONSE_CODE, &status);
    bool ok = result == CURLE_OK && status >= 200 && status < 300;
    int64_t retry_ms = atoi (post->retry_after) > 0 ? (int64_t) atoi (post->retry_after) * 1000 : 0;
    if (!ok) {
        uint32_t held;
        if (sl_ratelimit_allow (&self->error_log, zclock_mono (), &held))
            sl_log_warn ("webhook_failed", "attempt %d: %s (status %ld) (and %u more not logged)",
                         sl_webhook_attempt (post->event), curl_easy_strerror (result), status, held);
    }
    bool again = sl_webhook_done (self->queue, post->event, ok, retry_ms, zclock_time ());
    if (!ok && !again)
        sl_log_error ("webhook_given_up", "an event is dropped after %d attempts", self->config.attempts);
    curl_easy_cleanup (easy);
    free (post);
    audit_webhook_pump (self);
}

void
audit_webhook_pump (audit_webhook_t *self)
{
    if (!self->url)
        return;
    sl_webhook_event_t *event;
    while ((event = sl_webhook_next (self->queue, zclock_time ()))) {
        CURL *easy = curl_easy_init ();
        s_post_t *post = sl_xcalloc (1, sizeof *post);
        post->owner = self;
        post->event = event;
        sl_str_t body = sl_webhook_body (event);
        curl_easy_setopt (easy, CURLOPT_URL, self->url);
        curl_easy_setopt (easy, CURLOPT_POST, 1L);
        curl_easy_setopt (easy, CURLOPT_POSTFIELDS, body.ptr);
        curl_easy_setopt (easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) body.len);
        curl_easy_setopt (easy, CURLOPT_HTTPHEADER, self->headers);
        curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, (long) S_TIMEOUT_MS);
        curl_easy_setopt (easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt (easy, CURLOPT_HEADERFUNCTION, s_post_header);
        curl_easy_setopt (easy, CURLOPT_HEADERDATA, post);
        curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_post_body);
        if (sl_curlm_add (self->curlm, easy, s_post_done, post)) {
            sl_webhook_done (self->queue, event, false, 0, zclock_time ());
            curl_easy_cleanup (easy);
            free (post);
            break;
        }
    }
    const sl_webhook_stats_t *st = sl_webhook_stats (self->queue);
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
    audit_webhook_pump (arg);
    return 0;
}

static double
s_gauge_queue (void *arg)
{
    return (double) audit_webhook_queued (arg);
}

//  --------------------------------------------------------------------------

audit_webhook_t *
audit_webhook_new (sl_service_t *svc, sl_store_t *store, const audit_webhook_config_t *config)
{
    audit_webhook_t *self = sl_xcalloc (1, sizeof *self);
    self->svc = svc;
    self->store = store;
    self->config = *config;
    self->timer = -1;
    self->error_log = (sl_ratelimit_t) SL_RATELIMIT_INIT (S_LOG_BURST, S_LOG_WINDOW_MS);
    sl_webhook_opts_t opts = { config->queue, config->attempts, S_BASE_MS, S_MAX_MS, S_CONCURRENCY };
    self->queue = sl_webhook_new (&opts);
    sl_metrics_t *m = sl_service_metrics (svc);
    self->sent = sl_metrics_counter (m, "sluice_audit_webhook_sent_total", NULL, "Events the webhook took");
    self->failures = sl_metrics_counter (m, "sluice_audit_webhook_failures_total", NULL,
                                         "Webhook attempts that failed (retried with backoff)");
    self->dropped = sl_metrics_counter (m, "sluice_audit_webhook_dropped_total", NULL,
                                        "Webhook events dropped: the queue was full");
    self->given_up = sl_metrics_counter (m, "sluice_audit_webhook_given_up_total", NULL,
                                         "Webhook events dropped after their last attempt");
    sl_metrics_gauge_fn (m, "sluice_audit_webhook_queue", NULL, "Webhook events waiting or in flight",
                         s_gauge_queue, self);
    if (!config->url || !*config->url)
        return self;
    self->url = sl_xstrdup (config->url);
    self->actions = sl_xstrdup (config->actions ? config->actions : "");
    self->curlm = sl_curlm_new (sl_service_loop (svc));
    self->headers = curl_slist_append (NULL, "Content-Type: application/json");
    self->headers = curl_slist_append (self->headers, "User-Agent: sluice-audit");
    if (config->token && *config->token) {
        sl_buf_t line = { 0 };
        sl_buf_printf (&line, "Authorization: Bearer %s", config->token);
        self->headers = curl_slist_append (self->headers, sl_buf_cstr (&line));
        sl_buf_free (&line);
    }
    self->streams = config->on && strcmp (config->on, "stream") == 0;
    self->timer = zloop_timer (sl_service_loop (svc), S_TICK_MS, 0, s_on_tick, self);
    sl_log_info ("webhook", "one post per %s, actions %s", self->streams ? "stream" : "verdict",
                 *self->actions ? self->actions : "all");
    return self;
}

void
audit_webhook_destroy (audit_webhook_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    audit_webhook_t *self = *self_p;
    if (self->url && sl_webhook_queued (self->queue))
        sl_log_warn ("webhook_unsent", "%zu webhook events are lost with this process (the store has the records)",
                     sl_webhook_queued (self->queue));
    sl_curlm_destroy (&self->curlm);
    if (self->timer >= 0)
        zloop_timer_end (sl_service_loop (self->svc), self->timer);
    curl_slist_free_all (self->headers);
    sl_webhook_destroy (&self->queue);
    free (self->url);
    free (self->actions);
    sl_buf_free (&self->body);
    free (self);
    *self_p = NULL;
}

bool audit_webhook_on (audit_webhook_t *self) { return self->url != NULL; }
size_t audit_webhook_queued (audit_webhook_t *self) { return sl_webhook_queued (self->queue); }
const sl_webhook_stats_t *audit_webhook_stats (audit_webhook_t *self) { return sl_webhook_stats (self->queue); }
