/*  sl_keygen_kube.h - the bus's keys as Kubernetes Secrets (sluice-keygen
    --kubernetes NAMESPACE).

    One Secret per process role, named sluice-keys-<role>: that role's
    secret certificate (<role>.key_secret) and every public certificate of
    the key directory (<name>.key: the roles' and the taps'), the files
    sl_keys.h reads. A pod mounts its role's Secret as its --keys directory
    (deploy/kubernetes/base), so it holds its own secret key and no other.
    The audit's also holds its signing key (audit.sign_secret and
    audit.sign, sl_signkey.h) when the directory has one: its chain's
    checkpoints and seals are signed with it. The text holds secret keys:
    it is applied, never committed.
*/
#ifndef SL_KEYGEN_KUBE_H
#define SL_KEYGEN_KUBE_H

#include <stdbool.h>

#include "common/base/sl_buf.h"

#define SL_KEYGEN_SECRET_PREFIX "sluice-keys-"   //  + the role: the Secret's name

//  A namespace Kubernetes accepts: an RFC 1123 label (1 to 63 of a-z 0-9 -,
//  starting and ending with a letter or a digit).
bool sl_keygen_kube_namespace_valid (const char *name);
//  Append the Secret manifests (YAML, one document per role) of the keys in
//  dir to out, for namespace. 0 ok, -1 with *error (the caller's to free):
//  an invalid namespace, a role's secret key missing or damaged, a file
//  that cannot be read. The keys are not made here: sl_keygen_ensure first.
int sl_keygen_kube_secrets (const char *dir, const char *namespace, sl_buf_t *out, char **error);

#endif
