/*  sl_utf8.h - UTF-8 checking and repair for bytes that end up in JSON.

    JSON text is UTF-8 (RFC 8259), and a client's parser may reject, or
    worse, misread, bytes that are not: an upstream that sends them (in a
    tool call's id, name or arguments, or in text) must not pass them on.
    Two kinds of flaw are repaired, each into U+FFFD (the replacement
    character), following Unicode's "maximal subpart" practice (one U+FFFD
    per ill-formed subsequence):

      - bytes that are not well-formed UTF-8 (Unicode table 3-7): stray
        continuation bytes, overlong forms, encoded surrogates (ED A0..BF),
        code points above U+10FFFF, sequences cut short;
      - in JSON text only: a \u escape of a surrogate without its other
        half (\ud800 alone, a low surrogate first), which decodes to no
        character at all. It becomes the escape \ufffd.

    The JSON variants rely on JSON's grammar: a backslash occurs only inside
    strings, so escapes are found without parsing the document. They may be
    given any bytes (an event that is not JSON is repaired the same way, and
    is still not JSON).

    Everything here is allocation-free except the appends to an sl_buf_t.
*/
#ifndef SL_UTF8_H
#define SL_UTF8_H

#include <stdbool.h>
#include <stddef.h>

#include "common/base/sl_buf.h"

//  The replacement character U+FFFD, in UTF-8 and as a JSON escape.
#define SL_UTF8_REPLACEMENT "\xef\xbf\xbd"
#define SL_UTF8_REPLACEMENT_ESCAPE "\\ufffd"

//  The well-formed sequence starting at s (n bytes available): its length
//  (1-4). 0 when s does not start one; *skip then says how many bytes the
//  ill-formed subpart covers (at least 1), to be replaced by one U+FFFD.
size_t sl_utf8_seq (const char *s, size_t n, size_t *skip);
//  True when s is well-formed UTF-8.
bool sl_utf8_valid (const char *s, size_t n);
//  Append s to out, each ill-formed subpart replaced by U+FFFD.
void sl_utf8_repair (sl_buf_t *out, const char *s, size_t n);

//  True when the JSON text s is well-formed UTF-8 and has no lone
//  surrogate escape.
bool sl_utf8_json_clean (const char *s, size_t n);
//  Append the JSON text s to out with both kinds of flaw repaired.
void sl_utf8_repair_json (sl_buf_t *out, const char *s, size_t n);

#endif
