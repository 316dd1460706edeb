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
