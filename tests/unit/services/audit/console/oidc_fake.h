/*  oidc_fake.h - an OpenID provider in memory for the unit tests of the
    console's sign-in (sl_oidc, sl_console): its discovery document, its
    JWKS (an EC P-256 key made at test time, tests/jwt_fixture.h) and its
    token endpoint, answering with an id_token the test shapes (aud, exp,
    nonce, groups, or unsigned). The end to end test against a real
    provider is the browser's (tests/browser/oidc.mjs). Header-only.
*/
#ifndef OIDC_FAKE_H
#define OIDC_FAKE_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <jwt.h>
#include <string.h>
#include <time.h>

#include "services/audit/console/sl_oidc.h"
#include "tests/jwt_fixture.h"

#define OIDC_FAKE_ISSUER "http://127.0.0.1:9/op"
#define OIDC_FAKE_CLIENT "sluice-console"

typedef struct {
    jwt_pair_t key;
    bool down;                          //  no answer at all
    int fetches;
    //  The next id_token: what it says.
    const char *aud;                    //  NULL: OIDC_FAKE_CLIENT
    const char *iss;                    //  NULL: OIDC_FAKE_ISSUER
    long exp;                           //  0: an hour from now
    const char *nonce;                  //  NULL: the one the sign-in sent
    const char *groups;                 //  JSON of the groups claim, NULL: none
    bool unsigned_token;                //  alg none
    const jwt_pair_t *signer;           //  NULL: the JWKS's key; else another, same kid
    //  What the console sent.
    char nonce_sent [64], verifier [64], challenge [64], method [16];
    char user [128];
} oidc_fake_t;

//  A query argument of url into out.
static inline void
oidc_fake_arg (const char *url, const char *name, char *out, size_t size)
{
    char key [64];
    snprintf (key, sizeof key, "%s=", name);
    const char *p = strstr (url, key);
    while (p && p [-1] != '?' && p [-1] != '&')
        p = strstr (p + 1, key);
    out [0] = 0;
    if (p) {
        p += strlen (key);
        snprintf (out, size, "%.*s", (int) strcspn (p, "&"), p);
    }
}

static inline char *
oidc_fake_b64 (const char *text)
{
    size_t n = strlen (text);
    char *out = malloc (sodium_base64_ENCODED_LEN (n, sodium_base64_VARIANT_URLSAFE_NO_PADDING));
    sodium_bin2base64 (out, sodium_base64_ENCODED_LEN (n, sodium_base64_VARIANT_URLSAFE_NO_PADDING),
                       (const unsigned char *) text, n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    return out;
}

static inline char *
oidc_fake_id_token (oidc_fake_t *f)
{
    json_t *claims = json_pack ("{s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:s}", "iss", f->iss ? f->iss : OIDC_FAKE_ISSUER,
                                "aud", f->aud ? f->aud : OIDC_FAKE_CLIENT, "sub", "u-ann", "email",
                                "ann@example.com", "name", "Ann Example", "iat", (json_int_t) time (NULL), "exp",
                                (json_int_t) (f->exp ? f->exp : time (NULL) + 3600), "nonce",
                                f->nonce ? f->nonce : f->nonce_sent);
    if (f->groups)
        json_object_set_new (claims, "groups", json_loads (f->groups, JSON_DECODE_ANY, NULL));
    char *payload = json_dumps (claims, JSON_COMPACT);
    json_decref (claims);
    char *token = NULL;
    if (f->unsigned_token) {
        char *h = oidc_fake_b64 ("{\"alg\":\"none\",\"typ\":\"JWT\"}"), *p = oidc_fake_b64 (payload);
        token = malloc (strlen (h) + strlen (p) + 3);
        sprintf (token, "%s.%s.", h, p);
        free (h);
        free (p);
    }
    else {
        jwt_t *jwt = NULL;
        cr_assert_eq (jwt_new (&jwt), 0);
        cr_assert_eq (jwt_add_grants_json (jwt, payload), 0);
        jwt_add_header (jwt, "kid", "k1");
        const jwt_pair_t *key = f->signer ? f->signer : &f->key;
        cr_assert_eq (jwt_set_alg (jwt, JWT_ALG_ES256, (const unsigned char *) key->private_pem,
                                   (int) strlen (key->private_pem)), 0);
        token = jwt_encode_str (jwt);
        jwt_free (jwt);
    }
    free (payload);
    return token;
}

static inline int
oidc_fake_fetch (void *arg, const char *url, const char *form, const char *user, const char *password, int *status,
                 sl_buf_t *out, char why [SL_OIDC_WHY_MAX])
{
    (void) password;
    oidc_fake_t *f = arg;
    f->fetches++;
    if (f->down) {
        snprintf (why, SL_OIDC_WHY_MAX, "Couldn't connect to server");
        return -1;
    }
    *status = 200;
    if (strcmp (url, OIDC_FAKE_ISSUER "/.well-known/openid-configuration") == 0)
        sl_buf_puts (out, "{\"issuer\":\"" OIDC_FAKE_ISSUER "\","
                          "\"authorization_endpoint\":\"" OIDC_FAKE_ISSUER "/auth\","
                          "\"token_endpoint\":\"" OIDC_FAKE_ISSUER "/token\","
                          "\"jwks_uri\":\"" OIDC_FAKE_ISSUER "/jwks\","
                          "\"end_session_endpoint\":\"" OIDC_FAKE_ISSUER "/session/end\"}");
    else
    if (strcmp (url, OIDC_FAKE_ISSUER "/jwks") == 0) {
        char jwk [512];
        jwt_fixture_jwk (&f->key, "k1", jwk, sizeof jwk);
        sl_buf_printf (out, "{\"keys\":[%s]}", jwk);
    }
    else
    if (strcmp (url, OIDC_FAKE_ISSUER "/token") == 0 && form) {
        snprintf (f->user, sizeof f->user, "%s", user ? user : "");
        char form_url [2048];
        snprintf (form_url, sizeof form_url, "?%s", form);
        oidc_fake_arg (form_url, "code_verifier", f->verifier, sizeof f->verifier);
        char code [64];
        oidc_fake_arg (form_url, "code", code, sizeof code);
        if (strcmp (code, "good-code") != 0) {
            *status = 400;
            sl_buf_puts (out, "{\"error\":\"invalid_grant\"}");
            return 0;
        }
        char *token = oidc_fake_id_token (f);
        sl_buf_printf (out, "{\"access_token\":\"at\",\"token_type\":\"Bearer\",\"id_token\":\"%s\"}", token);
        free (token);
    }
    else
        *status = 404;
    return 0;
}

static inline void
oidc_fake_init (oidc_fake_t *f)
{
    memset (f, 0, sizeof *f);
    jwt_fixture_make (&f->key, false);
}

//  What the authorization URL sent: the nonce (kept for the token), the
//  challenge and its method; the state into state.
static inline void
oidc_fake_authorized (oidc_fake_t *f, const char *url, char *state, size_t size)
{
    oidc_fake_arg (url, "state", state, size);
    oidc_fake_arg (url, "nonce", f->nonce_sent, sizeof f->nonce_sent);
    oidc_fake_arg (url, "code_challenge", f->challenge, sizeof f->challenge);
    oidc_fake_arg (url, "code_challenge_method", f->method, sizeof f->method);
}

#endif
