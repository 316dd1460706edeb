/*  sl_auth.h - how a request to a provider is authorized: a source of
    credentials, asked before each attempt of a call.

    A provider takes its credential one of three ways:

      a key         the provider's key (key_env), or the client's own, in
                    its dialect's credential header: known when the call
                    is prepared (sl_upstream.h), never waited for; no
                    source is involved (SL_AUTH_KEY);
      a token       a bearer token (Authorization: Bearer) from a source:
                    a variable (sl_auth_bearer_new), or a cloud's token
                    service (Google's OAuth2 tokens, Entra ID's), which may
                    have to be fetched or refreshed first (SL_AUTH_GOOGLE,
                    SL_AUTH_AZURE);
      a signature   over the whole request (AWS SigV4: its method, URL,
                    headers and body), made for each attempt from
                    credentials that may have to be fetched (SL_AUTH_AWS).

    One interface serves the last two: authorize an attempt, answering
    READY (its header lines written), PENDING (the source is fetching:
    ask again when it says so) or FAILED (with why). A source never
    blocks: what it fetches it fetches in the reactor, and when it has
    news (a token came, or the fetch failed for good) it calls the notify
    hook it was made with, from the reactor; the waiting calls then ask
    again (sl_upcall_authorized). A call whose credentials cannot be had
    fails cleanly, before anything was sent: never a request without them.
    Credentials are never logged; a source wipes what it held when it is
    destroyed.

    Tests: tests/unit/common/http/test_sl_auth.c.
*/
#ifndef SL_AUTH_H
#define SL_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

//  Where a provider's credential comes from (sl_dialect_t.auth).
typedef enum {
    SL_AUTH_KEY = 0,                    //  the key in the dialect's credential header
    SL_AUTH_BEARER,                     //  a bearer token from a variable (token_env)
    SL_AUTH_GOOGLE,                     //  Google OAuth2 access tokens (Vertex AI)
    SL_AUTH_AWS,                        //  AWS SigV4 signatures (Bedrock)
    SL_AUTH_AZURE,                      //  Entra ID access tokens (Azure OpenAI)
    SL_AUTH_KIND_MAX
} sl_auth_kind_t;

//  What authorize answers.
typedef enum {
    SL_AUTH_FAILED = -1,                //  no credential can be had (why says why)
    SL_AUTH_READY = 0,                  //  the header lines are written
    SL_AUTH_PENDING = 1                 //  being fetched: ask again after the notify hook
} sl_auth_state_t;

//  One attempt of a request, as it will be sent (what a signature signs).
//  Borrowed for the call.
typedef struct {
    const char *method;                 //  "POST"
    const char *url;
    const char *const *headers;         //  "Name: value" lines
    size_t header_count;
    sl_str_t body;
    int64_t now_ms;                     //  monotonic time: a token's expiry
    int64_t wall_s;                     //  calendar time: a signature's date
} sl_auth_request_t;

typedef struct _sl_auth_t sl_auth_t;
typedef struct {
    //  Authorize an attempt: append its header lines ("Name: value", each
    //  NUL-terminated) to lines, and their number to *count.
    //  sl_auth_state_t; why (FAILED) says what is missing, never a secret.
    int (*authorize) (sl_auth_t *self, const sl_auth_request_t *req, sl_buf_t *lines, size_t *count,
                      sl_buf_t *why);
    //  Free it, its secrets wiped first; a fetch under way is abandoned
    //  (its notify never comes).
    void (*destroy) (sl_auth_t *self);
} sl_auth_vt_t;

//  A source: its table first, its state after (the implementation's).
struct _sl_auth_t {
    const sl_auth_vt_t *vt;
};

//  The hook a source that fetches calls, from the reactor, when asking it
//  again may give another answer.
typedef void (sl_auth_notify_fn) (void *arg);

//  Authorize an attempt with a source (see sl_auth_vt_t).
int sl_auth_authorize (sl_auth_t *self, const sl_auth_request_t *req, sl_buf_t *lines, size_t *count,
                       sl_buf_t *why);
void sl_auth_destroy (sl_auth_t **self_p);

//  A fixed bearer token (copied): "Authorization: Bearer <token>" for
//  every attempt. An empty or NULL token makes a source that fails with
//  missing (copied: what to say, "the variable AZURE_TOKEN is empty").
sl_auth_t *sl_auth_bearer_new (const char *token, const char *missing);
//  A source that always fails with why (copied): a provider whose
//  credential this process cannot make.
sl_auth_t *sl_auth_failing_new (const char *why);

//  A "Name: value" line fit to send: a name of token characters, a value
//  without line breaks or NULs.
int sl_auth_line_ok (sl_str_t line);

#endif
