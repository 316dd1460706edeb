/*  Fuzz target: the bedrock stream decoder (common/dialects/bedrock/sl_bedrock_decode) behind
    the AWS event stream framing must survive any bytes and emit only
    well-formed messages (see fuzz_dec.h). */
#define FUZZ_DIALECT SL_DIALECT_BEDROCK
#include "tests/fuzz/fuzz_dec.h"
