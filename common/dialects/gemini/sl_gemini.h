/*  sl_gemini.h - what the files of the Gemini module export to its table. */
#ifndef SL_GEMINI_H
#define SL_GEMINI_H

#include "common/dialects/sl_dialect.h"

SL_DIALECT_DECLARE (gemini);

#endif
