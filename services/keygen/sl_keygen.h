/*  sl_keygen.h - making and keeping the bus's keys (sluice-keygen).

    A key directory holds one CURVE certificate per key (sl_keys.h): one
    per process role (gateway, ingest, aggregator, judge, emitter, audit) and the tap
    keys, by default "tap" (access full) and "tap-meta" (metadata only).
    Making keys is idempotent: a key that exists is kept as it is, so every
    start of a deployment may run the key generator. A rotation replaces one
    key; the processes that use it read the new one when they start again.

    Files are written under a temporary name and renamed into place, the
    secret before the public one, so a process starting meanwhile reads
    either the old key or the new one, never half of one. Secret files are
    mode 0600, the directory 0700 when it is made here.
*/
#ifndef SL_KEYGEN_H
#define SL_KEYGEN_H

#include "common/base/sl_buf.h"
#include "common/bus/sl_keys.h"

//  Make every missing key of the default set in dir (made when missing).
//  One line per key goes to report ("created judge", "kept judge"). 0 ok,
//  -1 with *error (the caller's to free), e.g. a key file that is damaged.
int sl_keygen_ensure (const char *dir, sl_buf_t *report, char **error);
//  Make the tap key name with this access when it is missing; an existing
//  one is kept when its access is the same and refused otherwise.
int sl_keygen_tap (const char *dir, const char *name, sl_access_t access, sl_buf_t *report, char **error);
//  Replace the key name (a role or a tap) with a new key of the same role
//  and access.
int sl_keygen_rotate (const char *dir, const char *name, sl_buf_t *report, char **error);
//  The process roles, one key each, by index from 0; NULL past the last.
const char *sl_keygen_role (size_t index);

#endif
