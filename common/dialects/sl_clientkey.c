/*  sl_clientkey.c - client keys (see sl_clientkey.h). */
#include "common/dialects/sl_clientkey.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_alloc.h"

struct _sl_clientkeys_t {
    char **keys;
    size_t count;
};

sl_clientkeys_t *
sl_clientkeys_new (const char *list, size_t max)
{
    if (!list || !*list)
        return NULL;
    sl_clientkeys_t *self = sl_xcalloc (1, sizeof *self);
    self->keys = sl_xcalloc (max ? max : 1, sizeof (char *));
    for (const char *p = list; *p && self->count < max;) {
        size_t n = strcspn (p, ",");
        size_t skip = 0;
        while (skip < n && p [skip] == ' ')
            skip++;
        size_t len = n - skip;
        while (len && p [skip + len - 1] == ' ')
            len--;
        if (len)
            self->keys [self->count++] = sl_xstrndup (p + skip, len);
        p += n + (p [n] == ',');
    }
    if (self->count == 0)
        sl_clientkeys_destroy (&self);
    return self;
}

void
sl_clientkeys_destroy (sl_clientkeys_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_clientkeys_t *self = *self_p;
    for (size_t i = 0; i < self->count; i++)
        free (self->keys [i]);
    free (self->keys);
    free (self);
    *self_p = NULL;
}

size_t
sl_clientkeys_count (sl_clientkeys_t *self)
{
    return self ? self->count : 0;
}

bool
sl_clientkey_equal (const char *a, const char *b)
{
    size_t na = strlen (a), nb = strlen (b);
    unsigned char diff = (unsigned char) (na != nb);
    for (size_t i = 0; i < nb; i++)
        diff |= (unsigned char) (a [i < na ? i : 0] ^ b [i]);
    return diff == 0 && na == nb;
}

bool
sl_clientkeys_accept (sl_clientkeys_t *self, const char *key)
{
    bool ok = false;
    for (size_t i = 0; self && key && i < self->count; i++)
        ok |= sl_clientkey_equal (key, self->keys [i]);
    return ok;
}

const char *
sl_clientkey_of (sl_header_fn *header, sl_header_fn *query, void *arg)
{
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        const char *v = header (arg, d->credential);
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
