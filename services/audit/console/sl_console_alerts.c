/*  sl_console_alerts.c - the budget alerts in the console (see sl_console_alerts.h). */
#include "services/audit/console/sl_console_alerts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "services/audit/console/sl_console_keys.h"
#include "services/audit/store/sl_alertstore.h"

#define S_PATH "/api/alerts"
#define S_DAY_MS (24 * 3600 * 1000LL)


static const char *
s_arg (const sl_console_req_t *req, const char *name)
{
    return req->query ? req->query (req->arg, name) : NULL;
}

//  A whole number argument, def when absent; false when not one.
static bool
s_arg_i64 (const sl_console_req_t *req, const char *name, int64_t def, int64_t *out)
{
    const char *v = s_arg (req, name);
    *out = def;
    if (!v || !*v)
        return true;
    char *end;
    long long n = strtoll (v, &end, 10);
    if (*end || n < 0)
        return false;
    *out = n;
    return true;
}


static void
s_post (const sl_console_alerts_ctx_t *ctx, const sl_console_req_t *req, sl_console_resp_t *resp)
{
    const char *type = sl_console_header (req, "Content-Type");
    if (!sl_console_keys_is_gateway (ctx->token, req)) {
        sl_console_error (resp, 401, "alerts are posted by the gateways, with the keys token (SLUICE_KEYS_TOKEN)");
        return;
    }
    if (!type || strncasecmp (type, "application/json", 16) != 0) {
        sl_console_error (resp, 415, "send JSON");
        return;
    }
    if (!ctx->chain) {
        sl_console_error (resp, 503, "no hash chain to record an alert in");
        return;
    }
    char why [SL_ALERTSTORE_WHY_MAX];
    sl_alert_t alert;
    if (sl_alert_parse (req->body, &alert, why)) {
        sl_console_error (resp, 400, why);
        return;
    }
    int64_t pos = 0;
    int rc = sl_alertstore_record (ctx->store, ctx->chain, &alert, ctx->now, &pos);
    if (rc < 0)
        sl_console_store_error (ctx->store, resp);
    else
    if (rc > 0)
        sl_console_error (resp, 409, "this alert is recorded already");
    else {
        sl_log_info ("limits_alert_recorded", "%s reached %d%% of its %s (%s %s), alert %s", alert.subject,
                     alert.threshold, alert.limit, alert.period, alert.window, alert.id);
        sl_buf_printf (&resp->body, "{\"id\":\"%s\",\"pos\":%lld}", alert.id, (long long) pos);
        sl_console_json (resp, 201);
    }
    sl_alert_clear (&alert);
}

bool
sl_console_alerts_handle (const sl_console_alerts_ctx_t *ctx, const sl_console_req_t *req, sl_console_resp_t *resp)
{
    if (strcmp (req->path, S_PATH) != 0)
        return false;
    if (strcmp (req->method, "POST") == 0) {
        s_post (ctx, req, resp);
        return true;
    }
    if (strcmp (req->method, "GET") != 0) {
        sl_console_error (resp, 405, "method not allowed");
        return true;
    }
    //  Who may read is the console's to refuse, as for any page.
    if (!ctx->may_read)
        return false;
    int64_t since, limit;
    if (!s_arg_i64 (req, "since", ctx->now - SL_CONSOLE_ALERTS_DAYS * S_DAY_MS, &since)
    ||  !s_arg_i64 (req, "limit", 0, &limit)) {
        sl_console_error (resp, 400, "since (Unix ms) and limit are whole numbers");
        return true;
    }
    sl_buf_puts (&resp->body, "{\"alerts\":");
    if (sl_alertstore_list (ctx->store, since, (int) (limit > SL_ALERTSTORE_LIST_MAX ? SL_ALERTSTORE_LIST_MAX : limit),
                            &resp->body)) {
        sl_console_store_error (ctx->store, resp);
        return true;
    }
    sl_buf_putc (&resp->body, '}');
    sl_console_json (resp, 200);
    return true;
}
