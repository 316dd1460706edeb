/*  sl_validate.h - output legality: is this event allowed here?

    One validator per response, for the client's dialect. The emitter feeds
    it every SSE event it is about to send, as the client would read it
    (event name, data JSON); the validator keeps the stream's state machine
    from the dialect's specification and says whether the event may come
    next. An illegal event is withheld by the emitter, which ends the
    stream with a clean error event instead and counts it.

    Every dialect: an error event may come at any time before the end and
    is the end; SSE comments (keep-alives) may come at any time before the
    end; nothing comes after the end. The whole body of a non-streaming
    response is checked by the same class (sl_validate_body), against the
    rules the stream would obey. Each dialect's own rules, for its streams
    and its bodies, are stated at the top of its validator
    (common/dialects/<name>/sl_<name>_validate.c).

    Pure: no sockets, no allocation per event.
*/
#ifndef SL_VALIDATE_H
#define SL_VALIDATE_H

#include <stddef.h>

#include "common/base/sl_str.h"

typedef struct _sl_validate_t sl_validate_t;

//  A validator for a client dialect (sl_dialect_t); NULL when unknown.
sl_validate_t *sl_validate_new (int dialect);
void sl_validate_destroy (sl_validate_t **self_p);
//  Check one whole SSE event (its lines and the blank line after them).
//  0: legal, the state advances; -1: illegal, the state is unchanged and
//  sl_validate_reason says why.
int sl_validate_event (sl_validate_t *self, sl_str_t event);
//  May the response end here? 0 yes (it ended with its terminal event or
//  an error), -1 no.
int sl_validate_end (sl_validate_t *self);
//  Why the last check failed (borrowed, valid until the next call).
const char *sl_validate_reason (sl_validate_t *self);
//  Check the whole JSON body of a non-streaming response (a fresh
//  validator, not used for events). 0 legal, -1 illegal (with a reason).
int sl_validate_body (sl_validate_t *self, sl_str_t body);
//  Length of the first complete SSE event in bytes (up to and including
//  the blank line that ends it); 0 when bytes holds none.
size_t sl_validate_next_event (sl_str_t bytes);

#endif
