/*  sl_jwt.h - signed tokens (JWT) checked against a set of public keys.

    A client may present a token its company already issues instead of a
    sluice key (Authorization: Bearer <jwt>). The keys file's jwt section
    (sl_keyring.h) names the public keys, as PEM files (RSA, or EC P-256)
    and/or a JWKS file (kty RSA, or EC with crv P-256; each key's kid), and
    what the claims must say. libjwt checks the signature; this class picks
    the key and checks the rest:

      - the header's alg is RS256 or ES256 and fits the key's type (never
        none, never an HMAC alg: a public key is not a shared secret);
      - a kid in the header names a key of the set;
      - exp is present and not past, nbf (when present) not ahead, with
        SL_JWT_LEEWAY_S of slack for clocks;
      - iss is the configured one, when configured; aud is the configured
        one (a list holding it), which a loaded keys file always has;
      - team and user come from the configured claims (team "default"
        when the token has none); a token that names no user is refused:
        every user of a signing key shares its key id ("jwt:<kid>"), so
        the user is what tells one caller from another.

    Every refusal has a reason (sl_jwt_reason), counted by the gateway.
*/
#ifndef SL_JWT_H
#define SL_JWT_H

#include <stdint.h>

#include "common/identity/sl_keyring.h"

#define SL_JWT_LEEWAY_S 30              //  seconds a clock may be off
#define SL_JWT_TOKEN_MAX 16384          //  bytes of the longest token looked at
#define SL_JWT_TEXT_MAX 128             //  bytes kept of a team, user or kid

typedef struct _sl_jwtkeys_t sl_jwtkeys_t;

typedef enum {
    SL_JWT_OK = 0,
    SL_JWT_MALFORMED,                   //  not three base64url parts of JSON
    SL_JWT_ALG,                         //  alg none, an HMAC, or one the key cannot check
    SL_JWT_KID,                         //  a kid the set does not have
    SL_JWT_SIGNATURE,                   //  no key of the set signed it
    SL_JWT_EXPIRED,                     //  exp past (or missing)
    SL_JWT_NOT_YET,                     //  nbf ahead
    SL_JWT_ISSUER,
    SL_JWT_AUDIENCE,
    SL_JWT_USER,                        //  the user claim is missing or empty
    SL_JWT_REASON_MAX
} sl_jwt_reason_t;

typedef struct {
    char team [SL_JWT_TEXT_MAX];
    char user [SL_JWT_TEXT_MAX];
    char kid [SL_JWT_TEXT_MAX];         //  the signing key's kid, "" when it has none
} sl_jwt_claims_t;

//  Read the public keys a jwt section names. NULL with *error (the caller
//  frees) when a file cannot be read or holds no key sluice can use.
sl_jwtkeys_t *sl_jwtkeys_new (const sl_jwt_spec_t *spec, char **error);
//  The keys of a JWKS document fetched from a provider (text, len bytes;
//  source names it in an error), as sl_jwtkeys_new reads a JWKS file.
sl_jwtkeys_t *sl_jwtkeys_from_jwks (const char *text, size_t len, const char *source, char **error);
void sl_jwtkeys_destroy (sl_jwtkeys_t **self_p);
size_t sl_jwtkeys_count (const sl_jwtkeys_t *self);

//  Check a token at now (seconds since the epoch). SL_JWT_OK with *out
//  filled, or why not. A token checked before is not checked again (the
//  set remembers it), but its exp and nbf are, at every call.
int sl_jwt_verify (sl_jwtkeys_t *keys, const sl_jwt_spec_t *spec, const char *token, int64_t now,
                   sl_jwt_claims_t *out);
//  A reason's name (a metric label): "malformed", "alg", "kid", ...
const char *sl_jwt_reason (int reason);
//  Does text look like a JWT (three dot-separated parts)? The gateway asks
//  before taking a bearer credential for a token rather than a key.
bool sl_jwt_looks_like (const char *text);

#endif
