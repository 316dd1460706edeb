/*  sl_mock_script.h - the scripted responses of the mock upstream.

    A pure library: given the model a request names (which picks the
    scenario) and the request body, build the exact bytes the mock will
    send, as a list of SSE events. Ids and timestamps are derived from the
    request body, so the same request always gets the same bytes.

    Scenarios (OpenAI Chat Completions format):
      mock-text    a few sentences, a word or two per chunk
      mock-tools   a short text, then get_weather {"city":"Paris"} and
                   run_shell {"command":"rm -rf /"}, arguments in fragments
      mock-error   two text chunks, then an error event mid-stream
      mock-bench   `chunks` text chunks, then two tool calls with their
                   arguments in fragments (load tests; the count is the
                   request's max_tokens, which passes through any proxy
                   unchanged; default 1000)
*/
#ifndef SL_MOCK_SCRIPT_H
#define SL_MOCK_SCRIPT_H

#include <stddef.h>

#include "../../common/sl_buf.h"
#include "../../common/sl_str.h"

typedef struct {
    int status;                         //  HTTP status of the answer
    sl_buf_t *events;                   //  SSE events, each complete ("data: ...\n\n")
    size_t count;
    sl_buf_t error_body;                //  JSON body when status is not 200
} sl_mock_script_t;

#define SL_MOCK_BENCH_CHUNKS 1000       //  default text chunks of mock-bench
#define SL_MOCK_BENCH_MAX 10000000      //  most text chunks mock-bench sends

//  Build the script for model; 0 ok (status 200 or an error answer).
//  chunks: text chunks for mock-bench (0 for the default).
int sl_mock_script_build (sl_str_t model, sl_str_t request_body, long chunks,
                          sl_mock_script_t *out);
void sl_mock_script_clear (sl_mock_script_t *self);
//  The scenario names, NULL-terminated.
extern const char *sl_mock_scenarios [];

#endif
