/*  sl_oidc.c - the console's sign-in with an OpenID Connect provider (see sl_oidc.h). */
#include "services/audit/console/sl_oidc.h"

#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/identity/sl_jwt.h"

#define S_RANDOM_BYTES 32               //  of a state, a nonce, a PKCE verifier
#define S_RANDOM_SIZE SL_OIDC_STATE_MAX //  their base64url text (43 characters), with the NUL
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
    sl_oidc_fetch_fn *fetch;            //  blocking (tests), when start is NULL
    void *fetch_arg;
    sl_oidc_start_fn *start;            //  on the reactor, or NULL
    void *start_arg;
    int ops;                            //  sign-ins waiting for the provider
    bool discovered;
    char authorize [SL_OIDC_URL_MAX], token [SL_OIDC_URL_MAX], jwks_uri [SL_OIDC_URL_MAX];
    char end_session [SL_OIDC_URL_MAX];
    sl_jwtkeys_t *keys;
    s_login_t logins [SL_OIDC_MAX_LOGINS];
    int login_count;
};

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

//  A provider's answer as JSON. NULL with why.
static json_t *
s_json_answer (int rc, int status, const sl_buf_t *body, const char *err, const char *what,
               char why [SL_OIDC_WHY_MAX])
{
    json_t *root = NULL;
    if (rc)
        snprintf (why, SL_OIDC_WHY_MAX, "the provider cannot be reached (%s: %.120s)", what, err ? err : "");
    else
    if (status != 200)
        snprintf (why, SL_OIDC_WHY_MAX, "the provider answered %d to its %s", status, what);
    else
    {
        root = json_loadb (body->data ? body->data : "", body->len, 0, NULL);
        if (!json_is_object (root)) {
            json_decref (root);
            root = NULL;
            snprintf (why, SL_OIDC_WHY_MAX, "the provider's %s is not a JSON object", what);
        }
    }
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

//  The JWKS answer into self->keys. 0, or -1 with why.
static int
s_keys_answer (sl_oidc_t *self, int rc, int status, const sl_buf_t *body, const char *err,
               char why [SL_OIDC_WHY_MAX])
{
    json_t *jwks = s_json_answer (rc, status, body, err, "JWKS", why);
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

//  The discovery answer into the endpoints. 0, or -1 with why.
static int
s_discovery_answer (sl_oidc_t *self, int rc, int status, const sl_buf_t *body, const char *err,
                    char why [SL_OIDC_WHY_MAX])
{
    json_t *doc = s_json_answer (rc, status, body, err, "discovery document", why);
    if (!doc)
        return -1;
    const char *iss = json_string_value (json_object_get (doc, "issuer"));
    rc = 0;
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
    self->fetch = fn;
    self->fetch_arg = arg;
}

void
sl_oidc_set_start (sl_oidc_t *self, sl_oidc_start_fn *fn, void *arg)
{
    self->start = fn;
    self->start_arg = arg;
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

//  --------------------------------------------------------------------------
//  Sign-ins under way: each request to the provider is started, and the
//  flow goes on when its answer comes (at once with a blocking fetch).

typedef enum { S_STEP_DISCOVERY, S_STEP_JWKS, S_STEP_TOKEN, S_STEP_JWKS_AGAIN } s_step_t;

typedef struct {
    sl_oidc_t *self;
    bool finishing;                     //  a redirect back, else a sign-in begun
    s_step_t step;
    int64_t now;
    s_login_t login;                    //  finishing: the sign-in it ends
    char *token;                        //  finishing: the id_token, once had
    sl_oidc_begun_fn *begun;
    sl_oidc_finished_fn *finished;
    void *arg;
} s_op_t;

static void s_op_answered (void *ctx, int rc, int status, const sl_buf_t *body, const char *err);

static void
s_op_fetch (s_op_t *op, const char *url, const char *form, const char *user, const char *password)
{
    sl_oidc_t *self = op->self;
    if (self->start) {
        self->start (self->start_arg, url, form, user, password, s_op_answered, op);
        return;
    }
    sl_buf_t body = { 0 };
    int status = 0;
    char err [SL_OIDC_WHY_MAX] = "no way to reach the provider is set";
    int rc = !self->fetch ? -1 : self->fetch (self->fetch_arg, url, form, user, password, &status, &body, err);
    s_op_answered (op, rc, status, &body, err);
    sl_buf_free (&body);
}

static void
s_op_discover (s_op_t *op)
{
    sl_buf_t url = { 0 };
    sl_buf_puts (&url, op->self->issuer);
    while (url.len && url.data [url.len - 1] == '/')
        url.len--;
    sl_buf_puts (&url, S_DISCOVERY);
    op->step = S_STEP_DISCOVERY;
    s_op_fetch (op, sl_buf_cstr (&url), NULL, NULL, NULL);
    sl_buf_free (&url);
}

static void
s_op_free (s_op_t *op)
{
    if (op->token) {
        sodium_memzero (op->token, strlen (op->token));
        free (op->token);
    }
    sodium_memzero (&op->login, sizeof op->login);
    op->self->ops--;
    free (op);
}

//  A sign-in begun, now that the provider was found: a new state.
static void
s_op_begun (s_op_t *op)
{
    sl_oidc_t *self = op->self;
    s_expire (self, op->now);
    if (self->login_count == SL_OIDC_MAX_LOGINS) {
        memmove (self->logins, self->logins + 1, (SL_OIDC_MAX_LOGINS - 1) * sizeof (s_login_t));
        self->login_count--;
    }
    s_login_t *login = &self->logins [self->login_count++];
    s_random (login->state);
    s_random (login->nonce);
    s_random (login->verifier);
    login->expires = op->now + SL_OIDC_LOGIN_MS;
    uint8_t hash [crypto_hash_sha256_BYTES];
    crypto_hash_sha256 (hash, (const unsigned char *) login->verifier, strlen (login->verifier));
    char challenge [S_RANDOM_SIZE];
    s_base64url (hash, sizeof hash, challenge, sizeof challenge);
    sl_buf_t url = { 0 };
    sl_buf_puts (&url, self->authorize);
    sl_buf_puts (&url, strchr (self->authorize, '?') ? "&" : "?");
    sl_buf_puts (&url, "response_type=code&scope=openid%20email%20profile&client_id=");
    s_escape (&url, self->client_id);
    sl_buf_puts (&url, "&redirect_uri=");
    s_escape (&url, self->redirect_uri);
    sl_buf_printf (&url, "&state=%s&nonce=%s&code_challenge=%s&code_challenge_method=S256", login->state,
                   login->nonce, challenge);
    char state [SL_OIDC_STATE_MAX];
    memcpy (state, login->state, SL_OIDC_STATE_MAX);
    op->begun (op->arg, 0, sl_buf_cstr (&url), state, NULL);
    sl_buf_free (&url);
}

//  The code exchanged at the token endpoint (client_secret_basic, the
//  id and secret form-encoded: RFC 6749, 2.3.1).
static void
s_op_exchange (s_op_t *op, const char *code)
{
    sl_oidc_t *self = op->self;
    sl_buf_t form = { 0 }, user = { 0 }, password = { 0 };
    sl_buf_puts (&form, "grant_type=authorization_code&code=");
    s_escape (&form, code);
    sl_buf_puts (&form, "&redirect_uri=");
    s_escape (&form, self->redirect_uri);
    sl_buf_printf (&form, "&code_verifier=%s", op->login.verifier);
    s_escape (&user, self->client_id);
    s_escape (&password, self->client_secret);
    if (!*self->client_secret) {
        sl_buf_puts (&form, "&client_id=");
        s_escape (&form, self->client_id);
    }
    op->step = S_STEP_TOKEN;
    s_op_fetch (op, self->token, sl_buf_cstr (&form), *self->client_secret ? sl_buf_cstr (&user) : NULL,
                sl_buf_cstr (&password));
    sodium_memzero (password.data ? password.data : "", password.data ? password.len : 0);
    sodium_memzero (form.data ? form.data : "", form.data ? form.len : 0);
    sl_buf_free (&form);
    sl_buf_free (&user);
    sl_buf_free (&password);
}

//  The token endpoint's answer: the id_token into op->token. 0, or -1 with why.
static int
s_token_answer (s_op_t *op, int rc, int status, const sl_buf_t *body, const char *err, char why [SL_OIDC_WHY_MAX])
{
    if (rc) {
        snprintf (why, SL_OIDC_WHY_MAX, "the provider cannot be reached (token endpoint: %.120s)", err ? err : "");
        return -1;
    }
    json_t *root = json_loadb (body->data ? body->data : "", body->len, 0, NULL);
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
        op->token = sl_xstrdup (id_token);
    json_decref (root);
    return op->token ? 0 : -1;
}

//  The id_token checked, and the caller it names.
static void
s_op_finished (s_op_t *op)
{
    sl_oidc_t *self = op->self;
    char why [SL_OIDC_WHY_MAX] = "";
    sl_console_caller_t out;
    memset (&out, 0, sizeof out);
    out.role = SL_CONSOLE_NOBODY;
    int rc = 0;
    json_t *payload = s_payload (op->token);
    const char *nonce = json_string_value (json_object_get (payload, "nonce"));
    if (!nonce || !s_same (nonce, op->login.nonce)) {
        snprintf (why, SL_OIDC_WHY_MAX, "the id_token's nonce is not this sign-in's");
        rc = -1;
    }
    if (rc == 0 && sl_console_role_from_claims (payload, self->role_claim, &out)) {
        snprintf (why, SL_OIDC_WHY_MAX, "the id_token names no subject (sub)");
        rc = -1;
    }
    json_decref (payload);
    if (rc) {
        memset (&out, 0, sizeof out);
        out.role = SL_CONSOLE_NOBODY;
    }
    op->finished (op->arg, rc, &out, rc ? why : NULL);
}

//  Verify op->token with the keys held: SL_JWT_OK or why not.
static int
s_op_verify (s_op_t *op)
{
    sl_jwt_spec_t spec = { .issuer = op->self->issuer, .audience = op->self->client_id, .user_claim = "sub" };
    sl_jwt_claims_t claims;
    return sl_jwt_verify (op->self->keys, &spec, op->token, op->now / 1000, &claims);
}

static void
s_op_failed (s_op_t *op, const char *why)
{
    if (op->finishing) {
        sl_console_caller_t out;
        memset (&out, 0, sizeof out);
        out.role = SL_CONSOLE_NOBODY;
        op->finished (op->arg, -1, &out, why);
    }
    else
        op->begun (op->arg, -1, NULL, NULL, why);
    s_op_free (op);
}

static void
s_op_answered (void *ctx, int rc, int status, const sl_buf_t *body, const char *err)
{
    s_op_t *op = ctx;
    sl_oidc_t *self = op->self;
    char why [SL_OIDC_WHY_MAX] = "";
    switch (op->step) {
        case S_STEP_DISCOVERY:
            self->discovered = false;
            if (s_discovery_answer (self, rc, status, body, err, why)) {
                s_op_failed (op, why);
                return;
            }
            op->step = S_STEP_JWKS;
            s_op_fetch (op, self->jwks_uri, NULL, NULL, NULL);
            return;
        case S_STEP_JWKS:
            if (s_keys_answer (self, rc, status, body, err, why)) {
                s_op_failed (op, why);
                return;
            }
            self->discovered = true;
            if (op->finishing) {
                //  The code was kept in the token's place meanwhile.
                char *code = op->token;
                op->token = NULL;
                s_op_exchange (op, code);
                free (code);
                return;
            }
            s_op_begun (op);
            s_op_free (op);
            return;
        case S_STEP_TOKEN:
        case S_STEP_JWKS_AGAIN:
            if (op->step == S_STEP_TOKEN && s_token_answer (op, rc, status, body, err, why)) {
                s_op_failed (op, why);
                return;
            }
            if (op->step == S_STEP_JWKS_AGAIN && s_keys_answer (self, rc, status, body, err, why)) {
                s_op_failed (op, why);
                return;
            }
            int reason = s_op_verify (op);
            if (reason == SL_JWT_KID && op->step == S_STEP_TOKEN) {
                //  The provider rotated its keys: fetch them again, once.
                op->step = S_STEP_JWKS_AGAIN;
                s_op_fetch (op, self->jwks_uri, NULL, NULL, NULL);
                return;
            }
            if (reason != SL_JWT_OK) {
                s_op_failed (op, s_jwt_why (reason));
                return;
            }
            s_op_finished (op);
            s_op_free (op);
            return;
    }
}

static s_op_t *
s_op_new (sl_oidc_t *self, int64_t now, void *arg)
{
    s_op_t *op = sl_xcalloc (1, sizeof *op);
    op->self = self;
    op->now = now;
    op->arg = arg;
    self->ops++;
    return op;
}

//  --------------------------------------------------------------------------
//  The flow

void
sl_oidc_begin_async (sl_oidc_t *self, int64_t now, sl_oidc_begun_fn *fn, void *arg)
{
    s_op_t *op = s_op_new (self, now, arg);
    op->begun = fn;
    //  Discovery again before each sign-in: a provider gone down is said
    //  here rather than by the browser, sent to an address that refuses it.
    s_op_discover (op);
}

void
sl_oidc_finish_async (sl_oidc_t *self, const char *code, const char *state, int64_t now, sl_oidc_finished_fn *fn,
                      void *arg)
{
    s_op_t *op = s_op_new (self, now, arg);
    op->finishing = true;
    op->finished = fn;
    if (!state || !*state || s_take (self, state, now, &op->login)) {
        s_op_failed (op, "this sign-in is unknown, used or expired (state): sign in again");
        return;
    }
    if (!code || !*code) {
        s_op_failed (op, "the provider sent no code");
        return;
    }
    if (!self->discovered) {
        op->token = sl_xstrdup (code);  //  until the discovery is had
        s_op_discover (op);
        return;
    }
    s_op_exchange (op, code);
}

int
sl_oidc_running (sl_oidc_t *self)
{
    return self->ops;
}

//  The blocking forms: the answer, had at once with a blocking fetch.
typedef struct {
    bool done;
    int rc;
    sl_buf_t *url;
    char *state;
    sl_console_caller_t *caller;
    char *why;
} s_sync_t;

static void
s_sync_begun (void *arg, int rc, const char *url, const char *state, const char *why)
{
    s_sync_t *sync = arg;
    sync->done = true;
    sync->rc = rc;
    if (rc == 0) {
        sl_buf_puts (sync->url, url);
        snprintf (sync->state, SL_OIDC_STATE_MAX, "%s", state);
    }
    else
        snprintf (sync->why, SL_OIDC_WHY_MAX, "%s", why);
}

static void
s_sync_finished (void *arg, int rc, const sl_console_caller_t *caller, const char *why)
{
    s_sync_t *sync = arg;
    sync->done = true;
    sync->rc = rc;
    *sync->caller = *caller;
    if (rc)
        snprintf (sync->why, SL_OIDC_WHY_MAX, "%s", why);
}

int
sl_oidc_begin (sl_oidc_t *self, int64_t now, sl_buf_t *url, char state [SL_OIDC_STATE_MAX],
               char why [SL_OIDC_WHY_MAX])
{
    if (self->start) {
        snprintf (why, SL_OIDC_WHY_MAX, "sign-in answers later here (sl_oidc_begin_async)");
        return -1;
    }
    s_sync_t sync = { .url = url, .state = state, .why = why };
    sl_oidc_begin_async (self, now, s_sync_begun, &sync);
    return sync.done ? sync.rc : -1;
}

int
sl_oidc_finish (sl_oidc_t *self, const char *code, const char *state, int64_t now, sl_console_caller_t *out,
                char why [SL_OIDC_WHY_MAX])
{
    memset (out, 0, sizeof *out);
    out->role = SL_CONSOLE_NOBODY;
    if (self->start) {
        snprintf (why, SL_OIDC_WHY_MAX, "sign-in answers later here (sl_oidc_finish_async)");
        return -1;
    }
    s_sync_t sync = { .caller = out, .why = why };
    sl_oidc_finish_async (self, code, state, now, s_sync_finished, &sync);
    return sync.done ? sync.rc : -1;
}
