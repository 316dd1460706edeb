/*  recorder.h - collects what a stage library emits, for assertions. */
#ifndef TEST_RECORDER_H
#define TEST_RECORDER_H

#include <stdlib.h>
#include <string.h>

#include "proto/sl_msg.h"

typedef struct {
    sl_msg_t **msgs;
    size_t count;
} recorder_t;

static inline void
recorder_emit (void *arg, const sl_msg_t *msg)
{
    recorder_t *r = arg;
    r->msgs = realloc (r->msgs, (r->count + 1) * sizeof (sl_msg_t *));
    r->msgs [r->count++] = sl_msg_dup (msg);
}

static inline void
recorder_clear (recorder_t *r)
{
    for (size_t i = 0; i < r->count; i++)
        free (r->msgs [i]);
    free (r->msgs);
    r->msgs = NULL;
    r->count = 0;
}

//  A message of the given type on stream sid 0x11.. epoch 0.
static inline sl_msg_t
recorder_msg (sl_msg_type_t type, int kind)
{
    sl_msg_t m;
    sl_msg_init (&m, type);
    memset (m.sid, 0x11, SL_SID_SIZE);
    m.kind = (uint8_t) kind;
    return m;
}

#endif
