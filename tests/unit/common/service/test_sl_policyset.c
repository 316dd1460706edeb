/*  Unit tests: common/service/sl_policyset, in a service without sockets:
    the default and the files a keys file names, looked up by the name a
    stream carries; each named file reloaded on its own (and when a file
    it includes changes), a bad one keeping its old version; files let go
    and taken on when the keys change; the labelled reload metrics. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common/service/sl_policyset.h"
#include "tests/unit/service_fixture.h"

static char s_keys [128], s_default [128], s_base [128], s_a [128], s_b [128];

//  What the reload callback heard last.
static int s_heard;
static char s_heard_name [128];
static bool s_heard_loaded;

static void
s_setup (void)
{
    service_fixture_start ("policyset");
    snprintf (s_keys, sizeof s_keys, "%s/keys.yaml", service_fixture.dir);
    snprintf (s_default, sizeof s_default, "%s/default.yaml", service_fixture.dir);
    snprintf (s_base, sizeof s_base, "%s/base.yaml", service_fixture.dir);
    snprintf (s_a, sizeof s_a, "%s/a.yaml", service_fixture.dir);
    snprintf (s_b, sizeof s_b, "%s/b.yaml", service_fixture.dir);
    s_heard = 0;
    service_fixture_write (s_default, "rules:\n  - {id: d, tool: t, action: block}\n");
    service_fixture_write (s_base, "rules:\n  - {id: base, tool: rm, action: block}\n");
    service_fixture_write (s_a, "include: base.yaml\nrules:\n  - {id: a, tool: t, action: allow}\n");
    service_fixture_write (s_b, "rules:\n  - {id: b, tool: t, action: drop}\n");
}

static void
s_teardown (void)
{
    const char *files [] = { s_keys, s_default, s_base, s_a, s_b, NULL };
    service_fixture_stop (files);
}

TestSuite (sl_policyset, .init = s_setup, .fini = s_teardown);

static void
s_on_reload (void *arg, const char *name, sl_policy_t *policy, bool loaded)
{
    (void) policy;
    cr_expect_eq (arg, (void *) &s_heard);
    s_heard++;
    snprintf (s_heard_name, sizeof s_heard_name, "%s", name ? name : "(default)");
    s_heard_loaded = loaded;
}

//  A keyring whose team "ta" runs under a.yaml and, when with_b, team
//  "tb" under b.yaml.
static sl_keyring_t *
s_keyring (bool with_b)
{
    char text [512], hex [SL_KEYRING_HEX_SIZE];
    sl_keyring_key_hex ("sk-a", hex);
    snprintf (text, sizeof text, "keys:\n  - {id: k, sha256: %s, team: ta}\n"
              "teams:\n  - {name: ta, policy: a.yaml}\n%s", hex, with_b ? "  - {name: tb, policy: b.yaml}\n" : "");
    char *error = NULL;
    sl_keyring_t *ring = sl_keyring_parse (text, strlen (text), s_keys, &error);
    cr_assert_not_null (ring, "%s", error ? error : "");
    return ring;
}

static sl_policyset_t *
s_set (void)
{
    sl_policyset_t *set = sl_policyset_new (service_fixture.svc, s_default, 0, NULL);
    cr_assert_not_null (set);
    sl_policyset_on_reload (set, s_on_reload, &s_heard);
    return set;
}

//  The id of the first rule of the policy a stream naming name runs under
//  ("" for none: the stream fails closed).
static const char *
s_first_rule (sl_policyset_t *set, const char *name)
{
    sl_policy_t *p = sl_policyset_policy (set, name ? sl_str (name) : SL_STR_NULL);
    return p ? sl_policy_rule_id (p, 0) : "";
}

//  The labelled reload counters of a named file.
static uint64_t
s_named_metric (const char *metric, const char *path)
{
    char labels [256];
    snprintf (labels, sizeof labels, "policy=\"%s\"", path);
    return sl_metrics_counter (sl_service_metrics (service_fixture.svc), metric, labels, "")->value;
}

Test (sl_policyset, each_stream_finds_the_policy_it_names)
{
    sl_policyset_t *set = s_set ();
    cr_expect_str_eq (s_first_rule (set, NULL), "d", "no name: the default");
    cr_expect_str_eq (s_first_rule (set, s_a), "", "nothing named yet: unknown");
    sl_keyring_t *ring = s_keyring (true);
    sl_policyset_keys (set, ring);
    cr_expect_eq (sl_policyset_count (set), 2);
    cr_expect_str_eq (s_first_rule (set, s_a), "base", "a.yaml, its base's rule first");
    cr_expect_str_eq (s_first_rule (set, s_b), "b");
    cr_expect_str_eq (s_first_rule (set, NULL), "d");
    cr_expect_str_eq (s_first_rule (set, "/elsewhere/a.yaml"), "", "a name the keys file does not give");
    cr_expect_eq (s_heard, 2, "each new file is told as loaded");
    const char *name = NULL;
    cr_expect_not_null (sl_policyset_at (set, 1, &name));
    cr_expect_str_eq (name, s_b);
    cr_expect_null (sl_policyset_at (set, 2, &name));
    sl_keyring_unref (&ring);
    sl_policyset_destroy (&set);
    cr_expect_null (set);
}

Test (sl_policyset, a_named_file_reloads_on_its_own_and_a_bad_one_keeps_its_version)
{
    sl_policyset_t *set = s_set ();
    sl_keyring_t *ring = s_keyring (true);
    sl_policyset_keys (set, ring);
    sl_policy_t *b = sl_policyset_policy (set, sl_str (s_b));
    s_heard = 0;
    //  The base a.yaml includes changes: a.yaml is read again, b.yaml is not.
    service_fixture_write (s_base, "rules:\n  - {id: base2, tool: rm, action: block}\n");
    sl_policyset_check (set);
    cr_expect_str_eq (s_first_rule (set, s_a), "base2");
    cr_expect_eq (sl_policyset_policy (set, sl_str (s_b)), b, "b.yaml did not change");
    cr_expect_eq (s_heard, 1);
    cr_expect_str_eq (s_heard_name, s_a);
    cr_expect_eq (s_named_metric ("sluice_policy_reloads_total", s_a), 1);
    cr_expect_eq (s_named_metric ("sluice_policy_reloads_total", s_b), 0);
    cr_expect_eq (service_fixture_metric ("sluice_policy_reloads_total"), 0, "the default's are its own");
    //  A bad b.yaml: the old version stays, and the log says where.
    service_fixture_write (s_b, "rules:\n  - id: b\n    action: maybe\n");
    sl_policyset_check (set);
    cr_expect_eq (sl_policyset_policy (set, sl_str (s_b)), b, "the old version stays");
    cr_expect (!s_heard_loaded);
    cr_expect_eq (s_named_metric ("sluice_policy_reload_failures_total", s_b), 1);
    char want [256];
    snprintf (want, sizeof want, "%s:3:13: action must be", s_b);
    cr_expect_eq (service_fixture_logged ("policy_invalid", want), 1);
    //  SIGHUP's reload reads them all: the default and each named file.
    sl_policyset_reload (set);
    cr_expect_eq (s_named_metric ("sluice_policy_reloads_total", s_a), 2);
    cr_expect_eq (s_named_metric ("sluice_policy_reload_failures_total", s_b), 2);
    cr_expect_eq (service_fixture_metric ("sluice_policy_reloads_total"), 1);
    sl_keyring_unref (&ring);
    sl_policyset_destroy (&set);
}

Test (sl_policyset, the_keys_name_the_files_kept)
{
    sl_policyset_t *set = s_set ();
    sl_keyring_t *ring = s_keyring (true);
    sl_policyset_keys (set, ring);
    sl_keyring_unref (&ring);
    //  A stream holds its policy across the file being let go.
    sl_policy_t *held = sl_policy_ref (sl_policyset_policy (set, sl_str (s_b)));
    ring = s_keyring (false);
    sl_policyset_keys (set, ring);
    cr_expect_eq (sl_policyset_count (set), 1);
    cr_expect_str_eq (s_first_rule (set, s_b), "", "b.yaml is no longer named: unknown");
    cr_expect_str_eq (s_first_rule (set, s_a), "base", "a.yaml stays");
    cr_expect_eq (service_fixture_logged ("policy_dropped", s_b), 1);
    cr_expect_str_eq (sl_policy_rule_id (held, 0), "b", "the stream's policy is still whole");
    sl_policy_unref (&held);
    sl_keyring_unref (&ring);
    //  Named again: loaded again. No keyring: none named.
    ring = s_keyring (true);
    sl_policyset_keys (set, ring);
    cr_expect_str_eq (s_first_rule (set, s_b), "b");
    sl_policyset_keys (set, NULL);
    cr_expect_eq (sl_policyset_count (set), 0);
    cr_expect_str_eq (s_first_rule (set, NULL), "d");
    sl_keyring_unref (&ring);
    sl_policyset_destroy (&set);
}

Test (sl_policyset, a_named_file_that_does_not_load_is_unknown_until_it_does)
{
    service_fixture_write (s_b, "rules: [\n");
    sl_policyset_t *set = s_set ();
    sl_keyring_t *ring = s_keyring (true);
    sl_policyset_keys (set, ring);
    cr_expect_str_eq (s_first_rule (set, s_b), "", "no version of b.yaml ever loaded");
    cr_expect_str_eq (s_first_rule (set, s_a), "base", "the others load");
    cr_expect_eq (s_named_metric ("sluice_policy_reload_failures_total", s_b), 1);
    cr_expect_eq (service_fixture_logged ("policy_kept", "refused until it loads"), 1);
    service_fixture_write (s_b, "rules:\n  - {id: fixed, tool: t, action: drop}\n");
    sl_policyset_check (set);
    cr_expect_str_eq (s_first_rule (set, s_b), "fixed");
    cr_expect (s_heard_loaded);
    sl_keyring_unref (&ring);
    sl_policyset_destroy (&set);
}

Test (sl_policyset, a_default_that_does_not_load_stops_the_process)
{
    service_fixture_write (s_default, "rules: [\n");
    cr_expect_null (sl_policyset_new (service_fixture.svc, s_default, 0, NULL));
}
