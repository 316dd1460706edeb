/*  gateway_approvals.h - the gateway's approvals API: GET /v1/approvals
    and POST /v1/approvals/{id}, answered by the judges over their control
    link (common/approval/sl_approvals_link.h), and the cancel a judge gets
    when the client of a stream it holds a call of goes away (the core's
    cancel hook). Without --judge-approvals the API answers 503.
*/
#ifndef GATEWAY_APPROVALS_H
#define GATEWAY_APPROVALS_H

#include "services/gateway/gateway_core.h"

typedef struct _gateway_approvals_t gateway_approvals_t;

//  Registers its route and the core's cancel hook; connects to the judges
//  of --judge-approvals. NULL (logged) when their list is malformed: the
//  gateway must not start.
gateway_approvals_t *gateway_approvals_new (gateway_core_t *core, const gateway_config_t *config);
//  After gateway_core_stop (the requests waiting are gone with their
//  clients).
void gateway_approvals_destroy (gateway_approvals_t **self_p);

#endif
