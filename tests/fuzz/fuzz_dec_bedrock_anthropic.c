/*  Fuzz target: the bedrock-anthropic stream decoder (common/dialects/bedrock/sl_bedrock_anthropic_decode) behind
    the AWS event stream framing must survive any bytes and emit only
    well-formed messages (see fuzz_dec.h). */
#define FUZZ_DIALECT SL_DIALECT_BEDROCK_ANTHROPIC
#include "tests/fuzz/fuzz_dec.h"
