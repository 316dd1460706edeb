/*  token_server.h - a credential endpoint for the unit tests of the cloud
    credential sources (sl_awscreds, sl_gcptoken): a real HTTP server on a
    free loopback port (sl_httpd) in the test's reactor, answering every
    request with the status and body set, and keeping the last request
    (method, path, its headers of interest, body) for the test to check.
    Header-only.
*/
#ifndef TOKEN_SERVER_H
#define TOKEN_SERVER_H

#include <criterion/criterion.h>
#include <czmq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/http/sl_httpd.h"

#define TOKEN_SERVER_MAX_BODY (64u << 10)

typedef struct {
    sl_httpd_t *httpd;
    int port;
    int requests;                       //  answered so far
    int status;                         //  what to answer
    char answer [8192];
    char method [16];
    char path [256];
    char content_type [128];
    char metadata_flavor [64];
    char *body;                         //  the last request's body (NUL-terminated)
} token_server_t;

static inline void
token_server_on_request (void *arg, sl_http_req_t *req)
{
    token_server_t *s = arg;
    const char *ct = sl_http_req_header (req, "Content-Type");
    const char *mf = sl_http_req_header (req, "Metadata-Flavor");
    snprintf (s->method, sizeof s->method, "%s", sl_http_req_method (req));
    snprintf (s->path, sizeof s->path, "%s", sl_http_req_path (req));
    snprintf (s->content_type, sizeof s->content_type, "%s", ct ? ct : "");
    snprintf (s->metadata_flavor, sizeof s->metadata_flavor, "%s", mf ? mf : "");
    sl_str_t body = sl_http_req_body (req);
    free (s->body);
    s->body = strndup (body.ptr ? body.ptr : "", body.len);
    s->requests++;
    sl_http_respond (req, s->status, "application/json", s->answer, strlen (s->answer));
}

static inline void
token_server_on_closed (void *arg, sl_http_req_t *req, bool aborted)
{
    (void) arg;
    (void) req;
    (void) aborted;
}

static inline void
token_server_start (token_server_t *s, zloop_t *loop)
{
    memset (s, 0, sizeof *s);
    s->status = 200;
    s->httpd = sl_httpd_new (loop, "127.0.0.1", 0, TOKEN_SERVER_MAX_BODY,
                             token_server_on_request, token_server_on_closed, s);
    cr_assert_not_null (s->httpd);
    s->port = sl_httpd_port (s->httpd);
}

static inline void
token_server_stop (token_server_t *s)
{
    sl_httpd_destroy (&s->httpd);
    free (s->body);
    s->body = NULL;
}

//  Run the loop until *count reaches want, at most ms.
typedef struct {
    const int *count;
    int want;
} token_server_until_t;

static inline int
token_server_on_check (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    token_server_until_t *u = arg;
    return *u->count >= u->want ? -1 : 0;
}

static inline int
token_server_on_deadline (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    (void) arg;
    return -1;
}

static inline void
token_server_run (zloop_t *loop, const int *count, int want, int ms)
{
    token_server_until_t u = { count, want };
    int check = zloop_timer (loop, 5, 0, token_server_on_check, &u);
    int deadline = zloop_timer (loop, (size_t) ms, 1, token_server_on_deadline, NULL);
    zloop_start (loop);
    zloop_timer_end (loop, check);
    zloop_timer_end (loop, deadline);
}

#endif
