/*  Unit tests: common/service/sl_keywatch, in a service without sockets:
    the keys file loaded at start, reloaded on demand, on SIGHUP and on a
    change to its file; a bad file kept out with its reason (never a key
    or a hash in the logs); SLUICE_CLIENT_KEYS without a file; no keys at
    all. Two watches on one service (a keys file and a policy) both hear
    SIGHUP. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/service/sl_keywatch.h"
#include "common/service/sl_policywatch.h"
#include "tests/unit/service_fixture.h"

static char s_path [128];               //  the keys file
static char s_policy [128];             //  a policy file, for the SIGHUP test
static int s_heard_loaded, s_heard_refused;
static sl_keyring_t *s_heard;

static void
s_setup (void)
{
    service_fixture_start ("keywatch");
    snprintf (s_path, sizeof s_path, "%s/keys.yaml", service_fixture.dir);
    snprintf (s_policy, sizeof s_policy, "%s/policy.yaml", service_fixture.dir);
    s_heard_loaded = s_heard_refused = 0;
    s_heard = NULL;
}

static void
s_teardown (void)
{
    const char *files [] = { s_path, s_policy, NULL };
    service_fixture_stop (files);
}

TestSuite (sl_keywatch, .init = s_setup, .fini = s_teardown);

//  A keys file of n keys of team "t<n>" (each n a file of its own length).
static void
s_write_keys (int n)
{
    char text [4096] = "keys:\n";
    for (int i = 0; i < n; i++) {
        char key [16], hex [SL_KEYRING_HEX_SIZE];
        snprintf (key, sizeof key, "sk-%d", i);
        sl_keyring_key_hex (key, hex);
        size_t len = strlen (text);
        snprintf (text + len, sizeof text - len, "  - {id: k%d, sha256: %s, team: t%d}\n", i, hex, n);
    }
    service_fixture_write (s_path, text);
}

static void
s_on_reload (void *arg, sl_keyring_t *keyring, bool loaded)
{
    cr_expect_eq (arg, (void *) &s_heard);
    if (loaded)
        s_heard_loaded++;
    else
        s_heard_refused++;
    s_heard = keyring;
}

static sl_keywatch_t *
s_watch (int64_t watch_ms)
{
    sl_keywatch_t *w = sl_keywatch_new (service_fixture.svc, s_path, "sk-ignored", watch_ms);
    cr_assert_not_null (w);
    sl_keywatch_on_reload (w, s_on_reload, &s_heard);
    return w;
}

Test (sl_keywatch, loads_at_start_and_reloads_on_demand)
{
    s_write_keys (2);
    sl_keywatch_t *w = s_watch (0);
    cr_expect (sl_keywatch_has_file (w));
    sl_keyring_t *first = sl_keywatch_keyring (w);
    cr_assert_not_null (first);
    cr_expect_eq (sl_keyring_count (first), 2);
    cr_expect_not_null (sl_keyring_find (first, "sk-1"));
    cr_expect_null (sl_keyring_find (first, "sk-ignored"), "with a file, the list is not used");
    char want [256];
    snprintf (want, sizeof want, "%s: 2 keys, 1 teams", s_path);
    cr_expect_eq (service_fixture_logged ("keys_loaded", want), 1);
    cr_expect_eq (service_fixture_metric ("sluice_keys_reloads_total"), 0, "the first load is no reload");

    //  A stream holding the old keyring keeps it whole across a reload.
    sl_keyring_t *held = sl_keyring_ref (first);
    s_write_keys (3);
    cr_expect_eq (sl_keywatch_reload (w), 0);
    cr_expect_eq (sl_keyring_count (sl_keywatch_keyring (w)), 3);
    cr_expect_eq (s_heard_loaded, 1);
    cr_expect_eq (s_heard, sl_keywatch_keyring (w), "the callback is handed the keys now running");
    cr_expect_eq (service_fixture_metric ("sluice_keys_reloads_total"), 1);
    cr_expect_not_null (sl_keyring_find (held, "sk-0"));
    cr_expect_null (sl_keyring_find (held, "sk-2"));
    sl_keyring_unref (&held);
    sl_keywatch_destroy (&w);
    cr_expect_null (w);
}

Test (sl_keywatch, a_bad_file_keeps_the_running_keys_and_says_where)
{
    s_write_keys (1);
    sl_keywatch_t *w = s_watch (0);
    sl_keyring_t *running = sl_keywatch_keyring (w);
    service_fixture_write (s_path, "keys:\n  - {id: a, sha256: nothex}\n");
    cr_expect_eq (sl_keywatch_reload (w), -1);
    cr_expect_eq (sl_keywatch_keyring (w), running, "the old keys stay");
    cr_expect_eq (s_heard_refused, 1);
    cr_expect_eq (service_fixture_metric ("sluice_keys_reload_failures_total"), 1);
    char want [256];
    snprintf (want, sizeof want, "%s:2:", s_path);
    cr_expect_eq (service_fixture_logged ("keys_invalid", want), 1, "file:line:col: why");
    cr_expect_eq (service_fixture_logged ("keys_kept", ""), 1);
    sl_keywatch_destroy (&w);

    //  At start, a file that does not load stops the process.
    cr_expect_null (sl_keywatch_new (service_fixture.svc, s_path, NULL, 0));
    cr_expect_eq (service_fixture_logged ("keys_invalid", want), 2);
}

Test (sl_keywatch, a_change_is_read_once)
{
    s_write_keys (1);
    sl_keywatch_t *w = s_watch (0);
    cr_expect (!sl_keywatch_check (w), "nothing changed");
    s_write_keys (2);
    cr_expect (sl_keywatch_check (w));
    cr_expect (!sl_keywatch_check (w));
    cr_expect_eq (sl_keyring_count (sl_keywatch_keyring (w)), 2);
    cr_expect_eq (service_fixture_logged ("reload", "keys file changed"), 1);
    sl_keywatch_destroy (&w);
}

Test (sl_keywatch, without_a_file_the_list_or_nothing)
{
    sl_keywatch_t *w = sl_keywatch_new (service_fixture.svc, NULL, "sk-a, sk-b", 1000);
    cr_assert_not_null (w);
    cr_expect (!sl_keywatch_has_file (w));
    sl_keyring_t *ring = sl_keywatch_keyring (w);
    cr_assert_not_null (ring);
    cr_expect_eq (sl_keyring_count (ring), 2);
    cr_expect_eq (sl_keywatch_reload (w), 0, "nothing to read again");
    cr_expect_eq (sl_keywatch_keyring (w), ring);
    cr_expect_eq (service_fixture_logged ("keys_loaded", "SLUICE_CLIENT_KEYS: 2 keys"), 1);
    cr_expect_eq (service_fixture_logged ("keys_loaded", "sk-a"), 0, "never a key in the logs");
    sl_keywatch_destroy (&w);
    w = sl_keywatch_new (service_fixture.svc, "", "", 1000);
    cr_assert_not_null (w);
    cr_expect_null (sl_keywatch_keyring (w), "no keys: no check");
    sl_keywatch_destroy (&w);
}

static bool
s_both_reloaded (void *arg)
{
    (void) arg;
    return service_fixture_metric ("sluice_keys_reloads_total") >= 1
        && service_fixture_metric ("sluice_policy_reloads_total") >= 1;
}

Test (sl_keywatch, sighup_reloads_the_keys_and_the_policy_alike)
{
    s_write_keys (1);
    service_fixture_write (s_policy, "default: block\n");
    sl_keywatch_t *w = s_watch (0);
    sl_policywatch_t *p = sl_policywatch_new (service_fixture.svc, s_policy, 0, NULL);
    cr_assert_not_null (p);
    s_write_keys (2);
    service_fixture_write (s_policy, "default: allow # changed\n");
    raise (SIGHUP);
    service_fixture_run_until (s_both_reloaded, NULL);
    cr_expect_eq (sl_keyring_count (sl_keywatch_keyring (w)), 2, "the keys were read again");
    cr_expect_eq (service_fixture_metric ("sluice_policy_reloads_total"), 1, "and so was the policy");
    sl_policywatch_destroy (&p);
    sl_keywatch_destroy (&w);
}

static bool
s_keys_reloaded (void *arg)
{
    (void) arg;
    return service_fixture_metric ("sluice_keys_reloads_total") >= 1;
}

Test (sl_keywatch, the_timer_sees_a_change)
{
    s_write_keys (1);
    sl_keywatch_t *w = s_watch (SERVICE_FIXTURE_POLL_MS);
    s_write_keys (3);
    service_fixture_run_until (s_keys_reloaded, NULL);
    cr_expect_eq (sl_keyring_count (sl_keywatch_keyring (w)), 3);
    cr_expect_eq (service_fixture_logged ("reload", "keys file changed"), 1);
    sl_keywatch_destroy (&w);
}
