/*  sl_annotations.c - the policy annotations of a request's job (see
    sl_annotations.h). */
#include "common/policy/sl_annotations.h"

#include "common/policy/sl_taint.h"
#include "common/tools/sl_tooldef.h"

bool
sl_annotations_make (sl_policy_t *policy, const sl_req_t *req, sl_reqjudge_t *rj, sl_annotations_t *out)
{
    sl_buf_reset (&out->history);
    sl_buf_reset (&out->digests);
    sl_buf_reset (&out->taint);
    if (!policy || !req)
        return false;
    if (sl_policy_uses_history (policy))
        sl_reqjudge_history (req, SL_REQJUDGE_HISTORY_CALLS, SL_REQJUDGE_HISTORY_BYTES, &out->history);
    //  Definition conditions on calls: the tools as the client sent them.
    if (sl_policy_uses_definitions (policy)) {
        if (rj)
            sl_reqjudge_digests (rj, &out->digests);
        else
            sl_tooldef_digests (req->tools, req->tool_count, &out->digests);
    }
    if (sl_policy_uses_taint (policy))
        sl_taint_scan (policy, req, &out->taint);
    return out->history.len || out->digests.len || out->taint.len;
}

void
sl_annotations_clear (sl_annotations_t *self)
{
    sl_buf_free (&self->history);
    sl_buf_free (&self->digests);
    sl_buf_free (&self->taint);
}
