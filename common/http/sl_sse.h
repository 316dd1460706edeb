/*  sl_sse.h - an incremental server-sent events parser.

    Implements the WHATWG "event stream interpretation" over arbitrary byte
    splits: LF, CR and CRLF line ends (a CR ending one read and an LF
    starting the next are one line end), one leading BOM stripped, comments,
    field/value split at the first colon with one leading space removed, a
    line without colon as a field with an empty value, data lines joined by
    LF, no dispatch (and a reset of the event type) when the data buffer is
    empty, the id rule (ignored when it contains NUL) and the retry rule
    (digits only), unknown fields ignored.

    One deliberate leniency, for upstreams: sl_sse_finish (called when the
    HTTP body ended cleanly) treats an unterminated last line as a line and
    dispatches a pending event even without the final blank line; recorded
    provider streams end that way. And when what follows the last event is
    not SSE at all but a JSON value (Gemini appends a bare JSON error
    object), finish dispatches it as an event of type "error".

    Bounded: a line, an event's data, or trailing bytes over max_size end
    parsing with an error (sl_sse_error says which); memory never grows past
    a small multiple of max_size.
*/
#ifndef SL_SSE_H
#define SL_SSE_H

#include <stddef.h>

#include "common/base/sl_str.h"

#define SL_SSE_DEFAULT_MAX (8u << 20)   //  8 MiB per line / event

typedef struct _sl_sse_t sl_sse_t;

//  One dispatched event. type is "message" when the stream named none;
//  data has its final LF removed; id is the last event id (may be empty).
//  All three are borrowed for the call. Return 0 to go on; any other value
//  stops parsing and is returned by sl_sse_feed / sl_sse_finish.
typedef int (sl_sse_event_fn) (void *arg, sl_str_t type, sl_str_t data, sl_str_t id);

sl_sse_t *sl_sse_new (size_t max_size);
void sl_sse_destroy (sl_sse_t **self_p);
//  Parse the next bytes of the stream. 0 ok, -1 over the size limit, or
//  the callback's non-zero value.
int sl_sse_feed (sl_sse_t *self, const char *data, size_t size, sl_sse_event_fn *fn, void *arg);
//  The stream ended cleanly: apply the end-of-stream leniency (see above).
int sl_sse_finish (sl_sse_t *self, sl_sse_event_fn *fn, void *arg);
//  Why the last call returned -1 (static string), "" otherwise.
const char *sl_sse_error (sl_sse_t *self);
//  The last valid retry value in ms, -1 when none was given.
long sl_sse_retry (sl_sse_t *self);
//  Forget everything (a new stream).
void sl_sse_reset (sl_sse_t *self);

#endif
