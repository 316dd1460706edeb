/*  sl_base64.h - base64 (RFC 4648's standard alphabet, padded) to bytes.

    A reader for bytes that arrive base64 in every message of a stream
    (Claude on Bedrock's chunk frames carry each event so), where the
    decode cost counts: sixteen or thirty-two characters a step where the
    CPU has the instructions, a table and four characters a step otherwise,
    strict as
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

//  The code that decodes: the widest the CPU has (the default), or a
//  narrower one, so that tests check each against the others.
typedef enum {
    SL_BASE64_SCALAR = 0,               //  a table lookup per character
    SL_BASE64_SSSE3 = 1,                //  sixteen characters a step
    SL_BASE64_AVX2 = 2,                 //  thirty-two
    SL_BASE64_BEST = 3                  //  the widest the CPU has
} sl_base64_code_t;
//  0, or -1 when the CPU (or the build's architecture) lacks it.
int sl_base64_use (sl_base64_code_t code);

#endif
