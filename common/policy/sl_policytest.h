/*  sl_policytest.h - a policy's tests: a file of cases, each a tool call
    and the verdict the policy must give it.

    A test file (P.test.yaml beside the policy P.yaml) lists cases; each
    names a call (tool, arguments, and what of its request a rule may
    test: identity, model, last user message, history, tool definitions,
    headers, taint, how it ended) and the verdict expected (action, rule,
    and for a rewrite the arguments). The smallest file:

        cases:
          - name: rm -rf is blocked
            call: {tool: run_shell, arguments: {command: "rm -rf /"}}
            expect: {action: block, rule: no-rm-rf}

    A case may test a part of a request instead (part: {kind, text,
    tool, ...}: a system prompt, a message's text, a tool result, a tool
    definition), against the request rules, as the gateway judges it:
    the redactions of every matching redact rule (expect action redact,
    rule the list of them, text the part after them), or the action of
    the first other rule that matches (block_result, withhold,
    terminate, an LLM judge's).

    Each case runs through the same policy library as the judge
    (sl_policy_decide, then sl_policy_conclude). What the judge would ask
    over the network is answered by the case's fixtures: llm: (an LLM
    judge's answer), decide: (a decision service's), ask: (a person's). A
    rule that asks a person with no ask: fixture gives the action "ask".

    Loading refuses what it does not know (a field, an action, arguments
    that are not JSON), with "file:line:col: why", so a misspelt
    expectation never passes unnoticed. The format is in docs/policy.md
    ("Testing a policy").
*/
#ifndef SL_POLICYTEST_H
#define SL_POLICYTEST_H

#include <stdbool.h>
#include <stddef.h>

#include "common/base/sl_buf.h"
#include "common/policy/sl_policy.h"

#define SL_POLICYTEST_MAX_FILE (4u << 20)   //  largest test file read, bytes
#define SL_POLICYTEST_MAX_CASES 10000       //  cases in one file

typedef struct _sl_policytest_t sl_policytest_t;

//  Parse a test file's text (name: for errors). NULL with *error
//  ("name:line:col: why", caller frees).
sl_policytest_t *sl_policytest_parse (const char *text, size_t size, const char *name, char **error);
//  Read and parse a file.
sl_policytest_t *sl_policytest_load (const char *path, char **error);
void sl_policytest_destroy (sl_policytest_t **self_p);
size_t sl_policytest_count (sl_policytest_t *self);
//  A case's name and line in the file (borrowed; NULL / 0 out of range).
const char *sl_policytest_name (sl_policytest_t *self, size_t index);
size_t sl_policytest_line (sl_policytest_t *self, size_t index);

//  The outcome of one case.
typedef struct {
    bool pass;
    char *expected;                     //  "block no-rm-rf" (owned)
    char *got;                          //  what the policy decided, the same way (owned)
    char *why;                          //  a mismatch or an error in words, NULL when it passed (owned)
} sl_policytest_result_t;

//  Run case index against policy. 0, -1 for an index out of range.
int sl_policytest_run (sl_policytest_t *self, size_t index, sl_policy_t *policy, sl_policytest_result_t *out);
void sl_policytest_result_clear (sl_policytest_result_t *self);

//  Run every case and append the table (one line per case: file:line,
//  PASS or FAIL, the name, expected, got; the reason under a failure),
//  then a summary line. Returns the number of failed cases.
size_t sl_policytest_report (sl_policytest_t *self, sl_policy_t *policy, const char *file, sl_buf_t *out);

#endif
