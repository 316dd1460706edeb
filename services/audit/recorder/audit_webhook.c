/*  audit_webhook.c - the recorder's posts to a SIEM (see audit_webhook.h). */
#include "services/audit/recorder/audit_webhook.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/http/sl_hookpost.h"
#include "services/audit/store/sl_query.h"

#define S_TICK_MS 200                   //  due retries are posted this often
#define S_TIMEOUT_MS 10000              //  one post at most
#define S_BASE_MS 500                   //  first wait after a failed post
#define S_MAX_MS 30000                  //  longest wait
#define S_CONCURRENCY 4                 //  posts in flight at once

struct _audit_webhook_t {
    sl_service_t *svc;
    sl_store_t *store;
    audit_webhook_config_t config;
    sl_hookpost_t *hook;                //  NULL: off
    char *actions;
    bool streams;                       //  one post per stream (else per verdict)
    sl_buf_t body;
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
    sl_hookpost_push (self->hook, sl_buf_str (out));
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
    sl_hookpost_push (self->hook, sl_buf_str (out));
}

void
audit_webhook_committed (audit_webhook_t *self, const sl_record_t *record)
{
    if (!self->hook)
        return;
    if (!self->streams && record->msg->type == SL_MSG_VERDICT)
        s_post_verdict (self, record);
    else
    if (self->streams && record->msg->type == SL_MSG_END)
        s_post_stream (self, record);
}

void
audit_webhook_pump (audit_webhook_t *self)
{
    if (self->hook)
        sl_hookpost_pump (self->hook);
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
    sl_metrics_t *m = sl_service_metrics (svc);
    sl_hookpost_counters_t counters = {
        sl_metrics_counter (m, "sluice_audit_webhook_sent_total", NULL, "Events the webhook took"),
        sl_metrics_counter (m, "sluice_audit_webhook_failures_total", NULL,
                            "Webhook attempts that failed (retried with backoff)"),
        sl_metrics_counter (m, "sluice_audit_webhook_dropped_total", NULL,
                            "Webhook events dropped: the queue was full"),
        sl_metrics_counter (m, "sluice_audit_webhook_given_up_total", NULL,
                            "Webhook events dropped after their last attempt"),
    };
    sl_metrics_gauge_fn (m, "sluice_audit_webhook_queue", NULL, "Webhook events waiting or in flight",
                         s_gauge_queue, self);
    if (!config->url || !*config->url)
        return self;
    sl_hookpost_config_t c = {
        .url = config->url, .token = config->token, .user_agent = "sluice-audit",
        .log_name = "webhook", .what = "a webhook event",
        .timeout_ms = S_TIMEOUT_MS, .tick_ms = S_TICK_MS,
        .queue = { config->queue, config->attempts, S_BASE_MS, S_MAX_MS, S_CONCURRENCY },
    };
    self->hook = sl_hookpost_new (sl_service_loop (svc), &c, &counters);
    self->actions = sl_xstrdup (config->actions ? config->actions : "");
    self->streams = config->on && strcmp (config->on, "stream") == 0;
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
    sl_hookpost_destroy (&self->hook);
    free (self->actions);
    sl_buf_free (&self->body);
    free (self);
    *self_p = NULL;
}

static const sl_webhook_stats_t s_no_stats;

bool audit_webhook_on (audit_webhook_t *self) { return self->hook != NULL; }
size_t audit_webhook_queued (audit_webhook_t *self) { return self->hook ? sl_hookpost_queued (self->hook) : 0; }
const sl_webhook_stats_t *
audit_webhook_stats (audit_webhook_t *self)
{
    return self->hook ? sl_hookpost_stats (self->hook) : &s_no_stats;
}
