/*  sl_keyring.c - who may call sluice: the model (see sl_keyring.h); the
    file is read by sl_keyring_load.c. */
#include "common/identity/sl_keyring_impl.h"

#include <fnmatch.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/identity/sl_keyid.h"

#define S_LIST_KEYS_MAX 1024            //  keys one SLUICE_CLIENT_KEYS list may hold
#define S_NEW_KEY_BYTES 32              //  random bytes of a new key

sl_keyring_t *
sl_keyring_new_empty (void)
{
    sl_keyring_t *self = sl_xcalloc (1, sizeof *self);
    self->refs = 1;
    return self;
}

void *
sl_keyring_own (sl_keyring_t *self, void *ptr)
{
    if (self->owned_count == self->owned_cap) {
        self->owned_cap = self->owned_cap ? 2 * self->owned_cap : 16;
        self->owned = sl_xrealloc (self->owned, self->owned_cap * sizeof *self->owned);
    }
    self->owned [self->owned_count++] = ptr;
    return ptr;
}

char *
sl_keyring_strdup (sl_keyring_t *self, const char *text)
{
    return sl_keyring_own (self, sl_xstrdup (text));
}

sl_team_t *
sl_keyring_team_get (sl_keyring_t *self, const char *name)
{
    for (size_t i = 0; i < self->team_count; i++)
        if (strcmp (self->teams [i]->name, name) == 0)
            return self->teams [i];
    if (self->team_count == self->team_cap) {
        self->team_cap = self->team_cap ? 2 * self->team_cap : 8;
        self->teams = sl_xrealloc (self->teams, self->team_cap * sizeof *self->teams);
    }
    sl_team_t *t = sl_keyring_own (self, sl_xcalloc (1, sizeof *t));
    t->name = sl_keyring_strdup (self, name);
    self->teams [self->team_count++] = t;
    return t;
}

sl_keyentry_t *
sl_keyring_add_key (sl_keyring_t *self)
{
    if (self->key_count == self->key_cap) {
        self->key_cap = self->key_cap ? 2 * self->key_cap : 16;
        self->keys = sl_xrealloc (self->keys, self->key_cap * sizeof *self->keys);
    }
    sl_keyentry_t *e = &self->keys [self->key_count++];
    memset (e, 0, sizeof *e);
    e->user = "";
    return e;
}

sl_keyring_t *
sl_keyring_ref (sl_keyring_t *self)
{
    if (self)
        self->refs++;
    return self;
}

void
sl_keyring_unref (sl_keyring_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_keyring_t *self = *self_p;
    *self_p = NULL;
    if (--self->refs > 0)
        return;
    for (size_t i = 0; i < self->owned_count; i++)
        free (self->owned [i]);
    free (self->owned);
    sl_keyring_unref (&self->base);
    free (self->keys);
    free (self->by_hash);
    free (self->teams);
    free (self);
}

void
sl_keyring_new_key (char key [SL_KEYRING_KEY_MAX])
{
    unsigned char bytes [S_NEW_KEY_BYTES];
    randombytes_buf (bytes, sizeof bytes);
    strcpy (key, SL_KEYRING_KEY_PREFIX);
    sodium_bin2base64 (key + strlen (SL_KEYRING_KEY_PREFIX), SL_KEYRING_KEY_MAX - strlen (SL_KEYRING_KEY_PREFIX),
                       bytes, sizeof bytes, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero (bytes, sizeof bytes);
}

void
sl_keyring_hash (const char *key, uint8_t out [SL_KEYRING_SHA256])
{
    crypto_hash_sha256 (out, (const unsigned char *) key, strlen (key));
}

void
sl_keyring_key_hex (const char *key, char out [SL_KEYRING_HEX_SIZE])
{
    uint8_t hash [SL_KEYRING_SHA256];
    sl_keyring_hash (key, hash);
    sodium_bin2hex (out, SL_KEYRING_HEX_SIZE, hash, SL_KEYRING_SHA256);
}

sl_keyring_t *
sl_keyring_from_list (const char *list)
{
    if (!list)
        return NULL;
    sl_keyring_t *self = sl_keyring_new_empty ();
    sl_team_t *team = sl_keyring_team_get (self, SL_KEYRING_DEFAULT_TEAM);
    const char *p = list;
    while (*p && self->key_count < S_LIST_KEYS_MAX) {
        const char *end = strchr (p, ',');
        size_t n = end ? (size_t) (end - p) : strlen (p);
        while (n && (*p == ' ' || *p == '\t')) {
            p++;
            n--;
        }
        while (n && (p [n - 1] == ' ' || p [n - 1] == '\t'))
            n--;
        if (n) {
            char *key = sl_xstrndup (p, n);
            sl_keyentry_t *e = sl_keyring_add_key (self);
            sl_keyring_hash (key, e->sha256);
            //  The id the audit trail has always shown for such a key.
            char id [SL_KEY_ID_SIZE];
            sl_key_id (key, n, id);
            e->id = sl_keyring_strdup (self, id);
            sodium_memzero (key, n);
            free (key);
            e->team = team;
        }
        if (!end)
            break;
        p = end + 1;
    }
    if (!self->key_count)
        sl_keyring_unref (&self);
    else
        sl_keyring_seal (self);
    return self;
}

static int
s_by_hash (const void *a, const void *b)
{
    return memcmp ((*(const sl_keyentry_t *const *) a)->sha256, (*(const sl_keyentry_t *const *) b)->sha256,
                   SL_KEYRING_SHA256);
}

void
sl_keyring_seal (sl_keyring_t *self)
{
    free (self->by_hash);
    self->by_hash = sl_xcalloc (self->key_count ? self->key_count : 1, sizeof *self->by_hash);
    for (size_t i = 0; i < self->key_count; i++)
        self->by_hash [i] = &self->keys [i];
    qsort (self->by_hash, self->key_count, sizeof *self->by_hash, s_by_hash);
}

const sl_keyentry_t *
sl_keyring_find (const sl_keyring_t *self, const char *key)
{
    if (!self || !key || !*key || !self->by_hash)
        return NULL;
    uint8_t hash [SL_KEYRING_SHA256];
    sl_keyring_hash (key, hash);
    //  A binary search among the hashes: what its timing could tell is how
    //  the presented key's SHA-256 compares with the file's, which brings
    //  no one closer to a key (finding one from its hash is the preimage
    //  SHA-256 resists). A whole comparison of every entry costs a
    //  microsecond per 25 keys on every request (bench_identity). The
    //  match itself is confirmed in constant time.
    size_t lo = 0, hi = self->key_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = memcmp (hash, self->by_hash [mid]->sha256, SL_KEYRING_SHA256);
        if (c == 0)
            return sodium_memcmp (hash, self->by_hash [mid]->sha256, SL_KEYRING_SHA256) == 0
                 ? self->by_hash [mid] : NULL;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

const sl_team_t *
sl_keyring_team (const sl_keyring_t *self, const char *name)
{
    for (size_t i = 0; self && name && i < self->team_count; i++)
        if (strcmp (self->teams [i]->name, name) == 0)
            return self->teams [i];
    return NULL;
}

const sl_jwt_spec_t *sl_keyring_jwt (const sl_keyring_t *self) { return self && self->has_jwt ? &self->jwt : NULL; }
size_t sl_keyring_count (const sl_keyring_t *self) { return self ? self->key_count : 0; }
size_t sl_keyring_team_count (const sl_keyring_t *self) { return self ? self->team_count : 0; }

const sl_keyentry_t *
sl_keyring_at (const sl_keyring_t *self, size_t index)
{
    return self && index < self->key_count ? &self->keys [index] : NULL;
}

const sl_team_t *
sl_keyring_team_at (const sl_keyring_t *self, size_t index)
{
    return self && index < self->team_count ? self->teams [index] : NULL;
}

static size_t
s_add_unique (const char **out, size_t n, size_t max, const char *path)
{
    if (!path)
        return n;
    for (size_t i = 0; i < n; i++)
        if (strcmp (out [i], path) == 0)
            return n;
    if (n < max)
        out [n++] = path;
    return n;
}

size_t
sl_keyring_policies (const sl_keyring_t *self, const char **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; self && i < self->team_count; i++)
        n = s_add_unique (out, n, max, self->teams [i]->policy);
    for (size_t i = 0; self && i < self->key_count; i++)
        n = s_add_unique (out, n, max, self->keys [i].policy);
    for (size_t i = 0; self && i < self->team_count; i++)
        n = s_add_unique (out, n, max, self->teams [i]->shadow_policy);
    for (size_t i = 0; self && i < self->key_count; i++)
        n = s_add_unique (out, n, max, self->keys [i].shadow_policy);
    return n;
}

bool
sl_keyring_model_allowed (const char *const *globs, const char *model)
{
    if (!globs)
        return true;
    for (; *globs; globs++)
        if (fnmatch (*globs, model ? model : "", 0) == 0)
            return true;
    return false;
}
