/*  audit.c - sluice-audit: the recorder and the console over one store (see audit.h). */
#include "services/audit/audit.h"

#include <stdlib.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"
#include "services/audit/console/audit_console.h"
#include "services/audit/store/sl_store.h"

struct _audit_t {
    sl_store_t *store;                  //  the one both parts use
    audit_recorder_t *recorder;
    audit_console_t *console;           //  NULL: --console-port off
};

//  The recorder committed a batch: the console's live view.
static void
s_committed (void *arg, const sl_record_t *records, size_t count)
{
    audit_console_committed (((audit_t *) arg)->console, records, count);
}

static size_t
s_live_streams (audit_t *self)
{
    return self->console ? audit_console_live_streams (self->console) : 0;
}

//  What /api/meta says beyond the store.
static void
s_meta (void *arg, sl_buf_t *out)
{
    audit_t *self = arg;
    sl_buf_printf (out, ",\"emitters\":%zu,\"emitters_sending\":%zu,\"live_streams\":%zu,\"store_ok\":%s",
                   audit_recorder_emitters (self->recorder), audit_recorder_sending (self->recorder),
                   s_live_streams (self), audit_recorder_store_ok (self->recorder) ? "true" : "false");
    size_t queued;
    sl_webhook_stats_t stats;
    if (audit_recorder_webhook (self->recorder, &queued, &stats))
        sl_buf_printf (out, ",\"webhook\":{\"queued\":%zu,\"sent\":%llu,\"given_up\":%llu}", queued,
                       (unsigned long long) stats.sent, (unsigned long long) stats.given_up);
}

static void
s_chain (void *arg, sl_buf_t *out)
{
    audit_recorder_chain_json (((audit_t *) arg)->recorder, out);
}

static void
s_health (void *arg, sl_buf_t *out)
{
    audit_t *self = arg;
    sl_buf_printf (out, ",\"store\":\"%s\",\"store_ok\":%s,\"emitters\":%zu,\"emitters_sending\":%zu,"
                        "\"live_streams\":%zu,\"console_port\":%d",
                   sl_store_kind (self->store), audit_recorder_store_ok (self->recorder) ? "true" : "false",
                   audit_recorder_emitters (self->recorder), audit_recorder_sending (self->recorder),
                   s_live_streams (self), self->console ? audit_console_port (self->console) : -1);
}

audit_t *
audit_new (sl_service_t *svc, const audit_config_t *config)
{
    char *error = NULL;
    sl_store_t *store = sl_store_open (config->store, &error);
    if (!store) {
        sl_log_error ("store_failed", "cannot open the store: %s", error);
        free (error);
        return NULL;
    }
    audit_t *self = sl_xcalloc (1, sizeof *self);
    self->store = store;
    sl_log_info ("store_open", "store=%s target=%s schema=%d", sl_store_kind (store), sl_store_target (store),
                 sl_store_version (store));
    self->recorder = audit_recorder_new (svc, store, &config->recorder);
    if (!self->recorder) {
        audit_destroy (&self);
        return NULL;
    }
    if (config->console_port >= 0) {
        audit_console_config_t console = {
            .host = config->console_host,
            .port = config->console_port,
            .keys = config->console_keys,
            .keys_token = config->keys_token,
            .keys_file = config->keys_file,
            .oidc = config->console_oidc,
            .judges = config->judge_approvals,
        };
        self->console = audit_console_new (svc, store, &console);
        if (!self->console) {
            audit_destroy (&self);
            return NULL;
        }
        audit_console_on_meta (self->console, s_meta, self);
        audit_console_on_chain (self->console, s_chain, self);
        audit_console_set_chain (self->console, audit_recorder_chain (self->recorder));
        audit_recorder_on_commit (self->recorder, s_committed, self);
    }
    sl_service_on_health (svc, s_health, self);
    return self;
}

void
audit_destroy (audit_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    audit_t *self = *self_p;
    audit_console_destroy (&self->console);
    audit_recorder_destroy (&self->recorder);
    sl_store_close (&self->store);
    free (self);
    *self_p = NULL;
}
