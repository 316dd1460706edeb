/*  sl_curlm.c - curl multi driven by zloop through one epoll set.

    curl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION) and when
    to wake it (CURLMOPT_TIMERFUNCTION). Sockets go into our epoll set; the
    epoll fd is a single zloop poller, so thousands of transfers cost zloop
    one descriptor. Readiness is reported back with curl_multi_socket_action.
*/
#include "common/http/sl_curlm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"

#define SL_CURLM_MAX_EVENTS 256

//  Per-transfer bookkeeping, stored as the easy handle's private pointer.
typedef struct _s_xfer_t {
    CURL *easy;
    sl_curlm_done_fn *done;
    void *arg;
    struct _s_xfer_t *prev, *next;     //  list of live transfers
} s_xfer_t;

struct _sl_curlm_t {
    zloop_t *loop;
    CURLM *multi;
    int epoll_fd;
    zmq_pollitem_t item;
    int timer_id;                       //  zloop timer for curl, -1 when none
    int kick_fd;                        //  eventfd: "act now" without a timer
    zmq_pollitem_t kick_item;
    bool kick_pending;
    int running;
    s_xfer_t *xfers;                    //  live transfers (curl 7.88 cannot list them)
    void (*after) (void *arg);          //  end-of-turn hook
    void *after_arg;
};

static void
s_link (sl_curlm_t *self, s_xfer_t *xfer)
{
    xfer->next = self->xfers;
    if (self->xfers)
        self->xfers->prev = xfer;
    self->xfers = xfer;
}

static void
s_unlink (sl_curlm_t *self, s_xfer_t *xfer)
{
    if (xfer->prev)
        xfer->prev->next = xfer->next;
    else
        self->xfers = xfer->next;
    if (xfer->next)
        xfer->next->prev = xfer->prev;
}

static void s_check_done (sl_curlm_t *self);
static void s_check_done_only (sl_curlm_t *self);

static int
s_on_socket (CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    (void) easy;
    (void) socketp;
    sl_curlm_t *self = userp;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl (self->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
        return 0;
    }
    struct epoll_event ev = { .events = 0, .data.fd = fd };
    if (what & CURL_POLL_IN)
        ev.events |= EPOLLIN;
    if (what & CURL_POLL_OUT)
        ev.events |= EPOLLOUT;
    if (epoll_ctl (self->epoll_fd, EPOLL_CTL_MOD, fd, &ev) != 0)
        epoll_ctl (self->epoll_fd, EPOLL_CTL_ADD, fd, &ev);
    return 0;
}

static int
s_on_curl_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_curlm_t *self = arg;
    self->timer_id = -1;
    curl_multi_socket_action (self->multi, CURL_SOCKET_TIMEOUT, 0, &self->running);
    s_check_done (self);
    return 0;
}

static int
s_on_timer_request (CURLM *multi, long timeout_ms, void *userp)
{
    (void) multi;
    sl_curlm_t *self = userp;
    if (self->timer_id >= 0) {
        zloop_timer_end (self->loop, self->timer_id);
        self->timer_id = -1;
    }
    if (timeout_ms == 0) {
        //  "As soon as possible": zloop timers count whole milliseconds,
        //  so wake the loop through the eventfd instead of waiting one.
        if (!self->kick_pending) {
            uint64_t one = 1;
            self->kick_pending = write (self->kick_fd, &one, sizeof one) == sizeof one;
        }
    }
    else
    if (timeout_ms > 0)
        self->timer_id = zloop_timer (self->loop, (size_t) timeout_ms, 1, s_on_curl_timer, self);
    return 0;
}

static int
s_on_kick (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    (void) loop;
    (void) item;
    sl_curlm_t *self = arg;
    uint64_t count;
    if (read (self->kick_fd, &count, sizeof count) < 0)
        return 0;
    self->kick_pending = false;
    curl_multi_socket_action (self->multi, CURL_SOCKET_TIMEOUT, 0, &self->running);
    s_check_done (self);
    return 0;
}

static void
s_check_done (sl_curlm_t *self)
{
    s_check_done_only (self);
    if (self->after)
        self->after (self->after_arg);
}

static void
s_check_done_only (sl_curlm_t *self)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read (self->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *easy = msg->easy_handle;
        CURLcode result = msg->data.result;
        s_xfer_t *xfer = NULL;
        curl_easy_getinfo (easy, CURLINFO_PRIVATE, (char **) &xfer);
        curl_multi_remove_handle (self->multi, easy);
        curl_easy_setopt (easy, CURLOPT_PRIVATE, NULL);
        if (xfer) {
            s_unlink (self, xfer);
            sl_curlm_done_fn *done = xfer->done;
            void *arg = xfer->arg;
            free (xfer);
            done (arg, easy, result);
        }
    }
}

static int
s_on_ready (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    (void) loop;
    (void) item;
    sl_curlm_t *self = arg;
    struct epoll_event events [SL_CURLM_MAX_EVENTS];
    int n = epoll_wait (self->epoll_fd, events, SL_CURLM_MAX_EVENTS, 0);
    for (int i = 0; i < n; i++) {
        int mask = 0;
        if (events [i].events & (EPOLLIN | EPOLLHUP))
            mask |= CURL_CSELECT_IN;
        if (events [i].events & EPOLLOUT)
            mask |= CURL_CSELECT_OUT;
        if (events [i].events & EPOLLERR)
            mask |= CURL_CSELECT_ERR;
        curl_multi_socket_action (self->multi, events [i].data.fd, mask, &self->running);
    }
    s_check_done (self);
    return 0;
}

sl_curlm_t *
sl_curlm_new (zloop_t *loop)
{
    static bool s_global_done = false;
    if (!s_global_done) {
        curl_global_init (CURL_GLOBAL_DEFAULT);
        s_global_done = true;
    }
    sl_curlm_t *self = sl_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->timer_id = -1;
    self->multi = curl_multi_init ();
    self->epoll_fd = epoll_create1 (EPOLL_CLOEXEC);
    curl_multi_setopt (self->multi, CURLMOPT_SOCKETFUNCTION, s_on_socket);
    curl_multi_setopt (self->multi, CURLMOPT_SOCKETDATA, self);
    curl_multi_setopt (self->multi, CURLMOPT_TIMERFUNCTION, s_on_timer_request);
    curl_multi_setopt (self->multi, CURLMOPT_TIMERDATA, self);
    //  Reuse connections, and multiplex on HTTP/2 where the upstream offers it.
    curl_multi_setopt (self->multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    self->item = (zmq_pollitem_t) { .socket = NULL, .fd = self->epoll_fd, .events = ZMQ_POLLIN };
    zloop_poller (loop, &self->item, s_on_ready, self);
    self->kick_fd = eventfd (0, EFD_NONBLOCK | EFD_CLOEXEC);
    self->kick_item = (zmq_pollitem_t) { .socket = NULL, .fd = self->kick_fd, .events = ZMQ_POLLIN };
    zloop_poller (loop, &self->kick_item, s_on_kick, self);
    return self;
}

void
sl_curlm_destroy (sl_curlm_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_curlm_t *self = *self_p;
    zloop_poller_end (self->loop, &self->item);
    zloop_poller_end (self->loop, &self->kick_item);
    close (self->kick_fd);
    if (self->timer_id >= 0)
        zloop_timer_end (self->loop, self->timer_id);
    //  Detach transfers still running; their owners clean the handles up.
    while (self->xfers) {
        s_xfer_t *xfer = self->xfers;
        s_unlink (self, xfer);
        curl_multi_remove_handle (self->multi, xfer->easy);
        curl_easy_setopt (xfer->easy, CURLOPT_PRIVATE, NULL);
        free (xfer);
    }
    curl_multi_cleanup (self->multi);
    close (self->epoll_fd);
    free (self);
    *self_p = NULL;
}

int
sl_curlm_add (sl_curlm_t *self, CURL *easy, sl_curlm_done_fn *done, void *arg)
{
    s_xfer_t *xfer = sl_xcalloc (1, sizeof *xfer);
    xfer->easy = easy;
    xfer->done = done;
    xfer->arg = arg;
    curl_easy_setopt (easy, CURLOPT_PRIVATE, xfer);
    if (curl_multi_add_handle (self->multi, easy) != CURLM_OK) {
        curl_easy_setopt (easy, CURLOPT_PRIVATE, NULL);
        free (xfer);
        return -1;
    }
    s_link (self, xfer);
    return 0;
}

void
sl_curlm_remove (sl_curlm_t *self, CURL *easy)
{
    s_xfer_t *xfer = NULL;
    curl_easy_getinfo (easy, CURLINFO_PRIVATE, (char **) &xfer);
    curl_multi_remove_handle (self->multi, easy);
    curl_easy_setopt (easy, CURLOPT_PRIVATE, NULL);
    if (xfer) {
        s_unlink (self, xfer);
        free (xfer);
    }
}

void
sl_curlm_set_after (sl_curlm_t *self, void (*fn) (void *arg), void *arg)
{
    self->after = fn;
    self->after_arg = arg;
}

int
sl_curlm_header (const char *line, size_t n, const char *name, char *out, size_t size)
{
    size_t name_len = strlen (name);
    if (n <= name_len || line [name_len] != ':' || strncasecmp (line, name, name_len) != 0)
        return -1;
    const char *v = line + name_len + 1;
    size_t len = n - (name_len + 1);
    while (len && (*v == ' ' || *v == '\t')) {
        v++;
        len--;
    }
    while (len && (v [len - 1] == '\r' || v [len - 1] == '\n' || v [len - 1] == ' ' || v [len - 1] == '\t'))
        len--;
    size_t kept = len < size ? len : size - 1;
    memcpy (out, v, kept);
    out [kept] = 0;
    return (int) len;
}
