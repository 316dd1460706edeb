/*  Unit tests: common/bus/sl_resolve (endpoint lists into addresses). */
#include <criterion/criterion.h>
#include <string.h>

#include "common/bus/sl_resolve.h"

Test (sl_resolve, names_become_addresses_and_bad_lists_are_refused)
{
    char out [8][SL_RESOLVE_ENDPOINT_MAX];
    const char *why = NULL;
    int n = sl_resolve_list ("tcp://127.0.0.1:5558,tcp://localhost:5559,tcp://127.0.0.1:5558", out, 8, &why);
    cr_assert_geq (n, 2, "%s", why ? why : "");
    cr_expect_str_eq (out [0], "tcp://127.0.0.1:5558");
    cr_expect_str_eq (out [1], "tcp://127.0.0.1:5559", "localhost is this machine");
    cr_expect_eq (n, 2, "an address once");
    cr_expect_eq (sl_resolve_list ("tcp://no.such.host.invalid:1", out, 8, &why), 0);
    cr_expect_not_null (why, "a name that does not resolve is said");
    cr_expect_eq (sl_resolve_list ("udp://x:1", out, 8, &why), -1);
    cr_expect_eq (sl_resolve_list ("tcp://nohost", out, 8, &why), -1);
    cr_expect_eq (sl_resolve_list ("tcp://a:1,,tcp://b:2", out, 8, &why), -1);
}

Test (sl_resolve, names_are_told_from_addresses)
{
    cr_expect (sl_resolve_is_name ("emitter"));
    cr_expect (sl_resolve_is_name ("localhost"));
    cr_expect (sl_resolve_is_name ("judge.sluice.svc.cluster.local"));
    cr_expect_not (sl_resolve_is_name ("10.0.0.7"));
    cr_expect_not (sl_resolve_is_name ("::1"), "an IPv6 address");
    cr_expect_not (sl_resolve_is_name ("[::1]"));
    cr_expect_not (sl_resolve_is_name ("*"));
}

//  The endpoints a name resolved to, joined by spaces.
static void
s_collect (void *arg, const char *endpoint)
{
    char *out = arg;
    strcat (out, endpoint);
    strcat (out, " ");
}

Test (sl_resolve, a_name_becomes_an_endpoint_per_address)
{
    char out [1024] = "";
    const char *why = NULL;
    cr_assert_eq (sl_resolve_name ("tcp://", "localhost", "5552", s_collect, out, &why), 0);
    cr_expect_str_eq (out, "tcp://127.0.0.1:5552 ", "IPv4, with the prefix and the port");
    out [0] = 0;
    cr_expect_eq (sl_resolve_name ("tcp://", "no.such.host.invalid", "1", s_collect, out, &why), -1);
    cr_expect_str_eq (out, "", "nothing for a name that does not resolve");
    cr_expect_not_null (why, "the resolver's reason");
}
