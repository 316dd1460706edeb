/*  sl_backtest.h - what a new policy would have decided of calls already
    judged: the difference against the recorded verdicts.

    A backtest is fed recorded tool calls one by one (from the audit
    store, in pages: this class keeps only counts and the first examples,
    so memory stays bounded whatever the number of calls). Each is judged
    again under the new policy with its recorded context (identity, model,
    last user message, tool definitions) and compared with the recorded
    verdict:

      newly_blocked   recorded allow or rewrite, now block, drop or terminate
      newly_allowed   recorded block, drop or terminate, now allow or rewrite
      rewritten       now a rewrite where it was an allow, an allow where
                      it was a rewrite, or a rewrite by another rule
      asked           now a person would be asked (it was not)
      needs_judge     an LLM judge or decision service decides it now and
                      no recorded answer is for the same input

    Recorded answers are reused where the input is identical: the
    recorded verdict was decided by a rule of the same id whose judge
    (kind, URL, model, prompt, system) is the same in the recorded policy
    and the new one, and it ran (the recorded policy's text comes from the
    store: sl_backtest_call_t.recorded_policy). An LLM judge's recorded
    probability is concluded against the new rule's threshold; a decision
    service's recorded allow or deny is taken as it was.

    Counts per category, per rule (the rule deciding now; "(default)" for
    none), per team and per tool; the first examples of each category.
    Pure: no store, no clock.
*/
#ifndef SL_BACKTEST_H
#define SL_BACKTEST_H

#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/policy/sl_policy.h"

#define SL_BACKTEST_DEFAULT_EXAMPLES 10 //  examples kept per category
#define SL_BACKTEST_MAX_EXAMPLES 1000
#define SL_BACKTEST_MAX_KEYS 10000      //  rules, teams, tools counted apart; more: "(other)"

typedef enum {
    SL_BACKTEST_SAME = 0,
    SL_BACKTEST_NEWLY_BLOCKED,
    SL_BACKTEST_NEWLY_ALLOWED,
    SL_BACKTEST_REWRITTEN,
    SL_BACKTEST_ASKED,
    SL_BACKTEST_NEEDS_JUDGE,
    SL_BACKTEST_KINDS
} sl_backtest_kind_t;

//  One recorded call, as the store keeps it. Borrowed.
typedef struct {
    sl_call_t call;                     //  the call and its recorded context
    sl_str_t sid;                       //  its stream
    int64_t at;                         //  when it was judged (Unix ms)
    sl_str_t action;                    //  the recorded verdict: action, rule (absent: the
    sl_str_t rule;                      //  default), check, as the store names them
    sl_str_t check;
    double probability;                 //  an LLM judge's recorded answer, NaN: none
    sl_policy_t *recorded_policy;       //  the policy that decided it, NULL: unknown
} sl_backtest_call_t;

typedef struct _sl_backtest_t sl_backtest_t;

//  A backtest of policy (referenced), keeping examples per category.
sl_backtest_t *sl_backtest_new (sl_policy_t *policy, int examples);
void sl_backtest_destroy (sl_backtest_t **self_p);
//  Judge one recorded call again and count it; returns its category.
sl_backtest_kind_t sl_backtest_add (sl_backtest_t *self, const sl_backtest_call_t *rec);
//  Calls added, and those of one category.
int64_t sl_backtest_calls (sl_backtest_t *self);
int64_t sl_backtest_count (sl_backtest_t *self, sl_backtest_kind_t kind);
//  A category's name ("newly_blocked" ...).
const char *sl_backtest_kind_name (sl_backtest_kind_t kind);
//  The result as one JSON object: {"policy","calls","changed":{newly_blocked,
//  newly_allowed, rewritten, asked},"needs_judge","unchanged","by_rule":{rule:
//  {kind: n}},"by_team":{..},"by_tool":{..},"examples":[{kind,sid,at,tool,
//  team,recorded:{action,rule},now:{action,rule}}]}.
void sl_backtest_json (sl_backtest_t *self, sl_buf_t *out);
//  The same for a person: totals, the tables, the examples.
void sl_backtest_text (sl_backtest_t *self, sl_buf_t *out);

#endif
