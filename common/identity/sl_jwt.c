/*  sl_jwt.c - signed tokens checked against public keys (see sl_jwt.h). */
#include "common/identity/sl_jwt.h"

#include <jansson.h>
#include <jwt.h>
#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"

#define S_KEYS_MAX 64                   //  public keys one set holds
#define S_MEMO_SLOTS 1024               //  checked tokens remembered
#define S_FILE_MAX (1u << 20)           //  bytes of a PEM or JWKS file
#define S_EC_COORD 32                   //  bytes of a P-256 coordinate

typedef enum { S_RSA = 1, S_EC } s_type_t;

typedef struct {
    char *pem;                          //  the public key, PEM text
    int type;                           //  s_type_t
    char kid [SL_JWT_TEXT_MAX];         //  "" when it has none
} s_key_t;

//  A token whose signature, issuer and audience were checked: what it
//  said, and its times, which are checked again on every use.
typedef struct {
    uint8_t hash [crypto_hash_sha256_BYTES];    //  of the whole token
    bool used;
    int64_t exp, nbf;                   //  nbf -1: none
    sl_jwt_claims_t claims;
} s_memo_t;

struct _sl_jwtkeys_t {
    s_key_t keys [S_KEYS_MAX];
    size_t count;
    //  Checking a signature reads the key's PEM and verifies: about 250 us
    //  for RS256, on every request of a client that presents the same
    //  token for an hour (bench_identity). Tokens checked are remembered,
    //  S_MEMO_SLOTS of them, one per slot of their hash (a newer token
    //  takes an older one's slot); the set is new with every reload.
    s_memo_t memo [S_MEMO_SLOTS];
};

static const char *s_reasons [] = {
    "ok", "malformed", "alg", "kid", "signature", "expired", "not_yet_valid", "issuer", "audience", "user"
};
_Static_assert (sizeof s_reasons / sizeof s_reasons [0] == SL_JWT_REASON_MAX, "a name for every reason");

const char *
sl_jwt_reason (int reason)
{
    return reason >= 0 && reason < SL_JWT_REASON_MAX ? s_reasons [reason] : "?";
}

static char *
s_error (const char *file, const char *why)
{
    sl_buf_t b = { 0 };
    sl_buf_printf (&b, "%s: %s", file, why);
    char *text = sl_xstrdup (sl_buf_cstr (&b));
    sl_buf_free (&b);
    return text;
}

static int
s_read (const char *path, sl_buf_t *out)
{
    FILE *f = fopen (path, "rb");
    if (!f)
        return -1;
    char chunk [8192];
    size_t n;
    while ((n = fread (chunk, 1, sizeof chunk, f)) > 0 && out->len <= S_FILE_MAX)
        sl_buf_append (out, chunk, n);
    fclose (f);
    return out->len > S_FILE_MAX ? -1 : 0;
}

//  The type of a PEM public key: RSA, EC on P-256, or 0 for another.
static int
s_pem_type (const char *pem)
{
    BIO *bio = BIO_new_mem_buf (pem, -1);
    EVP_PKEY *key = bio ? PEM_read_bio_PUBKEY (bio, NULL, NULL, NULL) : NULL;
    int type = 0;
    if (key && EVP_PKEY_is_a (key, "RSA"))
        type = S_RSA;
    else
    if (key && EVP_PKEY_is_a (key, "EC")) {
        char group [64] = "";
        size_t len = 0;
        if (EVP_PKEY_get_utf8_string_param (key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &len)
        &&  strcmp (group, "prime256v1") == 0)
            type = S_EC;
    }
    EVP_PKEY_free (key);
    BIO_free (bio);
    return type;
}

static int
s_add (sl_jwtkeys_t *self, char *pem, int type, const char *kid)
{
    if (self->count == S_KEYS_MAX) {
        free (pem);
        return -1;
    }
    s_key_t *k = &self->keys [self->count++];
    k->pem = pem;
    k->type = type;
    snprintf (k->kid, sizeof k->kid, "%s", kid ? kid : "");
    return 0;
}

//  base64url text into bytes; how many, -1 when it is not.
static long
s_unbase64 (const char *text, size_t len, uint8_t *out, size_t max)
{
    size_t got = 0;
    if (sodium_base642bin (out, max, text, len, NULL, &got, NULL, sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0)
        return -1;
    return (long) got;
}

//  A JWK (kty RSA, or EC on P-256) as a PEM public key, or NULL.
static char *
s_jwk_pem (json_t *jwk, int *type)
{
    const char *kty = json_string_value (json_object_get (jwk, "kty"));
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new ();
    OSSL_PARAM *params = NULL;
    BIGNUM *n = NULL, *e = NULL;
    const char *name = NULL;
    uint8_t buf [1024], point [1 + 2 * S_EC_COORD];
    if (kty && strcmp (kty, "RSA") == 0) {
        const char *tn = json_string_value (json_object_get (jwk, "n"));
        const char *te = json_string_value (json_object_get (jwk, "e"));
        long ln = tn ? s_unbase64 (tn, strlen (tn), buf, sizeof buf) : -1;
        n = ln > 0 ? BN_bin2bn (buf, (int) ln, NULL) : NULL;
        long le = te ? s_unbase64 (te, strlen (te), buf, sizeof buf) : -1;
        e = le > 0 ? BN_bin2bn (buf, (int) le, NULL) : NULL;
        if (n && e && OSSL_PARAM_BLD_push_BN (bld, OSSL_PKEY_PARAM_RSA_N, n)
        &&  OSSL_PARAM_BLD_push_BN (bld, OSSL_PKEY_PARAM_RSA_E, e)) {
            name = "RSA";
            *type = S_RSA;
        }
    }
    else
    if (kty && strcmp (kty, "EC") == 0) {
        const char *crv = json_string_value (json_object_get (jwk, "crv"));
        const char *tx = json_string_value (json_object_get (jwk, "x"));
        const char *ty = json_string_value (json_object_get (jwk, "y"));
        point [0] = 0x04;               //  an uncompressed point: x then y
        if (crv && strcmp (crv, "P-256") == 0 && tx && ty
        &&  s_unbase64 (tx, strlen (tx), point + 1, S_EC_COORD) == S_EC_COORD
        &&  s_unbase64 (ty, strlen (ty), point + 1 + S_EC_COORD, S_EC_COORD) == S_EC_COORD
        &&  OSSL_PARAM_BLD_push_utf8_string (bld, OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0)
        &&  OSSL_PARAM_BLD_push_octet_string (bld, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point)) {
            name = "EC";
            *type = S_EC;
        }
    }
    char *pem = NULL;
    params = name ? OSSL_PARAM_BLD_to_param (bld) : NULL;
    EVP_PKEY_CTX *ctx = params ? EVP_PKEY_CTX_new_from_name (NULL, name, NULL) : NULL;
    EVP_PKEY *key = NULL;
    if (ctx && EVP_PKEY_fromdata_init (ctx) > 0 && EVP_PKEY_fromdata (ctx, &key, EVP_PKEY_PUBLIC_KEY, params) > 0) {
        BIO *bio = BIO_new (BIO_s_mem ());
        char *data = NULL;
        long len = 0;
        if (bio && PEM_write_bio_PUBKEY (bio, key) && (len = BIO_get_mem_data (bio, &data)) > 0)
            pem = sl_xstrndup (data, (size_t) len);
        BIO_free (bio);
    }
    EVP_PKEY_free (key);
    EVP_PKEY_CTX_free (ctx);
    OSSL_PARAM_free (params);
    OSSL_PARAM_BLD_free (bld);
    BN_free (n);
    BN_free (e);
    return pem;
}

//  The keys of a JWKS (text, len bytes); path names it in errors.
static int
s_load_jwks_text (sl_jwtkeys_t *self, const char *text, size_t len, const char *path, char **error)
{
    json_t *root = json_loadb (text ? text : "", len, 0, NULL);
    json_t *keys = json_object_get (root, "keys");
    if (!json_is_array (keys)) {
        json_decref (root);
        *error = s_error (path, "not a JWKS file: a JSON object with a keys list");
        return -1;
    }
    size_t i, added = 0;
    json_t *jwk;
    json_array_foreach (keys, i, jwk) {
        const char *use = json_string_value (json_object_get (jwk, "use"));
        if (use && strcmp (use, "sig") != 0)
            continue;                   //  an encryption key checks no signature
        int type = 0;
        char *pem = s_jwk_pem (jwk, &type);
        if (pem && s_add (self, pem, type, json_string_value (json_object_get (jwk, "kid"))) == 0)
            added++;
    }
    json_decref (root);
    if (!added) {
        *error = s_error (path, "no RSA or P-256 EC signing key in the JWKS");
        return -1;
    }
    return 0;
}

static int
s_load_jwks (sl_jwtkeys_t *self, const char *path, char **error)
{
    sl_buf_t text = { 0 };
    int rc = s_read (path, &text);
    if (rc == 0)
        rc = s_load_jwks_text (self, text.data, text.len, path, error);
    else
        *error = s_error (path, "not a JWKS file: a JSON object with a keys list");
    sl_buf_free (&text);
    return rc;
}

sl_jwtkeys_t *
sl_jwtkeys_from_jwks (const char *text, size_t len, const char *source, char **error)
{
    *error = NULL;
    sl_jwtkeys_t *self = sl_xcalloc (1, sizeof *self);
    if (s_load_jwks_text (self, text, len, source, error))
        sl_jwtkeys_destroy (&self);
    return self;
}

sl_jwtkeys_t *
sl_jwtkeys_new (const sl_jwt_spec_t *spec, char **error)
{
    *error = NULL;
    sl_jwtkeys_t *self = sl_xcalloc (1, sizeof *self);
    for (size_t i = 0; spec->pem && spec->pem [i] && !*error; i++) {
        sl_buf_t text = { 0 };
        int type = s_read (spec->pem [i], &text) == 0 ? s_pem_type (sl_buf_cstr (&text)) : 0;
        if (!type)
            *error = s_error (spec->pem [i], "not a PEM public key of RSA or EC P-256");
        else
            s_add (self, sl_xstrdup (sl_buf_cstr (&text)), type, NULL);
        sl_buf_free (&text);
    }
    if (!*error && spec->jwks)
        s_load_jwks (self, spec->jwks, error);
    if (*error)
        sl_jwtkeys_destroy (&self);
    return self;
}

void
sl_jwtkeys_destroy (sl_jwtkeys_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_jwtkeys_t *self = *self_p;
    for (size_t i = 0; i < self->count; i++)
        free (self->keys [i].pem);
    free (self);
    *self_p = NULL;
}

size_t sl_jwtkeys_count (const sl_jwtkeys_t *self) { return self ? self->count : 0; }

bool
sl_jwt_looks_like (const char *text)
{
    const char *dot = text ? strchr (text, '.') : NULL;
    return dot && dot > text && strchr (dot + 1, '.') && !strchr (strchr (dot + 1, '.') + 1, '.');
}

//  One base64url part of a token as JSON, or NULL.
static json_t *
s_part (const char *text, size_t len)
{
    uint8_t *bytes = sl_xmalloc (len + 1);
    long n = s_unbase64 (text, len, bytes, len + 1);
    json_t *v = n > 0 ? json_loadb ((const char *) bytes, (size_t) n, 0, NULL) : NULL;
    free (bytes);
    if (v && !json_is_object (v)) {
        json_decref (v);
        v = NULL;
    }
    return v;
}

//  A claim as a number of seconds, or -1.
static int64_t
s_time (json_t *v)
{
    return json_is_integer (v) ? (int64_t) json_integer_value (v) : json_is_real (v) ? (int64_t) json_real_value (v)
                                                                                      : -1;
}

static bool
s_audience (json_t *aud, const char *want)
{
    if (json_is_string (aud))
        return strcmp (json_string_value (aud), want) == 0;
    size_t i;
    json_t *v;
    json_array_foreach (aud, i, v)
        if (json_is_string (v) && strcmp (json_string_value (v), want) == 0)
            return true;
    return false;
}

static void
s_claim (json_t *payload, const char *name, const char *fallback, char *out, size_t size)
{
    json_t *v = json_object_get (payload, name);
    snprintf (out, size, "%s", json_is_string (v) ? json_string_value (v) : fallback);
}

static int
s_times (int64_t exp, int64_t nbf, int64_t now)
{
    if (exp < 0 || now > exp + SL_JWT_LEEWAY_S)
        return SL_JWT_EXPIRED;
    if (nbf >= 0 && now + SL_JWT_LEEWAY_S < nbf)
        return SL_JWT_NOT_YET;
    return SL_JWT_OK;
}

int
sl_jwt_verify (sl_jwtkeys_t *keys, const sl_jwt_spec_t *spec, const char *token, int64_t now,
               sl_jwt_claims_t *out)
{
    memset (out, 0, sizeof *out);
    if (!token || strlen (token) > SL_JWT_TOKEN_MAX || !sl_jwt_looks_like (token))
        return SL_JWT_MALFORMED;
    uint8_t hash [crypto_hash_sha256_BYTES];
    crypto_hash_sha256 (hash, (const unsigned char *) token, strlen (token));
    s_memo_t *memo = &keys->memo [(((size_t) hash [0] << 8) | hash [1]) % S_MEMO_SLOTS];
    if (memo->used && sodium_memcmp (memo->hash, hash, sizeof hash) == 0) {
        int rc = s_times (memo->exp, memo->nbf, now);
        if (rc == SL_JWT_OK)
            *out = memo->claims;
        return rc;
    }
    const char *dot1 = strchr (token, '.'), *dot2 = strchr (dot1 + 1, '.');
    json_t *header = s_part (token, (size_t) (dot1 - token));
    json_t *payload = s_part (dot1 + 1, (size_t) (dot2 - dot1 - 1));
    int rc = header && payload ? SL_JWT_OK : SL_JWT_MALFORMED;
    //  The alg the header claims, and the key type that can check it.
    const char *alg = json_string_value (json_object_get (header, "alg"));
    int type = alg && strcmp (alg, "RS256") == 0 ? S_RSA : alg && strcmp (alg, "ES256") == 0 ? S_EC : 0;
    jwt_alg_t want = type == S_RSA ? JWT_ALG_RS256 : JWT_ALG_ES256;
    if (rc == SL_JWT_OK && !type)
        rc = SL_JWT_ALG;
    const char *kid = json_string_value (json_object_get (header, "kid"));
    if (rc == SL_JWT_OK && kid) {
        bool known = false;
        for (size_t i = 0; i < keys->count; i++)
            known |= strcmp (keys->keys [i].kid, kid) == 0;
        if (!known)
            rc = SL_JWT_KID;
    }
    if (rc == SL_JWT_OK) {
        rc = SL_JWT_SIGNATURE;
        for (size_t i = 0; i < keys->count && rc != SL_JWT_OK; i++) {
            const s_key_t *k = &keys->keys [i];
            if (k->type != type || (kid && strcmp (k->kid, kid) != 0))
                continue;
            jwt_t *jwt = NULL;
            if (jwt_decode (&jwt, token, (const unsigned char *) k->pem, (int) strlen (k->pem)) == 0
            &&  jwt_get_alg (jwt) == want) {
                rc = SL_JWT_OK;
                snprintf (out->kid, sizeof out->kid, "%s", k->kid);
            }
            jwt_free (jwt);
        }
    }
    if (rc == SL_JWT_OK) {
        int64_t exp = s_time (json_object_get (payload, "exp"));
        int64_t nbf = s_time (json_object_get (payload, "nbf"));
        const char *iss = json_string_value (json_object_get (payload, "iss"));
        rc = s_times (exp, nbf, now);
        if (rc == SL_JWT_OK && spec->issuer && (!iss || strcmp (iss, spec->issuer) != 0))
            rc = SL_JWT_ISSUER;
        else
        if (rc == SL_JWT_OK && (!spec->audience || !s_audience (json_object_get (payload, "aud"), spec->audience)))
            rc = SL_JWT_AUDIENCE;
    }
    if (rc == SL_JWT_OK) {
        s_claim (payload, spec->team_claim ? spec->team_claim : "team", SL_KEYRING_DEFAULT_TEAM, out->team,
                 sizeof out->team);
        s_claim (payload, spec->user_claim ? spec->user_claim : "sub", "", out->user, sizeof out->user);
        //  Every user of a signing key shares its key id: without a user
        //  the caller could not be told from any other (approvals' memory,
        //  who may decide an approval).
        if (!*out->user)
            rc = SL_JWT_USER;
    }
    if (rc == SL_JWT_OK) {
        memcpy (memo->hash, hash, sizeof hash);
        memo->used = true;
        memo->exp = s_time (json_object_get (payload, "exp"));
        memo->nbf = s_time (json_object_get (payload, "nbf"));
        memo->claims = *out;
    }
    json_decref (header);
    json_decref (payload);
    if (rc != SL_JWT_OK)
        memset (out, 0, sizeof *out);
    return rc;
}
