/*  Fuzz target: the output validators must survive any event bytes, and a
    refused event must leave the state as it was (common/dialects/
    sl_validate). The first byte picks the dialect (registered dialects, so
    a new one is fuzzed by being registered); the rest is split into
    events at blank lines, and is also checked whole as the body of a
    non-streaming response. The same bytes, as cut-off tool arguments, must
    close into one valid JSON object (sl_render_close_json), and into one
    valid JSON value or nothing as the policy reads them (sl_json_close). */
#include <stddef.h>
#include <stdint.h>

#include "proto/sl_msg.h"
#include "common/base/sl_json.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_render.h"
#include "common/dialects/sl_validate.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const sl_dialect_t *d = sl_dialect_at (data [0] % sl_dialect_count ());
    if (d->upstream_only)
        return 0;                       //  nothing is rendered for clients in it
    int dialect = d->id;
    sl_validate_t *v = sl_validate_new (dialect);
    sl_str_t rest = sl_str_n (data + 1, size - 1);
    while (rest.len) {
        size_t n = sl_validate_next_event (rest);
        sl_str_t event = sl_str_n (rest.ptr, n ? n : rest.len);
        if (sl_validate_event (v, event) != 0 && sl_validate_event (v, event) == 0)
            __builtin_trap ();          //  refused once, accepted the second time: state moved
        rest = sl_str_n (rest.ptr + event.len, rest.len - event.len);
    }
    sl_validate_end (v);
    sl_validate_destroy (&v);
    v = sl_validate_new (dialect);
    sl_validate_body (v, sl_str_n (data + 1, size - 1));
    sl_validate_destroy (&v);
    sl_buf_t closed = { 0 };
    sl_render_close_json (sl_str_n (data + 1, size - 1), &closed);
    if (sl_json_type (sl_buf_str (&closed)) != SL_JSON_OBJECT || !sl_json_valid (sl_buf_str (&closed)))
        __builtin_trap ();              //  always one JSON object
    sl_buf_reset (&closed);
    sl_buf_puts (&closed, "x");
    int rc = sl_json_close (sl_str_n (data + 1, size - 1), &closed);
    if (rc == 0 ? !sl_json_valid (sl_str_n (closed.data + 1, closed.len - 1)) : closed.len != 1)
        __builtin_trap ();              //  a value appended, or out as it was
    sl_buf_free (&closed);
    return 0;
}
