/*  sluice-keygen - the keys of the sluice bus.

    sluice-keygen --dir DIR                       make every missing key
    sluice-keygen --dir DIR --tap NAME [--metadata-only]   add a tap key
    sluice-keygen --dir DIR --rotate NAME         replace one key
    sluice-keygen --dir DIR --list                show the keys
    sluice-keygen --dir DIR --signing NAME        an Ed25519 signing key
    sluice-keygen --kubernetes NAMESPACE [--dir DIR]
                                                  the keys as Kubernetes Secrets

    Every process of the bus reads its own key and the public keys from
    DIR (--keys DIR, or SLUICE_KEYS, which is also this program's default
    for --dir). Existing keys are kept, so this may run at every start
    (make run and the compose file's keygen service do). Exit status: 0
    done, 1 failed (the reason on stderr), 2 bad usage.
*/
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/bus/sl_keys.h"
#include "common/identity/sl_signkey.h"
#include "services/keygen/sl_keygen.h"
#include "services/keygen/sl_keygen_kube.h"

#define S_EXIT_FAILED 1
#define S_EXIT_USAGE 2

static void
s_usage (FILE *out)
{
    fprintf (out,
        "usage: sluice-keygen --dir DIR                        make every missing key\n"
        "       sluice-keygen --dir DIR --tap NAME [--metadata-only]   add a tap's key\n"
        "       sluice-keygen --dir DIR --rotate NAME          replace a key\n"
        "       sluice-keygen --dir DIR --list                 show the keys\n"
        "       sluice-keygen --dir DIR --signing NAME         an Ed25519 signing key (audit)\n"
        "       sluice-keygen --kubernetes NAMESPACE [--dir DIR]  the keys as Secrets\n"
        "\n"
        "  --dir            the key directory (default: $SLUICE_KEYS)\n"
        "  --tap NAME       a key for a monitoring tap; it sees everything, or with\n"
        "                   --metadata-only no text, arguments or prompt\n"
        "  --rotate NAME    a new key for a role (gateway, ingest, aggregator, judge, audit,\n"
        "                   emitter) or a tap; restart the processes that use it\n"
        "  --list           name, role, access and public key of every key\n"
        "  --signing NAME   NAME.sign (public) and NAME.sign_secret: the key sluice-audit\n"
        "                   signs its chain's checkpoints with (--signing audit)\n"
        "  --kubernetes NS  make the missing keys (the audit's signing key too), then\n"
        "                   write to stdout one Secret per role (sluice-keys-<role> in\n"
        "                   namespace NS: its secret key and every public key; the\n"
        "                   audit's its signing key) to kubectl apply; never commit it\n"
        "\n"
        "Without --tap or --rotate, one key per role and the taps 'tap' (full) and\n"
        "'tap-meta' (metadata only) are made where missing; existing keys are kept.\n");
}

static int
s_by_name (const void *a, const void *b)
{
    return strcmp ((*(const sl_key_t *const *) a)->name, (*(const sl_key_t *const *) b)->name);
}

static int
s_list (const char *dir)
{
    sl_keys_t *keys = sl_keys_new ();
    char *error = NULL;
    int rc = 0;
    if (sl_keys_load (keys, dir, &error) < 0) {
        fprintf (stderr, "sluice-keygen: %s\n", error);
        free (error);
        rc = S_EXIT_FAILED;
    }
    else {
        size_t count = sl_keys_count (keys);
        const sl_key_t **sorted = calloc (count ? count : 1, sizeof (sl_key_t *));
        for (size_t i = 0; i < count; i++)
            sorted [i] = sl_keys_at (keys, i);
        qsort (sorted, count, sizeof (sl_key_t *), s_by_name);
        for (size_t i = 0; i < count; i++) {
            const sl_key_t *k = sorted [i];
            printf ("%-16s %-10s %-8s %s\n", k->name, k->role,
                    k->access ? sl_access_name (k->access) : "-", k->public_txt);
        }
        free (sorted);
        if (*sl_keys_skipped (keys))
            fprintf (stderr, "sluice-keygen: skipped:\n%s", sl_keys_skipped (keys));
    }
    sl_keys_destroy (&keys);
    return rc;
}

//  The missing keys made (what was done on stderr: stdout is the manifests),
//  then one Secret per role on stdout.
static int
s_kubernetes (const char *dir, const char *namespace)
{
    sl_buf_t report = { 0 }, manifests = { 0 };
    char *error = NULL;
    int rc = sl_keygen_kube_namespace_valid (namespace) ? 0 : S_EXIT_USAGE;
    if (rc)
        fprintf (stderr, "sluice-keygen: '%s' is not a Kubernetes namespace\n", namespace);
    else
    if (sl_keygen_ensure (dir, &report, &error) || sl_signkey_make (dir, "audit", &report, &error)
    ||  sl_keygen_kube_secrets (dir, namespace, &manifests, &error)) {
        fprintf (stderr, "sluice-keygen: %s\n", error);
        free (error);
        rc = S_EXIT_FAILED;
    }
    fputs (sl_buf_cstr (&report), stderr);
    fputs (sl_buf_cstr (&manifests), stdout);
    sl_buf_free (&report);
    sl_buf_free (&manifests);
    return rc;
}

int
main (int argc, char **argv)
{
    const char *dir = getenv ("SLUICE_KEYS");
    const char *tap = NULL, *rotate = NULL, *signing = NULL, *kubernetes = NULL;
    bool metadata_only = false, list = false;
    static const struct option longopts [] = {
        { "dir", required_argument, NULL, 'd' },
        { "tap", required_argument, NULL, 't' },
        { "metadata-only", no_argument, NULL, 'm' },
        { "rotate", required_argument, NULL, 'r' },
        { "list", no_argument, NULL, 'l' },
        { "signing", required_argument, NULL, 's' },
        { "kubernetes", required_argument, NULL, 'k' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    int c;
    while ((c = getopt_long (argc, argv, "h", longopts, NULL)) != -1)
        switch (c) {
            case 'd': dir = optarg; break;
            case 't': tap = optarg; break;
            case 'm': metadata_only = true; break;
            case 'r': rotate = optarg; break;
            case 'l': list = true; break;
            case 's': signing = optarg; break;
            case 'k': kubernetes = optarg; break;
            case 'h': s_usage (stdout); return 0;
            default: s_usage (stderr); return S_EXIT_USAGE;
        }
    if (optind < argc || !dir || !*dir || (tap && rotate) || (metadata_only && !tap)
    ||  (list && (tap || rotate)) || (signing && (tap || rotate || list))
    ||  (kubernetes && (list || tap || rotate || signing))) {
        s_usage (stderr);
        return S_EXIT_USAGE;
    }
    if (list)
        return s_list (dir);
    if (kubernetes)
        return s_kubernetes (dir, kubernetes);
    sl_buf_t report = { 0 };
    char *error = NULL;
    int rc = signing ? sl_signkey_make (dir, signing, &report, &error)
           : tap ? sl_keygen_tap (dir, tap, metadata_only ? SL_ACCESS_METADATA : SL_ACCESS_FULL, &report, &error)
           : rotate ? sl_keygen_rotate (dir, rotate, &report, &error)
           : sl_keygen_ensure (dir, &report, &error);
    fputs (sl_buf_cstr (&report), stdout);
    if (rc) {
        fprintf (stderr, "sluice-keygen: %s\n", error);
        free (error);
    }
    else
        printf ("keys in %s\n", dir);
    sl_buf_free (&report);
    return rc ? S_EXIT_FAILED : 0;
}
