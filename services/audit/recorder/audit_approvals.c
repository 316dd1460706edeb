/*  audit_approvals.c - the approvals webhook (see audit_approvals.h). */
#include "services/audit/recorder/audit_approvals.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/http/sl_hookpost.h"
#include "services/audit/store/sl_approval.h"

#define S_WEBHOOK_TICK_MS 200
#define S_WEBHOOK_TIMEOUT_MS 10000
#define S_WEBHOOK_BASE_MS 500           //  first wait after a failed post
#define S_WEBHOOK_MAX_MS 30000          //  longest wait
#define S_WEBHOOK_CONCURRENCY 4

struct _audit_approvals_t {
    sl_hookpost_t *hook;                //  NULL: no webhook
    sl_buf_t body;
};

void
audit_approvals_committed (audit_approvals_t *self, const sl_msg_t *msg)
{
    if (!self->hook)
        return;
    sl_approval_t a;
    sl_approval_from_msg (msg, &a);
    sl_buf_reset (&self->body);
    sl_buf_puts (&self->body, "{\"type\":\"approval\",\"state\":");
    sl_json_put_sl (&self->body, a.state);
    sl_buf_puts (&self->body, ",\"approval\":");
    sl_approval_json (&a, &self->body);
    sl_buf_putc (&self->body, '}');
    sl_hookpost_push (self->hook, sl_buf_str (&self->body));
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
    if (hook) {
        sl_metrics_t *m = sl_service_metrics (svc);
        sl_hookpost_counters_t counters = {
            sl_metrics_counter (m, "sluice_audit_approvals_webhook_sent_total", NULL,
                                "Approval events the approvals webhook took"),
            sl_metrics_counter (m, "sluice_audit_approvals_webhook_failures_total", NULL,
                                "Approvals webhook posts that failed (tried again)"),
            sl_metrics_counter (m, "sluice_audit_approvals_webhook_dropped_total", NULL,
                                "Approval events dropped: the queue was full"),
            sl_metrics_counter (m, "sluice_audit_approvals_webhook_given_up_total", NULL,
                                "Approval events dropped after their last attempt"),
        };
        sl_hookpost_config_t c = {
            .url = config->webhook_url, .secret = config->webhook_secret, .user_agent = "sluice-audit",
            .log_name = "approvals_webhook", .what = "an approval event",
            .timeout_ms = S_WEBHOOK_TIMEOUT_MS, .tick_ms = S_WEBHOOK_TICK_MS,
            .queue = { config->webhook_queue, config->webhook_attempts, S_WEBHOOK_BASE_MS, S_WEBHOOK_MAX_MS,
                       S_WEBHOOK_CONCURRENCY },
        };
        self->hook = sl_hookpost_new (sl_service_loop (svc), &c, &counters);
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
    sl_hookpost_destroy (&self->hook);
    sl_buf_free (&self->body);
    free (self);
    *self_p = NULL;
}
