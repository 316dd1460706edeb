/*  Unit tests: common/service/sl_policywatch, in a service without sockets
    (no metrics port, no bus): the policy loaded at start, reloaded on
    demand, on SIGHUP (through the service's signalfd) and on a change to
    its file (through the timer); a bad file kept out with its reason; the
    metrics and the log lines, read back from the process's stderr. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "common/service/sl_policywatch.h"
#include "tests/unit/service_fixture.h"

static const char *s_policy_a = "rules:\n  - {id: a, tool: t, action: block}\n";
static const char *s_policy_b = "rules:\n  - {id: b1, tool: t, action: drop}\n  - {id: b2, tool: u, action: drop}\n";
static const char *s_policy_c = "default: block\n";
static const char *s_broken = "rules:\n  - id: broken\n    action: maybe\n";

static char s_path [128];                //  the policy file
static sl_service_t *s_svc;

//  What the reload callback heard.
static int s_heard_loaded, s_heard_refused;
static sl_policy_t *s_heard_policy;

static void
s_setup (void)
{
    service_fixture_start ("policywatch");
    s_svc = service_fixture.svc;
    snprintf (s_path, sizeof s_path, "%s/policy.yaml", service_fixture.dir);
    s_heard_loaded = s_heard_refused = 0;
    s_heard_policy = NULL;
}

static void
s_teardown (void)
{
    const char *files [] = { s_path, NULL };
    service_fixture_stop (files);
}

TestSuite (sl_policywatch, .init = s_setup, .fini = s_teardown);

static void
s_write (const char *text)
{
    service_fixture_write (s_path, text);
}



static void
s_describe (sl_policy_t *policy, sl_buf_t *out)
{
    sl_buf_printf (out, "%d rules", sl_policy_rule_count (policy));
}

static void
s_on_reload (void *arg, sl_policy_t *policy, bool loaded)
{
    cr_expect_eq (arg, (void *) &s_heard_policy);
    if (loaded)
        s_heard_loaded++;
    else
        s_heard_refused++;
    s_heard_policy = policy;
}

static sl_policywatch_t *
s_watch (int64_t watch_ms)
{
    sl_policywatch_t *w = sl_policywatch_new (s_svc, s_path, watch_ms, s_describe);
    cr_assert_not_null (w);
    sl_policywatch_on_reload (w, s_on_reload, &s_heard_policy);
    return w;
}

Test (sl_policywatch, loads_at_start_and_says_so)
{
    s_write (s_policy_a);
    int64_t before = zclock_time ();
    sl_policywatch_t *w = s_watch (0);
    sl_policy_t *p = sl_policywatch_policy (w);
    cr_expect_str_eq (sl_policy_rule_id (p, 0), "a");
    cr_expect_str_eq (sl_policy_name (p), s_path);
    cr_expect (sl_policywatch_has_file (w));
    cr_expect_geq (sl_policywatch_loaded_ms (w), before);
    cr_expect_eq (sl_policywatch_failures (w), 0);
    cr_expect_null (sl_policywatch_last_error (w));
    char want [256];
    snprintf (want, sizeof want, "%s: 1 rules", s_path);
    cr_expect_eq (service_fixture_logged ("policy_loaded", want), 1, "the policy's name, then the process's words");
    cr_expect_eq (service_fixture_metric ("sluice_policy_reloads_total"), 0, "the first load is no reload");
    cr_expect_eq (service_fixture_metric ("sluice_policy_reload_failures_total"), 0);
    cr_expect_eq (s_heard_loaded + s_heard_refused, 0, "nor is it told as one");
    sl_policywatch_destroy (&w);
    cr_expect_null (w);
    sl_policywatch_destroy (&w);
}

Test (sl_policywatch, a_reload_runs_the_new_policy)
{
    s_write (s_policy_a);
    sl_policywatch_t *w = s_watch (0);
    s_write (s_policy_b);
    cr_expect_eq (sl_policywatch_reload (w), 0);
    sl_policy_t *p = sl_policywatch_policy (w);
    cr_expect_eq (sl_policy_rule_count (p), 2);
    cr_expect_eq (s_heard_loaded, 1);
    cr_expect_eq (s_heard_policy, p, "the callback is handed the policy now running");
    cr_expect_eq (service_fixture_metric ("sluice_policy_reloads_total"), 1);
    cr_expect_eq (service_fixture_metric ("sluice_policy_reload_failures_total"), 0);
    char want [256];
    snprintf (want, sizeof want, "%s: 2 rules", s_path);
    cr_expect_eq (service_fixture_logged ("policy_loaded", want), 1);
    sl_policywatch_destroy (&w);
}

Test (sl_policywatch, a_bad_file_keeps_the_running_policy_and_says_why)
{
    s_write (s_policy_a);
    sl_policywatch_t *w = s_watch (0);
    sl_policy_t *running = sl_policywatch_policy (w);
    s_write (s_broken);
    cr_expect_eq (sl_policywatch_reload (w), -1);
    cr_expect_eq (sl_policywatch_policy (w), running, "the old policy stays");
    cr_expect_eq (s_heard_refused, 1);
    cr_expect_eq (s_heard_policy, running, "the callback is handed the policy that stays");
    cr_expect_eq (sl_policywatch_failures (w), 1);
    cr_expect_eq (service_fixture_metric ("sluice_policy_reload_failures_total"), 1);
    cr_expect_eq (service_fixture_metric ("sluice_policy_reloads_total"), 0);
    char want [256];
    snprintf (want, sizeof want, "%s:3:13: action must be allow", s_path);
    cr_assert_not_null (sl_policywatch_last_error (w));
    cr_expect (strncmp (sl_policywatch_last_error (w), want, strlen (want)) == 0, "file:line:col: why, got %s",
               sl_policywatch_last_error (w));
    cr_expect_eq (service_fixture_logged ("policy_invalid", want), 1);
    cr_expect_eq (service_fixture_logged ("policy_kept", ""), 1);

    //  A good file again: it runs; the last refusal is still on record.
    s_write (s_policy_c);
    cr_expect_eq (sl_policywatch_reload (w), 0);
    cr_expect_neq (sl_policywatch_policy (w), running);
    cr_expect_eq (s_heard_loaded, 1);
    cr_expect_eq (sl_policywatch_failures (w), 1);
    cr_expect (strncmp (sl_policywatch_last_error (w), want, strlen (want)) == 0);
    sl_policywatch_destroy (&w);
}

Test (sl_policywatch, a_file_that_does_not_load_at_start_stops_the_process)
{
    s_write (s_broken);
    cr_expect_null (sl_policywatch_new (s_svc, s_path, 1000, s_describe));
    char want [256];
    snprintf (want, sizeof want, "%s:3:13:", s_path);
    cr_expect_eq (service_fixture_logged ("policy_invalid", want), 1);
    snprintf (want, sizeof want, "%s/none.yaml", service_fixture.dir);
    cr_expect_null (sl_policywatch_new (s_svc, want, 1000, s_describe));
    cr_expect_eq (service_fixture_logged ("policy_invalid", "cannot open"), 1);
    cr_expect_eq (service_fixture_logged ("policy_loaded", ""), 0);
}

Test (sl_policywatch, a_change_is_read_once)
{
    s_write (s_policy_a);
    sl_policywatch_t *w = s_watch (0);
    cr_expect (!sl_policywatch_check (w), "nothing changed");
    s_write (s_policy_b);
    cr_expect (sl_policywatch_check (w));
    cr_expect_eq (sl_policy_rule_count (sl_policywatch_policy (w)), 2);
    cr_expect (!sl_policywatch_check (w));
    s_write (s_broken);
    cr_expect (sl_policywatch_check (w));
    cr_expect_eq (sl_policywatch_failures (w), 1);
    cr_expect (!sl_policywatch_check (w), "a bad file is not read (and refused) again until it changes");
    cr_expect_eq (sl_policywatch_failures (w), 1);
    cr_expect_eq (service_fixture_logged ("reload", "policy file changed"), 2);
    cr_expect_eq (service_fixture_metric ("sluice_policy_reloads_total"), 1);
    sl_policywatch_destroy (&w);
}

Test (sl_policywatch, without_a_file_every_call_is_allowed)
{
    sl_policywatch_t *w = sl_policywatch_new (s_svc, "", 1000, NULL);
    cr_assert_not_null (w);
    cr_expect (!sl_policywatch_has_file (w));
    cr_expect_str_eq (sl_policy_id (sl_policywatch_policy (w)), SL_POLICY_ALLOW_ALL_ID);
    cr_expect_eq (service_fixture_logged ("policy_loaded", "(allow all): id=allow-all"), 1, "without words of its own: the id");
    cr_expect (!sl_policywatch_check (w), "nothing to watch");
    cr_expect_eq (sl_policywatch_reload (w), 0, "a reload without a file changes nothing");
    cr_expect_str_eq (sl_policy_id (sl_policywatch_policy (w)), SL_POLICY_ALLOW_ALL_ID);
    sl_policywatch_destroy (&w);
    w = sl_policywatch_new (s_svc, NULL, 0, NULL);
    cr_expect_not_null (w);
    sl_policywatch_destroy (&w);
}

//  --------------------------------------------------------------------------
//  Wired to the service: SIGHUP and the timer

typedef struct {
    uint64_t reloads;                   //  stop once sluice_policy_reloads_total is this
    int sighups;                        //  or once this many SIGHUPs were logged
} s_wait_t;

static bool
s_waited (void *arg)
{
    s_wait_t *wait = arg;
    return (wait->reloads && service_fixture_metric ("sluice_policy_reloads_total") >= wait->reloads)
        || (wait->sighups && service_fixture_logged ("reload", "SIGHUP received") >= wait->sighups);
}

static void
s_run_until (s_wait_t *wait)
{
    service_fixture_run_until (s_waited, wait);
}

Test (sl_policywatch, sighup_and_a_change_reload_through_the_loop)
{
    s_write (s_policy_a);
    sl_policywatch_t *w = s_watch (0);
    s_write (s_policy_b);
    raise (SIGHUP);                     //  blocked, read from the service's signalfd
    s_run_until (&(s_wait_t) { .reloads = 1 });
    cr_expect_eq (sl_policy_rule_count (sl_policywatch_policy (w)), 2, "SIGHUP read the file");
    cr_expect_eq (s_heard_loaded, 1);
    sl_policywatch_destroy (&w);

    w = s_watch (SERVICE_FIXTURE_POLL_MS);
    s_write (s_policy_c);
    s_run_until (&(s_wait_t) { .reloads = 2 });
    cr_expect_eq (sl_policy_rule_count (sl_policywatch_policy (w)), 0, "the timer saw the change");
    cr_expect_eq (service_fixture_logged ("reload", "policy file changed"), 1);

    //  Once the watch is gone, a SIGHUP reaches nothing of it.
    sl_policywatch_destroy (&w);
    int sighups = service_fixture_logged ("reload", "SIGHUP received");
    raise (SIGHUP);
    s_run_until (&(s_wait_t) { .sighups = sighups + 1 });
    cr_expect_eq (service_fixture_logged ("reload", "SIGHUP received"), sighups + 1);
    cr_expect_eq (service_fixture_metric ("sluice_policy_reloads_total"), 2);
}
