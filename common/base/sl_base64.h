/*  sl_base64.h - base64 (RFC 4648's standard alphabet, padded) to bytes.

    A reader for bytes that arrive base64 in every message of a stream
    (Claude on Bedrock's chunk frames carry each event so), where the
    decode cost counts: a table and four characters a step, strict as
    libsodium's original variant is (the length a multiple of four, '='
    only as the last one or two characters, the unused bits zero).
*/
#ifndef SL_BASE64_H
#define SL_BASE64_H

#include <stddef.h>
#include <stdint.h>

//  The most bytes n characters of base64 decode to.
#define SL_BASE64_DECODED_MAX(n) ((n) / 4 * 3)

//  The bytes of the len characters at in, written at out (room for
//  SL_BASE64_DECODED_MAX (len) bytes); their count at *out_len. 0, or -1
//  when in is not padded base64 (out is then partly written).
int sl_base64_decode (const char *in, size_t len, uint8_t *out, size_t *out_len);

#endif
