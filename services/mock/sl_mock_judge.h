/*  sl_mock_judge.h - the mock upstream playing an LLM judge.

    The judge service asks its LLM judges with a whole (non-streaming)
    request of a dialect that asks (OpenAI chat completions, Anthropic
    messages); a policy pointed at the mock gets scripted judges, picked by
    the request's model:

      judge-allow      {"probability": 0.02, ...}: the call may run
      judge-block      {"probability": 0.97, ...}: the call must not run
      judge-slow       like judge-allow, after 3 s
      judge-garbage    content that is not the expected JSON
      judge-error      HTTP 500

    Any of them takes a delay suffix in milliseconds: judge-block-250
    answers after 250 ms, judge-slow-1500 after 1.5 s. The answer is in
    the format of the provider whose path was asked (a provider module
    with a whole answer, sl_mock_provider.h: .../chat/completions,
    .../messages), the OpenAI one otherwise.

    The core (sl_mock_judge_answer) is pure: path + request body in, status,
    body and delay out. The small server part below it answers a request
    after its delay from the mock's reactor, so the mock's request handler
    only needs two one-line hooks.
*/
#ifndef SL_MOCK_JUDGE_H
#define SL_MOCK_JUDGE_H

#include <czmq.h>
#include <stdbool.h>

#include "common/base/sl_buf.h"
#include "common/http/sl_httpd.h"
#include "common/base/sl_str.h"

#define SL_MOCK_JUDGE_SLOW_MS 3000      //  delay of judge-slow without a suffix
#define SL_MOCK_JUDGE_MAX_DELAY_MS 600000

typedef struct {
    int status;                         //  HTTP status
    sl_buf_t body;                      //  JSON
    long delay_ms;                      //  wait this long before answering
    const char *content_type;           //  static; NULL: application/json
    const char *cache_control;          //  static; NULL: no Cache-Control header
} sl_mock_judge_reply_t;

//  True when a request is for a judge scenario: the path is one of a
//  provider with a whole answer and the body's model starts with "judge-".
bool sl_mock_judge_wants (const char *path, sl_str_t body);
//  The reply to a judge request (an unknown judge-* model gets a 404).
void sl_mock_judge_answer (const char *path, sl_str_t body, sl_mock_judge_reply_t *out);
void sl_mock_judge_reply_clear (sl_mock_judge_reply_t *self);
//  Split a scenario name "<kind>[-<ms>]" (judge-block-250 without its
//  prefix, a decision service's deny-250): kind into kind (size bytes),
//  and the delay to answer after: the one named, SL_MOCK_JUDGE_SLOW_MS for
//  slow, else 0, at most SL_MOCK_JUDGE_MAX_DELAY_MS.
long sl_mock_judge_scenario (const char *name, char *kind, size_t size);
//  The scenario names, NULL-terminated.
extern const char *sl_mock_judge_scenarios [];

//  --------------------------------------------------------------------------
//  Serving: answers judge requests after their delay.

typedef struct _sl_mock_judge_t sl_mock_judge_t;

sl_mock_judge_t *sl_mock_judge_new (zloop_t *loop);
//  Drops replies still waiting (their connections close with the server).
void sl_mock_judge_destroy (sl_mock_judge_t **self_p);
//  Call first in the mock's request handler: true when the request was a
//  judge request, or one for the decision service (sl_mock_decide.h), and
//  is taken care of (answered now or after its delay).
bool sl_mock_judge_handle (sl_mock_judge_t *self, sl_httpd_t *httpd, sl_http_req_t *req);
//  Call first in the mock's closed handler: forgets a reply still waiting
//  for a client that went away.
void sl_mock_judge_closed (sl_mock_judge_t *self, sl_http_req_t *req);

#endif
