/*  sl_upstream.h - the URL and headers of an upstream call.

    A pure library (the ingest's): for a provider of a dialect, the URL of
    a streaming call for a model and the request's headers: JSON in, an
    event stream back, the dialect's fixed headers, and its credential:
    the provider's own key when one is configured, else the client's own
    credential when the provider allows forwarding it, written the way the
    upstream's dialect takes it (a client of another dialect sent it its
    own way: "Authorization: Bearer k" becomes "x-api-key: k").
*/
#ifndef SL_UPSTREAM_H
#define SL_UPSTREAM_H

#include <stdbool.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_dialect.h"

#define SL_UPSTREAM_HEADERS_MAX 12
#define SL_UPSTREAM_PASSTHROUGH_MAX 4096    //  bytes of a client's passthrough headers

typedef struct {
    sl_buf_t url;
    sl_buf_t header [SL_UPSTREAM_HEADERS_MAX];  //  "Name: value" lines (NUL-terminated)
    size_t header_count;
    const char *credential;             //  "key" (the provider's), "client" (forwarded), "none"
    sl_buf_t why;                       //  why the URL could not be made
} sl_upstream_t;

//  Prepare a call to a provider of dialect d (its base URL and the fields
//  its dialect's URL reads) for model. key:
//  the provider's key ("" or NULL: none); client: the client's credential
//  header line, forwarded when there is no key and forward is true;
//  passthrough: the client's header lines that go as sent
//  (sl_upstream_passthrough; only well-formed lines of names d lists are
//  sent). A provider whose credential comes from a source (sl_auth.h) is
//  given no key and no forwarding: the source's lines are the ingest's to
//  add at each attempt. 0 ok; -1 when the model cannot be named in the
//  dialect's URL (out->why says why).
int sl_upstream_prepare (const sl_dialect_t *d, const sl_provider_t *provider, sl_str_t model, const char *key,
                         bool forward, sl_str_t client, sl_str_t passthrough, sl_upstream_t *out);
//  The client's headers of the names d's upstream gets as sent
//  (sl_dialect_t.passthrough), each "Name: value" and a line end,
//  appended to out (at most SL_UPSTREAM_PASSTHROUGH_MAX bytes; a value
//  with a line break is left out).
void sl_upstream_passthrough (const sl_dialect_t *d, sl_header_fn *header, void *arg, sl_buf_t *out);
//  Free what it holds; the credential's bytes are wiped first.
void sl_upstream_clear (sl_upstream_t *self);
//  The credential line for dialect d from a client's line of any dialect
//  ("Name: value"; a Bearer scheme is taken off): appended to out. Nothing
//  when line is not one well-formed header line.
void sl_upstream_credential (const sl_dialect_t *d, sl_str_t line, sl_buf_t *out);

#endif
