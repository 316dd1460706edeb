/*  sl_otlp.c - the OTLP/HTTP span exporter (see sl_otlp.h).

    A ring of spans waiting (queue_max at most), one batch in transit or
    waiting to be sent again, and two one-shot zloop timers: the batch
    delay (armed when a span arrives at an idle exporter) and the back-off
    before a retry. The batch owns its spans from the moment it is taken
    off the queue until the collector accepts it or it is dropped, so a
    retry sends the same bytes again.
*/
#include "common/otel/sl_otlp.h"

#include <assert.h>
#include <ctype.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_hex.h"
#include "common/base/sl_log.h"
#include "common/base/sl_version.h"
#include "common/http/sl_curlm.h"
#include "common/http/sl_retry.h"
#include "common/otel/sl_otlp_impl.h"
#include "common/otel/sl_span_impl.h"

#define S_QUEUE_MAX_DEFAULT 4096
#define S_BATCH_MAX_DEFAULT 512
#define S_BATCH_DELAY_MS_DEFAULT 1000
#define S_TIMEOUT_MS_DEFAULT 10000
#define S_TIMEOUT_MS_MAX 600000         //  ten minutes: longer is a mistake
#define S_MAX_ATTEMPTS_DEFAULT 5
#define S_BACKOFF_MIN_MS_DEFAULT 500
#define S_BACKOFF_MAX_MS_DEFAULT 30000
#define S_HEADER_LINE_MAX 8192          //  one SLUICE_OTLP_HEADERS item at most
#define S_HTTP_TOO_EARLY 408
#define S_HTTP_TOO_MANY 429
#define S_HTTP_SERVER_ERROR 500
#define S_USER_AGENT "User-Agent: sluice/" SL_VERSION

// ---------------------------------------------------------------------------
//  The codecs, registered in one place

static const sl_otlp_codec_t *const s_codecs [] = {
    [SL_OTLP_PROTOBUF] = &sl_otlp_proto_codec,
    [SL_OTLP_JSON] = &sl_otlp_json_codec
};
_Static_assert (sizeof s_codecs / sizeof s_codecs [0] == SL_OTLP_JSON + 1, "a codec per protocol");

//  Every entry is checked when it is first asked for: a codec without one
//  of its operations is a build mistake, not something to run with.
static const sl_otlp_codec_t *
s_codec_checked (size_t index)
{
    const sl_otlp_codec_t *codec = s_codecs [index];
    assert (codec && codec->name && codec->content_type && codec->encode && codec->response);
    return codec;
}

const sl_otlp_codec_t *
sl_otlp_codec (sl_otlp_protocol_t protocol)
{
    if ((size_t) protocol >= sizeof s_codecs / sizeof s_codecs [0])
        return NULL;
    return s_codec_checked ((size_t) protocol);
}

int
sl_otlp_protocol_find (const char *name, sl_otlp_protocol_t *protocol)
{
    for (size_t i = 0; i < sizeof s_codecs / sizeof s_codecs [0]; i++)
        if (strcmp (s_codec_checked (i)->name, name) == 0) {
            *protocol = (sl_otlp_protocol_t) i;
            return 0;
        }
    return -1;
}

// ---------------------------------------------------------------------------
//  The rules

sl_otlp_outcome_t
sl_otlp_outcome (CURLcode result, long status, bool body_ok)
{
    if (result != CURLE_OK)
        return SL_OTLP_RETRY;
    if (status >= 200 && status < 300)
        return body_ok ? SL_OTLP_ACCEPTED : SL_OTLP_RETRY;
    if (status == S_HTTP_TOO_EARLY || status == S_HTTP_TOO_MANY || status >= S_HTTP_SERVER_ERROR)
        return SL_OTLP_RETRY;
    //  Other 4xx, and what OTLP never answers (1xx, 3xx: redirects are
    //  not followed): the collector will not take this batch.
    return SL_OTLP_REJECTED;
}

long
sl_otlp_backoff_ms (const sl_otlp_config_t *cfg, int attempts, long retry_after_s, unsigned char spread)
{
    if (retry_after_s >= 0 && retry_after_s > cfg->backoff_max_ms / 1000)
        return cfg->backoff_max_ms;
    long wait = sl_retry_backoff_ms (cfg->backoff_min_ms, cfg->backoff_max_ms, attempts > 0 ? attempts - 1 : 0,
                                     retry_after_s, spread);
    return wait < 0 ? cfg->backoff_max_ms : wait;
}

//  RFC 9110's token characters (a header name).
static bool
s_token (const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum ((unsigned char) s [i]) && !strchr ("!#$%&'*+-.^_`|~", s [i]))
            return false;
    return true;
}

//  The error names the item by its place (and its header name once that
//  is known), never by its text: the values are secrets.
static int
s_fail (char **error, const char *what, int index, const char *name, size_t name_len)
{
    sl_buf_t buf = { 0 };
    sl_buf_printf (&buf, "SLUICE_OTLP_HEADERS: item %d", index);
    if (name_len)
        sl_buf_printf (&buf, " (%.*s)", (int) (name_len > 64 ? 64 : name_len), name);
    sl_buf_printf (&buf, ": %s", what);
    *error = sl_xstrdup (sl_buf_cstr (&buf));
    sl_buf_free (&buf);
    return -1;
}

int
sl_otlp_headers_parse (const char *text, struct curl_slist **list, char **error)
{
    const char *p = text ? text : "";
    for (int index = 1; *p; index++) {
        const char *comma = strchr (p, ',');
        size_t n = comma ? (size_t) (comma - p) : strlen (p);
        const char *item = p;
        p += n + (comma ? 1 : 0);
        while (n && isspace ((unsigned char) *item)) {
            item++;
            n--;
        }
        while (n && isspace ((unsigned char) item [n - 1]))
            n--;
        if (n == 0)
            return s_fail (error, "empty", index, NULL, 0);
        if (n > S_HEADER_LINE_MAX)
            return s_fail (error, "too long", index, NULL, 0);
        const char *eq = memchr (item, '=', n);
        if (!eq)
            return s_fail (error, "no '='", index, NULL, 0);
        size_t key_len = (size_t) (eq - item);
        while (key_len && isspace ((unsigned char) item [key_len - 1]))
            key_len--;
        if (!s_token (item, key_len))
            return s_fail (error, "a header name that is not a token", index, NULL, 0);
        sl_buf_t line = { 0 };
        sl_buf_append (&line, item, key_len);
        sl_buf_puts (&line, ": ");
        const char *v = eq + 1, *end = item + n;
        while (v < end && isspace ((unsigned char) *v))
            v++;
        for (; v < end; v++) {
            int c = (unsigned char) *v;
            if (c == '%') {
                int hi = end - v >= 3 ? sl_hex_digit ((unsigned char) v [1]) : -1;
                int lo = end - v >= 3 ? sl_hex_digit ((unsigned char) v [2]) : -1;
                if (hi < 0 || lo < 0) {
                    sl_buf_free (&line);
                    return s_fail (error, "a bad %-escape in the value", index, item, key_len);
                }
                c = hi * 16 + lo;
                v += 2;
            }
            if (c < 0x20 || c == 0x7F) {
                sl_buf_free (&line);
                return s_fail (error, "a control character in the value", index, item, key_len);
            }
            sl_buf_putc (&line, (char) c);
        }
        *list = curl_slist_append (*list, sl_buf_cstr (&line));
        sl_buf_free (&line);
    }
    return 0;
}

// ---------------------------------------------------------------------------
//  Configuration

static int
s_config_error (char **error, const char *name, const char *value, const char *why)
{
    sl_buf_t buf = { 0 };
    sl_buf_printf (&buf, "%s=\"%.80s\": %s", name, value, why);
    *error = sl_xstrdup (sl_buf_cstr (&buf));
    sl_buf_free (&buf);
    return -1;
}

//  The traces URL of an endpoint: a base URL gets /v1/traces, a URL
//  that already ends in it is kept. NULL when it is not an http(s) URL
//  curl can parse.
static char *
s_traces_url (const char *endpoint)
{
    if (strncmp (endpoint, "http://", 7) != 0 && strncmp (endpoint, "https://", 8) != 0)
        return NULL;
    for (const char *c = endpoint; *c; c++)
        if ((unsigned char) *c <= ' ' || *c == 0x7F)
            return NULL;
    CURLU *url = curl_url ();
    char *path = NULL, *query = NULL, *out = NULL;
    if (curl_url_set (url, CURLUPART_URL, endpoint, 0) == CURLUE_OK
    &&  curl_url_get (url, CURLUPART_PATH, &path, 0) == CURLUE_OK
    &&  curl_url_get (url, CURLUPART_QUERY, &query, 0) == CURLUE_NO_QUERY) {
        size_t n = strlen (path), suffix = strlen (SL_OTLP_TRACES_PATH);
        bool whole = n >= suffix && strcmp (path + n - suffix, SL_OTLP_TRACES_PATH) == 0;
        sl_buf_t full = { 0 };
        sl_buf_append (&full, path, n && path [n - 1] == '/' && !whole ? n - 1 : n);
        if (!whole)
            sl_buf_puts (&full, SL_OTLP_TRACES_PATH);
        char *joined = NULL;
        if (curl_url_set (url, CURLUPART_PATH, sl_buf_cstr (&full), 0) == CURLUE_OK
        &&  curl_url_get (url, CURLUPART_URL, &joined, 0) == CURLUE_OK)
            out = sl_xstrdup (joined);
        curl_free (joined);
        sl_buf_free (&full);
    }
    curl_free (path);
    curl_free (query);
    curl_url_cleanup (url);
    return out;
}

int
sl_otlp_config_env (sl_otlp_config_t *cfg, const char *service_name, const char *instance, char **error)
{
    *cfg = (sl_otlp_config_t) {
        .protocol = SL_OTLP_PROTOBUF,
        .service_name = service_name,
        .instance = instance,
        .queue_max = S_QUEUE_MAX_DEFAULT,
        .batch_max = S_BATCH_MAX_DEFAULT,
        .batch_delay_ms = S_BATCH_DELAY_MS_DEFAULT,
        .timeout_ms = S_TIMEOUT_MS_DEFAULT,
        .max_attempts = S_MAX_ATTEMPTS_DEFAULT,
        .backoff_min_ms = S_BACKOFF_MIN_MS_DEFAULT,
        .backoff_max_ms = S_BACKOFF_MAX_MS_DEFAULT
    };
    *error = NULL;
    const char *value = getenv ("SLUICE_OTLP_PROTOCOL");
    if (value && *value && sl_otlp_protocol_find (value, &cfg->protocol))
        return s_config_error (error, "SLUICE_OTLP_PROTOCOL", value, "not \"http/protobuf\" or \"http/json\"");
    value = getenv ("SLUICE_OTLP_TIMEOUT_MS");
    if (value && *value) {
        char *end;
        long ms = strtol (value, &end, 10);
        if (!isdigit ((unsigned char) *value) || *end || ms < 1 || ms > S_TIMEOUT_MS_MAX)
            return s_config_error (error, "SLUICE_OTLP_TIMEOUT_MS", value, "not a whole number of ms from 1 to 600000");
        cfg->timeout_ms = (int) ms;
    }
    value = getenv ("SLUICE_OTLP_HEADERS");
    if (value && *value) {
        struct curl_slist *list = NULL;
        int rc = sl_otlp_headers_parse (value, &list, error);
        curl_slist_free_all (list);
        if (rc)
            return -1;
        cfg->headers = sl_xstrdup (value);
    }
    value = getenv ("SLUICE_OTLP_ENDPOINT");
    if (value && *value) {
        cfg->endpoint = s_traces_url (value);
        if (!cfg->endpoint) {
            sl_otlp_config_free (cfg);
            return s_config_error (error, "SLUICE_OTLP_ENDPOINT", value, "not an http:// or https:// URL without a query");
        }
    }
    return 0;
}

void
sl_otlp_config_free (sl_otlp_config_t *cfg)
{
    free (cfg->endpoint);
    free (cfg->headers);
    cfg->endpoint = NULL;
    cfg->headers = NULL;
}

// ---------------------------------------------------------------------------
//  The exporter

struct _sl_otlp_t {
    zloop_t *loop;
    sl_otlp_config_t cfg;               //  a copy; its strings are the caller's
    const sl_otlp_codec_t *codec;
    sl_otlp_resource_t resource;
    sl_curlm_t *curlm;
    struct curl_slist *headers;         //  content type, user agent, SLUICE_OTLP_HEADERS
    sl_span_t **queue;                  //  a ring of cfg.queue_max
    size_t head;                        //  oldest waiting span
    size_t count;                       //  spans waiting
    sl_span_t **batch;                  //  the batch out (cfg.batch_max slots)
    size_t batch_count;                 //  0: no batch out
    int attempts;                       //  sends of this batch so far
    sl_buf_t body;                      //  the batch encoded
    CURL *easy;                         //  the transfer running, or NULL
    sl_buf_t response;                  //  its answer's body
    bool response_cut;                  //  longer than SL_OTLP_RESPONSE_MAX
    long retry_after_s;                 //  its Retry-After, -1 when none
    int batch_timer;                    //  zloop ids, -1 when not armed
    int retry_timer;
    sl_otlp_stats_t stats;
    sl_counter_t *exported;             //  the registry's, or own_counters'
    sl_counter_t *dropped_queue_full;
    sl_counter_t *dropped_rejected;
    sl_counter_t *dropped_retries;
    sl_counter_t *dropped_shutdown;
    sl_counter_t *retries;
    sl_gauge_t *queued;
    sl_counter_t own_counters [6];      //  when there is no registry
    sl_gauge_t own_gauge;
};

static void s_send_next (sl_otlp_t *self);

static uint64_t
s_now_ns (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_REALTIME, &ts);
    return (uint64_t) ts.tv_sec * 1000000000ull + (uint64_t) ts.tv_nsec;
}

static void
s_metrics (sl_otlp_t *self, sl_metrics_t *metrics)
{
    if (!metrics) {
        self->exported = &self->own_counters [0];
        self->dropped_queue_full = &self->own_counters [1];
        self->dropped_rejected = &self->own_counters [2];
        self->dropped_retries = &self->own_counters [3];
        self->dropped_shutdown = &self->own_counters [4];
        self->retries = &self->own_counters [5];
        self->queued = &self->own_gauge;
        return;
    }
    const char *dropped = "Spans dropped, by reason (none is dropped silently)";
    self->exported = sl_metrics_counter (metrics, "sluice_otlp_spans_exported_total", NULL,
                                         "Spans the OTLP collector accepted");
    self->dropped_queue_full = sl_metrics_counter (metrics, "sluice_otlp_spans_dropped_total",
                                                   "reason=\"queue_full\"", dropped);
    self->dropped_rejected = sl_metrics_counter (metrics, "sluice_otlp_spans_dropped_total",
                                                 "reason=\"rejected\"", dropped);
    self->dropped_retries = sl_metrics_counter (metrics, "sluice_otlp_spans_dropped_total",
                                                "reason=\"retries_exhausted\"", dropped);
    self->dropped_shutdown = sl_metrics_counter (metrics, "sluice_otlp_spans_dropped_total",
                                                 "reason=\"shutdown\"", dropped);
    self->retries = sl_metrics_counter (metrics, "sluice_otlp_export_retries_total", NULL,
                                        "Span batches sent to the OTLP collector again");
    self->queued = sl_metrics_gauge (metrics, "sluice_otlp_queue_spans", NULL,
                                     "Spans waiting to be exported");
}

sl_otlp_t *
sl_otlp_new (zloop_t *loop, const sl_otlp_config_t *cfg, sl_metrics_t *metrics)
{
    assert (loop && cfg);
    if (!cfg->endpoint)
        return NULL;
    assert (cfg->service_name && cfg->queue_max > 0 && cfg->batch_max > 0 && cfg->batch_delay_ms >= 0);
    assert (cfg->timeout_ms > 0 && cfg->max_attempts > 0);
    assert (cfg->backoff_min_ms > 0 && cfg->backoff_max_ms >= cfg->backoff_min_ms);
    const sl_otlp_codec_t *codec = sl_otlp_codec (cfg->protocol);
    if (!codec)
        return NULL;
    CURLU *url = curl_url ();
    bool url_ok = curl_url_set (url, CURLUPART_URL, cfg->endpoint, 0) == CURLUE_OK;
    curl_url_cleanup (url);
    if (!url_ok)
        return NULL;
    sl_otlp_t *self = sl_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->cfg = *cfg;
    self->codec = codec;
    self->resource = (sl_otlp_resource_t) { cfg->service_name, cfg->instance, SL_VERSION };
    char *error = NULL;
    sl_buf_t line = { 0 };
    sl_buf_printf (&line, "Content-Type: %s", codec->content_type);
    self->headers = curl_slist_append (NULL, sl_buf_cstr (&line));
    sl_buf_free (&line);
    self->headers = curl_slist_append (self->headers, S_USER_AGENT);
    //  A large batch would otherwise wait a second for 100 Continue.
    self->headers = curl_slist_append (self->headers, "Expect:");
    if (sl_otlp_headers_parse (cfg->headers, &self->headers, &error)) {
        free (error);
        curl_slist_free_all (self->headers);
        free (self);
        return NULL;
    }
    self->curlm = sl_curlm_new (loop);
    self->queue = sl_xcalloc (cfg->queue_max, sizeof *self->queue);
    self->batch = sl_xcalloc (cfg->batch_max, sizeof *self->batch);
    self->batch_timer = -1;
    self->retry_timer = -1;
    s_metrics (self, metrics);
    return self;
}

static void
s_queue_gauge (sl_otlp_t *self)
{
    self->queued->value = (int64_t) self->count;
    self->stats.queued = self->count;
}

//  The spans of the batch out are done with (sent or dropped).
static void
s_batch_free (sl_otlp_t *self)
{
    for (size_t i = 0; i < self->batch_count; i++)
        sl_span_destroy (&self->batch [i]);
    self->batch_count = 0;
    self->attempts = 0;
    sl_buf_reset (&self->body);
}

static int
s_on_batch_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_otlp_t *self = arg;
    self->batch_timer = -1;
    s_send_next (self);
    return 0;
}

static void
s_arm_batch (sl_otlp_t *self)
{
    if (self->batch_timer < 0 && self->batch_count == 0 && self->count > 0)
        self->batch_timer = zloop_timer (self->loop, (size_t) self->cfg.batch_delay_ms, 1, s_on_batch_timer, self);
}

static size_t
s_on_header (char *data, size_t size, size_t count, void *arg)
{
    sl_otlp_t *self = arg;
    size_t n = size * count;
    static const char name [] = "retry-after:";
    if (n > sizeof name - 1 && strncasecmp (data, name, sizeof name - 1) == 0)
        self->retry_after_s = sl_retry_after (data + sizeof name - 1, n - (sizeof name - 1), time (NULL));
    return n;
}

static size_t
s_on_body (char *data, size_t size, size_t count, void *arg)
{
    sl_otlp_t *self = arg;
    size_t n = size * count;
    if (self->response.len + n > SL_OTLP_RESPONSE_MAX) {
        self->response_cut = true;
        return 0;                       //  ends the transfer: the answer is unreadable
    }
    sl_buf_append (&self->response, data, n);
    return n;
}

//  A fresh handle for one attempt (the same request as the first).
static CURL *
s_easy (sl_otlp_t *self, long timeout_ms)
{
    CURL *easy = curl_easy_init ();
    if (!easy)
        return NULL;
    curl_easy_setopt (easy, CURLOPT_URL, self->cfg.endpoint);
    curl_easy_setopt (easy, CURLOPT_POST, 1L);
    curl_easy_setopt (easy, CURLOPT_POSTFIELDS, self->body.data ? self->body.data : "");
    curl_easy_setopt (easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) self->body.len);
    curl_easy_setopt (easy, CURLOPT_HTTPHEADER, self->headers);
    curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt (easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt (easy, CURLOPT_HEADERFUNCTION, s_on_header);
    curl_easy_setopt (easy, CURLOPT_HEADERDATA, self);
    curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_on_body);
    curl_easy_setopt (easy, CURLOPT_WRITEDATA, self);
    sl_buf_reset (&self->response);
    self->response_cut = false;
    self->retry_after_s = -1;
    self->attempts++;
    return easy;
}

//  What one attempt's answer means, with the spans counted for it.
static sl_otlp_outcome_t
s_settle (sl_otlp_t *self, CURLcode result, long status)
{
    int64_t rejected = 0;
    bool body_ok = !self->response_cut
                && self->codec->response (sl_buf_str (&self->response), &rejected) == 0;
    sl_otlp_outcome_t outcome = sl_otlp_outcome (result, status, body_ok);
    size_t count = self->batch_count;
    if (outcome == SL_OTLP_ACCEPTED) {
        size_t refused = rejected > (int64_t) count ? count : (size_t) rejected;
        if (refused)
            sl_log_warn ("otlp_partial", "the collector rejected %zu of %zu spans", refused, count);
        sl_counter_add (self->exported, count - refused);
        sl_counter_add (self->dropped_rejected, refused);
        self->stats.exported += count - refused;
        self->stats.dropped_rejected += refused;
    }
    else
    if (outcome == SL_OTLP_REJECTED) {
        sl_log_warn ("otlp_rejected", "the collector refused %zu spans: HTTP %ld", count, status);
        sl_counter_add (self->dropped_rejected, count);
        self->stats.dropped_rejected += count;
    }
    return outcome;
}

static int
s_on_retry_timer (zloop_t *loop, int timer_id, void *arg);

static void
s_attempt (sl_otlp_t *self);

//  After an attempt: done with the batch, or a wait and another.
static void
s_after (sl_otlp_t *self, CURLcode result, long status)
{
    if (s_settle (self, result, status) != SL_OTLP_RETRY) {
        s_batch_free (self);
        s_send_next (self);
        return;
    }
    if (self->attempts >= self->cfg.max_attempts) {
        sl_log_warn ("otlp_dropped", "%zu spans dropped after %d attempts (last: %s, HTTP %ld)",
                     self->batch_count, self->attempts, curl_easy_strerror (result), status);
        sl_counter_add (self->dropped_retries, self->batch_count);
        self->stats.dropped_retries += self->batch_count;
        s_batch_free (self);
        s_send_next (self);
        return;
    }
    unsigned char spread;
    randombytes_buf (&spread, sizeof spread);
    long wait = sl_otlp_backoff_ms (&self->cfg, self->attempts, self->retry_after_s, spread);
    sl_counter_inc (self->retries);
    self->stats.retries++;
    self->retry_timer = zloop_timer (self->loop, (size_t) wait, 1, s_on_retry_timer, self);
}

static void
s_on_done (void *arg, CURL *easy, CURLcode result)
{
    sl_otlp_t *self = arg;
    long status = 0;
    curl_easy_getinfo (easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup (easy);
    self->easy = NULL;
    s_after (self, result, status);
}

static void
s_attempt (sl_otlp_t *self)
{
    self->easy = s_easy (self, self->cfg.timeout_ms);
    if (!self->easy || sl_curlm_add (self->curlm, self->easy, s_on_done, self)) {
        if (self->easy)
            curl_easy_cleanup (self->easy);
        self->easy = NULL;
        s_after (self, CURLE_FAILED_INIT, 0);
    }
}

static int
s_on_retry_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_otlp_t *self = arg;
    self->retry_timer = -1;
    s_attempt (self);
    return 0;
}

//  Take the next batch off the queue and encode it; false when none.
static bool
s_take_batch (sl_otlp_t *self)
{
    if (self->batch_count > 0 || self->count == 0)
        return false;
    while (self->batch_count < self->cfg.batch_max && self->count > 0) {
        self->batch [self->batch_count++] = self->queue [self->head];
        self->queue [self->head] = NULL;
        self->head = (self->head + 1) % self->cfg.queue_max;
        self->count--;
    }
    s_queue_gauge (self);
    sl_buf_reset (&self->body);
    self->codec->encode (&self->resource, self->batch, self->batch_count, &self->body);
    self->attempts = 0;
    return true;
}

//  Send what waits, when no batch is out: spans that queued while one was
//  have waited already, so they go at once.
static void
s_send_next (sl_otlp_t *self)
{
    if (self->batch_timer >= 0) {
        zloop_timer_end (self->loop, self->batch_timer);
        self->batch_timer = -1;
    }
    if (s_take_batch (self))
        s_attempt (self);
}

void
sl_otlp_submit (sl_otlp_t *self, sl_span_t **span_p)
{
    assert (self && span_p);
    sl_span_t *span = *span_p;
    *span_p = NULL;
    if (!span)
        return;
    if (self->count >= self->cfg.queue_max) {
        sl_span_destroy (&span);
        sl_counter_inc (self->dropped_queue_full);
        self->stats.dropped_queue_full++;
        return;
    }
    if (!span->ended)
        sl_span_end (span, s_now_ns ());
    self->queue [(self->head + self->count) % self->cfg.queue_max] = span;
    self->count++;
    s_queue_gauge (self);
    if (self->batch_count > 0)
        return;                         //  goes after the batch out
    if (self->count >= self->cfg.batch_max)
        s_send_next (self);
    else
        s_arm_batch (self);
}

void
sl_otlp_stats (sl_otlp_t *self, sl_otlp_stats_t *stats)
{
    *stats = self->stats;
    stats->queued = self->count;
}

//  The bounded flush of sl_otlp_destroy: each batch sent once, in this
//  thread, within what is left of SL_OTLP_FLUSH_MS (the reactor is
//  stopping; nothing else waits on it). A batch that fails is not tried
//  again: it and the rest are dropped as shutdown.
static void
s_flush (sl_otlp_t *self)
{
    int64_t deadline = zclock_mono () + SL_OTLP_FLUSH_MS;
    if (self->batch_count > 0)
        self->attempts = 0;
    while (self->batch_count > 0 || s_take_batch (self)) {
        int64_t left = deadline - zclock_mono ();
        if (left <= 0)
            break;
        long timeout = left < self->cfg.timeout_ms ? (long) left : self->cfg.timeout_ms;
        CURL *easy = s_easy (self, timeout);
        if (!easy)
            break;
        CURLcode result = curl_easy_perform (easy);
        long status = 0;
        curl_easy_getinfo (easy, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_cleanup (easy);
        if (s_settle (self, result, status) == SL_OTLP_RETRY)
            break;
        s_batch_free (self);
    }
    size_t left = self->batch_count + self->count;
    if (left) {
        sl_log_warn ("otlp_dropped", "%zu spans dropped at shutdown", left);
        sl_counter_add (self->dropped_shutdown, left);
    }
    s_batch_free (self);
    while (self->count > 0) {
        sl_span_destroy (&self->queue [self->head]);
        self->head = (self->head + 1) % self->cfg.queue_max;
        self->count--;
    }
    s_queue_gauge (self);
}

void
sl_otlp_destroy (sl_otlp_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_otlp_t *self = *self_p;
    if (self->batch_timer >= 0)
        zloop_timer_end (self->loop, self->batch_timer);
    if (self->retry_timer >= 0)
        zloop_timer_end (self->loop, self->retry_timer);
    if (self->easy) {
        sl_curlm_remove (self->curlm, self->easy);
        curl_easy_cleanup (self->easy);
        self->easy = NULL;
    }
    s_flush (self);
    sl_curlm_destroy (&self->curlm);
    curl_slist_free_all (self->headers);
    sl_buf_free (&self->body);
    sl_buf_free (&self->response);
    free (self->queue);
    free (self->batch);
    free (self);
    *self_p = NULL;
}
