/*  sl_mock_provider.c - the registry of the mock's provider modules, and
    the helpers they share (see sl_mock_provider.h).

    The one place that names the modules. They are checked when the mock
    starts (sl_mock_provider_init): a table that lacks a required entry
    stops the mock with the name of what is missing.
*/
#include "services/mock/sl_mock_provider.h"

#include <assert.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/dialects/sl_dialect.h"
#include "proto/sl_msg.h"

//  The modules, in wire id order (services/mock/sl_mock_<dialect>.c).
extern const sl_mock_provider_t sl_mock_openai;
extern const sl_mock_provider_t sl_mock_anthropic;
extern const sl_mock_provider_t sl_mock_responses;
extern const sl_mock_provider_t sl_mock_gemini;
extern const sl_mock_provider_t sl_mock_bedrock;
extern const sl_mock_provider_t sl_mock_bedrock_anthropic;
extern const sl_mock_provider_t sl_mock_vertex;
extern const sl_mock_provider_t sl_mock_vertex_anthropic;
extern const sl_mock_provider_t sl_mock_azure;

static const sl_mock_provider_t *const s_builtin [] = {
    &sl_mock_openai,
    &sl_mock_anthropic,
    &sl_mock_responses,
    &sl_mock_gemini,
    &sl_mock_bedrock,
    &sl_mock_bedrock_anthropic,
    &sl_mock_vertex,
    &sl_mock_vertex_anthropic,
    &sl_mock_azure,
};
//  The mock plays a provider of every wire dialect, and no more: one for
//  every id but those whose dialect module is still to come
//  (sl_dialect_reserved), checked when the mock starts.
_Static_assert (sizeof s_builtin / sizeof s_builtin [0] <= SL_DIALECT_MAX - 1,
                "a mock provider for every wire dialect id, and no more");
#define S_COUNT (sizeof s_builtin / sizeof s_builtin [0])

static pthread_once_t s_once = PTHREAD_ONCE_INIT;
static const char *s_init_why;          //  why a module is incomplete
static int s_init_rc;

#define S_REQUIRE(cond, what) \
    do { if (!(cond)) { *why = what; return -1; } } while (0)

int
sl_mock_provider_check_table (const sl_mock_provider_t *p, const char **why)
{
    const char *ignored;
    if (!why)
        why = &ignored;
    S_REQUIRE (p, "no table");
    S_REQUIRE (p->dialect > 0 && p->dialect < SL_DIALECT_MAX, "dialect out of range");
    S_REQUIRE (p->path && *p->path, "path missing");
    S_REQUIRE (p->max_tokens, "max-tokens fields missing");
    S_REQUIRE (p->check, "request check missing");
    S_REQUIRE (p->result, "result reader missing");
    S_REQUIRE (p->shape.schema && p->shape.turns && p->shape.carries_result, "request shape missing");
    const sl_mock_render_t *r = p->render;
    S_REQUIRE (r, "renderer missing");
    S_REQUIRE (r->begin && r->text && r->tool_start && r->tool_args && r->finish && r->fail, "renderer step missing");
    S_REQUIRE (r->error_body, "error body missing");
    S_REQUIRE (r->rate_limited && r->unavailable && r->failed && r->not_found && r->bad_request, "error word missing");
    return 0;
}

static void
s_init_once (void)
{
    int id = SL_DIALECT_NONE;
    for (size_t i = 0; i < S_COUNT; i++) {
        const char *why = NULL;
        //  The next id that has a module.
        for (id++; id < SL_DIALECT_MAX && sl_dialect_reserved (id); id++)
            ;
        if (sl_mock_provider_check_table (s_builtin [i], &why) == 0 && s_builtin [i]->dialect != id)
            why = "not in wire id order, or a provider of a reserved id";
        if (why) {
            static char text [160];
            snprintf (text, sizeof text, "mock provider %zu: %s", i + 1, why);
            s_init_why = text;
            s_init_rc = -1;
            return;
        }
    }
    for (id++; id < SL_DIALECT_MAX; id++)
        if (!sl_dialect_reserved (id)) {
            s_init_why = "a wire dialect without a mock provider";
            s_init_rc = -1;
            return;
        }
}

int
sl_mock_provider_init (const char **why)
{
    pthread_once (&s_once, s_init_once);
    if (why)
        *why = s_init_why;
    return s_init_rc;
}

const sl_mock_provider_t *
sl_mock_provider_get (int dialect)
{
    for (size_t i = 0; i < S_COUNT; i++)
        if (s_builtin [i]->dialect == dialect)
            return s_builtin [i];
    return NULL;
}

size_t
sl_mock_provider_count (void)
{
    return S_COUNT;
}

const sl_mock_provider_t *
sl_mock_provider_at (size_t index)
{
    return index < S_COUNT ? s_builtin [index] : NULL;
}

static bool
s_ends_with (const char *s, const char *suffix)
{
    size_t n = strlen (s), m = strlen (suffix);
    return n >= m && strcmp (s + n - m, suffix) == 0;
}

#define S_MODELS "/models/"             //  where a path names its model

//  The value of a hex digit, -1 for another character.
static int
s_hex (char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

const sl_mock_provider_t *
sl_mock_provider_of_path (const char *path, char *model, size_t size)
{
    //  Those with a marker first: a cloud's path ends as its vendor's does.
    for (size_t k = 0; k < 2 * S_COUNT; k++) {
        const sl_mock_provider_t *p = s_builtin [k % S_COUNT];
        if ((k < S_COUNT) != (p->marker != NULL) || (p->marker && !strstr (path, p->marker)))
            continue;
        if (!s_ends_with (path, p->path))
            continue;
        if (!p->model_in_path)
            return p;
        const char *prefix = p->model_prefix ? p->model_prefix : S_MODELS;
        const char *models = strstr (path, prefix);
        if (!models)
            continue;
        const char *name = models + strlen (prefix);
        size_t n = strlen (name) - strlen (p->path);
        if (n == 0 || n >= size)
            return NULL;
        //  Percent-decoded (Bedrock's model ids have ':', ARNs '/').
        size_t m = 0;
        for (size_t j = 0; j < n; j++) {
            if (name [j] == '%' && j + 2 < n && s_hex (name [j + 1]) >= 0 && s_hex (name [j + 2]) >= 0) {
                model [m++] = (char) (s_hex (name [j + 1]) * 16 + s_hex (name [j + 2]));
                j += 2;
            }
            else
                model [m++] = name [j];
        }
        model [m] = 0;
        return p;
    }
    return NULL;
}

void
sl_mock_provider_paths (sl_buf_t *out)
{
    sl_buf_puts (out, "POST ");
    for (size_t i = 0; i < S_COUNT; i++) {
        if (i)
            sl_buf_puts (out, i + 1 < S_COUNT ? ", " : " and ");
        const sl_mock_provider_t *p = s_builtin [i];
        const char *marker = p->marker ? p->marker : "";
        size_t n = strlen (marker);
        bool models_end = n >= strlen (S_MODELS) && strcmp (marker + n - strlen (S_MODELS), S_MODELS) == 0;
        sl_buf_puts (out, "...");
        if (p->marker)
            sl_buf_printf (out, "%.*s", (int) (models_end ? n - strlen (S_MODELS) : n), marker);
        if (p->model_in_path)
            sl_buf_printf (out, "%s{model}", p->model_prefix ? p->model_prefix : S_MODELS);
        else
        if (p->marker)
            sl_buf_puts (out, "...");
        sl_buf_puts (out, p->path);
    }
}

//  --------------------------------------------------------------------------
//  Reading requests

int
sl_mock_provider_check (int dialect, sl_str_t body, char *text, size_t size)
{
    sl_mock_why_t why = { text, size };
    const sl_mock_provider_t *p = sl_mock_provider_get (dialect);
    if (!p)
        return sl_mock_refuse (&why, "the mock plays no provider of dialect %d", dialect);
    json_t *root = json_loadb (body.ptr ? body.ptr : "", body.len, 0, NULL);
    if (!json_is_object (root)) {
        json_decref (root);
        return sl_mock_refuse (&why, "the body is not a JSON object");
    }
    int rc = p->check (root, &why);
    json_decref (root);
    return rc;
}

int
sl_mock_provider_check_betas (int dialect, sl_str_t body, const char *betas, char *text, size_t size)
{
    sl_mock_why_t why = { text, size };
    const sl_mock_provider_t *p = sl_mock_provider_get (dialect);
    if (!p || !p->check_betas)
        return 0;
    json_t *root = json_loadb (body.ptr ? body.ptr : "", body.len, 0, NULL);
    if (!json_is_object (root)) {
        json_decref (root);
        return sl_mock_refuse (&why, "the body is not a JSON object");
    }
    int rc = p->check_betas (root, betas, &why);
    json_decref (root);
    return rc;
}

bool
sl_mock_provider_result (int dialect, sl_str_t body, sl_mock_result_t *out)
{
    memset (out, 0, sizeof *out);
    const sl_mock_provider_t *p = sl_mock_provider_get (dialect);
    if (!p)
        return false;
    json_t *root = json_loadb (body.ptr ? body.ptr : "", body.len, 0, NULL);
    bool found = root && p->result (root, out);
    json_decref (root);
    return found;
}

//  --------------------------------------------------------------------------
//  Helpers

int
sl_mock_refuse (sl_mock_why_t *why, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    vsnprintf (why->text, why->size, format, args);
    va_end (args);
    return -1;
}

bool
sl_mock_is (json_t *value, const char *text)
{
    return json_is_string (value) && strcmp (json_string_value (value), text) == 0;
}

const char *
sl_mock_text (json_t *value)
{
    return json_is_string (value) ? json_string_value (value) : "";
}

bool
sl_mock_listed (json_t *list, const char *id)
{
    size_t i;
    json_t *v;
    json_array_foreach (list, i, v)
        if (sl_mock_is (v, id))
            return true;
    return false;
}

void
sl_mock_unlist (json_t *list, const char *id)
{
    for (size_t k = 0; k < json_array_size (list); k++)
        if (sl_mock_is (json_array_get (list, k), id))
            json_array_remove (list, k);
}

void
sl_mock_copy (char *dst, size_t size, const char *src)
{
    snprintf (dst, size, "%s", src ? src : "");
}

sl_buf_t *
sl_mock_events_add (sl_buf_t **events, size_t *count)
{
    *events = sl_xrealloc (*events, (*count + 1) * sizeof (sl_buf_t));
    sl_buf_t *e = &(*events) [(*count)++];
    memset (e, 0, sizeof *e);
    return e;
}

sl_buf_t *
sl_mock_event (sl_mock_out_t *out)
{
    return sl_mock_events_add (out->events, out->count);
}

//  A string as mock-bad-utf8 writes it: byte for byte, with no UTF-8
//  repair, and with a backslash that starts a \u escape kept as it is, so
//  the scenario can carry lone surrogate escapes. Quotes and control
//  characters are escaped as usual.
static void
s_put_verbatim (sl_buf_t *e, sl_str_t s)
{
    sl_buf_putc (e, '"');
    for (size_t i = 0; i < s.len; i++) {
        unsigned char c = (unsigned char) s.ptr [i];
        if (c == '\\' && i + 1 < s.len && s.ptr [i + 1] == 'u')
            sl_buf_putc (e, '\\');
        else
        if (c == '"' || c == '\\') {
            sl_buf_putc (e, '\\');
            sl_buf_putc (e, (char) c);
        }
        else
        if (c < 0x20)
            sl_buf_printf (e, "\\u%04x", c);
        else
            sl_buf_putc (e, (char) c);
    }
    sl_buf_putc (e, '"');
}

void
sl_mock_put_text (sl_mock_out_t *out, sl_buf_t *event, sl_str_t text)
{
    if (out->verbatim)
        s_put_verbatim (event, text);
    else
        sl_json_put_sl (event, text);
}

void
sl_mock_put_model (sl_mock_out_t *out, sl_buf_t *event)
{
    sl_json_put_sl (event, out->model);
}
