/*  sl_models.c - the model lists of GET /v1/models (see sl_models.h). */
#include "sl_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../sl_alloc.h"
#include "../sl_json.h"
#include "../sl_routes.h"
#include "sl_render.h"

//  Does a provider of this dialect serve the clients of the list's
//  dialect? Its own, and a dialect whose clients read the same list.
static bool
s_serves (const sl_dialect_t *list, int dialect)
{
    const sl_dialect_t *d = sl_dialect_get (dialect);
    return d && (d == list || d->model_list == list->model_list);
}

//  A plain model name, not a glob.
static bool
s_plain (const char *model)
{
    return *model && !strpbrk (model, "*?[\\");
}

//  Was this route's model listed by an earlier route of the list?
static bool
s_listed_before (sl_routes_t *routes, const sl_dialect_t *list, size_t index)
{
    const char *model = sl_routes_route (routes, index)->model;
    for (size_t i = 0; i < index; i++) {
        const sl_route_t *r = sl_routes_route (routes, i);
        const sl_provider_t *p = sl_routes_find (routes, sl_str (r->provider));
        if (p && s_serves (list, p->dialect) && strcmp (r->model, model) == 0)
            return true;
    }
    return false;
}

static void
s_list (sl_routes_t *routes, const sl_dialect_t *list, sl_buf_t *out)
{
    size_t count = 0, n = sl_routes_route_count (routes);
    sl_model_entry_t *entries = sl_xcalloc (n ? n : 1, sizeof *entries);
    for (size_t i = 0; i < n; i++) {
        const sl_route_t *r = sl_routes_route (routes, i);
        const sl_provider_t *p = sl_routes_find (routes, sl_str (r->provider));
        if (!p || !s_serves (list, p->dialect) || !s_plain (r->model) || s_listed_before (routes, list, i))
            continue;
        entries [count++] = (sl_model_entry_t) { r->model, p->name };
    }
    list->model_list (entries, count, out);
    free (entries);
}

//  One model, when a provider of the list's dialects would serve it.
static int
s_get (sl_routes_t *routes, const sl_dialect_t *list, const char *id, sl_buf_t *out)
{
    const sl_provider_t *p = sl_routes_match (routes, sl_str (id), list->id);
    for (size_t i = 0; !p && i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        if (d != list && d->model_list == list->model_list)
            p = sl_routes_match (routes, sl_str (id), d->id);
    }
    if (!p || !*id) {
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
sl_models_answer (sl_routes_t *routes, const char *path, sl_header_fn *header, void *arg,
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
