/*  sl_decoder_impl.h - what a dialect decoder implements and may call.

    Private to the dialect modules' decoders (common/dialects/<name>/
    sl_<name>_decode.c) and sl_decoder.c: each dialect's decoder is a table
    of functions over its own state struct (its module's `decoder`); the
    shared decoder object carries the output callback, scratch space and
    error state.
*/
#ifndef SL_DECODER_IMPL_H
#define SL_DECODER_IMPL_H

#include <string.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"
#include "common/dialects/sl_decoder.h"

//  Per-block state tables are indexed by the provider's own index; an
//  index past this is treated as an unknown block (counted, skipped), so a
//  hostile index cannot make a decoder allocate without bound.
#define SL_DECODER_MAX_INDEX 4096

typedef struct _sl_decoder_vt_t sl_decoder_vt_t;
struct _sl_decoder_vt_t {
    void *(*create) (void);
    void (*destroy) (void *state);
    //  0 ok, -2 malformed (after sl_decoder_fail)
    int (*event) (void *state, sl_decoder_t *dec, sl_str_t type, sl_str_t data);
    //  body ended cleanly: emit DONE or an error; 0 ok
    int (*finish) (void *state, sl_decoder_t *dec);
};

//  Emit one message (type DELTA or ERROR; the envelope is the caller's).
void sl_decoder_emit (sl_decoder_t *dec, const sl_msg_t *msg);
//  Emit a DELTA of the given kind with the fields of tmpl.
void sl_decoder_emit_delta (sl_decoder_t *dec, int kind, sl_msg_t *tmpl);
//  Emit a DELTA of the given kind carrying only an index.
void sl_decoder_emit_index (sl_decoder_t *dec, int kind, int32_t index);
//  Emit an ERROR reported by the provider (code, message, HTTP status) and
//  mark the stream done: nothing the provider sends after it counts.
void sl_decoder_emit_error (sl_decoder_t *dec, sl_str_t code, sl_str_t message, int status);
//  Emit DONE and mark the stream done.
void sl_decoder_emit_done (sl_decoder_t *dec);
//  Scratch space for unescaped strings, reset and reserved to the size of
//  the current event before each event (slices stay valid for the event).
sl_buf_t *sl_decoder_scratch (sl_decoder_t *dec);
//  A JSON string value as text: absent (ptr NULL) for null, a slice of the
//  event or of scratch otherwise. 0 ok, -2 when value is neither.
int sl_decoder_str (sl_decoder_t *dec, sl_str_t value, sl_str_t *out);
//  A JSON integer value that fits an index (0 .. INT32_MAX); -2 otherwise.
int sl_decoder_index (sl_str_t value, int32_t *out);
//  Read the error object of a provider (OpenAI, Anthropic, Gemini shapes:
//  type / status / code, message, HTTP-like code) and emit it as ERROR.
void sl_decoder_emit_error_object (sl_decoder_t *dec, sl_str_t error);
//  The HTTP status of a provider's error type name (0 when unknown).
int sl_decoder_error_status (sl_str_t type);
//  Record a malformed event; returns -2.
int sl_decoder_fail (sl_decoder_t *dec, const char *why);
void sl_decoder_count_unknown (sl_decoder_t *dec);
bool sl_decoder_is_done (sl_decoder_t *dec);
void sl_decoder_set_done (sl_decoder_t *dec);
//  True when key is one of the names (a list ended by SL_STR_NULL).
bool sl_decoder_key_in (sl_str_t key, const sl_str_t *names);

//  A raw member name (escapes intact) equals a literal. The length decides
//  most comparisons at once; a name with escapes is longer than its text,
//  so only a longer name needs sl_json_key_eq to decode it.
static inline bool
sl_decoder_key (sl_str_t key, const char *lit, size_t n)
{
    if (key.len == n)
        return memcmp (key.ptr, lit, n) == 0;
    return key.len > n && memchr (key.ptr, '\\', key.len) && sl_json_key_eq (key, lit);
}
#define SL_KEY(key, lit) sl_decoder_key ((key), (lit), sizeof (lit) - 1)

#endif
