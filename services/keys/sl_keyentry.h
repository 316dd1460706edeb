/*  sl_keyentry.h - a new client key and its entry in a keys file
    (sluice-keys new).

    A key is "sk-sluice-" and 43 base64url characters (32 random bytes);
    its entry is one YAML list item, written to go under a keys file's
    top-level keys: list as it is (see common/identity/sl_keyring.h): its
    id, the SHA-256 of the key, team, user and what was asked of it. The
    key itself is shown once and kept nowhere.
*/
#ifndef SL_KEYENTRY_H
#define SL_KEYENTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_buf.h"

#define SL_KEYENTRY_PREFIX "sk-sluice-"
#define SL_KEYENTRY_KEY_MAX 64          //  bytes of a key's text, with its NUL

typedef struct {
    const char *team;                   //  NULL: the default team
    const char *user;                   //  NULL: none
    const char *policy;                 //  NULL: the team's
    int64_t rpm, concurrent, tokens_per_day;    //  0: none
    bool approver;                      //  "approver: true": may decide approvals
} sl_keyentry_spec_t;

//  The body of the console's POST /api/keys for spec (its policy is not
//  the API's: -1), models a comma-separated list of globs (NULL: the
//  team's), appended to out. -1 when spec has what the API does not take.
int sl_keyentry_request (const sl_keyentry_spec_t *spec, const char *models, sl_buf_t *out);
//  A fresh key (from the system's random source).
void sl_keyentry_new_key (char key [SL_KEYENTRY_KEY_MAX]);
//  The entry of key as a YAML list item, appended to out. -1 when a name
//  (team, user) is not one a keys file takes.
int sl_keyentry_write (const char *key, const sl_keyentry_spec_t *spec, sl_buf_t *out);

#endif
