/*  sl_clientkey.h - the keys clients present to sluice.

    A pure library (the gateway's): the client keys sluice accepts
    (SLUICE_CLIENT_KEYS, comma-separated), compared in constant time; the
    key a request carries, the way each dialect's SDKs send it (each
    registered dialect's credential header, its scheme taken off, then its
    query parameter); and the client's own credential as a header line
    for the ingest to forward upstream when no key is configured there.
*/
#ifndef SL_CLIENTKEY_H
#define SL_CLIENTKEY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_dialect.h"

typedef struct _sl_clientkeys_t sl_clientkeys_t;

//  The keys of a comma-separated list (spaces around each trimmed, empty
//  entries skipped, at most max). NULL when the list names none: no check.
sl_clientkeys_t *sl_clientkeys_new (const char *list, size_t max);
void sl_clientkeys_destroy (sl_clientkeys_t **self_p);
size_t sl_clientkeys_count (sl_clientkeys_t *self);
//  Is key one of them? Every key is compared whole, without an early exit,
//  so the time taken does not tell how much of a key was right.
bool sl_clientkeys_accept (sl_clientkeys_t *self, const char *key);
//  Equal strings, compared in time that depends on b's length only.
bool sl_clientkey_equal (const char *a, const char *b);

//  The key a request carries (borrowed from what header and query return),
//  NULL when none. query reads a query parameter the same way.
const char *sl_clientkey_of (sl_header_fn *header, sl_header_fn *query, void *arg);
//  The client's credential as a header line, as a client of dialect d sent
//  it: its dialect's header, its query parameter, or Authorization.
//  Appended to out; nothing when it sent none.
void sl_clientkey_line (const sl_dialect_t *d, sl_header_fn *header, sl_header_fn *query, void *arg,
                        sl_buf_t *out);

#endif
