/*  sl_baseurls.c - the built-in providers' base URL options (see
    sl_baseurls.h).
*/
#include "common/dialects/sl_baseurls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/dialects/sl_dialect.h"

#define S_HELP_MAX 256                  //  an option's help text

//  One vendor's option.
typedef struct {
    const char *vendor;                 //  borrowed from its first dialect's module
    char name [SL_DIALECT_OPTION_MAX];  //  "openai-base-url"
    char variable [SL_DIALECT_OPTION_MAX];  //  "SLUICE_OPENAI_BASE_URL"
    char help [S_HELP_MAX];
    const char *value;                  //  the default, then what the option says
} s_option_t;

struct _sl_baseurls_t {
    s_option_t options [SL_DIALECT_MAX];    //  a vendor has one dialect at least
    size_t count;
    sl_opt_t *table;                    //  the last sl_baseurls_opts
    const char *urls [SL_DIALECT_MAX];  //  by wire id
};

static s_option_t *
s_option_of (sl_baseurls_t *self, const char *vendor)
{
    for (size_t i = 0; i < self->count; i++)
        if (strcmp (self->options [i].vendor, vendor) == 0)
            return &self->options [i];
    return NULL;
}

//  "base URL of the built-in openai and responses providers, ...": the
//  dialects the option moves.
static void
s_help (s_option_t *o)
{
    sl_buf_t help = { 0 };
    size_t named = 0;
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        if (!sl_dialect_is_client (d) || strcmp (sl_dialect_vendor (d), o->vendor) != 0)
            continue;
        sl_buf_puts (&help, named++ ? " and " : "base URL of the built-in ");
        sl_buf_puts (&help, d->name);
    }
    sl_buf_puts (&help, named > 1 ? " providers, without a routes file" : " provider, without a routes file");
    snprintf (o->help, sizeof o->help, "%s", sl_buf_cstr (&help));
    sl_buf_free (&help);
}

sl_baseurls_t *
sl_baseurls_new (void)
{
    if (sl_dialect_init (NULL))
        return NULL;
    sl_baseurls_t *self = sl_xcalloc (1, sizeof *self);
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        //  A cloud's dialect has no built-in provider, so no option.
        if (!sl_dialect_is_client (d) || !sl_dialect_vendor_first (d))
            continue;
        s_option_t *o = &self->options [self->count++];
        o->vendor = sl_dialect_vendor (d);
        o->value = d->base_url;
        sl_dialect_option (d, SL_DIALECT_BASE_URL_OPTION, o->name);
        sl_dialect_option (d, SL_DIALECT_BASE_URL_VARIABLE, o->variable);
        s_help (o);
    }
    return self;
}

void
sl_baseurls_destroy (sl_baseurls_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    free ((*self_p)->table);
    free (*self_p);
    *self_p = NULL;
}

sl_opt_t *
sl_baseurls_opts (sl_baseurls_t *self, const sl_opt_t *own)
{
    size_t n = 0;
    while (own && own [n].name)
        n++;
    free (self->table);
    self->table = sl_xcalloc (n + self->count + 1, sizeof (sl_opt_t));
    for (size_t i = 0; i < n; i++)
        self->table [i] = own [i];
    for (size_t i = 0; i < self->count; i++) {
        s_option_t *o = &self->options [i];
        self->table [n + i] = (sl_opt_t) { o->name, o->variable, &o->value, o->help };
    }
    return self->table;
}

const char *const *
sl_baseurls_table (sl_baseurls_t *self)
{
    for (size_t i = 0; i < sl_dialect_count (); i++) {
        const sl_dialect_t *d = sl_dialect_at (i);
        if (sl_dialect_is_client (d))
            self->urls [d->id] = s_option_of (self, sl_dialect_vendor (d))->value;
    }
    return self->urls;
}
