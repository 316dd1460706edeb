/*  sl_embedded.c - looking files up among those built in (see sl_embedded.h). */
#include "services/audit/store/sl_embedded.h"

#include <string.h>

const sl_embedded_t *
sl_embedded_find (const char *name)
{
    for (const sl_embedded_t *f = sl_embedded_files; name && f->name; f++)
        if (strcmp (f->name, name) == 0)
            return f;
    return NULL;
}
