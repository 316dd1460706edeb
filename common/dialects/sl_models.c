/*  sl_models.c - the model lists of GET /v1/models (see sl_models.h). */
#include "common/dialects/sl_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/dialects/sl_providers.h"
#include "common/dialects/sl_render.h"

//  A plain model name, not a glob.
static bool
s_plain (const char *model)
{
    return *model && !strpbrk (model, "*?[\\");
}

//  Was this route's model listed by an earlier route?
static bool
s_listed_before (sl_providers_t *routes, size_t index)
{
    const char *model = sl_providers_route (routes, index)->model;
    for (size_t i = 0; i < index; i++)
        if (strcmp (sl_providers_route (routes, i)->model, model) == 0)
            return true;
    return false;
}

//  Every plain model a route names, once, owned by the provider a client
//  of the list's dialect is sent to.
static void
s_list (sl_providers_t *routes, const sl_dialect_t *list, sl_buf_t *out)
{
    size_t count = 0, n = sl_providers_route_count (routes);
    sl_model_entry_t *entries = sl_xcalloc (n ? n : 1, sizeof *entries);
    for (size_t i = 0; i < n; i++) {
        const sl_route_t *r = sl_providers_route (routes, i);
        if (!s_plain (r->model) || s_listed_before (routes, i))
            continue;
        const sl_provider_t *p = sl_providers_pick (routes, sl_str (r->model), list->id);
        if (p)
            entries [count++] = (sl_model_entry_t) { r->model, p->name };
    }
    list->model_list (entries, count, out);
    free (entries);
}

//  One model: any name routing sends somewhere (a route, or a default
//  provider) can be used.
static int
s_get (sl_providers_t *routes, const sl_dialect_t *list, const char *id, sl_buf_t *out)
{
    const sl_provider_t *p = *id ? sl_providers_pick (routes, sl_str (id), list->id) : NULL;
    if (!p) {
        char message [256];
        snprintf (message, sizeof message, "no provider serves the model '%.200s'", id);
        list->renderer->error_body (404, SL_STR_LIT ("not_found_error"), sl_str (message), out);
        return 404;
    }
    sl_model_entry_t entry = { id, p->name };
    list->model (&entry, out);
    return 200;
}

bool
sl_models_answer (sl_providers_t *routes, const char *path, sl_header_fn *header, void *arg,
                  int *status, int *dialect, sl_buf_t *out)
{
    const char *rest = NULL;
    const sl_dialect_t *list = sl_dialect_models (path, header, arg, &rest);
    if (!list)
        return false;
    *dialect = list->id;
    if (!*rest) {
        s_list (routes, list, out);
        *status = 200;
        return true;
    }
    *status = s_get (routes, list, rest, out);
    return true;
}
