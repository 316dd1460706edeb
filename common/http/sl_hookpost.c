/*  sl_hookpost.c - a webhook's posts (see sl_hookpost.h). */
#include "common/http/sl_hookpost.h"

#include <curl/curl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_log.h"
#include "common/base/sl_ratelimit.h"
#include "common/http/sl_curlm.h"

#define S_LOG_BURST 5                   //  failures logged in a window
#define S_LOG_WINDOW_MS 10000
#define S_RETRY_AFTER_MAX 32            //  a Retry-After's text, at most

//  A post in flight.
typedef struct {
    sl_hookpost_t *owner;
    sl_webhook_event_t *event;
    struct curl_slist *headers;         //  this attempt's (its signature)
    CURL *easy;
    char retry_after [S_RETRY_AFTER_MAX];
} s_post_t;

struct _sl_hookpost_t {
    zloop_t *loop;
    char *url, *secret, *token, *user_agent, *log_name, *what;
    bool conflict_is_done, log_body;
    int64_t timeout_ms;
    sl_webhook_t *queue;
    sl_curlm_t *curlm;
    zlistx_t *posts;                    //  s_post_t in flight
    int timer;
    sl_ratelimit_t error_log;
    sl_hookpost_counters_t counters;
};

static size_t
s_post_header (char *data, size_t size, size_t count, void *arg)
{
    s_post_t *post = arg;
    size_t n = size * count;
    sl_curlm_header (data, n, "retry-after", post->retry_after, sizeof post->retry_after);
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
s_post_free (s_post_t *post)
{
    curl_easy_cleanup (post->easy);
    curl_slist_free_all (post->headers);
    free (post);
}

static void
s_count (sl_hookpost_t *self)
{
    const sl_webhook_stats_t *st = sl_webhook_stats (self->queue);
    if (self->counters.sent)
        self->counters.sent->value = st->sent;
    if (self->counters.failures)
        self->counters.failures->value = st->failures;
    if (self->counters.dropped)
        self->counters.dropped->value = st->dropped;
    if (self->counters.given_up)
        self->counters.given_up->value = st->given_up;
}

static void
s_post_done (void *arg, CURL *easy, CURLcode result)
{
    s_post_t *post = arg;
    sl_hookpost_t *self = post->owner;
    long status = 0;
    curl_easy_getinfo (easy, CURLINFO_RESPONSE_CODE, &status);
    bool ok = result == CURLE_OK && ((status >= 200 && status < 300) || (self->conflict_is_done && status == 409));
    int after = atoi (post->retry_after);
    int64_t retry_ms = after > 0 ? (int64_t) after * 1000 : 0;
    if (!ok) {
        uint32_t held;
        char event [64];
        snprintf (event, sizeof event, "%s_failed", self->log_name);
        if (sl_ratelimit_allow (&self->error_log, zclock_mono (), &held))
            sl_log_warn (event, "attempt %d: %s (status %ld) (and %u more not logged)",
                         sl_webhook_attempt (post->event), curl_easy_strerror (result), status, held);
    }
    //  The event is freed when it is given up: its body is copied first.
    sl_buf_t body = { 0 };
    if (!ok && self->log_body)
        sl_buf_append_str (&body, sl_webhook_body (post->event));
    if (!sl_webhook_done (self->queue, post->event, ok, retry_ms, zclock_time ()) && !ok) {
        char event [64];
        snprintf (event, sizeof event, "%s_given_up", self->log_name);
        if (self->log_body)
            sl_log_error (event, "%s is dropped after its last attempt: %.*s", self->what, (int) body.len,
                          body.data ? body.data : "");
        else
            sl_log_error (event, "%s is dropped after its last attempt", self->what);
    }
    sl_buf_free (&body);
    void *item = zlistx_find (self->posts, post);
    if (item)
        zlistx_delete (self->posts, item);
    s_post_free (post);
    sl_hookpost_pump (self);
}

//  This attempt's headers: the signature is made now, with now's time.
static struct curl_slist *
s_headers (sl_hookpost_t *self, sl_str_t body)
{
    sl_buf_t line = { 0 };
    struct curl_slist *h = curl_slist_append (NULL, "Content-Type: application/json");
    sl_buf_printf (&line, "User-Agent: %s", self->user_agent);
    h = curl_slist_append (h, sl_buf_cstr (&line));
    if (self->token) {
        sl_buf_reset (&line);
        sl_buf_printf (&line, "Authorization: Bearer %s", self->token);
        h = curl_slist_append (h, sl_buf_cstr (&line));
        sodium_memzero (line.data, line.len);
    }
    if (self->secret) {
        int64_t now_s = zclock_time () / 1000;
        char signature [SL_WEBHOOK_SIGNATURE_HEX];
        sl_webhook_sign (self->secret, now_s, body, signature);
        sl_buf_reset (&line);
        sl_buf_printf (&line, "X-Sluice-Timestamp: %lld", (long long) now_s);
        h = curl_slist_append (h, sl_buf_cstr (&line));
        sl_buf_reset (&line);
        sl_buf_printf (&line, "X-Sluice-Signature: sha256=%s", signature);
        h = curl_slist_append (h, sl_buf_cstr (&line));
    }
    sl_buf_free (&line);
    return h;
}

void
sl_hookpost_pump (sl_hookpost_t *self)
{
    sl_webhook_event_t *event;
    while ((event = sl_webhook_next (self->queue, zclock_time ()))) {
        sl_str_t body = sl_webhook_body (event);
        s_post_t *post = sl_xcalloc (1, sizeof *post);
        post->owner = self;
        post->event = event;
        post->headers = s_headers (self, body);
        post->easy = curl_easy_init ();
        CURL *easy = post->easy;
        curl_easy_setopt (easy, CURLOPT_URL, self->url);
        curl_easy_setopt (easy, CURLOPT_POST, 1L);
        curl_easy_setopt (easy, CURLOPT_POSTFIELDS, body.ptr);
        curl_easy_setopt (easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) body.len);
        curl_easy_setopt (easy, CURLOPT_HTTPHEADER, post->headers);
        curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, (long) self->timeout_ms);
        curl_easy_setopt (easy, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt (easy, CURLOPT_HEADERFUNCTION, s_post_header);
        curl_easy_setopt (easy, CURLOPT_HEADERDATA, post);
        curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_post_body);
        if (sl_curlm_add (self->curlm, easy, s_post_done, post)) {
            sl_webhook_done (self->queue, event, false, 0, zclock_time ());
            s_post_free (post);
            break;
        }
        zlistx_add_end (self->posts, post);
    }
    s_count (self);
}

int
sl_hookpost_push (sl_hookpost_t *self, sl_str_t body)
{
    int rc = sl_webhook_push (self->queue, body, zclock_time ());
    if (rc) {
        char event [64];
        snprintf (event, sizeof event, "%s_full", self->log_name);
        if (self->log_body)
            sl_log_error (event, "%s is dropped: the queue is full: %.*s", self->what, (int) body.len, body.ptr);
        else
            sl_log_warn (event, "%s is dropped: the queue is full", self->what);
    }
    sl_hookpost_pump (self);
    return rc;
}

static int
s_on_tick (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_hookpost_pump (arg);
    return 0;
}

static char *
s_dup_or_null (const char *s)
{
    return s && *s ? sl_xstrdup (s) : NULL;
}

sl_hookpost_t *
sl_hookpost_new (zloop_t *loop, const sl_hookpost_config_t *config, const sl_hookpost_counters_t *counters)
{
    sl_hookpost_t *self = sl_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->url = sl_xstrdup (config->url);
    self->secret = s_dup_or_null (config->secret);
    self->token = s_dup_or_null (config->token);
    self->user_agent = sl_xstrdup (config->user_agent ? config->user_agent : "sluice");
    self->log_name = sl_xstrdup (config->log_name ? config->log_name : "webhook");
    self->what = sl_xstrdup (config->what ? config->what : "an event");
    self->conflict_is_done = config->conflict_is_done;
    self->log_body = config->log_body;
    self->timeout_ms = config->timeout_ms;
    self->queue = sl_webhook_new (&config->queue);
    self->curlm = sl_curlm_new (loop);
    self->posts = zlistx_new ();
    self->error_log = (sl_ratelimit_t) SL_RATELIMIT_INIT (S_LOG_BURST, S_LOG_WINDOW_MS);
    if (counters)
        self->counters = *counters;
    self->timer = zloop_timer (loop, (size_t) config->tick_ms, 0, s_on_tick, self);
    return self;
}

void
sl_hookpost_destroy (sl_hookpost_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_hookpost_t *self = *self_p;
    if (sl_webhook_queued (self->queue)) {
        char event [64];
        snprintf (event, sizeof event, "%s_unsent", self->log_name);
        sl_log_warn (event, "%zu events are lost with this process", sl_webhook_queued (self->queue));
    }
    //  The client lets go of the transfers in flight; their posts are ours.
    sl_curlm_destroy (&self->curlm);
    for (s_post_t *post = zlistx_first (self->posts); post; post = zlistx_next (self->posts))
        s_post_free (post);
    zlistx_destroy (&self->posts);
    sl_webhook_destroy (&self->queue);
    if (self->timer >= 0)
        zloop_timer_end (self->loop, self->timer);
    free (self->url);
    free (self->secret);
    if (self->token)
        sodium_memzero (self->token, strlen (self->token));
    free (self->token);
    free (self->user_agent);
    free (self->log_name);
    free (self->what);
    free (self);
    *self_p = NULL;
}

size_t sl_hookpost_queued (sl_hookpost_t *self) { return sl_webhook_queued (self->queue); }
const sl_webhook_stats_t *sl_hookpost_stats (sl_hookpost_t *self) { return sl_webhook_stats (self->queue); }
