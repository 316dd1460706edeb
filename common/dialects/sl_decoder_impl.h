/*  sl_decoder_impl.h - what a dialect decoder implements and may call.

    Private to the dialect modules' decoders (common/dialects/<name>/
    sl_<name>_decode.c) and sl_decoder.c: each dialect's decoder is a table
    of functions over its own state struct (its module's `decoder`); the
    shared decoder object carries the output callback, scratch space, error
    state and what every provider's stream has: whether the response was
    identified (MESSAGE), finished (FINISH) and ended (DONE or an error).

    A decoder sees events, not bytes: a type and a data payload, whatever
    framed them (SSE today; another framing hands its frames over the same
    way). The helpers below read JSON slices, so they serve any framing.
    What is the same in every provider's stream is written here once: the
    response's identity, usage read by a table of where the provider puts
    each count, the finish, the end of the body (DONE once a finish was
    seen, else the stream stopped short), errors in the shapes providers
    use, a table of per-block state indexed by the provider's own index.
    A decoder that wraps another (a provider that sends another's events
    inside frames of its own) calls the inner table's operations with
    state of the inner table's size.
*/
#ifndef SL_DECODER_IMPL_H
#define SL_DECODER_IMPL_H

#include <stddef.h>
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
    //  The dialect's own state of a stream: its size (zeroed at the start;
    //  0: none), what sets it up beyond zeros and what frees what it holds
    //  (each NULL when there is nothing to do).
    size_t state_size;
    void (*init) (void *state);
    void (*clear) (void *state);
    //  One event (its type and data, as the framing gave them). 0 ok, -2
    //  malformed (after sl_decoder_fail).
    int (*event) (void *state, sl_decoder_t *dec, sl_str_t type, sl_str_t data);
    //  Optional: the body ended cleanly: emit what the dialect held back,
    //  then end (sl_decoder_end). NULL: sl_decoder_end alone. 0 ok.
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
//  The end of a body: DONE when a finish was emitted (the provider's own
//  end marker was lost, or it has none), else an ERROR: the upstream
//  stopped short. What a table without a finish operation does. 0.
int sl_decoder_end (sl_decoder_t *dec);
//  Emit the response's identity (MESSAGE) once: the first call emits,
//  later ones do nothing. id, model (JSON strings; another type is
//  dropped) and created (an integer, seconds) are raw JSON values, absent
//  (ptr NULL) when the provider gave none.
void sl_decoder_identify (sl_decoder_t *dec, sl_str_t id, sl_str_t model, sl_str_t created);
//  Emit FINISH with the fields of tmpl (finish_raw, stop_seq): the
//  response is finished, and a body that ends after it ends cleanly.
void sl_decoder_emit_finish (sl_decoder_t *dec, sl_msg_t *tmpl);

//  Where a provider reports one token count: a member of its usage
//  object, or a member of an object inside it (inner). Lists end with a
//  NULL key.
typedef struct {
    const char *key;
    const char *inner;                  //  NULL: the member itself is the count
    size_t slot;                        //  offsetof (sl_usage_t, <count>)
} sl_usage_key_t;
//  Read the counts of a usage object (raw JSON) into out; counts it does
//  not give are left as they were. -1 when usage is not an object.
int sl_decoder_usage (sl_str_t usage, const sl_usage_key_t *keys, sl_usage_t *out);
//  Read a usage object and emit it as USAGE. -1 (nothing emitted) when
//  usage is not an object.
int sl_decoder_emit_usage (sl_decoder_t *dec, sl_str_t usage, const sl_usage_key_t *keys);
//  An entry of a per-block table (*table of *count entries of size
//  bytes, zeroed when they are made) by the provider's index, the table
//  grown to hold it; NULL for an index the table may not reach
//  (SL_DECODER_MAX_INDEX). The table is the caller's to free.
void *sl_decoder_slot (void **table, size_t *count, size_t size, int32_t index);
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
//  True when key is one of the names (a list ended by SL_STR_NULL), byte
//  for byte.
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

//  What a decoder says of an object it reads when it is not one, and
//  the members it reads past.
typedef struct {
    const sl_str_t *known;              //  members read past (sl_decoder_key_in); every member
                                        //  neither named nor known counts as unknown. NULL:
                                        //  none counts
    const char *not_object;             //  the failure when the value is not an object
    const char *malformed;              //  the failure when it is malformed
} sl_decoder_object_t;

//  The members of an object a decoder reads, named once in an X-macro
//  list, X (INDEX, "name"): SL_DECODER_MEMBERS (fn, LIST) defines the
//  indices (an enum of the INDEX names and fn_count) and
//
//    static int fn (sl_decoder_t *dec, sl_str_t object,
//                   const sl_decoder_object_t *shape, sl_str_t *values);
//
//  which walks the object once, keeping the raw value of each named member
//  in values [INDEX] (absent when there is none; the last when there are
//  several) and counting the unknown ones: 0, or -2 (after
//  sl_decoder_fail) when it is not a well-formed object. The names
//  compare as SL_KEY compares them, each a comparison with a constant, as
//  a chain written out would: this walk is every event's.
#define SL_DECODER_INDEX_(index, name) index,
#define SL_DECODER_MATCH_(index, name) \
    if (SL_KEY (key, name)) { \
        values [index] = value; \
        continue; \
    }
#define SL_DECODER_MEMBERS(fn, LIST) \
    enum { LIST (SL_DECODER_INDEX_) fn##_count }; \
    static int \
    fn (sl_decoder_t *dec, sl_str_t object, const sl_decoder_object_t *shape, sl_str_t *values) \
    { \
        for (int i = 0; i < fn##_count; i++) \
            values [i] = SL_STR_NULL; \
        sl_json_iter_t it; \
        if (sl_json_object (&it, object)) \
            return sl_decoder_fail (dec, shape->not_object); \
        sl_str_t key, value; \
        int rc; \
        while ((rc = sl_json_next_member (&it, &key, &value)) == 1) { \
            LIST (SL_DECODER_MATCH_) \
            if (shape->known && !sl_decoder_key_in (key, shape->known)) \
                sl_decoder_count_unknown (dec); \
        } \
        return rc < 0 ? sl_decoder_fail (dec, shape->malformed) : 0; \
    }

#endif
