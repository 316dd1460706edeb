/*  sl_keygen.c - the key directory's keys, made and rotated (see sl_keygen.h). */
#include "services/keygen/sl_keygen.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/sl_alloc.h"

static const char *s_roles [] = { "gateway", "ingest", "aggregator", "judge", "emitter", "audit" };

const char *
sl_keygen_role (size_t index)
{
    return index < sizeof s_roles / sizeof s_roles [0] ? s_roles [index] : NULL;
}

static int
s_fail (char **error, const char *format, ...)
{
    va_list args;
    va_start (args, format);
    sl_buf_t out = { 0 };
    sl_buf_vprintf (&out, format, args);
    va_end (args);
    *error = sl_xstrdup (sl_buf_cstr (&out));
    sl_buf_free (&out);
    return -1;
}

//  dir and its parents; a directory made here is private.
static int
s_make_dir (const char *dir, char **error)
{
    char path [4096];
    snprintf (path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir (path, 0755) != 0 && errno != EEXIST)
                return s_fail (error, "cannot make %s: %s", path, strerror (errno));
            *p = '/';
        }
    if (mkdir (path, 0700) != 0 && errno != EEXIST)
        return s_fail (error, "cannot make %s: %s", path, strerror (errno));
    struct stat st;
    if (stat (path, &st) != 0 || !S_ISDIR (st.st_mode))
        return s_fail (error, "%s is not a directory", path);
    return 0;
}

static void
s_path (char *out, size_t size, const char *dir, const char *prefix, const char *name, const char *suffix)
{
    snprintf (out, size, "%s/%s%s.key%s", dir, prefix, name, suffix);
}

static bool
s_exists (const char *path)
{
    struct stat st;
    return stat (path, &st) == 0;
}

//  A new key for name, written next to its final place, then renamed in.
static int
s_write (const char *dir, const char *name, const char *role, sl_access_t access, char **error)
{
    zcert_t *cert = zcert_new ();
    if (!cert)
        return s_fail (error, "cannot make a key pair (no CURVE in this libzmq?)");
    zcert_set_meta (cert, "name", "%s", name);
    zcert_set_meta (cert, "role", "%s", role);
    if (access != SL_ACCESS_NONE)
        zcert_set_meta (cert, "access", "%s", sl_access_name (access));
    zcert_set_meta (cert, "created-by", "sluice-keygen");
    char tmp [4096], tmp_secret [4096], final [4096], final_secret [4096];
    s_path (tmp, sizeof tmp, dir, ".new-", name, "");
    s_path (tmp_secret, sizeof tmp_secret, dir, ".new-", name, "_secret");
    s_path (final, sizeof final, dir, "", name, "");
    s_path (final_secret, sizeof final_secret, dir, "", name, "_secret");
    int rc = zcert_save (cert, tmp);
    zcert_destroy (&cert);
    if (rc != 0 || chmod (tmp_secret, 0600) != 0 || chmod (tmp, 0644) != 0) {
        unlink (tmp);
        unlink (tmp_secret);
        return s_fail (error, "cannot write %s: %s", tmp, strerror (errno));
    }
    if (rename (tmp_secret, final_secret) != 0 || rename (tmp, final) != 0) {
        int e = errno;
        unlink (tmp);
        unlink (tmp_secret);
        return s_fail (error, "cannot put %s in place: %s", final, strerror (e));
    }
    return 0;
}

//  An existing key, checked: 0 with *access set when it is whole.
static int
s_check (const char *dir, const char *name, sl_access_t *access, char **error)
{
    bool loose;
    zcert_t *cert = sl_keys_load_secret (dir, name, &loose, error);
    if (!cert)
        return -1;
    const char *value = zcert_meta (cert, "access");
    *access = value ? sl_access_parse (value) : SL_ACCESS_NONE;
    zcert_destroy (&cert);
    char pub [4096];
    s_path (pub, sizeof pub, dir, "", name, "");
    if (!s_exists (pub))
        return s_fail (error, "%s is missing (its secret is there: sluice-keygen --rotate %s)", pub, name);
    return 0;
}

//  Make name when missing, else check it. 1 made, 0 kept, -1 error.
static int
s_ensure (const char *dir, const char *name, const char *role, sl_access_t access, sl_buf_t *report,
          char **error)
{
    char secret [4096], pub [4096];
    s_path (secret, sizeof secret, dir, "", name, "_secret");
    s_path (pub, sizeof pub, dir, "", name, "");
    if (s_exists (secret)) {
        sl_access_t held;
        if (s_check (dir, name, &held, error))
            return -1;
        if (held != access)
            return s_fail (error, "%s exists with access %s, not %s (sluice-keygen --rotate keeps its "
                                  "access; remove it to change that)", name, sl_access_name (held),
                           sl_access_name (access));
        sl_buf_printf (report, "kept %s\n", name);
        return 0;
    }
    if (s_exists (pub))
        return s_fail (error, "%s holds a public key but no secret for %s: not a directory sluice-keygen "
                              "made, left alone", dir, name);
    if (s_write (dir, name, role, access, error))
        return -1;
    sl_buf_printf (report, "created %s\n", name);
    return 1;
}

int
sl_keygen_ensure (const char *dir, sl_buf_t *report, char **error)
{
    if (s_make_dir (dir, error))
        return -1;
    for (size_t i = 0; i < sizeof s_roles / sizeof s_roles [0]; i++)
        if (s_ensure (dir, s_roles [i], s_roles [i], SL_ACCESS_NONE, report, error) < 0)
            return -1;
    if (s_ensure (dir, "tap", "tap", SL_ACCESS_FULL, report, error) < 0
    ||  s_ensure (dir, "tap-meta", "tap", SL_ACCESS_METADATA, report, error) < 0)
        return -1;
    return 0;
}

int
sl_keygen_tap (const char *dir, const char *name, sl_access_t access, sl_buf_t *report, char **error)
{
    if (!sl_key_name_valid (name) || sl_key_role_is_stage (name))
        return s_fail (error, "'%s' cannot name a tap: 1 to %d of a-z 0-9 - _, not a stage's name",
                       name, SL_KEY_NAME_MAX);
    if (s_make_dir (dir, error))
        return -1;
    return s_ensure (dir, name, "tap", access, report, error) < 0 ? -1 : 0;
}

int
sl_keygen_rotate (const char *dir, const char *name, sl_buf_t *report, char **error)
{
    if (!sl_key_name_valid (name))
        return s_fail (error, "'%s' is not a key name", name);
    sl_access_t access = SL_ACCESS_NONE;
    char secret [4096];
    s_path (secret, sizeof secret, dir, "", name, "_secret");
    if (s_exists (secret)) {
        //  A damaged key is rotated too: that is how it is repaired. A
        //  damaged tap key comes back metadata-only (never more access).
        char *ignored = NULL;
        if (s_check (dir, name, &access, &ignored)) {
            free (ignored);
            access = sl_key_role_is_stage (name) ? SL_ACCESS_NONE : SL_ACCESS_METADATA;
        }
    }
    else
    if (!sl_key_role_is_stage (name))
        return s_fail (error, "no key named %s in %s (a new tap: sluice-keygen --tap %s)", name, dir, name);
    const char *role = sl_key_role_is_stage (name) ? name : "tap";
    if (s_make_dir (dir, error) || s_write (dir, name, role, access, error))
        return -1;
    sl_buf_printf (report, "rotated %s\n", name);
    return 0;
}
