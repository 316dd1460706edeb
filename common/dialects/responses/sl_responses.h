/*  sl_responses.h - what the files of the OpenAI Responses module export to its table. */
#ifndef SL_RESPONSES_H
#define SL_RESPONSES_H

#include "common/dialects/sl_dialect.h"

SL_DIALECT_DECLARE (responses);

#endif
