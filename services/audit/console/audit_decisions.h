/*  audit_decisions.h - the console's decisions on approvals, sent on to
    the judges.

    A decision the console took (POST /api/approvals/<id>, checked by
    sl_console: SL_CONSOLE_DECIDE) goes to the judges over their control
    link (--judge-approvals, common/approval/sl_approvals_link.h), as a
    console user; the request waits, suspended, and is answered with the
    judges' answer (503 without judges). The judge records who decided:
    the person's identity (sl_console_role_label), never just "console". The decision itself reaches the
    store as every approval does: the judge's record, through an emitter
    and the recorder.
*/
#ifndef AUDIT_DECISIONS_H
#define AUDIT_DECISIONS_H

#include <stdbool.h>

#include "common/approval/sl_approvals_api.h"
#include "common/http/sl_httpd.h"
#include "common/service/sl_service.h"
#include "services/audit/console/sl_console_role.h"

typedef struct _audit_decisions_t audit_decisions_t;

//  judges: the judges' approvals endpoints (comma-separated, names
//  re-resolved), "" or NULL: none (every decision is answered 503).
//  NULL (logged) when the endpoints are malformed.
audit_decisions_t *audit_decisions_new (sl_service_t *svc, const char *judges);
void audit_decisions_destroy (audit_decisions_t **self_p);
//  The HTTP server the decisions are answered through (they are answered
//  from the reactor, so the server must be run after).
void audit_decisions_set_httpd (audit_decisions_t *self, sl_httpd_t *httpd);
//  Send the console's decision on approval id to the judges, as the
//  console user caller (named in the records by identity: name, email,
//  sub); req is answered when they have (503 without judges).
void audit_decisions_decide (audit_decisions_t *self, sl_http_req_t *req, const char *id,
                             const sl_approvals_decision_t *decision, const sl_console_caller_t *caller);
//  req's client left: true when it was waiting for a decision (forgotten).
bool audit_decisions_closed (audit_decisions_t *self, sl_http_req_t *req);

#endif
