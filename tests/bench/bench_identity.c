/*  Benchmark: what knowing the caller adds to a request in the gateway,
    one core: the credential resolved against the keys (sl_identity_resolve:
    the key's SHA-256 found among the file's; a signed token's signature
    checked), the request's limit counters planned (sl_limits_plan) and
    admitted by the store, and the stream's end counted (finish). p50 and
    p99 over ROUNDS requests, for

      open      no keys configured: nothing is checked (today without keys);
      key       a keys file of KEYS keys, each with a team, three limits of
                its own and its team's (rpm, concurrent, tokens a day), the
                counters in this process (one gateway);
      token     the same file with a jwt section: an RS256 token (its
                signature checked on the first request, then remembered),
                its team's limits;
      redis     the key, with the counters in a real redis-server (several
                gateways): one round trip for the admission, one for the
                end (not waited for), over loopback.

    redis-server is Debian's, started here on a free loopback port; without
    it the redis line says so and the others still run.
*/
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/sl_buf.h"
#include "common/identity/sl_identity.h"
#include "common/identity/sl_limits_redis.h"
#include "tests/redistmp.h"

#define ROUNDS 20000
#define REDIS_ROUNDS 4000
#define KEYS 1000
#define TEAMS 20
#define REDIS_TIMEOUT_MS 1000

static double
s_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int
s_cmp (const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

static void
s_report (const char *name, double *us, int n, const char *what)
{
    qsort (us, (size_t) n, sizeof *us, s_cmp);
    printf ("identity %-6s p50 %8.2f us  p99 %8.2f us  (%s)\n", name, us [n / 2], us [n * 99 / 100], what);
}

//  A keys file of KEYS keys over TEAMS teams, every key and team with
//  limits; with_jwt: a jwt section trusting pem.
static sl_keyring_t *
s_keyring (const char *dir, const char *pem)
{
    sl_buf_t text = { 0 };
    sl_buf_puts (&text, "teams:\n");
    for (int t = 0; t < TEAMS; t++)
        sl_buf_printf (&text, "  - name: team%d\n    limits: {rpm: 100000000, concurrent: 100000000, "
                              "tokens_per_day: 100000000000}\n", t);
    if (pem)
        sl_buf_printf (&text, "jwt:\n  keys: [%s]\n  audience: sluice\n", pem);
    sl_buf_puts (&text, "keys:\n");
    for (int k = 0; k < KEYS; k++) {
        char key [48], hex [SL_KEYRING_HEX_SIZE];
        snprintf (key, sizeof key, "sk-bench-%06d", k);
        sl_keyring_key_hex (key, hex);
        sl_buf_printf (&text, "  - id: k%d\n    sha256: %s\n    team: team%d\n    user: u%d\n"
                              "    limits: {rpm: 100000000, concurrent: 100000000, tokens_per_day: 100000000000}\n",
                       k, hex, k % TEAMS, k);
    }
    char name [300], *error = NULL;
    snprintf (name, sizeof name, "%s/keys.yaml", dir);
    sl_keyring_t *ring = sl_keyring_parse (text.data, text.len, name, &error);
    if (!ring) {
        fprintf (stderr, "bench_identity: %s\n", error ? error : "?");
        exit (1);
    }
    sl_buf_free (&text);
    return ring;
}

//  An RS256 key pair made here (openssl's command line), and a token.
static bool
s_token (const char *dir, char *pem, size_t size, char *token, size_t token_size)
{
    char cmd [1024];
    snprintf (pem, size, "%s/idp.pem", dir);
    snprintf (cmd, sizeof cmd, "openssl genrsa -out %s/idp.key 2048 2>/dev/null && "
                               "openssl rsa -in %s/idp.key -pubout -out %s 2>/dev/null", dir, dir, pem);
    if (system (cmd) != 0)
        return false;
    //  header.payload signed with openssl dgst, base64url by tr.
    snprintf (cmd, sizeof cmd,
              "cd %s && h=$(printf '{\"alg\":\"RS256\",\"typ\":\"JWT\"}' | basenc --base64url | tr -d '=\\n') && "
              "p=$(printf '{\"sub\":\"bench\",\"team\":\"team1\",\"aud\":\"sluice\",\"exp\":%lld}' | "
              "basenc --base64url | tr -d '=\\n') && "
              "s=$(printf '%%s.%%s' $h $p | openssl dgst -sha256 -sign idp.key | basenc --base64url | tr -d '=\\n') && "
              "printf '%%s.%%s.%%s' $h $p $s", dir, (long long) time (NULL) + 3600);
    FILE *f = popen (cmd, "r");
    if (!f)
        return false;
    size_t n = fread (token, 1, token_size - 1, f);
    token [n] = 0;
    return pclose (f) == 0 && n > 0;
}

typedef struct {
    bool done;
    int outcome;
} s_wait_t;

static void
s_done (void *arg, const sl_limits_answer_t *answer)
{
    s_wait_t *w = arg;
    w->done = true;
    w->outcome = answer->outcome;
}

static int
s_stop_when_done (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    return ((s_wait_t *) arg)->done ? -1 : 0;
}

//  One request: resolve, plan, admit (waiting for the store's answer in
//  the loop when it is not at once), finish. The time taken, µs.
static double
s_request (sl_keyring_t *ring, sl_jwtkeys_t *jwt, const char *credential, sl_limits_store_t *store, zloop_t *loop,
           int n)
{
    double t0 = s_now ();
    sl_identity_t who;
    if (sl_identity_resolve (ring, jwt, credential, (int64_t) time (NULL), &who) > SL_WHO_OPEN) {
        fprintf (stderr, "bench_identity: the credential was refused (%s)\n", sl_identity_reason (&who));
        exit (1);
    }
    if (who.subject_count && store) {
        sl_limits_plan_t plan;
        char stream [40];
        snprintf (stream, sizeof stream, "%032x", n);
        sl_limits_plan (&plan, who.subjects, who.subject_count, (int64_t) time (NULL), stream);
        s_wait_t w = { 0 };
        store->admit (store, &plan, s_done, &w);
        if (!w.done && loop) {
            //  A timer of no delay: the loop looks again at once after
            //  each turn, so the answer is seen as it comes.
            int timer = zloop_timer (loop, 0, 0, s_stop_when_done, &w);
            zloop_start (loop);
            zloop_timer_end (loop, timer);
        }
        if (!w.done || w.outcome != SL_LIMITS_ADMITTED) {
            fprintf (stderr, "bench_identity: not admitted (%d)\n", w.done ? w.outcome : -1);
            exit (1);
        }
        store->finish (store, &plan, 120, 0);
    }
    return (s_now () - t0) * 1e6;
}

int
main (void)
{
    char dir [] = "/tmp/sluice-bench-identity-XXXXXX";
    if (!mkdtemp (dir))
        return 1;
    char pem [320], token [4096];
    bool tokens = s_token (dir, pem, sizeof pem, token, sizeof token);
    sl_keyring_t *ring = s_keyring (dir, tokens ? pem : NULL);
    sl_jwtkeys_t *jwt = NULL;
    if (tokens) {
        char *error = NULL;
        jwt = sl_jwtkeys_new (sl_keyring_jwt (ring), &error);
        if (!jwt)
            fprintf (stderr, "bench_identity: %s\n", error ? error : "?");
        free (error);
    }
    double *us = malloc (ROUNDS * sizeof *us);
    char key [48];
    for (int i = 0; i < ROUNDS; i++)
        us [i] = s_request (NULL, NULL, "sk-anything", NULL, NULL, i);
    s_report ("open", us, ROUNDS, "no keys: nothing checked");

    sl_limits_store_t *memory = sl_limits_memory_new ();
    for (int i = 0; i < ROUNDS; i++) {
        snprintf (key, sizeof key, "sk-bench-%06d", i % KEYS);
        us [i] = s_request (ring, NULL, key, memory, NULL, i);
    }
    char what [160];
    snprintf (what, sizeof what, "a key among %d, its and its team's limits, in this process", KEYS);
    s_report ("key", us, ROUNDS, what);

    if (jwt) {
        for (int i = 0; i < ROUNDS / 10; i++)
            us [i] = s_request (ring, jwt, token, memory, NULL, i);
        s_report ("token", us, ROUNDS / 10, "an RS256 token (its signature checked once, then remembered), its team's limits, in this process");
    }
    else
        printf ("identity token  skipped: no RS256 key could be made (openssl)\n");
    sl_limits_store_destroy (&memory);

    redistmp_t redis;
    if (redistmp_start (&redis, 0)) {
        zloop_t *loop = zloop_new ();
        char url [64];
        const char *error = NULL;
        snprintf (url, sizeof url, "redis://127.0.0.1:%d/0", redis.port);
        sl_limits_store_t *remote = sl_limits_redis_new (loop, url, REDIS_TIMEOUT_MS, &error);
        for (int i = 0; i < REDIS_ROUNDS; i++) {
            snprintf (key, sizeof key, "sk-bench-%06d", i % KEYS);
            us [i] = s_request (ring, NULL, key, remote, loop, i);
        }
        s_report ("redis", us, REDIS_ROUNDS, "the key, its limits in a redis-server on loopback");
        sl_limits_store_destroy (&remote);
        zloop_destroy (&loop);
        redistmp_stop (&redis);
    }
    else
        printf ("identity redis  skipped: redis-server did not start (make deps installs it)\n");
    free (us);
    sl_jwtkeys_destroy (&jwt);
    sl_keyring_unref (&ring);
    char cmd [128];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system (cmd) == 0 ? 0 : 1;
}
