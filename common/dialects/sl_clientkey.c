/*  sl_clientkey.c - client keys (see sl_clientkey.h). */
#include "common/dialects/sl_clientkey.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_alloc.h"

const char *
sl_clientkey_of (sl_header_fn *header, sl_header_fn *query, void *arg)
{
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        //  Only the credentials clients send sluice: not those sluice
        //  sends a cloud (Azure's api-key).
        const char *v = sl_dialect_is_client (d) ? header (arg, d->credential) : NULL;
        if (!v)
            continue;
        size_t n = strlen (d->scheme);
        return n && strncasecmp (v, d->scheme, n) == 0 ? v + n : v;
    }
    for (size_t i = 0; query && i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        const char *v = d->query_key ? query (arg, d->query_key) : NULL;
        if (v)
            return v;
    }
    return NULL;
}

void
sl_clientkey_line (const sl_dialect_t *d, sl_header_fn *header, sl_header_fn *query, void *arg, sl_buf_t *out)
{
    const char *v = header (arg, d->credential);
    if (v) {
        sl_buf_printf (out, "%s: %s", d->credential, v);
        return;
    }
    if (d->query_key && query && (v = query (arg, d->query_key))) {
        sl_buf_printf (out, "%s: %s%s", d->credential, d->scheme, v);
        return;
    }
    if ((v = header (arg, "Authorization")))
        sl_buf_printf (out, "Authorization: %s", v);
}
