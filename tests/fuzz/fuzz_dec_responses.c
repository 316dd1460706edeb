/*  Fuzz target: the responses stream decoder (common/dialects/responses/sl_responses_decode) behind
    the SSE parser must survive any bytes and emit only well-formed
    messages (see fuzz_dec.h). */
#define FUZZ_DIALECT SL_DIALECT_RESPONSES
#include "tests/fuzz/fuzz_dec.h"
