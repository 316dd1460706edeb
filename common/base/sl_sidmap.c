/*  sl_sidmap.c - stream id hash map (see sl_sidmap.h). */
#include "common/base/sl_sidmap.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

#define SID_SIZE 16
#define MIN_CAPACITY 16                 //  slots, a power of two

typedef struct {
    uint8_t sid [SID_SIZE];
    void *value;                        //  NULL marks an empty slot
} s_slot_t;

struct _sl_sidmap_t {
    s_slot_t *slots;
    size_t capacity;                    //  power of two
    size_t size;
};

static inline size_t
s_hash (const uint8_t *sid)
{
    uint64_t h;
    memcpy (&h, sid, sizeof h);
    return (size_t) (h ^ (h >> 29));
}

sl_sidmap_t *
sl_sidmap_new (void)
{
    sl_sidmap_t *self = sl_xcalloc (1, sizeof *self);
    self->capacity = MIN_CAPACITY;
    self->slots = sl_xcalloc (self->capacity, sizeof (s_slot_t));
    return self;
}

void
sl_sidmap_destroy (sl_sidmap_t **self_p)
{
    if (self_p && *self_p) {
        free ((*self_p)->slots);
        free (*self_p);
        *self_p = NULL;
    }
}

static s_slot_t *
s_find (sl_sidmap_t *self, const uint8_t *sid)
{
    size_t mask = self->capacity - 1;
    for (size_t i = s_hash (sid) & mask;; i = (i + 1) & mask) {
        s_slot_t *slot = &self->slots [i];
        if (!slot->value || memcmp (slot->sid, sid, SID_SIZE) == 0)
            return slot;
    }
}

static void
s_grow (sl_sidmap_t *self)
{
    s_slot_t *old = self->slots;
    size_t old_capacity = self->capacity;
    self->capacity *= 2;
    self->slots = sl_xcalloc (self->capacity, sizeof (s_slot_t));
    for (size_t i = 0; i < old_capacity; i++)
        if (old [i].value)
            *s_find (self, old [i].sid) = old [i];
    free (old);
}

void *
sl_sidmap_get (sl_sidmap_t *self, const uint8_t *sid)
{
    return s_find (self, sid)->value;
}

void
sl_sidmap_put (sl_sidmap_t *self, const uint8_t *sid, void *value)
{
    if ((self->size + 1) * 2 > self->capacity)
        s_grow (self);
    s_slot_t *slot = s_find (self, sid);
    if (!slot->value) {
        memcpy (slot->sid, sid, SID_SIZE);
        self->size++;
    }
    slot->value = value;
}

void *
sl_sidmap_remove (sl_sidmap_t *self, const uint8_t *sid)
{
    s_slot_t *slot = s_find (self, sid);
    void *value = slot->value;
    if (!value)
        return NULL;
    //  Backward-shift: move later entries of the probe run into the hole.
    size_t mask = self->capacity - 1;
    size_t hole = (size_t) (slot - self->slots);
    for (size_t i = (hole + 1) & mask; self->slots [i].value; i = (i + 1) & mask) {
        size_t home = s_hash (self->slots [i].sid) & mask;
        //  Entry i may move into the hole if its home is not in (hole, i].
        bool movable = hole <= i ? (home <= hole || home > i)
                                 : (home <= hole && home > i);
        if (movable) {
            self->slots [hole] = self->slots [i];
            hole = i;
        }
    }
    self->slots [hole].value = NULL;
    self->size--;
    return value;
}

size_t
sl_sidmap_size (sl_sidmap_t *self)
{
    return self->size;
}

void *
sl_sidmap_next (sl_sidmap_t *self, size_t *cursor, const uint8_t **sid)
{
    while (*cursor < self->capacity) {
        s_slot_t *slot = &self->slots [(*cursor)++];
        if (slot->value) {
            if (sid)
                *sid = slot->sid;
            return slot->value;
        }
    }
    return NULL;
}

void **
sl_sidmap_values (sl_sidmap_t *self, size_t *count)
{
    void **values = sl_xmalloc ((self->size ? self->size : 1) * sizeof (void *));
    size_t n = 0, cursor = 0;
    void *v;
    while ((v = sl_sidmap_next (self, &cursor, NULL)))
        values [n++] = v;
    *count = n;
    return values;
}

size_t
sl_sidmap_drop_if (sl_sidmap_t *self, bool (*drop) (void *value, void *arg), void *arg,
                   void (*destroy) (void *value))
{
    //  Collected first: removing shifts entries under a walk.
    uint8_t (*doomed) [SID_SIZE] = sl_xmalloc ((self->size ? self->size : 1) * SID_SIZE);
    size_t n = 0;
    for (size_t i = 0; i < self->capacity; i++)
        if (self->slots [i].value && drop (self->slots [i].value, arg))
            memcpy (doomed [n++], self->slots [i].sid, SID_SIZE);
    for (size_t i = 0; i < n; i++)
        destroy (sl_sidmap_remove (self, doomed [i]));
    free (doomed);
    return n;
}
