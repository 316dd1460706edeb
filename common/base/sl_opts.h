/*  sl_opts.h - settings from flags and SLUICE_* environment variables.

    Each option has a long flag (--next tcp://..., or --next=tcp://...) and
    an environment variable; a flag beats the variable, the variable beats
    the default. Options with no explicit variable get SLUICE_<ROLE>_<NAME>
    (upper case, '-' becomes '_'), so processes started from one shell do
    not read each other's settings. Values are strings; callers convert.

    A switch is an option whose default is SL_OPT_OFF: given alone
    (--allow-anonymous) it is "yes"; --allow-anonymous=no and its variable
    say yes or no (sl_opts_switch reads the value).
*/
#ifndef SL_OPTS_H
#define SL_OPTS_H

typedef struct {
    const char *name;                   //  long flag, without "--"
    const char *env;                    //  variable, or NULL for the default name
    const char **value;                 //  in: default; out: the value
    const char *help;
} sl_opt_t;

#define SL_OPT_END { 0, 0, 0, 0 }

//  A switch's default (the option's value points at it until it is set).
extern const char SL_OPT_OFF [];

//  Parse argv then the environment into opts. Returns 0 on success, 1 when
//  --help was printed (exit 0), -1 on a bad flag (message printed; exit 2).
int sl_opts_parse (const char *role, sl_opt_t *opts, int argc, char **argv);
//  Print usage for opts to stdout.
void sl_opts_usage (const char *role, const sl_opt_t *opts);
//  Integer value of an option string; -1 when not a non-negative integer.
long sl_opts_long (const char *value);
//  A switch's value: 1 for yes, true, on or 1; 0 for no, false, off, 0 or
//  ""; -1 for anything else (a typo must not read as either).
int sl_opts_switch (const char *value);

#endif
