/*  Integration: limits alerts - a team's thresholds of its daily tokens
    crossed by real streams through the gateway, each posted once to a
    receiver the test runs, signed as docs/approvals.md tells a receiver
    to check (the same scheme as the approvals webhook); its monthly
    budget's use in the gateway's gauge. */
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
