/*  sl_identity.h - who is calling: a request's credential resolved
    against the keys file.

    The gateway reads the credential a client sends the way its SDK sends
    it (sl_clientkey_of: the dialect's header, Authorization: Bearer, a
    query parameter) and asks here whose it is:

      - a sluice key: its entry in the keyring (sl_keyring_find, compared
        by SHA-256 in constant time): its id, team, user, policy file,
        models and limits, the team's where the key sets none;
      - a signed token (a JWT: three dot-separated parts) when the keys
        file has a jwt section: checked by sl_jwt_verify; its team and
        user come from the configured claims (a token naming no user is
        refused); its key id is "jwt" and the signing key's kid
        ("jwt:idp-2026"), which every user of that key shares: what is
        bound to a caller is bound to key id, team and user together;
        the team's settings apply when the keys file lists that team, and
        the section's limits per user;
      - nothing usable: why, as a short reason for a metric label.

    Without a keyring nobody is checked (SL_WHO_OPEN): the identity is
    empty and the gateway behaves as before keys existed.

    The limit subjects of an identity (sl_limits.h): the key ("key:<id>")
    or the token's user ("user:<team>/<user>"), and the team
    ("team:<name>"), each with its own limits. The identity borrows from
    the keyring (entries, policy paths, globs): hold the keyring while
    the identity is used.

    Pure: no I/O, time is the caller's.
*/
#ifndef SL_IDENTITY_H
#define SL_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/identity/sl_jwt.h"
#include "common/identity/sl_keyring.h"
#include "common/identity/sl_limits.h"

#define SL_IDENTITY_TEXT_MAX 128        //  bytes kept of an id, a team or a user (with the NUL)

typedef enum {
    SL_WHO_OK = 0,                      //  a key of the file, or a token it accepts
    SL_WHO_OPEN,                        //  no keys configured: nobody is checked
    SL_WHO_MISSING,                     //  no credential at all
    SL_WHO_UNKNOWN_KEY,                 //  a key no entry has
    SL_WHO_TOKEN,                       //  a signed token refused (jwt_reason says why)
    SL_WHO_NO_TOKENS,                   //  a token, but the keys file accepts none
    SL_WHO_MAX
} sl_who_t;

typedef struct {
    int outcome;                        //  sl_who_t
    int jwt_reason;                     //  sl_jwt_reason_t, for SL_WHO_TOKEN
    char key_id [SL_IDENTITY_TEXT_MAX]; //  the key's id ("jwt:<kid>" for a token); never the key
    char team [SL_IDENTITY_TEXT_MAX];
    char user [SL_IDENTITY_TEXT_MAX];   //  "" when the key or token names none
    const sl_keyentry_t *key;           //  the key's entry, NULL for a token
    const sl_team_t *team_entry;        //  the team's settings, NULL when the file has none
    const char *policy;                 //  the policy file it runs under, NULL: the default
    const char *shadow_policy;          //  the policy file judged in shadow beside it, NULL: none
    const char *const *models;          //  the models it may ask for (globs), NULL: every one
    int on_error;                       //  sl_on_error_t: when the limits store cannot answer
    sl_limits_subject_t subjects [2];   //  key or user, then team (only those with limits)
    size_t subject_count;
} sl_identity_t;

//  Resolve credential (NULL or "": none) at now (seconds since the
//  epoch). ring NULL: SL_WHO_OPEN. jwt: the keys of the ring's jwt
//  section (sl_jwtkeys_new), NULL when it has none. Returns out->outcome.
int sl_identity_resolve (const sl_keyring_t *ring, sl_jwtkeys_t *jwt, const char *credential, int64_t now,
                         sl_identity_t *out);
//  Why a credential was refused, a metric label: "missing", "unknown_key",
//  "tokens_not_accepted", "token_<jwt reason>" ("token_expired", ...);
//  "ok" / "open" otherwise.
const char *sl_identity_reason (const sl_identity_t *self);
//  May it ask for model?
bool sl_identity_allows_model (const sl_identity_t *self, const char *model);

#endif
