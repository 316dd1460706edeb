/*  Unit tests: common/identity/sl_jwt - tokens signed at test time with
    keys made at test time (RSA 2048 and EC P-256, OpenSSL), checked against
    PEM files and a JWKS file: every way a token is refused, and the team
    and user a good one names. */
#include <criterion/criterion.h>
#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/identity/sl_jwt.h"
#include "tests/jwt_fixture.h"

#define NOW 1800000000                  //  the tests' clock, seconds

typedef jwt_pair_t s_pair_t;

static char s_dir [64];
static s_pair_t s_rsa, s_ec, s_other;

static void
s_write (const char *name, const char *text, char *path, size_t size)
{
    snprintf (path, size, "%s/%s", s_dir, name);
    FILE *f = fopen (path, "w");
    cr_assert_not_null (f);
    fputs (text, f);
    fclose (f);
}

static void
s_setup (void)
{
    snprintf (s_dir, sizeof s_dir, "/tmp/sluice-jwt-XXXXXX");
    cr_assert_not_null (mkdtemp (s_dir));
    jwt_fixture_make (&s_rsa, true);
    jwt_fixture_make (&s_ec, false);
    jwt_fixture_make (&s_other, true);
}

static void
s_teardown (void)
{
    jwt_fixture_free (&s_rsa);
    jwt_fixture_free (&s_ec);
    jwt_fixture_free (&s_other);
    char cmd [96];
    snprintf (cmd, sizeof cmd, "rm -rf %s", s_dir);
    cr_assert_eq (system (cmd), 0);
}

//  A token of alice in payments signed with key (alg, a kid or NULL).
static char *
s_token (const s_pair_t *key, jwt_alg_t alg, const char *kid, const char *aud, long exp, long nbf, const char *iss)
{
    return jwt_fixture_token (key, alg, kid, "alice", "payments", aud, exp, nbf, iss);
}

TestSuite (sl_jwt, .init = s_setup, .fini = s_teardown);

Test (sl_jwt, good_tokens_name_their_team_and_user)
{
    char rsa_path [128], jwks_path [128], jwks [4096], jwk [512];
    s_write ("rsa.pem", s_rsa.public_pem, rsa_path, sizeof rsa_path);
    jwt_fixture_jwk (&s_ec, "ec-1", jwk, sizeof jwk);
    snprintf (jwks, sizeof jwks, "{\"keys\":[%s]}", jwk);
    s_write ("jwks.json", jwks, jwks_path, sizeof jwks_path);
    const char *pem [] = { rsa_path, NULL };
    sl_jwt_spec_t spec = { .pem = pem, .jwks = jwks_path, .issuer = "https://idp.example", .audience = "sluice",
                           .team_claim = "team", .user_claim = "sub" };
    char *error = NULL;
    sl_jwtkeys_t *keys = sl_jwtkeys_new (&spec, &error);
    cr_assert_not_null (keys, "%s", error);
    cr_expect_eq (sl_jwtkeys_count (keys), 2);
    sl_jwt_claims_t c;
    char *rs = s_token (&s_rsa, JWT_ALG_RS256, NULL, "sluice", NOW + 60, NOW - 60, "https://idp.example");
    cr_expect_eq (sl_jwt_verify (keys, &spec, rs, NOW, &c), SL_JWT_OK);
    cr_expect_str_eq (c.team, "payments");
    cr_expect_str_eq (c.user, "alice");
    char *es = s_token (&s_ec, JWT_ALG_ES256, "ec-1", "sluice", NOW + 60, 0, "https://idp.example");
    cr_expect_eq (sl_jwt_verify (keys, &spec, es, NOW, &c), SL_JWT_OK, "ES256 from the JWKS");
    cr_expect_str_eq (c.kid, "ec-1");
    //  An audience list holding ours.
    jwt_t *jwt = NULL;
    jwt_new (&jwt);
    jwt_add_grants_json (jwt, "{\"sub\":\"bob\",\"aud\":[\"other\",\"sluice\"],\"iss\":\"https://idp.example\","
                              "\"exp\":1800000060}");
    jwt_set_alg (jwt, JWT_ALG_RS256, (const unsigned char *) s_rsa.private_pem, (int) strlen (s_rsa.private_pem));
    char *list = jwt_encode_str (jwt);
    jwt_free (jwt);
    cr_expect_eq (sl_jwt_verify (keys, &spec, list, NOW, &c), SL_JWT_OK);
    cr_expect_str_eq (c.team, SL_KEYRING_DEFAULT_TEAM, "no team claim: the default team");
    cr_expect_str_eq (c.user, "bob");
    free (rs);
    free (es);
    free (list);
    sl_jwtkeys_destroy (&keys);
}

Test (sl_jwt, every_refusal_says_why)
{
    char rsa_path [128];
    s_write ("rsa.pem", s_rsa.public_pem, rsa_path, sizeof rsa_path);
    const char *pem [] = { rsa_path, NULL };
    sl_jwt_spec_t spec = { .pem = pem, .issuer = "https://idp.example", .audience = "sluice" };
    char *error = NULL;
    sl_jwtkeys_t *keys = sl_jwtkeys_new (&spec, &error);
    cr_assert_not_null (keys, "%s", error);
    sl_jwt_claims_t c;
    const char *iss = "https://idp.example";
    struct { char *token; int reason; const char *what; } cases [] = {
        { s_token (&s_other, JWT_ALG_RS256, NULL, "sluice", NOW + 60, 0, iss), SL_JWT_SIGNATURE, "another key" },
        { s_token (&s_rsa, JWT_ALG_RS256, NULL, "elsewhere", NOW + 60, 0, iss), SL_JWT_AUDIENCE, "wrong aud" },
        { s_token (&s_rsa, JWT_ALG_RS256, NULL, "sluice", NOW - 3600, 0, iss), SL_JWT_EXPIRED, "expired" },
        { s_token (&s_rsa, JWT_ALG_RS256, NULL, "sluice", 0, 0, iss), SL_JWT_EXPIRED, "no exp" },
        { s_token (&s_rsa, JWT_ALG_RS256, NULL, "sluice", NOW + 7200, NOW + 3600, iss), SL_JWT_NOT_YET, "nbf" },
        { s_token (&s_rsa, JWT_ALG_RS256, NULL, "sluice", NOW + 60, 0, "https://evil.example"), SL_JWT_ISSUER, "iss" },
        { s_token (&s_rsa, JWT_ALG_RS256, "nope", "sluice", NOW + 60, 0, iss), SL_JWT_KID, "unknown kid" },
        { s_token (&s_ec, JWT_ALG_ES256, NULL, "sluice", NOW + 60, 0, iss), SL_JWT_SIGNATURE, "no EC key in the set" },
        { jwt_fixture_token (&s_rsa, JWT_ALG_RS256, NULL, NULL, "payments", "sluice", NOW + 60, 0, iss), SL_JWT_USER,
          "no user: its caller could not be told from another of the key" },
        { jwt_fixture_token (&s_rsa, JWT_ALG_RS256, NULL, "", "payments", "sluice", NOW + 60, 0, iss), SL_JWT_USER,
          "an empty user" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        cr_expect_eq (sl_jwt_verify (keys, &spec, cases [i].token, NOW, &c), cases [i].reason, "%s: %s", cases [i].what,
                      sl_jwt_reason (sl_jwt_verify (keys, &spec, cases [i].token, NOW, &c)));
        free (cases [i].token);
    }
    //  Within the leeway: just expired, just not yet valid.
    char *edge = s_token (&s_rsa, JWT_ALG_RS256, NULL, "sluice", NOW - 10, NOW + 10, iss);
    cr_expect_eq (sl_jwt_verify (keys, &spec, edge, NOW, &c), SL_JWT_OK);
    free (edge);
    //  alg none, signed by nobody.
    char header [64], payload [256], none [512];
    sodium_bin2base64 (header, sizeof header, (const unsigned char *) "{\"alg\":\"none\"}", 14,
                       sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    const char *claims = "{\"sub\":\"eve\",\"aud\":\"sluice\",\"iss\":\"https://idp.example\",\"exp\":1800000060}";
    sodium_bin2base64 (payload, sizeof payload, (const unsigned char *) claims, strlen (claims),
                       sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    snprintf (none, sizeof none, "%s.%s.", header, payload);
    cr_expect_eq (sl_jwt_verify (keys, &spec, none, NOW, &c), SL_JWT_ALG, "alg none");
    //  HS256 with the public key as the shared secret (alg confusion).
    jwt_t *jwt = NULL;
    jwt_new (&jwt);
    jwt_add_grants_json (jwt, claims);
    jwt_set_alg (jwt, JWT_ALG_HS256, (const unsigned char *) s_rsa.public_pem, (int) strlen (s_rsa.public_pem));
    char *hs = jwt_encode_str (jwt);
    jwt_free (jwt);
    cr_expect_eq (sl_jwt_verify (keys, &spec, hs, NOW, &c), SL_JWT_ALG, "an HMAC is never taken");
    free (hs);
    cr_expect_eq (sl_jwt_verify (keys, &spec, "a.b", NOW, &c), SL_JWT_MALFORMED);
    cr_expect_eq (sl_jwt_verify (keys, &spec, "!!.@@.##", NOW, &c), SL_JWT_MALFORMED);
    cr_expect_eq (sl_jwt_verify (keys, &spec, NULL, NOW, &c), SL_JWT_MALFORMED);
    cr_expect_str_eq (sl_jwt_reason (SL_JWT_SIGNATURE), "signature");
    cr_expect_str_eq (sl_jwt_reason (SL_JWT_USER), "user");
    //  A section with no audience (the loader refuses one) takes no token:
    //  one issued for any other application would pass.
    sl_jwt_spec_t open = spec;
    open.audience = NULL;
    char *any = s_token (&s_rsa, JWT_ALG_RS256, NULL, "another-app", NOW + 60, 0, iss);
    int rc_any = sl_jwt_verify (keys, &open, any, NOW, &c);
    cr_expect_eq (rc_any, SL_JWT_AUDIENCE, "%s", sl_jwt_reason (rc_any));
    free (any);
    sl_jwtkeys_destroy (&keys);
}

Test (sl_jwt, a_key_set_that_cannot_be_used_is_refused)
{
    char path [128], bad [128];
    s_write ("priv.txt", "not a key", bad, sizeof bad);
    const char *pem [] = { bad, NULL };
    sl_jwt_spec_t spec = { .pem = pem };
    char *error = NULL;
    cr_expect_null (sl_jwtkeys_new (&spec, &error));
    cr_expect_not_null (strstr (error, "not a PEM public key"), "%s", error);
    free (error);
    s_write ("jwks.json", "{\"keys\":[{\"kty\":\"oct\",\"k\":\"c2VjcmV0\"}]}", path, sizeof path);
    sl_jwt_spec_t hmac = { .jwks = path };
    cr_expect_null (sl_jwtkeys_new (&hmac, &error));
    cr_expect_not_null (strstr (error, "no RSA or P-256 EC signing key"), "%s", error);
    free (error);
    cr_expect (sl_jwt_looks_like ("a.b.c"));
    cr_expect_not (sl_jwt_looks_like ("sk-sluice-abc"));
    cr_expect_not (sl_jwt_looks_like ("a.b.c.d"));
}

//  A token checked once is remembered, but its times are checked at every
//  use; a refused token is never remembered; a new key set remembers none.
Test (sl_jwt, a_token_checked_before_is_remembered_but_still_expires)
{
    char rsa_path [128];
    s_write ("rsa.pem", s_rsa.public_pem, rsa_path, sizeof rsa_path);
    const char *pem [] = { rsa_path, NULL };
    sl_jwt_spec_t spec = { .pem = pem, .audience = "sluice", .team_claim = "team", .user_claim = "sub" };
    char *error = NULL;
    sl_jwtkeys_t *keys = sl_jwtkeys_new (&spec, &error);
    cr_assert_not_null (keys, "%s", error);
    sl_jwt_claims_t c;
    char *good = s_token (&s_rsa, JWT_ALG_RS256, NULL, "sluice", NOW + 60, NOW + 10, NULL);
    cr_expect_eq (sl_jwt_verify (keys, &spec, good, NOW - SL_JWT_LEEWAY_S - 1, &c), SL_JWT_NOT_YET);
    cr_expect_eq (sl_jwt_verify (keys, &spec, good, NOW, &c), SL_JWT_OK);
    cr_expect_eq (sl_jwt_verify (keys, &spec, good, NOW + 30, &c), SL_JWT_OK, "again, from memory");
    cr_expect_str_eq (c.user, "alice");
    cr_expect_str_eq (c.team, "payments");
    cr_expect_eq (sl_jwt_verify (keys, &spec, good, NOW + 60 + SL_JWT_LEEWAY_S + 1, &c), SL_JWT_EXPIRED,
                  "remembered, and expired all the same");
    cr_expect_eq (sl_jwt_verify (keys, &spec, good, NOW - SL_JWT_LEEWAY_S - 1, &c), SL_JWT_NOT_YET,
                  "and not valid before its nbf");
    //  The same claims signed by a key not in the set: refused each time.
    char *forged = s_token (&s_other, JWT_ALG_RS256, NULL, "sluice", NOW + 60, 0, NULL);
    cr_expect_eq (sl_jwt_verify (keys, &spec, forged, NOW, &c), SL_JWT_SIGNATURE);
    cr_expect_eq (sl_jwt_verify (keys, &spec, forged, NOW, &c), SL_JWT_SIGNATURE);
    //  A token altered after its check (one byte of its signature) is
    //  another token: checked, and refused.
    size_t n = strlen (good);
    good [n - 2] = good [n - 2] == 'A' ? 'B' : 'A';
    cr_expect_eq (sl_jwt_verify (keys, &spec, good, NOW, &c), SL_JWT_SIGNATURE);
    free (good);
    free (forged);
    sl_jwtkeys_destroy (&keys);
}
