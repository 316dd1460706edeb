/*  sl_models.c - the model lists of GET /v1/models (see sl_models.h). */
#include "sl_models.h"

#include <stdio.h>
#include <string.h>

#include "../sl_json.h"
#include "../sl_routes.h"
#include "../../proto/sl_msg.h"
#include "sl_render.h"

//  Models carry no creation time we know; the lists need one.
#define SL_MODELS_CREATED 0
#define SL_MODELS_CREATED_AT "1970-01-01T00:00:00Z"

typedef enum { FORMAT_OPENAI, FORMAT_ANTHROPIC, FORMAT_GEMINI } s_format_t;

static int
s_dialect_of (s_format_t format)
{
    switch (format) {
        case FORMAT_ANTHROPIC: return SL_DIALECT_ANTHROPIC;
        case FORMAT_GEMINI:    return SL_DIALECT_GEMINI;
        default:               return SL_DIALECT_OPENAI;
    }
}

//  Does a provider of this dialect serve clients of the format?
static bool
s_serves (s_format_t format, int dialect)
{
    if (format == FORMAT_OPENAI)
        return dialect == SL_DIALECT_OPENAI || dialect == SL_DIALECT_RESPONSES;
    return dialect == s_dialect_of (format);
}

//  A plain model name, not a glob.
static bool
s_plain (const char *model)
{
    return *model && !strpbrk (model, "*?[\\");
}

static void
s_model (s_format_t format, const char *id, const char *owner, sl_buf_t *out)
{
    switch (format) {
        case FORMAT_ANTHROPIC:
            sl_buf_puts (out, "{\"type\":\"model\",\"id\":");
            sl_json_put_str (out, id, strlen (id));
            sl_buf_puts (out, ",\"display_name\":");
            sl_json_put_str (out, id, strlen (id));
            sl_buf_puts (out, ",\"created_at\":\"" SL_MODELS_CREATED_AT "\"}");
            break;
        case FORMAT_GEMINI:
            sl_buf_puts (out, "{\"name\":\"models/");
            sl_json_put_escaped (out, id, strlen (id));
            sl_buf_puts (out, "\",\"version\":\"\",\"displayName\":");
            sl_json_put_str (out, id, strlen (id));
            sl_buf_puts (out, ",\"description\":\"served by ");
            sl_json_put_escaped (out, owner, strlen (owner));
            sl_buf_puts (out, " through sluice\",\"supportedGenerationMethods\":"
                              "[\"generateContent\",\"streamGenerateContent\"]}");
            break;
        default:
            sl_buf_puts (out, "{\"id\":");
            sl_json_put_str (out, id, strlen (id));
            sl_buf_printf (out, ",\"object\":\"model\",\"created\":%d,\"owned_by\":", SL_MODELS_CREATED);
            sl_json_put_str (out, owner, strlen (owner));
            sl_buf_putc (out, '}');
            break;
    }
}

//  Was this route's model listed by an earlier route of the format?
static bool
s_listed_before (sl_routes_t *routes, s_format_t format, size_t index)
{
    const char *model = sl_routes_route (routes, index)->model;
    for (size_t i = 0; i < index; i++) {
        const sl_route_t *r = sl_routes_route (routes, i);
        const sl_provider_t *p = sl_routes_find (routes, sl_str (r->provider));
        if (p && s_serves (format, p->dialect) && strcmp (r->model, model) == 0)
            return true;
    }
    return false;
}

static void
s_list (sl_routes_t *routes, s_format_t format, sl_buf_t *out)
{
    sl_buf_puts (out, format == FORMAT_GEMINI ? "{\"models\":[" : format == FORMAT_OPENAI
                      ? "{\"object\":\"list\",\"data\":[" : "{\"data\":[");
    const char *first = NULL, *last = NULL;
    for (size_t i = 0; i < sl_routes_route_count (routes); i++) {
        const sl_route_t *r = sl_routes_route (routes, i);
        const sl_provider_t *p = sl_routes_find (routes, sl_str (r->provider));
        if (!p || !s_serves (format, p->dialect) || !s_plain (r->model) || s_listed_before (routes, format, i))
            continue;
        if (first)
            sl_buf_putc (out, ',');
        else
            first = r->model;
        last = r->model;
        s_model (format, r->model, p->name, out);
    }
    sl_buf_putc (out, ']');
    if (format == FORMAT_ANTHROPIC) {
        sl_buf_puts (out, ",\"has_more\":false,\"first_id\":");
        if (first)
            sl_json_put_str (out, first, strlen (first));
        else
            sl_buf_puts (out, "null");
        sl_buf_puts (out, ",\"last_id\":");
        if (last)
            sl_json_put_str (out, last, strlen (last));
        else
            sl_buf_puts (out, "null");
    }
    sl_buf_putc (out, '}');
}

//  One model, when a provider of the format's dialects would serve it.
static int
s_get (sl_routes_t *routes, s_format_t format, const char *id, sl_buf_t *out)
{
    const sl_provider_t *p = sl_routes_match (routes, sl_str (id), s_dialect_of (format));
    if (!p && format == FORMAT_OPENAI)
        p = sl_routes_match (routes, sl_str (id), SL_DIALECT_RESPONSES);
    if (!p || !*id) {
        char message [256];
        snprintf (message, sizeof message, "no provider serves the model '%.200s'", id);
        sl_render_for (s_dialect_of (format))->error_body (404, SL_STR_LIT ("not_found_error"),
                                                           sl_str (message), out);
        return 404;
    }
    s_model (format, id, p->name, out);
    return 200;
}

bool
sl_models_answer (sl_routes_t *routes, const char *path, bool anthropic, int *status, sl_buf_t *out)
{
    s_format_t format;
    const char *rest;
    if (strncmp (path, "/v1beta/models", 14) == 0) {
        format = FORMAT_GEMINI;
        rest = path + 14;
    }
    else
    if (strncmp (path, "/v1/models", 10) == 0) {
        format = anthropic ? FORMAT_ANTHROPIC : FORMAT_OPENAI;
        rest = path + 10;
    }
    else
        return false;
    if (*rest == 0) {
        s_list (routes, format, out);
        *status = 200;
        return true;
    }
    if (*rest != '/' || strchr (rest, ':'))
        return false;                   //  not a model (a method: :generateContent)
    *status = s_get (routes, format, rest + 1, out);
    return true;
}
