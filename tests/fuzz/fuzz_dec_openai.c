/*  Fuzz target: the openai stream decoder (common/dialects/openai/sl_openai_decode) behind
    the SSE parser must survive any bytes and emit only well-formed
    messages (see fuzz_dec.h). */
#define FUZZ_DIALECT SL_DIALECT_OPENAI
#include "tests/fuzz/fuzz_dec.h"
