/*  sl_jsonv.c - streaming JSON validation (see sl_jsonv.h).

    The automaton mirrors the iterative skip of common/base/sl_json.c: a state
    for what may come next, and a bit stack saying whether each open
    container is an object or an array. A number has no closing byte, so
    its states hand the byte that ends it back to the "after a value" state.
*/
#include "common/stages/sl_jsonv.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/base/sl_alloc.h"

typedef enum {
    S_VALUE,                            //  a value is expected
    S_ARRAY_FIRST,                      //  after '[': a value or ']'
    S_OBJECT_FIRST,                     //  after '{': a key or '}'
    S_KEY,                              //  after ',' in an object: a key
    S_COLON,                            //  after a key: ':'
    S_AFTER,                            //  after a value: ',' or a close
    S_STRING,                           //  inside a string
    S_ESCAPE,                           //  after a backslash
    S_UNICODE,                          //  inside \uXXXX
    S_NUM_MINUS,                        //  after '-': a digit must follow
    S_NUM_ZERO,                         //  a leading 0 (complete)
    S_NUM_INT,                          //  integer digits (complete)
    S_NUM_DOT,                          //  after '.': a digit must follow
    S_NUM_FRAC,                         //  fraction digits (complete)
    S_NUM_E,                            //  after 'e': sign or digit
    S_NUM_E_SIGN,                       //  after the sign: a digit must follow
    S_NUM_EXP,                          //  exponent digits (complete)
    S_LITERAL,                          //  inside true / false / null
    S_INVALID
} s_state_t;

struct _sl_jsonv_t {
    s_state_t state;
    int depth;                          //  open containers
    uint64_t stack [SL_JSON_MAX_DEPTH / 64];    //  bit set: open object
    bool in_key;                        //  the open string is an object key
    int hex_left;                       //  \u digits still expected
    const char *literal;                //  the literal being matched
    int literal_at;                     //  bytes of it matched so far
    sl_json_type_t top;                 //  type of the top-level value
    size_t size;                        //  bytes fed
};

sl_jsonv_t *
sl_jsonv_new (void)
{
    sl_jsonv_t *self = sl_xcalloc (1, sizeof *self);
    sl_jsonv_reset (self);
    return self;
}

void
sl_jsonv_destroy (sl_jsonv_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free (*self_p);
    *self_p = NULL;
}

void
sl_jsonv_reset (sl_jsonv_t *self)
{
    self->state = S_VALUE;
    self->depth = 0;
    self->in_key = false;
    self->top = SL_JSON_BAD;
    self->size = 0;
}

static inline bool
s_is_ws (char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static inline bool
s_is_digit (char c)
{
    return c >= '0' && c <= '9';
}

static inline bool
s_is_hex (char c)
{
    return s_is_digit (c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static inline bool
s_top_is_object (const sl_jsonv_t *self)
{
    int d = self->depth - 1;
    return (self->stack [d / 64] >> (d % 64)) & 1;
}

//  Open a container; false when nesting is too deep.
static inline bool
s_push (sl_jsonv_t *self, bool object)
{
    if (self->depth == SL_JSON_MAX_DEPTH)
        return false;
    int d = self->depth++;
    if (object)
        self->stack [d / 64] |= (uint64_t) 1 << (d % 64);
    else
        self->stack [d / 64] &= ~((uint64_t) 1 << (d % 64));
    return true;
}

//  The first byte of a value (not whitespace); returns the next state.
static s_state_t
s_value_start (sl_jsonv_t *self, char c)
{
    sl_json_type_t type;
    s_state_t next;
    switch (c) {
        case '{':
            type = SL_JSON_OBJECT;
            next = s_push (self, true) ? S_OBJECT_FIRST : S_INVALID;
            break;
        case '[':
            type = SL_JSON_ARRAY;
            next = s_push (self, false) ? S_ARRAY_FIRST : S_INVALID;
            break;
        case '"':
            type = SL_JSON_STRING;
            self->in_key = false;
            next = S_STRING;
            break;
        case 't':
        case 'f':
        case 'n':
            type = c == 't' ? SL_JSON_TRUE : c == 'f' ? SL_JSON_FALSE : SL_JSON_NULL;
            self->literal = c == 't' ? "true" : c == 'f' ? "false" : "null";
            self->literal_at = 1;
            next = S_LITERAL;
            break;
        case '-':
            type = SL_JSON_NUMBER;
            next = S_NUM_MINUS;
            break;
        case '0':
            type = SL_JSON_NUMBER;
            next = S_NUM_ZERO;
            break;
        default:
            type = SL_JSON_NUMBER;
            next = c >= '1' && c <= '9' ? S_NUM_INT : S_INVALID;
            break;
    }
    if (self->top == SL_JSON_BAD && next != S_INVALID)
        self->top = type;
    return next;
}

sl_jsonv_status_t
sl_jsonv_feed (sl_jsonv_t *self, const char *data, size_t size)
{
    const char *p = data;
    const char *end = data + size;
    s_state_t st = self->state;
    self->size += size;
    while (p < end && st != S_INVALID) {
        char c = *p;
        switch (st) {
            case S_STRING:
                //  The common case: a run of plain bytes.
                while (p < end && *p != '"' && *p != '\\' && (unsigned char) *p >= 0x20)
                    p++;
                if (p == end)
                    break;
                c = *p++;
                if (c == '"')
                    st = self->in_key ? S_COLON : S_AFTER;
                else
                if (c == '\\')
                    st = S_ESCAPE;
                else
                    st = S_INVALID;     //  raw control character
                break;
            case S_ESCAPE:
                p++;
                if (c == 'u') {
                    self->hex_left = 4;
                    st = S_UNICODE;
                }
                else
                if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f'
                ||  c == 'n' || c == 'r' || c == 't')
                    st = S_STRING;
                else
                    st = S_INVALID;
                break;
            case S_UNICODE:
                p++;
                if (!s_is_hex (c))
                    st = S_INVALID;
                else
                if (--self->hex_left == 0)
                    st = S_STRING;
                break;
            case S_VALUE:
            case S_ARRAY_FIRST:
                p++;
                if (s_is_ws (c))
                    break;
                if (c == ']' && st == S_ARRAY_FIRST) {
                    self->depth--;
                    st = S_AFTER;
                }
                else
                    st = s_value_start (self, c);
                break;
            case S_OBJECT_FIRST:
            case S_KEY:
                p++;
                if (s_is_ws (c))
                    break;
                if (c == '"') {
                    self->in_key = true;
                    st = S_STRING;
                }
                else
                if (c == '}' && st == S_OBJECT_FIRST) {
                    self->depth--;
                    st = S_AFTER;
                }
                else
                    st = S_INVALID;
                break;
            case S_COLON:
                p++;
                if (s_is_ws (c))
                    break;
                st = c == ':' ? S_VALUE : S_INVALID;
                break;
            case S_AFTER:
                p++;
                if (s_is_ws (c))
                    break;
                if (self->depth == 0)
                    st = S_INVALID;     //  something after the whole value
                else
                if (c == ',')
                    st = s_top_is_object (self) ? S_KEY : S_VALUE;
                else
                if (c == (s_top_is_object (self) ? '}' : ']')) {
                    self->depth--;
                    st = S_AFTER;
                }
                else
                    st = S_INVALID;
                break;
            case S_LITERAL:
                p++;
                if (c != self->literal [self->literal_at])
                    st = S_INVALID;
                else
                if (self->literal [++self->literal_at] == 0)
                    st = S_AFTER;
                break;
            case S_NUM_MINUS:
                p++;
                st = c == '0' ? S_NUM_ZERO : c >= '1' && c <= '9' ? S_NUM_INT : S_INVALID;
                break;
            case S_NUM_INT:
            case S_NUM_ZERO:
                if (s_is_digit (c) && st == S_NUM_INT)
                    p++;
                else
                if (c == '.') {
                    p++;
                    st = S_NUM_DOT;
                }
                else
                if (c == 'e' || c == 'E') {
                    p++;
                    st = S_NUM_E;
                }
                else
                    st = S_AFTER;       //  the number ended; c is looked at again
                break;
            case S_NUM_DOT:
                p++;
                st = s_is_digit (c) ? S_NUM_FRAC : S_INVALID;
                break;
            case S_NUM_FRAC:
                if (s_is_digit (c))
                    p++;
                else
                if (c == 'e' || c == 'E') {
                    p++;
                    st = S_NUM_E;
                }
                else
                    st = S_AFTER;
                break;
            case S_NUM_E:
                p++;
                st = c == '+' || c == '-' ? S_NUM_E_SIGN : s_is_digit (c) ? S_NUM_EXP : S_INVALID;
                break;
            case S_NUM_E_SIGN:
                p++;
                st = s_is_digit (c) ? S_NUM_EXP : S_INVALID;
                break;
            case S_NUM_EXP:
                if (s_is_digit (c))
                    p++;
                else
                    st = S_AFTER;
                break;
            case S_INVALID:
                break;
        }
    }
    self->state = st;
    return sl_jsonv_status (self);
}

sl_jsonv_status_t
sl_jsonv_status (const sl_jsonv_t *self)
{
    switch (self->state) {
        case S_INVALID:
            return SL_JSONV_INVALID;
        case S_VALUE:
            return self->top == SL_JSON_BAD ? SL_JSONV_EMPTY : SL_JSONV_PARTIAL;
        case S_AFTER:
        case S_NUM_ZERO:
        case S_NUM_INT:
        case S_NUM_FRAC:
        case S_NUM_EXP:
            return self->depth == 0 ? SL_JSONV_COMPLETE : SL_JSONV_PARTIAL;
        default:
            return SL_JSONV_PARTIAL;
    }
}

sl_json_type_t
sl_jsonv_type (const sl_jsonv_t *self)
{
    return self->top;
}

size_t
sl_jsonv_size (const sl_jsonv_t *self)
{
    return self->size;
}
