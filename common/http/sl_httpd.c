/*  sl_httpd.c - libmicrohttpd in external-epoll mode inside zloop.

    See sl_httpd.h for the model. Two descriptors join the reactor: MHD's own
    epoll fd (listening socket, active connections, the resume signal) and
    our hang-up watch, an epoll fd holding the sockets of dispatched requests
    with EPOLLRDHUP.

    Connections are tracked through MHD's connection notifications (each
    gets an s_conn_t as its socket context) and its accept policy, where the
    limits are applied. Connections without a request under way (reading or
    idle) sit in a list, oldest first, one for the server and one per client
    address: the first to close when room is needed. A connection is closed
    from outside MHD by shutting its socket down; MHD sees the end of the
    stream and closes it. The housekeeping tick checks request deadlines and
    notices idle connections that started a new request, from the kernel's
    count of bytes received on the socket (TCP_INFO): a byte MHD read before
    we looked is still counted there.
*/
#include "common/http/sl_httpd.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_fdlimit.h"
#include "common/base/sl_log.h"
#include "common/base/sl_sidmap.h"
#include "common/http/sl_tcpinfo.h"

#define SL_HTTPD_TICK_MS 250            //  housekeeping MHD_run (timeouts)
#define SL_HTTPD_IDLE_TIMEOUT_S 120     //  idle keep-alive connections close
//  MHD allocates (and zeroes) a buffer of this size with every streaming
//  response, but fills it only for a client without chunked encoding
//  (HTTP/1.0): a chunked response is read straight into the connection's
//  own write buffer (its pool), whatever this says. 8 KiB here was a third
//  of the gateway's memory per live stream, for nothing.
#define SL_HTTPD_STREAM_BLOCK 1024      //  bytes per content-reader call without chunked encoding
#define SL_HTTPD_OUT_KEEP 32768         //  a drained stream's buffer keeps at most this much room
#define SL_HTTPD_CONN_MEMORY 16384     //  MHD's pool per connection: request headers, read buffer
#define SL_HTTPD_DEFAULT_CAP (8u << 20) //  default stream buffer cap
#define SL_HTTPD_RUN_REPEAT 8           //  re-runs in one turn while MHD has work pending
#define SL_HTTPD_MAX_EVENTS 64
#define SL_HTTPD_CLOSING_SLACK 64       //  MHD's limit over ours: connections we shut down, not yet closed by MHD
#define SL_HTTPD_HEADROOM_SHARE 16      //  the total limit makes room from 1/16 below it
#define SL_HTTPD_PEER_KEY 16            //  bytes of a client address key (an sl_sidmap key)
#define SL_HTTPD_LOG_EVERY_MS 1000      //  at most one log line a second about refused clients
//  What the kernel may hold for a client that does not read: set on each
//  connection (the kernel doubles it), not left to grow to
//  net.ipv4.tcp_wmem's maximum (4 MiB by default) per connection, so a
//  slow reader's bytes are bounded in the kernel as in the stream's cap,
//  and the cap, not the kernel, is what a reader that stalls meets.
#define SL_HTTPD_SNDBUF (128 * 1024)

typedef enum {
    CONN_READING,                       //  a request's head or body under way (or nothing yet on a new connection)
    CONN_IDLE,                          //  keep-alive, between requests
    CONN_BUSY,                          //  a request dispatched, its answer under way
    CONN_CLOSING                        //  shut down by us; MHD closes it
} s_conn_state_t;

typedef struct _s_conn_t s_conn_t;
typedef struct _s_peer_t s_peer_t;

//  One client connection, MHD's socket context for it.
struct _s_conn_t {
    sl_httpd_t *httpd;
    int fd;
    s_peer_t *peer;
    s_conn_state_t state;
    int64_t started;                    //  ms: the current request's first byte (READING)
    uint64_t received;                  //  bytes the socket had received when it went idle
    bool listed;                        //  in the lists of connections that may be closed
    s_conn_t *prev, *next;              //  the server's list, oldest first
    s_conn_t *peer_prev, *peer_next;    //  the client address's list
};

//  One client address.
struct _s_peer_t {
    uint8_t key [SL_HTTPD_PEER_KEY];
    size_t count;                       //  its connections, those we are closing not counted
    size_t refs;                        //  its connections, all of them
    s_conn_t *oldest, *newest;          //  its connections without a request under way
};

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
    char *raw_path;                     //  the path as sent, its escapes kept
    bool fresh;                         //  only raw_path is set: the handler has not seen it
    sl_buf_t body;                      //  request body
    bool too_large;                     //  body over the limit
    const char *bad_framing;            //  why the framing was refused, or NULL
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
    sl_http_req_t *prev, *next;         //  the server's live requests
};

struct _sl_httpd_t {
    zloop_t *loop;
    struct MHD_Daemon *daemon;
    int port;
    size_t max_body;
    size_t stream_cap;
    bool dispatch_oversize;             //  on_request answers bodies over the limit
    size_t active;                      //  requests alive
    sl_http_req_t *requests;            //  them, newest first (resumed before the daemon stops)
    size_t body_bytes;                  //  request bodies held
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
    //  The front door
    sl_httpd_limits_t limits;
    size_t headroom;                    //  the total limit makes room this far below it
    sl_httpd_counters_t counters;
    size_t live;                        //  connections open, those we are closing not counted
    s_conn_t *oldest, *newest;          //  connections without a request under way
    sl_sidmap_t *peers;                 //  client address key -> s_peer_t
    int64_t timeouts_logged;            //  ms, the last log line about request timeouts
    int64_t framing_logged;             //  ms, the last log line about ambiguous framing
    size_t timeouts_unlogged;           //  request timeouts since
    size_t framing_unlogged;            //  ambiguous requests since
    bool quiesced;                      //  the listening socket is closed (a drain)
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
//  Connections: tracking, limits, deadlines

static int64_t
s_now_ms (void)
{
    return zclock_mono ();
}

static void
s_count (sl_counter_t *counter)
{
    if (counter)
        sl_counter_inc (counter);
}

//  The key of a client address (IPv4: the server listens on IPv4 only): a
//  mixed hash first (sl_sidmap hashes on the first bytes), then the
//  address itself, so keys never collide.
static void
s_peer_key (const struct sockaddr *sa, uint8_t *key)
{
    memset (key, 0, SL_HTTPD_PEER_KEY);
    uint8_t addr [8] = { 0 };
    if (sa && sa->sa_family == AF_INET)
        memcpy (addr, &((const struct sockaddr_in *) sa)->sin_addr, 4);
    uint64_t h;
    memcpy (&h, addr, sizeof h);
    //  splitmix64's finalizer
    h += 0x9e3779b97f4a7c15ull;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    h ^= h >> 31;
    memcpy (key, &h, sizeof h);
    memcpy (key + 8, addr, sizeof addr);
}

static s_peer_t *
s_peer_find (sl_httpd_t *self, const struct sockaddr *sa)
{
    uint8_t key [SL_HTTPD_PEER_KEY];
    s_peer_key (sa, key);
    return sl_sidmap_get (self->peers, key);
}

//  Put a connection that has no request under way at the end of the lists.
static void
s_list (s_conn_t *c)
{
    if (c->listed)
        return;
    sl_httpd_t *self = c->httpd;
    c->next = NULL;
    c->prev = self->newest;
    if (self->newest)
        self->newest->next = c;
    else
        self->oldest = c;
    self->newest = c;
    s_peer_t *p = c->peer;
    c->peer_next = NULL;
    c->peer_prev = p->newest;
    if (p->newest)
        p->newest->peer_next = c;
    else
        p->oldest = c;
    p->newest = c;
    c->listed = true;
}

static void
s_unlist (s_conn_t *c)
{
    if (!c->listed)
        return;
    sl_httpd_t *self = c->httpd;
    if (c->prev)
        c->prev->next = c->next;
    else
        self->oldest = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        self->newest = c->prev;
    s_peer_t *p = c->peer;
    if (c->peer_prev)
        c->peer_prev->peer_next = c->peer_next;
    else
        p->oldest = c->peer_next;
    if (c->peer_next)
        c->peer_next->peer_prev = c->peer_prev;
    else
        p->newest = c->peer_prev;
    c->prev = c->next = c->peer_prev = c->peer_next = NULL;
    c->listed = false;
}

//  Close a connection that has no request under way: shut its socket down
//  (MHD sees the end of the stream and closes it), and count it out now.
static void
s_conn_close (s_conn_t *c, sl_counter_t *why)
{
    if (c->state == CONN_CLOSING || c->state == CONN_BUSY)
        return;
    s_unlist (c);
    c->state = CONN_CLOSING;
    c->httpd->live--;
    c->peer->count--;
    if (c->fd >= 0)
        shutdown (c->fd, SHUT_RDWR);
    s_count (why);
}

static s_conn_t *
s_conn_of (struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info (conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

//  A request of the connection was dispatched: it is busy until answered.
static void
s_conn_busy (struct MHD_Connection *conn)
{
    s_conn_t *c = s_conn_of (conn);
    if (c && c->state != CONN_CLOSING) {
        s_unlist (c);
        c->state = CONN_BUSY;
    }
}

//  A request of the connection is over: it waits for the next one.
static void
s_conn_idle (struct MHD_Connection *conn)
{
    s_conn_t *c = s_conn_of (conn);
    if (!c || c->state == CONN_CLOSING)
        return;
    if (c->state == CONN_BUSY) {
        c->state = CONN_IDLE;
        c->received = sl_tcpinfo_received (c->fd);
        s_list (c);
    }
}

//  MHD's accept policy: make room within the limits, or refuse.
static enum MHD_Result
s_accept (void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
    (void) addrlen;
    sl_httpd_t *self = cls;
    s_peer_t *peer = s_peer_find (self, addr);
    if (self->limits.max_conns_per_ip && peer && peer->count >= self->limits.max_conns_per_ip) {
        if (!peer->oldest) {
            s_count (self->counters.refused);
            return MHD_NO;
        }
        s_conn_close (peer->oldest, self->counters.evicted);
    }
    if (self->limits.max_conns && self->live + self->headroom >= self->limits.max_conns) {
        if (self->oldest)
            s_conn_close (self->oldest, self->counters.evicted);
        else
        if (self->live >= self->limits.max_conns) {
            s_count (self->counters.refused);
            return MHD_NO;
        }
    }
    return MHD_YES;
}

static void
s_notify (void *cls, struct MHD_Connection *conn, void **socket_context,
          enum MHD_ConnectionNotificationCode toe)
{
    sl_httpd_t *self = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        s_conn_t *c = sl_xcalloc (1, sizeof *c);
        c->httpd = self;
        c->fd = -1;
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info (conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (ci)
            c->fd = ci->connect_fd;
        if (c->fd >= 0) {
            int sndbuf = SL_HTTPD_SNDBUF;
            setsockopt (c->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
        }
        ci = MHD_get_connection_info (conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        uint8_t key [SL_HTTPD_PEER_KEY];
        s_peer_key (ci ? ci->client_addr : NULL, key);
        s_peer_t *p = sl_sidmap_get (self->peers, key);
        if (!p) {
            p = sl_xcalloc (1, sizeof *p);
            memcpy (p->key, key, sizeof key);
            sl_sidmap_put (self->peers, p->key, p);
        }
        p->count++;
        p->refs++;
        c->peer = p;
        c->state = CONN_READING;
        c->started = s_now_ms ();
        self->live++;
        s_list (c);
        *socket_context = c;
        return;
    }
    s_conn_t *c = *socket_context;
    if (!c)
        return;
    *socket_context = NULL;
    if (c->state != CONN_CLOSING) {
        s_unlist (c);
        self->live--;
        c->peer->count--;
    }
    if (--c->peer->refs == 0) {
        sl_sidmap_remove (self->peers, c->peer->key);
        free (c->peer);
    }
    free (c);
}

//  The housekeeping tick: requests past their deadline are closed; idle
//  connections that received bytes since their last answer have started a
//  request, and their deadline runs from now.
static void
s_sweep (sl_httpd_t *self)
{
    int64_t now = s_now_ms ();
    long timeout = self->limits.request_timeout_ms;
    s_conn_t *c = self->oldest, *next;
    for (; c; c = next) {
        next = c->next;
        if (c->state == CONN_IDLE && sl_tcpinfo_received (c->fd) != c->received) {
            c->state = CONN_READING;
            c->started = now;
        }
        else
        if (c->state == CONN_READING && now - c->started >= timeout) {
            s_conn_close (c, self->counters.request_timeouts);
            self->timeouts_unlogged++;
        }
    }
    //  An attack closes thousands: one line a second says how many.
    if (self->timeouts_unlogged && now - self->timeouts_logged >= SL_HTTPD_LOG_EVERY_MS) {
        sl_log_info ("http_request_timeout", "closed %zu connection(s): a request's head and body did not "
                     "arrive within %ld ms", self->timeouts_unlogged, timeout);
        self->timeouts_unlogged = 0;
        self->timeouts_logged = now;
    }
}

//  Ambiguous framing: what tells where the body ends must be said once,
//  one way. The reason, or NULL.
typedef struct {
    int lengths;                        //  Content-Length headers
    int encodings;                      //  Transfer-Encoding headers
    bool bad_length;                    //  one that is not a number
    bool bad_encoding;                  //  one other than chunked
    bool spaced_name;                   //  a header name with blanks (before its colon)
} s_framing_t;

//  A header value without the blanks around it is exactly word (or, when
//  word is NULL, only digits); case-insensitive.
static bool
s_value_is (const char *value, const char *word)
{
    while (*value == ' ' || *value == '\t')
        value++;
    size_t n = strlen (value);
    while (n && (value [n - 1] == ' ' || value [n - 1] == '\t'))
        n--;
    if (!word)
        return n > 0 && strspn (value, "0123456789") >= n;
    return n == strlen (word) && strncasecmp (value, word, n) == 0;
}

static enum MHD_Result
s_framing_header (void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    (void) kind;
    s_framing_t *f = cls;
    //  "Content-Length : 5": MHD keeps the blank in the name, so the
    //  header frames nothing here, while a proxy in front that trims it
    //  frames the body by it (RFC 9112 5.1: such a request is a 400).
    if (key [strcspn (key, " \t")])
        f->spaced_name = true;
    if (strcasecmp (key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        f->lengths++;
        f->bad_length |= !value || !s_value_is (value, NULL);
    }
    else
    if (strcasecmp (key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        f->encodings++;
        f->bad_encoding |= !value || !s_value_is (value, "chunked");
    }
    return MHD_YES;
}

static const char *
s_bad_framing (struct MHD_Connection *conn)
{
    s_framing_t f = { 0 };
    MHD_get_connection_values (conn, MHD_HEADER_KIND, s_framing_header, &f);
    if (f.spaced_name)
        return "whitespace between a header name and its colon";
    if (f.lengths > 1)
        return "more than one Content-Length header";
    if (f.encodings > 1)
        return "more than one Transfer-Encoding header";
    if (f.lengths && f.encodings)
        return "both Content-Length and Transfer-Encoding";
    if (f.bad_length)
        return "a Content-Length that is not a number";
    if (f.bad_encoding)
        return "a Transfer-Encoding other than chunked";
    return NULL;
}

static void
s_drop_body (sl_http_req_t *req)
{
    req->httpd->body_bytes -= req->body.len;
    sl_buf_free (&req->body);
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
            sl_buf_shrink (&req->out, SL_HTTPD_OUT_KEEP);
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
    //  What follows a request with ambiguous framing could be read as
    //  another request: never read it.
    if (req->bad_framing)
        MHD_add_response_header (req->response, MHD_HTTP_HEADER_CONNECTION, "close");
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
    if (!req || req->fresh) {
        if (!req)
            req = sl_xcalloc (1, sizeof *req);
        req->fresh = false;
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
        req->next = self->requests;
        if (req->next)
            req->next->prev = req;
        self->requests = req;
        *con_cls = req;
        //  The head is complete: refuse ambiguous framing before the body.
        req->bad_framing = s_bad_framing (conn);
        if (!req->bad_framing)
            return MHD_YES;
        s_count (self->counters.bad_framing);
        self->framing_unlogged++;
        if (s_now_ms () - self->framing_logged >= SL_HTTPD_LOG_EVERY_MS) {
            sl_log_info ("http_bad_framing", "refused %zu request(s), the last with %s", self->framing_unlogged,
                         req->bad_framing);
            self->framing_unlogged = 0;
            self->framing_logged = s_now_ms ();
        }
        req->state = REQ_WAITING;
        req->dispatched = true;
        s_conn_busy (conn);
        if (self->dispatch_oversize)
            self->on_request (self->arg, req);
        else {
            static const char msg [] =
                "{\"error\":{\"type\":\"invalid_request_error\",\"message\":\"ambiguous request framing\"}}";
            sl_http_respond (req, 400, "application/json", msg, sizeof msg - 1);
        }
        if (req->response)
            return s_queue (req);
        return MHD_NO;                  //  not answered at once: close
    }
    if (req->state == REQ_READING && *upload_data_size) {
        if (req->too_large || req->body.len + *upload_data_size > self->max_body) {
            req->too_large = true;
            s_drop_body (req);          //  never kept: the limit bounds memory
        }
        else {
            sl_buf_append (&req->body, upload_data, *upload_data_size);
            self->body_bytes += *upload_data_size;
        }
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (req->state == REQ_READING) {
        req->state = REQ_WAITING;
        s_conn_busy (conn);
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
    s_drop_body (req);
    if (req->response)
        MHD_destroy_response (req->response);
    for (size_t i = 0; i < req->header_count; i++) {
        free (req->headers [i].name);
        free (req->headers [i].value);
    }
    free (req->headers);
    sl_buf_free (&req->out);
    free (req->method);
    free (req->path);
    free (req->raw_path);
    sl_httpd_t *self = req->httpd;
    if (req->prev)
        req->prev->next = req->next;
    else
        self->requests = req->next;
    if (req->next)
        req->next->prev = req->prev;
    self->active--;
    free (req);
}

//  The request line's URI before libmicrohttpd decodes it: what a
//  signature over the path (AWS SigV4) was made on. Its return is the
//  request's first state, which the handler completes.
static void *
s_uri_seen (void *cls, const char *uri, struct MHD_Connection *conn)
{
    (void) cls;
    (void) conn;
    sl_http_req_t *req = sl_xcalloc (1, sizeof *req);
    req->fresh = true;
    req->raw_path = sl_xstrndup (uri, strcspn (uri, "?#"));
    return req;
}

static void
s_completed (void *cls, struct MHD_Connection *conn, void **con_cls,
             enum MHD_RequestTerminationCode toe)
{
    sl_httpd_t *self = cls;
    s_conn_idle (conn);
    sl_http_req_t *req = *con_cls;
    if (!req)
        return;
    *con_cls = NULL;
    if (req->fresh) {                   //  ended before its head was whole
        free (req->raw_path);
        free (req);
        return;
    }
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
    s_sweep ((sl_httpd_t *) arg);
    s_run ((sl_httpd_t *) arg);
    return 0;
}

sl_httpd_t *
sl_httpd_new (zloop_t *loop, const char *host, int port, size_t max_body,
              sl_httpd_request_fn *on_request, sl_httpd_closed_fn *on_closed, void *arg)
{
    return sl_httpd_new_with (loop, host, port, max_body, NULL, on_request, on_closed, arg);
}

sl_httpd_t *
sl_httpd_new_with (zloop_t *loop, const char *host, int port, size_t max_body,
                   const sl_httpd_limits_t *limits,
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
    if (limits)
        self->limits = *limits;
    if (self->limits.request_timeout_ms <= 0)
        self->limits.request_timeout_ms = SL_HTTPD_REQUEST_TIMEOUT_MS;
    self->headroom = self->limits.max_conns / SL_HTTPD_HEADROOM_SHARE;
    if (self->headroom == 0)
        self->headroom = 1;
    self->peers = sl_sidmap_new ();
    //  MHD's own limit stays above ours by the connections we may have shut
    //  down that it has not closed yet, so that our accept policy decides.
    //  Without a limit of ours, the open-files limit is the bound: MHD's
    //  default (FD_SETSIZE) would leave clients past ~1000 unaccepted.
    size_t limit = self->limits.max_conns
                 ? self->limits.max_conns + SL_HTTPD_CLOSING_SLACK
                 : sl_fdlimit_share (sl_fdlimit_current (), UINT_MAX);
    unsigned int mhd_limit = (unsigned int) (limit < UINT_MAX ? limit : UINT_MAX);
    self->daemon = MHD_start_daemon (
        MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_TURBO | MHD_USE_ERROR_LOG,
        (uint16_t) port, s_accept, self, s_handler, self,
        MHD_OPTION_EXTERNAL_LOGGER, s_mhd_log, NULL,   //  first, or MHD logs the options before it
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *) &addr,
        MHD_OPTION_NOTIFY_COMPLETED, s_completed, self,
        MHD_OPTION_URI_LOG_CALLBACK, s_uri_seen, self,
        MHD_OPTION_NOTIFY_CONNECTION, s_notify, self,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int) SL_HTTPD_IDLE_TIMEOUT_S,
        MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned int) 1024,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) SL_HTTPD_CONN_MEMORY,
        MHD_OPTION_CONNECTION_LIMIT, mhd_limit,
        MHD_OPTION_END);
    if (!self->daemon) {
        sl_log_error ("http_listen_failed", "cannot listen on %s:%d", host, port);
        sl_sidmap_destroy (&self->peers);
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
    //  libmicrohttpd refuses to stop (it aborts the process) while a
    //  connection is suspended: a request waiting for its response or
    //  for stream bytes. Each is resumed as aborted first, so stopping
    //  the daemon completes it (on_closed, aborted) like the others and
    //  closes every connection (s_notify frees them).
    for (sl_http_req_t *req = self->requests; req; req = req->next) {
        req->aborted = true;
        s_resume (req);
    }
    MHD_stop_daemon (self->daemon);
    sl_sidmap_destroy (&self->peers);
    close (self->watch_fd);
    close (self->kick_fd);
    free (self);
    *self_p = NULL;
}

size_t
sl_httpd_requests (sl_httpd_t *self)
{
    return self->active;
}

int
sl_httpd_quiesce (sl_httpd_t *self)
{
    if (self->quiesced)
        return 0;
    //  In external epoll mode no thread of MHD's uses the socket, so it
    //  may be closed at once (MHD took it out of its epoll set).
    MHD_socket fd = MHD_quiesce_daemon (self->daemon);
    if (fd == MHD_INVALID_SOCKET)
        return -1;
    close (fd);
    self->quiesced = true;
    return 0;
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
sl_httpd_body_bytes (sl_httpd_t *self)
{
    return self->body_bytes;
}

void
sl_httpd_set_counters (sl_httpd_t *self, const sl_httpd_counters_t *counters)
{
    self->counters = *counters;
}

size_t
sl_httpd_connections (sl_httpd_t *self)
{
    return self->live;
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
sl_http_req_raw_path (sl_http_req_t *req)
{
    return req->raw_path ? req->raw_path : req->path;
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

bool
sl_http_req_loopback (sl_http_req_t *req)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info (req->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    const struct sockaddr *sa = ci ? ci->client_addr : NULL;
    if (!sa || sa->sa_family != AF_INET)
        return false;                   //  the server listens on IPv4 only
    const uint8_t *addr = (const uint8_t *) &((const struct sockaddr_in *) sa)->sin_addr;
    return addr [0] == 127;
}

sl_str_t
sl_http_req_body (sl_http_req_t *req)
{
    return sl_buf_str (&req->body);
}

void
sl_http_req_drop_body (sl_http_req_t *req)
{
    s_drop_body (req);
}

bool
sl_http_req_too_large (sl_http_req_t *req)
{
    return req->too_large;
}

const char *
sl_http_req_bad_framing (sl_http_req_t *req)
{
    return req->bad_framing;
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
