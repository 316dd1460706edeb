/*  sl_argstream.h - JSON text from arguments streamed as partial values.

    Gemini (Vertex streamFunctionCallArguments) streams a tool call's
    arguments not as JSON text but as a sequence of partial values, each
    naming its place with a JSON path ("$.location", "$.items[0].name")
    and, for strings, arriving in pieces (willContinue). The delta
    convention is that a call's text fragments, concatenated, are its
    arguments as JSON; this class is the incremental writer that turns the
    partial values into those fragments, opening and closing objects and
    arrays as the paths move, without ever holding the whole document.

    Values are given as raw JSON tokens from the provider's chunk (a string
    literal with its quotes, a number, true, false, null): a string's
    escapes are already valid JSON, so its pieces are copied, not decoded.

    Paths must move forward: a value may not reopen an object or array
    element that was already closed (-2). Depth is bounded.
*/
#ifndef SL_ARGSTREAM_H
#define SL_ARGSTREAM_H

#include <stdbool.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

#define SL_ARGSTREAM_MAX_DEPTH 64       //  nested objects / arrays in a path

typedef struct _sl_argstream_t sl_argstream_t;

sl_argstream_t *sl_argstream_new (void);
void sl_argstream_destroy (sl_argstream_t **self_p);
//  Start a new document (forget everything written).
void sl_argstream_begin (sl_argstream_t *self);
//  One partial value at path (decoded text, e.g. "$.a[0]"). value is the
//  raw JSON token; more (strings only) says the string continues in the
//  next value for the same path. Appends the JSON text it produces to out.
//  0 ok, -2 for a path that is malformed, too deep, goes backwards or
//  names the root itself (nothing is appended then).
int sl_argstream_put (sl_argstream_t *self, sl_str_t path, sl_str_t value, bool more,
                      sl_buf_t *out);
//  Close the document: appends what closes every open string, array and
//  object ("{}" when nothing was written).
void sl_argstream_end (sl_argstream_t *self, sl_buf_t *out);
//  True between the first put and end.
bool sl_argstream_open (sl_argstream_t *self);

#endif
