/*  Unit tests: common/http/sl_httpd (the HTTP server in the reactor: a
    request's method, path, headers, query and body reach the
    application; a whole response and a streamed one go back; a body over
    the limit is refused before it does). A client thread talks to the
    server on 127.0.0.1 while the test runs the reactor, each bounded in
    time. Every program's HTTP door runs on it too: the integration tests
    (tests/integration) drive it with real clients. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <czmq.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/http/sl_httpd.h"

#define S_MAX_BODY 64                   //  bytes a request body may have
#define S_DEADLINE_MS 10000             //  the reactor stops by then, whatever happened
#define S_TICK_MS 5

typedef struct {
    int port;
    const char *request;                //  what the client sends
    char response [4096];               //  what it read, to the server's close
    atomic_bool done;
} s_client_t;

//  A client: connect, send the request, read everything until the server closes.
static void *
s_client (void *arg)
{
    s_client_t *c = arg;
    int fd = socket (AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) c->port),
                                .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
    struct timeval timeout = { .tv_sec = S_DEADLINE_MS / 1000 };
    setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    size_t got = 0;
    if (connect (fd, (struct sockaddr *) &addr, sizeof addr) == 0
    &&  write (fd, c->request, strlen (c->request)) == (ssize_t) strlen (c->request)) {
        ssize_t n;
        while (got < sizeof c->response - 1 && (n = read (fd, c->response + got, sizeof c->response - 1 - got)) > 0)
            got += (size_t) n;
    }
    c->response [got] = 0;
    close (fd);
    atomic_store (&c->done, true);
    return NULL;
}

//  What the application saw of the request, and how it answers.
typedef struct {
    char seen [512];
    char raw [256];                     //  the path as sent
    bool stream;                        //  answer as a stream of chunks
    int requests;
} s_app_t;

static void
s_on_request (void *arg, sl_http_req_t *req)
{
    s_app_t *app = arg;
    app->requests++;
    snprintf (app->raw, sizeof app->raw, "%s", sl_http_req_raw_path (req));
    sl_str_t body = sl_http_req_body (req);
    snprintf (app->seen, sizeof app->seen, "%s %s h=%s q=%s body=%.*s loopback=%d", sl_http_req_method (req),
              sl_http_req_path (req), sl_http_req_header (req, "X-Test") ? sl_http_req_header (req, "x-test") : "-",
              sl_http_req_query (req, "k") ? sl_http_req_query (req, "k") : "-", (int) body.len,
              body.ptr ? body.ptr : "", sl_http_req_loopback (req));
    sl_http_add_header (req, "X-Answer", "yes");
    if (!app->stream) {
        sl_http_respond (req, 201, "text/plain", "made", 4);
        return;
    }
    sl_http_stream_start (req, 200, "text/event-stream");
    sl_http_stream_write (req, "data: 1\n\n", 9);
    sl_http_stream_write (req, "data: 2\n\n", 9);
    sl_http_stream_end (req);
}

static void
s_on_closed (void *arg, sl_http_req_t *req, bool aborted)
{
    (void) arg;
    (void) req;
    (void) aborted;
}

typedef struct {
    sl_httpd_t *httpd;
    s_client_t *client;
} s_loop_t;

static int
s_tick (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_loop_t *l = arg;
    sl_httpd_run (l->httpd);
    return atomic_load (&l->client->done) ? -1 : 0;
}

static int
s_deadline (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    (void) arg;
    return -1;
}

//  Serve one client's request; what it read comes back in client->response.
static void
s_serve (s_app_t *app, s_client_t *client)
{
    zloop_t *loop = zloop_new ();
    sl_httpd_t *httpd = sl_httpd_new (loop, "127.0.0.1", 0, S_MAX_BODY, s_on_request, s_on_closed, app);
    cr_assert_not_null (httpd);
    client->port = sl_httpd_port (httpd);
    cr_assert_gt (client->port, 0);
    s_loop_t l = { httpd, client };
    zloop_timer (loop, S_TICK_MS, 0, s_tick, &l);
    zloop_timer (loop, S_DEADLINE_MS, 1, s_deadline, NULL);
    pthread_t thread;
    cr_assert_eq (pthread_create (&thread, NULL, s_client, client), 0);
    zloop_start (loop);
    pthread_join (thread, NULL);
    sl_httpd_destroy (&httpd);
    zloop_destroy (&loop);
}

Test (sl_httpd, a_request_reaches_the_application_and_its_answer_the_client)
{
    s_app_t app = { 0 };
    s_client_t client = { .request = "POST /v1/things?k=v HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Test: t1\r\n"
                                     "Content-Length: 5\r\nConnection: close\r\n\r\nhello" };
    s_serve (&app, &client);
    cr_expect_eq (app.requests, 1);
    cr_expect_str_eq (app.seen, "POST /v1/things h=t1 q=v body=hello loopback=1");
    cr_expect_eq (strncmp (client.response, "HTTP/1.1 201", 12), 0, "%s", client.response);
    cr_expect_not_null (strcasestr (client.response, "\r\nX-Answer: yes\r\n"), "%s", client.response);
    cr_expect_not_null (strstr (client.response, "\r\n\r\nmade"), "%s", client.response);
}

Test (sl_httpd, the_path_decoded_and_as_sent)
{
    s_app_t app = { 0 };
    s_client_t client = { .request = "POST /model/arn%3Aaws%3Abedrock%3A%3Ap%2Fx/converse?k=%41 HTTP/1.1\r\n"
                                     "Host: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n" };
    s_serve (&app, &client);
    cr_expect_eq (app.requests, 1);
    cr_expect_str_eq (app.seen, "POST /model/arn:aws:bedrock::p/x/converse h=- q=A body= loopback=1");
    cr_expect_str_eq (app.raw, "/model/arn%3Aaws%3Abedrock%3A%3Ap%2Fx/converse", "escapes kept, no query");
}

Test (sl_httpd, a_streamed_answer_arrives_in_chunks_and_ends)
{
    s_app_t app = { .stream = true };
    s_client_t client = { .request = "GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" };
    s_serve (&app, &client);
    cr_expect_eq (strncmp (client.response, "HTTP/1.1 200", 12), 0, "%s", client.response);
    cr_expect_not_null (strcasestr (client.response, "Transfer-Encoding: chunked"), "%s", client.response);
    const char *one = strstr (client.response, "data: 1"), *two = strstr (client.response, "data: 2");
    cr_expect (one && two && one < two, "%s", client.response);
    cr_expect_not_null (strstr (client.response, "\r\n0\r\n\r\n"), "the final chunk: %s", client.response);
}

Test (sl_httpd, a_body_over_the_limit_is_refused_before_the_application_sees_it)
{
    s_app_t app = { 0 };
    char request [512];
    char body [S_MAX_BODY + 2];
    memset (body, 'x', sizeof body - 1);
    body [sizeof body - 1] = 0;
    snprintf (request, sizeof request, "POST /v1/things HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %zu\r\n"
              "Connection: close\r\n\r\n%s", strlen (body), body);
    s_client_t client = { .request = request };
    s_serve (&app, &client);
    cr_expect_eq (app.requests, 0);
    cr_expect_eq (strncmp (client.response, "HTTP/1.1 413", 12), 0, "%s", client.response);
}
