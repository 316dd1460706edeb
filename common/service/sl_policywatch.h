/*  sl_policywatch.h - the running policy of a process, reloaded on SIGHUP
    and when its file changes.

    The judge (tool calls) and the gateway (requests) both take --policy
    and --watch-ms and keep their policy the same way; this is that one
    way, wired into the service (sl_service.h):

    - the file is loaded at start; a file that does not load stops the
      process (logged "policy_invalid": file:line:col: why);
    - SIGHUP (the service's reload hook) reads it again, and so does a
      timer every watch_ms when the file changed (logged "reload": "policy
      file changed"); a file that changed is read once, loaded or not;
    - a reload that loads is counted in sluice_policy_reloads_total and
      logged "policy_loaded" (the policy's name, the process's own words
      about it); one that does not is counted in
      sluice_policy_reload_failures_total, logged "policy_invalid" with
      file:line:col: why, then "policy_kept": the running policy stays;
    - the process hears of every reload through its reload callback (the
      judge hands a new policy to its library, and reports to monitoring
      either way).

    Without a path every call is allowed (sl_policy_allow_all) and there
    is nothing to watch; SIGHUP still counts a reload.

    A named policy (sl_policywatch_named: a file a keys file names, kept
    in a policy set, sl_policyset.h) is watched the same way, except that
    its owner drives it (one SIGHUP hook and one timer for all of them),
    its metrics carry its path as the label "policy", and a file that
    does not load at start does not stop the process: it has no policy
    until a reload loads it.
*/
#ifndef SL_POLICYWATCH_H
#define SL_POLICYWATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/policy/sl_policy.h"
#include "common/service/sl_service.h"

typedef struct _sl_policywatch_t sl_policywatch_t;

//  What the process says about a policy it loaded: the words after the
//  policy's name in the "policy_loaded" line ("3 rules, ... id=...").
typedef void (sl_policywatch_describe_fn) (sl_policy_t *policy, sl_buf_t *out);
//  After a reload: loaded is true when policy is the new one, false when
//  the file was refused and policy is the one that stays (borrowed: take
//  a reference to keep it; NULL for a named file that never loaded).
typedef void (sl_policywatch_fn) (void *arg, sl_policy_t *policy, bool loaded);

//  Load path ("" or NULL: allow every call), log it, register the reload
//  metrics and the service's reload hook, and when watch_ms > 0 and there
//  is a file, the timer that looks for changes. NULL when the file does
//  not load (logged): the process must not start.
sl_policywatch_t *sl_policywatch_new (sl_service_t *service, const char *path, int64_t watch_ms,
                                      sl_policywatch_describe_fn *describe);
//  A named policy file (path required): loaded now (logged, counted as a
//  failure when it does not load: its policy is then NULL), reloaded only
//  when its owner calls sl_policywatch_reload or sl_policywatch_check.
//  Never NULL.
sl_policywatch_t *sl_policywatch_named (sl_service_t *service, const char *path,
                                        sl_policywatch_describe_fn *describe);
//  Ends the timer and gives the service's reload hook up.
void sl_policywatch_destroy (sl_policywatch_t **self_p);
void sl_policywatch_on_reload (sl_policywatch_t *self, sl_policywatch_fn *fn, void *arg);

//  The running policy (borrowed: take a reference to keep it); NULL for
//  a named file that has not loaded.
sl_policy_t *sl_policywatch_policy (sl_policywatch_t *self);
//  True when there is a file (reloads mean something).
bool sl_policywatch_has_file (sl_policywatch_t *self);
//  When the running policy was loaded, Unix ms.
int64_t sl_policywatch_loaded_ms (sl_policywatch_t *self);
//  Reloads refused since the start.
uint64_t sl_policywatch_failures (sl_policywatch_t *self);
//  Why the last refused reload was refused ("file:line:col: why"), NULL
//  when none was. Borrowed.
const char *sl_policywatch_last_error (sl_policywatch_t *self);

//  Read the file again (what SIGHUP does): 0 when the new policy runs, -1
//  when it did not load and the running one stays.
int sl_policywatch_reload (sl_policywatch_t *self);
//  Read the file again if it changed since it was last read (what the
//  timer does): true when it was read.
bool sl_policywatch_check (sl_policywatch_t *self);

#endif
