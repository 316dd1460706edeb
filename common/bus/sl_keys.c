/*  sl_keys.c - reading the bus's key directory (see sl_keys.h). */
#include "common/bus/sl_keys.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"

#define SL_KEYS_SUFFIX ".key"
#define SL_KEYS_MAX_FILE 65536          //  a certificate is a few hundred bytes

//  The roles of processes (every role but "tap"): each has one key, named after it.
static const char *s_stage_roles [] = { "gateway", "ingest", "aggregator", "judge", "emitter", "audit" };

struct _sl_keys_t {
    sl_key_t *keys;
    size_t count;
    sl_buf_t skipped;                   //  "file: reason\n" lines of the last load
};

static char *
s_error (const char *format, ...)
{
    va_list args;
    va_start (args, format);
    sl_buf_t out = { 0 };
    sl_buf_vprintf (&out, format, args);
    va_end (args);
    char *text = sl_xstrdup (sl_buf_cstr (&out));
    sl_buf_free (&out);
    return text;
}

bool
sl_key_name_valid (const char *name)
{
    size_t n = name ? strlen (name) : 0;
    if (n == 0 || n > SL_KEY_NAME_MAX || name [0] == '-' || name [0] == '_')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name [i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
            return false;
    }
    return true;
}

bool
sl_key_role_is_stage (const char *role)
{
    for (size_t i = 0; role && i < sizeof s_stage_roles / sizeof s_stage_roles [0]; i++)
        if (strcmp (role, s_stage_roles [i]) == 0)
            return true;
    return false;
}

const char *
sl_access_name (sl_access_t access)
{
    return access == SL_ACCESS_FULL ? "full" : access == SL_ACCESS_METADATA ? "metadata" : "none";
}

sl_access_t
sl_access_parse (const char *value)
{
    return value && strcmp (value, "full") == 0 ? SL_ACCESS_FULL : SL_ACCESS_METADATA;
}

//  A certificate file parsed (ZPL), or NULL. Read here rather than with
//  zconfig_load, which leaks its file handle when the text does not parse.
static zconfig_t *
s_load_config (const char *path)
{
    FILE *f = fopen (path, "rb");
    if (!f)
        return NULL;
    char *data = sl_xmalloc (SL_KEYS_MAX_FILE);
    size_t size = fread (data, 1, SL_KEYS_MAX_FILE, f);
    bool whole = feof (f) && !ferror (f);
    fclose (f);
    zconfig_t *root = NULL;
    if (whole && size > 0) {
        zchunk_t *chunk = zchunk_new (data, size);
        root = zconfig_chunk_load (chunk);
        zchunk_destroy (&chunk);
    }
    memset (data, 0, size);             //  it may have held a secret key
    free (data);
    return root;
}

//  A Z85 key of 40 characters into 32 bytes; false when it is not one.
static bool
s_decode_key (const char *txt, uint8_t *out)
{
    if (!txt || strlen (txt) != SL_KEY_TXT_SIZE - 1)
        return false;
    return zmq_z85_decode (out, txt) != NULL;
}

//  Fill key from a parsed certificate named name; NULL when it fits, else why not.
static const char *
s_read_cert (zconfig_t *root, const char *name, sl_key_t *key)
{
    memset (key, 0, sizeof *key);
    const char *pub = zconfig_get (root, "curve/public-key", NULL);
    const char *meta_name = zconfig_get (root, "metadata/name", NULL);
    const char *role = zconfig_get (root, "metadata/role", NULL);
    if (!s_decode_key (pub, key->public_key))
        return "no valid curve public-key";
    if (!meta_name || strcmp (meta_name, name) != 0)
        return "its metadata name is not its file name";
    if (!role)
        return "no role in its metadata";
    if (sl_key_role_is_stage (role)) {
        if (strcmp (role, name) != 0)
            return "a stage's key must be named after its role";
    }
    else
    if (strcmp (role, "tap") == 0) {
        if (sl_key_role_is_stage (name))
            return "a tap key cannot take a stage's name";
        key->access = sl_access_parse (zconfig_get (root, "metadata/access", NULL));
    }
    else
        return "unknown role";
    snprintf (key->name, sizeof key->name, "%s", name);
    snprintf (key->role, sizeof key->role, "%s", role);
    memcpy (key->public_txt, pub, SL_KEY_TXT_SIZE - 1);
    return NULL;
}

sl_keys_t *
sl_keys_new (void)
{
    return sl_xcalloc (1, sizeof (sl_keys_t));
}

void
sl_keys_destroy (sl_keys_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_keys_t *self = *self_p;
    free (self->keys);
    sl_buf_free (&self->skipped);
    free (self);
    *self_p = NULL;
}

int
sl_keys_load (sl_keys_t *self, const char *dir, char **error)
{
    DIR *d = opendir (dir);
    if (!d) {
        *error = s_error ("cannot read the key directory %s: %s", dir, strerror (errno));
        return -1;
    }
    sl_key_t *keys = sl_xcalloc (SL_KEYS_MAX, sizeof (sl_key_t));
    size_t count = 0;
    sl_buf_reset (&self->skipped);
    struct dirent *entry;
    while ((entry = readdir (d))) {
        const char *file = entry->d_name;
        size_t n = strlen (file), sn = strlen (SL_KEYS_SUFFIX);
        if (n <= sn || strcmp (file + n - sn, SL_KEYS_SUFFIX) != 0 || file [0] == '.')
            continue;                   //  secrets, temporary files, anything else
        char name [SL_KEY_NAME_MAX + 1];
        if (n - sn > SL_KEY_NAME_MAX) {
            sl_buf_printf (&self->skipped, "%s: name too long\n", file);
            continue;
        }
        memcpy (name, file, n - sn);
        name [n - sn] = 0;
        if (!sl_key_name_valid (name)) {
            sl_buf_printf (&self->skipped, "%s: not a valid key name\n", file);
            continue;
        }
        if (count == SL_KEYS_MAX) {
            sl_buf_printf (&self->skipped, "%s: more than %d keys\n", file, SL_KEYS_MAX);
            continue;
        }
        char path [4096];
        snprintf (path, sizeof path, "%s/%s", dir, file);
        zconfig_t *root = s_load_config (path);
        const char *why = root ? s_read_cert (root, name, &keys [count]) : "not a certificate";
        zconfig_destroy (&root);
        for (size_t i = 0; !why && i < count; i++)
            if (memcmp (keys [i].public_key, keys [count].public_key, SL_KEY_SIZE) == 0)
                why = "the same public key as another key";
        if (why)
            sl_buf_printf (&self->skipped, "%s: %s\n", file, why);
        else
            count++;
    }
    closedir (d);
    free (self->keys);
    self->keys = keys;
    self->count = count;
    return (int) count;
}

const char *
sl_keys_skipped (sl_keys_t *self)
{
    return sl_buf_cstr (&self->skipped);
}

const sl_key_t *
sl_keys_find (sl_keys_t *self, const uint8_t *public_key)
{
    for (size_t i = 0; i < self->count; i++)
        if (memcmp (self->keys [i].public_key, public_key, SL_KEY_SIZE) == 0)
            return &self->keys [i];
    return NULL;
}

const sl_key_t *
sl_keys_named (sl_keys_t *self, const char *name)
{
    for (size_t i = 0; i < self->count; i++)
        if (strcmp (self->keys [i].name, name) == 0)
            return &self->keys [i];
    return NULL;
}

size_t
sl_keys_count (sl_keys_t *self)
{
    return self->count;
}

const sl_key_t *
sl_keys_at (sl_keys_t *self, size_t index)
{
    return index < self->count ? &self->keys [index] : NULL;
}

zcert_t *
sl_keys_load_secret (const char *dir, const char *name, bool *loose, char **error)
{
    *loose = false;
    if (!sl_key_name_valid (name)) {
        *error = s_error ("'%s' is not a valid key name", name);
        return NULL;
    }
    char path [4096];
    snprintf (path, sizeof path, "%s/%s%s_secret", dir, name, SL_KEYS_SUFFIX);
    struct stat st;
    if (stat (path, &st) != 0) {
        *error = s_error ("cannot read %s: %s (sluice-keygen --dir %s creates it)", path, strerror (errno), dir);
        return NULL;
    }
    zconfig_t *root = s_load_config (path);
    if (!root) {
        *error = s_error ("cannot read %s: %s", path, access (path, R_OK) ? strerror (errno) : "not a certificate");
        return NULL;
    }
    sl_key_t key;
    const char *why = s_read_cert (root, name, &key);
    uint8_t secret [SL_KEY_SIZE], derived [SL_KEY_SIZE];
    const char *secret_txt = zconfig_get (root, "curve/secret-key", NULL);
    char derived_txt [SL_KEY_TXT_SIZE];
    if (!why && !s_decode_key (secret_txt, secret))
        why = "no valid curve secret-key";
    if (!why && (zmq_curve_public (derived_txt, secret_txt) != 0 || !s_decode_key (derived_txt, derived)
             ||  memcmp (derived, key.public_key, SL_KEY_SIZE) != 0))
        why = "its secret key does not belong to its public key";
    zcert_t *cert = NULL;
    if (!why) {
        cert = zcert_new_from (key.public_key, secret);
        zcert_set_meta (cert, "name", "%s", key.name);
        zcert_set_meta (cert, "role", "%s", key.role);
        if (key.access)
            zcert_set_meta (cert, "access", "%s", sl_access_name (key.access));
        *loose = (st.st_mode & 077) != 0;
    }
    else
        *error = s_error ("%s: %s", path, why);
    zconfig_destroy (&root);
    memset (secret, 0, sizeof secret);
    return cert;
}
