/*  judge_approvals.h - sluice-judge's approvals: the registry of calls
    waiting for a person (services/judge/sl_approvals.h) wired to the
    process: the control socket the gateway and sluice-audit decide
    through (proto/PROTOCOL.md, "ctl"), the sweep that times approvals
    out, and the `approval` messages that tell monitoring.

    The judge library asks (sl_judge_ask_t, kind PERSON) through
    judge_approvals_ask, from within its own call: outcomes are never
    reported from there, but from the reactor (a decision on the control
    socket, the sweep, or a turn later for a call an earlier approval's
    memory covers), through the outcome callback.
*/
#ifndef JUDGE_APPROVALS_H
#define JUDGE_APPROVALS_H

#include <stddef.h>
#include <stdint.h>

#include "common/llm/sl_llm.h"
#include "common/service/sl_service.h"
#include "common/stages/sl_judge.h"
#include "proto/sl_msg.h"

#define JUDGE_APPROVALS_SWEEP_MS 250    //  how often expiries are looked for

typedef struct _judge_approvals_t judge_approvals_t;

//  An `approval` message for monitoring (borrowed for the call).
typedef void (judge_approvals_publish_fn) (void *arg, const sl_msg_t *msg);
//  The outcome of the ask of ticket, for the judge library (borrowed).
typedef void (judge_approvals_outcome_fn) (void *arg, uint64_t ticket, const sl_llm_result_t *result);

//  Bind the control socket at endpoint (a CURVE server of domain
//  "approvals" on the service's bus). NULL (logged) when it cannot bind.
judge_approvals_t *judge_approvals_new (sl_service_t *svc, const char *endpoint,
                                        judge_approvals_publish_fn *publish,
                                        judge_approvals_outcome_fn *outcome, void *arg);
//  Pending approvals are forgotten: call judge_approvals_stop first.
void judge_approvals_destroy (judge_approvals_t **self_p);
//  A person is asked about a call: 0 taken, -1 refused.
int judge_approvals_ask (judge_approvals_t *self, const sl_judge_ask_t *ask);
//  The judge no longer wants the ask's outcome (its stream went away).
void judge_approvals_cancel (judge_approvals_t *self, uint64_t ticket);
//  The judge stops: every pending approval fails and its call is blocked
//  (never on_timeout's allow), its outcome reported and its message
//  published now.
void judge_approvals_stop (judge_approvals_t *self);
size_t judge_approvals_pending (judge_approvals_t *self);

#endif
