/*  sl_inbox.h - the one ZeroMQ inbox of a stage instance (a bound ROUTER).

    Every instance of the previous stage connects a DEALER here. Each
    received ZeroMQ message is [sender identity][data frame]; the data frame
    holds one or more protocol messages (proto/PROTOCOL.md). Replies (credit,
    heartbeats) go back to a sender by its identity.
*/
#ifndef SL_INBOX_H
#define SL_INBOX_H

#include <czmq.h>

#include "common/bus/sl_bus.h"
#include "common/base/sl_str.h"

typedef struct _sl_inbox_t sl_inbox_t;

//  Bind to endpoint ("tcp://127.0.0.1:5552", "tcp://*:5552", port 0 or *
//  picks a free port), as a CURVE server of bus whose clients ZAP checks
//  for domain (bus NULL: plaintext, for unit tests). NULL (logged) when
//  the bind fails.
sl_inbox_t *sl_inbox_new (const char *endpoint, sl_bus_t *bus, const char *domain);
void sl_inbox_destroy (sl_inbox_t **self_p);
zsock_t *sl_inbox_sock (sl_inbox_t *self);
//  The endpoint actually bound (port resolved).
const char *sl_inbox_endpoint (sl_inbox_t *self);
//  Receive without blocking. 1: peer and data are set (borrowed until the
//  next call); 0: nothing waiting; -1: a message without the expected two
//  frames arrived and was dropped.
int sl_inbox_recv (sl_inbox_t *self, sl_str_t *peer, sl_str_t *data);
//  Send data to a peer; 0 ok, -1 when the peer is gone or would block.
int sl_inbox_send (sl_inbox_t *self, sl_str_t peer, const void *data, size_t size);

#endif
