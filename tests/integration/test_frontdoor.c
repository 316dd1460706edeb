/*  Integration: the front door under attack. Idle and trickling
    connections by the thousand, a request whose length is said twice, a
    body that is cheap to send and costly to parse, an upstream that sends
    bytes that are not UTF-8, an upstream that cannot be reached, the
    metrics on the client port, a flood of streams. Real processes on
    loopback; every wait is bounded and polls. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/base/sl_fdlimit.h"
#include "common/base/sl_utf8.h"
#include "tests/integration/harness.h"

#define TIMEOUT_MS 15000
#define POLL_MS 5
#define ATTACKERS 2000                  //  slowloris connections
#define IDLE_POOL 1100                  //  a proxy's idle connections to the mock, past FD_SETSIZE
#define FD_MARGIN 200                   //  descriptors the test needs besides them
#define ACCEPT_WAIT_MS 30000            //  for the gateway to take the attackers' connections
#define DEADLINE_S 1                    //  --request-timeout of the deadline test
#define BOMB_BYTES (10u << 20)          //  the largest body the gateway takes (--max-body)
#define BOMB_RSS_KB (100u << 10)        //  what the gateway may reach reading it

static void
s_pause (int ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep (&ts, NULL);
}

static int
s_metrics_port (sluice_stack_t *s, int which)
{
    return atoi (s->metrics [which]);
}

static int
s_connect (int port, bool blocking)
{
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC | (blocking ? 0 : SOCK_NONBLOCK), 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port) };
    inet_pton (AF_INET, "127.0.0.1", &addr.sin_addr);
    if (connect (fd, (struct sockaddr *) &addr, sizeof addr) && errno != EINPROGRESS) {
        close (fd);
        return -1;
    }
    if (blocking) {
        struct timeval tv = { TIMEOUT_MS / 1000, 0 };
        setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    return fd;
}

//  Send without blocking and without SIGPIPE; the peer may have closed.
static bool
s_send (int fd, const char *data, size_t len)
{
    return send (fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT) == (ssize_t) len;
}

//  Read until the peer closes or timeout_ms pass; true when it closed.
static bool
s_read_to_close (int fd, sl_buf_t *out, int timeout_ms)
{
    long deadline = zclock_mono () + timeout_ms;
    char buf [4096];
    while (zclock_mono () < deadline) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll (&p, 1, 50) <= 0)
            continue;
        ssize_t n = recv (fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            return true;
        if (n > 0 && out)
            sl_buf_append (out, buf, (size_t) n);
    }
    return false;
}

//  --------------------------------------------------------------------------
//  Slowloris

typedef struct {
    int fds [ATTACKERS];
    int count;
} s_attack_t;

//  The test's own open-files limit must fit the attack; false when the
//  hard limit does not allow it.
static bool
s_fd_room (void)
{
    return sl_fdlimit_raise () >= ATTACKERS + FD_MARGIN;
}

//  Open the attackers' connections, each sending the start of a request
//  head, and wait until the gateway has taken them all (open, or closed by
//  it to make room).
static void
s_attack_open (s_attack_t *a, sluice_stack_t *s)
{
    static const char head [] = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ";
    a->count = 0;
    for (int i = 0; i < ATTACKERS; i++) {
        int fd = s_connect (s->http_port, false);
        if (fd >= 0)
            a->fds [a->count++] = fd;
    }
    cr_assert_eq (a->count, ATTACKERS, "the test could open its connections");
    //  Connected once writable; then the head goes out.
    long deadline = zclock_mono () + ACCEPT_WAIT_MS;
    for (int i = 0; i < a->count && zclock_mono () < deadline;) {
        struct pollfd p = { .fd = a->fds [i], .events = POLLOUT };
        if (poll (&p, 1, 100) > 0) {
            s_send (a->fds [i], head, sizeof head - 1);
            i++;
        }
    }
    int mp = s_metrics_port (s, 5);
    deadline = zclock_mono () + ACCEPT_WAIT_MS;
    double taken = 0;
    while (zclock_mono () < deadline) {
        taken = metric_value (mp, "sluice_http_connections") + metric_value (mp, "sluice_http_connections_evicted_total");
        if (taken >= ATTACKERS)
            break;
        s_pause (20);
    }
    cr_expect_geq (taken, ATTACKERS, "the gateway took every connection (open or closed to make room): %.0f", taken);
}

//  One byte on every connection: each looks like a request still coming.
static void
s_attack_trickle (s_attack_t *a)
{
    for (int i = 0; i < a->count; i++)
        s_send (a->fds [i], "x", 1);
}

static void
s_attack_close (s_attack_t *a)
{
    for (int i = 0; i < a->count; i++)
        close (a->fds [i]);
    a->count = 0;
}

#define CHAT_TEXT "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"

//  A new client's whole request (bounded by TIMEOUT_MS: a test must end,
//  the bound says nothing of speed, which make bench measures: sluice-bench
//  --only slowloris); its time in ms, -1 when it was not served.
static long
s_new_client (sluice_stack_t *s)
{
    sl_buf_t body = { 0 };
    long t0 = zclock_mono ();
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", CHAT_TEXT, NULL, &body, TIMEOUT_MS);
    long took = zclock_mono () - t0;
    bool done = strstr (sl_buf_cstr (&body), "[DONE]") != NULL;
    sl_buf_free (&body);
    return status == 200 && done ? took : -1;
}

static s_attack_t s_attack;             //  large: not on the stack

Test (frontdoor, slowloris_2000_connections_leave_a_new_client_served, .timeout = 120)
{
    if (!s_fd_room ())
        cr_skip_test ("the open-files hard limit is below %d", ATTACKERS + FD_MARGIN);
    sluice_stack_t *s = stack_start (&(stack_opts_t) { 0 });
    cr_assert_not_null (s);
    s_attack_open (&s_attack, s);
    s_attack_trickle (&s_attack);
    long took = s_new_client (s);
    s_attack_trickle (&s_attack);
    fprintf (stderr, "slowloris, %d connections, default limits: a new client served in %ld ms\n", ATTACKERS, took);
    cr_expect_geq (took, 0, "a new client is served while %d connections trickle", ATTACKERS);
    s_attack_close (&s_attack);
    cr_expect_eq (stack_stop (s), 0);
}

//  A server of ours without connection limits of its own (the mock, a
//  metrics port, the console) holds as many connections as its open-files
//  limit allows. MHD's default stops accepting at ~1000 (FD_SETSIZE): with
//  a proxy's pool of idle connections to the mock that large, every new
//  client waited in the listen backlog until the pool timed out, 60 s.
Test (frontdoor, a_server_without_limits_of_its_own_takes_clients_past_a_thousand, .timeout = 120)
{
    if (!s_fd_room ())
        cr_skip_test ("the open-files hard limit is below %d", ATTACKERS + FD_MARGIN);
    sluice_stack_t *s = stack_start (&(stack_opts_t) { 0 });
    cr_assert_not_null (s);
    int pool [IDLE_POOL], open = 0;
    for (int i = 0; i < IDLE_POOL; i++) {
        int fd = s_connect (s->mock_port, false);
        if (fd >= 0)
            pool [open++] = fd;
    }
    cr_assert_eq (open, IDLE_POOL, "the test could open its connections");
    sl_buf_t body = { 0 };
    int status = http_request (s->mock_port, "POST", "/v1/chat/completions", CHAT_TEXT, NULL, &body, TIMEOUT_MS);
    bool done = strstr (sl_buf_cstr (&body), "[DONE]") != NULL;
    sl_buf_free (&body);
    cr_expect_eq (status, 200, "a new client of the mock is answered while %d connections are open: %d",
                  IDLE_POOL, status);
    cr_expect (done, "its stream is whole");
    for (int i = 0; i < open; i++)
        close (pool [i]);
    cr_expect_eq (stack_stop (s), 0);
}

//  With limits far below the attack: the attackers' oldest connections
//  make room, and a request under way is never the one to go.
Test (frontdoor, oldest_unfinished_connections_make_room, .timeout = 120)
{
    if (!s_fd_room ())
        cr_skip_test ("the open-files hard limit is below %d", ATTACKERS + FD_MARGIN);
    const char *gw [] = { "--max-conns", "200", "--max-conns-per-ip", "100", NULL };
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .gateway_args = gw });
    cr_assert_not_null (s);
    int mp = s_metrics_port (s, 5);
    //  A stream under way: mock-stall sends three events, then holds.
    int busy = s_connect (s->http_port, true);
    cr_assert_geq (busy, 0);
    const char *stall = "{\"model\":\"mock-stall\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    char head [256];
    int n = snprintf (head, sizeof head, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                         "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", strlen (stall));
    cr_assert (s_send (busy, head, (size_t) n) && s_send (busy, stall, strlen (stall)));
    cr_assert_eq (harness_wait_metric (mp, "sluice_streams_active", 1, TIMEOUT_MS), 1);

    s_attack_open (&s_attack, s);
    s_attack_trickle (&s_attack);
    long took = s_new_client (s);
    fprintf (stderr, "slowloris, %d connections, --max-conns 200 --max-conns-per-ip 100: a new client served "
                     "in %ld ms, %.0f connections closed to make room\n", ATTACKERS, took,
             metric_value (mp, "sluice_http_connections_evicted_total"));
    cr_expect_geq (took, 0, "a new client from the attackers' address is served");
    cr_expect_geq (metric_value (mp, "sluice_http_connections_evicted_total"), ATTACKERS - 100);
    cr_expect_leq (metric_value (mp, "sluice_http_connections"), 200);
    //  The stream under way kept its connection.
    cr_expect_eq (metric_value (mp, "sluice_streams_active"), 1, "the busy connection was not closed");
    struct pollfd p = { .fd = busy, .events = POLLIN | POLLRDHUP };
    sl_buf_t got = { 0 };
    char buf [4096];
    while (poll (&p, 1, 0) > 0 && !(p.revents & (POLLRDHUP | POLLHUP))) {
        ssize_t r = recv (busy, buf, sizeof buf, MSG_DONTWAIT);
        if (r <= 0)
            break;
        sl_buf_append (&got, buf, (size_t) r);
    }
    cr_expect_not (p.revents & (POLLRDHUP | POLLHUP), "the busy connection is still open");
    cr_expect_not_null (strstr (sl_buf_cstr (&got), "200 OK"), "%s", sl_buf_cstr (&got));
    sl_buf_free (&got);
    close (busy);
    s_attack_close (&s_attack);
    cr_expect_eq (stack_stop (s), 0);
}

//  --------------------------------------------------------------------------
//  The request deadline

//  Send text a byte every 100 ms until the server closes the connection;
//  the bytes it took go to *sent. True when it closed.
static bool
s_trickle (int fd, const char *text, size_t *sent)
{
    for (*sent = 0; text [*sent]; ) {
        if (!s_send (fd, text + *sent, 1))
            return true;
        (*sent)++;
        if (s_read_to_close (fd, NULL, 100))
            return true;
    }
    return false;
}

Test (frontdoor, request_deadline_cannot_be_extended_by_trickling)
{
    char deadline [16];
    snprintf (deadline, sizeof deadline, "%d", DEADLINE_S);
    const char *gw [] = { "--request-timeout", deadline, NULL };
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .gateway_args = gw });
    cr_assert_not_null (s);
    int mp = s_metrics_port (s, 5);

    //  A new connection trickling its head, a byte every 100 ms: each byte
    //  would reset an idle timeout; the deadline holds. The head takes 14 s
    //  to trickle whole: cut off before that, the deadline held; the cut
    //  is never before the deadline (a slow machine only makes it later).
    int fd = s_connect (s->http_port, true);
    const char *head = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Trickle: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    size_t sent = 0;
    long t0 = zclock_mono ();
    bool closed = s_trickle (fd, head, &sent);
    long took = zclock_mono () - t0;
    close (fd);
    cr_expect (closed, "a trickled head is cut off");
    cr_expect_lt (sent, strlen (head), "before it was whole (%zu of %zu bytes)", sent, strlen (head));
    cr_expect_geq (took, DEADLINE_S * 1000 - 100, "not before the deadline: %ld ms", took);

    //  A keep-alive connection: a whole request, a pause longer than the
    //  deadline (idle time does not count), another whole request; then a
    //  third one trickled, cut off from its first byte.
    fd = s_connect (s->http_port, true);
    const char *get = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    char buf [4096];
    cr_assert (s_send (fd, get, strlen (get)));
    ssize_t r = recv (fd, buf, sizeof buf - 1, 0);
    cr_assert_gt (r, 0);
    buf [r] = 0;
    cr_expect_not_null (strstr (buf, "200 OK"));
    s_pause (DEADLINE_S * 1000 + 500);
    cr_assert (s_send (fd, get, strlen (get)), "the idle connection is still open");
    r = recv (fd, buf, sizeof buf - 1, 0);
    cr_assert_gt (r, 0, "an idle keep-alive connection is not cut off by the request deadline");
    buf [r] = 0;
    cr_expect_not_null (strstr (buf, "200 OK"));
    sent = 0;
    closed = s_trickle (fd, head, &sent);
    close (fd);
    cr_expect (closed, "a trickled head after a keep-alive answer is cut off");
    cr_expect_lt (sent, strlen (head), "before it was whole (%zu of %zu bytes)", sent, strlen (head));
    cr_expect_eq (harness_wait_metric (mp, "sluice_http_request_timeouts_total", 2, TIMEOUT_MS), 2);
    cr_expect_eq (stack_stop (s), 0);
}

//  --------------------------------------------------------------------------
//  Request framing

//  Send raw bytes on a new connection and read until the gateway closes it.
static bool
s_exchange (int port, const char *request, sl_buf_t *reply)
{
    int fd = s_connect (port, true);
    cr_assert_geq (fd, 0);
    cr_assert (s_send (fd, request, strlen (request)));
    bool closed = s_read_to_close (fd, reply, TIMEOUT_MS);
    close (fd);
    return closed;
}

static int
s_count (const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr (p, needle)); p += strlen (needle))
        n++;
    return n;
}

Test (frontdoor, ambiguous_framing_is_refused_on_every_port)
{
    sluice_stack_t *s = stack_start (&(stack_opts_t) { 0 });
    cr_assert_not_null (s);
    const char *body = CHAT_TEXT;
    char request [1024];
    sl_buf_t reply = { 0 };

    //  Two lengths: the first says the body is empty, so what follows would
    //  be a second request to a server that believed it.
    snprintf (request, sizeof request,
              "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
              "Content-Length: 0\r\nContent-Length: %zu\r\n\r\n%sGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
              strlen (body), body);
    cr_expect (s_exchange (s->http_port, request, &reply), "the connection is closed after the answer");
    const char *text = sl_buf_cstr (&reply);
    cr_expect (strncmp (text, "HTTP/1.1 400", 12) == 0, "%s", text);
    cr_expect_eq (s_count (text, "HTTP/1.1 "), 1, "one answer, nothing for what followed: %s", text);
    cr_expect_not_null (strstr (text, "\"invalid_request_error\""), "%s", text);
    cr_expect_not_null (strstr (text, "Content-Length"), "the reason is given: %s", text);

    //  The same length twice, in the Anthropic dialect.
    sl_buf_reset (&reply);
    snprintf (request, sizeof request,
              "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}");
    s_exchange (s->http_port, request, &reply);
    text = sl_buf_cstr (&reply);
    cr_expect (strncmp (text, "HTTP/1.1 400", 12) == 0, "%s", text);
    cr_expect_not_null (strstr (text, "\"type\":\"error\""), "in the client's dialect: %s", text);

    //  A length and chunked encoding.
    sl_buf_reset (&reply);
    snprintf (request, sizeof request,
              "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n"
              "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    s_exchange (s->http_port, request, &reply);
    text = sl_buf_cstr (&reply);
    cr_expect (strncmp (text, "HTTP/1.1 400", 12) == 0, "%s", text);
    cr_expect_eq (s_count (text, "HTTP/1.1 "), 1, "%s", text);

    //  Whitespace before a colon: a proxy in front that trims it frames the
    //  body by this header, one that keeps it by the other (RFC 9112 5.1).
    static const char *const spaced [] = { "Content-Length : 5", "Transfer-Encoding : chunked",
                                           "Content-Length\t: 5" };
    for (size_t i = 0; i < sizeof spaced / sizeof spaced [0]; i++) {
        sl_buf_reset (&reply);
        snprintf (request, sizeof request,
                  "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  "Content-Length: %zu\r\n%s\r\n\r\n%s", strlen (body), spaced [i], body);
        cr_expect (s_exchange (s->http_port, request, &reply), "the connection is closed after the answer");
        text = sl_buf_cstr (&reply);
        cr_expect (strncmp (text, "HTTP/1.1 400", 12) == 0, "%s: %s", spaced [i], text);
        cr_expect_not_null (strstr (text, "whitespace between a header name and its colon"), "%s", text);
    }
    cr_expect_eq (metric_value (s_metrics_port (s, 5), "sluice_http_bad_framing_total{server=\"client\"}"), 6);

    //  Every HTTP port sluice serves: a metrics port, the mock.
    int ports [] = { s_metrics_port (s, 5), s->mock_port };
    for (size_t i = 0; i < 2; i++) {
        sl_buf_reset (&reply);
        snprintf (request, sizeof request, "POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n"
                                           "Content-Length : 0\r\n\r\n{}");
        s_exchange (ports [i], request, &reply);
        text = sl_buf_cstr (&reply);
        cr_expect (strncmp (text, "HTTP/1.1 400", 12) == 0, "port %d: %s", ports [i], text);
    }
    cr_expect_eq (metric_value (s_metrics_port (s, 5), "sluice_http_bad_framing_total{server=\"metrics\"}"), 1);
    cr_expect_eq (metric_value (s->mock_port, "sluice_http_bad_framing_total{server=\"mock\"}"), 1);
    sl_buf_free (&reply);

    cr_expect_eq (metric_value (s_metrics_port (s, 1), "sluice_streams_total"), 0, "nothing went upstream");
    cr_expect_eq (stack_stop (s), 0);
}

//  --------------------------------------------------------------------------
//  A body cheap to send, costly to parse

static long
s_peak_rss_kb (pid_t pid)
{
    char path [64], line [256];
    snprintf (path, sizeof path, "/proc/%d/status", (int) pid);
    FILE *f = fopen (path, "r");
    long kb = -1;
    while (f && fgets (line, sizeof line, f))
        if (strncmp (line, "VmHWM:", 6) == 0)
            kb = atol (line + 6);
    if (f)
        fclose (f);
    return kb;
}

static void
s_bomb (sl_buf_t *b, const char *head, const char *tail)
{
    sl_buf_puts (b, head);
    for (bool first = true; b->len + 3 + strlen (tail) <= BOMB_BYTES; first = false)
        sl_buf_puts (b, first ? "{}" : ",{}");
    sl_buf_puts (b, tail);
}

//  Measured on the release gateway (the sanitizers' quarantine and shadow
//  memory would make any number meaningless); the Makefile passes its
//  directory.
Test (frontdoor, json_bomb_keeps_the_gateway_small, .timeout = 120)
{
    const char *release = getenv ("SLUICE_RELEASE_BIN_DIR");
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .gateway_bin_dir = release ? release : "build/bin" });
    cr_assert_not_null (s);
    long before = s_peak_rss_kb (s->gateway->pid);
    sl_buf_t bomb = { 0 }, reply = { 0 };
    s_bomb (&bomb, "[", "]");
    int status = http_request (s->http_port, "POST", "/v1/chat/completions", sl_buf_cstr (&bomb), NULL, &reply,
                               TIMEOUT_MS * 4);
    cr_expect_eq (status, 400, "%.300s", sl_buf_cstr (&reply));
    long after_array = s_peak_rss_kb (s->gateway->pid);
    sl_buf_reset (&bomb);
    sl_buf_reset (&reply);
    s_bomb (&bomb, "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[", "]}");
    status = http_request (s->http_port, "POST", "/v1/messages", sl_buf_cstr (&bomb), NULL, &reply, TIMEOUT_MS * 4);
    cr_expect_eq (status, 413, "%.300s", sl_buf_cstr (&reply));
    cr_expect_not_null (strstr (sl_buf_cstr (&reply), "too many JSON values"), "%.300s", sl_buf_cstr (&reply));
    cr_expect_not_null (strstr (sl_buf_cstr (&reply), "\"type\":\"error\""), "in the client's dialect");
    long after_object = s_peak_rss_kb (s->gateway->pid);
    fprintf (stderr, "10 MiB of [{},{},...]: the release gateway's peak RSS %ld kB at start, %ld kB after the "
                     "bare array, %ld kB after the same inside a request\n", before, after_array, after_object);
    cr_expect_gt (after_object, 0);
    cr_expect_lt (after_object, (long) BOMB_RSS_KB, "peak RSS %ld kB", after_object);
    cr_expect_eq (metric_value (s_metrics_port (s, 1), "sluice_streams_total"), 0, "nothing went upstream");
    sl_buf_free (&bomb);
    sl_buf_free (&reply);
    cr_expect_eq (stack_stop (s), 0);
}

//  --------------------------------------------------------------------------
//  An upstream that sends bytes that are not UTF-8

//  Every string inside a JSON text is well-formed: walk the values and
//  parse, again, those that hold JSON themselves (tool arguments).
static void
s_check_strings (json_t *v, const char *where)
{
    if (json_is_string (v)) {
        const char *t = json_string_value (v);
        size_t n = json_string_length (v);
        cr_expect (sl_utf8_valid (t, n), "%s: a string is well-formed", where);
        if (n && (t [0] == '{' || t [0] == '[')) {
            json_error_t err;
            json_t *inner = json_loadb (t, n, 0, &err);
            if (inner) {
                s_check_strings (inner, where);
                json_decref (inner);
            }
            else
                cr_expect (strstr (err.text, "nvalid") == NULL && strstr (err.text, "surrogate") == NULL,
                           "%s: nested JSON is well-formed: %s", where, err.text);
        }
        return;
    }
    const char *key;
    json_t *member;
    size_t i;
    json_object_foreach (v, key, member)
        s_check_strings (member, where);
    json_array_foreach (v, i, member)
        s_check_strings (member, where);
}

//  A response is well-formed text; each of its JSON texts (the body, or
//  every SSE data line) parses (jansson refuses bytes that are not UTF-8
//  and lone surrogates); the replacement character shows what was repaired.
static void
s_check_utf8 (const char *where, sl_buf_t *reply, bool stream)
{
    cr_expect (sl_utf8_valid (reply->data, reply->len), "%s: the bytes are well-formed UTF-8", where);
    cr_expect (sl_utf8_json_clean (reply->data, reply->len), "%s: no lone surrogate escape", where);
    cr_expect_not_null (memmem (reply->data, reply->len, SL_UTF8_REPLACEMENT, 3), "%s: U+FFFD in place of the bad bytes",
                        where);
    int texts = 0;
    const char *p = sl_buf_cstr (reply);
    while (p && *p) {
        const char *line = p;
        const char *nl = strchr (p, '\n');
        size_t n = nl ? (size_t) (nl - p) : strlen (p);
        p = nl ? nl + 1 : NULL;
        if (stream && !(n > 6 && strncmp (line, "data: ", 6) == 0 && line [6] == '{'))
            continue;
        if (stream) {
            line += 6;
            n -= 6;
        }
        json_error_t err;
        json_t *j = json_loadb (line, n, 0, &err);
        cr_expect_not_null (j, "%s: JSON that parses: %s in %.200s", where, err.text, line);
        if (j)
            s_check_strings (j, where);
        json_decref (j);
        texts++;
        if (!stream)
            break;
    }
    cr_expect_gt (texts, 0, "%s: %.300s", where, sl_buf_cstr (reply));
}

Test (frontdoor, invalid_utf8_from_the_upstream_never_reaches_a_client, .timeout = 60)
{
    sluice_stack_t *s = stack_start (&(stack_opts_t) { 0 });
    cr_assert_not_null (s);
    struct {
        const char *name, *path, *body;
        bool stream;
    } cases [] = {
        { "openai stream", "/v1/chat/completions",
          "{\"model\":\"mock-bad-utf8\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", true },
        { "openai body", "/v1/chat/completions",
          "{\"model\":\"mock-bad-utf8\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", false },
        { "anthropic stream", "/v1/messages",
          "{\"model\":\"mock-bad-utf8\",\"max_tokens\":10,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", true },
        { "anthropic body", "/v1/messages",
          "{\"model\":\"mock-bad-utf8\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", false },
        { "responses stream", "/v1/responses", "{\"model\":\"mock-bad-utf8\",\"stream\":true,\"input\":\"hi\"}", true },
        { "responses body", "/v1/responses", "{\"model\":\"mock-bad-utf8\",\"input\":\"hi\"}", false },
        { "gemini stream", "/v1beta/models/mock-bad-utf8:streamGenerateContent?alt=sse",
          "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}]}", true },
        { "gemini body", "/v1beta/models/mock-bad-utf8:generateContent",
          "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}]}", false },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_buf_t reply = { 0 };
        int status = http_request (s->http_port, "POST", cases [i].path, cases [i].body, NULL, &reply, TIMEOUT_MS);
        cr_expect_eq (status, 200, "%s: %.300s", cases [i].name, sl_buf_cstr (&reply));
        //  The tool call came through, repaired.
        cr_expect_not_null (strstr (sl_buf_cstr (&reply), "get" SL_UTF8_REPLACEMENT "weather"), "%s: the tool name: %.600s",
                            cases [i].name, sl_buf_cstr (&reply));
        s_check_utf8 (cases [i].name, &reply, cases [i].stream);
        sl_buf_free (&reply);
    }
    cr_expect_geq (metric_value (s_metrics_port (s, 1), "sluice_upstream_repaired_total"), 1);
    cr_expect_eq (metric_value (s_metrics_port (s, 4), "sluice_illegal_events_total"), 0);
    cr_expect_eq (stack_stop (s), 0);
}

//  --------------------------------------------------------------------------
//  An upstream that cannot be reached

Test (frontdoor, connection_errors_name_the_provider_not_the_address)
{
    int holder;
    int port = harness_refusing_port (&holder);
    cr_assert_gt (port, 0);
    char base [64], port_text [16];
    snprintf (base, sizeof base, "http://127.0.0.1:%d/v1", port);
    snprintf (port_text, sizeof port_text, "%d", port);
    const char *ingest [] = { "--openai-base-url", base, "--max-retries", "0", NULL };
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .ingest_args = ingest });
    cr_assert_not_null (s);
    const char *bodies [] = {
        CHAT_TEXT, "{\"model\":\"mock-text\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", NULL
    };
    for (int i = 0; bodies [i]; i++) {
        sl_buf_t reply = { 0 };
        int status = http_request (s->http_port, "POST", "/v1/chat/completions", bodies [i], NULL, &reply, TIMEOUT_MS);
        const char *text = sl_buf_cstr (&reply);
        cr_expect_eq (status, 502, "%s", text);
        cr_expect_not_null (strstr (text, "openai"), "the provider is named: %s", text);
        cr_expect_null (strstr (text, "127.0.0.1"), "no internal address: %s", text);
        cr_expect_null (strstr (text, port_text), "no internal port: %s", text);
        cr_expect_null (strstr (text, " port "), "%s", text);
        sl_buf_free (&reply);
    }
    //  The log keeps the detail, for the operator.
    cr_expect (proc_wait_log (s->ingest, "upstream_transport_error", NULL, NULL, 0, TIMEOUT_MS));
    char rest [64];
    cr_expect (proc_wait_log (s->ingest, "upstream_transport_error", port_text, rest, sizeof rest, TIMEOUT_MS),
               "the log names the address");
    cr_expect_eq (stack_stop (s), 0);
    close (holder);
}

//  --------------------------------------------------------------------------
//  The metrics on the client port

Test (frontdoor, metrics_on_the_client_port_need_a_client_key)
{
    setenv ("SLUICE_CLIENT_KEYS", "sk-front", 1);
    sluice_stack_t *s = stack_start (&(stack_opts_t) { 0 });
    unsetenv ("SLUICE_CLIENT_KEYS");
    cr_assert_not_null (s);
    sl_buf_t reply = { 0 };
    cr_expect_eq (http_request (s->http_port, "GET", "/metrics", NULL, NULL, &reply, TIMEOUT_MS), 401);
    cr_expect_null (strstr (sl_buf_cstr (&reply), "sluice_"), "%s", sl_buf_cstr (&reply));
    sl_buf_reset (&reply);
    const char *wrong [] = { "Authorization: Bearer sk-other", NULL };
    cr_expect_eq (http_request (s->http_port, "GET", "/metrics", NULL, wrong, &reply, TIMEOUT_MS), 401);
    sl_buf_reset (&reply);
    const char *right [] = { "Authorization: Bearer sk-front", NULL };
    cr_expect_eq (http_request (s->http_port, "GET", "/metrics", NULL, right, &reply, TIMEOUT_MS), 200);
    cr_expect_not_null (strstr (sl_buf_cstr (&reply), "sluice_requests_unauthorized_total{reason=\"missing\"} 1"),
                        "%s", sl_buf_cstr (&reply));
    cr_expect_not_null (strstr (sl_buf_cstr (&reply), "sluice_requests_unauthorized_total{reason=\"unknown_key\"} 1"),
                        "%s", sl_buf_cstr (&reply));
    sl_buf_reset (&reply);
    //  /healthz stays open; the metrics port is the operators'.
    cr_expect_eq (http_request (s->http_port, "GET", "/healthz", NULL, NULL, &reply, TIMEOUT_MS), 200);
    sl_buf_reset (&reply);
    cr_expect_eq (http_request (s_metrics_port (s, 5), "GET", "/metrics", NULL, NULL, &reply, TIMEOUT_MS), 200);
    sl_buf_free (&reply);
    cr_expect_eq (stack_stop (s), 0);
}

//  --------------------------------------------------------------------------
//  A flood of streams

#define HELD 2                          //  --max-streams of the test

Test (frontdoor, the_ingest_refuses_streams_over_its_bound, .timeout = 60)
{
    char held [8];
    snprintf (held, sizeof held, "%d", HELD);
    const char *ingest [] = { "--max-streams", held, NULL };
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .ingest_args = ingest });
    cr_assert_not_null (s);
    int ingest_port = s_metrics_port (s, 1);
    //  Streams that hold: mock-stall sends three events, then nothing.
    int fds [HELD];
    const char *stall = "{\"model\":\"mock-stall\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    for (int i = 0; i < HELD; i++) {
        fds [i] = s_connect (s->http_port, true);
        cr_assert_geq (fds [i], 0);
        char head [256];
        int n = snprintf (head, sizeof head, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n", strlen (stall));
        cr_assert (s_send (fds [i], head, (size_t) n) && s_send (fds [i], stall, strlen (stall)));
    }
    cr_assert_eq (harness_wait_metric (ingest_port, "sluice_streams_active", HELD, TIMEOUT_MS), HELD);

    struct {
        const char *path, *body, *needle;
    } more [] = {
        { "/v1/chat/completions", CHAT_TEXT, "\"type\":\"overloaded_error\"" },
        { "/v1/messages", "{\"model\":\"mock-text\",\"max_tokens\":10,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
          "\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"" },
        { "/v1/responses", "{\"model\":\"mock-text\",\"stream\":true,\"input\":\"hi\"}", "overloaded_error" },
        { "/v1beta/models/mock-text:streamGenerateContent?alt=sse",
          "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}]}", "\"status\":\"UNAVAILABLE\"" },
    };
    for (size_t i = 0; i < sizeof more / sizeof more [0]; i++) {
        sl_buf_t reply = { 0 };
        int status = http_request (s->http_port, "POST", more [i].path, more [i].body, NULL, &reply, TIMEOUT_MS);
        const char *text = sl_buf_cstr (&reply);
        cr_expect_eq (status, 503, "%s: %s", more [i].path, text);
        cr_expect_not_null (strstr (text, more [i].needle), "%s: in the client's dialect: %s", more [i].path, text);
        cr_expect_not_null (strstr (text, "try again"), "a clear message: %s", text);
        sl_buf_free (&reply);
    }
    cr_expect_eq (metric_value (ingest_port, "sluice_streams_refused_total"), 4);
    cr_expect_eq (metric_value (ingest_port, "sluice_streams_total"), HELD, "refused streams never started");
    cr_expect (proc_wait_log (s->ingest, "streams_refused", NULL, NULL, 0, TIMEOUT_MS), "the refusal is logged");

    //  The held clients leave: their streams end, and there is room again.
    for (int i = 0; i < HELD; i++)
        close (fds [i]);
    cr_expect_eq (harness_wait_metric_down (ingest_port, "sluice_streams_active", 0, TIMEOUT_MS), 0);
    cr_expect_geq (s_new_client (s), 0, "served once the flood is over");
    cr_expect_eq (stack_stop (s), 0);
}
