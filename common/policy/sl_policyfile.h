/*  sl_policyfile.h - a policy file, loaded and reloaded.

    The running policy of a process that takes --policy (the judge for
    tool calls, the gateway for requests): loaded at start, and again on
    demand (SIGHUP) or when the file changed (a new inode, size or
    modification time: editors and deploy tools replace files), or one
    of the files it includes changed. A file that does not load is
    reported and the running policy stays. Without a path, the policy
    allows everything. sl_policywatch (common/service)
    gives it the process's SIGHUP, a timer, metrics and logs.
*/
#ifndef SL_POLICYFILE_H
#define SL_POLICYFILE_H

#include <stdbool.h>

#include "common/policy/sl_policy.h"

typedef struct _sl_policyfile_t sl_policyfile_t;

//  Load path ("" or NULL: allow all). NULL when the file does not load,
//  with *error set ("file:line:col: why", caller frees).
sl_policyfile_t *sl_policyfile_new (const char *path, char **error);
//  The file at path, not read yet: no policy until a reload loads it
//  (a file named by a keys file, which must not stop the process when it
//  does not load; "" or NULL: allow all, as sl_policyfile_new).
sl_policyfile_t *sl_policyfile_open (const char *path);
void sl_policyfile_destroy (sl_policyfile_t **self_p);
//  The running policy (borrowed: take a reference to keep it); NULL for
//  a file opened that has not loaded yet.
sl_policy_t *sl_policyfile_policy (sl_policyfile_t *self);
//  The path (borrowed), NULL without a file.
const char *sl_policyfile_path (sl_policyfile_t *self);
//  True when there is a file (reloads mean something).
bool sl_policyfile_has_file (sl_policyfile_t *self);
//  Has the file, or one it includes, changed since it was last read
//  (loaded or not)?
bool sl_policyfile_changed (sl_policyfile_t *self);
//  Read the file again: 0 when the new policy runs, -1 when it did not
//  load (*error set; the running policy stays).
int sl_policyfile_reload (sl_policyfile_t *self, char **error);

#endif
