/*  Unit tests: common/base/sl_opts - flags and SLUICE_* variables, and
    switches (an option given without a value). */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "common/base/sl_opts.h"

typedef struct {
    const char *anonymous;
    const char *host;
} s_values_t;

static int
s_parse (s_values_t *v, int argc, char **argv)
{
    v->anonymous = SL_OPT_OFF;
    v->host = "127.0.0.1";
    sl_opt_t opts [] = {
        { "allow-anonymous", "SLUICE_TEST_ALLOW_ANONYMOUS", &v->anonymous, "a switch" },
        { "http-host", NULL, &v->host, "a value" },
        SL_OPT_END
    };
    return sl_opts_parse ("test", opts, argc, argv);
}

Test (sl_opts, a_switch_given_alone_is_on_and_takes_no_value)
{
    unsetenv ("SLUICE_TEST_ALLOW_ANONYMOUS");
    s_values_t v;
    char *off [] = { "prog", "--http-host", "0.0.0.0", NULL };
    cr_assert_eq (s_parse (&v, 3, off), 0);
    cr_expect_eq (sl_opts_switch (v.anonymous), 0, "off unless given");
    //  Before another flag, which keeps its own value.
    char *before [] = { "prog", "--allow-anonymous", "--http-host", "0.0.0.0", NULL };
    cr_assert_eq (s_parse (&v, 4, before), 0);
    cr_expect_eq (sl_opts_switch (v.anonymous), 1);
    cr_expect_str_eq (v.host, "0.0.0.0");
    char *last [] = { "prog", "--http-host", "0.0.0.0", "--allow-anonymous", NULL };
    cr_assert_eq (s_parse (&v, 4, last), 0);
    cr_expect_eq (sl_opts_switch (v.anonymous), 1, "last on the line: no value needed");
    char *no [] = { "prog", "--allow-anonymous=no", NULL };
    cr_assert_eq (s_parse (&v, 2, no), 0);
    cr_expect_eq (sl_opts_switch (v.anonymous), 0);
    char *stray [] = { "prog", "--allow-anonymous", "yes", NULL };
    cr_expect_eq (s_parse (&v, 3, stray), -1, "a switch's value goes after '='");
}

Test (sl_opts, a_switch_from_its_variable_and_a_flag_over_it)
{
    setenv ("SLUICE_TEST_ALLOW_ANONYMOUS", "yes", 1);
    s_values_t v;
    char *none [] = { "prog", NULL };
    cr_assert_eq (s_parse (&v, 1, none), 0);
    cr_expect_eq (sl_opts_switch (v.anonymous), 1);
    char *off [] = { "prog", "--allow-anonymous=false", NULL };
    cr_assert_eq (s_parse (&v, 2, off), 0);
    cr_expect_eq (sl_opts_switch (v.anonymous), 0, "the flag wins");
    //  A variable set again is read again: still a switch given alone.
    setenv ("SLUICE_TEST_ALLOW_ANONYMOUS", "no", 1);
    char *on [] = { "prog", "--allow-anonymous", NULL };
    cr_assert_eq (s_parse (&v, 2, on), 0);
    cr_expect_eq (sl_opts_switch (v.anonymous), 1);
    unsetenv ("SLUICE_TEST_ALLOW_ANONYMOUS");
}

Test (sl_opts, a_switch_value_is_yes_or_no_never_a_guess)
{
    const char *yes [] = { "yes", "YES", "true", "on", "1" };
    const char *no [] = { "no", "false", "Off", "0", "" };
    for (size_t i = 0; i < sizeof yes / sizeof yes [0]; i++)
        cr_expect_eq (sl_opts_switch (yes [i]), 1, "%s", yes [i]);
    for (size_t i = 0; i < sizeof no / sizeof no [0]; i++)
        cr_expect_eq (sl_opts_switch (no [i]), 0, "%s", no [i]);
    cr_expect_eq (sl_opts_switch ("yse"), -1, "a typo is neither");
    cr_expect_eq (sl_opts_switch ("2"), -1);
    cr_expect_eq (sl_opts_switch (NULL), -1);
}
