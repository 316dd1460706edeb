/*  sl_judge.h - the judge: holds each tool call until it is complete,
    applies the policy, and releases or replaces it.

    A pure library: feed it the messages of the block hop (START, BLOCK,
    ERROR, END) of interleaved streams; it emits the judged stream (START,
    BLOCK, VERDICT, ERROR, END) with the envelope filled in.

    Text and thinking pass at once. A tool call is held from block_start to
    block_end; everything after it waits behind it. On block_end the policy
    decides: allow releases the call as it was; block replaces it with a
    text block carrying the rule's notice (flag REPLACED). Every decision is
    a VERDICT message (rule, action, reason, latency) emitted before the
    released blocks. When calls were blocked and none is left, a tool_calls
    finish becomes stop, so the client does not wait for a tool result.

    Each stream keeps the policy it started with; sl_judge_set_policy
    affects streams that start afterwards.
*/
#ifndef SL_JUDGE_H
#define SL_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "../../proto/sl_msg.h"
#include "sl_policy.h"

typedef struct _sl_judge_t sl_judge_t;

//  Takes its own reference to policy.
sl_judge_t *sl_judge_new (sl_policy_t *policy);
void sl_judge_destroy (sl_judge_t **self_p);
//  Policy for streams that start from now on (takes its own reference).
void sl_judge_set_policy (sl_judge_t *self, sl_policy_t *policy);
void sl_judge_feed (sl_judge_t *self, const sl_msg_t *msg, sl_emit_fn *emit, void *arg);
size_t sl_judge_streams (sl_judge_t *self);
uint64_t sl_judge_dropped (sl_judge_t *self);

#endif
