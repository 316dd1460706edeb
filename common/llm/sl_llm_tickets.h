/*  sl_llm_tickets.h - the LLM-judge asks in flight, by ticket: whose
    stream each belongs to, so that its answer finds the stream again and
    a stream that goes away stops its asks.

    An ask leaves with a ticket number (sl_llm_ask_t.ticket, the judge's
    sl_judge_ask_t.ticket); its outcome comes back later, naming only the
    ticket. The judge (a tool call's ask) and the gateway (a request
    part's ask) both keep this table: the stream of each ticket, and a tag
    of the caller's (which part of the request asked, for the gateway).
    Tickets leave the table when their outcome is taken or their stream
    drops them; an outcome for a ticket no longer here is the caller's
    to ignore.

    A list in the order the asks left: there are a handful in flight at a
    time, and a linear search is faster than any index at that size.
*/
#ifndef SL_LLM_TICKETS_H
#define SL_LLM_TICKETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/sl_msg.h"

typedef struct _sl_llm_tickets_t sl_llm_tickets_t;

//  Stop the ask of a ticket dropped with its stream.
typedef void (sl_llm_tickets_cancel_fn) (void *arg, uint64_t ticket);

sl_llm_tickets_t *sl_llm_tickets_new (void);
void sl_llm_tickets_destroy (sl_llm_tickets_t **self_p);
//  A ticket number for the next ask: 1, 2, 3 ..., never one given before
//  (whether or not the ask is then added).
uint64_t sl_llm_tickets_next (sl_llm_tickets_t *self);
//  An ask is in flight for stream sid (SL_SID_SIZE bytes, copied), with
//  the caller's tag.
void sl_llm_tickets_add (sl_llm_tickets_t *self, uint64_t ticket, const uint8_t *sid, size_t tag);
//  Take a ticket out of the table: true when it was in flight, with its
//  stream id (SL_SID_SIZE bytes) and tag where sid and tag are not NULL;
//  false, and nothing written, for a ticket not in the table.
bool sl_llm_tickets_take (sl_llm_tickets_t *self, uint64_t ticket, uint8_t *sid, size_t *tag);
//  Take out every ticket of stream sid, calling cancel (when not NULL)
//  for each; returns how many.
size_t sl_llm_tickets_drop_stream (sl_llm_tickets_t *self, const uint8_t *sid,
                                   sl_llm_tickets_cancel_fn *cancel, void *arg);
//  Asks in flight.
size_t sl_llm_tickets_count (sl_llm_tickets_t *self);

#endif
