/*  sl_console_auth.c - who may ask the console (see sl_console_auth.h). */
#include "services/audit/console/sl_console_auth.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sodium.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"

#define S_MAX_KEYS 64
#define S_TOKEN_BYTES 32
#define S_TOKEN_SIZE (2 * S_TOKEN_BYTES + 1)
#define S_BEARER "Bearer "

typedef struct {
    char token [S_TOKEN_SIZE];
    int64_t expires;
    sl_console_caller_t caller;         //  who logged in
} s_session_t;

//  A console key: its secret, and the caller it makes.
typedef struct {
    char *secret;
    sl_console_caller_t caller;
} s_key_t;

struct _sl_console_auth_t {
    s_key_t keys [S_MAX_KEYS];
    int key_count;
    bool sign_in;                       //  people sign in with a provider
    s_session_t sessions [SL_CONSOLE_MAX_SESSIONS];
    int session_count;
};

//  One entry of the list: "name:role:KEY", or a bare KEY (an admin named
//  "console": a bare key has always opened the whole console).
static void
s_key_add (sl_console_auth_t *self, const char *entry, size_t n)
{
    s_key_t *k = &self->keys [self->key_count];
    memset (k, 0, sizeof *k);
    const char *c1 = memchr (entry, ':', n);
    const char *c2 = c1 ? memchr (c1 + 1, ':', n - (size_t) (c1 + 1 - entry)) : NULL;
    sl_console_role_t role = c2 ? sl_console_role_parse (c1 + 1, (size_t) (c2 - c1 - 1)) : SL_CONSOLE_NOBODY;
    if (role != SL_CONSOLE_NOBODY && c1 > entry && (size_t) (c1 - entry) < SL_CONSOLE_TEXT_MAX - 4
    &&  (size_t) (c2 + 1 - entry) < n) {
        k->caller.role = role;
        snprintf (k->caller.name, sizeof k->caller.name, "%.*s", (int) (c1 - entry), entry);
        k->secret = sl_xstrndup (c2 + 1, n - (size_t) (c2 + 1 - entry));
    }
    else {
        k->caller.role = SL_CONSOLE_ADMIN;
        snprintf (k->caller.name, sizeof k->caller.name, "console");
        k->secret = sl_xstrndup (entry, n);
    }
    sl_buf_t sub = { 0 };
    sl_buf_printf (&sub, "key:%s", k->caller.name);
    snprintf (k->caller.sub, sizeof k->caller.sub, "%s", sl_buf_cstr (&sub));
    sl_buf_free (&sub);
    self->key_count++;
}

sl_console_auth_t *
sl_console_auth_new (const char *keys)
{
    sl_console_auth_t *self = sl_xcalloc (1, sizeof *self);
    for (const char *p = keys ? keys : ""; *p && self->key_count < S_MAX_KEYS;) {
        const char *comma = strchr (p, ',');
        size_t n = comma ? (size_t) (comma - p) : strlen (p);
        const char *start = p;
        while (n && isspace ((unsigned char) *start)) {
            start++;
            n--;
        }
        while (n && isspace ((unsigned char) start [n - 1]))
            n--;
        if (n)
            s_key_add (self, start, n);
        p = comma ? comma + 1 : p + strlen (p);
    }
    return self;
}

void
sl_console_auth_destroy (sl_console_auth_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_console_auth_t *self = *self_p;
    for (int i = 0; i < self->key_count; i++) {
        memset (self->keys [i].secret, 0, strlen (self->keys [i].secret));
        free (self->keys [i].secret);
    }
    sodium_memzero (self->sessions, sizeof self->sessions);
    free (self);
    *self_p = NULL;
}

bool
sl_console_auth_has_keys (sl_console_auth_t *self)
{
    return self->key_count > 0;
}

void
sl_console_auth_set_sign_in (sl_console_auth_t *self, bool on)
{
    self->sign_in = on;
}

bool
sl_console_auth_guarded (sl_console_auth_t *self)
{
    return self->key_count > 0 || self->sign_in;
}

//  Equal, in time that does not depend on where they differ.
static bool
s_equal (const char *a, size_t na, const char *b)
{
    size_t nb = strlen (b);
    unsigned char diff = (unsigned char) (na != nb);
    for (size_t i = 0; i < nb; i++)
        diff |= (unsigned char) (a [i < na ? i : 0] ^ b [i]);
    return diff == 0 && na == nb;
}

int
sl_console_auth_key (sl_console_auth_t *self, const char *key, size_t n, sl_console_caller_t *out)
{
    //  Every key is compared, whichever matches.
    int found = -1;
    for (int i = 0; i < self->key_count; i++)
        if (s_equal (key, n, self->keys [i].secret) && found < 0)
            found = i;
    if (found < 0) {
        memset (out, 0, sizeof *out);
        out->role = SL_CONSOLE_NOBODY;
        return -1;
    }
    *out = self->keys [found].caller;
    return 0;
}

//  The session token in a Cookie header, or NULL.
static const char *
s_cookie (const char *header, size_t *len)
{
    const char *name = SL_CONSOLE_COOKIE "=";
    for (const char *p = header; p && *p;) {
        while (*p == ' ' || *p == ';')
            p++;
        if (strncmp (p, name, strlen (name)) == 0) {
            p += strlen (name);
            *len = strcspn (p, ";");
            return p;
        }
        p = strchr (p, ';');
    }
    return NULL;
}

void
sl_console_auth_logout (sl_console_auth_t *self, const char *cookies, char cookie [SL_CONSOLE_COOKIE_MAX])
{
    size_t n = 0;
    const char *token = s_cookie (cookies, &n);
    int kept = 0;
    for (int i = 0; i < self->session_count; i++)
        if (!token || !s_equal (token, n, self->sessions [i].token))
            self->sessions [kept++] = self->sessions [i];
    self->session_count = kept;
    snprintf (cookie, SL_CONSOLE_COOKIE_MAX, "%s=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0",
              SL_CONSOLE_COOKIE);
}

//  The live session of a token, or NULL.
static const s_session_t *
s_session (sl_console_auth_t *self, const char *token, size_t n, int64_t now)
{
    const s_session_t *found = NULL;
    for (int i = 0; i < self->session_count; i++)
        if (self->sessions [i].expires > now && s_equal (token, n, self->sessions [i].token) && !found)
            found = &self->sessions [i];
    return found;
}

sl_console_role_t
sl_console_auth_caller (sl_console_auth_t *self, const char *authorization, const char *cookies, bool loopback,
                        int64_t now, sl_console_caller_t *out)
{
    memset (out, 0, sizeof *out);
    out->role = SL_CONSOLE_NOBODY;
    if (!sl_console_auth_guarded (self)) {
        if (loopback) {
            //  No identity: this machine (sub "").
            out->role = SL_CONSOLE_ADMIN;
            snprintf (out->name, sizeof out->name, "loopback");
        }
        return out->role;
    }
    if (authorization && strncasecmp (authorization, S_BEARER, strlen (S_BEARER)) == 0) {
        const char *key = authorization + strlen (S_BEARER);
        sl_console_auth_key (self, key, strlen (key), out);
        return out->role;
    }
    size_t n = 0;
    const char *token = s_cookie (cookies, &n);
    const s_session_t *session = token ? s_session (self, token, n, now) : NULL;
    if (session)
        *out = session->caller;
    return out->role;
}

void
sl_console_auth_login (sl_console_auth_t *self, const sl_console_caller_t *caller, int64_t now,
                       char cookie [SL_CONSOLE_COOKIE_MAX])
{
    //  Make room: expired sessions go, then the oldest.
    int kept = 0;
    for (int i = 0; i < self->session_count; i++)
        if (self->sessions [i].expires > now)
            self->sessions [kept++] = self->sessions [i];
    self->session_count = kept;
    if (self->session_count == SL_CONSOLE_MAX_SESSIONS) {
        memmove (self->sessions, self->sessions + 1, (SL_CONSOLE_MAX_SESSIONS - 1) * sizeof (s_session_t));
        self->session_count--;
    }
    uint8_t bytes [S_TOKEN_BYTES];
    size_t got = 0;
    while (got < sizeof bytes) {
        ssize_t n = getrandom (bytes + got, sizeof bytes - got, 0);
        if (n > 0)
            got += (size_t) n;
    }
    s_session_t *s = &self->sessions [self->session_count++];
    for (int i = 0; i < S_TOKEN_BYTES; i++)
        snprintf (s->token + 2 * i, 3, "%02x", bytes [i]);
    s->expires = now + SL_CONSOLE_SESSION_MS;
    s->caller = *caller;
    snprintf (cookie, SL_CONSOLE_COOKIE_MAX, "%s=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d",
              SL_CONSOLE_COOKIE, s->token, SL_CONSOLE_SESSION_MS / 1000);
}
