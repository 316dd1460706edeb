/*  sl_signkey.h - an Ed25519 signing key in a key directory.

    sluice-keygen --signing NAME writes a signing key beside the CURVE
    certificates: <dir>/<NAME>.sign holds the public key (64 hex digits
    and a newline), <dir>/<NAME>.sign_secret the secret seed (64 hex
    digits, mode 0600). The audit signs its chain's checkpoints with it;
    `sluice-audit verify --public-key <dir>/<NAME>.sign` checks them. A
    key's id is the first 16 hex digits of the SHA-256 of its public key:
    a checkpoint names the key that signed it.

    Files are written under a temporary name and renamed into place, the
    secret first; a key that exists is kept.
*/
#ifndef SL_SIGNKEY_H
#define SL_SIGNKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"

#define SL_SIGNKEY_PUBLIC 32            //  bytes of a public key
#define SL_SIGNKEY_SECRET 64            //  bytes of a secret key (seed and public key)
#define SL_SIGNKEY_ID_HEX 17            //  a key id with its NUL
#define SL_SIGNKEY_SIG_HEX 129          //  a signature in hex with its NUL

typedef struct {
    uint8_t public_key [SL_SIGNKEY_PUBLIC];
    uint8_t secret_key [SL_SIGNKEY_SECRET];     //  zero when only the public key was read
    bool has_secret;
    char id [SL_SIGNKEY_ID_HEX];
} sl_signkey_t;

//  Make dir/name.sign and dir/name.sign_secret unless they exist. One
//  line to report ("created NAME signing key", "kept ..."). 0 ok, -1 with
//  *error (the caller's to free).
int sl_signkey_make (const char *dir, const char *name, sl_buf_t *report, char **error);
//  Read a secret key file (NAME.sign_secret). 0 ok, -1 with *error.
int sl_signkey_load_secret (sl_signkey_t *key, const char *path, char **error);
//  Read a public key file (NAME.sign). 0 ok, -1 with *error.
int sl_signkey_load_public (sl_signkey_t *key, const char *path, char **error);
//  The detached signature of msg in hex into sig.
void sl_signkey_sign (const sl_signkey_t *key, const void *msg, size_t size, char sig [SL_SIGNKEY_SIG_HEX]);
//  Whether sig (hex) is key's signature of msg.
bool sl_signkey_check (const sl_signkey_t *key, const void *msg, size_t size, const char *sig);

#endif
