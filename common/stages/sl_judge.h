/*  sl_judge.h - the judge: holds each tool call until it is complete,
    applies the policy, and releases, replaces, drops or rewrites it.

    A pure library: feed it the messages of the block hop (START, BLOCK,
    ERROR, END) of interleaved streams; it emits the judged stream (START,
    BLOCK, VERDICT, ERROR, END) with the envelope filled in. It opens no
    socket, makes no HTTP call and reads no clock:

    - Asking an LLM judge or a person goes through the ask callback the
      service sets (sl_judge_set_llm); the service makes the HTTP call, or
      keeps the approval until a person decides, enforces the timeout and
      the concurrency limit, and reports every outcome back with
      sl_judge_llm_done (an answer, a decision, a timeout or an error).
      Without an ask callback, a rule that needs an LLM judge is recorded
      as an ERROR check with its on_error action, and one that asks a
      person as an ERROR check that blocks.
    - Time comes from the clock callback the service sets (sl_judge_set_clock)
      and is used for two things only: verdict latencies and keep-alives
      (sl_judge_tick). Without a clock, time stands at 0: latencies are 0
      and no keep-alive is ever due, so the output is a function of the
      input alone (sluice-replay).

    On the stream: text and thinking pass at once. A tool call is held from
    block_start to block_end; everything after a held call waits behind it.
    Calls are judged as soon as each is complete, so several calls of one
    response are judged in parallel (LLM judges in flight together), and
    released strictly in their original order. Each decision is a VERDICT
    message emitted just before what it decided (allow: the call as it was;
    rewrite: the call with rewritten arguments; block: a text block with the
    notice, flag REPLACED; drop: nothing, and later block indices close up;
    terminate: an ERROR and the END of the stream). When no tool call is
    left in a response whose finish is tool_calls, the finish becomes stop;
    other finish reasons are kept. While a stream holds anything back and
    nothing left it for the keep-alive interval, sl_judge_tick emits a
    KEEPALIVE block event for it.

    Failing closed: a call that did not end cleanly is judged as such
    (sl_call_t.cut): one whose block_end is flagged INCOMPLETE (the cut in
    its code), one still open when an ERROR or the END arrives (judged then,
    cut as the error says or eof, before the error goes out), and one whose
    arguments pass the per-call bound (sl_judge_set_max_call_bytes): from
    then on its fragments are not kept, and at its end it is judged as cut
    for size on the bound's worth of its arguments. A call over the bound
    is never released (the policy turns an allow for it into a block).

    Each stream keeps the policy it started with; sl_judge_set_policy
    affects streams that start afterwards. A START that names a policy
    file (pn: its key's or team's, from the keys file) runs under that
    file's policy, which the service looks up (sl_judge_set_lookup: the
    library reads no file). When the service does not have it (not
    named by its keys file, or never loaded), the stream fails closed:
    every tool call of it is blocked, its verdict's check is ERROR and
    its reason names the file; the stream is counted (sl_judge_unknown)
    and never judged under the default. A START that names a policy
    version (pol: the gateway judged the request under it) gets that
    version when the judge has it: it keeps the versions it loaded last
    (SL_JUDGE_VERSIONS, reference counted, of every file: sl_judge_keep),
    a version counting only for streams of its own file. When it does not have it, the
    stream runs the current policy, its verdicts say so, and the skew is
    counted (sl_judge_skew). The request's own verdicts (START rv) go out
    right after the START, as VERDICT messages with part set, and the
    conversation's earlier calls (START hist) feed history conditions. A stream re-sent in a new epoch
    keeps its policy and reuses the decisions already taken for the same
    calls (same index, name and arguments), including asks still in flight:
    an LLM judge is asked once per call, and a re-send cannot change a
    verdict the client may already have seen.

    Shadow mode: rules in shadow mode of the stream's policy, and the
    policy file its START names in spn (a keys file's shadow_policy,
    judged whole, looked up like pn), decide nothing. Each call is judged
    under them too (sl_policy_decide_shadow), and what they would have
    decided goes out as a VERDICT with mode SHADOW, right after the call's
    own verdict. Their LLM judges and decision services are asked beside
    the call's own decision (ask.shadow): the call does not wait for them,
    and their verdict goes out when they answer; one still unanswered when
    the response ends goes out before the END as not answered (check
    TIMEOUT), its ask cancelled. An ask in shadow asks nobody (check
    WOULD_ASK). The client's messages are the same as without them.
*/
#ifndef SL_JUDGE_H
#define SL_JUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "proto/sl_msg.h"
#include "common/llm/sl_llm.h"
#include "common/policy/sl_policy.h"

#define SL_JUDGE_KEEPALIVE_US 2000000   //  default keep-alive interval (visible to the client)
#define SL_JUDGE_LIVENESS_US 200000     //  liveness keep-alives while a call is held
#define SL_JUDGE_DEFAULT_MAX_CALL_BYTES (1u << 20)  //  argument bytes of one call
#define SL_JUDGE_VERSIONS 16            //  policy versions kept for streams that name one

typedef struct _sl_judge_t sl_judge_t;

//  Who is asked about a call.
typedef enum {
    SL_JUDGE_ASK_LLM = 0,               //  an LLM judge (llm_judge): spec, body
    SL_JUDGE_ASK_PERSON                 //  a person (action: ask): person and the call's context
} sl_judge_ask_kind_t;

//  A request to ask about one call. Everything is borrowed for the call
//  but spec and person, which stay valid until the ask is answered or
//  cancelled (the judge keeps its policy alive until then).
typedef struct {
    uint64_t ticket;                    //  names this ask in sl_judge_llm_done / cancel
    int kind;                           //  sl_judge_ask_kind_t
    const char *rule;                   //  id of the rule asking
    const sl_llm_spec_t *spec;          //  LLM: which judge, how
    sl_str_t body;                      //  LLM: HTTP request body, JSON
    const uint8_t *sid;                 //  the stream, SL_SID_SIZE bytes
    int32_t index;                      //  the call's block index
    bool shadow;                        //  LLM: a rule in shadow mode asks; nothing waits for the
                                        //  answer (an ask in shadow mode asks no person)
    //  PERSON: what to ask, about what, for whom
    const sl_ask_spec_t *person;        //  the rule's settings
    const char *digest;                 //  what a decision is bound to (sl_ask_digest)
    sl_str_t message;                   //  what approvers read
    sl_str_t tool, arguments;
    sl_str_t key_id, team, user;        //  whose call (the stream's START)
    sl_str_t model, last_user;
    const char *policy;                 //  the policy version the call runs under
    sl_str_t policy_name;               //  its file (absent: the default)
} sl_judge_ask_t;

//  Start an ask. 0 when taken: its outcome must come back through
//  sl_judge_llm_done exactly once, unless it is cancelled. -1 when it could
//  not be started: the check is recorded as an ERROR at once. Must not call
//  into the judge.
typedef int (sl_judge_ask_fn) (void *arg, const sl_judge_ask_t *ask);
//  The outcome of an ask is no longer wanted (its stream is gone): stop it
//  and do not report it. Must not call into the judge.
typedef void (sl_judge_cancel_fn) (void *arg, uint64_t ticket);
//  The current time in microseconds (monotonic).
typedef int64_t (sl_judge_clock_fn) (void *arg);
//  The running policy of the file a stream names (START pn), borrowed, or
//  NULL when the service does not have it. Must not call into the judge.
typedef sl_policy_t *(sl_judge_lookup_fn) (void *arg, sl_str_t name);

//  Takes its own reference to policy.
sl_judge_t *sl_judge_new (sl_policy_t *policy);
//  Asks still in flight are forgotten (not cancelled): the service discards
//  its own requests.
void sl_judge_destroy (sl_judge_t **self_p);
//  Policy for streams that start from now on (takes its own reference).
void sl_judge_set_policy (sl_judge_t *self, sl_policy_t *policy);
//  The policy new streams get (borrowed).
sl_policy_t *sl_judge_policy (sl_judge_t *self);
//  How the policy of a stream that names its file (pn) is found. Without
//  a lookup, every such stream fails closed.
void sl_judge_set_lookup (sl_judge_t *self, sl_judge_lookup_fn *lookup, void *arg);
//  Keep a version of a named file's policy, for streams whose request was
//  judged under it (pol) after the file was loaded again (takes its own
//  reference).
void sl_judge_keep (sl_judge_t *self, sl_policy_t *policy);
void sl_judge_set_llm (sl_judge_t *self, sl_judge_ask_fn *ask, sl_judge_cancel_fn *cancel, void *arg);
void sl_judge_set_clock (sl_judge_t *self, sl_judge_clock_fn *clock, void *arg);
//  Keep-alive interval in µs; 0 disables the client-visible keep-alives
//  (liveness keep-alives, SL_JUDGE_LIVENESS_US, always run with a clock).
void sl_judge_set_keepalive (sl_judge_t *self, int64_t interval_us);
//  Argument bytes one call may have and still be released; 0 keeps the
//  default (SL_JUDGE_DEFAULT_MAX_CALL_BYTES).
void sl_judge_set_max_call_bytes (sl_judge_t *self, size_t bytes);

void sl_judge_feed (sl_judge_t *self, const sl_msg_t *msg, sl_emit_fn *emit, void *arg);
//  Report the outcome of an ask (result is read, not taken). Outcomes of
//  unknown or cancelled tickets are ignored.
void sl_judge_llm_done (sl_judge_t *self, uint64_t ticket, const sl_llm_result_t *result,
                        sl_emit_fn *emit, void *arg);
//  Emit the keep-alives that are due. Called periodically by the service.
void sl_judge_tick (sl_judge_t *self, sl_emit_fn *emit, void *arg);

//  Streams that named a policy version this judge did not have.
uint64_t sl_judge_skew (sl_judge_t *self);
//  Streams that named a policy file this judge did not have (failed closed).
uint64_t sl_judge_unknown (sl_judge_t *self);
size_t sl_judge_streams (sl_judge_t *self);
//  Asks waiting for their outcome.
size_t sl_judge_pending (sl_judge_t *self);
uint64_t sl_judge_dropped (sl_judge_t *self);

#endif
