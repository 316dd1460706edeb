/*  sl_llm_tickets.c - the LLM-judge asks in flight (see sl_llm_tickets.h).

    An array grown by doubling; removal closes the gap, so the table stays
    in the order the asks left.
*/
#include "common/llm/sl_llm_tickets.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

#define S_FIRST_CAPACITY 16             //  entries allocated at the first ask

typedef struct {
    uint64_t ticket;
    uint8_t sid [SL_SID_SIZE];
    size_t tag;                         //  the caller's
} s_entry_t;

struct _sl_llm_tickets_t {
    s_entry_t *entries;
    size_t count;
    size_t capacity;
    uint64_t last;                      //  the last ticket number given
};

sl_llm_tickets_t *
sl_llm_tickets_new (void)
{
    return sl_xcalloc (1, sizeof (sl_llm_tickets_t));
}

void
sl_llm_tickets_destroy (sl_llm_tickets_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_llm_tickets_t *self = *self_p;
    free (self->entries);
    free (self);
    *self_p = NULL;
}

uint64_t
sl_llm_tickets_next (sl_llm_tickets_t *self)
{
    return ++self->last;
}

void
sl_llm_tickets_add (sl_llm_tickets_t *self, uint64_t ticket, const uint8_t *sid, size_t tag)
{
    if (self->count == self->capacity) {
        self->capacity = self->capacity ? 2 * self->capacity : S_FIRST_CAPACITY;
        self->entries = sl_xrealloc (self->entries, self->capacity * sizeof (s_entry_t));
    }
    s_entry_t *e = &self->entries [self->count++];
    e->ticket = ticket;
    memcpy (e->sid, sid, SL_SID_SIZE);
    e->tag = tag;
}

static void
s_remove (sl_llm_tickets_t *self, size_t i)
{
    memmove (self->entries + i, self->entries + i + 1, (self->count - i - 1) * sizeof (s_entry_t));
    self->count--;
}

bool
sl_llm_tickets_take (sl_llm_tickets_t *self, uint64_t ticket, uint8_t *sid, size_t *tag)
{
    for (size_t i = 0; i < self->count; i++)
        if (self->entries [i].ticket == ticket) {
            if (sid)
                memcpy (sid, self->entries [i].sid, SL_SID_SIZE);
            if (tag)
                *tag = self->entries [i].tag;
            s_remove (self, i);
            return true;
        }
    return false;
}

size_t
sl_llm_tickets_drop_stream (sl_llm_tickets_t *self, const uint8_t *sid,
                            sl_llm_tickets_cancel_fn *cancel, void *arg)
{
    size_t dropped = 0;
    for (size_t i = 0; i < self->count;)
        if (memcmp (self->entries [i].sid, sid, SL_SID_SIZE) == 0) {
            uint64_t ticket = self->entries [i].ticket;
            s_remove (self, i);         //  out of the table before cancel runs
            if (cancel)
                cancel (arg, ticket);
            dropped++;
        }
        else
            i++;
    return dropped;
}

size_t
sl_llm_tickets_count (sl_llm_tickets_t *self)
{
    return self->count;
}
