/*  Fuzz target: the responses stream decoder (services/ingest/sl_dec_responses) behind
    the SSE parser must survive any bytes and emit only well-formed
    messages (see fuzz_dec.h). */
#define FUZZ_DIALECT SL_DIALECT_RESPONSES
#include "fuzz_dec.h"
