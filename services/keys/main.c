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
    sluice-keys create --console URL --team T --user U [--models G,G]
                       [--rpm N] [--concurrent N] [--tokens-per-day N] [--approver]
    sluice-keys list --console URL
    sluice-keys revoke --console URL ID
        the same through the audit console's keys API (docs/identity.md),
        with the console key in SLUICE_CONSOLE_KEY (environment only: a
        flag would show it to anyone who can list processes). create
        prints the key on the first line (shown once), its id on the
        second; list the console's JSON.

    Exit status: 0 done, 1 a file that does not load or a console that
    refused (its answer on stderr), 2 bad usage.
*/
#include <curl/curl.h>
#include <getopt.h>
#include <jansson.h>
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
#define S_CONSOLE_TIMEOUT_MS 10000L
#define S_ANSWER_MAX (16u << 20)

static void
s_usage (FILE *out)
{
    fprintf (out,
        "usage: sluice-keys new --team T --user U [--policy FILE] [--rpm N] [--concurrent N]\n"
        "                       [--tokens-per-day N] [--approver]\n"
        "       sluice-keys hash [KEY]\n"
        "       sluice-keys check FILE\n"
        "       sluice-keys create --console URL --team T --user U [--models G,G] [--rpm N]\n"
        "                          [--concurrent N] [--tokens-per-day N] [--approver]\n"
        "       sluice-keys list --console URL\n"
        "       sluice-keys revoke --console URL ID\n"
        "\n"
        "new     a fresh key on the first line, then its keys-file entry (a YAML list item\n"
        "        to append under the file's keys: list); the key is shown once, kept nowhere;\n"
        "        --approver: the key may decide approvals whose rule names no approvers\n"
        "hash    the SHA-256 of a key (from stdin when not given) as sha256 takes it\n"
        "check   load a keys file as the gateway does and say what is wrong with it\n"
        "create, list, revoke   through the audit console's keys API, the console key in\n"
        "        SLUICE_CONSOLE_KEY; create prints the key (shown once), then its id\n");
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

//  --------------------------------------------------------------------------
//  The console's keys API

static size_t
s_on_answer (char *data, size_t size, size_t count, void *arg)
{
    sl_buf_t *out = arg;
    if (out->len + size * count > S_ANSWER_MAX)
        return 0;
    sl_buf_append (out, data, size * count);
    return size * count;
}

//  method path (body: JSON, or NULL) at the console: the HTTP status (0:
//  no answer, said on stderr), the answer into out.
static long
s_console (const char *console, const char *method, const char *path, const char *body, sl_buf_t *out)
{
    const char *key = getenv ("SLUICE_CONSOLE_KEY");
    CURL *easy = curl_easy_init ();
    if (!easy)
        return 0;
    sl_buf_t url = { 0 }, auth = { 0 };
    size_t n = strlen (console);
    while (n && console [n - 1] == '/')
        n--;                            //  http://host:8081/ and http://host:8081 alike
    sl_buf_printf (&url, "%.*s%s", (int) n, console, path);
    struct curl_slist *headers = curl_slist_append (NULL, "Content-Type: application/json");
    if (key && *key) {
        sl_buf_printf (&auth, "Authorization: Bearer %s", key);
        headers = curl_slist_append (headers, sl_buf_cstr (&auth));
        sodium_memzero (auth.data, auth.len);
    }
    curl_easy_setopt (easy, CURLOPT_URL, sl_buf_cstr (&url));
    curl_easy_setopt (easy, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt (easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt (easy, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, S_CONSOLE_TIMEOUT_MS);
    curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_on_answer);
    curl_easy_setopt (easy, CURLOPT_WRITEDATA, out);
    if (body)
        curl_easy_setopt (easy, CURLOPT_POSTFIELDS, body);
    long status = 0;
    CURLcode rc = curl_easy_perform (easy);
    if (rc == CURLE_OK)
        curl_easy_getinfo (easy, CURLINFO_RESPONSE_CODE, &status);
    else
        fprintf (stderr, "sluice-keys: %s: %s\n", sl_buf_cstr (&url), curl_easy_strerror (rc));
    curl_slist_free_all (headers);
    curl_easy_cleanup (easy);
    sl_buf_free (&url);
    sl_buf_free (&auth);
    return status;
}

//  The console's answer when it is not want: on stderr, and the exit status.
static int
s_refused (long status, long want, sl_buf_t *answer)
{
    if (status == want)
        return 0;
    if (status)
        fprintf (stderr, "sluice-keys: the console answered %ld: %s\n", status, sl_buf_cstr (answer));
    return S_EXIT_FAILED;
}

static int
s_create (int argc, char **argv)
{
    sl_keyentry_spec_t spec = { 0 };
    const char *console = NULL, *models = NULL;
    static const struct option longopts [] = {
        { "console", required_argument, NULL, 'C' }, { "models", required_argument, NULL, 'm' },
        { "team", required_argument, NULL, 't' }, { "user", required_argument, NULL, 'u' },
        { "rpm", required_argument, NULL, 'r' }, { "concurrent", required_argument, NULL, 'c' },
        { "tokens-per-day", required_argument, NULL, 'd' }, { "approver", no_argument, NULL, 'a' },
        { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 }
    };
    int c;
    while ((c = getopt_long (argc, argv, "h", longopts, NULL)) != -1) {
        int rc = 0;
        switch (c) {
            case 'C': console = optarg; break;
            case 'm': models = optarg; break;
            case 't': spec.team = optarg; break;
            case 'u': spec.user = optarg; break;
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
    sl_buf_t body = { 0 }, answer = { 0 };
    if (!console || optind != argc || sl_keyentry_request (&spec, models, &body)) {
        s_usage (stderr);
        sl_buf_free (&body);
        return S_EXIT_USAGE;
    }
    int rc = s_refused (s_console (console, "POST", "/api/keys", sl_buf_cstr (&body), &answer), 201, &answer);
    if (!rc) {
        json_t *j = json_loadb (answer.data ? (const char *) answer.data : "", answer.len, 0, NULL);
        const char *key = json_string_value (json_object_get (j, "key"));
        const char *id = json_string_value (json_object_get (j, "id"));
        if (key && id)
            printf ("%s\n%s\n", key, id);
        else {
            fprintf (stderr, "sluice-keys: the console's answer has no key\n");
            rc = S_EXIT_FAILED;
        }
        json_decref (j);
    }
    sodium_memzero (answer.data, answer.len);
    sl_buf_free (&answer);
    sl_buf_free (&body);
    return rc;
}

//  list --console URL, revoke --console URL ID
static int
s_console_verb (int argc, char **argv, bool revoke)
{
    const char *console = NULL;
    static const struct option longopts [] = {
        { "console", required_argument, NULL, 'C' }, { "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 }
    };
    int c;
    while ((c = getopt_long (argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'C')
            console = optarg;
        else {
            s_usage (c == 'h' ? stdout : stderr);
            return c == 'h' ? 0 : S_EXIT_USAGE;
        }
    }
    if (!console || optind != argc - (revoke ? 1 : 0)) {
        s_usage (stderr);
        return S_EXIT_USAGE;
    }
    sl_buf_t answer = { 0 }, path = { 0 };
    int rc;
    if (revoke) {
        const char *id = argv [optind];
        if (!*id || strspn (id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != strlen (id)) {
            fprintf (stderr, "sluice-keys: a key id is letters, digits, '.', '_' or '-'\n");
            return S_EXIT_USAGE;
        }
        sl_buf_printf (&path, "/api/keys/%s", id);
        rc = s_refused (s_console (console, "DELETE", sl_buf_cstr (&path), NULL, &answer), 200, &answer);
    }
    else
        rc = s_refused (s_console (console, "GET", "/api/keys", NULL, &answer), 200, &answer);
    if (!rc)
        printf ("%s\n", sl_buf_cstr (&answer));
    sl_buf_free (&answer);
    sl_buf_free (&path);
    return rc;
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
    if (strcmp (argv [1], "create") == 0)
        return s_create (argc - 1, argv + 1);
    if (strcmp (argv [1], "list") == 0)
        return s_console_verb (argc - 1, argv + 1, false);
    if (strcmp (argv [1], "revoke") == 0)
        return s_console_verb (argc - 1, argv + 1, true);
    if (strcmp (argv [1], "--help") == 0 || strcmp (argv [1], "-h") == 0) {
        s_usage (stdout);
        return 0;
    }
    s_usage (stderr);
    return S_EXIT_USAGE;
}
