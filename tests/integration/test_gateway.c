/*  Integration: the gateway as clients see it - every dialect's errors,
    client keys, upstream failures before the first byte, a client that
    leaves, a client that does not read, keep-alive and many streams at
    once. Real processes on loopback; every wait is bounded and polls. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/integration/harness.h"
#include "tests/integration/sse_client.h"

#define TIMEOUT_MS 15000
#define POLL_MS 5

static json_t *
s_json (sl_buf_t *body)
{
    return json_loads (sl_buf_cstr (body), 0, NULL);
}

static const char *
s_path_str (json_t *j, const char *a, const char *b)
{
    json_t *v = json_object_get (json_object_get (j, a), b);
    return json_is_string (v) ? json_string_value (v) : "(none)";
}

#define ANTHROPIC_OK "{\"model\":\"claude-x\",\"max_tokens\":10,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"
#define GEMINI_OK "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"hi\"}]}]}"
#define GEMINI_PATH "/v1beta/models/gemini-x:streamGenerateContent?alt=sse"

//  A raw TCP connection to the gateway, for clients that misbehave.
static int
s_connect (int port, int rcvbuf)
{
    int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (rcvbuf > 0)
        setsockopt (fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port) };
    inet_pton (AF_INET, "127.0.0.1", &addr.sin_addr);
    if (connect (fd, (struct sockaddr *) &addr, sizeof addr)) {
        close (fd);
        return -1;
    }
    struct timeval tv = { 10, 0 };
    setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    return fd;
}

static void
s_post_raw (int fd, const char *path, const char *body)
{
    char head [512];
    int n = snprintf (head, sizeof head, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                                         "Content-Length: %zu\r\n\r\n", path, strlen (body));
    cr_assert_eq (write (fd, head, (size_t) n), n);
    cr_assert_eq (write (fd, body, strlen (body)), (ssize_t) strlen (body));
}

//  --------------------------------------------------------------------------

Test (gateway, errors_in_each_dialect)
{
    const char *gw [] = { "--max-body", "4096", NULL };
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .gateway_args = gw });
    cr_assert_not_null (s);
    sl_buf_t body = { 0 };
    json_t *j;

    //  Anthropic: bad JSON, missing fields, an unknown path, a wrong method.
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/messages", "{bad", NULL, &body, TIMEOUT_MS), 400);
    j = s_json (&body);
    cr_expect_str_eq (json_string_value (json_object_get (j, "type")), "error", "%s", sl_buf_cstr (&body));
    cr_expect_str_eq (s_path_str (j, "error", "type"), "invalid_request_error");
    json_decref (j);
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/messages", "{\"model\":\"m\",\"stream\":true}", NULL,
                                &body, TIMEOUT_MS), 400);
    cr_expect_not_null (strstr (sl_buf_cstr (&body), "messages"));
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/messages/batches", "{}", NULL, &body, TIMEOUT_MS), 404);
    j = s_json (&body);
    cr_expect_str_eq (s_path_str (j, "error", "type"), "not_found_error", "%s", sl_buf_cstr (&body));
    json_decref (j);
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "GET", "/v1/messages", NULL, NULL, &body, TIMEOUT_MS), 405);
    cr_expect_not_null (strstr (sl_buf_cstr (&body), "\"type\":\"error\""));
    sl_buf_reset (&body);

    //  A body over --max-body: 413 in the dialect of the endpoint.
    char *big = malloc (8192);
    memset (big, ' ', 8191);
    big [0] = '{';
    big [8190] = '}';
    big [8191] = 0;
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/messages", big, NULL, &body, TIMEOUT_MS), 413);
    j = s_json (&body);
    cr_expect_str_eq (s_path_str (j, "error", "type"), "request_too_large", "%s", sl_buf_cstr (&body));
    json_decref (j);
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", big, NULL, &body, TIMEOUT_MS), 413);
    j = s_json (&body);
    cr_expect_str_eq (s_path_str (j, "error", "type"), "request_too_large", "%s", sl_buf_cstr (&body));
    json_decref (j);
    sl_buf_reset (&body);
    free (big);

    //  Gemini: google.rpc status shape.
    cr_expect_eq (http_request (s->http_port, "POST", GEMINI_PATH, "{\"contents\":[]}", NULL, &body, TIMEOUT_MS), 400);
    j = s_json (&body);
    cr_expect_eq (json_integer_value (json_object_get (json_object_get (j, "error"), "code")), 400);
    cr_expect_str_eq (s_path_str (j, "error", "status"), "INVALID_ARGUMENT", "%s", sl_buf_cstr (&body));
    json_decref (j);
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "POST", "/v1beta/models/gemini-x:streamGenerateContent", GEMINI_OK,
                                NULL, &body, TIMEOUT_MS), 400, "alt=sse is required");
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "POST", "/v1beta/models/gemini-x:countTokens", GEMINI_OK, NULL, &body,
                                TIMEOUT_MS), 404);
    j = s_json (&body);
    cr_expect_str_eq (s_path_str (j, "error", "status"), "NOT_FOUND", "%s", sl_buf_cstr (&body));
    json_decref (j);
    sl_buf_reset (&body);

    //  Responses: OpenAI shape.
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/responses", "{\"model\":\"m\",\"stream\":true}", NULL,
                                &body, TIMEOUT_MS), 400);
    j = s_json (&body);
    cr_expect_str_eq (s_path_str (j, "error", "type"), "invalid_request_error", "%s", sl_buf_cstr (&body));
    json_decref (j);
    sl_buf_reset (&body);

    //  A valid request the upstream refuses before the first byte comes
    //  back as an HTTP error in the client's dialect, with the upstream's
    //  status: the mock does not know these models (404).
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/messages", ANTHROPIC_OK, NULL, &body, TIMEOUT_MS), 404);
    j = s_json (&body);
    cr_expect_str_eq (json_string_value (json_object_get (j, "type")), "error", "%s", sl_buf_cstr (&body));
    cr_expect_str_eq (s_path_str (j, "error", "type"), "not_found_error");
    json_decref (j);
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "POST", GEMINI_PATH, GEMINI_OK, NULL, &body, TIMEOUT_MS), 404);
    j = s_json (&body);
    cr_expect_str_eq (s_path_str (j, "error", "status"), "NOT_FOUND", "%s", sl_buf_cstr (&body));
    json_decref (j);
    sl_buf_free (&body);
    cr_expect_eq (stack_stop (s), 0);
}

Test (gateway, client_keys_are_checked_when_configured)
{
    setenv ("SLUICE_CLIENT_KEYS", "sk-one, sk-two", 1);
    sluice_stack_t *s = stack_start (&(stack_opts_t) { 0 });
    unsetenv ("SLUICE_CLIENT_KEYS");
    cr_assert_not_null (s);
    sl_buf_t body = { 0 };
    const char *chat = "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", chat, NULL, &body, TIMEOUT_MS), 401);
    cr_expect_not_null (strstr (sl_buf_cstr (&body), "authentication_error"), "%s", sl_buf_cstr (&body));
    sl_buf_reset (&body);
    const char *wrong [] = { "Authorization: Bearer sk-three", NULL };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", chat, wrong, &body, TIMEOUT_MS), 401);
    sl_buf_reset (&body);
    const char *prefix [] = { "Authorization: Bearer sk-on", NULL };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", chat, prefix, &body, TIMEOUT_MS), 401,
                  "a prefix of a key is not the key");
    sl_buf_reset (&body);
    const char *right [] = { "Authorization: Bearer sk-two", NULL };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", chat, right, &body, TIMEOUT_MS), 200);
    chat_stream_t cs;
    chat_stream_parse (sl_buf_cstr (&body), &cs);
    cr_expect (cs.done_last);
    chat_stream_free (&cs);
    sl_buf_reset (&body);
    //  Anthropic's header, Gemini's header and query key: past the check
    //  (the mock then does not know the model: a 404, not a 401).
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/messages", ANTHROPIC_OK, NULL, &body, TIMEOUT_MS), 401);
    cr_expect_not_null (strstr (sl_buf_cstr (&body), "\"authentication_error\""), "%s", sl_buf_cstr (&body));
    sl_buf_reset (&body);
    const char *xkey [] = { "x-api-key: sk-one", NULL };
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/messages", ANTHROPIC_OK, xkey, &body, TIMEOUT_MS), 404);
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "POST", GEMINI_PATH, GEMINI_OK, NULL, &body, TIMEOUT_MS), 401);
    cr_expect_not_null (strstr (sl_buf_cstr (&body), "UNAUTHENTICATED"), "%s", sl_buf_cstr (&body));
    sl_buf_reset (&body);
    const char *gkey [] = { "x-goog-api-key: sk-one", NULL };
    cr_expect_eq (http_request (s->http_port, "POST", GEMINI_PATH, GEMINI_OK, gkey, &body, TIMEOUT_MS), 404);
    sl_buf_reset (&body);
    cr_expect_eq (http_request (s->http_port, "POST", GEMINI_PATH "&key=sk-two", GEMINI_OK, NULL, &body, TIMEOUT_MS), 404);
    sl_buf_free (&body);
    //  With client keys, the client port's /metrics needs one too: read
    //  the metrics port.
    //  By reason: no key at all (three), a key that is not one (two).
    int port = atoi (s->metrics [5]);
    cr_expect_eq (metric_value (port, "sluice_requests_unauthorized_total{reason=\"missing\"}"), 3);
    cr_expect_eq (metric_value (port, "sluice_requests_unauthorized_total{reason=\"unknown_key\"}"), 2);
    cr_expect_eq (metric_value (port, "sluice_requests_total{dialect=\"openai\",team=\"default\"}"), 1,
                  "only requests whose caller is known are counted by team");
    //  The keys never reach a log.
    proc_t *procs [] = { s->gateway, s->ingest, s->aggregator, s->judge, s->emitter };
    for (int i = 0; i < 5; i++) {
        FILE *f = fopen (procs [i]->log_path, "r");
        char line [4096];
        while (f && fgets (line, sizeof line, f))
            cr_expect_null (strstr (line, "sk-"), "%s logged a key: %s", procs [i]->name, line);
        if (f)
            fclose (f);
    }
    cr_expect_eq (stack_stop (s), 0);
}

Test (gateway, upstream_failures_before_the_first_byte)
{
    //  An upstream that accepts the connection and never answers: the
    //  ingest's first-byte timeout turns it into a 504.
    //  Close-on-exec: the processes the harness starts must not inherit it.
    int silent = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET };
    inet_pton (AF_INET, "127.0.0.1", &addr.sin_addr);
    cr_assert_eq (bind (silent, (struct sockaddr *) &addr, sizeof addr), 0);
    cr_assert_eq (listen (silent, 16), 0);
    socklen_t len = sizeof addr;
    getsockname (silent, (struct sockaddr *) &addr, &len);
    //  And one where nobody listens at all, held so no one else takes it.
    int holder, refusing = harness_refusing_port (&holder);
    cr_assert_gt (refusing, 0);
    char routes [512];
    snprintf (routes, sizeof routes,
              "providers:\n"
              "  - { name: silent, dialect: openai, base_url: \"http://127.0.0.1:%d/v1\" }\n"
              "  - { name: nobody, dialect: openai, base_url: \"http://127.0.0.1:%d/v1\" }\n"
              "routes:\n"
              "  - { model: mock-silent, provider: silent }\n"
              "  - { model: mock-nobody, provider: nobody }\n",
              ntohs (addr.sin_port), refusing);
    const char *ingest [] = { "--first-byte-timeout-ms", "1000", NULL };
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .ingest_args = ingest, .routes_text = routes });
    cr_assert_not_null (s);
    sl_buf_t body = { 0 };
    const char *chat = "{\"model\":\"mock-silent\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", chat, NULL, &body, TIMEOUT_MS), 504);
    cr_expect_not_null (strstr (sl_buf_cstr (&body), "upstream_first_byte_timeout"), "%s", sl_buf_cstr (&body));
    sl_buf_reset (&body);
    //  Nobody listening: 502.
    chat = "{\"model\":\"mock-nobody\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    cr_expect_eq (http_request (s->http_port, "POST", "/v1/chat/completions", chat, NULL, &body, TIMEOUT_MS), 502);
    cr_expect_not_null (strstr (sl_buf_cstr (&body), "upstream_unreachable"), "%s", sl_buf_cstr (&body));
    sl_buf_free (&body);
    cr_expect_eq (stack_stop (s), 0);
    close (silent);
    close (holder);
}

Test (gateway, a_client_that_leaves_cancels_its_upstream)
{
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .mock_delay_ms = 2 });
    cr_assert_not_null (s);
    int fd = s_connect (s->http_port, 0);
    cr_assert_geq (fd, 0);
    s_post_raw (fd, "/v1/chat/completions",
                "{\"model\":\"mock-bench\",\"max_tokens\":5000,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    //  Wait for the stream to flow, then leave in the middle of it.
    char buf [4096];
    ssize_t got = 0, n;
    while (got < 2000 && (n = read (fd, buf, sizeof buf)) > 0)
        got += n;
    cr_assert_geq (got, 2000, "the stream started");
    cr_expect_eq (metric_value (s->mock_port, "mock_streams_abandoned_total"), 0);
    struct timespec closed_at;
    clock_gettime (CLOCK_REALTIME, &closed_at);
    close (fd);
    double abandoned = harness_wait_metric (s->mock_port, "mock_streams_abandoned_total", 1, 10000);
    cr_expect_eq (abandoned, 1, "the upstream connection was closed");
    cr_expect_geq (metric_value (atoi (s->metrics [5]), "sluice_cancels_total"), 1);
    //  A measurement, not an assertion: the mock stamps the moment it saw
    //  the connection close in its log (same clock, millisecond stamps).
    char stamp [64] = "";
    if (proc_wait_log (s->mock, "\"client_closed\"", NULL, NULL, 0, 1000)) {
        FILE *f = fopen (s->mock->log_path, "r");
        char line [4096];
        while (f && fgets (line, sizeof line, f))
            if (strstr (line, "\"client_closed\"") && strstr (line, "\"ts\":\""))
                snprintf (stamp, sizeof stamp, "%s", strstr (line, "\"ts\":\"") + 6);
        if (f)
            fclose (f);
    }
    if (stamp [0]) {
        struct tm tm = { 0 };
        int ms = 0;
        if (sscanf (stamp, "%d-%d-%dT%d:%d:%d.%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                    &tm.tm_min, &tm.tm_sec, &ms) == 7) {
            tm.tm_year -= 1900;
            tm.tm_mon -= 1;
            long long seen = (long long) timegm (&tm) * 1000 + ms;
            long long left = (long long) closed_at.tv_sec * 1000 + closed_at.tv_nsec / 1000000;
            fprintf (stderr, "disconnect to upstream close: %lld ms (from %s)\n", seen - left,
                     getenv ("SLUICE_BIN_DIR") ? getenv ("SLUICE_BIN_DIR") : "build/bin");
        }
    }
    cr_expect_eq (stack_stop (s), 0);
}

Test (gateway, a_slow_reader_is_cut_off_with_bounded_memory)
{
    const char *gw [] = { "--stream-cap", "65536", NULL };
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .gateway_args = gw });
    cr_assert_not_null (s);
    int fd = s_connect (s->http_port, 4096);
    cr_assert_geq (fd, 0);
    //  A long response the client never reads.
    s_post_raw (fd, "/v1/chat/completions",
                "{\"model\":\"mock-bench\",\"max_tokens\":8000,\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    int gw_port = atoi (s->metrics [5]);
    double cut = harness_wait_metric (gw_port, "sluice_slow_readers_total", 1, 20000);
    if (cut < 1)
        fprintf (stderr, "frames=%g buffered=%g mock_total=%g\n", metric_value (gw_port, "sluice_frames_total"),
                 metric_value (gw_port, "sluice_client_buffered_bytes"), metric_value (s->mock_port, "mock_streams_total"));
    cr_expect_eq (cut, 1, "the stream was cut off");
    //  The cancel is counted once the ingest is told, just after the cut.
    cr_expect_geq (harness_wait_metric (gw_port, "sluice_cancels_total", 1, 10000), 1, "and its upstream call cancelled");
    cr_expect_leq (metric_value (gw_port, "sluice_client_buffered_bytes"), 65536);
    close (fd);
    cr_expect_eq (stack_stop (s), 0);
}

static size_t
s_sink (char *ptr, size_t size, size_t nmemb, void *arg)
{
    sl_buf_append ((sl_buf_t *) arg, ptr, size * nmemb);
    return size * nmemb;
}

Test (gateway, keep_alive_reuses_the_connection)
{
    sluice_stack_t *s = stack_start (&(stack_opts_t) { 0 });
    cr_assert_not_null (s);
    CURL *easy = curl_easy_init ();
    char url [128];
    snprintf (url, sizeof url, "http://127.0.0.1:%d/v1/chat/completions", s->http_port);
    struct curl_slist *h = curl_slist_append (NULL, "Content-Type: application/json");
    sl_buf_t body = { 0 };
    curl_easy_setopt (easy, CURLOPT_URL, url);
    curl_easy_setopt (easy, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt (easy, CURLOPT_POSTFIELDS,
                      "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_sink);
    curl_easy_setopt (easy, CURLOPT_WRITEDATA, &body);
    curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, (long) TIMEOUT_MS);
    for (int i = 0; i < 3; i++) {
        sl_buf_reset (&body);
        cr_expect_eq (curl_easy_perform (easy), CURLE_OK);
        long status = 0, connects = -1;
        curl_easy_getinfo (easy, CURLINFO_RESPONSE_CODE, &status);
        curl_easy_getinfo (easy, CURLINFO_NUM_CONNECTS, &connects);
        cr_expect_eq (status, 200);
        cr_expect_eq (connects, i == 0 ? 1 : 0, "request %d: %ld new connections", i, connects);
        chat_stream_t cs;
        chat_stream_parse (sl_buf_cstr (&body), &cs);
        cr_expect (cs.done_last, "request %d complete", i);
        chat_stream_free (&cs);
    }
    sl_buf_free (&body);
    curl_slist_free_all (h);
    curl_easy_cleanup (easy);
    fprintf (stderr, "one stream at a time: mean time to first byte %.2f ms\n",
             1000 * metric_value (s->http_port, "sluice_ttfb_seconds_sum") / 3);
    //  What the gateway and the emitter count about those streams.
    int gw = atoi (s->metrics [5]), em = atoi (s->metrics [4]);
    cr_expect_eq (metric_value (gw, "sluice_streams_total"), 3);
    cr_expect_eq (metric_value (gw, "sluice_ttfb_seconds_count"), 3);
    cr_expect_eq (metric_value (gw, "sluice_requests_total"), 3, "the first series is the OpenAI dialect");
    cr_expect_eq (metric_value (gw, "sluice_slow_readers_total"), 0);
    cr_expect_eq (harness_wait_metric (em, "sluice_streams_total", 3, 5000), 3);
    cr_expect_eq (metric_value (em, "sluice_streams_active"), 0);
    cr_expect_gt (metric_value (em, "sluice_events_out_total"), 3 * 30, "every chunk of every stream");
    cr_expect_eq (metric_value (em, "sluice_illegal_events_total"), 0);
    cr_expect_eq (metric_value (em, "sluice_dropped_events_total"), 0);
    //  No tap subscribed: nothing was encoded for monitoring.
    cr_expect_eq (metric_value (em, "sluice_tap_subscriptions"), 0);
    cr_expect_eq (metric_value (em, "sluice_tap_published_total"), 0);
    cr_expect_geq (metric_value (em, "sluice_queue_bytes"), 0);
    cr_expect_eq (stack_stop (s), 0);
}

#define CONCURRENT 128

Test (gateway, many_concurrent_streams_on_one_process)
{
    sluice_stack_t *s = stack_start (&(stack_opts_t) { .mock_delay_ms = 5 });
    cr_assert_not_null (s);
    CURLM *multi = curl_multi_init ();
    CURL *easy [CONCURRENT];
    sl_buf_t bodies [CONCURRENT];
    struct curl_slist *h = curl_slist_append (NULL, "Content-Type: application/json");
    char url [128];
    snprintf (url, sizeof url, "http://127.0.0.1:%d/v1/chat/completions", s->http_port);
    for (int i = 0; i < CONCURRENT; i++) {
        memset (&bodies [i], 0, sizeof bodies [i]);
        easy [i] = curl_easy_init ();
        curl_easy_setopt (easy [i], CURLOPT_URL, url);
        curl_easy_setopt (easy [i], CURLOPT_HTTPHEADER, h);
        curl_easy_setopt (easy [i], CURLOPT_POSTFIELDS,
                          i % 2 ? "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}"
                                : "{\"model\":\"mock-tools\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"b\"}]}");
        curl_easy_setopt (easy [i], CURLOPT_WRITEFUNCTION, s_sink);
        curl_easy_setopt (easy [i], CURLOPT_WRITEDATA, &bodies [i]);
        curl_easy_setopt (easy [i], CURLOPT_TIMEOUT_MS, (long) 30000);
        curl_multi_add_handle (multi, easy [i]);
    }
    int running = 1;
    long deadline = zclock_mono () + 40000;
    double peak = 0;
    while (running && zclock_mono () < deadline) {
        curl_multi_perform (multi, &running);
        curl_multi_poll (multi, NULL, 0, 50, NULL);
    }
    (void) peak;
    cr_expect_eq (running, 0, "every stream finished in time");
    for (int i = 0; i < CONCURRENT; i++) {
        long status = 0;
        curl_easy_getinfo (easy [i], CURLINFO_RESPONSE_CODE, &status);
        cr_expect_eq (status, 200, "stream %d", i);
        chat_stream_t cs;
        chat_stream_parse (sl_buf_cstr (&bodies [i]), &cs);
        cr_expect (cs.done_last, "stream %d complete", i);
        cr_expect_eq (cs.malformed, 0);
        if (i % 2)
            cr_expect_eq (cs.content.len, 131, "stream %d: all the text (%zu)", i, cs.content.len);
        else
            cr_expect_eq (cs.call_count, 2, "stream %d: its two calls (no policy)", i);
        chat_stream_free (&cs);
        curl_multi_remove_handle (multi, easy [i]);
        curl_easy_cleanup (easy [i]);
        sl_buf_free (&bodies [i]);
    }
    curl_slist_free_all (h);
    curl_multi_cleanup (multi);
    cr_expect_eq (metric_value (s->http_port, "sluice_streams_total"), CONCURRENT);
    cr_expect_eq (metric_value (s->http_port, "sluice_ttfb_seconds_count"), CONCURRENT, "one TTFB per stream");
    fprintf (stderr, "%d concurrent streams: mean time to first byte %.2f ms\n", CONCURRENT,
             1000 * metric_value (s->http_port, "sluice_ttfb_seconds_sum") / CONCURRENT);
    cr_expect_eq (metric_value (s->http_port, "sluice_streams_active"), 0);
    cr_expect_eq (stack_stop (s), 0);
}

//  A gateway asked to stop while a client's stream is in flight (its
//  connection suspended, waiting for frames) stops cleanly: the client's
//  connection is closed and the process exits 0, never aborts in
//  libmicrohttpd, which refuses to stop with suspended connections.
Test (gateway, stops_cleanly_with_a_stream_in_flight)
{
    sluice_stack_t *s = stack_start (&(stack_opts_t) { 0 });
    cr_assert_not_null (s);
    int fd = s_connect (s->http_port, 0);
    cr_assert_geq (fd, 0);
    s_post_raw (fd, "/v1/chat/completions",
                "{\"model\":\"mock-stall\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    cr_assert_eq (harness_wait_metric (atoi (s->metrics [5]), "sluice_streams_active", 1, 10000), 1,
                  "the stream is in flight at the gateway");
    int rc = proc_stop (s->gateway, 10000);
    if (rc != 0)
        proc_dump (s->gateway);
    cr_expect_eq (rc, 0, "the gateway exited cleanly, not %d", rc);
    unlink (s->gateway->log_path);
    free (s->gateway);
    s->gateway = NULL;
    //  The client learns it: its connection ends (bounded by SO_RCVTIMEO).
    char buf [4096];
    ssize_t n;
    int reads = 0;
    while ((n = read (fd, buf, sizeof buf)) > 0 && ++reads < 1000)
        ;
    cr_expect_eq (n, 0, "the client's connection was closed");
    close (fd);
    cr_expect_eq (stack_stop (s), 0);
}
