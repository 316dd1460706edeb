/*  sl_keys.h - the CURVE keys of the sluice bus, read from a key directory.

    sluice-keygen writes one certificate per key into a directory, in
    czmq's zcert format (ZPL text): <name>.key holds the public key and its
    metadata, <name>.key_secret the secret key as well (mode 0600). A
    process reads its own secret certificate and the public certificates it
    finds; a Kubernetes or compose secret mounted as a directory holding a
    role's secret file and the public files works the same way.

    Metadata of every certificate:
        name    the file's name without ".key": a role, or a tap's name
        role    gateway, ingest, aggregator, judge, emitter, audit or tap
        access  taps only: "full" (everything) or "metadata" (no text, no
                arguments, no prompt; see services/emitter/sl_meta.h).
                Absent or unknown reads as metadata: a key never gets more
                than it says.

    Nothing here opens a socket: sl_zap decides with what this loads, and
    the unit tests drive it with files in a temporary directory.
*/
#ifndef SL_KEYS_H
#define SL_KEYS_H

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_KEY_NAME_MAX 32              //  longest key name
#define SL_KEY_SIZE 32                  //  a CURVE key, binary
#define SL_KEY_TXT_SIZE 41              //  a CURVE key in Z85, with its NUL
#define SL_KEYS_MAX 1024                //  public certificates read from one directory

typedef enum {
    SL_ACCESS_NONE = 0,                 //  not a tap key
    SL_ACCESS_METADATA,                 //  a tap that sees metadata only
    SL_ACCESS_FULL                      //  a tap that sees everything
} sl_access_t;

typedef struct {
    char name [SL_KEY_NAME_MAX + 1];
    char role [16];
    sl_access_t access;
    uint8_t public_key [SL_KEY_SIZE];
    char public_txt [SL_KEY_TXT_SIZE];
} sl_key_t;

typedef struct _sl_keys_t sl_keys_t;

sl_keys_t *sl_keys_new (void);
void sl_keys_destroy (sl_keys_t **self_p);
//  Read every public certificate (*.key) of dir, replacing what was held.
//  Files that are not usable certificates (malformed, a name or role that
//  does not fit, a key already held under another name) are skipped and
//  listed in sl_keys_skipped. Returns the number of keys held, or -1 (and
//  *error, the caller's to free) when dir cannot be read.
int sl_keys_load (sl_keys_t *self, const char *dir, char **error);
//  What the last load skipped and why, one "file: reason" per line; "" when
//  nothing was (borrowed).
const char *sl_keys_skipped (sl_keys_t *self);
//  The key with this public key (SL_KEY_SIZE bytes), or NULL.
const sl_key_t *sl_keys_find (sl_keys_t *self, const uint8_t *public_key);
//  The key of this name, or NULL.
const sl_key_t *sl_keys_named (sl_keys_t *self, const char *name);
size_t sl_keys_count (sl_keys_t *self);
const sl_key_t *sl_keys_at (sl_keys_t *self, size_t index);

//  This process's own certificate, dir/<name>.key_secret: NULL (and
//  *error) when it is missing, unreadable, malformed, or when its secret
//  key is not the one of its public key. *loose is set when the file can be
//  read by other users (a mounted secret often is; the caller warns).
zcert_t *sl_keys_load_secret (const char *dir, const char *name, bool *loose, char **error);

//  Names: 1 to SL_KEY_NAME_MAX characters of [a-z0-9_-], starting with a
//  letter or digit (they become file names and metric labels).
bool sl_key_name_valid (const char *name);
//  One of the roles of a process, named after its role: the five stages and
//  the audit (not "tap").
bool sl_key_role_is_stage (const char *role);
const char *sl_access_name (sl_access_t access);
//  "full" and "metadata"; anything else reads as metadata (fail closed).
sl_access_t sl_access_parse (const char *value);

#endif
