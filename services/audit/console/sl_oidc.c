/*  sl_oidc.c - the console's sign-in with an OpenID Connect provider (see sl_oidc.h). */
#include "services/audit/console/sl_oidc.h"

#include <curl/curl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/identity/sl_jwt.h"

#define S_RANDOM_BYTES 32               //  of a state, a nonce, a PKCE verifier
#define S_RANDOM_SIZE SL_OIDC_STATE_MAX //  their base64url text (43 characters), with the NUL
#define S_ANSWER_MAX (1u << 20)         //  bytes of a provider's answer
#define S_DISCOVERY "/.well-known/openid-configuration"

//  A sign-in begun: what its redirect back must match.
typedef struct {
    char state [S_RANDOM_SIZE];
    char nonce [S_RANDOM_SIZE];
    char verifier [S_RANDOM_SIZE];
    int64_t expires;
} s_login_t;

struct _sl_oidc_t {
    char *issuer, *client_id, *client_secret, *redirect_uri, *role_claim;
    sl_oidc_fetch_fn *fetch;
    void *fetch_arg;
    bool discovered;
    char authorize [SL_OIDC_URL_MAX], token [SL_OIDC_URL_MAX], jwks_uri [SL_OIDC_URL_MAX];
    char end_session [SL_OIDC_URL_MAX];
    sl_jwtkeys_t *keys;
    s_login_t logins [SL_OIDC_MAX_LOGINS];
    int login_count;
};

//  --------------------------------------------------------------------------
//  HTTP through libcurl

static size_t
s_curl_write (char *data, size_t size, size_t nmemb, void *arg)
{
    sl_buf_t *out = arg;
    if (out->len + size * nmemb > S_ANSWER_MAX)
        return 0;                       //  too long: curl fails the transfer
    sl_buf_append (out, data, size * nmemb);
    return size * nmemb;
}

static int
s_curl_fetch (void *arg, const char *url, const char *form, const char *user, const char *password, int *status,
              sl_buf_t *out, char why [SL_OIDC_WHY_MAX])
{
    (void) arg;
    CURL *easy = curl_easy_init ();
    if (!easy) {
        snprintf (why, SL_OIDC_WHY_MAX, "cannot make an HTTP request");
        return -1;
    }
    curl_easy_setopt (easy, CURLOPT_URL, url);
    curl_easy_setopt (easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, (long) SL_OIDC_TIMEOUT_MS);
    curl_easy_setopt (easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_curl_write);
    curl_easy_setopt (easy, CURLOPT_WRITEDATA, out);
    if (form) {
        curl_easy_setopt (easy, CURLOPT_POSTFIELDS, form);
        if (user) {
            curl_easy_setopt (easy, CURLOPT_HTTPAUTH, (long) CURLAUTH_BASIC);
            curl_easy_setopt (easy, CURLOPT_USERNAME, user);
            curl_easy_setopt (easy, CURLOPT_PASSWORD, password ? password : "");
        }
    }
    CURLcode rc = curl_easy_perform (easy);
    long code = 0;
    curl_easy_getinfo (easy, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup (easy);
    *status = (int) code;
    if (rc != CURLE_OK) {
        snprintf (why, SL_OIDC_WHY_MAX, "%s", curl_easy_strerror (rc));
        return -1;
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Helpers

//  text, percent-encoded for a URL's query or a form.
static void
s_escape (sl_buf_t *out, const char *text)
{
    for (const unsigned char *p = (const unsigned char *) text; *p; p++)
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')
        ||  *p == '-' || *p == '.' || *p == '_' || *p == '~')
            sl_buf_putc (out, (char) *p);
        else
            sl_buf_printf (out, "%%%02X", *p);
}

static void
s_base64url (const uint8_t *bytes, size_t n, char *out, size_t size)
{
    sodium_bin2base64 (out, size, bytes, n, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
}

static void
s_random (char out [S_RANDOM_SIZE])
{
    uint8_t bytes [S_RANDOM_BYTES];
    randombytes_buf (bytes, sizeof bytes);
    s_base64url (bytes, sizeof bytes, out, S_RANDOM_SIZE);
    sodium_memzero (bytes, sizeof bytes);
}

static bool
s_same (const char *a, const char *b)
{
    size_t n = strlen (b);
    return strlen (a) == n && sodium_memcmp (a, b, n) == 0;
}

//  GET url as JSON. NULL with why.
static json_t *
s_get_json (sl_oidc_t *self, const char *url, const char *what, char why [SL_OIDC_WHY_MAX])
{
    sl_buf_t body = { 0 };
    int status = 0;
    char err [SL_OIDC_WHY_MAX] = "";
    json_t *root = NULL;
    if (self->fetch (self->fetch_arg, url, NULL, NULL, NULL, &status, &body, err))
        snprintf (why, SL_OIDC_WHY_MAX, "the provider cannot be reached (%s: %.120s)", what, err);
    else
    if (status != 200)
        snprintf (why, SL_OIDC_WHY_MAX, "the provider answered %d to its %s", status, what);
    else
    {
        root = json_loadb (body.data ? body.data : "", body.len, 0, NULL);
        if (!json_is_object (root)) {
            json_decref (root);
            root = NULL;
            snprintf (why, SL_OIDC_WHY_MAX, "the provider's %s is not a JSON object", what);
        }
    }
    sl_buf_free (&body);
    return root;
}

static int
s_endpoint (json_t *doc, const char *name, char out [SL_OIDC_URL_MAX], bool required, char why [SL_OIDC_WHY_MAX])
{
    const char *v = json_string_value (json_object_get (doc, name));
    out [0] = 0;
    if (!v || !*v || strlen (v) >= SL_OIDC_URL_MAX
    ||  (strncmp (v, "https://", 8) != 0 && strncmp (v, "http://", 7) != 0)) {
        if (required)
            snprintf (why, SL_OIDC_WHY_MAX, "the provider's discovery has no usable %s", name);
        return required ? -1 : 0;
    }
    snprintf (out, SL_OIDC_URL_MAX, "%s", v);
    return 0;
}

static int
s_fetch_keys (sl_oidc_t *self, char why [SL_OIDC_WHY_MAX])
{
    json_t *jwks = s_get_json (self, self->jwks_uri, "JWKS", why);
    if (!jwks)
        return -1;
    char *text = json_dumps (jwks, JSON_COMPACT), *error = NULL;
    json_decref (jwks);
    sl_jwtkeys_t *keys = text ? sl_jwtkeys_from_jwks (text, strlen (text), "the provider's JWKS", &error) : NULL;
    free (text);
    if (!keys) {
        snprintf (why, SL_OIDC_WHY_MAX, "%s", error ? error : "the provider's JWKS cannot be read");
        free (error);
        return -1;
    }
    sl_jwtkeys_destroy (&self->keys);
    self->keys = keys;
    return 0;
}

//  The discovery document and the JWKS: when not had yet, or again
//  (again: before a sign-in begins, so that a provider gone down is said
//  here rather than by the browser, sent to an address that refuses it).
static int
s_discover (sl_oidc_t *self, bool again, char why [SL_OIDC_WHY_MAX])
{
    if (self->discovered && !again)
        return 0;
    sl_buf_t url = { 0 };
    sl_buf_puts (&url, self->issuer);
    while (url.len && url.data [url.len - 1] == '/')
        url.len--;
    sl_buf_puts (&url, S_DISCOVERY);
    json_t *doc = s_get_json (self, sl_buf_cstr (&url), "discovery document", why);
    sl_buf_free (&url);
    if (!doc)
        return -1;
    const char *iss = json_string_value (json_object_get (doc, "issuer"));
    int rc = 0;
    if (!iss || strcmp (iss, self->issuer) != 0) {
        snprintf (why, SL_OIDC_WHY_MAX, "the provider's discovery names another issuer than SLUICE_OIDC_ISSUER");
        rc = -1;
    }
    if (rc == 0)
        rc = s_endpoint (doc, "authorization_endpoint", self->authorize, true, why);
    if (rc == 0)
        rc = s_endpoint (doc, "token_endpoint", self->token, true, why);
    if (rc == 0)
        rc = s_endpoint (doc, "jwks_uri", self->jwks_uri, true, why);
    if (rc == 0)
        rc = s_endpoint (doc, "end_session_endpoint", self->end_session, false, why);
    json_decref (doc);
    if (rc == 0)
        rc = s_fetch_keys (self, why);
    self->discovered = rc == 0;
    return rc;
}

//  --------------------------------------------------------------------------
//  Life cycle

sl_oidc_t *
sl_oidc_new (const sl_oidc_config_t *config)
{
    if (!config->issuer || !*config->issuer || !config->client_id || !*config->client_id
    ||  !config->redirect_uri || !*config->redirect_uri || sodium_init () < 0)
        return NULL;
    sl_oidc_t *self = sl_xcalloc (1, sizeof *self);
    self->issuer = sl_xstrdup (config->issuer);
    self->client_id = sl_xstrdup (config->client_id);
    self->client_secret = sl_xstrdup (config->client_secret ? config->client_secret : "");
    self->redirect_uri = sl_xstrdup (config->redirect_uri);
    self->role_claim = sl_xstrdup (config->role_claim && *config->role_claim ? config->role_claim : "groups");
    self->fetch = s_curl_fetch;
    return self;
}

void
sl_oidc_destroy (sl_oidc_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_oidc_t *self = *self_p;
    sodium_memzero (self->client_secret, strlen (self->client_secret));
    free (self->issuer);
    free (self->client_id);
    free (self->client_secret);
    free (self->redirect_uri);
    free (self->role_claim);
    sl_jwtkeys_destroy (&self->keys);
    sodium_memzero (self->logins, sizeof self->logins);
    free (self);
    *self_p = NULL;
}

void
sl_oidc_set_fetch (sl_oidc_t *self, sl_oidc_fetch_fn *fn, void *arg)
{
    self->fetch = fn ? fn : s_curl_fetch;
    self->fetch_arg = fn ? arg : NULL;
}

const char *
sl_oidc_end_session (sl_oidc_t *self)
{
    return self->discovered && *self->end_session ? self->end_session : NULL;
}

//  Forget the sign-ins past their time.
static void
s_expire (sl_oidc_t *self, int64_t now)
{
    int kept = 0;
    for (int i = 0; i < self->login_count; i++)
        if (self->logins [i].expires > now)
            self->logins [kept++] = self->logins [i];
    self->login_count = kept;
}

int
sl_oidc_pending (sl_oidc_t *self)
{
    return self->login_count;
}

//  --------------------------------------------------------------------------
//  The flow

int
sl_oidc_begin (sl_oidc_t *self, int64_t now, sl_buf_t *url, char state [SL_OIDC_STATE_MAX],
               char why [SL_OIDC_WHY_MAX])
{
    if (s_discover (self, true, why))
        return -1;
    s_expire (self, now);
    if (self->login_count == SL_OIDC_MAX_LOGINS) {
        memmove (self->logins, self->logins + 1, (SL_OIDC_MAX_LOGINS - 1) * sizeof (s_login_t));
        self->login_count--;
    }
    s_login_t *login = &self->logins [self->login_count++];
    s_random (login->state);
    s_random (login->nonce);
    s_random (login->verifier);
    login->expires = now + SL_OIDC_LOGIN_MS;
    memcpy (state, login->state, SL_OIDC_STATE_MAX);
    uint8_t hash [crypto_hash_sha256_BYTES];
    crypto_hash_sha256 (hash, (const unsigned char *) login->verifier, strlen (login->verifier));
    char challenge [S_RANDOM_SIZE];
    s_base64url (hash, sizeof hash, challenge, sizeof challenge);
    sl_buf_puts (url, self->authorize);
    sl_buf_puts (url, strchr (self->authorize, '?') ? "&" : "?");
    sl_buf_puts (url, "response_type=code&scope=openid%20email%20profile&client_id=");
    s_escape (url, self->client_id);
    sl_buf_puts (url, "&redirect_uri=");
    s_escape (url, self->redirect_uri);
    sl_buf_printf (url, "&state=%s&nonce=%s&code_challenge=%s&code_challenge_method=S256", login->state,
                   login->nonce, challenge);
    return 0;
}

//  Take the sign-in of state off the list (once: a replay finds none).
static int
s_take (sl_oidc_t *self, const char *state, int64_t now, s_login_t *out)
{
    s_expire (self, now);
    int found = -1;
    for (int i = 0; i < self->login_count; i++)
        if (s_same (state, self->logins [i].state) && found < 0)
            found = i;
    if (found < 0)
        return -1;
    *out = self->logins [found];
    sodium_memzero (&self->logins [found], sizeof (s_login_t));
    memmove (self->logins + found, self->logins + found + 1,
             (size_t) (self->login_count - found - 1) * sizeof (s_login_t));
    self->login_count--;
    return 0;
}

//  The token endpoint's id_token for code. NULL with why.
static char *
s_exchange (sl_oidc_t *self, const char *code, const s_login_t *login, char why [SL_OIDC_WHY_MAX])
{
    sl_buf_t form = { 0 }, body = { 0 }, user = { 0 }, password = { 0 };
    sl_buf_puts (&form, "grant_type=authorization_code&code=");
    s_escape (&form, code);
    sl_buf_puts (&form, "&redirect_uri=");
    s_escape (&form, self->redirect_uri);
    sl_buf_printf (&form, "&code_verifier=%s", login->verifier);
    //  client_secret_basic: the id and secret form-encoded (RFC 6749, 2.3.1).
    s_escape (&user, self->client_id);
    s_escape (&password, self->client_secret);
    if (!*self->client_secret) {
        sl_buf_puts (&form, "&client_id=");
        s_escape (&form, self->client_id);
    }
    int status = 0;
    char err [SL_OIDC_WHY_MAX] = "";
    char *token = NULL;
    if (self->fetch (self->fetch_arg, self->token, sl_buf_cstr (&form), *self->client_secret ? sl_buf_cstr (&user) : NULL,
                     sl_buf_cstr (&password), &status, &body, err))
        snprintf (why, SL_OIDC_WHY_MAX, "the provider cannot be reached (token endpoint: %.120s)", err);
    else {
        json_t *root = json_loadb (body.data ? body.data : "", body.len, 0, NULL);
        const char *id_token = json_string_value (json_object_get (root, "id_token"));
        if (status != 200)
        {
            const char *error = json_string_value (json_object_get (root, "error"));
            snprintf (why, SL_OIDC_WHY_MAX, "the provider refused the code (%d %s)", status, error ? error : "");
        }
        else
        if (!id_token)
            snprintf (why, SL_OIDC_WHY_MAX, "the provider's answer has no id_token");
        else
            token = sl_xstrdup (id_token);
        json_decref (root);
    }
    sodium_memzero (password.data ? password.data : "", password.data ? password.len : 0);
    sl_buf_free (&form);
    sl_buf_free (&body);
    sl_buf_free (&user);
    sl_buf_free (&password);
    return token;
}

//  The payload of a token whose signature was checked, as JSON.
static json_t *
s_payload (const char *token)
{
    const char *dot1 = strchr (token, '.');
    const char *dot2 = dot1 ? strchr (dot1 + 1, '.') : NULL;
    if (!dot2)
        return NULL;
    size_t len = (size_t) (dot2 - dot1 - 1), got = 0;
    uint8_t *bytes = sl_xmalloc (len + 1);
    json_t *root = NULL;
    if (sodium_base642bin (bytes, len + 1, dot1 + 1, len, NULL, &got, NULL,
                           sodium_base64_VARIANT_URLSAFE_NO_PADDING) == 0)
        root = json_loadb ((const char *) bytes, got, 0, NULL);
    free (bytes);
    return root;
}

static const char *
s_jwt_why (int reason)
{
    switch (reason) {
        case SL_JWT_MALFORMED: return "the id_token is not a signed token";
        case SL_JWT_ALG: return "the id_token is not signed with RS256 or ES256 (unsigned tokens are refused)";
        case SL_JWT_KID: return "the id_token names a key the provider's JWKS does not hold";
        case SL_JWT_SIGNATURE: return "the id_token's signature does not check";
        case SL_JWT_EXPIRED: return "the id_token has expired";
        case SL_JWT_NOT_YET: return "the id_token is not valid yet";
        case SL_JWT_ISSUER: return "the id_token's iss is not the issuer";
        case SL_JWT_AUDIENCE: return "the id_token's aud is not this console's client id";
        case SL_JWT_USER: return "the id_token names no subject (sub)";
        default: return "the id_token is refused";
    }
}

int
sl_oidc_finish (sl_oidc_t *self, const char *code, const char *state, int64_t now, sl_console_caller_t *out,
                char why [SL_OIDC_WHY_MAX])
{
    memset (out, 0, sizeof *out);
    out->role = SL_CONSOLE_NOBODY;
    s_login_t login;
    if (!state || !*state || s_take (self, state, now, &login)) {
        snprintf (why, SL_OIDC_WHY_MAX, "this sign-in is unknown, used or expired (state): sign in again");
        return -1;
    }
    if (!code || !*code) {
        snprintf (why, SL_OIDC_WHY_MAX, "the provider sent no code");
        sodium_memzero (&login, sizeof login);
        return -1;
    }
    if (s_discover (self, false, why)) {
        sodium_memzero (&login, sizeof login);
        return -1;
    }
    char *token = s_exchange (self, code, &login, why);
    int rc = token ? 0 : -1;
    if (rc == 0) {
        sl_jwt_spec_t spec = { .issuer = self->issuer, .audience = self->client_id, .user_claim = "sub" };
        sl_jwt_claims_t claims;
        int reason = sl_jwt_verify (self->keys, &spec, token, now / 1000, &claims);
        if (reason == SL_JWT_KID && s_fetch_keys (self, why) == 0)
            reason = sl_jwt_verify (self->keys, &spec, token, now / 1000, &claims);
        if (reason != SL_JWT_OK) {
            snprintf (why, SL_OIDC_WHY_MAX, "%s", s_jwt_why (reason));
            rc = -1;
        }
    }
    json_t *payload = rc == 0 ? s_payload (token) : NULL;
    if (rc == 0) {
        const char *nonce = json_string_value (json_object_get (payload, "nonce"));
        if (!nonce || !s_same (nonce, login.nonce)) {
            snprintf (why, SL_OIDC_WHY_MAX, "the id_token's nonce is not this sign-in's");
            rc = -1;
        }
    }
    if (rc == 0 && sl_console_role_from_claims (payload, self->role_claim, out)) {
        snprintf (why, SL_OIDC_WHY_MAX, "the id_token names no subject (sub)");
        rc = -1;
    }
    json_decref (payload);
    if (token) {
        sodium_memzero (token, strlen (token));
        free (token);
    }
    sodium_memzero (&login, sizeof login);
    if (rc) {
        memset (out, 0, sizeof *out);
        out->role = SL_CONSOLE_NOBODY;
    }
    return rc;
}
