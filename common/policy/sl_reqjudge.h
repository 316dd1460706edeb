/*  sl_reqjudge.h - judging a request before it leaves for the upstream.

    A pure library (the gateway's; sluice-replay --request runs it too):
    given the normalized request (sl_req.h) and a policy with request
    rules (sl_policy.h, on: request), judge each part of the request:
    the system prompt, every user and assistant message's text, every
    tool result, every tool definition. What the rules decide is applied
    to the request itself, so the upstream body is made from what is
    left: redactions (every match replaced by its placeholder, in the
    part and where it came from in the client's body), tool results
    replaced by a notice (block_result), tool definitions removed
    (withhold, sl_withhold.h), or the whole request refused (terminate,
    403 in the client's dialect).

    No socket, no HTTP, no clock: an LLM judge of a tool result is an ask
    the caller makes (sl_reqjudge_ask) and reports back (sl_reqjudge_done);
    times come from the caller (verdict latencies: from run to decision).

    Every decision is a verdict (sl_msg_t VERDICT with part set: which
    part of the request it judged, e.g. "messages[3].parts[0]"; id and
    name the tool call a result answers). A redaction's verdict says how
    many matches it replaced, never what they were. A request in which
    no rule decided anything gets one verdict for the whole request
    (part "request", check default).
*/
#ifndef SL_REQJUDGE_H
#define SL_REQJUDGE_H

#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_req.h"
#include "common/policy/sl_policy.h"

typedef struct _sl_reqjudge_t sl_reqjudge_t;

//  An LLM judge to ask about one part. Valid until the judge is destroyed.
typedef struct {
    const char *rule;                   //  the rule asking (its concurrency lane, the cache key)
    const sl_llm_spec_t *spec;
    sl_str_t body;                      //  HTTP request body for the judge
} sl_reqjudge_ask_t;

//  Takes its own reference to policy; req is borrowed, and changed by
//  the policy's decisions: it must outlive the judge. headers: the
//  request's headers as a JSON object (for header rules), borrowed.
sl_reqjudge_t *sl_reqjudge_new (sl_policy_t *policy, sl_req_t *req, sl_str_t headers);
void sl_reqjudge_destroy (sl_reqjudge_t **self_p);
//  Whose request it is: its team (borrowed; absent: the default), for
//  definition conditions (pins are per team). Before sl_reqjudge_run.
void sl_reqjudge_set_team (sl_reqjudge_t *self, sl_str_t team);
//  Judge every part at now_us: rule decisions are taken and applied at
//  once. Returns how many LLM asks are to be made (sl_reqjudge_ask).
size_t sl_reqjudge_run (sl_reqjudge_t *self, int64_t now_us);
const sl_reqjudge_ask_t *sl_reqjudge_ask (sl_reqjudge_t *self, size_t i);
//  The outcome of ask i (an answer, a timeout, an error; cached: the
//  answer came from an earlier ask about the same content). Each ask is
//  done once; a second report is ignored.
void sl_reqjudge_done (sl_reqjudge_t *self, size_t i, const sl_llm_result_t *result, bool cached, int64_t now_us);
//  Asks not done yet.
size_t sl_reqjudge_pending (sl_reqjudge_t *self);
//  Once nothing is pending: the message to refuse the request with, or
//  NULL when it goes upstream.
const char *sl_reqjudge_refusal (sl_reqjudge_t *self);
//  Did a decision change the request (redaction, a blocked result)?
bool sl_reqjudge_changed (sl_reqjudge_t *self);
//  The verdicts so far, in the order they were taken; strings borrowed
//  from the judge, its policy and the request.
size_t sl_reqjudge_verdicts (sl_reqjudge_t *self);
void sl_reqjudge_verdict (sl_reqjudge_t *self, size_t i, sl_msg_t *out);
//  All verdicts encoded for a job (the req's rv field), stream id sid.
void sl_reqjudge_encode (sl_reqjudge_t *self, const uint8_t *sid, sl_buf_t *out);

//  The digests of the request's tool definitions as they came (withheld
//  ones too), {"name": "digest", ...}, for definition conditions on tool
//  calls (START tdig); computed when the policy has pins or uses them.
void sl_reqjudge_digests (sl_reqjudge_t *self, sl_buf_t *out);

//  The tool calls of the request's history, for history conditions
//  (START hist): [{"name":..,"args":{..}}], arguments that are not JSON
//  as "text". At most max_calls calls and about max_bytes bytes: the
//  latest are kept. Nothing is written for a request without calls.
#define SL_REQJUDGE_HISTORY_CALLS 256
#define SL_REQJUDGE_HISTORY_BYTES (256u << 10)
void sl_reqjudge_history (const sl_req_t *req, size_t max_calls, size_t max_bytes, sl_buf_t *out);

#endif
