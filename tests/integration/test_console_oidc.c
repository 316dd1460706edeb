/*  Integration: people sign in to the audit console with a real OpenID
    provider (oidc-provider, tests/oidc, started by the browser script on
    127.0.0.1) in headless Chromium (tests/browser/oidc.mjs): a viewer sees
    no contents, in the pages or the API; a replayed redirect opens
    nothing; an auditor sees them; an approver of team eng approves eng's
    held call and is refused ops's; a logout kills the old cookie; with the
    provider down the console says so and its key still works.

    Skipped, with the reason, when node, Chromium, playwright-core or
    oidc-provider is not installed (make browser-deps oidc-deps).

    A provider that keeps the console waiting (a server the test starts,
    holding its answer until the test lets it go) holds up that sign-in
    only: the audit goes on recording streams and answering its console
    meanwhile, and the browser gets the refusal page once the provider
    has answered. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/integration/audit_proc.h"
#include "tests/integration/browser.h"
#include "tests/integration/harness.h"
#include "tests/keyfile_fixture.h"

#define ENG_KEY "sk-test-eng"
#define OPS_KEY "sk-test-ops"
#define CONSOLE_KEY "console-key-for-tests"
#define CLIENT_SECRET "console-client-secret"

static const char *s_policy =
    "rules:\n"
    "  - id: ask-shell\n"
    "    tool: run_shell\n"
    "    action: ask\n"
    "    ask:\n"
    "      timeout_ms: 120000\n"
    "      on_timeout: block\n"
    "      message: '{tool} wants {arguments}'\n";

Test (console_oidc, people_sign_in_see_what_their_role_allows_and_log_out, .timeout = 300)
{
    const char *missing = browser_missing ();
    if (missing)
        cr_skip_test ("%s", missing);
    if (access ("tests/oidc/node_modules/oidc-provider/package.json", R_OK) != 0)
        cr_skip_test ("oidc-provider is not installed in tests/oidc/node_modules (make oidc-deps)");
    char dir [] = "/tmp/sluice-oidc-XXXXXX", keys [1024] = "keys:\n", path [128];
    cr_assert_not_null (mkdtemp (dir));
    keyfile_entry (keys, sizeof keys, "bob-eng", ENG_KEY, "eng", "bob", NULL);
    keyfile_entry (keys, sizeof keys, "carol-ops", OPS_KEY, "ops", "carol", NULL);
    cr_assert_eq (harness_write (dir, "keys.yaml", keys), 0);
    snprintf (path, sizeof path, "%s/keys.yaml", dir);
    const char *gateway_args [] = { "--keys-file", path, NULL };
    stack_opts_t opts = { .policy_text = s_policy, .mock_delay_ms = 20, .audit_spool = "",
                          .gateway_args = gateway_args };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    //  The provider's port and the console's, known before either starts:
    //  each names the other.
    int op_port = harness_free_port (), console_port = harness_free_port ();
    cr_assert (op_port > 0 && console_port > 0 && op_port != console_port);
    char issuer [64], port [16], op_env [48], console_env [64];
    snprintf (issuer, sizeof issuer, "http://127.0.0.1:%d", op_port);
    snprintf (port, sizeof port, "%d", console_port);
    setenv ("SLUICE_OIDC_ISSUER", issuer, 1);
    setenv ("SLUICE_OIDC_CLIENT_ID", "sluice-console", 1);
    setenv ("SLUICE_OIDC_CLIENT_SECRET", CLIENT_SECRET, 1);
    setenv ("SLUICE_CONSOLE_KEYS", "ci-bot:admin:" CONSOLE_KEY, 1);
    const char *store [] = { "--data-dir", dir, NULL };
    const char *extra [] = { "--judge-approvals", s->approvals, "--console-port", port, NULL };
    audit_proc_t a;
    bool up = audit_start (s, "audit", store, extra, &a);
    unsetenv ("SLUICE_OIDC_ISSUER");
    unsetenv ("SLUICE_OIDC_CLIENT_ID");
    unsetenv ("SLUICE_CONSOLE_KEYS");
    cr_assert (up);
    cr_expect_eq (a.console_port, console_port);
    char console_url [80], gateway_url [80];
    snprintf (console_url, sizeof console_url, "SLUICE_CONSOLE_URL=http://127.0.0.1:%d/", a.console_port);
    snprintf (gateway_url, sizeof gateway_url, "SLUICE_GATEWAY_URL=http://127.0.0.1:%d", s->http_port);
    snprintf (op_env, sizeof op_env, "SLUICE_OIDC_PORT=%d", op_port);
    snprintf (console_env, sizeof console_env, "SLUICE_TEST_CONSOLE_KEY=%s", CONSOLE_KEY);
    const char *env [] = { console_url, gateway_url, op_env, console_env, "SLUICE_TEST_ENG_KEY=" ENG_KEY,
                           "SLUICE_TEST_OPS_KEY=" OPS_KEY, "SLUICE_OIDC_CLIENT_SECRET=" CLIENT_SECRET, NULL };
    cr_expect (browser_run ("oidc.mjs", env, s->dir), "the browser test passed (its output is above)");
    unsetenv ("SLUICE_OIDC_CLIENT_SECRET");
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}

//  --------------------------------------------------------------------------
//  A provider that answers only when the test lets it

#define SLOW_WAIT_MS 30000              //  the longest anything here waits

typedef struct {
    int listener;
    int release [2];                    //  a byte written: answer
    atomic_int asked;                   //  requests read
} slow_op_t;

static void *
s_slow_op (void *arg)
{
    slow_op_t *op = arg;
    struct pollfd pfd = { .fd = op->listener, .events = POLLIN };
    if (poll (&pfd, 1, SLOW_WAIT_MS) != 1)
        return NULL;
    int fd = accept (op->listener, NULL, NULL);
    if (fd < 0)
        return NULL;
    char head [4096] = "";
    size_t got = 0;
    while (got < sizeof head - 1 && !strstr (head, "\r\n\r\n")) {
        pfd = (struct pollfd) { .fd = fd, .events = POLLIN };
        ssize_t n = poll (&pfd, 1, SLOW_WAIT_MS) == 1 ? read (fd, head + got, sizeof head - 1 - got) : -1;
        if (n <= 0)
            break;
        got += (size_t) n;
        head [got] = 0;
    }
    atomic_fetch_add (&op->asked, 1);
    pfd = (struct pollfd) { .fd = op->release [0], .events = POLLIN };
    if (poll (&pfd, 1, SLOW_WAIT_MS) == 1) {
        const char *answer = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        if (write (fd, answer, strlen (answer)) < 0)
            perror ("slow provider");
    }
    close (fd);
    return NULL;
}

//  Bytes waiting on fd, without waiting (0: none yet).
static bool
s_readable (int fd, int timeout_ms)
{
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    return poll (&pfd, 1, timeout_ms) == 1;
}

Test (console_oidc, a_slow_provider_holds_up_its_sign_in_not_the_audit, .timeout = 180)
{
    char dir [] = "/tmp/sluice-oidc-slow-XXXXXX", keys [1024] = "keys:\n", path [128];
    cr_assert_not_null (mkdtemp (dir));
    keyfile_entry (keys, sizeof keys, "bob-eng", ENG_KEY, "eng", "bob", NULL);
    cr_assert_eq (harness_write (dir, "keys.yaml", keys), 0);
    snprintf (path, sizeof path, "%s/keys.yaml", dir);
    const char *gateway_args [] = { "--keys-file", path, NULL };
    stack_opts_t opts = { .policy_text = s_policy, .mock_delay_ms = 1, .audit_spool = "",
                          .gateway_args = gateway_args };
    sluice_stack_t *s = stack_start (&opts);
    cr_assert_not_null (s);
    //  The provider: listening, answering nothing until released.
    slow_op_t op = { .listener = socket (AF_INET, SOCK_STREAM, 0) };
    cr_assert (op.listener >= 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    socklen_t len = sizeof addr;
    cr_assert_eq (bind (op.listener, (struct sockaddr *) &addr, sizeof addr), 0);
    cr_assert_eq (listen (op.listener, 4), 0);
    cr_assert_eq (getsockname (op.listener, (struct sockaddr *) &addr, &len), 0);
    cr_assert_eq (pipe (op.release), 0);
    pthread_t thread;
    cr_assert_eq (pthread_create (&thread, NULL, s_slow_op, &op), 0);
    char issuer [64];
    snprintf (issuer, sizeof issuer, "http://127.0.0.1:%d", ntohs (addr.sin_port));
    setenv ("SLUICE_OIDC_ISSUER", issuer, 1);
    setenv ("SLUICE_OIDC_CLIENT_ID", "sluice-console", 1);
    setenv ("SLUICE_CONSOLE_KEYS", "ci-bot:admin:" CONSOLE_KEY, 1);
    const char *store [] = { "--data-dir", dir, NULL };
    audit_proc_t a;
    bool up = audit_start (s, "audit", store, NULL, &a);
    unsetenv ("SLUICE_OIDC_ISSUER");
    unsetenv ("SLUICE_OIDC_CLIENT_ID");
    unsetenv ("SLUICE_CONSOLE_KEYS");
    cr_assert (up);

    //  A browser begins to sign in: the console asks the provider, which
    //  keeps it waiting.
    int browser = socket (AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in console = { .sin_family = AF_INET, .sin_addr.s_addr = htonl (INADDR_LOOPBACK),
                                   .sin_port = htons ((uint16_t) a.console_port) };
    cr_assert_eq (connect (browser, (struct sockaddr *) &console, sizeof console), 0);
    const char *login = "GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    cr_assert_eq (write (browser, login, strlen (login)), (ssize_t) strlen (login));
    for (int i = 0; i < SLOW_WAIT_MS / 50 && atomic_load (&op.asked) == 0; i++)
        usleep (50000);
    cr_assert_eq (atomic_load (&op.asked), 1, "the console asked the provider");

    //  Meanwhile the audit records a stream and answers its console.
    const char *auth [] = { "Authorization: Bearer " ENG_KEY, NULL };
    sl_buf_t out = { 0 };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions",
                                "{\"model\":\"mock-text\",\"messages\":"
                                "[{\"role\":\"user\",\"content\":\"hello\"}]}", auth, &out, SLOW_WAIT_MS), 200);
    const char *console_auth [] = { "Authorization: Bearer " CONSOLE_KEY, NULL };
    size_t recorded = 0;
    for (int i = 0; i < SLOW_WAIT_MS / 100 && recorded == 0; i++) {
        sl_buf_reset (&out);
        if (http_request (a.console_port, "GET", "/api/streams", NULL, console_auth, &out, SLOW_WAIT_MS) == 200) {
            json_t *j = json_loadb (out.data ? out.data : "", out.len, 0, NULL);
            recorded = json_array_size (json_object_get (j, "streams"));
            json_decref (j);
        }
        if (recorded == 0)
            usleep (100000);
    }
    cr_expect_eq (recorded, 1, "the stream is recorded while the sign-in waits");
    cr_expect_not (s_readable (browser, 0), "the sign-in still waits for the provider");
    cr_expect_eq (http_request (a.console_port, "GET", "/api/meta", NULL, console_auth, &out, SLOW_WAIT_MS), 200);
    cr_expect_eq (http_request (a.console_port, "GET", "/healthz", NULL, NULL, &out, SLOW_WAIT_MS), 200);
    sl_buf_free (&out);
    cr_expect_not (s_readable (browser, 0), "the sign-in still waits for the provider");
    cr_expect_eq (atomic_load (&op.asked), 1);

    //  The provider answers (503): the browser gets the refusal page.
    cr_assert_eq (write (op.release [1], "x", 1), 1);
    char answer [2048] = "";
    size_t got = 0;
    while (got < sizeof answer - 1 && s_readable (browser, SLOW_WAIT_MS)) {
        ssize_t n = read (browser, answer + got, sizeof answer - 1 - got);
        if (n <= 0)
            break;
        got += (size_t) n;
        answer [got] = 0;
    }
    cr_expect_not_null (strstr (answer, "HTTP/1.1 302"), "%s", answer);
    cr_expect_not_null (strstr (answer, "Location: /?signin_error="), "%s", answer);
    cr_expect_not_null (strstr (answer, "503"), "the refusal says what the provider answered: %s", answer);
    close (browser);
    pthread_join (thread, NULL);
    close (op.listener);
    close (op.release [0]);
    close (op.release [1]);
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    cr_expect_eq (stack_stop (s), 0);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}
