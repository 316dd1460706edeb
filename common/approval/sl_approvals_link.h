/*  sl_approvals_link.h - the client side of the approvals control link
    (PROTOCOL.md, "ctl (18)"): how the gateway's /v1/approvals and the
    console (through sluice-audit) reach the judges.

    An approval is held by exactly one judge, and nobody outside knows
    which. So the link connects one DEALER (a CURVE client of the judges'
    key, ZAP domain "approvals" on their side) to every judge of a
    comma-separated endpoint list; a name stands for all its addresses
    (docker compose --scale judge=3) and is resolved again every
    SL_RESOLVE_MS. Every request goes to every judge; replies are gathered
    by request id (the ctl message's sid), and the caller gets one
    outcome per request: when every judge asked has answered, when the
    answer is known (decide: the judge that held it), or when the deadline
    passes. A judge that is down costs at most the deadline; what the
    others said is reported. When no judge answered at all: 503.

      list     the union of the judges' pending approvals that `by` may
               decide: {"approvals": [...], "judges": {"asked", "answered"}}
      decide   the answer of the judge that held it (any status but 404),
               else 404; a decision that gave a memory (remember_minutes)
               is sent on to every other judge as a `grant`, so identical
               calls pass whichever judge they reach
      cancel   to every judge, no answer wanted (a client that left)

    Everything runs in the owner's zloop: callbacks come from the reactor,
    never from another thread.
*/
#ifndef SL_APPROVALS_LINK_H
#define SL_APPROVALS_LINK_H

#include <czmq.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_metrics.h"
#include "common/bus/sl_bus.h"

#define SL_APPROVALS_LINK_DEADLINE_MS 2000  //  a request's outcome at the latest this long after it left
#define SL_APPROVALS_LINK_MAX_JUDGES 64     //  judge instances connected at once
#define SL_APPROVALS_LINK_MAX_PENDING 1024  //  requests waiting for answers at once

typedef struct _sl_approvals_link_t sl_approvals_link_t;

//  Who asks (PROTOCOL.md, ctl: "by"): the caller's identity as the gateway
//  or the console knows it. Strings are borrowed for the call; NULL or ""
//  leave a field out.
typedef struct {
    const char *key_id;
    const char *team;
    const char *user;
    bool approver;                      //  its key is marked an approver in the keys file
    bool console;                       //  a console user (sluice-audit)
    bool loopback;                      //  a caller on this machine, no keys configured
    const char *name;                   //  who, as the records name them (a console user's identity)
} sl_approvals_by_t;

//  A decision as the HTTP APIs take it (sl_approvals_api.h parses it).
typedef struct {
    bool approve;                       //  "approve" (else "deny")
    const char *comment;                //  NULL: none
    int64_t remember_minutes;           //  0: no memory
    const char *digest;                 //  NULL: not checked
    const char *policy;                 //  NULL: not checked
} sl_approvals_decision_t;

//  The outcome of one request, borrowed for the callback.
typedef struct {
    int status;                         //  HTTP status: 200, 400, 403, 404, 409, 410, 503
    const char *message;                //  why, when status is not 200 (else NULL)
    const char *body;                   //  JSON text (list: {"approvals": ...}; decide: the approval), or NULL
    size_t asked;                       //  judges the request went to
    size_t answered;                    //  judges that answered in time
} sl_approvals_outcome_t;

typedef void (sl_approvals_done_fn) (void *arg, const sl_approvals_outcome_t *outcome);

//  Connect to the judges of endpoints (comma-separated; names resolved
//  now and every SL_RESOLVE_MS). bus: CURVE client of the key "judge";
//  NULL: plaintext (unit tests). NULL (logged) when the list is malformed.
sl_approvals_link_t *sl_approvals_link_new (zloop_t *loop, sl_bus_t *bus, const char *endpoints);
//  Requests still waiting are forgotten: their callbacks are not called.
void sl_approvals_link_destroy (sl_approvals_link_t **self_p);
//  Count requests and their outcomes into m:
//  sluice_approvals_link_requests_total{op,status}, and judges that did
//  not answer in time, sluice_approvals_link_unanswered_total.
void sl_approvals_link_set_metrics (sl_approvals_link_t *self, sl_metrics_t *m);
//  The deadline of requests made from now on (tests; the default is
//  SL_APPROVALS_LINK_DEADLINE_MS).
void sl_approvals_link_set_deadline (sl_approvals_link_t *self, int64_t ms);
//  Judges connected now (addresses the endpoints resolved to).
size_t sl_approvals_link_judges (sl_approvals_link_t *self);

//  Ask every judge for the pending approvals by may decide. done is called
//  exactly once, maybe before this returns (no judge at all, too many
//  requests waiting: 503), unless the request is forgotten first.
//  Returns the request's handle for sl_approvals_link_forget, 0 when done
//  was already called.
uint64_t sl_approvals_link_list (sl_approvals_link_t *self, const sl_approvals_by_t *by,
                                 sl_approvals_done_fn *done, void *arg);
//  Decide approval id (32 hex digits) as by. As list.
uint64_t sl_approvals_link_decide (sl_approvals_link_t *self, const char *id, const sl_approvals_by_t *by,
                                   const sl_approvals_decision_t *decision, sl_approvals_done_fn *done, void *arg);
//  The client of stream (32 hex digits) left: every judge cancels its
//  pending approvals. Nothing comes back.
void sl_approvals_link_cancel (sl_approvals_link_t *self, const char *stream);
//  The one who asked is gone (its HTTP client left): done will not be
//  called. A handle that is done already, or 0, is ignored.
void sl_approvals_link_forget (sl_approvals_link_t *self, uint64_t handle);

#endif
