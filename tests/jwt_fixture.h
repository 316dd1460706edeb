/*  jwt_fixture.h - signing keys made at test time (RSA 2048, EC P-256,
    with OpenSSL) and tokens signed with them (libjwt), for the tests of
    signed tokens: unit (sl_jwt, sl_identity) and integration (a gateway
    taking Bearer tokens). Header-only. Nothing here is a fixed key: each
    run makes its own.
*/
#ifndef JWT_FIXTURE_H
#define JWT_FIXTURE_H

#include <criterion/criterion.h>
#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    EVP_PKEY *key;
    char *private_pem;
    char *public_pem;
} jwt_pair_t;

static inline char *
jwt_fixture_pem (EVP_PKEY *key, bool private)
{
    BIO *bio = BIO_new (BIO_s_mem ());
    if (private)
        PEM_write_bio_PrivateKey (bio, key, NULL, NULL, 0, NULL, NULL);
    else
        PEM_write_bio_PUBKEY (bio, key);
    char *data = NULL;
    long len = BIO_get_mem_data (bio, &data);
    char *text = strndup (data, (size_t) len);
    BIO_free (bio);
    return text;
}

//  A new key pair: RSA 2048 (rsa) or EC P-256.
static inline void
jwt_fixture_make (jwt_pair_t *p, bool rsa)
{
    p->key = rsa ? EVP_PKEY_Q_keygen (NULL, NULL, "RSA", (size_t) 2048) : EVP_PKEY_Q_keygen (NULL, NULL, "EC", "P-256");
    cr_assert_not_null (p->key);
    p->private_pem = jwt_fixture_pem (p->key, true);
    p->public_pem = jwt_fixture_pem (p->key, false);
}

static inline void
jwt_fixture_free (jwt_pair_t *p)
{
    EVP_PKEY_free (p->key);
    free (p->private_pem);
    free (p->public_pem);
    memset (p, 0, sizeof *p);
}

//  A token signed with key (alg; kid, aud, iss NULL for none; exp, nbf 0
//  for none) whose grants are sub and team (NULL for none). Caller frees.
static inline char *
jwt_fixture_token (const jwt_pair_t *key, jwt_alg_t alg, const char *kid, const char *sub, const char *team,
                   const char *aud, long exp, long nbf, const char *iss)
{
    jwt_t *jwt = NULL;
    cr_assert_eq (jwt_new (&jwt), 0);
    if (sub)
        jwt_add_grant (jwt, "sub", sub);
    if (team)
        jwt_add_grant (jwt, "team", team);
    if (aud)
        jwt_add_grant (jwt, "aud", aud);
    if (iss)
        jwt_add_grant (jwt, "iss", iss);
    if (exp)
        jwt_add_grant_int (jwt, "exp", exp);
    if (nbf)
        jwt_add_grant_int (jwt, "nbf", nbf);
    if (kid)
        jwt_add_header (jwt, "kid", kid);
    cr_assert_eq (jwt_set_alg (jwt, alg, (const unsigned char *) key->private_pem, (int) strlen (key->private_pem)), 0);
    char *token = jwt_encode_str (jwt);
    cr_assert_not_null (token);
    jwt_free (jwt);
    return token;
}

//  An EC P-256 key's public JWK (kty EC, use sig) with kid, as a JWKS
//  lists it, into out.
static inline void
jwt_fixture_jwk (const jwt_pair_t *key, const char *kid, char *out, size_t size)
{
    const char *params [] = { OSSL_PKEY_PARAM_EC_PUB_X, OSSL_PKEY_PARAM_EC_PUB_Y };
    char coord [2][64];
    for (int i = 0; i < 2; i++) {
        BIGNUM *bn = NULL;
        cr_assert (EVP_PKEY_get_bn_param (key->key, params [i], &bn));
        unsigned char bytes [32];
        cr_assert_eq (BN_bn2binpad (bn, bytes, (int) sizeof bytes), (int) sizeof bytes);
        sodium_bin2base64 (coord [i], sizeof coord [i], bytes, sizeof bytes, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
        BN_free (bn);
    }
    snprintf (out, size, "{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"%s\",\"use\":\"sig\",\"x\":\"%s\",\"y\":\"%s\"}",
              kid, coord [0], coord [1]);
}

#endif
