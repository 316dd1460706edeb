/*  sl_keyid.c - a client key's id (see sl_keyid.h). */
#include "common/identity/sl_keyid.h"

#include <ctype.h>
#include <czmq.h>

void
sl_key_id (const char *key, size_t n, char out [SL_KEY_ID_SIZE])
{
    zdigest_t *digest = zdigest_new ();
    zdigest_update (digest, (const byte *) key, n);
    const char *hex = zdigest_string (digest);
    for (int i = 0; i < SL_KEY_ID_SIZE - 1; i++)
        out [i] = (char) tolower ((unsigned char) hex [i]);
    out [SL_KEY_ID_SIZE - 1] = 0;
    zdigest_destroy (&digest);
}
