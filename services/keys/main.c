/*  sluice-keys - the client keys of a keys file.

    sluice-keys new --team T --user U [--policy FILE] [--rpm N]
                    [--concurrent N] [--tokens-per-day N] [--approver]
        a fresh key on the first line, then its entry: one YAML list item
        to append under the keys file's top-level keys: list
        (sluice-keys new ... | tail -n +2 >> keys.yaml)
    sluice-keys hash [KEY]
        the SHA-256 of a key (read from stdin when not given), as a keys
        file's sha256 takes it
    sluice-keys check FILE
        load a keys file as the gateway would (the public keys of its jwt
        section too); say what is wrong with it

    Exit status: 0 done, 1 a file that does not load, 2 bad usage.
*/
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/identity/sl_jwt.h"
#include "common/identity/sl_keyring.h"
#include "services/keys/sl_keyentry.h"

#define S_EXIT_FAILED 1
#define S_EXIT_USAGE 2

static void
s_usage (FILE *out)
{
    fprintf (out,
        "usage: sluice-keys new --team T --user U [--policy FILE] [--rpm N] [--concurrent N]\n"
        "                       [--tokens-per-day N] [--approver]\n"
        "       sluice-keys hash [KEY]\n"
        "       sluice-keys check FILE\n"
        "\n"
        "new     a fresh key on the first line, then its keys-file entry (a YAML list item\n"
        "        to append under the file's keys: list); the key is shown once, kept nowhere;\n"
        "        --approver: the key may decide approvals whose rule names no approvers\n"
        "hash    the SHA-256 of a key (from stdin when not given) as sha256 takes it\n"
        "check   load a keys file as the gateway does and say what is wrong with it\n");
}

static int
s_number (const char *text, int64_t *out)
{
    char *end = NULL;
    long long v = strtoll (text, &end, 10);
    if (!*text || *end || v < 0)
        return -1;
    *out = v;
    return 0;
}

static int
s_new (int argc, char **argv)
{
    sl_keyentry_spec_t spec = { 0 };
    static const struct option longopts [] = {
        { "team", required_argument, NULL, 't' }, { "user", required_argument, NULL, 'u' },
        { "policy", required_argument, NULL, 'p' }, { "rpm", required_argument, NULL, 'r' },
        { "concurrent", required_argument, NULL, 'c' }, { "tokens-per-day", required_argument, NULL, 'd' },
        { "approver", no_argument, NULL, 'a' },
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 }
    };
    int c;
    while ((c = getopt_long (argc, argv, "h", longopts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
            case 't': spec.team = optarg; break;
            case 'u': spec.user = optarg; break;
            case 'p': spec.policy = optarg; break;
            case 'r': rc = s_number (optarg, &spec.rpm); break;
            case 'c': rc = s_number (optarg, &spec.concurrent); break;
            case 'd': rc = s_number (optarg, &spec.tokens_per_day); break;
            case 'a': spec.approver = true; break;
            case 'h': s_usage (stdout); return 0;
            default: s_usage (stderr); return S_EXIT_USAGE;
        }
        if (rc) {
            fprintf (stderr, "sluice-keys: --rpm, --concurrent and --tokens-per-day take a whole number\n");
            return S_EXIT_USAGE;
        }
    }
    if (!spec.team || !spec.user || optind != argc) {
        s_usage (stderr);
        return S_EXIT_USAGE;
    }
    char key [SL_KEYENTRY_KEY_MAX];
    sl_keyentry_new_key (key);
    sl_buf_t entry = { 0 };
    if (sl_keyentry_write (key, &spec, &entry)) {
        fprintf (stderr, "sluice-keys: a team is letters, digits, '.', '_' or '-', a user one line\n");
        sl_buf_free (&entry);
        return S_EXIT_USAGE;
    }
    printf ("%s\n%s", key, sl_buf_cstr (&entry));
    sodium_memzero (key, sizeof key);
    sl_buf_free (&entry);
    return 0;
}

static int
s_hash (int argc, char **argv)
{
    char line [4096] = "";
    const char *key = argc > 1 ? argv [1] : fgets (line, sizeof line, stdin);
    if (!key || argc > 2) {
        s_usage (stderr);
        return S_EXIT_USAGE;
    }
    line [strcspn (line, "\r\n")] = 0;
    char hex [SL_KEYRING_HEX_SIZE];
    sl_keyring_key_hex (key, hex);
    printf ("%s\n", hex);
    sodium_memzero (line, sizeof line);
    return 0;
}

static int
s_check (int argc, char **argv)
{
    if (argc != 2) {
        s_usage (stderr);
        return S_EXIT_USAGE;
    }
    char *error = NULL;
    sl_keyring_t *ring = sl_keyring_load (argv [1], &error);
    if (!ring) {
        fprintf (stderr, "%s\n", error);
        free (error);
        return S_EXIT_FAILED;
    }
    //  The gateway reads the token keys with the file: one it cannot use
    //  stops it as surely as a bad line.
    const sl_jwt_spec_t *spec = sl_keyring_jwt (ring);
    sl_jwtkeys_t *jwt = spec ? sl_jwtkeys_new (spec, &error) : NULL;
    if (spec && !jwt) {
        fprintf (stderr, "%s\n", error);
        free (error);
        sl_keyring_unref (&ring);
        return S_EXIT_FAILED;
    }
    printf ("%s: %zu key(s), %zu team(s)", argv [1], sl_keyring_count (ring), sl_keyring_team_count (ring));
    if (spec)
        printf (", signed tokens (%zu public key(s), audience %s)", sl_jwtkeys_count (jwt), spec->audience);
    printf ("\n");
    sl_jwtkeys_destroy (&jwt);
    sl_keyring_unref (&ring);
    return 0;
}

int
main (int argc, char **argv)
{
    if (sodium_init () < 0)
        return S_EXIT_FAILED;
    if (argc < 2) {
        s_usage (stderr);
        return S_EXIT_USAGE;
    }
    if (strcmp (argv [1], "new") == 0)
        return s_new (argc - 1, argv + 1);
    if (strcmp (argv [1], "hash") == 0)
        return s_hash (argc - 1, argv + 1);
    if (strcmp (argv [1], "check") == 0)
        return s_check (argc - 1, argv + 1);
    if (strcmp (argv [1], "--help") == 0 || strcmp (argv [1], "-h") == 0) {
        s_usage (stdout);
        return 0;
    }
    s_usage (stderr);
    return S_EXIT_USAGE;
}
