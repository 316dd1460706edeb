/*  sl_policyfile.c - a policy file, loaded and reloaded (see sl_policyfile.h). */
#include "common/policy/sl_policyfile.h"

#include <stdlib.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_filestamp.h"

struct _sl_policyfile_t {
    char *path;                         //  NULL: no file
    sl_policy_t *policy;                //  NULL only while a file opened has not loaded
    sl_filestamp_t seen;                //  the file when last read
    char **includes;                    //  the files the running policy includes
    sl_filestamp_t *stamps;             //  each when last read
    int include_count;
};

static void
s_includes_free (sl_policyfile_t *self)
{
    for (int i = 0; i < self->include_count; i++)
        free (self->includes [i]);
    free (self->includes);
    free (self->stamps);
    self->includes = NULL;
    self->stamps = NULL;
    self->include_count = 0;
}

//  Read the file; remember it even when it is bad, so that polling waits
//  for the next change instead of reporting the same error every time.
//  The files a loaded policy includes are watched from then on (a new
//  base is a new version of every policy that includes it); when the
//  file is bad, those of the running policy stay watched.
static sl_policy_t *
s_load (sl_policyfile_t *self, char **error)
{
    sl_filestamp_take (self->path, &self->seen);
    sl_policy_t *policy = sl_policy_load (self->path, error);
    if (policy) {
        s_includes_free (self);
        int n = sl_policy_file_count (policy) - 1;
        if (n > 0) {
            self->includes = sl_xcalloc ((size_t) n, sizeof (char *));
            self->stamps = sl_xcalloc ((size_t) n, sizeof (sl_filestamp_t));
            for (int i = 0; i < n; i++)
                self->includes [i] = sl_xstrdup (sl_policy_file (policy, i + 1));
            self->include_count = n;
        }
    }
    for (int i = 0; i < self->include_count; i++)
        sl_filestamp_take (self->includes [i], &self->stamps [i]);
    return policy;
}

sl_policyfile_t *
sl_policyfile_open (const char *path)
{
    sl_policyfile_t *self = sl_xcalloc (1, sizeof *self);
    if (path && *path)
        self->path = sl_xstrdup (path);
    else
        self->policy = sl_policy_allow_all ();
    return self;
}

sl_policyfile_t *
sl_policyfile_new (const char *path, char **error)
{
    *error = NULL;
    sl_policyfile_t *self = sl_policyfile_open (path);
    if (self->path && sl_policyfile_reload (self, error))
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
    s_includes_free (self);
    free (self->path);
    free (self);
    *self_p = NULL;
}

sl_policy_t *sl_policyfile_policy (sl_policyfile_t *self) { return self->policy; }
bool sl_policyfile_has_file (sl_policyfile_t *self) { return self->path != NULL; }
const char *sl_policyfile_path (sl_policyfile_t *self) { return self->path; }

bool
sl_policyfile_changed (sl_policyfile_t *self)
{
    if (!self->path)
        return false;
    if (sl_filestamp_changed (self->path, &self->seen))
        return true;
    for (int i = 0; i < self->include_count; i++)
        if (sl_filestamp_changed (self->includes [i], &self->stamps [i]))
            return true;
    return false;
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
