/*  sluice-policy - a policy's tests, its lint, and its backtest on the audit.

    sluice-policy test [--policy P.yaml] FILE.test.yaml...
    sluice-policy lint --policy P.yaml [--inventory TOOLS.json] [--keys-file KEYS.yaml]
    sluice-policy backtest --policy NEW.yaml --since 30d [--until T]
                           (--data-dir DIR | --dsn DSN) [--team T] [--json] [--examples N]

    test runs each file's cases through the policy library the judge
    uses (sl_policytest.h): a table, and exit 1 with file:line of each
    mismatch. Without --policy, P.test.yaml is tested against P.yaml
    beside it.

    lint reports what a policy says that cannot be what its author meant
    (sl_policylint.h): one line per finding, file:line, exit 1 when there
    is one.

    backtest judges every tool call the audit store recorded in the
    window again under the new policy, with each stream's recorded
    context, and prints the difference against what was decided
    (sl_backtest.h). It reads the store page by page through the store's
    interface, read-only (sl_calls.h); it never writes to it.

    A program of the audit's folder: the backtest reads the audit's store,
    and a program includes no other program's folder (common/LAYERS).

    Exit status: 0 done (and every case passed, no finding), 1 a case
    failed or lint found something, 2 bad usage or input (a test file or
    policy that does not load, a store that cannot be read, an empty
    window).
*/
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <czmq.h>

#include "common/base/sl_buf.h"
#include "common/policy/sl_backtest.h"
#include "common/policy/sl_policy.h"
#include "common/policy/sl_policylint.h"
#include "common/policy/sl_policytest.h"
#include "services/audit/sl_when.h"
#include "services/audit/store/sl_calls.h"

#define S_EXIT_OK 0
#define S_EXIT_FAILED 1
#define S_EXIT_USAGE 2
#define S_DB_FILE "audit.db"            //  the SQLite store in an audit's --data-dir
#define S_TEST_SUFFIX ".test.yaml"

static void
s_usage (FILE *out)
{
    fprintf (out,
        "usage: sluice-policy test [--policy P.yaml] FILE.test.yaml...\n"
        "       sluice-policy lint --policy P.yaml [--inventory TOOLS.json] [--keys-file KEYS.yaml]\n"
        "       sluice-policy backtest --policy NEW.yaml --since 30d [--until TIME]\n"
        "                              (--data-dir DIR | --dsn DSN) [--team T] [--json] [--examples N]\n"
        "\n"
        "  test      run the cases of each test file against the policy (P.test.yaml:\n"
        "            P.yaml beside it, unless --policy names one); exit 1 on a mismatch\n"
        "  lint      shadowed rules, rules that never match, catastrophic regexes, an ask\n"
        "            nobody can approve, tools the inventory (the console's /api/tools\n"
        "            JSON) does not know; exit 1 on a finding\n"
        "  backtest  judge the audit's recorded tool calls again under the new policy and\n"
        "            print the difference; --dsn also from SLUICE_AUDIT_DSN\n");
}

static sl_policy_t *
s_load_policy (const char *verb, const char *path)
{
    char *error = NULL;
    sl_policy_t *policy = sl_policy_load (path, &error);
    if (!policy) {
        fprintf (stderr, "sluice-policy %s: the policy does not load: %s\n", verb, error ? error : path);
        free (error);
    }
    return policy;
}

//  --------------------------------------------------------------------------
//  test

//  P.test.yaml -> P.yaml (owned), NULL when the name does not end so.
static char *
s_policy_beside (const char *test)
{
    size_t n = strlen (test), k = strlen (S_TEST_SUFFIX);
    if (n <= k || strcmp (test + n - k, S_TEST_SUFFIX))
        return NULL;
    char *out = malloc (n - k + sizeof ".yaml");
    if (!out)
        return NULL;
    memcpy (out, test, n - k);
    strcpy (out + n - k, ".yaml");
    return out;
}

static int
s_test (int argc, char **argv)
{
    const char *policy_path = NULL;
    static struct option longs [] = { { "policy", required_argument, 0, 'p' }, { "help", no_argument, 0, 'h' },
                                      { 0, 0, 0, 0 } };
    int c;
    while ((c = getopt_long (argc, argv, "h", longs, NULL)) != -1) {
        if (c == 'p')
            policy_path = optarg;
        else {
            s_usage (c == 'h' ? stdout : stderr);
            return c == 'h' ? S_EXIT_OK : S_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf (stderr, "sluice-policy test: name the test files (P.test.yaml ...)\n");
        return S_EXIT_USAGE;
    }
    int rc = S_EXIT_OK;
    size_t cases = 0, failed = 0;
    for (int i = optind; i < argc; i++) {
        const char *file = argv [i];
        char *error = NULL;
        sl_policytest_t *test = sl_policytest_load (file, &error);
        if (!test) {
            fprintf (stderr, "%s\n", error ? error : file);
            free (error);
            rc = S_EXIT_USAGE;
            continue;
        }
        char *beside = policy_path ? NULL : s_policy_beside (file);
        const char *path = policy_path ? policy_path : beside;
        if (!path) {
            fprintf (stderr, "%s: no policy: name it with --policy, or call the file P.test.yaml beside "
                     "P.yaml\n", file);
            rc = S_EXIT_USAGE;
        }
        sl_policy_t *policy = path ? s_load_policy ("test", path) : NULL;
        if (policy) {
            sl_buf_t out = { 0 };
            size_t bad = sl_policytest_report (test, policy, file, &out);
            fwrite (out.data, 1, out.len, stdout);
            sl_buf_free (&out);
            cases += sl_policytest_count (test);
            failed += bad;
            if (bad && rc == S_EXIT_OK)
                rc = S_EXIT_FAILED;
        }
        else if (path)
            rc = S_EXIT_USAGE;
        sl_policy_unref (&policy);
        free (beside);
        sl_policytest_destroy (&test);
    }
    if (argc - optind > 1)
        printf ("%d files: %zu cases, %zu passed, %zu failed\n", argc - optind, cases, cases - failed, failed);
    return rc;
}

//  --------------------------------------------------------------------------
//  lint

static int
s_lint (int argc, char **argv)
{
    const char *policy_path = NULL, *inventory = NULL, *keys = NULL;
    static struct option longs [] = { { "policy", required_argument, 0, 'p' },
                                      { "inventory", required_argument, 0, 'i' },
                                      { "keys-file", required_argument, 0, 'k' },
                                      { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 } };
    int c;
    while ((c = getopt_long (argc, argv, "h", longs, NULL)) != -1) {
        if (c == 'p')
            policy_path = optarg;
        else if (c == 'i')
            inventory = optarg;
        else if (c == 'k')
            keys = optarg;
        else {
            s_usage (c == 'h' ? stdout : stderr);
            return c == 'h' ? S_EXIT_OK : S_EXIT_USAGE;
        }
    }
    if (!policy_path && optind < argc)
        policy_path = argv [optind++];
    if (!policy_path || optind < argc) {
        fprintf (stderr, "sluice-policy lint: name one policy (--policy P.yaml)\n");
        return S_EXIT_USAGE;
    }
    sl_policy_t *policy = s_load_policy ("lint", policy_path);
    if (!policy)
        return S_EXIT_USAGE;
    sl_policylint_opts_t opts = { .inventory = inventory, .keys_file = keys };
    sl_buf_t out = { 0 };
    char *error = NULL;
    int found = sl_policylint_run (policy, &opts, &out, &error);
    if (found < 0) {
        fprintf (stderr, "sluice-policy lint: %s\n", error ? error : "cannot lint");
        free (error);
        sl_buf_free (&out);
        sl_policy_unref (&policy);
        return S_EXIT_USAGE;
    }
    fwrite (out.data, 1, out.len, stdout);
    printf ("%s: %d finding%s\n", policy_path, found, found == 1 ? "" : "s");
    sl_buf_free (&out);
    sl_policy_unref (&policy);
    return found ? S_EXIT_FAILED : S_EXIT_OK;
}

//  --------------------------------------------------------------------------
//  backtest

static int
s_backtest (int argc, char **argv)
{
    const char *policy_path = NULL, *since = NULL, *until = NULL, *data_dir = NULL, *dsn = NULL, *team = NULL;
    long examples = SL_BACKTEST_DEFAULT_EXAMPLES;
    bool json = false;
    static struct option longs [] = {
        { "policy", required_argument, 0, 'p' }, { "since", required_argument, 0, 's' },
        { "until", required_argument, 0, 'u' }, { "data-dir", required_argument, 0, 'd' },
        { "dsn", required_argument, 0, 'D' }, { "team", required_argument, 0, 't' },
        { "json", no_argument, 0, 'j' }, { "examples", required_argument, 0, 'e' },
        { "help", no_argument, 0, 'h' }, { 0, 0, 0, 0 }
    };
    int c;
    while ((c = getopt_long (argc, argv, "h", longs, NULL)) != -1) {
        switch (c) {
            case 'p': policy_path = optarg; break;
            case 's': since = optarg; break;
            case 'u': until = optarg; break;
            case 'd': data_dir = optarg; break;
            case 'D': dsn = optarg; break;
            case 't': team = optarg; break;
            case 'j': json = true; break;
            case 'e':
                examples = strtol (optarg, NULL, 10);
                if (examples < 0 || examples > SL_BACKTEST_MAX_EXAMPLES) {
                    fprintf (stderr, "sluice-policy backtest: --examples 0 to %d\n", SL_BACKTEST_MAX_EXAMPLES);
                    return S_EXIT_USAGE;
                }
                break;
            default:
                s_usage (c == 'h' ? stdout : stderr);
                return c == 'h' ? S_EXIT_OK : S_EXIT_USAGE;
        }
    }
    if (!dsn && getenv ("SLUICE_AUDIT_DSN") && *getenv ("SLUICE_AUDIT_DSN") && !data_dir)
        dsn = getenv ("SLUICE_AUDIT_DSN");
    if (!policy_path || !since || optind < argc || (!data_dir == !dsn)) {
        fprintf (stderr, "sluice-policy backtest: --policy NEW.yaml --since 30d and one of --data-dir DIR or "
                 "--dsn DSN\n");
        return S_EXIT_USAGE;
    }
    int64_t now = zclock_time (), from = 0, to = now;
    if (sl_when_parse (since, now, &from) || (until && sl_when_parse (until, now, &to)) || from >= to) {
        fprintf (stderr, "sluice-policy backtest: not a window: --since %s%s%s (a time: 2026-05-20T14:00:00Z, "
                 "Unix seconds, or back from now: 30d, 24h)\n", since, until ? " --until " : "", until ? until : "");
        return S_EXIT_USAGE;
    }
    sl_policy_t *policy = s_load_policy ("backtest", policy_path);
    if (!policy)
        return S_EXIT_USAGE;
    char path [4096];
    if (data_dir)
        snprintf (path, sizeof path, "%s/%s", data_dir, S_DB_FILE);
    char *error = NULL;
    sl_store_t *store = sl_calls_open (data_dir ? path : dsn, &error);
    if (!store) {
        fprintf (stderr, "sluice-policy backtest: cannot read the store: %s\n", error ? error : "?");
        free (error);
        sl_policy_unref (&policy);
        return S_EXIT_USAGE;
    }
    sl_backtest_t *backtest = sl_backtest_new (policy, (int) examples);
    sl_calls_filter_t filter = { .from = from, .to = to, .team = team };
    int64_t calls = sl_calls_backtest (store, &filter, backtest);
    int status = S_EXIT_OK;
    if (calls < 0) {
        fprintf (stderr, "sluice-policy backtest: reading the store failed: %s\n", sl_store_error (store));
        status = S_EXIT_USAGE;
    }
    else if (calls == 0) {
        fprintf (stderr, "sluice-policy backtest: no tool call recorded in the window%s%s (from %lld to %lld "
                 "ms) in %s\n", team ? " for team " : "", team ? team : "", (long long) from, (long long) to,
                 sl_store_target (store));
        status = S_EXIT_USAGE;
    }
    else {
        sl_buf_t out = { 0 };
        if (json)
            sl_backtest_json (backtest, &out);
        else
            sl_backtest_text (backtest, &out);
        fwrite (out.data, 1, out.len, stdout);
        sl_buf_free (&out);
    }
    sl_backtest_destroy (&backtest);
    sl_store_close (&store);
    sl_policy_unref (&policy);
    return status;
}

int
main (int argc, char **argv)
{
    if (argc < 2 || !strcmp (argv [1], "--help") || !strcmp (argv [1], "-h")) {
        s_usage (argc < 2 ? stderr : stdout);
        return argc < 2 ? S_EXIT_USAGE : S_EXIT_OK;
    }
    const char *verb = argv [1];
    if (!strcmp (verb, "test"))
        return s_test (argc - 1, argv + 1);
    if (!strcmp (verb, "lint"))
        return s_lint (argc - 1, argv + 1);
    if (!strcmp (verb, "backtest"))
        return s_backtest (argc - 1, argv + 1);
    fprintf (stderr, "sluice-policy: unknown verb '%s' (test, lint, backtest)\n", verb);
    return S_EXIT_USAGE;
}
