/*  sl_job.c - client request checking and preparation (see sl_job.h).

    Requests are parsed once with jansson: they are small next to the
    stream, and a tree makes checking and translating them simple. The
    dialect-specific work is the modules': parse (into sl_req_t), forward
    (the same dialect's body, patched), render (another dialect's request).
*/
#include "common/dialects/sl_job.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_providers.h"

static int
s_refuse (sl_job_t *out, int status, const char *type, const char *format, ...)
    __attribute__ ((format (printf, 4, 5)));

static int
s_refuse (sl_job_t *out, int status, const char *type, const char *format, ...)
{
    out->status = status;
    out->error_type = type;
    sl_buf_reset (&out->error_message);
    va_list args;
    va_start (args, format);
    sl_buf_vprintf (&out->error_message, format, args);
    va_end (args);
    return -1;
}

//  What jansson 2.14 allocates for each value on a 64-bit build, with
//  malloc's own overhead: an object is its struct and a hash table of 8
//  buckets; a member its pair (key inline) and its share of the buckets as
//  the table doubles; an array its struct and a table of 8 slots, an
//  element its slot as that doubles; a string its struct and a copy of the
//  text; a number its struct. true, false and null are shared. While it
//  reads a string, the lexer holds it in a buffer that doubles as it
//  grows: twice the longest string, at the peak.
#define S_COST_OBJECT 240
#define S_COST_MEMBER 104               //  + the key
#define S_COST_ARRAY 128
#define S_COST_ELEMENT 16
#define S_COST_STRING 80                //  + the text
#define S_COST_NUMBER 32

size_t
sl_job_tree_cost (const sl_json_stats_t *st)
{
    return st->objects * S_COST_OBJECT + st->members * S_COST_MEMBER + st->key_bytes
         + st->arrays * S_COST_ARRAY + st->elements * S_COST_ELEMENT
         + st->strings * S_COST_STRING + st->string_bytes + st->numbers * S_COST_NUMBER
         + 2 * st->longest;
}

size_t
sl_job_tree_budget (size_t body_len)
{
    return SL_JOB_TREE_FACTOR * body_len + SL_JOB_TREE_FLOOR;
}

//  Line and column (from 1) of a byte of the body.
static void
s_position (sl_str_t body, size_t at, int *line, int *column)
{
    *line = 1;
    *column = 1;
    for (size_t i = 0; i < at && i < body.len; i++) {
        if (body.ptr [i] == '\n') {
            (*line)++;
            *column = 1;
        }
        else
            (*column)++;
    }
}

//  Count the body before jansson sees it: a body that is not one JSON
//  object, or whose tree would be over the budget, is refused here without
//  a single allocation. 0 to go on.
static int
s_precheck (sl_str_t body, sl_job_t *out)
{
    sl_json_stats_t st;
    int line, column;
    if (sl_json_stats (body, &st)) {
        s_position (body, st.error_at, &line, &column);
        return s_refuse (out, 400, "invalid_request_error", "the body is not valid JSON (line %d, column %d: %s)",
                         line, column, st.too_deep ? "nested too deeply" : "unexpected text");
    }
    if (sl_json_type (body) != SL_JSON_OBJECT)
        return s_refuse (out, 400, "invalid_request_error", "the body must be a JSON object");
    size_t cost = sl_job_tree_cost (&st), budget = sl_job_tree_budget (body.len);
    if (cost > budget)
        return s_refuse (out, 413, "request_too_large",
                         "the body holds too many JSON values (%zu objects, %zu arrays, %zu other values): "
                         "reading it would take about %zu MiB, over the limit of %zu MiB for a body of "
                         "%zu bytes", st.objects, st.arrays, st.strings + st.numbers + st.literals,
                         cost >> 20, budget >> 20, body.len);
    return 0;
}

//  The parts common to every dialect: a JSON object, read once.
static json_t *
s_load (sl_str_t body, sl_job_t *out)
{
    if (s_precheck (body, out))
        return NULL;
    json_error_t jerr;
    json_t *root = json_loadb (body.ptr, body.len, 0, &jerr);
    if (!root) {
        s_refuse (out, 400, "invalid_request_error", "the body is not valid JSON (line %d, column %d: %s)",
                  jerr.line, jerr.column, jerr.text);
        return NULL;
    }
    if (!json_is_object (root)) {
        s_refuse (out, 400, "invalid_request_error", "the body must be a JSON object");
        json_decref (root);
        return NULL;
    }
    return root;
}

int
sl_job_route (const char *path, sl_endpoint_t *out)
{
    return sl_dialect_endpoint (path, out);
}

//  Parse, with the digests of the tools' definitions from cache (may be NULL).
static int
s_parse (const sl_endpoint_t *endpoint, sl_str_t body, sl_toolcache_t *cache, sl_job_t *out)
{
    memset (out, 0, sizeof *out);
    const sl_dialect_t *d = sl_dialect_get (endpoint->dialect);
    out->client_dialect = endpoint->dialect;
    out->upstream_dialect = endpoint->dialect;
    if (!d)
        return s_refuse (out, 404, "not_found_error", "no such endpoint");
    body = sl_str_n (body.ptr ? body.ptr : "", body.len);
    json_t *root = s_load (body, out);
    if (!root)
        return -1;
    out->req = sl_req_new (d->id, root);
    sl_refusal_t err = { 0 };
    if (d->parse (root, endpoint, out->req, &err)) {
        s_refuse (out, err.status, err.type, "%s", sl_buf_cstr (&err.message));
        sl_buf_free (&err.message);
        return -1;
    }
    sl_buf_free (&err.message);
    sl_req_t *req = out->req;
    sl_buf_append_str (&out->model, req->model);
    out->stream = req->stream;
    out->include_usage = req->include_usage;
    sl_req_tools_json (req, cache, &out->tools);
    sl_req_last_user (req, &out->last_user);
    if (d->forward (body, req, &out->upstream_body))
        return s_refuse (out, 400, "invalid_request_error", "the body must be a JSON object");
    return 0;
}

int
sl_job_parse (const sl_endpoint_t *endpoint, sl_str_t body, sl_job_t *out)
{
    return s_parse (endpoint, body, NULL, out);
}

int
sl_job_translate (sl_job_t *self, int upstream_dialect)
{
    if (upstream_dialect == self->client_dialect)
        return 0;
    const sl_dialect_t *to = sl_dialect_get (upstream_dialect);
    if (!to || !self->req)
        return s_refuse (self, 502, "api_error", "no upstream dialect %d", upstream_dialect);
    if (sl_dialect_same_format (upstream_dialect, self->client_dialect)
    &&  sl_dialect_same_format (self->upstream_dialect, self->client_dialect)) {
        //  A cloud's door to the client's own format: the client's body,
        //  as that door takes it (Vertex's Claude: no model in the body).
        sl_buf_t body = { 0 };
        if (to->forward (sl_buf_str (&self->upstream_body), self->req, &body)) {
            sl_buf_free (&body);
            return s_refuse (self, 400, "invalid_request_error", "the body must be a JSON object");
        }
        sl_buf_free (&self->upstream_body);
        self->upstream_body = body;
        self->upstream_dialect = upstream_dialect;
        return 0;
    }
    sl_xlate_t x = { .from = sl_dialect_name (self->client_dialect), .to = to->name };
    const sl_feature_t *needed = sl_req_mattering (self->req);
    int rc = needed ? sl_xlate_refuse (&x, needed->name, "the request needs it and only its own dialect has it")
                    : 0;
    sl_buf_t body = { 0 };
    if (rc == 0)
        rc = to->render (self->req, &x, &body);
    if (rc) {
        s_refuse (self, x.status ? x.status : 400, x.type ? x.type : "invalid_request_error", "%s",
                  sl_buf_cstr (&x.message));
        sl_buf_free (&body);
        sl_xlate_clear (&x);
        return -1;
    }
    //  What the model holds but the upstream was not given, only
    //  informative: named, to be counted.
    for (size_t i = 0; i < self->req->feature_count; i++)
        sl_xlate_drop (&x, self->req->features [i].name);
    sl_buf_free (&self->upstream_body);
    self->upstream_body = body;
    self->upstream_dialect = upstream_dialect;
    memcpy (self->dropped, x.dropped, sizeof self->dropped);
    self->drop_count = x.drop_count;
    sl_xlate_clear (&x);
    return 0;
}

int
sl_job_prepare (const sl_endpoint_t *endpoint, sl_str_t body, sl_providers_t *routes, sl_toolcache_t *cache,
                sl_job_t *out)
{
    if (s_parse (endpoint, body, cache, out))
        return -1;
    if (!routes)
        return 0;
    const sl_provider_t *p = sl_providers_pick (routes, sl_buf_str (&out->model), out->client_dialect);
    if (!p)
        return 0;                       //  the ingest says no provider serves it
    out->provider = p->name;
    return sl_job_translate (out, p->dialect);
}

int
sl_job_refresh (sl_job_t *self)
{
    sl_req_t *req = self->req;
    if (!req || !req->edited)
        return 0;
    sl_buf_reset (&self->last_user);
    sl_req_last_user (req, &self->last_user);
    const sl_dialect_t *to = sl_dialect_get (self->upstream_dialect);
    if (!to)
        return s_refuse (self, 502, "api_error", "no upstream dialect %d", self->upstream_dialect);
    sl_buf_t body = { 0 };
    int rc;
    if (sl_dialect_same_format (self->upstream_dialect, self->client_dialect) && !req->edited_unsourced) {
        //  The client's own body, with exactly the changed strings.
        char *text = json_dumps (req->root, SL_REQ_JSON_FLAGS);
        rc = text ? to->forward (sl_str (text), req, &body) : -1;
        free (text);
        if (rc) {
            sl_buf_free (&body);
            return s_refuse (self, 400, "invalid_request_error", "the body must be a JSON object");
        }
    }
    else {
        //  Another dialect's request (or a change the body cannot show:
        //  a part the parser made up), rendered from the model again.
        sl_xlate_t x = { .from = sl_dialect_name (self->client_dialect), .to = to->name };
        rc = to->render (req, &x, &body);
        if (rc) {
            s_refuse (self, x.status ? x.status : 400, x.type ? x.type : "invalid_request_error", "%s",
                      sl_buf_cstr (&x.message));
            sl_buf_free (&body);
            sl_xlate_clear (&x);
            return -1;
        }
        sl_xlate_clear (&x);
    }
    sl_buf_free (&self->upstream_body);
    self->upstream_body = body;
    return 0;
}

void
sl_job_clear (sl_job_t *self)
{
    sl_req_destroy (&self->req);
    sl_buf_free (&self->model);
    sl_buf_free (&self->upstream_body);
    sl_buf_free (&self->tools);
    sl_buf_free (&self->last_user);
    sl_buf_free (&self->error_message);
    memset (self, 0, sizeof *self);
}

//  --------------------------------------------------------------------------
//  Patching a body in place

int
sl_job_patch (sl_str_t body, const sl_patch_t *patches, size_t count, sl_buf_t *out)
{
    sl_json_iter_t it;
    if (count > SL_PATCH_MAX || sl_json_object (&it, body))
        return -1;
    bool found [SL_PATCH_MAX] = { false };
    const char *copied = body.ptr;      //  body text up to here is in out
    bool members = false;
    sl_str_t key, value;
    int rc;
    while ((rc = sl_json_next_member (&it, &key, &value)) == 1) {
        members = true;
        for (size_t i = 0; i < count; i++)
            if (sl_json_key_eq (key, patches [i].key)) {
                sl_buf_append (out, copied, (size_t) (value.ptr - copied));
                sl_buf_puts (out, patches [i].value);
                copied = value.ptr + value.len;
                found [i] = true;
                break;
            }
    }
    if (rc != 0)
        return -1;
    //  The closing brace: the last byte that is not whitespace.
    const char *close = body.ptr + body.len;
    while (close > copied && close [-1] != '}')
        close--;
    if (close == copied || close [-1] != '}')
        return -1;
    close--;
    sl_buf_append (out, copied, (size_t) (close - copied));
    for (size_t i = 0; i < count; i++)
        if (!found [i]) {
            if (members)
                sl_buf_putc (out, ',');
            members = true;
            sl_json_put_str (out, patches [i].key, strlen (patches [i].key));
            sl_buf_putc (out, ':');
            sl_buf_puts (out, patches [i].value);
        }
    sl_buf_append (out, close, (size_t) (body.ptr + body.len - close));
    return 0;
}
