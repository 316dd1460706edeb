/*  Fuzz target: the gemini stream decoder (services/ingest/sl_dec_gemini) behind
    the SSE parser must survive any bytes and emit only well-formed
    messages (see fuzz_dec.h). */
#define FUZZ_DIALECT SL_DIALECT_GEMINI
#include "fuzz_dec.h"
