/*  sl_console_auth.h - who may ask the console: its keys, its sessions, this
    machine.

    With console keys (SLUICE_CONSOLE_KEYS, comma-separated; spaces
    around a key are not part of it; each "name:role:KEY", or a bare KEY,
    which is an admin named "console" as it has always had the whole
    console), a request is let in when it holds one, as "Authorization:
    Bearer <key>", or the session cookie a login with one, or with the
    company's provider (sl_oidc.h), gave (SL_CONSOLE_COOKIE: HttpOnly, SameSite=Strict, a random
    token of 32 bytes; sessions live in memory for SL_CONSOLE_SESSION_MS,
    at most SL_CONSOLE_MAX_SESSIONS, the oldest going first). A logout ends
    its session here: the cookie, however copied, opens nothing after.
    Without keys, only clients on this machine are let in (the caller
    says which are: loopback). Keys and tokens are compared in time that
    does not depend on where they differ, and never logged or stored.

    Without keys, this machine is an admin named "loopback". A session
    keeps who logged in (sl_console_role.h): a key's name and role, or a
    person's identity and role from the provider.

    This is the one place the console decides who is asking; sl_console
    asks it before every API but the login.
*/
#ifndef SL_CONSOLE_AUTH_H
#define SL_CONSOLE_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "services/audit/console/sl_console_role.h"

#define SL_CONSOLE_SESSION_MS (12 * 3600 * 1000)
#define SL_CONSOLE_MAX_SESSIONS 1024
#define SL_CONSOLE_COOKIE "sluice_console"
#define SL_CONSOLE_COOKIE_MAX 160       //  a Set-Cookie value, with its NUL

typedef struct _sl_console_auth_t sl_console_auth_t;

//  keys: comma-separated console keys, "" or NULL for none (loopback only).
sl_console_auth_t *sl_console_auth_new (const char *keys);
void sl_console_auth_destroy (sl_console_auth_t **self_p);
bool sl_console_auth_has_keys (sl_console_auth_t *self);
//  People sign in with a provider: this machine is no longer let in
//  without a key or a session, as with keys.
void sl_console_auth_set_sign_in (sl_console_auth_t *self, bool on);
//  Whether a caller must show who they are (keys, or sign-in).
bool sl_console_auth_guarded (sl_console_auth_t *self);
//  The caller key (n bytes) makes, when it is one of the console keys:
//  0, or -1 (out: SL_CONSOLE_NOBODY).
int sl_console_auth_key (sl_console_auth_t *self, const char *key, size_t n, sl_console_caller_t *out);
//  A new session at now (ms) for caller (a key's, or a person's): its
//  Set-Cookie value into cookie (SL_CONSOLE_COOKIE_MAX bytes).
void sl_console_auth_login (sl_console_auth_t *self, const sl_console_caller_t *caller, int64_t now,
                            char cookie [SL_CONSOLE_COOKIE_MAX]);
//  End the session of a Cookie header (NULL: none), and the Set-Cookie
//  value that clears the browser's copy into cookie.
void sl_console_auth_logout (sl_console_auth_t *self, const char *cookies, char cookie [SL_CONSOLE_COOKIE_MAX]);
//  Who a request is at now, into out, and its role: a key in its
//  Authorization header, a live session in its Cookie header (the
//  session is looked at first when keys are set or a person signed in),
//  or, without keys, this machine when it is loopback. SL_CONSOLE_NOBODY
//  when it is none of these.
sl_console_role_t sl_console_auth_caller (sl_console_auth_t *self, const char *authorization, const char *cookies,
                                          bool loopback, int64_t now, sl_console_caller_t *out);

#endif
