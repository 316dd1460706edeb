/*  sl_llm_cache.h - LLM judge answers by content, so a question asked
    once is not asked again.

    An agent sends its whole conversation with every request: the tool
    results of earlier turns come back again and again. The request
    judge asks an LLM judge about each result once: the answer is kept
    under the SHA-1 of the rule's id and the request body sent to the
    judge (which holds the judge's model, its prompt and the content).
    Only answers are kept (a timeout or an error is asked again). The
    cache is bounded: past its capacity the oldest entry goes.

    A decision service's answers are kept the same way, for as long as
    the service said they may be (sl_llm_cache_put_until); one past its
    time is not found, and gives its place up to the next.
*/
#ifndef SL_LLM_CACHE_H
#define SL_LLM_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/llm/sl_llm.h"

#define SL_LLM_CACHE_DEFAULT 4096       //  entries

typedef struct _sl_llm_cache_t sl_llm_cache_t;

sl_llm_cache_t *sl_llm_cache_new (size_t capacity);
void sl_llm_cache_destroy (sl_llm_cache_t **self_p);
//  The answer kept for this rule and body: true and out filled (owned by
//  the caller: sl_llm_result_clear), or false.
bool sl_llm_cache_get (sl_llm_cache_t *self, const char *rule, sl_str_t body, sl_llm_result_t *out);
//  Keep an answer (check RAN only; others are ignored).
void sl_llm_cache_put (sl_llm_cache_t *self, const char *rule, sl_str_t body, const sl_llm_result_t *result);
//  The same with a time: an answer kept until until_us (0: for good) is
//  found while now_us is before it; the answer is kept whole (a decision
//  service's allow and rewrite too).
bool sl_llm_cache_get_at (sl_llm_cache_t *self, const char *rule, sl_str_t body, int64_t now_us,
                          sl_llm_result_t *out);
void sl_llm_cache_put_until (sl_llm_cache_t *self, const char *rule, sl_str_t body, const sl_llm_result_t *result,
                             int64_t until_us);

#endif
