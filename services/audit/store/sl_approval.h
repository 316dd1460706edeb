/*  sl_approval.h - an approval as sluice-audit shows and sends it.

    One JSON shape for an approval wherever the audit hands one out: the
    console's /api/approvals (from the store's row), its live view (event
    "approval", from the judge's record) and the approvals webhook. It is
    the shape the judges answer the control link with (PROTOCOL.md, ctl):

        {"id","state","stream","index","tool","arguments","rule","message",
         "digest","policy","policy_name","identity":{"key_id","team","user"},
         "model","last_user","judge","created_at","expires_at",
         "approvers","on_timeout","remember_minutes",     (the judge's details;
         "self_approved": true when its own caller decided it)
         "decided_at","approver","comment"}               (once decided)

    `arguments` is the call's JSON, a string when it is not JSON; times in
    Unix ms; absent values are left out.

    And the signature of the approvals webhook: HMAC-SHA256 (libsodium)
    with the shared secret over "<timestamp>.<body>", the timestamp (Unix
    seconds) sent beside it, so that a receiver can check both that the
    body is the audit's and that it is recent (docs/approvals.md).
*/
#ifndef SL_APPROVAL_H
#define SL_APPROVAL_H

#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"
#include "proto/sl_msg.h"

//  The fields of one approval (borrowed).
typedef struct {
    char id [SL_SID_HEX_SIZE];
    sl_str_t state, stream, tool, arguments, rule, message, digest, policy, policy_name;
    sl_str_t key_id, team, user, model, last_user, judge, details, approver, comment;
    int64_t index;                      //  -1: absent
    int64_t created_at, expires_at;     //  0: absent
    int64_t decided_at;                 //  0: not decided
} sl_approval_t;

//  The fields of a judge's approval record (msg, borrowed).
void sl_approval_from_msg (const sl_msg_t *msg, sl_approval_t *out);
//  Append the approval's JSON to out.
void sl_approval_json (const sl_approval_t *self, sl_buf_t *out);

#endif
