/*  sl_llm.h - the LLM judge: what to ask it and how to read its answer.

    A pure class (no sockets, no curl, no clock). A policy rule with an
    llm_judge section holds an sl_llm_spec_t; the judge library renders the
    prompt and the request body here, the judge service sends it over HTTP
    (libcurl multi) and hands the HTTP status and body back to
    sl_llm_parse_answer, which turns them into an sl_llm_result_t.

    The judge is asked in the wire dialect its rule's api names (openai,
    anthropic: a dialect whose module can be asked a question,
    sl_dialect_asks). That module writes the request (for a whole,
    non-streaming answer: sl_dialect_t.question), names the URL, the
    credential header and the fixed headers, and reads the answer's text
    (answer). The judge is told, in a system message, to
    answer with one JSON object {"probability": p, "explanation": "..."},
    p being the probability that the tool call must not run. Anything else
    (no JSON, no probability, p outside [0, 1], an HTTP error) is an error:
    the check did not run, and the rule's on_error action applies.
*/
#ifndef SL_LLM_H
#define SL_LLM_H

#include <stdbool.h>

#include "common/base/sl_buf.h"
#include "proto/sl_msg.h"

#define SL_LLM_DEFAULT_TIMEOUT_MS 5000
#define SL_LLM_DEFAULT_CONCURRENCY 16
#define SL_LLM_DEFAULT_THRESHOLD 0.5
#define SL_LLM_DEFAULT_MAX_TOKENS 256
#define SL_LLM_MAX_EXPLANATION 500      //  bytes of explanation kept (audit, notices)
#define SL_LLM_MAX_ANSWER (1u << 20)    //  largest HTTP answer read, bytes

//  One LLM judge, as a policy rule configures it. Immutable once parsed;
//  owned by the policy.
typedef struct {
    int dialect;                        //  the API asked (sl_dialect_id_t), one that asks
    char *url;                          //  full endpoint URL
    char *model;
    char *api_key_env;                  //  variable holding the API key, NULL: none sent
    char *prompt;                       //  template: {tool} {arguments} {last_user} {model}
                                        //  ({result}: a tool result, for request rules)
    const char *system;                 //  the system message (static text); NULL: the one
                                        //  about tool calls (sl_llm_system_prompt)
    double threshold;                   //  p >= threshold: the rule's action applies
    int timeout_ms;                     //  from the ask to the answer, queueing included
    sl_action_t on_error;               //  ALLOW or BLOCK when the check did not run
    int concurrency;                    //  requests in flight at most; more wait
    int max_tokens;                     //  answer budget
} sl_llm_spec_t;

//  The outcome of one ask. explanation and error are owned (free with
//  sl_llm_result_clear).
typedef struct {
    sl_check_t check;                   //  RAN, TIMEOUT or ERROR
    double probability;                 //  when check == RAN
    char *explanation;                  //  the judge's words, when it answered; a person's
                                        //  comment (ask)
    char *error;                        //  why the check did not run
    char *approver;                     //  ask: who decided (APPROVED, DENIED, APPROVED_EARLIER)
    char *approval;                     //  ask: the approval's id (for APPROVED_EARLIER: the
                                        //  approval that gave the memory)
} sl_llm_result_t;

#define SL_LLM_DEFAULT_DIALECT SL_DIALECT_OPENAI  //  the API of a rule that names none

//  Set the defaults (everything but url, model and prompt).
void sl_llm_spec_defaults (sl_llm_spec_t *self);
void sl_llm_spec_clear (sl_llm_spec_t *self);
//  The endpoint used when a spec names none: the dialect's URL for model
//  at its vendor's base URL. The caller's string; NULL for a dialect that
//  cannot be asked.
char *sl_llm_default_url (int dialect, const char *model);
//  The prompt used when a spec names none.
extern const char *sl_llm_default_prompt;
//  The system message telling the judge how to answer.
extern const char *sl_llm_system_prompt;
//  The same, for a judge of tool results (request rules): p is the
//  probability that the result is a prompt injection.
extern const char *sl_llm_result_system_prompt;
//  The prompt of a request rule that names none.
extern const char *sl_llm_default_result_prompt;

//  Fill the prompt template: {tool}, {arguments}, {last_user}, {model};
//  {result} is arguments again (a request rule's tool result).
void sl_llm_render_prompt (const char *tmpl, sl_str_t tool, sl_str_t arguments,
                           sl_str_t last_user, sl_str_t model, sl_buf_t *out);
//  Append the JSON request body for spec's API with prompt as the user
//  message (nothing for a dialect that cannot be asked).
void sl_llm_request_body (const sl_llm_spec_t *spec, sl_str_t prompt, sl_buf_t *out);

//  Read an answer of a dialect's API: HTTP status and body as received.
//  Always fills out; returns 0 when the judge answered (check RAN), -1
//  otherwise (check ERROR, out->error says why). Never trusts the body.
int sl_llm_parse_answer (int dialect, int status, sl_str_t body, sl_llm_result_t *out);
//  A result for a check that did not run (TIMEOUT or ERROR) with a reason.
void sl_llm_result_fail (sl_llm_result_t *out, sl_check_t check, const char *why);
void sl_llm_result_clear (sl_llm_result_t *self);

#endif
