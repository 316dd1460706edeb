/*  Fuzz target: the Azure OpenAI stream decoder (common/dialects/azure/sl_azure_decode: OpenAI's
    chunks with the content filter's annotations, refusals and finish) behind the SSE parser must
    survive any bytes and emit only well-formed messages (see fuzz_dec.h). */
#define FUZZ_DIALECT SL_DIALECT_AZURE
#include "tests/fuzz/fuzz_dec.h"
