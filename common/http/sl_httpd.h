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

    The front door. Every connection is tracked from its accept to its
    close, in one of three states: reading a request (from the accept, or
    from the first byte after the previous answer, until its head and body
    are complete), idle between requests (keep-alive), or busy (its request
    was dispatched and its answer is under way).

      - A request's head and body must arrive within the request timeout
        of its first byte (of the accept, for a new connection); trickling
        bytes does not extend it (MHD's own timeout, 120 s, is reset by
        every byte, and governs idle connections only). Counted.
      - Limits (sl_httpd_new_with): connections from one client address,
        and in all. A connection beyond a limit makes room by closing the
        oldest connection that has no request under way (reading or idle),
        of that address for the address limit, of any for the total; the
        total starts making room 1/16 below the limit, so a new client is
        served while the oldest unfinished requests are the ones to go.
        Busy connections are never closed to make room: when there is no
        other, the new connection is refused (closed at once). Counted.
      - A request with more than one Content-Length, more than one
        Transfer-Encoding, both, a Content-Length that is not a number or
        a Transfer-Encoding other than chunked is answered 400 before its
        body is read, and the connection is closed after the answer (what
        follows could be read as another request: request smuggling).
*/
#ifndef SL_HTTPD_H
#define SL_HTTPD_H

#include <czmq.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/base/sl_metrics.h"
#include "common/base/sl_str.h"

typedef struct _sl_httpd_t sl_httpd_t;
typedef struct _sl_http_req_t sl_http_req_t;

typedef void (sl_httpd_request_fn) (void *arg, sl_http_req_t *req);
typedef void (sl_httpd_closed_fn) (void *arg, sl_http_req_t *req, bool aborted);

#define SL_HTTPD_REQUEST_TIMEOUT_MS 60000  //  default: a request's head and body within this

//  Limits on client connections; 0 in a count means no limit of ours: the
//  server then holds as many connections as the process's open-files
//  limit leaves room for (sl_fdlimit_share), never MHD's default of ~1000
//  (past which MHD stops accepting and new clients wait unanswered).
typedef struct {
    size_t max_conns;                   //  connections in all
    size_t max_conns_per_ip;            //  connections from one client address
    long request_timeout_ms;            //  head and body of a request within this (0: the default)
} sl_httpd_limits_t;

//  Counters sl_httpd increments (registered by the application in its
//  metrics; any may be NULL).
typedef struct {
    sl_counter_t *evicted;              //  connections closed to make room for a new one
    sl_counter_t *refused;              //  connections refused: at a limit with none to close
    sl_counter_t *request_timeouts;     //  connections closed for a request not complete in time
    sl_counter_t *bad_framing;          //  requests refused for their Content-Length / Transfer-Encoding
} sl_httpd_counters_t;

//  Listen on host:port (port 0 picks a free port). Bodies over max_body get
//  413 without reaching on_request. NULL when the port cannot be bound.
//  The default limits: none but the request timeout.
sl_httpd_t *sl_httpd_new (zloop_t *loop, const char *host, int port, size_t max_body,
                          sl_httpd_request_fn *on_request, sl_httpd_closed_fn *on_closed,
                          void *arg);
//  The same with connection limits (NULL: the defaults).
sl_httpd_t *sl_httpd_new_with (zloop_t *loop, const char *host, int port, size_t max_body,
                               const sl_httpd_limits_t *limits,
                               sl_httpd_request_fn *on_request, sl_httpd_closed_fn *on_closed,
                               void *arg);
void sl_httpd_destroy (sl_httpd_t **self_p);
int sl_httpd_port (sl_httpd_t *self);
//  Let MHD process what the application queued in this reactor turn.
void sl_httpd_run (sl_httpd_t *self);
//  Cap on bytes buffered for one streaming response (slow readers).
void sl_httpd_set_stream_cap (sl_httpd_t *self, size_t cap);
//  Dispatch requests whose body is over max_body (with an empty body and
//  sl_http_req_too_large true), and requests refused for their framing
//  (sl_http_req_bad_framing, at once, before the body), to on_request
//  instead of answering 413 / 400 here, so the application can answer in
//  its own format. It must answer them at once.
void sl_httpd_dispatch_oversize (sl_httpd_t *self, bool dispatch);
void sl_httpd_set_counters (sl_httpd_t *self, const sl_httpd_counters_t *counters);
//  Bytes of request bodies held (until a request ends or its body is dropped).
size_t sl_httpd_body_bytes (sl_httpd_t *self);
//  Client connections open (those being closed to make room not counted).
size_t sl_httpd_connections (sl_httpd_t *self);
//  Requests alive: being read, or answered and not yet completed (a drain
//  waits for the last bytes of its answers to leave).
size_t sl_httpd_requests (sl_httpd_t *self);
//  Stop accepting connections (a drain): the listening socket is closed,
//  so a new client is refused at once, while the connections open go on.
//  0 ok (or already done), -1 when libmicrohttpd would not.
int sl_httpd_quiesce (sl_httpd_t *self);

const char *sl_http_req_method (sl_http_req_t *req);
//  The path, without the query string.
const char *sl_http_req_path (sl_http_req_t *req);
//  The same path as the request line sent it, its %XX escapes kept (what
//  a signature over the path was made on).
const char *sl_http_req_raw_path (sl_http_req_t *req);
//  A request header (case-insensitive) or NULL.
const char *sl_http_req_header (sl_http_req_t *req, const char *name);
//  A query-string argument or NULL.
const char *sl_http_req_query (sl_http_req_t *req, const char *name);
//  Call fn for every request header.
void sl_http_req_headers (sl_http_req_t *req,
                          void (*fn) (void *arg, const char *name, const char *value),
                          void *arg);
sl_str_t sl_http_req_body (sl_http_req_t *req);
//  The application is done with the body: free it now, not with the
//  request (a streaming response lives long, and an agent's request
//  carries its whole conversation). sl_http_req_body is empty after.
void sl_http_req_drop_body (sl_http_req_t *req);
//  True when the client connected from this machine (127.0.0.0/8).
bool sl_http_req_loopback (sl_http_req_t *req);
//  True when the body was over the limit (and was not kept).
bool sl_http_req_too_large (sl_http_req_t *req);
//  Why the request's framing was refused (ambiguous Content-Length /
//  Transfer-Encoding), or NULL. Its body was not read; the connection is
//  closed after the answer.
const char *sl_http_req_bad_framing (sl_http_req_t *req);
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
