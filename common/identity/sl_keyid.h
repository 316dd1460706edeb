/*  sl_keyid.h - the id of a client's key, for the audit trail.

    Monitoring must be able to say whose request a stream was without ever
    holding the key: the gateway puts a key id in every job (field "kid"),
    and from there it reaches the stream's start, the taps and the audit
    store. The id is the first SL_KEY_ID_SIZE - 1 hex digits of the key's
    SHA-1 (czmq's zdigest): 48 bits of a one-way hash.
    It names a key among the few a deployment has; it cannot be turned back
    into the key, and a key cannot be guessed from it faster than by
    trying every key.

    With SLUICE_CLIENT_KEYS the id is that of the key the client matched;
    without, that of the credential the client sent (its own provider key,
    forwarded upstream), so a team still tells its agents apart; none when
    the client sent no credential.
*/
#ifndef SL_KEYID_H
#define SL_KEYID_H

#include <stddef.h>

#define SL_KEY_ID_SIZE 13               //  12 hex digits and a NUL

//  Write the id of key (its n bytes) into out.
void sl_key_id (const char *key, size_t n, char out [SL_KEY_ID_SIZE]);

#endif
