/*  sl_policyfile.c - a policy file, loaded and reloaded (see sl_policyfile.h). */
#include "common/policy/sl_policyfile.h"

#include <stdlib.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_filestamp.h"

struct _sl_policyfile_t {
    char *path;                         //  NULL: no file
    sl_policy_t *policy;
    sl_filestamp_t seen;                //  the file when last read
};

//  Read the file; remember it even when it is bad, so that polling waits
//  for the next change instead of reporting the same error every time.
static sl_policy_t *
s_load (sl_policyfile_t *self, char **error)
{
    sl_filestamp_take (self->path, &self->seen);
    return sl_policy_load (self->path, error);
}

sl_policyfile_t *
sl_policyfile_new (const char *path, char **error)
{
    *error = NULL;
    sl_policyfile_t *self = sl_xcalloc (1, sizeof *self);
    if (!path || !*path) {
        self->policy = sl_policy_allow_all ();
        return self;
    }
    self->path = sl_xstrdup (path);
    self->policy = s_load (self, error);
    if (!self->policy)
        sl_policyfile_destroy (&self);
    return self;
}

void
sl_policyfile_destroy (sl_policyfile_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_policyfile_t *self = *self_p;
    sl_policy_unref (&self->policy);
    free (self->path);
    free (self);
    *self_p = NULL;
}

sl_policy_t *sl_policyfile_policy (sl_policyfile_t *self) { return self->policy; }
bool sl_policyfile_has_file (sl_policyfile_t *self) { return self->path != NULL; }

bool
sl_policyfile_changed (sl_policyfile_t *self)
{
    return self->path && sl_filestamp_changed (self->path, &self->seen);
}

int
sl_policyfile_reload (sl_policyfile_t *self, char **error)
{
    *error = NULL;
    if (!self->path)
        return 0;
    sl_policy_t *policy = s_load (self, error);
    if (!policy)
        return -1;
    sl_policy_unref (&self->policy);
    self->policy = policy;
    return 0;
}
