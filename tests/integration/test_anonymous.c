/*  Integration: a gateway without keys on an address other than loopback
    (the open door: whoever reaches it spends the providers' keys) refuses
    to start, saying why, unless told --allow-anonymous (or
    SLUICE_ALLOW_ANONYMOUS); with keys it starts. The gateway runs with
    --http-host 0.0.0.0 as the deployments give it, in a network namespace
    of its own (netns.h), so no port opens on the machine's network. Every
    wait is bounded. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/integration/harness.h"
#include "tests/integration/netns.h"

#define START_MS 15000
#define EXIT_MS 15000
#define EXIT_BAD_OPTION 2
#define LOG_MS 500                      //  a line of a process that exited, or of one already started

typedef struct {
    char dir [64];
    char keys [300];
    char http_port [8], inbox [64], next [64];
} s_env_t;

static void
s_env (s_env_t *e)
{
    char why [256];
    if (!netns_available (why, sizeof why))
        cr_skip_test ("no network namespace for the test (%s)", why);
    snprintf (e->dir, sizeof e->dir, "/tmp/sluice-anon-XXXXXX");
    cr_assert_not_null (mkdtemp (e->dir));
    cr_assert_eq (harness_keygen (e->dir, e->keys, sizeof e->keys), 0);
    //  Ports of the namespace's own loopback: nothing else listens there.
    snprintf (e->http_port, sizeof e->http_port, "%d", harness_free_port ());
    snprintf (e->inbox, sizeof e->inbox, "tcp://127.0.0.1:%d", harness_free_port ());
    snprintf (e->next, sizeof e->next, "tcp://127.0.0.1:%d", harness_free_port ());
}

static void
s_env_free (s_env_t *e)
{
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", e->dir);
    cr_expect_eq (system (cmd), 0);
}

//  The gateway as a deployment starts it, on 0.0.0.0, plus extra (or NULL).
static proc_t *
s_gateway (s_env_t *e, const char *label, const char *extra)
{
    const char *args [] = { "--http-host", "0.0.0.0", "--http-port", e->http_port, "--bind", e->inbox,
                            "--next", e->next, "--metrics-port", "0", "--keys", e->keys, extra, NULL };
    proc_t *p = netns_proc_start (e->dir, "gateway", label, args);
    cr_assert_not_null (p);
    return p;
}

Test (anonymous, a_gateway_without_keys_on_another_address_refuses_to_start, .timeout = 60)
{
    s_env_t e;
    s_env (&e);
    unsetenv ("SLUICE_ALLOW_ANONYMOUS");
    unsetenv ("SLUICE_CLIENT_KEYS");
    unsetenv ("SLUICE_KEYS_FILE");
    proc_t *p = s_gateway (&e, "refused", NULL);
    int rc = proc_wait_exit (p, EXIT_MS);
    if (rc == -1 || rc == 0)
        proc_dump (p);
    cr_expect (rc > 0 && rc != 126, "it exits, failing (%d)", rc);
    cr_expect (proc_wait_log (p, "\"anonymous_refused\"", NULL, NULL, 0, LOG_MS), "one line says why");
    cr_expect (proc_wait_log (p, "anonymous_refused", "--allow-anonymous", NULL, 0, LOG_MS), "and what to do");
    cr_expect_not (proc_wait_log (p, "\"listening\"", NULL, NULL, 0, LOG_MS), "it never listened");
    free (p);
    //  A switch that is neither yes nor no is a bad option, not a guess.
    p = s_gateway (&e, "typo", "--allow-anonymous=maybe");
    cr_expect_eq (proc_wait_exit (p, EXIT_MS), EXIT_BAD_OPTION);
    free (p);
    s_env_free (&e);
}

//  Started (its "started" line), and stopped cleanly.
static void
s_expect_starts (s_env_t *e, const char *label, const char *extra, bool anonymous)
{
    proc_t *p = s_gateway (e, label, extra);
    bool up = proc_wait_log (p, "\"started\"", NULL, NULL, 0, START_MS);
    if (!up)
        proc_dump (p);
    cr_expect (up, "%s: it starts", label);
    cr_expect_eq (proc_wait_log (p, "\"anonymous\"", NULL, NULL, 0, LOG_MS), anonymous,
                  "%s: the warning that anyone reaching it spends the keys", label);
    cr_expect_eq (proc_stop (p, EXIT_MS), 0, "%s stops cleanly", label);
    free (p);
}

Test (anonymous, it_starts_when_told_or_given_keys, .timeout = 120)
{
    s_env_t e;
    s_env (&e);
    unsetenv ("SLUICE_CLIENT_KEYS");
    unsetenv ("SLUICE_KEYS_FILE");
    s_expect_starts (&e, "flag", "--allow-anonymous", true);
    setenv ("SLUICE_ALLOW_ANONYMOUS", "yes", 1);
    s_expect_starts (&e, "variable", NULL, true);
    unsetenv ("SLUICE_ALLOW_ANONYMOUS");
    setenv ("SLUICE_CLIENT_KEYS", "sk-anon-test", 1);
    s_expect_starts (&e, "keys", NULL, false);
    unsetenv ("SLUICE_CLIENT_KEYS");
    s_env_free (&e);
}
