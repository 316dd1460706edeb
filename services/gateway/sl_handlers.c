/*  sl_handlers.c - the gateway's HTTP surface as a table (see
    sl_handlers.h). A handful of handlers: a linear walk. */
#include "services/gateway/sl_handlers.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

struct _sl_handlers_t {
    sl_handler_t handlers [SL_HANDLERS_MAX];
    size_t count;
};

sl_handlers_t *
sl_handlers_new (void)
{
    return sl_xcalloc (1, sizeof (sl_handlers_t));
}

void
sl_handlers_destroy (sl_handlers_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free (*self_p);
    *self_p = NULL;
}

int
sl_handlers_add (sl_handlers_t *self, const sl_handler_t *handler)
{
    if (self->count == SL_HANDLERS_MAX || !handler->prefix || !handler->serve)
        return -1;
    self->handlers [self->count++] = *handler;
    return 0;
}

//  Is path the prefix, or under it?
static bool
s_under (const char *path, const char *prefix)
{
    size_t n = strlen (prefix);
    if (strncmp (path, prefix, n) != 0)
        return false;
    return path [n] == '\0' || path [n] == '/' || (n && prefix [n - 1] == '/');
}

sl_handled_t
sl_handlers_serve (sl_handlers_t *self, sl_http_req_t *req, const char *method, const char *path, bool draining,
                   sl_handler_guard_fn *guard, void *guard_arg)
{
    bool guarded = false;
    for (size_t i = 0; i < self->count; i++) {
        const sl_handler_t *h = &self->handlers [i];
        if ((draining && !h->draining) || !s_under (path, h->prefix) || (h->method && strcmp (method, h->method) != 0))
            continue;
        if (!h->open && !guarded) {
            guarded = true;
            if (guard && guard (guard_arg, req, path))
                return SL_HANDLED_GUARD;
        }
        if (h->serve (h->arg, req, method, path))
            return SL_HANDLED;
    }
    if (!guarded && guard && guard (guard_arg, req, path))
        return SL_HANDLED_GUARD;
    return SL_HANDLED_NONE;
}

bool
sl_handlers_closed (sl_handlers_t *self, sl_http_req_t *req)
{
    for (size_t i = 0; i < self->count; i++)
        if (self->handlers [i].on_close && self->handlers [i].on_close (self->handlers [i].arg, req))
            return true;
    return false;
}

bool
sl_handlers_held (sl_handlers_t *self)
{
    for (size_t i = 0; i < self->count; i++)
        if (self->handlers [i].held && self->handlers [i].held (self->handlers [i].arg))
            return true;
    return false;
}
