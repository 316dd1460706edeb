/*  sl_approvals.h - the approvals a judge holds: tool calls waiting for a
    person (a rule with action ask), and the memory of approvals given
    for a while.

    A pure class: no socket, no clock (every call is given the time, Unix
    ms), no judge. sluice-judge adds an approval when the judge library
    asks a person (sl_judge_ask_t, kind PERSON), hands it the decisions
    that come over the control link (proto/PROTOCOL.md, "ctl"), sweeps the
    expired ones, and publishes every change as an `approval` message
    (sl_approvals_message) and reports the outcome to the judge library.

    An approval is bound to its call: the digest of the tool, its
    canonical arguments and the policy version (sl_ask_digest), and an
    expiry. A decision is taken once: a second one, one naming another
    digest or policy version, one after the expiry, one from someone the
    rule does not admit and one from the caller whose call waits (unless
    the rule says allow_self; such a decision is marked self_approved)
    change nothing, and say why (an HTTP status and a sentence). Decided approvals stay known for a while
    (SL_APPROVALS_KEEP_MS) so that a late or repeated decision hears what
    happened rather than "unknown".

    Memory: an approval may be given for a while (remember_minutes, at
    most the rule's remember_max_minutes): a later call of the same
    caller with the same digest then passes at once (APPROVED_EARLIER,
    naming the first approval) and no approval is added. A grant learnt
    from another judge (sl_approvals_grant) counts the same.
*/
#ifndef SL_APPROVALS_H
#define SL_APPROVALS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/llm/sl_llm.h"
#include "common/policy/sl_policy.h"
#include "common/stages/sl_judge.h"
#include "proto/sl_msg.h"

#define SL_APPROVALS_KEEP_MS 600000     //  a decided approval is remembered this long
#define SL_APPROVAL_ID_SIZE 33          //  32 hex digits and a NUL

typedef enum {
    SL_APPROVAL_PENDING = 0,
    SL_APPROVAL_APPROVED,
    SL_APPROVAL_DENIED,
    SL_APPROVAL_TIMEOUT,                //  nobody decided in time: on_timeout
    SL_APPROVAL_CANCELLED,              //  the client left, or the stream ended first
    SL_APPROVAL_FAILED,                 //  the judge holding it stopped: blocked
    SL_APPROVAL_STATE_MAX
} sl_approval_state_t;

typedef struct _sl_approvals_t sl_approvals_t;
typedef struct _sl_approval_t sl_approval_t;

//  A person's decision, as the control link brings it. Borrowed.
typedef struct {
    bool approve;
    const char *comment;                //  or NULL
    int remember_minutes;               //  0: no memory
    const char *digest;                 //  NULL, or must be the approval's
    const char *policy;                 //  NULL, or must be the approval's policy version
    sl_ask_by_t by;                     //  who decides
    const char *approver;               //  how the decider is named in the records
} sl_approval_decision_t;

//  Called for each approval a sweep, a cancel or a stop ends (borrowed
//  for the call: the approval may be gone afterwards).
typedef void (sl_approvals_each_fn) (void *arg, const sl_approval_t *approval);

//  instance and incarnation name the judge in every approval.
sl_approvals_t *sl_approvals_new (const char *instance, uint64_t incarnation);
void sl_approvals_destroy (sl_approvals_t **self_p);

//  A person is asked about a call. Returns 0 and the new pending approval
//  in *out (owned by the registry), or 1 when an earlier approval's
//  memory covers the call: nothing is added, and *earlier is filled with
//  the outcome (APPROVED_EARLIER, its approver and approval id; the
//  caller clears it).
int sl_approvals_add (sl_approvals_t *self, const sl_judge_ask_t *ask, int64_t now_ms,
                      const sl_approval_t **out, sl_llm_result_t *earlier);
//  Decide approval id (32 hex digits). Returns an HTTP status: 200, the
//  approval now decided in *out; else 400 (a memory longer than the rule
//  allows), 403 (by may not decide it: the rule does not admit them, or it
//  is their own call), 404 (not held here), 409 (decided
//  already, another digest or policy version), 410 (expired), and why
//  (static or in the registry's buffer, valid until the next call).
int sl_approvals_decide (sl_approvals_t *self, const char *id, const sl_approval_decision_t *decision,
                         int64_t now_ms, const sl_approval_t **out, const char **why);
//  The outcome an ended approval reports to the judge library (its check,
//  the approver and comment, or why nobody decided). The caller clears it.
void sl_approvals_outcome (const sl_approval_t *approval, sl_llm_result_t *out);
//  End every pending approval past its expiry as TIMEOUT, and forget
//  decided ones older than SL_APPROVALS_KEEP_MS and expired memories.
//  Returns how many timed out.
size_t sl_approvals_expire (sl_approvals_t *self, int64_t now_ms, sl_approvals_each_fn *fn, void *arg);
//  The judge no longer wants the outcome of ticket (its stream went away):
//  CANCELLED. fn is called when there was one.
void sl_approvals_cancel_ticket (sl_approvals_t *self, uint64_t ticket, int64_t now_ms,
                                 sl_approvals_each_fn *fn, void *arg);
//  The client of stream sid (32 hex digits) left: its pending approvals
//  are CANCELLED. Returns how many.
size_t sl_approvals_cancel_stream (sl_approvals_t *self, const char *sid, int64_t now_ms,
                                   sl_approvals_each_fn *fn, void *arg);
//  The judge stops: every pending approval FAILED, with why; its outcome
//  is an error, which blocks the call whatever on_timeout says (a process
//  leaving is not time running out). Returns how many.
size_t sl_approvals_fail_all (sl_approvals_t *self, int64_t now_ms, const char *why,
                              sl_approvals_each_fn *fn, void *arg);
//  Remember an approval another judge gave with a memory: an identical
//  call (digest) of the same caller passes until expires_ms.
void sl_approvals_grant (sl_approvals_t *self, const char *digest, sl_str_t key_id, sl_str_t team,
                         sl_str_t user, const char *approval, const char *approver, int64_t expires_ms);

//  {"approvals": [...]}: the pending approvals by may decide, never by's
//  own calls unless their rule says allow_self (the JSON of each is
//  sl_approvals_json's).
void sl_approvals_list (sl_approvals_t *self, const sl_ask_by_t *by, sl_buf_t *out);
//  One approval as JSON (proto/PROTOCOL.md, "ctl").
void sl_approvals_json (const sl_approval_t *approval, sl_buf_t *out);
//  The `approval` message of its current state; strings borrowed from
//  the approval, scratch (the caller's) holds the JSON body.
void sl_approvals_message (const sl_approval_t *approval, sl_msg_t *msg, sl_buf_t *scratch);

//  An approval's ticket (the judge library's ask), state, id, stream.
uint64_t sl_approval_ticket (const sl_approval_t *approval);
sl_approval_state_t sl_approval_state (const sl_approval_t *approval);
const char *sl_approval_id (const sl_approval_t *approval);
//  The memory it gave: who, for how long (0: none), and its digest.
int sl_approval_remember_minutes (const sl_approval_t *approval);
//  Decided by the caller whose call it holds (the rule's allow_self)?
bool sl_approval_self_approved (const sl_approval_t *approval);
const char *sl_approval_state_name (int state);

//  Approvals pending, and memories held.
size_t sl_approvals_pending (sl_approvals_t *self);
size_t sl_approvals_grants (sl_approvals_t *self);

#endif
