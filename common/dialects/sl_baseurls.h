/*  sl_baseurls.h - the options that move the built-in providers.

    Without a routes file, a service calls one built-in provider per
    dialect (sl_providers_new_default), at its vendor's base URL. This
    class makes the options that change those URLs, one per vendor among
    the registered dialects, named from the vendor (sl_dialect_option):

        --openai-base-url     SLUICE_OPENAI_BASE_URL     openai, responses
        --anthropic-base-url  SLUICE_ANTHROPIC_BASE_URL  anthropic
        --gemini-base-url     SLUICE_GEMINI_BASE_URL     gemini

    A service appends them to its own options (sl_baseurls_opts), parses
    them with the rest, and builds its default providers from what they
    say (sl_baseurls_table). A new dialect gets its option by being
    registered.
*/
#ifndef SL_BASEURLS_H
#define SL_BASEURLS_H

#include "common/base/sl_opts.h"

typedef struct _sl_baseurls_t sl_baseurls_t;

//  One option per vendor of the registered dialects, each defaulting to
//  the vendor's base URL. NULL when the dialects did not register.
sl_baseurls_t *sl_baseurls_new (void);
void sl_baseurls_destroy (sl_baseurls_t **self_p);
//  own's options (ending in SL_OPT_END), then the base URL options, then
//  SL_OPT_END: the table to parse. Owned by self; the options write their
//  values into self.
sl_opt_t *sl_baseurls_opts (sl_baseurls_t *self, const sl_opt_t *own);
//  The base URL of each wire id, after parsing (SL_DIALECT_MAX entries, for
//  sl_providers_new_default). Borrowed from self.
const char *const *sl_baseurls_table (sl_baseurls_t *self);

#endif
