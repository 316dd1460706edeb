/*  sl_teamlabel.c - a team as a metric label (see sl_teamlabel.h). */
#include "common/identity/sl_teamlabel.h"

#include <czmq.h>
#include <stdbool.h>
#include <stdio.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_name.h"

struct _sl_teamlabels_t {
    zhashx_t *seen;
    size_t max;
};

sl_teamlabels_t *
sl_teamlabels_new (size_t max)
{
    sl_teamlabels_t *self = sl_xcalloc (1, sizeof *self);
    self->seen = zhashx_new ();
    self->max = max;
    return self;
}

void
sl_teamlabels_destroy (sl_teamlabels_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    zhashx_destroy (&(*self_p)->seen);
    free (*self_p);
    *self_p = NULL;
}

void
sl_label_safe (const char *text, size_t len, char *out, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; text && i < len && text [i] && n + 1 < size; i++, n++) {
        out [n] = sl_name_char (text [i]) ? text [i] : '_';
    }
    if (size)
        out [n] = 0;
}

void
sl_teamlabels_get (sl_teamlabels_t *self, const char *team, size_t len, char *out, size_t size)
{
    if (!team || !len || !*team) {
        snprintf (out, size, "%s", SL_TEAMLABEL_DEFAULT);
        return;
    }
    sl_label_safe (team, len, out, size);
    if (zhashx_lookup (self->seen, out))
        return;
    if (zhashx_size (self->seen) >= self->max) {
        snprintf (out, size, "%s", SL_TEAMLABEL_OTHER);
        return;
    }
    zhashx_insert (self->seen, out, (void *) 1);
}
