/*  Unit tests: common/service/sl_keywatch, in a service without sockets:
    the keys file loaded at start, reloaded on demand, on SIGHUP and on a
    change to its file; a bad file kept out with its reason (never a key
    or a hash in the logs); SLUICE_CLIENT_KEYS without a file; no keys at
    all. Two watches on one service (a keys file and a policy) both hear
    SIGHUP. The JWKS a jwt section names is watched like the keys file: a
    key taken out of it stops working at the timer's next look. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/service/sl_keywatch.h"
#include "common/service/sl_policywatch.h"
#include "tests/jwt_fixture.h"
#include "tests/unit/service_fixture.h"

static char s_path [128];               //  the keys file
static char s_policy [128];             //  a policy file, for the SIGHUP test
static char s_jwks [128];               //  a JWKS file, for the token test
static int s_heard_loaded, s_heard_refused;
static sl_keyring_t *s_heard;

static void
s_setup (void)
{
    service_fixture_start ("keywatch");
    snprintf (s_path, sizeof s_path, "%s/keys.yaml", service_fixture.dir);
    snprintf (s_policy, sizeof s_policy, "%s/policy.yaml", service_fixture.dir);
    snprintf (s_jwks, sizeof s_jwks, "%s/jwks.json", service_fixture.dir);
    s_heard_loaded = s_heard_refused = 0;
    s_heard = NULL;
}

static void
s_teardown (void)
{
    const char *files [] = { s_path, s_policy, s_jwks, NULL };
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

//  A JWKS of the keys given (their kids "k0", "k1", ... by position).
static void
s_write_jwks (const jwt_pair_t *keys, const bool *listed, int n)
{
    char text [4096] = "{\"keys\":[";
    for (int i = 0; i < n; i++)
        if (listed [i]) {
            char jwk [512], kid [16];
            snprintf (kid, sizeof kid, "k%d", i);
            jwt_fixture_jwk (&keys [i], kid, jwk, sizeof jwk);
            size_t len = strlen (text);
            snprintf (text + len, sizeof text - len, "%s%s", text [len - 1] == '[' ? "" : ",", jwk);
        }
    strncat (text, "]}", sizeof text - strlen (text) - 1);
    service_fixture_write (s_jwks, text);
}

//  The token of key i (kid "k<i>"), checked against the running keys.
static int
s_token_check (sl_keywatch_t *w, const jwt_pair_t *keys, int i)
{
    char kid [16];
    snprintf (kid, sizeof kid, "k%d", i);
    int64_t now = (int64_t) time (NULL);
    char *token = jwt_fixture_token (&keys [i], JWT_ALG_ES256, kid, "alice", "eng", "sluice", (long) now + 600, 0,
                                     NULL);
    sl_jwt_claims_t claims;
    int rc = sl_jwt_verify (sl_keywatch_jwtkeys (w), sl_keyring_jwt (sl_keywatch_keyring (w)), token, now, &claims);
    free (token);
    return rc;
}

Test (sl_keywatch, a_key_taken_out_of_the_jwks_stops_working)
{
    jwt_pair_t keys [2];
    jwt_fixture_make (&keys [0], false);
    jwt_fixture_make (&keys [1], false);
    bool both [] = { true, true }, first [] = { true, false };
    s_write_jwks (keys, both, 2);
    service_fixture_write (s_path, "jwt: {jwks: jwks.json, audience: sluice}\n");
    sl_keywatch_t *w = s_watch (SERVICE_FIXTURE_POLL_MS);
    cr_expect_eq (s_token_check (w, keys, 0), SL_JWT_OK);
    cr_expect_eq (s_token_check (w, keys, 1), SL_JWT_OK);
    //  The identity provider retires k1: the keys file itself is unchanged.
    s_write_jwks (keys, first, 2);
    service_fixture_run_until (s_keys_reloaded, NULL);
    cr_expect_eq (s_token_check (w, keys, 1), SL_JWT_KID, "a retired key's tokens are refused");
    cr_expect_eq (s_token_check (w, keys, 0), SL_JWT_OK);
    char want [256];
    snprintf (want, sizeof want, "%s changed", s_jwks);
    cr_expect_eq (service_fixture_logged ("reload", want), 1, "the log names the file");
    cr_expect_not (sl_keywatch_check (w), "read once");
    sl_keywatch_destroy (&w);
    jwt_fixture_free (&keys [0]);
    jwt_fixture_free (&keys [1]);
}
