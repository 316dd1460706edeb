/*  sl_policylint.h - what a policy says that cannot be what its author
    meant.

    A policy that loads can still be wrong. The lint reports, each as
    "file:line: rule ID: what" (the line of the rule, or of the regex):

      shadowed     a call rule that never decides: an earlier rule,
                   tested first, matches every call it matches (the
                   earlier rule tests only tool and model names, and
                   names every tool and model the later one does)
      never        a rule whose conditions contradict each other (two
                   different equals on one pointer, numeric bounds no
                   number meets, exists: false beside a test of the value)
      regex        a pattern whose matching time can grow exponentially
                   with the text (a back-reference; a repeated group that
                   itself repeats: (a+)+, (x*y*)*), or one that does not
                   compile
      approver     an ask that no one in the keys file can decide: its
                   approvers name teams, users or keys the file has none
                   of (and no console)
      tool         a tool name (or glob) no tool of the inventory has: the
                   console's tool inventory (GET /api/tools, saved as
                   JSON: {"tools":[{"name":..},..]}, or a list of names)

    Checks that need a file (approver, tool) run only when it is given.
*/
#ifndef SL_POLICYLINT_H
#define SL_POLICYLINT_H

#include "common/base/sl_buf.h"
#include "common/policy/sl_policy.h"

typedef struct {
    const char *inventory;              //  the tool inventory (JSON), NULL: no tool check
    const char *keys_file;              //  the keys file, NULL: no approver check
} sl_policylint_opts_t;

//  Append one line per finding to out; returns their number, or -1 with
//  *error (caller frees) when a file of opts cannot be read.
int sl_policylint_run (sl_policy_t *policy, const sl_policylint_opts_t *opts, sl_buf_t *out, char **error);

//  Would matching regex take time exponential in the text (above)? Sets
//  *why (static text) when it would.
bool sl_policylint_catastrophic (const char *regex, const char **why);

#endif
