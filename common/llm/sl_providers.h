/*  sl_providers.h - providers and model routes live with the dialects now:
    a built-in provider is a dialect module's defaults, and a routes file
    names dialects by their modules' names (common/dialects/sl_providers.h).

    This header only forwards there, so that a file still including it by
    its old path keeps building; new code includes the one in
    common/dialects/.
*/
#ifndef SL_LLM_PROVIDERS_H
#define SL_LLM_PROVIDERS_H

#include "common/dialects/sl_providers.h"

#endif
