/*  sl_json.h - a zero-allocation JSON scanner and writer for hot paths.

    Provider chunks are decoded once per chunk at up to millions of chunks a
    second, and rendered chunks are written at the same rate. A tree parser
    (jansson) allocates every node; here a value is a slice of the input and
    is only walked or copied when a caller asks for it. jansson is still used
    where a tree is the right tool (request bodies, policy values).

    Every function checks its input: malformed JSON yields -2 (or NULL from
    sl_json_skip) and never reads outside [ptr, ptr + len). Nesting is bounded
    by SL_JSON_MAX_DEPTH.

    Slices returned here borrow from the caller's input buffer.
*/
#ifndef SL_JSON_H
#define SL_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

#define SL_JSON_MAX_DEPTH 256           //  deeper nesting is rejected

typedef enum {
    SL_JSON_BAD = 0,
    SL_JSON_OBJECT,
    SL_JSON_ARRAY,
    SL_JSON_STRING,
    SL_JSON_NUMBER,
    SL_JSON_TRUE,
    SL_JSON_FALSE,
    SL_JSON_NULL
} sl_json_type_t;

//  Iterator over the members of an object or the elements of an array.
typedef struct {
    const char *p;                      //  next unread byte
    const char *end;                    //  end of the container's text
    bool first;                         //  no member read yet
    char close;                         //  '}' or ']'
} sl_json_iter_t;

//  Skip optional whitespace and one complete value; returns the byte after
//  it, or NULL when the value is malformed, truncated or too deep.
const char *sl_json_skip (const char *p, const char *end);
//  True when s holds exactly one JSON value (whitespace around is allowed).
bool sl_json_valid (sl_str_t s);
//  The type of the value starting at the first non-space byte of s (not
//  validated beyond its first byte).
sl_json_type_t sl_json_type (sl_str_t s);
//  Trim JSON whitespace from both ends.
sl_str_t sl_json_trim (sl_str_t s);

//  What a JSON document holds, counted in one pass without allocating (to
//  know what a tree parser would build before it builds it).
typedef struct {
    size_t objects;
    size_t arrays;
    size_t members;                     //  object members (keys)
    size_t key_bytes;                   //  raw bytes of the keys
    size_t elements;                    //  array elements
    size_t strings;                     //  string values (keys not counted)
    size_t string_bytes;                //  raw bytes of the string values
    size_t longest;                     //  raw bytes of the longest string or key
    size_t numbers;
    size_t literals;                    //  true, false, null
    size_t depth;                       //  deepest nesting of containers (0: a scalar)
    size_t error_at;                    //  malformed: offset of the byte where it went wrong
    bool too_deep;                      //  malformed: nested deeper than SL_JSON_MAX_DEPTH
} sl_json_stats_t;

//  Count what s holds: 0 when s is exactly one value (whitespace around
//  allowed), -2 when it is not (error_at and too_deep say why).
int sl_json_stats (sl_str_t s, sl_json_stats_t *out);

//  Start iterating; 0 on success, -2 when s is not an object / array.
int sl_json_object (sl_json_iter_t *it, sl_str_t s);
int sl_json_array (sl_json_iter_t *it, sl_str_t s);
//  Next member: key is the raw text between the quotes (escapes intact),
//  value the raw value text. Returns 1, 0 at the end, -2 when malformed.
int sl_json_next_member (sl_json_iter_t *it, sl_str_t *key, sl_str_t *value);
//  Next array element; 1, 0 at the end, -2 when malformed.
int sl_json_next_elem (sl_json_iter_t *it, sl_str_t *value);
//  Find a member by key in an object; 1 found, 0 absent, -2 malformed.
int sl_json_find (sl_str_t object, const char *key, sl_str_t *value);
//  Compare a raw key (as returned by sl_json_next_member) with a C string.
bool sl_json_key_eq (sl_str_t raw_key, const char *key);

//  The text of a string value. Zero-copy when the string has no escapes;
//  otherwise decoded into scratch (appended). Slices into scratch stay valid
//  only while scratch does not grow: reserve the input size once before
//  decoding several strings from one buffer. 0 ok, -2 not a valid string.
int sl_json_str (sl_str_t value, sl_buf_t *scratch, sl_str_t *out);
//  Decode a string value and append its text to out; 0 ok, -2 malformed.
int sl_json_unescape (sl_str_t value, sl_buf_t *out);
//  Integer / floating point value; 0 ok, -2 not a number (or out of range).
int sl_json_i64 (sl_str_t value, int64_t *out);
int sl_json_f64 (sl_str_t value, double *out);
//  true / false; 0 ok, -2 not a boolean.
int sl_json_bool (sl_str_t value, bool *out);
bool sl_json_is_null (sl_str_t value);

//  A JSON text cut off somewhere (the arguments of a tool call a stream did
//  not finish), closed into one value that says what the text said so far:
//  complete members and elements are kept; a string cut inside is kept up
//  to the cut and closed (an escape or UTF-8 sequence broken by the cut is
//  dropped); a key without its value, a number or literal cut inside, are
//  dropped; open containers are closed innermost first:
//      {"command":"rm -rf /tm        ->  {"command":"rm -rf /tm"}
//      {"a":[1,{"b":tr              ->  {"a":[1,{}]}
//  A complete value is copied as it is (trimmed). Appends the value to out
//  and returns 0; -2 (out unchanged) when the text is not the beginning of
//  one JSON value, when what would be kept is not valid JSON, or when it
//  nests too deeply. (What comes after the last place to cut is dropped
//  unread: a malformed tail is dropped like a cut-off one.)
int sl_json_close (sl_str_t partial, sl_buf_t *out);

//  Append s as a quoted, escaped JSON string. Bytes that are not
//  well-formed UTF-8 become U+FFFD (sl_utf8.h): the output is always
//  well-formed JSON text, whatever s holds.
void sl_json_put_str (sl_buf_t *out, const char *s, size_t n);
static inline void
sl_json_put_sl (sl_buf_t *out, sl_str_t s)
{
    sl_json_put_str (out, s.ptr ? s.ptr : "", s.len);
}
//  Append s escaped for use inside a JSON string (no quotes), with the
//  same repair.
void sl_json_put_escaped (sl_buf_t *out, const char *s, size_t n);
//  Append a JSON value's text as it is (an upstream's arguments, citations,
//  extras), with bytes that are not well-formed UTF-8 and lone surrogate
//  escapes replaced by U+FFFD (sl_utf8_repair_json). Nothing for an absent
//  or empty value.
void sl_json_put_raw (sl_buf_t *out, sl_str_t json);

#endif
