/*  llm_client.h - the judge service's HTTP client for LLM judges.

    Takes the asks of the judge library (sl_judge_ask_t), makes each one a
    non-streaming HTTP POST over libcurl multi inside the service's reactor
    (sl_curlm), and reports exactly one outcome per ask that is not
    cancelled: the judge's answer, a timeout, or an error.

    - Timeout: each ask has its rule's timeout_ms, counted from the ask, so
      time spent waiting in the queue counts too: a call is never held
      longer than its rule allows, however busy the judge is.
    - Concurrency: each rule's judge (by rule id) has at most its
      concurrency requests in flight; further asks wait in a FIFO queue.
    - API keys are read from the environment variable the rule names, when
      the request starts; they are sent in a header and never logged.

    A slow judge costs a socket and a timer entry per request, never a
    blocked loop: other streams keep flowing through the same reactor.
*/
#ifndef LLM_CLIENT_H
#define LLM_CLIENT_H

#include <czmq.h>
#include <stdint.h>

#include "../../common/sl_metrics.h"
#include "sl_judge.h"
#include "sl_llm.h"

typedef struct _llm_client_t llm_client_t;

//  The outcome of an ask; result is borrowed for the call.
typedef void (llm_client_done_fn) (void *arg, uint64_t ticket, const sl_llm_result_t *result);
//  End of a reactor turn in which outcomes were reported (flush output).
typedef void (llm_client_after_fn) (void *arg);

llm_client_t *llm_client_new (zloop_t *loop, sl_metrics_t *metrics,
                              llm_client_done_fn *done, llm_client_after_fn *after, void *arg);
//  Stops every request; reports nothing.
void llm_client_destroy (llm_client_t **self_p);
//  Take an ask (the sl_judge_ask_fn contract): 0 taken, -1 refused.
int llm_client_ask (llm_client_t *self, const sl_judge_ask_t *ask);
//  Stop an ask; its outcome is not reported. Unknown tickets are ignored.
void llm_client_cancel (llm_client_t *self, uint64_t ticket);
//  Requests in flight and waiting.
size_t llm_client_inflight (llm_client_t *self);
size_t llm_client_queued (llm_client_t *self);

#endif
