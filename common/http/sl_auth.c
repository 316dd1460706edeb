/*  sl_auth.c - sources of credentials (see sl_auth.h): the interface, a
    fixed bearer token, and a source that always fails.
*/
#include "common/http/sl_auth.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

#define S_BEARER "Authorization: Bearer "

int
sl_auth_authorize (sl_auth_t *self, const sl_auth_request_t *req, sl_buf_t *lines, size_t *count, sl_buf_t *why)
{
    return self->vt->authorize (self, req, lines, count, why);
}

void
sl_auth_destroy (sl_auth_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    (*self_p)->vt->destroy (*self_p);
    *self_p = NULL;
}

int
sl_auth_line_ok (sl_str_t line)
{
    const char *colon = line.ptr ? memchr (line.ptr, ':', line.len) : NULL;
    if (!colon || colon == line.ptr)
        return 0;
    for (const char *p = line.ptr; p < colon; p++)
        if (*p <= ' ' || *p >= 127)
            return 0;
    for (const char *p = colon + 1; p < line.ptr + line.len; p++)
        if (*p == '\r' || *p == '\n' || *p == 0)
            return 0;
    return 1;
}

//  --------------------------------------------------------------------------
//  A fixed token, or a fixed failure

typedef struct {
    sl_auth_t base;
    char *line;                         //  the header line; NULL: fails
    char *why;
} s_fixed_t;

static int
s_fixed_authorize (sl_auth_t *base, const sl_auth_request_t *req, sl_buf_t *lines, size_t *count, sl_buf_t *why)
{
    (void) req;
    s_fixed_t *self = (s_fixed_t *) base;
    if (!self->line) {
        sl_buf_puts (why, self->why);
        return SL_AUTH_FAILED;
    }
    sl_buf_puts (lines, self->line);
    sl_buf_putc (lines, 0);
    (*count)++;
    return SL_AUTH_READY;
}

static void
s_fixed_destroy (sl_auth_t *base)
{
    s_fixed_t *self = (s_fixed_t *) base;
    if (self->line) {
        //  A token must not linger in freed memory.
        memset (self->line, 0, strlen (self->line));
        free (self->line);
    }
    free (self->why);
    free (self);
}

static const sl_auth_vt_t s_fixed_vt = { s_fixed_authorize, s_fixed_destroy };

static sl_auth_t *
s_fixed_new (const char *token, const char *why)
{
    s_fixed_t *self = sl_xcalloc (1, sizeof *self);
    self->base.vt = &s_fixed_vt;
    if (token && *token) {
        size_t n = strlen (S_BEARER) + strlen (token) + 1;
        self->line = sl_xmalloc (n);
        memcpy (self->line, S_BEARER, strlen (S_BEARER));
        memcpy (self->line + strlen (S_BEARER), token, strlen (token) + 1);
        if (!sl_auth_line_ok (sl_str (self->line))) {
            //  A token with a line break would add headers of its own.
            memset (self->line, 0, n);
            free (self->line);
            self->line = NULL;
            why = "the bearer token holds a line break";
        }
    }
    self->why = sl_xstrdup (why ? why : "no credential");
    return &self->base;
}

sl_auth_t *
sl_auth_bearer_new (const char *token, const char *missing)
{
    return s_fixed_new (token, missing ? missing : "the bearer token is empty");
}

sl_auth_t *
sl_auth_failing_new (const char *why)
{
    return s_fixed_new (NULL, why);
}
