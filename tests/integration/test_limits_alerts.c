/*  Integration: limits alerts - a team's thresholds of its daily tokens
    crossed by real streams through the gateway, each posted once to a
    receiver the test runs, signed as docs/approvals.md tells a receiver
    to check (the same scheme as the approvals webhook); its monthly
    budget's use in the gateway's gauge. A key the console issued, with
    alerts: each crossing posted to the webhook and recorded once in the
    audit's hash chain and its console (GET /api/alerts), one crossed
    while the audit is down arriving once it is back. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <czmq.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include "services/audit/store/sl_store.h"
#include "tests/integration/audit_proc.h"
#include "tests/integration/harness.h"
#include "tests/keyfile_fixture.h"

#define TIMEOUT_MS 15000
#define HOOK_SECRET "alerts-s3cret"
#define HOOK_MAX 16                     //  posts the receiver keeps
#define REQUESTS_MAX 40                 //  streams sent at most before the day's tokens are spent
#define CHAT "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
#define KEY "sk-test-alerts"

//  The receiver: a listening socket in a thread that takes each POST,
//  checks its signature and answers 200.
typedef struct {
    int fd, port;
    pthread_t thread;
    pthread_mutex_t lock;
    volatile bool stop;
    int posts, good;                    //  posts taken, with a good signature
    json_t *bodies [HOOK_MAX];
} s_hook_t;

static bool
s_hook_check (const char *timestamp, const char *signature, const char *body, size_t len)
{
    if (!timestamp || !signature || strncmp (signature, "sha256=", 7) != 0)
        return false;
    if (llabs ((long long) (zclock_time () / 1000) - atoll (timestamp)) > 300)
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
                h->bodies [h->posts] = o;
            else
                json_decref (o);
            h->posts++;
            h->good += good;
            pthread_mutex_unlock (&h->lock);
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
    for (int i = 0; i < h->posts && i < HOOK_MAX; i++)
        json_decref (h->bodies [i]);
    pthread_mutex_destroy (&h->lock);
}

static int
s_hook_posts (s_hook_t *h)
{
    pthread_mutex_lock (&h->lock);
    int n = h->posts;
    pthread_mutex_unlock (&h->lock);
    return n;
}

//  Posts of a threshold.
static int
s_hook_count (s_hook_t *h, int threshold)
{
    pthread_mutex_lock (&h->lock);
    int n = 0;
    for (int i = 0; i < h->posts && i < HOOK_MAX; i++)
        n += json_integer_value (json_object_get (h->bodies [i], "threshold")) == threshold;
    pthread_mutex_unlock (&h->lock);
    return n;
}

Test (limits_alerts, each_threshold_of_a_day_is_posted_once_signed, .timeout = 120)
{
    cr_assert_geq (sodium_init (), 0);
    s_hook_t hook;
    s_hook_start (&hook);
    char dir [64] = "/tmp/sluice-alerts-XXXXXX", keys [4096], path [128], url [64];
    cr_assert_not_null (mkdtemp (dir));
    //  Ten streams of the mock's about 42 tokens a day; the thresholds at
    //  the first, about the fifth and the last.
    snprintf (keys, sizeof keys, "teams:\n  - name: eng\n"
                                 "    limits: {tokens_per_day: 420, budget: {tokens: 100000},\n"
                                 "             alerts: {at: [10, 50, 100]}}\nkeys:\n");
    keyfile_entry (keys, sizeof keys, "alerts-key", KEY, "eng", "ana", NULL);
    cr_assert_eq (harness_write (dir, "keys.yaml", keys), 0);
    snprintf (path, sizeof path, "%s/keys.yaml", dir);
    snprintf (url, sizeof url, "http://127.0.0.1:%d/alerts", hook.port);
    const char *gateway_args [] = { "--keys-file", path, "--alerts-webhook", url, NULL };
    setenv ("SLUICE_APPROVALS_WEBHOOK_SECRET", HOOK_SECRET, 1);
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .gateway_args = gateway_args });
    unsetenv ("SLUICE_APPROVALS_WEBHOOK_SECRET");
    cr_assert_not_null (s);
    const char *headers [] = { "Content-Type: application/json", "Authorization: Bearer " KEY, NULL };
    int sent = 0, status = 200;
    for (; sent < REQUESTS_MAX && status == 200; sent++) {
        sl_buf_t body = { 0 };
        status = http_request (s->http_port, "POST", "/v1/chat/completions", CHAT, headers, &body, TIMEOUT_MS);
        sl_buf_free (&body);
    }
    cr_expect_eq (status, 429, "the day's tokens spent after %d streams", sent);
    //  Every threshold is posted (bounded wait), and no more.
    int64_t until = zclock_mono () + TIMEOUT_MS;
    while (s_hook_posts (&hook) < 3 && zclock_mono () < until)
        zclock_sleep (50);
    zclock_sleep (500);                 //  a fourth would come now
    cr_expect_eq (s_hook_posts (&hook), 3, "three thresholds, three posts");
    cr_expect_eq (hook.good, s_hook_posts (&hook), "every post signed with the secret");
    cr_expect_eq (s_hook_count (&hook, 10), 1);
    cr_expect_eq (s_hook_count (&hook, 50), 1);
    cr_expect_eq (s_hook_count (&hook, 100), 1);
    pthread_mutex_lock (&hook.lock);
    for (int i = 0; i < hook.posts && i < HOOK_MAX; i++) {
        json_t *o = hook.bodies [i];
        cr_expect_str_eq (json_string_value (json_object_get (o, "type")) ?: "", "limits_alert");
        cr_expect_str_eq (json_string_value (json_object_get (o, "team")) ?: "", "eng");
        cr_expect_str_eq (json_string_value (json_object_get (o, "key")) ?: "", "alerts-key");
        cr_expect_str_eq (json_string_value (json_object_get (o, "subject")) ?: "", "team:eng");
        cr_expect_str_eq (json_string_value (json_object_get (o, "limit")) ?: "", "tokens_per_day");
        cr_expect_str_eq (json_string_value (json_object_get (o, "period")) ?: "", "day");
        cr_expect_eq (json_integer_value (json_object_get (o, "max")), 420);
        cr_expect_geq (json_integer_value (json_object_get (o, "used")) * 100,
                       json_integer_value (json_object_get (o, "threshold")) * 420, "used reached the threshold");
    }
    pthread_mutex_unlock (&hook.lock);
    int gw = atoi (s->metrics [5]);
    cr_expect_eq (metric_value (gw, "sluice_limits_alerts_total{limit=\"tokens_per_day\",at=\"50\"}"), 1);
    //  The month's budget: a few hundred of 100000 tokens used, in its gauge.
    double ratio = metric_value (gw, "sluice_limits_budget_used_ratio{team=\"eng\",limit=\"tokens\"}");
    cr_expect (ratio > 0 && ratio < 0.05, "the team's budget use: %f", ratio);
    cr_expect_eq (stack_stop (s), 0);
    s_hook_stop (&hook);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}

//  --------------------------------------------------------------------------
//  A console key's alerts: the webhook, the audit's chain, the console

#define CONSOLE_KEY "console-admin-key-for-alerts"
#define KEYS_TOKEN "gateways-keys-token-for-alerts"
#define AUDIT_WAIT_MS 60000             //  an alert held while the audit was down: its retries' backoff

static int
s_chat (int port, const char *key)
{
    char auth [160];
    snprintf (auth, sizeof auth, "Authorization: Bearer %s", key);
    const char *headers [] = { auth, "Content-Type: application/json", NULL };
    sl_buf_t out = { 0 };
    int status = http_request (port, "POST", "/v1/chat/completions", CHAT, headers, &out, TIMEOUT_MS);
    sl_buf_free (&out);
    return status;
}

//  The console's alerts (GET /api/alerts as the admin), NULL on failure.
static json_t *
s_alerts (const audit_proc_t *a)
{
    const char *headers [] = { "Authorization: Bearer " CONSOLE_KEY, NULL };
    sl_buf_t got = { 0 };
    int status = http_request (a->console_port, "GET", "/api/alerts", NULL, headers, &got, TIMEOUT_MS);
    json_t *j = status == 200 ? json_loadb (got.data ? got.data : "", got.len, 0, NULL) : NULL;
    sl_buf_free (&got);
    return j;
}

//  Poll the console until it lists want alerts (bounded): how many it listed last.
static size_t
s_wait_alerts (const audit_proc_t *a, size_t want, int timeout_ms)
{
    int64_t until = zclock_mono () + timeout_ms;
    size_t n = 0;
    do {
        json_t *j = s_alerts (a);
        n = json_array_size (json_object_get (j, "alerts"));
        json_decref (j);
        if (n >= want)
            break;
        zclock_sleep (200);
    } while (zclock_mono () < until);
    return n;
}

//  The webhook's post of a threshold: its id ("" when none).
static void
s_hook_id (s_hook_t *h, int threshold, char *out, size_t size)
{
    out [0] = 0;
    pthread_mutex_lock (&h->lock);
    for (int i = 0; i < h->posts && i < HOOK_MAX; i++)
        if (json_integer_value (json_object_get (h->bodies [i], "threshold")) == threshold)
            snprintf (out, size, "%s", json_string_value (json_object_get (h->bodies [i], "id")) ?: "");
    pthread_mutex_unlock (&h->lock);
}

Test (limits_alerts, a_console_keys_crossing_is_in_the_webhook_the_chain_and_the_console, .timeout = 240)
{
    cr_assert_geq (sodium_init (), 0);
    s_hook_t hook;
    s_hook_start (&hook);
    char dir [64] = "/tmp/sluice-alerts-XXXXXX", hook_url [64], keys_url [96], port [16];
    cr_assert_not_null (mkdtemp (dir));
    snprintf (hook_url, sizeof hook_url, "http://127.0.0.1:%d/alerts", hook.port);
    snprintf (port, sizeof port, "%d", harness_free_port ());
    snprintf (keys_url, sizeof keys_url, "http://127.0.0.1:%s/api/keys/served", port);
    const char *gateway_args [] = { "--keys-url", keys_url, "--watch-ms", "300", "--alerts-webhook", hook_url, NULL };
    setenv ("SLUICE_APPROVALS_WEBHOOK_SECRET", HOOK_SECRET, 1);
    setenv ("SLUICE_KEYS_TOKEN", KEYS_TOKEN, 1);
    setenv ("SLUICE_CONSOLE_KEYS", CONSOLE_KEY, 1);
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .gateway_args = gateway_args });
    cr_assert_not_null (s);
    const char *store [] = { "--data-dir", dir, NULL };
    const char *extra [] = { "--console-port", port, NULL };
    audit_proc_t a;
    cr_assert (audit_start (s, "audit", store, extra, &a), "the audit starts");

    //  A key of the console's, alerted at 10%, 50% and 100% of 420 tokens
    //  a day (the mock's streams are about 42 tokens each).
    const char *headers [] = { "Authorization: Bearer " CONSOLE_KEY, "Content-Type: application/json", NULL };
    sl_buf_t got = { 0 };
    cr_assert_eq (http_request (a.console_port, "POST", "/api/keys", "{\"team\":\"payments\",\"user\":\"alice\","
                                "\"limits\":{\"tokens_per_day\":420,\"alerts\":{\"at\":[10,50,100]}}}",
                                headers, &got, TIMEOUT_MS), 201, "%s", sl_buf_cstr (&got));
    json_t *j = json_loadb (got.data, got.len, 0, NULL);
    sl_buf_free (&got);
    char id [160], key [80], subject [200];
    snprintf (id, sizeof id, "%s", json_string_value (json_object_get (j, "id")));
    snprintf (key, sizeof key, "%s", json_string_value (json_object_get (j, "key")));
    snprintf (subject, sizeof subject, "key:%s", id);
    json_decref (j);

    //  Its first stream (when the gateway has the key) crosses 10%.
    int64_t until = zclock_mono () + 20000;
    int status = 0;
    while ((status = s_chat (s->http_port, key)) != 200 && zclock_mono () < until)
        zclock_sleep (100);
    cr_assert_eq (status, 200, "the console's key works at the gateway");
    cr_assert_eq (s_wait_alerts (&a, 1, TIMEOUT_MS), 1, "the crossing shows in the console");
    until = zclock_mono () + TIMEOUT_MS;
    while (s_hook_posts (&hook) < 1 && zclock_mono () < until)
        zclock_sleep (50);
    cr_expect_eq (s_hook_count (&hook, 10), 1, "and is posted to the webhook");
    char hook_id [64];
    s_hook_id (&hook, 10, hook_id, sizeof hook_id);
    j = s_alerts (&a);
    json_t *first = json_array_get (json_object_get (j, "alerts"), 0);
    cr_expect_str_eq (json_string_value (json_object_get (first, "subject")) ?: "", subject);
    cr_expect_str_eq (json_string_value (json_object_get (first, "key")) ?: "", id);
    cr_expect_str_eq (json_string_value (json_object_get (first, "team")) ?: "", "payments");
    cr_expect_eq (json_integer_value (json_object_get (first, "threshold")), 10);
    cr_expect_str_eq (json_string_value (json_object_get (first, "id")) ?: "", hook_id, "one crossing, one id");
    json_decref (j);

    //  The audit down while the key crosses 50%: the gateway keeps the alert.
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);
    for (int sent = 0; sent < REQUESTS_MAX && s_hook_count (&hook, 50) == 0; sent++) {
        cr_assert_eq (s_chat (s->http_port, key), 200, "the key works with the audit away");
        until = zclock_mono () + 2000;
        while (s_hook_count (&hook, 50) == 0 && zclock_mono () < until && sent >= 3)
            zclock_sleep (50);
    }
    cr_assert_eq (s_hook_count (&hook, 50), 1, "50%% crossed, posted to the webhook");
    int gw = atoi (s->metrics [5]);
    until = zclock_mono () + TIMEOUT_MS;
    while (metric_value (gw, "sluice_alerts_audit_failures_total") < 1 && zclock_mono () < until)
        zclock_sleep (100);
    cr_expect_geq (metric_value (gw, "sluice_alerts_audit_failures_total"), 1, "the audit did not answer");

    //  Back up (the same store and port): the alert arrives, once.
    cr_assert (audit_start (s, "audit2", store, extra, &a), "the audit starts again");
    cr_expect_eq (s_wait_alerts (&a, 2, AUDIT_WAIT_MS), 2, "the held alert arrives");
    zclock_sleep (1000);
    j = s_alerts (&a);
    json_t *list = json_object_get (j, "alerts");
    cr_expect_eq (json_array_size (list), 2, "each crossing once");
    cr_expect_eq (json_integer_value (json_object_get (json_array_get (list, 0), "threshold")), 50);
    cr_expect_eq (json_integer_value (json_object_get (json_array_get (list, 1), "threshold")), 10);
    json_decref (j);
    cr_expect_eq (metric_value (gw, "sluice_alerts_audit_sent_total"), 2);
    cr_expect_eq (metric_value (gw, "sluice_alerts_audit_dropped_total"), 0);
    cr_expect_eq (metric_value (gw, "sluice_alerts_audit_given_up_total"), 0);
    cr_expect_eq (s_hook_posts (&hook), 2, "the webhook once each too");
    cr_expect_eq (proc_stop (a.proc, 10000), 0);
    free (a.proc);

    //  In the hash chain: one entry each.
    char target [128], *error = NULL;
    snprintf (target, sizeof target, "%s/audit.db", dir);
    sl_store_t *db = sl_store_open (target, &error);
    cr_assert_not_null (db, "%s", error ? error : "");
    int64_t n = -1;
    cr_assert_eq (sl_store_query_int (db, "SELECT COUNT(*) FROM chain WHERE kind = 'alert'", NULL, 0, -1, &n), 0);
    cr_expect_eq (n, 2, "two alerts in the chain");
    cr_assert_eq (sl_store_query_int (db, "SELECT COUNT(*) FROM alerts a JOIN chain c ON c.kind = 'alert' "
                                          "AND c.ref = CAST(a.pos AS TEXT)", NULL, 0, -1, &n), 0);
    cr_expect_eq (n, 2, "each its own entry");
    sl_store_close (&db);

    unsetenv ("SLUICE_APPROVALS_WEBHOOK_SECRET");
    unsetenv ("SLUICE_KEYS_TOKEN");
    unsetenv ("SLUICE_CONSOLE_KEYS");
    cr_expect_eq (stack_stop (s), 0);
    s_hook_stop (&hook);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq (system (cmd), 0);
}
