/*  sl_keygen_kube.c - the key directory as Kubernetes Secrets (see
    sl_keygen_kube.h). */
#include "services/keygen/sl_keygen_kube.h"

#include <dirent.h>
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base/sl_alloc.h"
#include "common/bus/sl_keys.h"
#include "services/keygen/sl_keygen.h"

#define S_NAMESPACE_MAX 63              //  an RFC 1123 label
#define S_KEY_FILE_MAX 65536            //  a certificate is a few hundred bytes
#define S_PUBLIC_SUFFIX ".key"
#define S_SECRET_SUFFIX ".key_secret"
//  The audit's signing key (sl_signkey.h), in the audit's Secret only:
//  its checkpoints and seals are signed with it.
#define S_SIGNING_ROLE "audit"
static const char *s_signing_files [] = { "audit.sign_secret", "audit.sign" };

bool
sl_keygen_kube_namespace_valid (const char *name)
{
    size_t len = name ? strlen (name) : 0;
    if (len == 0 || len > S_NAMESPACE_MAX || name [0] == '-' || name [len - 1] == '-')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!((name [i] >= 'a' && name [i] <= 'z') || (name [i] >= '0' && name [i] <= '9') || name [i] == '-'))
            return false;
    return true;
}

//  One "  <file>: <base64 of its bytes>" line of a Secret's data.
static int
s_put_file (sl_buf_t *out, const char *dir, const char *file, char **error)
{
    char path [4096];
    snprintf (path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen (path, "rb");
    if (!f) {
        *error = sl_xasprintf ("cannot read %s: %s", path, strerror (errno));
        return -1;
    }
    unsigned char *bytes = sl_xmalloc (S_KEY_FILE_MAX);
    size_t size = fread (bytes, 1, S_KEY_FILE_MAX, f);
    bool whole = feof (f) && !ferror (f);
    fclose (f);
    if (!whole) {
        free (bytes);
        *error = sl_xasprintf ("%s is not a key file (unreadable or over %d bytes)", path, S_KEY_FILE_MAX);
        return -1;
    }
    size_t b64_size = sodium_base64_ENCODED_LEN (size, sodium_base64_VARIANT_ORIGINAL);
    char *b64 = sl_xmalloc (b64_size);
    sodium_bin2base64 (b64, b64_size, bytes, size, sodium_base64_VARIANT_ORIGINAL);
    sl_buf_printf (out, "  %s: %s\n", file, b64);
    free (b64);
    free (bytes);
    return 0;
}

static int
s_by_name (const void *a, const void *b)
{
    return strcmp (*(char *const *) a, *(char *const *) b);
}

//  The public certificates' file names in dir, sorted (stable output);
//  only names sl_keys.h accepts (not the keygen's ".new-" files).
static int
s_public_files (const char *dir, char ***files_p, size_t *count_p, char **error)
{
    DIR *d = opendir (dir);
    if (!d) {
        *error = sl_xasprintf ("cannot read %s: %s", dir, strerror (errno));
        return -1;
    }
    char **files = NULL;
    size_t count = 0;
    struct dirent *e;
    while ((e = readdir (d)) && count < SL_KEYS_MAX) {
        size_t len = strlen (e->d_name), suffix = strlen (S_PUBLIC_SUFFIX);
        if (len <= suffix || strcmp (e->d_name + len - suffix, S_PUBLIC_SUFFIX) != 0)
            continue;
        char name [SL_KEY_NAME_MAX + 1];
        if (len - suffix > SL_KEY_NAME_MAX)
            continue;
        snprintf (name, sizeof name, "%.*s", (int) (len - suffix), e->d_name);
        if (!sl_key_name_valid (name))
            continue;
        files = sl_xrealloc (files, (count + 1) * sizeof (char *));
        files [count++] = sl_xstrdup (e->d_name);
    }
    closedir (d);
    if (count)
        qsort (files, count, sizeof (char *), s_by_name);
    *files_p = files;
    *count_p = count;
    return 0;
}

int
sl_keygen_kube_secrets (const char *dir, const char *namespace, sl_buf_t *out, char **error)
{
    if (!sl_keygen_kube_namespace_valid (namespace)) {
        *error = sl_xasprintf ("'%s' is not a Kubernetes namespace (1 to %d of a-z 0-9 -, starting and ending "
                               "with a letter or a digit)", namespace ? namespace : "", S_NAMESPACE_MAX);
        return -1;
    }
    //  Every role's secret key whole before anything is written: a Secret
    //  with a damaged key would fail its pod at start, far from here.
    for (size_t i = 0; sl_keygen_role (i); i++) {
        bool loose;
        zcert_t *cert = sl_keys_load_secret (dir, sl_keygen_role (i), &loose, error);
        if (!cert)
            return -1;
        zcert_destroy (&cert);
    }
    char **files = NULL;
    size_t count = 0;
    if (s_public_files (dir, &files, &count, error))
        return -1;
    sl_buf_t text = { 0 };
    sl_buf_printf (&text,
        "# The sluice bus's keys as Secrets, one per role (sluice-keygen --kubernetes %s).\n"
        "# They hold secret keys: kubectl apply -f this file, never commit it.\n", namespace);
    int rc = 0;
    for (size_t i = 0; sl_keygen_role (i) && rc == 0; i++) {
        const char *role = sl_keygen_role (i);
        sl_buf_printf (&text,
            "---\n"
            "apiVersion: v1\n"
            "kind: Secret\n"
            "metadata:\n"
            "  name: " SL_KEYGEN_SECRET_PREFIX "%s\n"
            "  namespace: %s\n"
            "  labels:\n"
            "    app.kubernetes.io/part-of: sluice\n"
            "    app.kubernetes.io/component: %s\n"
            "type: Opaque\n"
            "data:\n", role, namespace, role);
        char secret [SL_KEY_NAME_MAX + sizeof S_SECRET_SUFFIX];
        snprintf (secret, sizeof secret, "%s" S_SECRET_SUFFIX, role);
        rc = s_put_file (&text, dir, secret, error);
        for (size_t f = 0; f < count && rc == 0; f++)
            rc = s_put_file (&text, dir, files [f], error);
        for (size_t f = 0; strcmp (role, S_SIGNING_ROLE) == 0 && f < 2 && rc == 0; f++) {
            char path [4096];
            snprintf (path, sizeof path, "%s/%s", dir, s_signing_files [f]);
            if (access (path, F_OK) == 0)
                rc = s_put_file (&text, dir, s_signing_files [f], error);
        }
    }
    for (size_t f = 0; f < count; f++)
        free (files [f]);
    free (files);
    if (rc == 0)
        sl_buf_append (out, text.data, text.len);
    sl_buf_free (&text);
    return rc;
}
