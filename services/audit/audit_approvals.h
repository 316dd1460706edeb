/*  audit_approvals.h - what sluice-audit does for approvals beyond
    storing them: the console's decisions sent on to the judges (the
    control link, --judge-approvals), and the approvals webhook
    (--approvals-webhook): a signed POST when an approval is pending and
    when it ends (decided, timed out, cancelled, failed), with the audit's
    webhook queue (sl_webhook.h) for retries.

    A post is JSON {"type":"approval","state":...,"approval":{...}} (the
    approval as sl_approval.h writes it) with the headers

        X-Sluice-Timestamp: <Unix seconds>
        X-Sluice-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>

    signed again at every attempt (a retry carries its own time), with the
    secret from SLUICE_APPROVALS_WEBHOOK_SECRET (required with the hook).
*/
#ifndef AUDIT_APPROVALS_H
#define AUDIT_APPROVALS_H

#include <stdbool.h>
#include <stddef.h>

#include "common/approval/sl_approvals_link.h"
#include "common/http/sl_httpd.h"
#include "common/service/sl_service.h"
#include "proto/sl_msg.h"

typedef struct _audit_approvals_t audit_approvals_t;

typedef struct {
    const char *judges;                 //  the judges' approvals endpoints, "" : none
    const char *webhook_url;            //  "" : no approvals webhook
    const char *webhook_secret;         //  its HMAC key (required with a URL)
    size_t webhook_queue;
    int webhook_attempts;
} audit_approvals_config_t;

//  NULL (logged) when the endpoints are malformed or the hook has no secret.
audit_approvals_t *audit_approvals_new (sl_service_t *svc, const audit_approvals_config_t *config);
void audit_approvals_destroy (audit_approvals_t **self_p);
//  The HTTP server the console's decisions are answered through (they are
//  answered from the reactor, so the server must be run after).
void audit_approvals_set_httpd (audit_approvals_t *self, sl_httpd_t *httpd);
//  Send the console's decision on approval id to the judges, as a console
//  user; req is answered when they have (503 without judges).
void audit_approvals_decide (audit_approvals_t *self, sl_http_req_t *req, const char *id,
                             const sl_approvals_decision_t *decision);
//  req's client left: true when it was waiting for a decision (forgotten).
bool audit_approvals_closed (audit_approvals_t *self, sl_http_req_t *req);
//  An approval record the store just took as new (a new state): the hook.
void audit_approvals_committed (audit_approvals_t *self, const sl_msg_t *msg);

#endif
