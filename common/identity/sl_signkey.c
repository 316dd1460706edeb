/*  sl_signkey.c - an Ed25519 signing key in a key directory (see sl_signkey.h). */
#include "common/identity/sl_signkey.h"

#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/sl_alloc.h"

#define S_SEED 32                       //  bytes of the secret seed
#define S_HEX_LINE 80                   //  a key file's line, read
#define S_PATH 4096

static int
s_fail (char **error, const char *what, const char *path)
{
    sl_buf_t b = { 0 };
    sl_buf_printf (&b, "%s: %s", what, path);
    *error = sl_xstrdup (sl_buf_cstr (&b));
    sl_buf_free (&b);
    return -1;
}

static void
s_key_id (sl_signkey_t *key)
{
    uint8_t hash [crypto_hash_sha256_BYTES];
    crypto_hash_sha256 (hash, key->public_key, SL_SIGNKEY_PUBLIC);
    sodium_bin2hex (key->id, sizeof key->id, hash, (SL_SIGNKEY_ID_HEX - 1) / 2);
}

//  One file: the text, under a temporary name, renamed in. 0 ok.
static int
s_write (const char *path, const char *text, mode_t mode)
{
    char tmp [S_PATH];
    snprintf (tmp, sizeof tmp, "%s.tmp", path);
    int fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0)
        return -1;
    size_t n = strlen (text);
    bool ok = write (fd, text, n) == (ssize_t) n && fsync (fd) == 0;
    ok = close (fd) == 0 && ok;
    if (!ok || rename (tmp, path) != 0) {
        unlink (tmp);
        return -1;
    }
    return 0;
}

int
sl_signkey_make (const char *dir, const char *name, sl_buf_t *report, char **error)
{
    char pub [S_PATH], sec [S_PATH];
    snprintf (pub, sizeof pub, "%s/%s.sign", dir, name);
    snprintf (sec, sizeof sec, "%s/%s.sign_secret", dir, name);
    if (!*name || strchr (name, '/'))
        return s_fail (error, "not a key name", name);
    if (mkdir (dir, 0700) != 0 && errno != EEXIST)
        return s_fail (error, "cannot make the key directory", dir);
    struct stat st;
    if (stat (sec, &st) == 0 && stat (pub, &st) == 0) {
        sl_buf_printf (report, "kept %s signing key\n", name);
        return 0;
    }
    uint8_t seed [S_SEED], pk [SL_SIGNKEY_PUBLIC], sk [SL_SIGNKEY_SECRET];
    randombytes_buf (seed, sizeof seed);
    crypto_sign_seed_keypair (pk, sk, seed);
    char hex [2 * S_SEED + 2];
    sodium_bin2hex (hex, sizeof hex - 1, seed, sizeof seed);
    strcat (hex, "\n");
    sodium_memzero (seed, sizeof seed);
    sodium_memzero (sk, sizeof sk);
    int rc = s_write (sec, hex, 0600);
    sodium_memzero (hex, sizeof hex);
    if (rc)
        return s_fail (error, "cannot write", sec);
    sodium_bin2hex (hex, sizeof hex - 1, pk, sizeof pk);
    strcat (hex, "\n");
    if (s_write (pub, hex, 0644))
        return s_fail (error, "cannot write", pub);
    sl_buf_printf (report, "created %s signing key\n", name);
    return 0;
}

//  The hex key of a file's first line into out (size bytes). 0 ok.
static int
s_read_hex (const char *path, uint8_t *out, size_t size, char **error)
{
    FILE *f = fopen (path, "r");
    if (!f)
        return s_fail (error, "cannot read the key", path);
    char line [S_HEX_LINE] = "";
    char *got = fgets (line, sizeof line, f);
    fclose (f);
    size_t bin = 0;
    line [strcspn (line, "\r\n")] = 0;
    int rc = got && strlen (line) == size * 2 && sodium_hex2bin (out, size, line, strlen (line), NULL, &bin, NULL) == 0
             && bin == size ? 0 : s_fail (error, "not a signing key file", path);
    sodium_memzero (line, sizeof line);
    return rc;
}

int
sl_signkey_load_secret (sl_signkey_t *key, const char *path, char **error)
{
    memset (key, 0, sizeof *key);
    uint8_t seed [S_SEED];
    if (s_read_hex (path, seed, sizeof seed, error))
        return -1;
    crypto_sign_seed_keypair (key->public_key, key->secret_key, seed);
    sodium_memzero (seed, sizeof seed);
    key->has_secret = true;
    s_key_id (key);
    return 0;
}

int
sl_signkey_load_public (sl_signkey_t *key, const char *path, char **error)
{
    memset (key, 0, sizeof *key);
    if (s_read_hex (path, key->public_key, SL_SIGNKEY_PUBLIC, error))
        return -1;
    s_key_id (key);
    return 0;
}

void
sl_signkey_sign (const sl_signkey_t *key, const void *msg, size_t size, char sig [SL_SIGNKEY_SIG_HEX])
{
    uint8_t bin [crypto_sign_BYTES];
    crypto_sign_detached (bin, NULL, msg, size, key->secret_key);
    sodium_bin2hex (sig, SL_SIGNKEY_SIG_HEX, bin, sizeof bin);
}

bool
sl_signkey_check (const sl_signkey_t *key, const void *msg, size_t size, const char *sig)
{
    uint8_t bin [crypto_sign_BYTES];
    size_t n = 0;
    if (!sig || strlen (sig) != 2 * crypto_sign_BYTES
    ||  sodium_hex2bin (bin, sizeof bin, sig, strlen (sig), NULL, &n, NULL) != 0 || n != sizeof bin)
        return false;
    return crypto_sign_verify_detached (bin, msg, size, key->public_key) == 0;
}
