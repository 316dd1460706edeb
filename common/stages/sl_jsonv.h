/*  sl_jsonv.h - a streaming JSON validator: text in any splits, O(1) per byte.

    Tool-call arguments arrive as fragments of JSON text. After every
    fragment the aggregator must know whether the text so far is already one
    complete JSON value (that is how a new call at the same provider index is
    recognised), and at the end whether it is valid, without scanning the
    whole text again for each fragment. This class is a pushdown automaton
    over the bytes: every byte is examined once, and the state is a few words
    plus one bit per open container, whatever the size of the text.

    The grammar is the one of sl_json_valid (RFC 8259 structure, string
    escapes and control characters checked, no UTF-8 validation, nesting
    bounded by SL_JSON_MAX_DEPTH). For any text and any way of splitting it,
    feeding the pieces gives:
        SL_JSONV_COMPLETE  exactly when sl_json_valid (text so far) is true;
        SL_JSONV_INVALID   once no continuation can make it valid (sticky);
        SL_JSONV_EMPTY     when only whitespace was seen;
        SL_JSONV_PARTIAL   otherwise (a proper prefix of some valid text).
    A top-level number is COMPLETE as it stands even though more digits may
    follow ("12" is valid, "123" too).
*/
#ifndef SL_JSONV_H
#define SL_JSONV_H

#include <stddef.h>

#include "common/base/sl_json.h"

typedef enum {
    SL_JSONV_EMPTY = 0,                 //  nothing but whitespace yet
    SL_JSONV_PARTIAL,                   //  a prefix of a valid text
    SL_JSONV_COMPLETE,                  //  one valid value (and whitespace)
    SL_JSONV_INVALID                    //  cannot become valid any more
} sl_jsonv_status_t;

typedef struct _sl_jsonv_t sl_jsonv_t;

sl_jsonv_t *sl_jsonv_new (void);
void sl_jsonv_destroy (sl_jsonv_t **self_p);
//  Forget everything: a new text begins.
void sl_jsonv_reset (sl_jsonv_t *self);
//  Examine the next bytes of the text; returns the status after them.
sl_jsonv_status_t sl_jsonv_feed (sl_jsonv_t *self, const char *data, size_t size);
//  The status after the bytes fed so far.
sl_jsonv_status_t sl_jsonv_status (const sl_jsonv_t *self);
//  Type of the top-level value, from its first byte (SL_JSON_BAD before).
sl_json_type_t sl_jsonv_type (const sl_jsonv_t *self);
//  Bytes fed since the last reset.
size_t sl_jsonv_size (const sl_jsonv_t *self);

#endif
