/*  sl_secret.h - the small things every credential source does with a
    secret: copy it when there is one, wipe it before freeing it, read a
    variable that is set and not empty.

    A pure helper of common/cloud (sl_awscreds, sl_gcptoken): what they
    hold is a key, a token or a password, never logged, never left in
    freed memory.
*/
#ifndef SL_SECRET_H
#define SL_SECRET_H

//  A copy of s (caller frees with sl_secret_free), or NULL when s is NULL
//  or empty.
char *sl_secret_dup (const char *s);
//  Overwrite *s with zeros, free it and set it NULL (NULL: nothing).
void sl_secret_free (char **s);
//  The environment variable's value when it is set and not empty, else
//  NULL (borrowed from the environment).
const char *sl_secret_env (const char *name);

#endif
