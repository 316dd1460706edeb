/*  sl_mock_script.h - the scripted responses of the mock upstream.

    A pure library: given the dialect a request was made in (its path), the
    model it names (which picks the scenario) and the request body, build
    the exact bytes the mock will send, as a list of SSE events in that
    dialect's real wire format (its provider module's renderer,
    sl_mock_provider.h), plus how the answer ends. Ids and time stamps are
    derived from the request body, so the same request always gets the
    same bytes.

    Scenarios, in every dialect:
      mock-text    a few sentences, a word or two per event
      mock-tools   a short text, then get_weather {"city":"Paris"} and
                   run_shell {"command":"rm -rf /"}, arguments in fragments
                   (Gemini sends whole calls, as Gemini does)
      mock-error   two text events, then the provider's error event
      mock-bench   `chunks` text events, then two tool calls (load tests;
                   the count is the request's max-tokens field, which
                   passes through any proxy unchanged; default 1000)
      mock-burst   like mock-bench, sent as fast as the client reads whatever
                   the mock's delay (a long stream beside paced ones)
      mock-paced   like mock-bench, one event per millisecond whatever the
                   mock's delay, each text event "t<send time> ": the
                   server stamps it with the monotonic clock in µs as it
                   writes it, so a client on the same machine measures the
                   latency of every chunk (sluice-bench)
      mock-paced-<ms>  the same, one event every <ms> milliseconds (1 to
                   SL_MOCK_PACED_MAX_MS): mock-paced-100 is a stream of 10
                   chunks a second, the pace of an agent's model
    Misbehaviour on request (the model name is the only thing that passes
    through a proxy unchanged):
      mock-stall   three events, then silence with the connection open
      mock-hang    no answer at all, not even a status line
      mock-drop    two events and half of a third, then the connection closes
      mock-garbage one event, then an event whose data is not JSON
      mock-429     429 with Retry-After: 1 and the provider's error body
      mock-429-<s> the same with Retry-After: <s> (0 to 86400)
      mock-529     529 (the provider's overloaded error) without Retry-After
      mock-500     500 with the provider's error body
      mock-fail-first  the provider's mid-stream failure as its first event
                   (Bedrock: a modelStreamErrorException frame)
      mock-flaky   every other request with the same body answers 503
                   (Retry-After: 0); the others get mock-text
      mock-bad-utf8 text and a tool call whose id, name, arguments and
                   text hold bytes that are not UTF-8 and \u escapes of
                   lone surrogates (written byte for byte, unrepaired)
    Tool calls that do not end cleanly (the judge must fail closed): a short
    text, then run_shell {"command":"rm -rf /"} with its arguments whole,
    then
      mock-danger-length  a length finish (max tokens)
      mock-danger-error   the provider's error event
      mock-danger-eof     nothing: the body ends, short of the provider's end
      mock-danger-huge    the call has one more member, "note", of max-tokens
                          KiB (default SL_MOCK_HUGE_KIB: more than a stream
                          may carry), streamed in 64 KiB pieces (Gemini:
                          streamed function call arguments), then a normal
                          finish
    Any other model: 404 in the provider's error format. (The mock-agent-*
    scenarios, for coding agents, are built from steps by sl_mock_agent.h;
    sl_mock_request_answer picks between the two.)

    sl_mock_script_playback turns a recorded stream file into a script:
    .sse files are sent verbatim (cut into events at blank lines, so pacing
    works), .chunks.jsonl files one "data:" event per line, .json files
    (a JSON array of chunks) one "data:" event per element.
*/
#ifndef SL_MOCK_SCRIPT_H
#define SL_MOCK_SCRIPT_H

#include <stddef.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"
#include "proto/sl_msg.h"

//  How an answer ends after its last event.
typedef enum {
    SL_MOCK_END_CLOSE = 0,              //  end of body, connection kept for reuse
    SL_MOCK_END_STALL,                  //  send nothing more, keep the connection open
    SL_MOCK_END_DROP                    //  close the connection without ending the body
} sl_mock_end_t;

typedef struct {
    int status;                         //  HTTP status; 0: never answer at all
    sl_buf_t *events;                   //  SSE events (or pieces of the body)
    size_t count;
    sl_buf_t error_body;                //  JSON body when status is not 200
    sl_mock_end_t end;
    const char *content_type;           //  of a 200 answer (static text): the provider's
    char retry_after [16];              //  Retry-After header value, "" for none
    long pace_ms;                       //  time between events, 0: the mock's delay
    bool burst;                         //  no delay at all, whatever the mock's
    bool stamped;                       //  text events hold SL_MOCK_STAMP to fill in at send
} sl_mock_script_t;

//  The placeholder a stamped event carries: 16 digits, replaced by the
//  send time in µs (zero-padded) as the event is written.
#define SL_MOCK_STAMP "t0000000000000000 "
#define SL_MOCK_PACED_MS 1
#define SL_MOCK_PACED_MAX_MS 60000     //  slowest pace of mock-paced-<ms>

//  Write the current stamp into every placeholder of a stamped event.
void sl_mock_script_stamp (sl_buf_t *event, int64_t now_us);

#define SL_MOCK_BENCH_CHUNKS 1000       //  default text chunks of mock-bench
#define SL_MOCK_BENCH_MAX 10000000      //  most text chunks mock-bench sends
#define SL_MOCK_HUGE_KIB (17 * 1024)    //  default size of mock-danger-huge's note, KiB
#define SL_MOCK_HUGE_MAX_KIB (64 * 1024) //  most KiB it sends

//  Build the script for model in dialect (SL_DIALECT_*). chunks: text
//  chunks for mock-bench, KiB for mock-danger-huge (0 for the default); attempt: how many requests
//  with this body came before (mock-flaky). 0 ok, -1 for an unknown dialect.
int sl_mock_script_build (int dialect, sl_str_t model, sl_str_t request_body, long chunks,
                          unsigned attempt, sl_mock_script_t *out);
//  Build a script that plays a recorded stream back (name picks the
//  format). 0 ok, -1 for a .json file that is not a JSON array.
int sl_mock_script_playback (sl_str_t name, sl_str_t file, sl_mock_script_t *out);
//  A scenario given as steps (the coding-agent scenarios of sl_mock_agent.h),
//  rendered in the dialect as the built-in ones are.
typedef enum {
    SL_MOCK_STEP_TEXT = 1,              //  text: a piece of text
    SL_MOCK_STEP_CALL,                  //  a tool call: id, name, text = its arguments (JSON)
    SL_MOCK_STEP_FINISH,                //  text: "stop", "tool_calls" or "length"
    SL_MOCK_STEP_FAIL                   //  a failure mid-stream, as the provider's API sends one
} sl_mock_step_kind_t;

#define SL_MOCK_STEP_ARGS_MAX 1024      //  longest arguments of a step

typedef struct {
    int kind;                           //  sl_mock_step_kind_t
    const char *text;
    const char *id;
    const char *name;
} sl_mock_step_t;

//  Build the script of count steps for model in dialect. 0 ok, -1 for an
//  unknown dialect.
int sl_mock_script_steps (int dialect, sl_str_t model, sl_str_t request_body, const sl_mock_step_t *steps,
                          size_t count, sl_mock_script_t *out);
//  A 404 in the dialect's error format, for requests the mock cannot serve.
//  Like sl_mock_script_build, these write *out whole (it is not read: it
//  may be uninitialised); sl_mock_script_clear frees it.
void sl_mock_script_not_found (int dialect, const char *message, sl_mock_script_t *out);
//  A 400 in the dialect's error format, for requests its API would refuse
//  (sl_mock_provider_check).
void sl_mock_script_bad_request (int dialect, const char *message, sl_mock_script_t *out);
//  A 401 in the provider's shape: a request without the credential it takes.
void sl_mock_script_unauthorized (int dialect, const char *message, sl_mock_script_t *out);
void sl_mock_script_clear (sl_mock_script_t *self);
//  The scenario names, NULL-terminated.
extern const char *sl_mock_scenarios [];

#endif
