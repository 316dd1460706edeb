/*  sl_console_auth.h - who may ask the console: its keys, its sessions, this
    machine.

    With console keys (SLUICE_CONSOLE_KEYS, comma-separated; spaces
    around a key are not part of it), a request is let in when it holds
    one, as "Authorization: Bearer <key>", or the session cookie a login
    with one gave (SL_CONSOLE_COOKIE: HttpOnly, SameSite=Strict, a random
    token of 32 bytes; sessions live in memory for SL_CONSOLE_SESSION_MS,
    at most SL_CONSOLE_MAX_SESSIONS, the oldest going first). A logout ends
    its session here: the cookie, however copied, opens nothing after.
    Without keys, only clients on this machine are let in (the caller
    says which are: loopback). Keys and tokens are compared in time that
    does not depend on where they differ, and never logged or stored.

    This is the one place the console decides who is asking; sl_console
    asks it before every API but the login.
*/
#ifndef SL_CONSOLE_AUTH_H
#define SL_CONSOLE_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_CONSOLE_SESSION_MS (12 * 3600 * 1000)
#define SL_CONSOLE_MAX_SESSIONS 1024
#define SL_CONSOLE_COOKIE "sluice_console"
#define SL_CONSOLE_COOKIE_MAX 160       //  a Set-Cookie value, with its NUL

typedef struct _sl_console_auth_t sl_console_auth_t;

//  keys: comma-separated console keys, "" or NULL for none (loopback only).
sl_console_auth_t *sl_console_auth_new (const char *keys);
void sl_console_auth_destroy (sl_console_auth_t **self_p);
bool sl_console_auth_has_keys (sl_console_auth_t *self);
//  Whether key (n bytes) is one of the console keys.
bool sl_console_auth_key (sl_console_auth_t *self, const char *key, size_t n);
//  A new session at now (ms) for whoever showed a key: its Set-Cookie
//  value into cookie (SL_CONSOLE_COOKIE_MAX bytes).
void sl_console_auth_login (sl_console_auth_t *self, int64_t now, char cookie [SL_CONSOLE_COOKIE_MAX]);
//  End the session of a Cookie header (NULL: none), and the Set-Cookie
//  value that clears the browser's copy into cookie.
void sl_console_auth_logout (sl_console_auth_t *self, const char *cookies, char cookie [SL_CONSOLE_COOKIE_MAX]);
//  Whether a request may ask at now: with keys, its Authorization header
//  names one or its Cookie header a live session; without, it is loopback.
bool sl_console_auth_allows (sl_console_auth_t *self, const char *authorization, const char *cookies,
                             bool loopback, int64_t now);

#endif
