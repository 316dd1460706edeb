/*  sl_mock_request.h - what the mock makes of a request: the provider API
    its path calls, the model, the max tokens, and whether that provider
    would refuse it.

    A pure library (no sockets) between sluice-mock's HTTP server and its
    scripts: the service hands it the method, path and body of every
    request that is not a health check or an LLM judge's, and gets either
    a call to serve (sl_mock_request_answer, or a recording played back)
    or the error the provider would answer with, in that provider's
    format. Any bytes are fine: the fuzz target fuzz_mock drives this and
    the script builders.
*/
#ifndef SL_MOCK_REQUEST_H
#define SL_MOCK_REQUEST_H

#include "common/base/sl_str.h"
#include "services/mock/sl_mock_script.h"

#define SL_MOCK_MODEL_MAX 256           //  longest model name served

//  A request the mock serves.
typedef struct {
    int dialect;                        //  the provider API called (its wire dialect)
    char model [SL_MOCK_MODEL_MAX];     //  the scenario: the model without any "@<suffix>"
    long chunks;                        //  the request's max tokens (0: none), for mock-bench and mock-danger-huge
} sl_mock_call_t;

//  The provider API a path calls (its wire dialect), 0 for none.
int sl_mock_request_dialect (const char *path);

//  Read a request. 0: *call is the call to serve. -1: the provider would
//  answer with an error, which *error holds (404 for a path or model the
//  mock does not serve, 400 for a request its API refuses, with why);
//  the caller clears it with sl_mock_script_clear. *error is written
//  whole, never read. betas: the request's anthropic-beta header, or
//  NULL (what a cloud's Claude refuses of it: sl_mock_provider_check_betas).
int sl_mock_request_read (const char *method, const char *path, sl_str_t body, const char *betas,
                          sl_mock_call_t *call, sl_mock_script_t *error);

//  Build the answer to a call: a coding-agent scenario (sl_mock_agent.h)
//  or a built-in one (sl_mock_script.h). attempt: how many requests with
//  this body came before (mock-flaky). 0 ok, -1 for a dialect the mock
//  does not play.
int sl_mock_request_answer (const sl_mock_call_t *call, sl_str_t body, unsigned attempt, sl_mock_script_t *out);

#endif
