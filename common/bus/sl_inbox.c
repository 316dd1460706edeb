/*  sl_inbox.c - a stage's ROUTER inbox (see sl_inbox.h). */
#include "common/bus/sl_inbox.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"

#define SL_INBOX_MAX_MSG (128LL << 20)  //  ZeroMQ drops peers that send more
#define SL_INBOX_HWM 10000              //  messages (batches) per peer

struct _sl_inbox_t {
    zsock_t *sock;
    char *endpoint;
    zmq_msg_t peer;                     //  last received identity frame
    zmq_msg_t data;                     //  last received data frame
    bool holding;                       //  peer/data hold a message
};

sl_inbox_t *
sl_inbox_new (const char *endpoint, sl_bus_t *bus, const char *domain)
{
    zsock_t *sock = zsock_new (ZMQ_ROUTER);
    if (!sock)
        return NULL;
    zsock_set_router_mandatory (sock, 1);
    zsock_set_maxmsgsize (sock, SL_INBOX_MAX_MSG);
    zsock_set_rcvhwm (sock, SL_INBOX_HWM);
    zsock_set_sndhwm (sock, SL_INBOX_HWM);
    zsock_set_heartbeat_ivl (sock, 1000);
    zsock_set_heartbeat_timeout (sock, 3000);
    if (bus && sl_bus_server (bus, sock, domain)) {
        zsock_destroy (&sock);
        return NULL;
    }
    if (zsock_bind (sock, "%s", endpoint) < 0) {
        sl_log_error ("bind_failed", "cannot bind %s: %s", endpoint, zmq_strerror (zmq_errno ()));
        zsock_destroy (&sock);
        return NULL;
    }
    sl_inbox_t *self = sl_xcalloc (1, sizeof *self);
    self->sock = sock;
    self->endpoint = sl_xstrdup (zsock_endpoint (sock));
    zmq_msg_init (&self->peer);
    zmq_msg_init (&self->data);
    return self;
}

void
sl_inbox_destroy (sl_inbox_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_inbox_t *self = *self_p;
    zmq_msg_close (&self->peer);
    zmq_msg_close (&self->data);
    zsock_destroy (&self->sock);
    free (self->endpoint);
    free (self);
    *self_p = NULL;
}

zsock_t *
sl_inbox_sock (sl_inbox_t *self)
{
    return self->sock;
}

const char *
sl_inbox_endpoint (sl_inbox_t *self)
{
    return self->endpoint;
}

int
sl_inbox_recv (sl_inbox_t *self, sl_str_t *peer, sl_str_t *data)
{
    void *sock = zsock_resolve (self->sock);
    if (zmq_msg_recv (&self->peer, sock, ZMQ_DONTWAIT) < 0)
        return 0;
    if (!zmq_msg_more (&self->peer))
        return -1;                      //  identity without data: drop
    zmq_msg_recv (&self->data, sock, 0);
    if (zmq_msg_more (&self->data)) {
        //  More frames than the protocol has: drain and drop the lot.
        //  (parts of one ZeroMQ message arrive together; this never blocks)
        zmq_msg_t extra;
        zmq_msg_init (&extra);
        do {
            if (zmq_msg_recv (&extra, sock, 0) < 0)
                break;
        } while (zmq_msg_more (&extra));
        zmq_msg_close (&extra);
        return -1;
    }
    *peer = sl_str_n (zmq_msg_data (&self->peer), zmq_msg_size (&self->peer));
    *data = sl_str_n (zmq_msg_data (&self->data), zmq_msg_size (&self->data));
    return 1;
}

int
sl_inbox_send (sl_inbox_t *self, sl_str_t peer, const void *data, size_t size)
{
    void *sock = zsock_resolve (self->sock);
    if (zmq_send (sock, peer.ptr, peer.len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return -1;
    if (zmq_send (sock, data, size, ZMQ_DONTWAIT) < 0)
        return -1;
    return 0;
}
