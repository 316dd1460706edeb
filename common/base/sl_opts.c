/*  sl_opts.c - flags and environment (see sl_opts.h). */
#include "common/base/sl_opts.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define S_OPTS_MAX 128                  //  options of one program, its own and the service's

const char SL_OPT_OFF [] = "no";

static void
s_env_name (const char *role, const sl_opt_t *opt, char *out, size_t size)
{
    if (opt->env) {
        snprintf (out, size, "%s", opt->env);
        return;
    }
    snprintf (out, size, "SLUICE_%s_%s", role, opt->name);
    for (char *p = out; *p; p++)
        *p = *p == '-' ? '_' : (char) toupper ((unsigned char) *p);
}

void
sl_opts_usage (const char *role, const sl_opt_t *opts)
{
    printf ("usage: sluice-%s [options]\n\n", role);
    for (const sl_opt_t *o = opts; o->name; o++) {
        char env [128];
        s_env_name (role, o, env, sizeof env);
        printf ("  --%-18s %s\n  %-20s env %s, default %s\n",
                o->name, o->help, "", env, *o->value && **o->value ? *o->value : "(none)");
    }
}

static sl_opt_t *
s_find (sl_opt_t *opts, const char *name, size_t len)
{
    for (sl_opt_t *o = opts; o->name; o++)
        if (strlen (o->name) == len && strncmp (o->name, name, len) == 0)
            return o;
    return NULL;
}

int
sl_opts_parse (const char *role, sl_opt_t *opts, int argc, char **argv)
{
    //  Which are switches, by their default, before anything sets them.
    bool is_switch [S_OPTS_MAX] = { false };
    for (int k = 0; opts [k].name; k++) {
        if (k == S_OPTS_MAX) {
            fprintf (stderr, "sluice-%s: more than %d options\n", role, S_OPTS_MAX);
            return -1;
        }
        is_switch [k] = *opts [k].value == SL_OPT_OFF;
    }
    //  Environment first, so flags override it.
    for (sl_opt_t *o = opts; o->name; o++) {
        char env [128];
        s_env_name (role, o, env, sizeof env);
        const char *v = getenv (env);
        if (v)
            *o->value = v;
    }
    for (int i = 1; i < argc; i++) {
        const char *arg = argv [i];
        if (strcmp (arg, "--help") == 0 || strcmp (arg, "-h") == 0) {
            sl_opts_usage (role, opts);
            return 1;
        }
        if (strncmp (arg, "--", 2) != 0) {
            fprintf (stderr, "sluice-%s: unexpected argument '%s' (see --help)\n", role, arg);
            return -1;
        }
        const char *name = arg + 2;
        const char *eq = strchr (name, '=');
        size_t len = eq ? (size_t) (eq - name) : strlen (name);
        sl_opt_t *o = s_find (opts, name, len);
        if (!o) {
            fprintf (stderr, "sluice-%s: unknown option '%s' (see --help)\n", role, arg);
            return -1;
        }
        if (eq)
            *o->value = eq + 1;
        else
        if (is_switch [o - opts])
            *o->value = "yes";
        else
        if (i + 1 < argc)
            *o->value = argv [++i];
        else {
            fprintf (stderr, "sluice-%s: option '%s' needs a value\n", role, arg);
            return -1;
        }
    }
    return 0;
}

long
sl_opts_long (const char *value)
{
    if (!value || !*value)
        return -1;
    char *end;
    long v = strtol (value, &end, 10);
    if (*end || v < 0)
        return -1;
    return v;
}

int
sl_opts_switch (const char *value)
{
    static const char *yes [] = { "yes", "true", "on", "1", NULL };
    static const char *no [] = { "no", "false", "off", "0", "", NULL };
    for (int i = 0; value && yes [i]; i++)
        if (strcasecmp (value, yes [i]) == 0)
            return 1;
    for (int i = 0; value && no [i]; i++)
        if (strcasecmp (value, no [i]) == 0)
            return 0;
    return -1;
}
