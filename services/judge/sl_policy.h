/*  sl_policy.h - the tool-call policy: a YAML file of ordered rules.

    A policy is loaded and checked once; every error names the file, line,
    column and reason. It is immutable afterwards and reference counted, so
    a reload can swap in a new policy while streams that started under the
    old one finish under it.

    Format (see README.md, "Policy file"):

        default: allow                  # action when no rule matches
        rules:
          - id: no-rm-rf                # required, unique
            tool: run_shell             # tool name
            args:                       # all must match
              - pointer: /command       # JSON pointer into the arguments
                regex: 'rm\s+-rf'       # POSIX extended regex
            action: block               # allow | block
            message: "Blocked {tool}: {rule}"   # notice replacing the call
*/
#ifndef SL_POLICY_H
#define SL_POLICY_H

#include <stdbool.h>

#include "../../proto/sl_msg.h"

typedef struct _sl_policy_t sl_policy_t;

//  A complete tool call to judge; strings are borrowed.
typedef struct {
    sl_str_t name;                      //  tool name
    sl_str_t arguments;                 //  JSON text of the arguments
    bool args_valid;                    //  arguments are valid JSON
} sl_call_t;

//  The outcome for one call. rule and reason borrow from the policy (valid
//  while the caller holds a reference); message is the caller's to free.
typedef struct {
    sl_action_t action;
    sl_check_t check;
    const char *rule;                   //  rule id, NULL for the default
    const char *reason;                 //  why, for the audit trail
    char *message;                      //  notice text for block, else NULL
} sl_decision_t;

//  Parse a policy. NULL on error, with *error set to "name:line:col: why"
//  (caller frees).
sl_policy_t *sl_policy_parse (const char *text, size_t size, const char *name, char **error);
sl_policy_t *sl_policy_load (const char *path, char **error);
//  The policy allowing everything (no file given).
sl_policy_t *sl_policy_allow_all (void);
sl_policy_t *sl_policy_ref (sl_policy_t *self);
//  Drop a reference; the last one frees the policy. Sets *self_p to NULL.
void sl_policy_unref (sl_policy_t **self_p);
int sl_policy_rule_count (sl_policy_t *self);
const char *sl_policy_name (sl_policy_t *self);

void sl_policy_decide (sl_policy_t *self, const sl_call_t *call, sl_decision_t *out);
void sl_decision_clear (sl_decision_t *decision);

#endif
