/*  sl_validate_impl.h - what a dialect's validator implements and may call.

    Private to the dialect modules' validators (common/dialects/<name>/
    sl_<name>_validate.c) and sl_validate.c. A validator is a table of
    checks (sl_validator_vt_t, a module's `validator`) over the state of one
    response, a plain struct shared by every dialect: a check works on a
    copy and the caller commits it only when the event is legal. The
    helpers read event data where it stands with the zero-allocation JSON
    scanner; decoded strings go through the validator's one scratch
    buffer.
*/
#ifndef SL_VALIDATE_IMPL_H
#define SL_VALIDATE_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/dialects/sl_validate.h"

#define SL_VD_ID_MAX 160                //  ids kept for comparison, bytes
#define SL_VD_TYPE_MAX 48               //  block / item types kept, bytes

typedef enum {
    SL_VD_NEW,                          //  nothing sent yet
    SL_VD_OPEN,                         //  the response is in progress
    SL_VD_FINISHED,                     //  OpenAI: finish_reason sent, usage / [DONE] may follow
    SL_VD_END                           //  terminal event or error sent: nothing may follow
} sl_vd_phase_t;

typedef struct {
    sl_vd_phase_t phase;
    char id [SL_VD_ID_MAX];             //  chunk id, responseId, or the open item's id
    //  OpenAI
    int tool_count;                     //  tool calls opened so far
    bool usage_seen;
    //  Anthropic and Responses
    int next_index;                     //  next block / output index
    int open_index;                     //  open block / item, -1 none
    char open_type [SL_VD_TYPE_MAX];
    bool after_tool_use;                //  Anthropic: a tool_use block was started
    int tool_uses;
    bool delta_seen;                    //  Anthropic: message_delta sent
    uint64_t seq;                       //  Responses: next sequence_number
    bool part_open;                     //  Responses: a content part is open
    bool errored;                       //  an error event: Responses' response.failed must
                                        //  follow, Gemini's bare error object may
    int items_done;
} sl_vd_state_t;

typedef struct _sl_validator_vt_t sl_validator_vt_t;
struct _sl_validator_vt_t {
    //  One event (its name, NULL when it has none, and its data, trimmed)
    //  against the state. 0 legal (st advanced), -1 illegal (sl_vd_fail).
    int (*event) (sl_validate_t *self, sl_vd_state_t *st, sl_str_t name, sl_str_t data);
    //  The whole body of a non-streaming response (trimmed). 0 / -1.
    int (*body) (sl_validate_t *self, sl_str_t body);
    //  Optional: bytes with neither a data: nor an event: line (event is
    //  all of them). NULL: only comments and blank lines, which are legal
    //  before the end.
    int (*bare) (sl_validate_t *self, sl_vd_state_t *st, sl_str_t event);
};

//  Why the check failed; returns -1.
int sl_vd_fail (sl_validate_t *self, const char *format, ...) __attribute__ ((format (printf, 2, 3)));
//  A value by dotted path: "choices.0.delta.role". 1 found, 0 absent, -2 malformed.
int sl_vd_path (sl_str_t json, const char *path, sl_str_t *out);
//  The decoded string at path, or absent (ptr NULL) when missing or not a
//  string. Borrowed from the validator's scratch until the next decode.
sl_str_t sl_vd_string (sl_validate_t *self, sl_str_t json, const char *path);
//  Walk an object once, keeping the values of the named keys (ptr NULL
//  when absent). Walking every member checks the whole object, so 0 means
//  it is well-formed JSON with nothing after it; -2 otherwise. One walk
//  instead of a lookup per field: lookups from the top re-scan every
//  member before the one wanted.
int sl_vd_pick (sl_str_t json, const char *const *keys, sl_str_t *values);
//  The decoded text of a string value (absent when not a string), in the
//  validator's scratch until the next decode.
sl_str_t sl_vd_text (sl_validate_t *self, sl_str_t value);
//  Elements of the array at path; -1 when it is not one.
int sl_vd_count (sl_str_t json, const char *path);

static inline bool
sl_vd_int_of (sl_str_t value, int64_t *out)
{
    return value.ptr && sl_json_type (value) == SL_JSON_NUMBER && sl_json_i64 (value, out) == 0;
}

static inline bool
sl_vd_has (sl_str_t json, const char *path)
{
    sl_str_t v;
    return sl_vd_path (json, path, &v) == 1;
}

static inline bool
sl_vd_null_or_absent (sl_str_t json, const char *path)
{
    sl_str_t v;
    return sl_vd_path (json, path, &v) != 1 || sl_json_is_null (v);
}

static inline bool
sl_vd_type_is (sl_str_t json, const char *path, sl_json_type_t type)
{
    sl_str_t v;
    return sl_vd_path (json, path, &v) == 1 && sl_json_type (v) == type;
}

//  Integer at path; false when absent or not an integer.
static inline bool
sl_vd_int (sl_str_t json, const char *path, int64_t *out)
{
    sl_str_t v;
    return sl_vd_path (json, path, &v) == 1 && sl_json_type (v) == SL_JSON_NUMBER
        && sl_json_i64 (v, out) == 0;
}

static inline void
sl_vd_copy (char *dst, size_t size, sl_str_t src)
{
    size_t n = src.len < size - 1 ? src.len : size - 1;
    memcpy (dst, src.ptr ? src.ptr : "", n);
    dst [n] = 0;
}

//  Is s the id kept (as far as it was kept)?
static inline bool
sl_vd_same (const char *kept, sl_str_t s)
{
    return s.ptr && strlen (kept) == (s.len < SL_VD_ID_MAX - 1 ? s.len : SL_VD_ID_MAX - 1)
        && memcmp (kept, s.ptr, strlen (kept)) == 0;
}

//  A string at path (may be empty); absent or another type fails.
static inline bool
sl_vd_is_string (sl_str_t json, const char *path)
{
    return sl_vd_type_is (json, path, SL_JSON_STRING);
}

//  The one element of an array; false when it has not exactly one.
static inline bool
sl_vd_only_elem (sl_str_t array, sl_str_t *elem)
{
    sl_json_iter_t it;
    sl_str_t extra;
    return array.ptr && sl_json_array (&it, array) == 0 && sl_json_next_elem (&it, elem) == 1
        && sl_json_next_elem (&it, &extra) == 0;
}

static inline bool
sl_vd_string_or_null (sl_str_t v)
{
    return !v.ptr || sl_json_is_null (v) || sl_json_type (v) == SL_JSON_STRING;
}

#endif
