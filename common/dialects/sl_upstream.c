/*  sl_upstream.c - upstream call preparation (see sl_upstream.h). */
#include "common/dialects/sl_upstream.h"

#include <string.h>
#include <strings.h>

//  One well-formed header line: "Name: value", no line breaks or NULs.
static bool
s_valid_line (sl_str_t line)
{
    if (!line.ptr || line.len < 3 || memchr (line.ptr, '\r', line.len) || memchr (line.ptr, '\n', line.len)
    ||  memchr (line.ptr, 0, line.len))
        return false;
    const char *colon = memchr (line.ptr, ':', line.len);
    return colon && colon > line.ptr;
}

void
sl_upstream_credential (const sl_dialect_t *d, sl_str_t line, sl_buf_t *out)
{
    if (!s_valid_line (line))
        return;
    const char *colon = memchr (line.ptr, ':', line.len);
    size_t name = (size_t) (colon - line.ptr);
    if (name == strlen (d->credential) && strncasecmp (line.ptr, d->credential, name) == 0) {
        sl_buf_append_str (out, line);  //  the upstream's own way: as it came
        return;
    }
    const char *v = colon + 1, *end = line.ptr + line.len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    if ((size_t) (end - v) >= 7 && strncasecmp (v, "Bearer ", 7) == 0)
        v += 7;
    if (v >= end)
        return;
    sl_buf_printf (out, "%s: %s", d->credential, d->scheme);
    sl_buf_append (out, v, (size_t) (end - v));
}

//  Is the name of a header line one of d's passthrough headers?
static bool
s_passes (const sl_dialect_t *d, sl_str_t line)
{
    const char *colon = memchr (line.ptr, ':', line.len);
    size_t n = (size_t) (colon - line.ptr);
    for (const char *const *h = d->passthrough; h && *h; h++)
        if (strlen (*h) == n && strncasecmp (line.ptr, *h, n) == 0)
            return true;
    return false;
}

void
sl_upstream_passthrough (const sl_dialect_t *d, sl_header_fn *header, void *arg, sl_buf_t *out)
{
    for (const char *const *h = d->passthrough; h && *h; h++) {
        const char *value = header (arg, *h);
        if (!value || strpbrk (value, "\r\n")
        ||  out->len + strlen (*h) + strlen (value) + 3 > SL_UPSTREAM_PASSTHROUGH_MAX)
            continue;
        sl_buf_printf (out, "%s: %s\n", *h, value);
    }
}

#define S_BETA_HEADER "anthropic-beta"

//  Is name (n bytes) one of the comma-separated names of list (len bytes)?
static bool
s_among (const char *list, size_t len, const char *name, size_t n)
{
    for (const char *p = list, *end = list + len; p < end;) {
        const char *comma = memchr (p, ',', (size_t) (end - p));
        const char *stop = comma ? comma : end;
        if ((size_t) (stop - p) == n && memcmp (p, name, n) == 0)
            return true;
        p = stop + 1;
    }
    return false;
}

//  A client's line of beta features (anthropic-beta) to a dialect that
//  says which it takes (sl_dialect_beta): the names its upstream takes,
//  under their names there, each once, into out ("" when none is left).
static void
s_betas (const sl_dialect_t *d, sl_str_t line, sl_buf_t *out)
{
    const char *v = (const char *) memchr (line.ptr, ':', line.len) + 1, *end = line.ptr + line.len;
    sl_buf_t names = { 0 };
    while (v < end) {
        const char *comma = memchr (v, ',', (size_t) (end - v));
        const char *stop = comma ? comma : end, *a = v, *b = stop;
        while (a < b && (*a == ' ' || *a == '\t'))
            a++;
        while (b > a && (b [-1] == ' ' || b [-1] == '\t'))
            b--;
        const char *name;
        size_t n;
        if (b > a && sl_dialect_beta (d, a, (size_t) (b - a), &name, &n)
        &&  !s_among (names.data ? names.data : "", names.len, name, n)) {
            if (names.len)
                sl_buf_putc (&names, ',');
            sl_buf_append (&names, name, n);
        }
        v = stop + 1;
    }
    if (names.len) {
        sl_buf_puts (out, S_BETA_HEADER ": ");
        sl_buf_append (out, names.data, names.len);
    }
    sl_buf_free (&names);
}

//  Is line's header the client's beta features, of a dialect that says
//  which it takes?
static bool
s_is_betas (const sl_dialect_t *d, sl_str_t line)
{
    size_t n = strlen (S_BETA_HEADER);
    return d->betas && line.len > n && line.ptr [n] == ':' && strncasecmp (line.ptr, S_BETA_HEADER, n) == 0;
}

static sl_buf_t *
s_header (sl_upstream_t *self)
{
    return self->header_count < SL_UPSTREAM_HEADERS_MAX ? &self->header [self->header_count++] : NULL;
}

int
sl_upstream_prepare (const sl_dialect_t *d, const sl_provider_t *provider, sl_str_t model, const char *key,
                     bool forward, sl_str_t client, sl_str_t passthrough, sl_upstream_t *out)
{
    memset (out, 0, sizeof *out);
    out->credential = "none";
    if (sl_dialect_url (d, provider, model, &out->url, &out->why))
        return -1;
    sl_buf_puts (s_header (out), "Content-Type: application/json");
    sl_buf_puts (s_header (out), "Accept: text/event-stream");
    sl_buf_puts (s_header (out), "Expect:");        //  no 100-continue round trip
    for (const char *const *h = d->headers; *h; h++) {
        sl_buf_t *b = s_header (out);
        if (b)
            sl_buf_puts (b, *h);
    }
    //  The client's lines, one by one: a name the dialect does not list
    //  or a line that is not one header goes nowhere.
    for (const char *p = passthrough.ptr, *end = p + passthrough.len; p && p < end;) {
        const char *nl = memchr (p, '\n', (size_t) (end - p));
        sl_str_t line = sl_str_n (p, (size_t) ((nl ? nl : end) - p));
        p = nl ? nl + 1 : end;
        if (s_valid_line (line) && s_passes (d, line) && s_is_betas (d, line)) {
            sl_buf_t taken = { 0 };
            s_betas (d, line, &taken);
            sl_buf_t *b = taken.len ? s_header (out) : NULL;
            if (b)
                sl_buf_append (b, taken.data, taken.len);
            sl_buf_free (&taken);
        }
        else
        if (s_valid_line (line) && s_passes (d, line)) {
            sl_buf_t *b = s_header (out);
            if (b)
                sl_buf_append_str (b, line);
        }
    }
    sl_buf_t *b = s_header (out);
    if (!b)
        return 0;
    if (key && *key) {
        sl_buf_printf (b, "%s: %s%s", d->credential, d->scheme, key);
        out->credential = "key";
    }
    else
    if (forward) {
        sl_upstream_credential (d, client, b);
        if (b->len)
            out->credential = "client";
    }
    if (!b->len)
        out->header_count--;
    for (size_t i = 0; i < out->header_count; i++)
        sl_buf_cstr (&out->header [i]);
    return 0;
}

void
sl_upstream_clear (sl_upstream_t *self)
{
    for (size_t i = 0; i < SL_UPSTREAM_HEADERS_MAX; i++) {
        //  A key must not linger in freed memory.
        if (self->header [i].data)
            memset (self->header [i].data, 0, self->header [i].cap);
        sl_buf_free (&self->header [i]);
    }
    sl_buf_free (&self->url);
    sl_buf_free (&self->why);
    self->header_count = 0;
}
