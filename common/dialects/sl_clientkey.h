/*  sl_clientkey.h - the keys clients present to sluice.

    A pure library (the gateway's): the key a request carries, the way
    each dialect's SDKs send it (each registered dialect's credential
    header, its scheme taken off, then its query parameter), and the
    client's own credential as a header line for the ingest to forward
    upstream when sluice checks no keys. Whose a key is, is
    common/identity's (sl_identity).
*/
#ifndef SL_CLIENTKEY_H
#define SL_CLIENTKEY_H

#include <stdbool.h>
#include <stddef.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_dialect.h"


//  The key a request carries (borrowed from what header and query return),
//  NULL when none. query reads a query parameter the same way.
const char *sl_clientkey_of (sl_header_fn *header, sl_header_fn *query, void *arg);
//  The client's credential as a header line, as a client of dialect d sent
//  it: its dialect's header, its query parameter, or Authorization.
//  Appended to out; nothing when it sent none.
void sl_clientkey_line (const sl_dialect_t *d, sl_header_fn *header, sl_header_fn *query, void *arg,
                        sl_buf_t *out);

#endif
