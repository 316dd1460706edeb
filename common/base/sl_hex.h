/*  sl_hex.h - bytes as hex digits and back.

    Stream ids, trace and span ids and digests travel as hex text: one
    writer (lower case, as W3C trace context and our own ids want it) and
    one reader, which takes upper case too unless told the format forbids
    it (a W3C traceparent does).
*/
#ifndef SL_HEX_H
#define SL_HEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

//  n bytes as 2n lower-case hex digits at out (no NUL written).
void sl_hex_write (char *out, const uint8_t *bytes, size_t n);
//  A hex digit's value (0..15), upper or lower case; -1 for any other.
int sl_hex_digit (int c);
//  n bytes from the 2n hex digits at in; lower_only refuses upper case.
//  0 ok, -1 on a character that is not one (out is then partly written).
int sl_hex_read (const char *in, size_t n, uint8_t *out, bool lower_only);

#endif
