/*  Unit tests: services/audit/console/sl_console_auth, who may ask the
    console: its keys as written in SLUICE_CONSOLE_KEYS, a bearer key, a
    login's session (its cookie, its lifetime, its logout, their bound),
    and this machine alone without keys. Through the console's requests:
    test_sl_console.c. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "services/audit/console/sl_console_auth.h"

#define T0 1000000                      //  the sessions' clock, ms

//  The Cookie header a browser sends back for a Set-Cookie value.
static void
s_cookie_header (const char *set_cookie, char *out, size_t size)
{
    snprintf (out, size, "theme=dark; %.*s", (int) strcspn (set_cookie, ";"), set_cookie);
}

Test (sl_console_auth, keys_as_written_and_compared_whole)
{
    sl_console_auth_t *a = sl_console_auth_new (" alpha , beta,,gamma ");
    cr_assert_not_null (a);
    cr_expect (sl_console_auth_has_keys (a));
    const char *keys [] = { "alpha", "beta", "gamma" };
    for (int i = 0; i < 3; i++)
        cr_expect (sl_console_auth_key (a, keys [i], strlen (keys [i])), "%s", keys [i]);
    const char *not [] = { " alpha", "alph", "alphaa", "ALPHA", "", "alpha,beta" };
    for (int i = 0; i < 6; i++)
        cr_expect_not (sl_console_auth_key (a, not [i], strlen (not [i])), "'%s'", not [i]);
    //  Only the length asked for counts.
    cr_expect (sl_console_auth_key (a, "betamax", 4));
    sl_console_auth_destroy (&a);
    cr_expect_null (a);
    sl_console_auth_destroy (&a);
    a = sl_console_auth_new (" , ,");
    cr_expect_not (sl_console_auth_has_keys (a), "nothing but separators is no key");
    sl_console_auth_destroy (&a);
}

Test (sl_console_auth, without_keys_this_machine_alone)
{
    sl_console_auth_t *a = sl_console_auth_new (NULL);
    cr_expect_not (sl_console_auth_has_keys (a));
    cr_expect (sl_console_auth_allows (a, NULL, NULL, true, T0));
    cr_expect_not (sl_console_auth_allows (a, NULL, NULL, false, T0));
    cr_expect_not (sl_console_auth_allows (a, "Bearer anything", NULL, false, T0), "no key opens it to others");
    sl_console_auth_destroy (&a);
}

Test (sl_console_auth, a_bearer_key_or_a_live_session)
{
    sl_console_auth_t *a = sl_console_auth_new ("k-one,k-two");
    cr_expect (sl_console_auth_allows (a, "Bearer k-two", NULL, false, T0));
    cr_expect (sl_console_auth_allows (a, "bearer k-one", NULL, false, T0), "the scheme in any case");
    cr_expect_not (sl_console_auth_allows (a, "Bearer k-three", NULL, true, T0), "loopback is no key");
    cr_expect_not (sl_console_auth_allows (a, "Basic k-one", NULL, false, T0));
    cr_expect_not (sl_console_auth_allows (a, NULL, NULL, true, T0));
    //  A login's session, by its cookie, until it expires.
    char set_cookie [SL_CONSOLE_COOKIE_MAX], header [256];
    sl_console_auth_login (a, T0, set_cookie);
    cr_expect_eq (strncmp (set_cookie, SL_CONSOLE_COOKIE "=", strlen (SL_CONSOLE_COOKIE) + 1), 0, "%s", set_cookie);
    cr_expect_not_null (strstr (set_cookie, "; HttpOnly; SameSite=Strict; Max-Age=43200"), "%s", set_cookie);
    size_t token = strcspn (set_cookie, ";") - strlen (SL_CONSOLE_COOKIE) - 1;
    cr_expect_eq (token, 64, "32 random bytes in hex");
    s_cookie_header (set_cookie, header, sizeof header);
    cr_expect (sl_console_auth_allows (a, NULL, header, false, T0 + 1));
    cr_expect (sl_console_auth_allows (a, NULL, header, false, T0 + SL_CONSOLE_SESSION_MS - 1));
    cr_expect_not (sl_console_auth_allows (a, NULL, header, false, T0 + SL_CONSOLE_SESSION_MS), "expired");
    //  A wrong bearer key is refused even with a good cookie beside it.
    cr_expect_not (sl_console_auth_allows (a, "Bearer nope", header, false, T0 + 1));
    //  Part of a token, or more than it, is no token.
    char part [300];
    snprintf (part, sizeof part, "%.*s", (int) strlen (header) - 1, header);
    cr_expect_not (sl_console_auth_allows (a, NULL, part, false, T0 + 1));
    snprintf (part, sizeof part, "%s0", header);
    cr_expect_not (sl_console_auth_allows (a, NULL, part, false, T0 + 1));
    //  Two logins, two sessions: each its own token.
    char other [SL_CONSOLE_COOKIE_MAX], other_header [256];
    sl_console_auth_login (a, T0, other);
    cr_expect_str_neq (other, set_cookie);
    s_cookie_header (other, other_header, sizeof other_header);
    //  A logout ends its session here, whatever the browser keeps, and
    //  clears the browser's copy; the other session lives on.
    char cleared [SL_CONSOLE_COOKIE_MAX];
    sl_console_auth_logout (a, header, cleared);
    cr_expect_str_eq (cleared, SL_CONSOLE_COOKIE "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    cr_expect_not (sl_console_auth_allows (a, NULL, header, false, T0 + 2));
    cr_expect (sl_console_auth_allows (a, NULL, other_header, false, T0 + 2));
    sl_console_auth_logout (a, NULL, cleared);
    cr_expect (sl_console_auth_allows (a, NULL, other_header, false, T0 + 2), "a logout without a cookie ends none");
    sl_console_auth_destroy (&a);
}

Test (sl_console_auth, sessions_are_bounded_the_oldest_going_first)
{
    sl_console_auth_t *a = sl_console_auth_new ("k");
    char first [SL_CONSOLE_COOKIE_MAX], second [SL_CONSOLE_COOKIE_MAX], last [SL_CONSOLE_COOKIE_MAX];
    char header [256];
    sl_console_auth_login (a, T0, first);
    sl_console_auth_login (a, T0 + 1, second);
    for (int i = 0; i < SL_CONSOLE_MAX_SESSIONS - 1; i++)
        sl_console_auth_login (a, T0 + 2 + i, last);
    s_cookie_header (first, header, sizeof header);
    cr_expect_not (sl_console_auth_allows (a, NULL, header, false, T0 + 5000), "the oldest made room");
    s_cookie_header (second, header, sizeof header);
    cr_expect (sl_console_auth_allows (a, NULL, header, false, T0 + 5000));
    s_cookie_header (last, header, sizeof header);
    cr_expect (sl_console_auth_allows (a, NULL, header, false, T0 + 5000));
    sl_console_auth_destroy (&a);
}
