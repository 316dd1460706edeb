/*  sl_secret.c - copying, wiping and reading secrets (sl_secret.h).

    Tests: tests/unit/common/cloud/test_sl_awscreds.c and
    test_sl_gcptoken.c (every kind of secret read, held and freed).
*/
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/cloud/sl_secret.h"

char *
sl_secret_dup (const char *s)
{
    return s && *s ? sl_xstrdup (s) : NULL;
}

void
sl_secret_free (char **s)
{
    if (*s) {
        sodium_memzero (*s, strlen (*s));
        free (*s);
        *s = NULL;
    }
}

const char *
sl_secret_env (const char *name)
{
    const char *v = getenv (name);
    return v && *v ? v : NULL;
}
