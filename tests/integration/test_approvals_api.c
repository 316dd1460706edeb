/*  Integration: the approvals APIs around a judge - the gateway's
    /v1/approvals and what sluice-audit does with approvals - through the
    real programs on loopback, with the judges' control socket played by
    the test (fake_judge.h):

    - without --judge-approvals the API answers 503;
    - with a keys file: no key or a wrong one 401, a key that is no
      approver 403 (the judge says so), an unknown id 404, a malformed
      body 400 naming the field, every refusal counted by status; an
      approver key lists and decides, and the judge reads who it is;
    - without keys, a caller on this machine decides as "loopback";
    - a streaming client that leaves makes the gateway tell the judges
      (cancel, with its stream id);

    and end to end, with the real judge holding a call (action ask):
    - approved through the gateway's endpoint the call runs, denied it
      becomes the notice; sluice-audit stores both approvals with their
      decisions, decides one from the console's API, and posts every
      state to its webhook, signed, which a receiver in the test checks;
    - with two judges the gateway finds the one holding the call;
    - a caller with an approver key neither lists nor decides its own
      held call (403, and why), another approver key does; a rule with
      ask: allow_self lets it, and the audit records the approval as
      self-approved.

    Every wait is bounded. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "tests/integration/audit_proc.h"
#include "tests/integration/cluster.h"
#include "tests/integration/fake_judge.h"
#include "tests/integration/harness.h"
#include "tests/integration/load.h"
#include "tests/keyfile_fixture.h"

#define TIMEOUT_MS 15000
#define RUN_LIMIT_MS 30000
#define HOOK_SECRET "hook-s3cret"
#define HOOK_MAX 16                     //  posts the receiver keeps
#define APPROVER "sk-test-approver"
#define PLAIN "sk-test-plain"
#define DECIDE "{\"decision\":\"approve\",\"comment\":\"looks fine\"}"
#define SLOW_CHAT "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"

static long
s_call (int port, const char *method, const char *path, const char *body, const char *key, sl_buf_t *out)
{
    char auth [96];
    snprintf (auth, sizeof auth, "Authorization: Bearer %s", key ? key : "");
    const char *headers [] = { "Content-Type: application/json", key ? auth : NULL, NULL };
    sl_buf_reset (out);
    return http_request (port, method, path, body, headers, out, TIMEOUT_MS);
}

static double
s_refused (sluice_stack_t *s, int status)
{
    char name [96];
    snprintf (name, sizeof name, "sluice_approvals_refused_total{status=\"%d\"}", status);
    return metric_value (atoi (s->metrics [5]), name);
}

Test (approvals_api, without_judges_the_api_answers_503)
{
    sluice_stack_t *s = stack_start (&(stack_opts_t) { 0 });
    cr_assert_not_null (s);
    sl_buf_t out = { 0 };
    cr_expect_eq (s_call (s->http_port, "GET", "/v1/approvals", NULL, NULL, &out), 503);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "approvals are not configured"), "%s", sl_buf_cstr (&out));
    cr_expect_eq (s_call (s->http_port, "POST", "/v1/approvals/" FAKE_JUDGE_ID, DECIDE, NULL, &out), 503);
    cr_expect_eq (s_refused (s, 503), 2);
    sl_buf_free (&out);
    cr_expect_eq (stack_stop (s), 0);
}

Test (approvals_api, the_gateway_api_checks_who_asks_and_what)
{
    char dir [] = "/tmp/sluice-approvals-XXXXXX", keys [2048] = "keys:\n", path [128], judges [64];
    cr_assert_not_null (mkdtemp (dir));
    keyfile_entry (keys, sizeof keys, "alice-approver", APPROVER, "eng", "alice", "    approver: true\n");
    keyfile_entry (keys, sizeof keys, "bob-plain", PLAIN, "eng", "bob", NULL);
    cr_assert_eq (harness_write (dir, "keys.yaml", keys), 0);
    snprintf (path, sizeof path, "%s/keys.yaml", dir);
    int judge_port = harness_free_port ();
    snprintf (judges, sizeof judges, "tcp://127.0.0.1:%d", judge_port);
    const char *gateway_args [] = { "--keys-file", path, "--judge-approvals", judges, NULL };
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .gateway_args = gateway_args, .mock_delay_ms = 1000 });
    cr_assert_not_null (s);
    //  The judge comes up after the gateway: its link connects when it can.
    fake_judge_t *judge = fake_judge_start (s->keys, judge_port);
    cr_assert_not_null (judge);
    sl_buf_t out = { 0 };
    const char *one = "/v1/approvals/" FAKE_JUDGE_ID;
    //  Who: no key, a wrong key.
    cr_expect_eq (s_call (s->http_port, "GET", "/v1/approvals", NULL, NULL, &out), 401);
    cr_expect_eq (s_call (s->http_port, "GET", "/v1/approvals", NULL, "sk-wrong", &out), 401);
    cr_expect_eq (s_call (s->http_port, "POST", one, DECIDE, "sk-wrong", &out), 401);
    //  An approver lists what it may decide; the judge reads who asks.
    cr_expect_eq (s_call (s->http_port, "GET", "/v1/approvals", NULL, APPROVER, &out), 200, "%s", sl_buf_cstr (&out));
    json_t *list = json_loads (sl_buf_cstr (&out), 0, NULL);
    json_t *first = json_array_get (json_object_get (list, "approvals"), 0);
    cr_expect_str_eq (json_string_value (json_object_get (first, "id")), FAKE_JUDGE_ID, "%s", sl_buf_cstr (&out));
    cr_expect_str_eq (json_string_value (json_object_get (first, "tool")), "shell");
    cr_expect_not_null (json_object_get (first, "arguments"));
    cr_expect_not_null (json_object_get (first, "stream"));
    cr_expect_not_null (json_object_get (first, "identity"));
    json_decref (list);
    fake_judge_seen_t seen;
    fake_judge_seen (judge, &seen);
    cr_expect_str_eq (seen.last_by, "{\"approver\":true,\"console\":false,\"key_id\":\"alice-approver\","
                                    "\"loopback\":false,\"team\":\"eng\",\"user\":\"alice\"}");
    //  What: a malformed body, an unknown id, a key that is no approver.
    cr_expect_eq (s_call (s->http_port, "POST", one, "{\"decision\":\"yes\"}", APPROVER, &out), 400);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "decision"), "names the field: %s", sl_buf_cstr (&out));
    cr_expect_eq (s_call (s->http_port, "POST", one, "{\"decision\":\"approve\",\"remember_minutes\":\"5\"}",
                          APPROVER, &out), 400);
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "remember_minutes"), "%s", sl_buf_cstr (&out));
    cr_expect_eq (s_call (s->http_port, "POST", "/v1/approvals/ffffffffffffffffffffffffffffffff", DECIDE, APPROVER,
                          &out), 404);
    cr_expect_eq (s_call (s->http_port, "POST", "/v1/approvals/not-an-id", DECIDE, APPROVER, &out), 404);
    cr_expect_eq (s_call (s->http_port, "POST", one, DECIDE, PLAIN, &out), 403, "%s", sl_buf_cstr (&out));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "not an approver"), "the judge's reason: %s", sl_buf_cstr (&out));
    cr_expect_eq (s_call (s->http_port, "PUT", one, DECIDE, APPROVER, &out), 405);
    //  The approver decides; the judge gets the decision as sent.
    cr_expect_eq (s_call (s->http_port, "POST", one, DECIDE, APPROVER, &out), 200, "%s", sl_buf_cstr (&out));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "\"state\":\"approved\""), "%s", sl_buf_cstr (&out));
    fake_judge_seen (judge, &seen);
    cr_expect_not_null (strstr (seen.last_decide, "\"comment\":\"looks fine\""), "%s", seen.last_decide);
    //  Every refusal is counted by its status.
    cr_expect_eq (s_refused (s, 401), 3);
    cr_expect_eq (s_refused (s, 400), 2);
    cr_expect_eq (s_refused (s, 404), 2);
    cr_expect_eq (s_refused (s, 403), 1);
    //  A streaming client that leaves: the judges hear of its stream.
    const char *auth [] = { "Authorization: Bearer " PLAIN, NULL };
    sl_buf_reset (&out);
    http_request (s->http_port, "POST", "/v1/chat/completions", SLOW_CHAT, auth, &out, 400);
    cr_expect (fake_judge_wait_cancels (judge, 1, TIMEOUT_MS), "a cancel reached the judge");
    fake_judge_seen (judge, &seen);
    json_t *cancel = json_loads (seen.last_cancel, 0, NULL);
    const char *stream = json_string_value (json_object_get (cancel, "stream"));
    cr_expect (stream && strlen (stream) == 32, "the stream's id: %s", seen.last_cancel);
    json_decref (cancel);
    sl_buf_free (&out);
    fake_judge_stop (&judge);
    cr_expect_eq (stack_stop (s), 0);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}

Test (approvals_api, without_keys_a_caller_on_this_machine_decides_as_loopback)
{
    char judges [64];
    int judge_port = harness_free_port ();
    snprintf (judges, sizeof judges, "tcp://127.0.0.1:%d", judge_port);
    const char *gateway_args [] = { "--judge-approvals", judges, NULL };
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .gateway_args = gateway_args });
    cr_assert_not_null (s);
    fake_judge_t *judge = fake_judge_start (s->keys, judge_port);
    cr_assert_not_null (judge);
    sl_buf_t out = { 0 };
    cr_expect_eq (s_call (s->http_port, "POST", "/v1/approvals/" FAKE_JUDGE_ID, "{\"decision\":\"deny\"}", NULL, &out),
                  200, "%s", sl_buf_cstr (&out));
    cr_expect_not_null (strstr (sl_buf_cstr (&out), "\"state\":\"denied\""), "%s", sl_buf_cstr (&out));
    fake_judge_seen_t seen;
    fake_judge_seen (judge, &seen);
    cr_expect_str_eq (seen.last_by, "{\"approver\":false,\"console\":false,\"loopback\":true}");
    sl_buf_free (&out);
    fake_judge_stop (&judge);
    cr_expect_eq (stack_stop (s), 0);
}

//  --------------------------------------------------------------------------
//  End to end: the real judge holds the call

static const char *s_ask_policy =
    "rules:\n"
    "  - id: ask-shell\n"
    "    tool: run_shell\n"
    "    action: ask\n"
    "    message: 'sluice: {tool} was not approved ({reason})'\n"
    "    ask:\n"
    "      timeout_ms: 60000\n"
    "      on_timeout: block\n"
    "      message: '{user} wants to run {arguments}'\n";

//  The approvals webhook's receiver: a listening socket in a thread that
//  takes each POST, checks its signature as docs/approvals.md tells a
//  receiver to, and answers 200.
typedef struct {
    int fd;
    int port;                           //  where it listens (picked by the kernel)
    pthread_t thread;
    pthread_mutex_t lock;
    volatile bool stop;
    int posts, good;                    //  posts taken, with a good signature
    char states [HOOK_MAX][16];         //  the state each one told
} s_hook_t;

static bool
s_hook_check (const char *timestamp, const char *signature, const char *body, size_t len)
{
    if (!timestamp || !signature || strncmp (signature, "sha256=", 7) != 0)
        return false;
    long long ts = atoll (timestamp);
    if (llabs ((long long) (zclock_time () / 1000) - ts) > 300)
        return false;                   //  not recent: a replay
    unsigned char want [crypto_auth_hmacsha256_BYTES], got [crypto_auth_hmacsha256_BYTES];
    size_t n = 0;
    if (sodium_hex2bin (got, sizeof got, signature + 7, 64, NULL, &n, NULL) || n != sizeof got)
        return false;
    crypto_auth_hmacsha256_state st;
    crypto_auth_hmacsha256_init (&st, (const unsigned char *) HOOK_SECRET, strlen (HOOK_SECRET));
    crypto_auth_hmacsha256_update (&st, (const unsigned char *) timestamp, strlen (timestamp));
    crypto_auth_hmacsha256_update (&st, (const unsigned char *) ".", 1);
    crypto_auth_hmacsha256_update (&st, (const unsigned char *) body, len);
    crypto_auth_hmacsha256_final (&st, want);
    return sodium_memcmp (want, got, sizeof want) == 0;
}

static const char *
s_header (char *head, const char *name, char *out, size_t size)
{
    char *at = strcasestr (head, name);
    if (!at)
        return NULL;
    at += strlen (name);
    while (*at == ' ')
        at++;
    size_t n = strcspn (at, "\r\n");
    snprintf (out, size, "%.*s", (int) (n < size ? n : size - 1), at);
    return out;
}

static void *
s_hook_run (void *arg)
{
    s_hook_t *h = arg;
    while (!h->stop) {
        struct timeval tv = { 0, 100000 };
        fd_set set;
        FD_ZERO (&set);
        FD_SET (h->fd, &set);
        if (select (h->fd + 1, &set, NULL, NULL, &tv) <= 0)
            continue;
        int c = accept (h->fd, NULL, NULL);
        if (c < 0)
            continue;
        struct timeval rtv = { 5, 0 };
        setsockopt (c, SOL_SOCKET, SO_RCVTIMEO, &rtv, sizeof rtv);
        char buf [65536];
        size_t got = 0;
        char *end = NULL;
        long length = -1;
        while (got < sizeof buf - 1) {
            ssize_t r = recv (c, buf + got, sizeof buf - 1 - got, 0);
            if (r <= 0)
                break;
            got += (size_t) r;
            buf [got] = 0;
            end = strstr (buf, "\r\n\r\n");
            char value [32];
            if (end && length < 0 && s_header (buf, "Content-Length:", value, sizeof value))
                length = atol (value);
            if (end && length >= 0 && got >= (size_t) (end + 4 - buf) + (size_t) length)
                break;
        }
        if (end && length >= 0) {
            *end = 0;
            char ts [32], sig [128];
            const char *body = end + 4;
            bool good = s_hook_check (s_header (buf, "X-Sluice-Timestamp:", ts, sizeof ts),
                                      s_header (buf, "X-Sluice-Signature:", sig, sizeof sig), body, (size_t) length);
            json_t *o = json_loadb (body, (size_t) length, 0, NULL);
            pthread_mutex_lock (&h->lock);
            if (h->posts < HOOK_MAX)
                snprintf (h->states [h->posts], sizeof h->states [0], "%s",
                          json_string_value (json_object_get (o, "state")) ?: "");
            h->posts++;
            h->good += good;
            pthread_mutex_unlock (&h->lock);
            json_decref (o);
        }
        const char *ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        ssize_t sent = send (c, ok, strlen (ok), MSG_NOSIGNAL);
        (void) sent;
        close (c);
    }
    return NULL;
}

static void
s_hook_start (s_hook_t *h)
{
    memset (h, 0, sizeof *h);
    h->fd = socket (AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt (h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = 0 };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    cr_assert_eq (bind (h->fd, (struct sockaddr *) &addr, sizeof addr), 0, "the receiver's port");
    socklen_t len = sizeof addr;
    cr_assert_eq (getsockname (h->fd, (struct sockaddr *) &addr, &len), 0);
    h->port = ntohs (addr.sin_port);
    cr_assert_eq (listen (h->fd, 16), 0);
    pthread_mutex_init (&h->lock, NULL);
    pthread_create (&h->thread, NULL, s_hook_run, h);
}

static void
s_hook_stop (s_hook_t *h)
{
    h->stop = true;
    pthread_join (h->thread, NULL);
    close (h->fd);
    pthread_mutex_destroy (&h->lock);
}

static int
s_hook_count (s_hook_t *h, const char *state)
{
    pthread_mutex_lock (&h->lock);
    int n = 0;
    for (int i = 0; i < h->posts && i < HOOK_MAX; i++)
        n += strcmp (h->states [i], state) == 0;
    pthread_mutex_unlock (&h->lock);
    return n;
}

//  The gateway's pending approvals (a new reference), waiting for want.
static json_t *
s_gateway_pending (int port, size_t want)
{
    int64_t deadline = zclock_mono () + TIMEOUT_MS;
    json_t *list = NULL;
    sl_buf_t out = { 0 };
    while (zclock_mono () < deadline) {
        json_decref (list);
        list = NULL;
        if (s_call (port, "GET", "/v1/approvals", NULL, NULL, &out) == 200)
            list = json_loads (sl_buf_cstr (&out), 0, NULL);
        if (json_array_size (json_object_get (list, "approvals")) >= want)
            break;
        zclock_sleep (50);
    }
    sl_buf_free (&out);
    cr_assert_geq (json_array_size (json_object_get (list, "approvals")), want, "%zu approvals pending", want);
    return list;
}

typedef struct {
    int port;                           //  the gateway's
    const audit_proc_t *audit;          //  NULL: every decision through the gateway
    char judges [2][64];                //  the judge holding each call decided
} s_decider_t;

static const char *
s_id (json_t *list, size_t i)
{
    return json_string_value (json_object_get (json_array_get (json_object_get (list, "approvals"), i), "id"));
}

//  Two calls wait: the first approved through the gateway; the second
//  denied through the console (the audit) when there is one, else the
//  gateway.
static void
s_decide_both (void *arg, int round)
{
    (void) round;
    s_decider_t *d = arg;
    json_t *list = s_gateway_pending (d->port, 2);
    for (size_t i = 0; i < 2; i++)
        snprintf (d->judges [i], sizeof d->judges [i], "%s", json_string_value (json_object_get (
                  json_array_get (json_object_get (list, "approvals"), i), "judge")) ?: "");
    sl_buf_t out = { 0 };
    char path [96];
    snprintf (path, sizeof path, "/v1/approvals/%s", s_id (list, 0));
    cr_expect_eq (s_call (d->port, "POST", path, "{\"decision\":\"approve\",\"comment\":\"go\"}", NULL, &out), 200,
                  "%s", sl_buf_cstr (&out));
    cr_expect_eq (s_call (d->port, "POST", path, "{\"decision\":\"deny\"}", NULL, &out), 409, "once: %s",
                  sl_buf_cstr (&out));
    if (d->audit) {
        snprintf (path, sizeof path, "/api/approvals/%s", s_id (list, 1));
        cr_expect_eq (s_call (d->audit->console_port, "POST", path, "{\"decision\":\"deny\",\"comment\":\"no\"}",
                              NULL, &out), 200, "from the console: %s", sl_buf_cstr (&out));
        cr_expect_not_null (strstr (sl_buf_cstr (&out), "\"approver\":\"console\""), "%s", sl_buf_cstr (&out));
    }
    else {
        snprintf (path, sizeof path, "/v1/approvals/%s", s_id (list, 1));
        cr_expect_eq (s_call (d->port, "POST", path, "{\"decision\":\"deny\",\"comment\":\"no\"}", NULL, &out), 200,
                      "%s", sl_buf_cstr (&out));
    }
    sl_buf_free (&out);
    json_decref (list);
}

static bool
s_has (const load_client_t *c, const char *needle)
{
    return strstr (sl_buf_cstr ((sl_buf_t *) &c->body), needle) != NULL;
}

static void
s_expect_one_ran_one_denied (load_client_t *clients)
{
    int ran = 0, noticed = 0;
    for (int i = 0; i < 2; i++) {
        cr_expect (load_complete (&clients [i]), "stream %d complete: %s", i, sl_buf_cstr (&clients [i].body));
        ran += s_has (&clients [i], "\"name\":\"run_shell\"");
        noticed += s_has (&clients [i], "was not approved");
    }
    cr_expect_eq (ran, 1, "the approved call ran");
    cr_expect_eq (noticed, 1, "the denied call became the notice");
}

Test (approvals_api, ask_through_the_gateway_and_the_console_stored_and_posted_signed)
{
    cr_assert_geq (sodium_init (), 0);
    s_hook_t hook;
    s_hook_start (&hook);
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .policy_text = s_ask_policy, .gateway_approvals = true,
                                                       .audit_spool = "" });
    cr_assert_not_null (s);
    char data [300], hook_url [64];
    snprintf (data, sizeof data, "%s/audit-data", s->dir);
    snprintf (hook_url, sizeof hook_url, "http://127.0.0.1:%d/hook", hook.port);
    const char *store [] = { "--data-dir", data, NULL };
    const char *extra [] = { "--judge-approvals", s->approvals, "--approvals-webhook", hook_url, NULL };
    setenv ("SLUICE_APPROVALS_WEBHOOK_SECRET", HOOK_SECRET, 1);
    audit_proc_t audit;
    cr_assert (audit_start (s, "audit", store, extra, &audit));
    unsetenv ("SLUICE_APPROVALS_WEBHOOK_SECRET");
    load_client_t *clients = load_clients (2, "mock-tools", 4);
    s_decider_t decider = { s->http_port, &audit, { "", "" } };
    load_action_t action = { .at = 200, .fn = s_decide_both, .arg = &decider };
    load_run (s->http_port, clients, 2, &action, 1, RUN_LIMIT_MS);
    s_expect_one_ran_one_denied (clients);
    load_clients_free (clients, 2);
    //  The audit keeps both, decided, with who decided.
    json_t *decided = NULL;
    int64_t deadline = zclock_mono () + TIMEOUT_MS;
    while (zclock_mono () < deadline) {
        json_decref (decided);
        decided = audit_get (&audit, "/api/approvals?state=decided");
        if (json_array_size (json_object_get (decided, "approvals")) >= 2)
            break;
        zclock_sleep (100);
    }
    json_t *list = json_object_get (decided, "approvals");
    cr_expect_eq (json_array_size (list), 2, "both decided in the store");
    int approved = 0, denied = 0;
    for (size_t i = 0; i < json_array_size (list); i++) {
        json_t *a = json_array_get (list, i);
        const char *state = json_string_value (json_object_get (a, "state"));
        approved += state && strcmp (state, "approved") == 0;
        denied += state && strcmp (state, "denied") == 0
               && strcmp (json_string_value (json_object_get (a, "approver")) ?: "", "console") == 0;
        cr_expect_str_eq (json_string_value (json_object_get (a, "tool")), "run_shell");
    }
    cr_expect_eq (approved, 1);
    cr_expect_eq (denied, 1, "denied from the console");
    json_decref (decided);
    json_t *pending = audit_get (&audit, "/api/approvals?state=pending");
    cr_expect_eq (json_array_size (json_object_get (pending, "approvals")), 0);
    json_decref (pending);
    //  Every state went to the webhook, signed.
    deadline = zclock_mono () + TIMEOUT_MS;
    while (zclock_mono () < deadline && hook.posts < 4)
        zclock_sleep (50);
    cr_expect_eq (hook.posts, 4, "two pending, two decided");
    cr_expect_eq (hook.good, hook.posts, "every post's signature checks");
    cr_expect_eq (s_hook_count (&hook, "pending"), 2);
    cr_expect_eq (s_hook_count (&hook, "approved"), 1);
    cr_expect_eq (s_hook_count (&hook, "denied"), 1);
    cr_expect_eq (proc_stop (audit.proc, 10000), 0, "sluice-audit stops cleanly");
    free (audit.proc);
    cr_expect_eq (stack_stop (s), 0);
    s_hook_stop (&hook);
}

Test (approvals_api, with_two_judges_the_gateway_finds_the_one_holding_the_call)
{
    char dir [] = "/tmp/sluice-approvals-XXXXXX", path [128];
    cr_assert_not_null (mkdtemp (dir));
    cr_assert_eq (harness_write (dir, "policy.yaml", s_ask_policy), 0);
    snprintf (path, sizeof path, "%s/policy.yaml", dir);
    cluster_opts_t opts = { .count = { 1, 1, 2, 1 }, .mock_delay_ms = 5, .policy = path, .gateways = 1,
                            .gateway_approvals = true };
    cluster_t *c = cluster_start (&opts);
    cr_assert_not_null (c);
    //  Streams spread over the judges: enough calls that both hold some.
    load_client_t *clients = load_clients (2, "mock-tools", 4);
    s_decider_t decider = { c->http_port [0], NULL, { "", "" } };
    load_action_t action = { .at = 200, .fn = s_decide_both, .arg = &decider };
    load_run (c->http_port [0], clients, 2, &action, 1, RUN_LIMIT_MS);
    s_expect_one_ran_one_denied (clients);
    //  The aggregator pins each new stream to the judge with the most
    //  credit, so the two calls are held by the two judges: whichever the
    //  gateway asks first, one decision went to a judge other than it.
    cr_expect_str_neq (decider.judges [0], decider.judges [1], "held by %s and %s", decider.judges [0],
                       decider.judges [1]);
    load_clients_free (clients, 2);
    cr_expect_eq (cluster_stop (c), 0);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}

//  --------------------------------------------------------------------------
//  Separation of duties: the caller whose call waits is not its approver

#define AGENT "sk-test-agent-bob"       //  bob's agent: an approver key, as an agent may hold
#define REVIEWER "sk-test-carol"        //  another approver

static const char *s_self_policy =
    "rules:\n"
    "  - id: ask-shell\n"
    "    tool: run_shell\n"
    "    action: ask\n"
    "    message: 'sluice: {tool} was not approved ({reason})'\n"
    "    ask:\n"
    "      timeout_ms: 60000\n"
    "      remember_max_minutes: 60\n"
    "%s";

//  A stack whose gateway checks keys: bob's agent and carol, both approvers.
static sluice_stack_t *
s_self_stack (const char *ask_extra, char *dir, bool audit)
{
    char keys [2048] = "keys:\n", path [160], policy [1024];
    cr_assert_not_null (mkdtemp (dir));
    keyfile_entry (keys, sizeof keys, "bob-agent", AGENT, "eng", "bob", "    approver: true\n");
    keyfile_entry (keys, sizeof keys, "carol", REVIEWER, "platform", "carol", "    approver: true\n");
    cr_assert_eq (harness_write (dir, "keys.yaml", keys), 0);
    snprintf (path, sizeof path, "%s/keys.yaml", dir);
    snprintf (policy, sizeof policy, s_self_policy, ask_extra);
    static char keys_path [160];
    snprintf (keys_path, sizeof keys_path, "%s", path);
    static const char *gateway_args [] = { "--keys-file", keys_path, NULL };
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .policy_text = policy, .gateway_approvals = true,
                                                       .gateway_args = gateway_args,
                                                       .audit_spool = audit ? "" : NULL });
    cr_assert_not_null (s);
    return s;
}

//  One client of bob's agent asking for a tool call.
static load_client_t *
s_agent_client (void)
{
    load_client_t *clients = load_clients (1, "mock-tools", 4);
    clients [0].header = "Authorization: Bearer " AGENT;
    return clients;
}

//  The approvals key may decide, waiting until want are listed.
static json_t *
s_listed (int port, const char *key, size_t want)
{
    int64_t deadline = zclock_mono () + TIMEOUT_MS;
    json_t *list = NULL;
    sl_buf_t out = { 0 };
    while (zclock_mono () < deadline) {
        json_decref (list);
        list = NULL;
        if (s_call (port, "GET", "/v1/approvals", NULL, key, &out) == 200)
            list = json_loads (sl_buf_cstr (&out), 0, NULL);
        if (json_array_size (json_object_get (list, "approvals")) >= want)
            break;
        zclock_sleep (50);
    }
    sl_buf_free (&out);
    return list;
}

typedef struct {
    int port;
    int own_status, other_status;       //  bob's decision, carol's
    char own_why [4096];
    size_t own_listed;                  //  what bob's key listed while the call waited
} s_self_run_t;

//  The call waits: bob's key tries to approve it (for an hour), then carol
//  approves it.
static void
s_self_then_other (void *arg, int round)
{
    (void) round;
    s_self_run_t *run = arg;
    json_t *list = s_listed (run->port, REVIEWER, 1);
    cr_assert_eq (json_array_size (json_object_get (list, "approvals")), 1, "carol sees the held call");
    char path [96];
    snprintf (path, sizeof path, "/v1/approvals/%s", s_id (list, 0));
    json_t *own = s_listed (run->port, AGENT, 0);
    run->own_listed = json_array_size (json_object_get (own, "approvals"));
    json_decref (own);
    sl_buf_t out = { 0 };
    run->own_status = (int) s_call (run->port, "POST", path, "{\"decision\":\"approve\",\"remember_minutes\":60}",
                                    AGENT, &out);
    snprintf (run->own_why, sizeof run->own_why, "%s", sl_buf_cstr (&out));
    run->other_status = (int) s_call (run->port, "POST", path, "{\"decision\":\"approve\",\"comment\":\"ok\"}",
                                      REVIEWER, &out);
    sl_buf_free (&out);
    json_decref (list);
}

Test (approvals_api, a_caller_may_not_approve_its_own_call)
{
    char dir [] = "/tmp/sluice-self-XXXXXX";
    sluice_stack_t *s = s_self_stack ("", dir, false);
    load_client_t *clients = s_agent_client ();
    s_self_run_t run = { .port = s->http_port };
    load_action_t action = { .at = 200, .fn = s_self_then_other, .arg = &run };
    load_run (s->http_port, clients, 1, &action, 1, RUN_LIMIT_MS);
    cr_expect_eq (run.own_listed, 0, "the caller's key does not see its own call as decidable");
    cr_expect_eq (run.own_status, 403, "the caller's key may not decide it: %s", run.own_why);
    cr_expect_not_null (strstr (run.own_why, "your own call"), "says why: %s", run.own_why);
    cr_expect_eq (run.other_status, 200, "another approver decides it");
    cr_expect (load_complete (&clients [0]), "%s", sl_buf_cstr (&clients [0].body));
    cr_expect (s_has (&clients [0], "\"name\":\"run_shell\""), "carol's approval let the call run");
    cr_expect_eq (s_refused (s, 403), 1);
    cr_expect (proc_wait_log (s->judge, "\"approval_refused\"", "your own call", NULL, 0, TIMEOUT_MS),
               "the judge logs the refusal");
    load_clients_free (clients, 1);
    cr_expect_eq (stack_stop (s), 0);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}

//  The call waits: bob approves it himself, as his rule allows.
static void
s_self_allowed (void *arg, int round)
{
    (void) round;
    s_self_run_t *run = arg;
    json_t *list = s_listed (run->port, AGENT, 1);
    cr_assert_eq (json_array_size (json_object_get (list, "approvals")), 1, "the caller sees it: allow_self");
    char path [96];
    snprintf (path, sizeof path, "/v1/approvals/%s", s_id (list, 0));
    sl_buf_t out = { 0 };
    run->own_status = (int) s_call (run->port, "POST", path, "{\"decision\":\"approve\"}", AGENT, &out);
    snprintf (run->own_why, sizeof run->own_why, "%s", sl_buf_cstr (&out));
    sl_buf_free (&out);
    json_decref (list);
}

Test (approvals_api, allow_self_lets_the_caller_decide_and_the_audit_says_so)
{
    char dir [] = "/tmp/sluice-self-XXXXXX";
    sluice_stack_t *s = s_self_stack ("      allow_self: true\n", dir, true);
    char data [300];
    snprintf (data, sizeof data, "%s/audit-data", s->dir);
    const char *store [] = { "--data-dir", data, NULL };
    audit_proc_t audit;
    cr_assert (audit_start (s, "audit", store, NULL, &audit));
    load_client_t *clients = s_agent_client ();
    s_self_run_t run = { .port = s->http_port };
    load_action_t action = { .at = 200, .fn = s_self_allowed, .arg = &run };
    load_run (s->http_port, clients, 1, &action, 1, RUN_LIMIT_MS);
    cr_expect_eq (run.own_status, 200, "%s", run.own_why);
    cr_expect_not_null (strstr (run.own_why, "\"self_approved\":true"), "%s", run.own_why);
    cr_expect (s_has (&clients [0], "\"name\":\"run_shell\""));
    //  The audit stores the approval as self-approved.
    json_t *decided = NULL;
    int64_t deadline = zclock_mono () + TIMEOUT_MS;
    while (zclock_mono () < deadline) {
        json_decref (decided);
        decided = audit_get (&audit, "/api/approvals?state=decided");
        if (json_array_size (json_object_get (decided, "approvals")) >= 1)
            break;
        zclock_sleep (100);
    }
    json_t *a = json_array_get (json_object_get (decided, "approvals"), 0);
    cr_assert_not_null (a, "the decided approval is in the audit");
    cr_expect (json_is_true (json_object_get (a, "self_approved")), "recorded as self-approved");
    cr_expect_str_eq (json_string_value (json_object_get (a, "approver")) ?: "", "bob@eng");
    json_decref (decided);
    load_clients_free (clients, 1);
    cr_expect_eq (proc_stop (audit.proc, 10000), 0, "sluice-audit stops cleanly");
    free (audit.proc);
    cr_expect_eq (stack_stop (s), 0);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}
