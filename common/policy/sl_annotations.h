/*  sl_annotations.h - what a request's job carries for the judge beyond
    the request itself: the policy annotations.

    A call rule may test more than the call: the conversation's earlier
    calls (history conditions), the definition of the tool as the client
    sent it (definition conditions: pins), whether a result of an
    untrusted tool is in the conversation (taint conditions). The judge
    sees only the response, so the place that holds the request (the
    gateway, before the upstream call) reads them from it and sends them
    with the job (REQ hist, tdig, tnt; PROTOCOL.md), each only when the
    policy the request runs under has a rule that uses it.

    One call makes all three (sl_annotations_make), so whoever builds a
    job needs to know nothing of which condition needs what. Pure: no
    state, no clock.
*/
#ifndef SL_ANNOTATIONS_H
#define SL_ANNOTATIONS_H

#include <stdbool.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_req.h"
#include "common/policy/sl_policy.h"
#include "common/policy/sl_reqjudge.h"

typedef struct {
    sl_buf_t history;                   //  REQ hist: earlier calls (sl_reqjudge_history), empty: none
    sl_buf_t digests;                   //  REQ tdig: tool definition digests (sl_tooldef_digests), empty: none
    sl_buf_t taint;                     //  REQ tnt: untrusted results held (sl_taint_scan), empty: none
} sl_annotations_t;

//  The annotations of req that policy uses, written into out (cleared
//  first): history when some rule has a history condition, the digests
//  when some has a definition condition, the taint when some has a taint
//  condition. rj, when the request was judged by request rules, is its
//  judge: the digests are then of the definitions as they came, before
//  any was withheld (NULL: computed from req). policy NULL (the request
//  was refused before its policy was known): none. Returns true when any
//  was written.
bool sl_annotations_make (sl_policy_t *policy, const sl_req_t *req, sl_reqjudge_t *rj, sl_annotations_t *out);
//  Frees the buffers; the struct may be made again.
void sl_annotations_clear (sl_annotations_t *self);

#endif
