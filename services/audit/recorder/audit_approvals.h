/*  audit_approvals.h - the approvals webhook (--approvals-webhook): a
    signed POST when an approval is pending and when it ends (decided,
    timed out, cancelled, failed), fed the approval records the store has
    just committed (audit_recorder.h), with the audit's webhook queue
    (sl_webhook.h) for retries. (The console's decisions go to the judges
    from the console: services/audit/console/audit_decisions.h.)

    A post is JSON {"type":"approval","state":...,"approval":{...}} (the
    approval as sl_approval.h writes it) with the headers

        X-Sluice-Timestamp: <Unix seconds>
        X-Sluice-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>

    signed again at every attempt (a retry carries its own time), with the
    secret from SLUICE_APPROVALS_WEBHOOK_SECRET (required with the hook).
*/
#ifndef AUDIT_APPROVALS_H
#define AUDIT_APPROVALS_H

#include <stddef.h>

#include "common/service/sl_service.h"
#include "proto/sl_msg.h"

typedef struct _audit_approvals_t audit_approvals_t;

typedef struct {
    const char *webhook_url;            //  "" : no approvals webhook
    const char *webhook_secret;         //  its HMAC key (required with a URL)
    size_t webhook_queue;
    int webhook_attempts;
} audit_approvals_config_t;

//  NULL (logged) when the hook has no secret.
audit_approvals_t *audit_approvals_new (sl_service_t *svc, const audit_approvals_config_t *config);
void audit_approvals_destroy (audit_approvals_t **self_p);
//  An approval record the store just took as new (a new state): the hook.
void audit_approvals_committed (audit_approvals_t *self, const sl_msg_t *msg);

#endif
