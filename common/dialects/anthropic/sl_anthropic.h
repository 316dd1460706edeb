/*  sl_anthropic.h - what the files of the Anthropic Messages module export to its table. */
#ifndef SL_ANTHROPIC_H
#define SL_ANTHROPIC_H

#include "common/dialects/sl_dialect.h"

SL_DIALECT_DECLARE (anthropic);

#endif
