/*  sl_llm_client.h - the HTTP client for LLM judges, shared by the judge
    (tool calls of a response) and the gateway (tool results of a request),
    and for decision services (a rule's decide section, sl_decide.h: the
    spec's kind says which).

    Takes asks (sl_llm_ask_t), makes each one a non-streaming HTTP POST
    over libcurl multi inside the process's reactor (sl_curlm), and
    reports exactly one outcome per ask that is not cancelled: the judge's
    answer, a timeout, or an error.

    - Timeout: each ask has its rule's timeout_ms, counted from the ask, so
      time spent waiting in the queue counts too: nothing is held longer
      than its rule allows, however busy the process is.
    - Concurrency: each rule's judge (by rule id) has at most its
      concurrency requests in flight; further asks wait in a FIFO queue.
    - API keys are read from the environment variable the rule names, when
      the request starts; they are sent in a header and never logged.
    - A decision service's answer is kept for reuse by content (the rule
      and the request body) for as long as its Cache-Control max-age says,
      and never without one; an ask it answers is reported at the next
      sweep (metrics: sluice_decide_*, apart from sluice_llm_judge_*).

    A slow judge costs a socket and a timer entry per request, never a
    blocked loop: other streams keep flowing through the same reactor.
*/
#ifndef SL_LLM_CLIENT_H
#define SL_LLM_CLIENT_H

#include <czmq.h>
#include <stdint.h>

#include "common/base/sl_metrics.h"
#include "common/llm/sl_llm.h"

typedef struct _sl_llm_client_t sl_llm_client_t;

//  One question to an LLM judge. Everything is borrowed for the call.
typedef struct {
    uint64_t ticket;                    //  names this ask in the outcome and in cancel
    const char *rule;                   //  id of the rule asking (its concurrency lane)
    const sl_llm_spec_t *spec;          //  which judge, how
    sl_str_t body;                      //  HTTP request body, JSON
} sl_llm_ask_t;

//  The outcome of an ask; result is borrowed for the call.
typedef void (sl_llm_client_done_fn) (void *arg, uint64_t ticket, const sl_llm_result_t *result);
//  End of a reactor turn in which outcomes were reported (flush output).
typedef void (sl_llm_client_after_fn) (void *arg);

sl_llm_client_t *sl_llm_client_new (zloop_t *loop, sl_metrics_t *metrics,
                                    sl_llm_client_done_fn *done, sl_llm_client_after_fn *after, void *arg);
//  Stops every request; reports nothing.
void sl_llm_client_destroy (sl_llm_client_t **self_p);
//  Take an ask: 0 taken (its outcome comes through done, never from
//  within this call), -1 refused.
int sl_llm_client_ask (sl_llm_client_t *self, const sl_llm_ask_t *ask);
//  Stop an ask; its outcome is not reported. Unknown tickets are ignored.
void sl_llm_client_cancel (sl_llm_client_t *self, uint64_t ticket);

#endif
