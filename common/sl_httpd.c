/*  sl_httpd.c - libmicrohttpd in external-epoll mode inside zloop.

    See sl_httpd.h for the model. Two descriptors join the reactor: MHD's own
    epoll fd (listening socket, active connections, the resume signal) and
    our hang-up watch, an epoll fd holding the sockets of dispatched requests
    with EPOLLRDHUP.
*/
#include "sl_httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sl_alloc.h"
#include "sl_buf.h"
#include "sl_log.h"

#define SL_HTTPD_TICK_MS 250            //  housekeeping MHD_run (timeouts)
#define SL_HTTPD_IDLE_TIMEOUT_S 120     //  idle keep-alive connections close
#define SL_HTTPD_STREAM_BLOCK 8192      //  max bytes per content-reader call (MHD holds a buffer this size per streaming response)
#define SL_HTTPD_CONN_MEMORY 16384     //  MHD's pool per connection: request headers, read buffer
#define SL_HTTPD_DEFAULT_CAP (8u << 20) //  default stream buffer cap
#define SL_HTTPD_RUN_REPEAT 8           //  re-runs in one turn while MHD has work pending
#define SL_HTTPD_MAX_EVENTS 64

typedef enum {
    REQ_READING,                        //  receiving the body
    REQ_WAITING,                        //  dispatched, no response yet
    REQ_QUEUED,                         //  a response is queued with MHD
} s_req_state_t;

typedef struct {
    char *name;
    char *value;
} s_header_t;

struct _sl_http_req_t {
    sl_httpd_t *httpd;
    struct MHD_Connection *conn;
    char *method;
    char *path;
    sl_buf_t body;                      //  request body
    bool too_large;                     //  body over the limit
    s_req_state_t state;
    bool dispatched;                    //  on_request was called
    bool suspended;                     //  MHD connection suspended by us
    bool aborted;                       //  client gone or stream aborted
    bool watched;                       //  socket is in the hang-up watch
    int fd;                             //  the connection's socket
    void *data;                         //  application's
    //  Pending response (set by the application, queued by the handler)
    struct MHD_Response *response;
    int status;
    s_header_t *headers;
    size_t header_count;
    //  Streaming
    bool streaming;
    bool stream_ended;
    sl_buf_t out;                       //  bytes not yet taken by MHD
    size_t out_off;                     //  bytes of out already taken
};

struct _sl_httpd_t {
    zloop_t *loop;
    struct MHD_Daemon *daemon;
    int port;
    size_t max_body;
    size_t stream_cap;
    bool dispatch_oversize;             //  on_request answers bodies over the limit
    size_t active;                      //  requests alive
    sl_httpd_request_fn *on_request;
    sl_httpd_closed_fn *on_closed;
    void *arg;
    zmq_pollitem_t mhd_item;            //  MHD's epoll fd
    zmq_pollitem_t watch_item;          //  our hang-up watch epoll fd
    int watch_fd;
    int tick_timer;
    int kick_fd;                        //  eventfd: MHD has work now, run it next turn
    zmq_pollitem_t kick_item;
    bool kick_pending;
    int soon_timer;                     //  one-shot for a short MHD timeout, -1 none
};

static void s_run (sl_httpd_t *self);
static int s_on_soon (zloop_t *loop, int timer_id, void *arg);

//  --------------------------------------------------------------------------
//  Hang-up watch

static void
s_watch (sl_http_req_t *req)
{
    if (req->watched || req->fd < 0)
        return;
    struct epoll_event ev = { .events = EPOLLRDHUP, .data.ptr = req };
    if (epoll_ctl (req->httpd->watch_fd, EPOLL_CTL_ADD, req->fd, &ev) == 0)
        req->watched = true;
}

static void
s_unwatch (sl_http_req_t *req)
{
    if (!req->watched)
        return;
    epoll_ctl (req->httpd->watch_fd, EPOLL_CTL_DEL, req->fd, NULL);
    req->watched = false;
}

static void
s_resume (sl_http_req_t *req)
{
    if (req->suspended) {
        req->suspended = false;
        MHD_resume_connection (req->conn);
    }
}

static int
s_on_watch (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    (void) loop;
    (void) item;
    sl_httpd_t *self = arg;
    struct epoll_event events [SL_HTTPD_MAX_EVENTS];
    int n = epoll_wait (self->watch_fd, events, SL_HTTPD_MAX_EVENTS, 0);
    for (int i = 0; i < n; i++) {
        sl_http_req_t *req = events [i].data.ptr;
        s_unwatch (req);
        req->aborted = true;
        s_resume (req);                 //  let MHD notice and close it
    }
    if (n > 0)
        s_run (self);
    return 0;
}

//  --------------------------------------------------------------------------
//  MHD callbacks

static ssize_t
s_reader (void *cls, uint64_t pos, char *buf, size_t max)
{
    (void) pos;
    sl_http_req_t *req = cls;
    if (req->aborted)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    size_t avail = req->out.len - req->out_off;
    if (avail) {
        size_t n = avail < max ? avail : max;
        memcpy (buf, req->out.data + req->out_off, n);
        req->out_off += n;
        if (req->out_off == req->out.len) {
            req->out.len = 0;
            req->out_off = 0;
            sl_buf_shrink (&req->out, 4 * SL_HTTPD_STREAM_BLOCK);
        }
        return (ssize_t) n;
    }
    if (req->stream_ended)
        return MHD_CONTENT_READER_END_OF_STREAM;
    //  Nothing to send yet: park the connection until the next write.
    MHD_suspend_connection (req->conn);
    req->suspended = true;
    return 0;
}

static enum MHD_Result
s_queue (sl_http_req_t *req)
{
    for (size_t i = 0; i < req->header_count; i++)
        MHD_add_response_header (req->response, req->headers [i].name, req->headers [i].value);
    enum MHD_Result rc = MHD_queue_response (req->conn, (unsigned) req->status, req->response);
    MHD_destroy_response (req->response);
    req->response = NULL;
    req->state = REQ_QUEUED;
    return rc;
}

static enum MHD_Result
s_handler (void *cls, struct MHD_Connection *conn, const char *url,
           const char *method, const char *version, const char *upload_data,
           size_t *upload_data_size, void **con_cls)
{
    (void) version;
    sl_httpd_t *self = cls;
    sl_http_req_t *req = *con_cls;
    if (!req) {
        req = sl_xcalloc (1, sizeof *req);
        req->httpd = self;
        req->conn = conn;
        req->method = sl_xstrdup (method);
        req->path = sl_xstrdup (url);
        req->fd = -1;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info (conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci)
            req->fd = ci->connect_fd;
        self->active++;
        *con_cls = req;
        return MHD_YES;
    }
    if (req->state == REQ_READING && *upload_data_size) {
        if (req->too_large || req->body.len + *upload_data_size > self->max_body) {
            req->too_large = true;
            sl_buf_free (&req->body);   //  never kept: the limit bounds memory
        }
        else
            sl_buf_append (&req->body, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (req->state == REQ_READING) {
        req->state = REQ_WAITING;
        if (req->too_large && !self->dispatch_oversize) {
            static const char msg [] =
                "{\"error\":{\"type\":\"request_too_large\",\"message\":\"request body is over the limit\"}}";
            req->dispatched = true;
            sl_http_respond (req, 413, "application/json", msg, sizeof msg - 1);
        }
        else {
            req->dispatched = true;
            self->on_request (self->arg, req);
        }
    }
    if (req->aborted)
        return MHD_NO;                  //  client left before the answer
    if (req->response)
        return s_queue (req);
    //  No answer yet: park until the application responds.
    s_watch (req);
    MHD_suspend_connection (conn);
    req->suspended = true;
    return MHD_YES;
}

static void
s_free_req (sl_http_req_t *req)
{
    s_unwatch (req);
    if (req->response)
        MHD_destroy_response (req->response);
    for (size_t i = 0; i < req->header_count; i++) {
        free (req->headers [i].name);
        free (req->headers [i].value);
    }
    free (req->headers);
    sl_buf_free (&req->body);
    sl_buf_free (&req->out);
    free (req->method);
    free (req->path);
    req->httpd->active--;
    free (req);
}

static void
s_completed (void *cls, struct MHD_Connection *conn, void **con_cls,
             enum MHD_RequestTerminationCode toe)
{
    (void) conn;
    sl_httpd_t *self = cls;
    sl_http_req_t *req = *con_cls;
    if (!req)
        return;
    *con_cls = NULL;
    s_unwatch (req);
    bool aborted = toe != MHD_REQUEST_TERMINATED_COMPLETED_OK || req->aborted;
    req->aborted = true;                //  no more writes
    if (req->dispatched && self->on_closed)
        self->on_closed (self->arg, req, aborted);
    s_free_req (req);
}

static void
s_mhd_log (void *cls, const char *fm, va_list ap)
{
    (void) cls;
    char line [512];
    vsnprintf (line, sizeof line, fm, ap);
    size_t n = strlen (line);
    while (n && (line [n - 1] == '\n' || line [n - 1] == '\r'))
        line [--n] = 0;
    sl_log_warn ("http_server", "%s", line);
}

//  --------------------------------------------------------------------------
//  Reactor glue

static int
s_on_soon (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_httpd_t *self = arg;
    self->soon_timer = -1;
    s_run (self);
    return 0;
}

//  Run MHD. When it still has work (timeout 0) after a few rounds, come
//  back next reactor turn through the eventfd, so a large response keeps
//  flowing without starving the rest of the reactor; a short timeout gets
//  a one-shot timer.
static void
s_run (sl_httpd_t *self)
{
    MHD_UNSIGNED_LONG_LONG timeout = 0;
    bool known = false;
    for (int i = 0; i < SL_HTTPD_RUN_REPEAT; i++) {
        MHD_run (self->daemon);
        known = MHD_get_timeout (self->daemon, &timeout) == MHD_YES;
        if (!known || timeout > 0)
            break;
    }
    if (!known)
        return;
    if (timeout == 0) {
        if (!self->kick_pending) {
            uint64_t one = 1;
            self->kick_pending = write (self->kick_fd, &one, sizeof one) == sizeof one;
        }
    }
    else
    if (timeout < SL_HTTPD_TICK_MS && self->soon_timer < 0)
        self->soon_timer = zloop_timer (self->loop, (size_t) timeout, 1, s_on_soon, self);
}

static int
s_on_kick (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    (void) loop;
    (void) item;
    sl_httpd_t *self = arg;
    uint64_t count;
    if (read (self->kick_fd, &count, sizeof count) > 0)
        self->kick_pending = false;
    s_run (self);
    return 0;
}

static int
s_on_mhd (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    (void) loop;
    (void) item;
    s_run ((sl_httpd_t *) arg);
    return 0;
}

static int
s_on_tick (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_run ((sl_httpd_t *) arg);
    return 0;
}

sl_httpd_t *
sl_httpd_new (zloop_t *loop, const char *host, int port, size_t max_body,
              sl_httpd_request_fn *on_request, sl_httpd_closed_fn *on_closed, void *arg)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons ((uint16_t) port) };
    if (inet_pton (AF_INET, host, &addr.sin_addr) != 1) {
        sl_log_error ("http_listen_failed", "not an IPv4 address: %s", host);
        return NULL;
    }
    sl_httpd_t *self = sl_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->max_body = max_body;
    self->stream_cap = SL_HTTPD_DEFAULT_CAP;
    self->on_request = on_request;
    self->on_closed = on_closed;
    self->arg = arg;
    self->daemon = MHD_start_daemon (
        MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO | MHD_USE_ERROR_LOG,
        (uint16_t) port, NULL, NULL, s_handler, self,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &addr,
        MHD_OPTION_NOTIFY_COMPLETED, s_completed, self,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) SL_HTTPD_IDLE_TIMEOUT_S,
        MHD_OPTION_EXTERNAL_LOGGER, s_mhd_log, NULL,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int) 1024,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) SL_HTTPD_CONN_MEMORY,
        MHD_OPTION_END);
    if (!self->daemon) {
        sl_log_error ("http_listen_failed", "cannot listen on %s:%d", host, port);
        free (self);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info (self->daemon, MHD_DAEMON_INFO_BIND_PORT);
    self->port = info ? info->port : port;
    info = MHD_get_daemon_info (self->daemon, MHD_DAEMON_INFO_EPOLL_FD);
    self->mhd_item = (zmq_pollitem_t) { .socket = NULL, .fd = info->epoll_fd, .events = ZMQ_POLLIN };
    self->watch_fd = epoll_create1 (EPOLL_CLOEXEC);
    self->watch_item = (zmq_pollitem_t) { .socket = NULL, .fd = self->watch_fd, .events = ZMQ_POLLIN };
    self->kick_fd = eventfd (0, EFD_NONBLOCK | EFD_CLOEXEC);
    self->kick_item = (zmq_pollitem_t) { .socket = NULL, .fd = self->kick_fd, .events = ZMQ_POLLIN };
    self->soon_timer = -1;
    zloop_poller (loop, &self->mhd_item, s_on_mhd, self);
    zloop_poller (loop, &self->watch_item, s_on_watch, self);
    zloop_poller (loop, &self->kick_item, s_on_kick, self);
    self->tick_timer = zloop_timer (loop, SL_HTTPD_TICK_MS, 0, s_on_tick, self);
    return self;
}

void
sl_httpd_destroy (sl_httpd_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_httpd_t *self = *self_p;
    zloop_poller_end (self->loop, &self->mhd_item);
    zloop_poller_end (self->loop, &self->watch_item);
    zloop_poller_end (self->loop, &self->kick_item);
    zloop_timer_end (self->loop, self->tick_timer);
    if (self->soon_timer >= 0)
        zloop_timer_end (self->loop, self->soon_timer);
    //  Stopping the daemon completes every request (on_closed, aborted).
    MHD_stop_daemon (self->daemon);
    close (self->watch_fd);
    close (self->kick_fd);
    free (self);
    *self_p = NULL;
}

int
sl_httpd_port (sl_httpd_t *self)
{
    return self->port;
}

void
sl_httpd_run (sl_httpd_t *self)
{
    s_run (self);
}

void
sl_httpd_set_stream_cap (sl_httpd_t *self, size_t cap)
{
    self->stream_cap = cap;
}

void
sl_httpd_dispatch_oversize (sl_httpd_t *self, bool dispatch)
{
    self->dispatch_oversize = dispatch;
}

size_t
sl_httpd_active (sl_httpd_t *self)
{
    return self->active;
}

//  --------------------------------------------------------------------------
//  Request accessors

const char *
sl_http_req_method (sl_http_req_t *req)
{
    return req->method;
}

const char *
sl_http_req_path (sl_http_req_t *req)
{
    return req->path;
}

const char *
sl_http_req_header (sl_http_req_t *req, const char *name)
{
    return MHD_lookup_connection_value (req->conn, MHD_HEADER_KIND, name);
}

const char *
sl_http_req_query (sl_http_req_t *req, const char *name)
{
    return MHD_lookup_connection_value (req->conn, MHD_GET_ARGUMENT_KIND, name);
}

typedef struct {
    void (*fn) (void *arg, const char *name, const char *value);
    void *arg;
} s_header_walk_t;

static enum MHD_Result
s_header_cb (void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void) kind;
    s_header_walk_t *walk = cls;
    walk->fn (walk->arg, key, value ? value : "");
    return MHD_YES;
}

void
sl_http_req_headers (sl_http_req_t *req,
                     void (*fn) (void *arg, const char *name, const char *value), void *arg)
{
    s_header_walk_t walk = { fn, arg };
    MHD_get_connection_values (req->conn, MHD_HEADER_KIND, s_header_cb, &walk);
}

sl_str_t
sl_http_req_body (sl_http_req_t *req)
{
    return sl_buf_str (&req->body);
}

bool
sl_http_req_too_large (sl_http_req_t *req)
{
    return req->too_large;
}

void
sl_http_req_set_data (sl_http_req_t *req, void *data)
{
    req->data = data;
}

void *
sl_http_req_data (sl_http_req_t *req)
{
    return req->data;
}

bool
sl_http_req_aborted (sl_http_req_t *req)
{
    return req->aborted;
}

//  --------------------------------------------------------------------------
//  Responses

void
sl_http_add_header (sl_http_req_t *req, const char *name, const char *value)
{
    req->headers = sl_xrealloc (req->headers, (req->header_count + 1) * sizeof (s_header_t));
    req->headers [req->header_count].name = sl_xstrdup (name);
    req->headers [req->header_count].value = sl_xstrdup (value);
    req->header_count++;
}

static int
s_set_response (sl_http_req_t *req, int status, const char *content_type,
                struct MHD_Response *response)
{
    if (content_type)
        MHD_add_response_header (response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    req->response = response;
    req->status = status;
    s_resume (req);                     //  the handler queues it when re-entered
    return 0;
}

int
sl_http_respond (sl_http_req_t *req, int status, const char *content_type,
                 const void *body, size_t size)
{
    if (req->response || req->state == REQ_QUEUED || req->aborted)
        return -1;
    struct MHD_Response *r = MHD_create_response_from_buffer (size, (void *) body,
                                                             MHD_RESPMEM_MUST_COPY);
    if (!r)
        return -1;
    s_unwatch (req);
    return s_set_response (req, status, content_type, r);
}

int
sl_http_stream_start (sl_http_req_t *req, int status, const char *content_type)
{
    if (req->response || req->state == REQ_QUEUED || req->aborted)
        return -1;
    struct MHD_Response *r = MHD_create_response_from_callback (
        MHD_SIZE_UNKNOWN, SL_HTTPD_STREAM_BLOCK, s_reader, req, NULL);
    if (!r)
        return -1;
    req->streaming = true;
    MHD_add_response_header (r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    return s_set_response (req, status, content_type, r);
}

int
sl_http_stream_write (sl_http_req_t *req, const void *data, size_t size)
{
    if (!req->streaming || req->aborted || req->stream_ended)
        return -1;
    if (req->out.len - req->out_off + size > req->httpd->stream_cap) {
        sl_http_stream_abort (req);
        return -1;
    }
    if (req->out_off && req->out_off == req->out.len) {
        req->out.len = 0;
        req->out_off = 0;
    }
    sl_buf_append (&req->out, data, size);
    if (req->state == REQ_QUEUED)
        s_resume (req);
    return 0;
}

void
sl_http_stream_end (sl_http_req_t *req)
{
    if (!req->streaming || req->stream_ended)
        return;
    req->stream_ended = true;
    if (req->state == REQ_QUEUED)
        s_resume (req);
}

void
sl_http_stream_abort (sl_http_req_t *req)
{
    req->aborted = true;
    s_unwatch (req);
    //  MHD may not look at a connection it is not waiting on for a long
    //  time; the peer must see the close now.
    if (req->fd >= 0)
        shutdown (req->fd, SHUT_RDWR);
    s_resume (req);
}

size_t
sl_http_stream_buffered (sl_http_req_t *req)
{
    return req->out.len - req->out_off;
}

bool
sl_http_stream_drained (sl_http_req_t *req)
{
    //  Parked by the reader with nothing left: MHD took every byte.
    return req->suspended && req->out.len == req->out_off;
}
