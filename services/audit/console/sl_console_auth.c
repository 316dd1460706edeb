/*  sl_console_auth.c - who may ask the console (see sl_console_auth.h). */
#include "services/audit/console/sl_console_auth.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "common/base/sl_alloc.h"

#define S_MAX_KEYS 64
#define S_TOKEN_BYTES 32
#define S_TOKEN_SIZE (2 * S_TOKEN_BYTES + 1)
#define S_BEARER "Bearer "

typedef struct {
    char token [S_TOKEN_SIZE];
    int64_t expires;
} s_session_t;

struct _sl_console_auth_t {
    char *keys [S_MAX_KEYS];
    int key_count;
    s_session_t sessions [SL_CONSOLE_MAX_SESSIONS];
    int session_count;
};

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
            self->keys [self->key_count++] = sl_xstrndup (start, n);
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
        memset (self->keys [i], 0, strlen (self->keys [i]));
        free (self->keys [i]);
    }
    memset (self->sessions, 0, sizeof self->sessions);
    free (self);
    *self_p = NULL;
}

bool
sl_console_auth_has_keys (sl_console_auth_t *self)
{
    return self->key_count > 0;
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

bool
sl_console_auth_key (sl_console_auth_t *self, const char *key, size_t n)
{
    bool ok = false;
    for (int i = 0; i < self->key_count; i++)
        ok |= s_equal (key, n, self->keys [i]);
    return ok;
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

static bool
s_session_valid (sl_console_auth_t *self, const char *token, size_t n, int64_t now)
{
    bool ok = false;
    for (int i = 0; i < self->session_count; i++)
        if (self->sessions [i].expires > now)
            ok |= s_equal (token, n, self->sessions [i].token);
    return ok;
}

bool
sl_console_auth_allows (sl_console_auth_t *self, const char *authorization, const char *cookies, bool loopback,
                        int64_t now)
{
    if (!self->key_count)
        return loopback;
    if (authorization && strncasecmp (authorization, S_BEARER, strlen (S_BEARER)) == 0)
        return sl_console_auth_key (self, authorization + strlen (S_BEARER),
                                    strlen (authorization + strlen (S_BEARER)));
    size_t n = 0;
    const char *token = s_cookie (cookies, &n);
    return token && s_session_valid (self, token, n, now);
}

void
sl_console_auth_login (sl_console_auth_t *self, int64_t now, char cookie [SL_CONSOLE_COOKIE_MAX])
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
    snprintf (cookie, SL_CONSOLE_COOKIE_MAX, "%s=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d",
              SL_CONSOLE_COOKIE, s->token, SL_CONSOLE_SESSION_MS / 1000);
}
