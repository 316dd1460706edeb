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

//  Whether a request is let in at all.
static bool
s_allows (sl_console_auth_t *a, const char *authorization, const char *cookies, bool loopback, int64_t now)
{
    sl_console_caller_t caller;
    return sl_console_auth_caller (a, authorization, cookies, loopback, now, &caller) != SL_CONSOLE_NOBODY;
}

static bool
s_key (sl_console_auth_t *a, const char *key, size_t n)
{
    sl_console_caller_t caller;
    return sl_console_auth_key (a, key, n, &caller) == 0;
}

//  A login with a key.
static void
s_login (sl_console_auth_t *a, int64_t now, char cookie [SL_CONSOLE_COOKIE_MAX])
{
    sl_console_caller_t caller = { .role = SL_CONSOLE_ADMIN, .sub = "key:console", .name = "console" };
    sl_console_auth_login (a, &caller, now, cookie);
}

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
        cr_expect (s_key (a, keys [i], strlen (keys [i])), "%s", keys [i]);
    const char *not [] = { " alpha", "alph", "alphaa", "ALPHA", "", "alpha,beta" };
    for (int i = 0; i < 6; i++)
        cr_expect_not (s_key (a, not [i], strlen (not [i])), "'%s'", not [i]);
    //  Only the length asked for counts.
    cr_expect (s_key (a, "betamax", 4));
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
    cr_expect (s_allows (a, NULL, NULL, true, T0));
    cr_expect_not (s_allows (a, NULL, NULL, false, T0));
    cr_expect_not (s_allows (a, "Bearer anything", NULL, false, T0), "no key opens it to others");
    sl_console_auth_destroy (&a);
}

Test (sl_console_auth, a_bearer_key_or_a_live_session)
{
    sl_console_auth_t *a = sl_console_auth_new ("k-one,k-two");
    cr_expect (s_allows (a, "Bearer k-two", NULL, false, T0));
    cr_expect (s_allows (a, "bearer k-one", NULL, false, T0), "the scheme in any case");
    cr_expect_not (s_allows (a, "Bearer k-three", NULL, true, T0), "loopback is no key");
    cr_expect_not (s_allows (a, "Basic k-one", NULL, false, T0));
    cr_expect_not (s_allows (a, NULL, NULL, true, T0));
    //  A login's session, by its cookie, until it expires.
    char set_cookie [SL_CONSOLE_COOKIE_MAX], header [256];
    s_login (a, T0, set_cookie);
    cr_expect_eq (strncmp (set_cookie, SL_CONSOLE_COOKIE "=", strlen (SL_CONSOLE_COOKIE) + 1), 0, "%s", set_cookie);
    cr_expect_not_null (strstr (set_cookie, "; HttpOnly; SameSite=Strict; Max-Age=43200"), "%s", set_cookie);
    size_t token = strcspn (set_cookie, ";") - strlen (SL_CONSOLE_COOKIE) - 1;
    cr_expect_eq (token, 64, "32 random bytes in hex");
    s_cookie_header (set_cookie, header, sizeof header);
    cr_expect (s_allows (a, NULL, header, false, T0 + 1));
    cr_expect (s_allows (a, NULL, header, false, T0 + SL_CONSOLE_SESSION_MS - 1));
    cr_expect_not (s_allows (a, NULL, header, false, T0 + SL_CONSOLE_SESSION_MS), "expired");
    //  A wrong bearer key is refused even with a good cookie beside it.
    cr_expect_not (s_allows (a, "Bearer nope", header, false, T0 + 1));
    //  Part of a token, or more than it, is no token.
    char part [300];
    snprintf (part, sizeof part, "%.*s", (int) strlen (header) - 1, header);
    cr_expect_not (s_allows (a, NULL, part, false, T0 + 1));
    snprintf (part, sizeof part, "%s0", header);
    cr_expect_not (s_allows (a, NULL, part, false, T0 + 1));
    //  Two logins, two sessions: each its own token.
    char other [SL_CONSOLE_COOKIE_MAX], other_header [256];
    s_login (a, T0, other);
    cr_expect_str_neq (other, set_cookie);
    s_cookie_header (other, other_header, sizeof other_header);
    //  A logout ends its session here, whatever the browser keeps, and
    //  clears the browser's copy; the other session lives on.
    char cleared [SL_CONSOLE_COOKIE_MAX];
    sl_console_auth_logout (a, header, cleared);
    cr_expect_str_eq (cleared, SL_CONSOLE_COOKIE "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
    cr_expect_not (s_allows (a, NULL, header, false, T0 + 2));
    cr_expect (s_allows (a, NULL, other_header, false, T0 + 2));
    sl_console_auth_logout (a, NULL, cleared);
    cr_expect (s_allows (a, NULL, other_header, false, T0 + 2), "a logout without a cookie ends none");
    sl_console_auth_destroy (&a);
}

Test (sl_console_auth, sessions_are_bounded_the_oldest_going_first)
{
    sl_console_auth_t *a = sl_console_auth_new ("k");
    char first [SL_CONSOLE_COOKIE_MAX], second [SL_CONSOLE_COOKIE_MAX], last [SL_CONSOLE_COOKIE_MAX];
    char header [256];
    s_login (a, T0, first);
    s_login (a, T0 + 1, second);
    for (int i = 0; i < SL_CONSOLE_MAX_SESSIONS - 1; i++)
        s_login (a, T0 + 2 + i, last);
    s_cookie_header (first, header, sizeof header);
    cr_expect_not (s_allows (a, NULL, header, false, T0 + 5000), "the oldest made room");
    s_cookie_header (second, header, sizeof header);
    cr_expect (s_allows (a, NULL, header, false, T0 + 5000));
    s_cookie_header (last, header, sizeof header);
    cr_expect (s_allows (a, NULL, header, false, T0 + 5000));
    sl_console_auth_destroy (&a);
}

Test (sl_console_auth, named_keys_carry_their_role_and_a_bare_key_is_an_admin)
{
    sl_console_auth_t *a = sl_console_auth_new ("ci-bot:admin:K1, dash:viewer:K2,audit:auditor:a:b,legacy,"
                                                "odd:root:K5");
    sl_console_caller_t c;
    cr_expect_eq (sl_console_auth_caller (a, "Bearer K1", NULL, false, T0, &c), SL_CONSOLE_ADMIN);
    cr_expect_str_eq (c.name, "ci-bot");
    cr_expect_str_eq (c.sub, "key:ci-bot");
    cr_expect_eq (sl_console_auth_caller (a, "Bearer K2", NULL, false, T0, &c), SL_CONSOLE_VIEWER);
    cr_expect_str_eq (c.name, "dash");
    cr_expect_eq (sl_console_auth_caller (a, "Bearer a:b", NULL, false, T0, &c), SL_CONSOLE_AUDITOR,
                  "a key may hold colons after its role");
    cr_expect_eq (sl_console_auth_caller (a, "Bearer legacy", NULL, false, T0, &c), SL_CONSOLE_ADMIN,
                  "a bare key opens what it always has");
    cr_expect_str_eq (c.name, "console");
    cr_expect_eq (sl_console_auth_caller (a, "Bearer dash:viewer:K2", NULL, false, T0, &c), SL_CONSOLE_NOBODY,
                  "the entry is not the key");
    cr_expect_eq (sl_console_auth_caller (a, "Bearer odd:root:K5", NULL, false, T0, &c), SL_CONSOLE_ADMIN,
                  "no role named: the whole entry is a bare key");
    cr_expect_eq (sl_console_auth_caller (a, "Bearer K5", NULL, false, T0, &c), SL_CONSOLE_NOBODY);
    //  A login with a key keeps its caller in the session.
    cr_assert_eq (sl_console_auth_key (a, "K2", 2, &c), 0);
    char set_cookie [SL_CONSOLE_COOKIE_MAX], header [256];
    sl_console_auth_login (a, &c, T0, set_cookie);
    s_cookie_header (set_cookie, header, sizeof header);
    cr_expect_eq (sl_console_auth_caller (a, NULL, header, false, T0 + 1, &c), SL_CONSOLE_VIEWER);
    cr_expect_str_eq (c.name, "dash");
    sl_console_auth_destroy (&a);
}

Test (sl_console_auth, sign_in_closes_this_machine_and_sessions_keep_the_person)
{
    sl_console_auth_t *a = sl_console_auth_new ("");
    sl_console_caller_t c;
    cr_expect_eq (sl_console_auth_caller (a, NULL, NULL, true, T0, &c), SL_CONSOLE_ADMIN, "loopback, no keys");
    sl_console_auth_set_sign_in (a, true);
    cr_expect (sl_console_auth_guarded (a));
    cr_expect_eq (sl_console_auth_caller (a, NULL, NULL, true, T0, &c), SL_CONSOLE_NOBODY,
                  "with sign-in, this machine is no one in particular");
    sl_console_caller_t person = { .role = SL_CONSOLE_APPROVER, .sub = "u-1", .email = "ann@example.com",
                                   .name = "Ann", .teams = { "alpha" }, .team_count = 1 };
    char set_cookie [SL_CONSOLE_COOKIE_MAX], header [256];
    sl_console_auth_login (a, &person, T0, set_cookie);
    s_cookie_header (set_cookie, header, sizeof header);
    cr_expect_eq (sl_console_auth_caller (a, NULL, header, false, T0 + 1, &c), SL_CONSOLE_APPROVER);
    cr_expect_str_eq (c.email, "ann@example.com");
    cr_expect_str_eq (c.teams [0], "alpha");
    cr_expect_eq (c.team_count, 1);
    char cleared [SL_CONSOLE_COOKIE_MAX];
    sl_console_auth_logout (a, header, cleared);
    cr_expect_eq (sl_console_auth_caller (a, NULL, header, false, T0 + 2, &c), SL_CONSOLE_NOBODY, "logged out");
    sl_console_auth_destroy (&a);
}
