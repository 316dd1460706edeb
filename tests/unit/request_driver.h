/*  request_driver.h - parse a client request of one dialect and render it
    for an upstream of another, for the dialect modules' request tests. */
#ifndef TEST_REQUEST_DRIVER_H
#define TEST_REQUEST_DRIVER_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/dialects/sl_job.h"

//  Parse body as a request of dialect (Gemini: to model's streaming path).
static inline int
rq_parse (int dialect, const char *body, sl_job_t *out)
{
    sl_endpoint_t endpoint = { .dialect = dialect, .stream = true, .sse = true, .model = "gem-1" };
    return sl_job_parse (&endpoint, sl_str (body), out);
}

//  Parse body as a request of from, translate it for an upstream of to:
//  the upstream body as JSON (caller decrefs), NULL when refused (the
//  reason in why, which the caller frees with sl_job_clear: r).
static inline json_t *
rq_translate (int from, int to, const char *body, sl_job_t *r)
{
    cr_assert_eq (rq_parse (from, body, r), 0, "%s", sl_buf_cstr (&r->error_message));
    if (sl_job_translate (r, to))
        return NULL;
    json_t *up = json_loadb (r->upstream_body.data, r->upstream_body.len, 0, NULL);
    cr_assert_not_null (up, "valid JSON: %s", sl_buf_cstr (&r->upstream_body));
    return up;
}

//  A value by a path of keys and array indices: "messages/1/content".
static inline json_t *
rq_get (json_t *v, const char *path)
{
    char key [64];
    while (v && *path) {
        size_t n = strcspn (path, "/");
        snprintf (key, sizeof key, "%.*s", (int) n, path);
        path += n + (path [n] == '/');
        if (json_is_array (v))
            v = json_array_get (v, (size_t) atoi (key));
        else
            v = json_object_get (v, key);
    }
    return v;
}

static inline const char *
rq_str (json_t *root, const char *path)
{
    json_t *v = rq_get (root, path);
    return json_is_string (v) ? json_string_value (v) : "(none)";
}

//  Did the translation drop (and count) a feature whose name says this?
static inline bool
rq_dropped (const sl_job_t *r, const char *words)
{
    for (size_t i = 0; i < r->drop_count; i++)
        if (strstr (r->dropped [i], words))
            return true;
    return false;
}

#endif
