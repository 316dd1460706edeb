/*  sl_sidmap.h - a hash map from stream id (16 random bytes) to a pointer.

    Every stage keeps its per-stream state here. Stream ids are random, so
    their first bytes are already a good hash. Open addressing with linear
    probing and backward-shift deletion: no tombstones, lookups touch one or
    two cache lines. The map does not own its values.
*/
#ifndef SL_SIDMAP_H
#define SL_SIDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct _sl_sidmap_t sl_sidmap_t;

sl_sidmap_t *sl_sidmap_new (void);
//  Destroys the map, not the values.
void sl_sidmap_destroy (sl_sidmap_t **self_p);
//  The value for sid, or NULL.
void *sl_sidmap_get (sl_sidmap_t *self, const uint8_t *sid);
//  Insert or replace; value must not be NULL.
void sl_sidmap_put (sl_sidmap_t *self, const uint8_t *sid, void *value);
//  Remove and return the value for sid (NULL when absent).
void *sl_sidmap_remove (sl_sidmap_t *self, const uint8_t *sid);
size_t sl_sidmap_size (sl_sidmap_t *self);
//  Iterate: start with *cursor = 0; returns the next value and its sid, or
//  NULL at the end. Do not insert or remove while iterating (use
//  sl_sidmap_values for that).
void *sl_sidmap_next (sl_sidmap_t *self, size_t *cursor, const uint8_t **sid);
//  Collect all values into a new array (caller frees); safe to mutate the
//  map while walking the copy.
void **sl_sidmap_values (sl_sidmap_t *self, size_t *count);
//  Remove every entry for which drop (value, arg) is true, passing each
//  removed value to destroy; returns how many.
size_t sl_sidmap_drop_if (sl_sidmap_t *self, bool (*drop) (void *value, void *arg), void *arg,
                          void (*destroy) (void *value));

#endif
