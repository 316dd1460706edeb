/*  sl_framing.h - how a provider's stream body is cut into events.

    A decoder sees events, a type and a data payload (sl_decoder_impl.h);
    what cuts the body into them is its dialect's framing
    (sl_dialect_t.framing), never a switch on the dialect in the code that
    reads the body (the ingest, sluice-replay, the tests):

      SSE        server-sent events (common/http/sl_sse.h): an event's
                 name and its data lines (the default, 0);
      EVSTREAM   AWS's binary event stream (common/cloud/sl_evstream.h):
                 a message's :event-type and its payload; an exception
                 message's :exception-type and its payload; an error
                 message's :error-code, with {"message": :error-message}.

    Both are incremental (bytes split anywhere), bounded (max_event) and
    report a fault of the peer's bytes as an error, never an assertion.
*/
#ifndef SL_FRAMING_H
#define SL_FRAMING_H

#include <stddef.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

typedef enum {
    SL_FRAMING_SSE = 0,
    SL_FRAMING_EVSTREAM,
    SL_FRAMING_KINDS
} sl_framing_kind_t;

typedef struct _sl_framing_t sl_framing_t;

//  One event: return 0 to go on; another value stops the feed and is
//  returned by it. id is SSE's event id (absent in other framings).
typedef int (sl_framing_event_fn) (void *arg, sl_str_t type, sl_str_t data, sl_str_t id);

//  A framing of this kind; max_event bounds one event (0: the framing's
//  default). NULL for an unknown kind.
sl_framing_t *sl_framing_new (int kind, size_t max_event);
void sl_framing_destroy (sl_framing_t **self_p);
//  Body bytes. 0 ok; -1 when the bytes are not of the framing or an event
//  is over the bound (sl_framing_error, sl_framing_code); or fn's value.
int sl_framing_feed (sl_framing_t *self, const char *data, size_t size, sl_framing_event_fn *fn, void *arg);
//  The body ended: what was held goes out. 0, -1 when it ended inside an
//  event that cannot stand (a truncated binary message), or fn's value.
int sl_framing_finish (sl_framing_t *self, sl_framing_event_fn *fn, void *arg);
//  Why the last call failed (static text), "" when it did not.
const char *sl_framing_error (sl_framing_t *self);
//  The error code of that failure, for the client: upstream_event_too_large
//  or upstream_malformed.
const char *sl_framing_code (sl_framing_t *self);
//  A new body (a retried attempt).
void sl_framing_reset (sl_framing_t *self);
int sl_framing_kind (sl_framing_t *self);

#endif
