/*  Unit tests: common/bus/sl_resolve (endpoint lists into addresses). */
#include <criterion/criterion.h>
#include <stdio.h>
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

//  A set of endpoints as a service keeps its connections.
typedef struct {
    char have [8][SL_RESOLVE_ENDPOINT_MAX];
    size_t count;
    int added, removed;
} s_set_t;

static size_t s_count (void *arg) { return ((s_set_t *) arg)->count; }
static const char *s_endpoint (void *arg, size_t i) { return ((s_set_t *) arg)->have [i]; }

static void
s_add (void *arg, const char *endpoint)
{
    s_set_t *set = arg;
    snprintf (set->have [set->count++], SL_RESOLVE_ENDPOINT_MAX, "%s", endpoint);
    set->added++;
}

static void
s_remove (void *arg, size_t i)
{
    s_set_t *set = arg;
    memcpy (set->have [i], set->have [--set->count], SL_RESOLVE_ENDPOINT_MAX);
    set->removed++;
}

static const sl_resolve_set_t s_ops = { s_count, s_endpoint, s_add, s_remove };

Test (sl_resolve, a_set_is_kept_in_step_with_its_list)
{
    s_set_t set = { .count = 0 };
    cr_expect_eq (sl_resolve_sync ("tcp://127.0.0.1:1,tcp://127.0.0.1:2", 8, &s_ops, &set), 0);
    cr_expect_eq (set.count, 2);
    cr_expect_eq (set.added, 2);
    //  One stays, one goes, one comes.
    cr_expect_eq (sl_resolve_sync ("tcp://127.0.0.1:2,tcp://127.0.0.1:3", 8, &s_ops, &set), 0);
    cr_expect_eq (set.count, 2);
    cr_expect_eq (set.added, 3);
    cr_expect_eq (set.removed, 1);
    bool two = false, three = false;
    for (size_t i = 0; i < set.count; i++) {
        two |= strcmp (set.have [i], "tcp://127.0.0.1:2") == 0;
        three |= strcmp (set.have [i], "tcp://127.0.0.1:3") == 0;
    }
    cr_expect (two && three);
    //  A name that does not resolve now removes nothing.
    cr_expect_eq (sl_resolve_sync ("tcp://127.0.0.1:2,tcp://judge.invalid:5", 8, &s_ops, &set), 0);
    cr_expect_eq (set.count, 2, "no scale-down on a resolver hiccup");
    //  A malformed list changes nothing.
    cr_expect_eq (sl_resolve_sync ("judge:5", 8, &s_ops, &set), -1);
    cr_expect_eq (set.count, 2);
}
