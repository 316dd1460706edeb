/*  keyfile_fixture.h - keys files written by tests: one entry of a key
    (its SHA-256, never the key, as sluice-keys writes it), for the unit
    tests of what reads keys and the integration tests of gateways that
    check them. Header-only.
*/
#ifndef KEYFILE_FIXTURE_H
#define KEYFILE_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "common/identity/sl_keyring.h"

//  Append to out (a keys file's text, a C string in size bytes) the entry
//  of key under keys: its id, SHA-256, team and user (NULL: none); extra
//  (NULL: none) follows as is, indented lines such as
//  "    limits: {rpm: 1}\n".
static inline void
keyfile_entry (char *out, size_t size, const char *id, const char *key, const char *team, const char *user,
               const char *extra)
{
    char hex [SL_KEYRING_HEX_SIZE];
    sl_keyring_key_hex (key, hex);
    size_t n = strlen (out);
    n += (size_t) snprintf (out + n, n < size ? size - n : 0, "  - id: %s\n    sha256: %s\n    team: %s\n", id, hex,
                            team);
    if (user && n < size)
        n += (size_t) snprintf (out + n, size - n, "    user: %s\n", user);
    if (extra && n < size)
        snprintf (out + n, size - n, "%s", extra);
}

#endif
