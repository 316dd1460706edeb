/*  sl_httpd.h - an HTTP/1.1 server inside the zloop reactor (libmicrohttpd).

    The gateway serves clients with it, every process serves /healthz and
    /metrics with it, and the mock serves its scripted streams with it.

    libmicrohttpd runs in "external epoll" mode: its epoll descriptor is one
    poller in the process's zloop, so HTTP, ZeroMQ and libcurl share one
    reactor and one thread. A response is either whole (sl_http_respond) or
    streamed with chunked encoding (sl_http_stream_*), written whenever the
    application has bytes; a streaming connection is suspended in MHD while
    its buffer is empty.

    Lifecycle of a request: on_request is called once the body is complete;
    the application answers then or later. on_closed is called exactly once
    per dispatched request, when the response was fully sent (aborted =
    false) or the client went away / the connection failed (aborted = true).
    After on_closed returns the request is freed. A suspended connection is
    not polled by MHD, so sl_httpd also watches each dispatched request's
    socket for the peer's hang-up (EPOLLRDHUP): a client that disconnects is
    noticed at once, even while nothing is being written to it.
*/
#ifndef SL_HTTPD_H
#define SL_HTTPD_H

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>

#include "sl_str.h"

typedef struct _sl_httpd_t sl_httpd_t;
typedef struct _sl_http_req_t sl_http_req_t;

typedef void (sl_httpd_request_fn) (void *arg, sl_http_req_t *req);
typedef void (sl_httpd_closed_fn) (void *arg, sl_http_req_t *req, bool aborted);

//  Listen on host:port (port 0 picks a free port). Bodies over max_body get
//  413 without reaching on_request. NULL when the port cannot be bound.
sl_httpd_t *sl_httpd_new (zloop_t *loop, const char *host, int port, size_t max_body,
                          sl_httpd_request_fn *on_request, sl_httpd_closed_fn *on_closed,
                          void *arg);
void sl_httpd_destroy (sl_httpd_t **self_p);
int sl_httpd_port (sl_httpd_t *self);
//  Let MHD process what the application queued in this reactor turn.
void sl_httpd_run (sl_httpd_t *self);
//  Cap on bytes buffered for one streaming response (slow readers).
void sl_httpd_set_stream_cap (sl_httpd_t *self, size_t cap);
//  Dispatch requests whose body is over max_body to on_request (with an
//  empty body and sl_http_req_too_large true) instead of answering 413
//  here, so the application can answer in its own format.
void sl_httpd_dispatch_oversize (sl_httpd_t *self, bool dispatch);
size_t sl_httpd_active (sl_httpd_t *self);

const char *sl_http_req_method (sl_http_req_t *req);
//  The path, without the query string.
const char *sl_http_req_path (sl_http_req_t *req);
//  A request header (case-insensitive) or NULL.
const char *sl_http_req_header (sl_http_req_t *req, const char *name);
//  A query-string argument or NULL.
const char *sl_http_req_query (sl_http_req_t *req, const char *name);
//  Call fn for every request header.
void sl_http_req_headers (sl_http_req_t *req,
                          void (*fn) (void *arg, const char *name, const char *value),
                          void *arg);
sl_str_t sl_http_req_body (sl_http_req_t *req);
//  True when the body was over the limit (and was not kept).
bool sl_http_req_too_large (sl_http_req_t *req);
void sl_http_req_set_data (sl_http_req_t *req, void *data);
void *sl_http_req_data (sl_http_req_t *req);

//  Add a header to the response (before respond / stream_start).
void sl_http_add_header (sl_http_req_t *req, const char *name, const char *value);
//  A whole response; the body is copied. 0 ok, -1 already answered.
int sl_http_respond (sl_http_req_t *req, int status, const char *content_type,
                     const void *body, size_t size);
//  Start a chunked streaming response. 0 ok, -1 already answered.
int sl_http_stream_start (sl_http_req_t *req, int status, const char *content_type);
//  Queue bytes on a streaming response. 0 ok; -1 when the client is gone or
//  the buffered bytes would exceed the cap (the stream is then aborted).
int sl_http_stream_write (sl_http_req_t *req, const void *data, size_t size);
//  Finish a streaming response once the buffer is drained.
void sl_http_stream_end (sl_http_req_t *req);
//  Abort a streaming response (connection closed without the final chunk).
void sl_http_stream_abort (sl_http_req_t *req);
size_t sl_http_stream_buffered (sl_http_req_t *req);
//  Everything written so far went out to the connection (handed to the
//  socket); what is written next leaves in a write of its own.
bool sl_http_stream_drained (sl_http_req_t *req);
//  True once the client is known to be gone.
bool sl_http_req_aborted (sl_http_req_t *req);

#endif
