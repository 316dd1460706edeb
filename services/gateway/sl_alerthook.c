/*  sl_alerthook.c - the limits' alerts webhook (see sl_alerthook.h). */
#include "services/gateway/sl_alerthook.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/http/sl_hookpost.h"

#define S_TICK_MS 200
#define S_TIMEOUT_MS 10000
#define S_BASE_MS 500                   //  first wait after a failed post
#define S_MAX_MS 30000                  //  longest wait
#define S_CONCURRENCY 4
#define S_SERVED_PATH "/api/keys/served"  //  the audit's served keys (sl_console_keys.h)

struct _sl_alerthook_t {
    sl_hookpost_t *hook;
    sl_buf_t body;
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

void
sl_alerthook_post (sl_alerthook_t *self, const sl_limits_plan_t *plan, const sl_limits_alert_t *alert)
{
    if (!self)
        return;
    sl_buf_reset (&self->body);
    sl_alerthook_body (plan, alert, &self->body);
    sl_hookpost_push (self->hook, sl_buf_str (&self->body));
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
    const char *what = config->name ? config->name : "webhook";
    sl_metrics_t *m = sl_service_metrics (svc);
    char name [4][64], help [4][128];
    snprintf (name [0], sizeof name [0], "sluice_alerts_%s_sent_total", what);
    snprintf (help [0], sizeof help [0], "Limits alerts the %s took", what);
    snprintf (name [1], sizeof name [1], "sluice_alerts_%s_failures_total", what);
    snprintf (help [1], sizeof help [1], "Limits alerts posts to the %s that failed (tried again)", what);
    snprintf (name [2], sizeof name [2], "sluice_alerts_%s_dropped_total", what);
    snprintf (help [2], sizeof help [2], "Limits alerts for the %s dropped: the queue was full", what);
    snprintf (name [3], sizeof name [3], "sluice_alerts_%s_given_up_total", what);
    snprintf (help [3], sizeof help [3], "Limits alerts for the %s dropped after their last attempt", what);
    sl_hookpost_counters_t counters = {
        sl_metrics_counter (m, name [0], NULL, help [0]), sl_metrics_counter (m, name [1], NULL, help [1]),
        sl_metrics_counter (m, name [2], NULL, help [2]), sl_metrics_counter (m, name [3], NULL, help [3]),
    };
    char log_name [48];
    snprintf (log_name, sizeof log_name, "alerts_%s", what);
    sl_hookpost_config_t c = {
        .url = config->url, .secret = bearer ? NULL : config->secret, .token = bearer ? config->bearer : NULL,
        .user_agent = "sluice-gateway", .log_name = log_name, .what = "a limits alert",
        .conflict_is_done = config->conflict_is_done, .log_body = true,
        .timeout_ms = S_TIMEOUT_MS, .tick_ms = S_TICK_MS,
        .queue = { SL_ALERTHOOK_QUEUE, config->attempts > 0 ? config->attempts : SL_ALERTHOOK_ATTEMPTS,
                   S_BASE_MS, S_MAX_MS, S_CONCURRENCY },
    };
    sl_alerthook_t *self = sl_xcalloc (1, sizeof *self);
    self->hook = sl_hookpost_new (sl_service_loop (svc), &c, &counters);
    sl_log_info (log_name, bearer ? "every limits alert posted to %s (Bearer), kept while it does not answer"
                                  : "signed posts (X-Sluice-Signature) for every limits alert to %s", config->url);
    return self;
}

void
sl_alerthook_destroy (sl_alerthook_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_alerthook_t *self = *self_p;
    sl_hookpost_destroy (&self->hook);
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
