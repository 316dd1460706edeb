/*  Fuzz target: the anthropic stream decoder (common/dialects/anthropic/sl_anthropic_decode) behind
    the SSE parser must survive any bytes and emit only well-formed
    messages (see fuzz_dec.h). */
#define FUZZ_DIALECT SL_DIALECT_ANTHROPIC
#include "tests/fuzz/fuzz_dec.h"
