/*  Fuzz target: the gemini stream decoder (common/dialects/gemini/sl_gemini_decode) behind
    the SSE parser must survive any bytes and emit only well-formed
    messages (see fuzz_dec.h). */
#define FUZZ_DIALECT SL_DIALECT_GEMINI
#include "tests/fuzz/fuzz_dec.h"
