/*  Fuzz target: base64 to bytes (common/base/sl_base64) must give the
    same answer, refusal or bytes, whichever code decodes: the table's,
    SSSE3's sixteen characters a step or AVX2's thirty-two (those the CPU
    has), on any bytes; and never write past SL_BASE64_DECODED_MAX. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_base64.h"

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    //  An exact allocation: ASan sees any byte written past the bound.
    size_t room = SL_BASE64_DECODED_MAX (size);
    uint8_t *want = malloc (room ? room : 1), *got = malloc (room ? room : 1);
    size_t want_len = 0, got_len = 0;
    if (sl_base64_use (SL_BASE64_SCALAR))
        __builtin_trap ();
    int want_rc = sl_base64_decode ((const char *) data, size, want, &want_len);
    for (int code = SL_BASE64_SSSE3; code < SL_BASE64_BEST; code++) {
        if (sl_base64_use ((sl_base64_code_t) code))
            continue;                   //  not on this CPU
        int rc = sl_base64_decode ((const char *) data, size, got, &got_len);
        if (rc != want_rc || (rc == 0 && (got_len != want_len || memcmp (got, want, want_len))))
            __builtin_trap ();
    }
    sl_base64_use (SL_BASE64_BEST);
    free (want);
    free (got);
    return 0;
}
