/*  sl_decide.h - a decision service: the policy rule's `decide` section
    asks an outside service, in the shape of Open Policy Agent's data API,
    whether a tool call may run.

    A pure class (no sockets, no curl, no clock). A rule with a decide
    section holds an sl_llm_spec_t of kind SL_LLM_DECIDE, so it travels
    the LLM judge's path: the judge library builds the request body (the
    policy's sl_policy_decide_input: {"input": {...}}), the judge service
    POSTs it through sl_llm_client (same lanes, concurrency, timeout) and
    reads the answer here:

        {"result": {"allow": true|false, "reason": "...", "rewrite": {...}}}

    allow must be a boolean; reason, when there, a string; rewrite, when
    there and not null, a JSON object (the arguments the call runs with
    instead). Anything else (an HTTP status outside 2xx, a body that is
    not JSON, no result object, allow missing or not a boolean, a reason
    or rewrite of the wrong type) is an error: the check did not run, and
    the rule's on_error applies. An answer may be reused for the same
    question only when the service says so (Cache-Control: max-age=N).
*/
#ifndef SL_DECIDE_H
#define SL_DECIDE_H

#include "common/base/sl_str.h"
#include "common/llm/sl_llm.h"

#define SL_DECIDE_MAX_REASON 500        //  bytes of the service's reason kept
#define SL_DECIDE_MAX_AGE_S 86400       //  longest reuse of an answer, whatever the service says

//  Set the defaults of a decide section (kind DECIDE; timeout, concurrency
//  and on_error as an LLM judge's).
void sl_decide_spec_defaults (sl_llm_spec_t *self);
//  Read a decision service's answer: HTTP status and body as received.
//  Always fills out (max_age_s stays 0: see sl_decide_max_age); returns 0
//  when the service answered (check RAN, allow, explanation = its reason,
//  rewrite), -1 otherwise (check ERROR, out->error says which and why).
int sl_decide_parse_answer (int status, sl_str_t body, sl_llm_result_t *out);
//  Seconds an answer may be reused by its Cache-Control header value
//  (NULL: none): max-age=N (at most SL_DECIDE_MAX_AGE_S); 0 without it,
//  and with no-store, no-cache or a malformed max-age.
int sl_decide_max_age (const char *cache_control);

#endif
