/*  sl_policyset.h - the policies of a process: its default and every
    file the keys file names.

    Each key or team of a keys file may name its own policy file (policy:
    in sl_keyring.h; a stream carries it in "pn", as sl_identity gives
    it). The judge judges each stream, and the gateway each request,
    under that file's policy; a stream that names none runs under the
    default (--policy, SLUICE_POLICY). The set keeps them all loaded:

    - the default is an sl_policywatch of its own (its bad file stops the
      process at start, its metrics are unlabelled, as without a set);
    - each named file is an sl_policywatch_named: reloaded on its own, on
      SIGHUP (one hook for the set) and when it or a file it includes
      changes (one timer for the set); a bad file keeps its old version
      and says why (file:line:col); its reload metrics carry the label
      policy="<path>", a set bounded by the keys file;
    - when the keys file reloads, the owner hands the set the new keyring
      (sl_policyset_keys): files newly named are loaded, files no longer
      named are let go (streams that run under them keep their reference
      to the policy until they end).

    A named file that does not load has no policy: sl_policyset_policy
    answers NULL for it, as for a name the set does not know, and the
    caller fails closed (the judge blocks every call of such a stream,
    the gateway refuses the request). A keys file that names a missing
    file is refused by its loader, so this happens when a named file is
    broken, or in the moment between a keys file's reload and the set's.
*/
#ifndef SL_POLICYSET_H
#define SL_POLICYSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_str.h"
#include "common/identity/sl_keyring.h"
#include "common/policy/sl_policy.h"
#include "common/service/sl_policywatch.h"
#include "common/service/sl_service.h"

#define SL_POLICYSET_MAX 1024           //  named files at once; more are refused (logged)

typedef struct _sl_policyset_t sl_policyset_t;

//  After a reload of one file: name is NULL for the default, else the
//  file's path; loaded and policy as sl_policywatch_fn (policy NULL for a
//  named file that never loaded). Borrowed for the call.
typedef void (sl_policyset_fn) (void *arg, const char *name, sl_policy_t *policy, bool loaded);

//  Load the default (path "" or NULL: allow every call) and watch it and
//  the named files every watch_ms (0: only on SIGHUP). NULL when the
//  default does not load (logged): the process must not start.
sl_policyset_t *sl_policyset_new (sl_service_t *service, const char *path, int64_t watch_ms,
                                  sl_policywatch_describe_fn *describe);
void sl_policyset_destroy (sl_policyset_t **self_p);
//  Hear of every reload, the default's and each named file's, and of a
//  named file loaded for the first time.
void sl_policyset_on_reload (sl_policyset_t *self, sl_policyset_fn *fn, void *arg);

//  The files keyring names (sl_keyring_policies; NULL: none) become the
//  named files: new ones are loaded, gone ones let go.
void sl_policyset_keys (sl_policyset_t *self, const sl_keyring_t *keyring);

//  The policy a stream names in pn (absent, ptr NULL: the default), or
//  NULL when that file is not named here or has not loaded. Borrowed:
//  take a reference to keep it.
sl_policy_t *sl_policyset_policy (sl_policyset_t *self, sl_str_t name);
//  The default's watch (its load time and failures, for reports).
sl_policywatch_t *sl_policyset_default (sl_policyset_t *self);
//  The named files, in the order named: index 0 .. count - 1; the watch
//  of one (borrowed) and its path (*name, borrowed).
size_t sl_policyset_count (sl_policyset_t *self);
sl_policywatch_t *sl_policyset_at (sl_policyset_t *self, size_t index, const char **name);

//  Read every file again (what SIGHUP does), or those that changed (what
//  the timer does).
void sl_policyset_reload (sl_policyset_t *self);
void sl_policyset_check (sl_policyset_t *self);

#endif
