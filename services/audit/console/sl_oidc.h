/*  sl_oidc.h - the console's sign-in with an OpenID Connect provider:
    the authorization code flow with PKCE.

    The provider is the one SLUICE_OIDC_ISSUER names; its discovery
    document (<issuer>/.well-known/openid-configuration) gives the
    authorization, token and JWKS endpoints (and end_session_endpoint,
    when it has one). Discovery and the JWKS are fetched as each sign-in
    begins (sign-ins are rare): a provider that is down is said at once,
    not left to the browser, and found again when it is back; the JWKS
    again once when a token names a kid it does not hold (the provider
    rotated its keys).

      begin    a new sign-in: a random state, nonce and PKCE verifier
               (S256), kept here for SL_OIDC_LOGIN_MS, at most
               SL_OIDC_MAX_LOGINS at once; the URL of the provider's
               authorization endpoint the browser is sent to;
      finish   the provider's redirect back (code, state): the state must
               be one begun and not yet finished (it is forgotten at
               once: a replayed state is refused), the code is exchanged
               at the token endpoint (client_secret_basic, with the
               verifier), and the id_token checked (sl_jwt.h: signed
               RS256 or ES256 by a key of the JWKS, never unsigned; iss
               the issuer, aud the client id, exp not past) and its
               nonce the state's. The caller it names (sl_console_role.h,
               the role from the configured claim) is the answer.

    Every refusal says why, in words a person signing in can act on
    ("the provider cannot be reached: ..."); no token, code or secret
    is logged or kept past the call.

    Requests to the provider are started through a start function (the
    console's, on the audit's reactor: libcurl multi, SL_OIDC_TIMEOUT_MS
    a request, audit_console.h), and the flow goes on when each answer
    comes: a slow provider holds up its sign-ins, never the reactor. The
    blocking forms (sl_oidc_begin, sl_oidc_finish, a fetch function) are
    for tests.
*/
#ifndef SL_OIDC_H
#define SL_OIDC_H

#include <stdint.h>

#include "common/base/sl_buf.h"
#include "services/audit/console/sl_console_role.h"

#define SL_OIDC_LOGIN_MS (10 * 60 * 1000)       //  a sign-in begun lives this long
#define SL_OIDC_MAX_LOGINS 256          //  sign-ins begun at once; the oldest goes first
#define SL_OIDC_TIMEOUT_MS 5000         //  a request to the provider
#define SL_OIDC_WAIT_MS 10000           //  a browser waits this long for its sign-in (two requests)
#define SL_OIDC_WHY_MAX 256             //  bytes of a refusal's text
#define SL_OIDC_URL_MAX 2048            //  bytes of an endpoint's URL
#define SL_OIDC_STATE_MAX 48            //  bytes of a state (base64url of 32 random bytes), with its NUL

typedef struct _sl_oidc_t sl_oidc_t;

typedef struct {
    const char *issuer;                 //  SLUICE_OIDC_ISSUER
    const char *client_id;              //  SLUICE_OIDC_CLIENT_ID
    const char *client_secret;          //  SLUICE_OIDC_CLIENT_SECRET ("" for a public client)
    const char *redirect_uri;           //  where the provider sends the browser back (.../login/callback)
    const char *role_claim;             //  the claim roles come from, NULL: "groups"
} sl_oidc_config_t;

//  Fetch url: GET when form is NULL, else POST form
//  (application/x-www-form-urlencoded) with HTTP basic authentication as
//  user:password when user is not NULL. The answer's body into out, its
//  status into *status. 0, or -1 when no answer came (why says so).
typedef int (sl_oidc_fetch_fn) (void *arg, const char *url, const char *form, const char *user,
                                const char *password, int *status, sl_buf_t *out, char why [SL_OIDC_WHY_MAX]);

//  An answer to a request started by a start function: rc 0 with the
//  status and body (borrowed for the call), or -1 with err (no answer).
typedef void (sl_oidc_answer_fn) (void *ctx, int rc, int status, const sl_buf_t *body, const char *err);
//  Start the same request as sl_oidc_fetch_fn; answer (ctx) is called
//  exactly once, at once or later, and must be even when the request is
//  given up (then rc -1).
typedef void (sl_oidc_start_fn) (void *arg, const char *url, const char *form, const char *user,
                                 const char *password, sl_oidc_answer_fn *answer, void *ctx);
//  A sign-in begun: rc 0 with the authorization URL and the state, or -1
//  with why (all borrowed for the call).
typedef void (sl_oidc_begun_fn) (void *arg, int rc, const char *url, const char *state, const char *why);
//  A redirect back checked: rc 0 with the caller, or -1 with why.
typedef void (sl_oidc_finished_fn) (void *arg, int rc, const sl_console_caller_t *caller, const char *why);

//  NULL when the configuration lacks the issuer or the client id. The
//  strings are copied.
sl_oidc_t *sl_oidc_new (const sl_oidc_config_t *config);
void sl_oidc_destroy (sl_oidc_t **self_p);
//  Fetch through fn, blocking (tests).
void sl_oidc_set_fetch (sl_oidc_t *self, sl_oidc_fetch_fn *fn, void *arg);
//  Start requests through fn: sign-ins answer later (the _async forms).
//  Every request started must be answered before sl_oidc_destroy.
void sl_oidc_set_start (sl_oidc_t *self, sl_oidc_start_fn *fn, void *arg);
//  sl_oidc_begin and sl_oidc_finish, answered through fn when the
//  provider has answered (at once when it cannot be asked, or with a
//  blocking fetch).
void sl_oidc_begin_async (sl_oidc_t *self, int64_t now, sl_oidc_begun_fn *fn, void *arg);
void sl_oidc_finish_async (sl_oidc_t *self, const char *code, const char *state, int64_t now,
                           sl_oidc_finished_fn *fn, void *arg);
//  Sign-ins waiting for the provider.
int sl_oidc_running (sl_oidc_t *self);
//  With a blocking fetch (with a start function: -1):
//  a new sign-in at now (ms): the authorization URL into url, its state
//  into state (the console binds it to the browser with a cookie: a
//  callback from another browser is refused). 0, or -1 with why (the
//  provider cannot be reached, or its discovery is wrong).
int sl_oidc_begin (sl_oidc_t *self, int64_t now, sl_buf_t *url, char state [SL_OIDC_STATE_MAX],
                   char why [SL_OIDC_WHY_MAX]);
//  The provider's redirect back, at now (ms): 0 with the caller in out,
//  or -1 with why.
int sl_oidc_finish (sl_oidc_t *self, const char *code, const char *state, int64_t now, sl_console_caller_t *out,
                    char why [SL_OIDC_WHY_MAX]);
//  The provider's end_session_endpoint, or NULL when it has none (or was
//  never reached).
const char *sl_oidc_end_session (sl_oidc_t *self);
//  Sign-ins begun and not yet finished (or expired).
int sl_oidc_pending (sl_oidc_t *self);

#endif
