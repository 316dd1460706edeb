/*  Unit tests: common/policy/sl_policyfile (a policy file loaded and
    reloaded: a change is seen in the file and in what it includes, and a
    file that does not load leaves the running policy as it was). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/policy/sl_policyfile.h"

static char s_dir [] = "/tmp/sl_policyfile_XXXXXX";
static char s_main [64], s_base [64];

//  Write path anew (a new inode, as deploy tools replace files).
static void
s_write (const char *path, const char *text)
{
    char tmp [80];
    snprintf (tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen (tmp, "w");
    cr_assert_not_null (f);
    fputs (text, f);
    fclose (f);
    cr_assert_eq (rename (tmp, path), 0);
}

static void
s_setup (void)
{
    cr_assert_not_null (mkdtemp (s_dir));
    snprintf (s_main, sizeof s_main, "%s/policy.yaml", s_dir);
    snprintf (s_base, sizeof s_base, "%s/base.yaml", s_dir);
}

static void
s_teardown (void)
{
    unlink (s_main);
    unlink (s_base);
    rmdir (s_dir);
}

#define S_RULE(id) "  - id: " id "\n    tool: bash\n    action: block\n"

Test (sl_policyfile, a_change_is_seen_and_a_bad_file_keeps_the_running_policy, .init = s_setup, .fini = s_teardown)
{
    s_write (s_base, "rules:\n" S_RULE ("base"));
    s_write (s_main, "include: base.yaml\nrules:\n" S_RULE ("one"));
    char *error = NULL;
    sl_policyfile_t *pf = sl_policyfile_new (s_main, &error);
    cr_assert_not_null (pf, "%s", error ? error : "");
    cr_expect (sl_policyfile_has_file (pf));
    cr_expect_str_eq (sl_policyfile_path (pf), s_main);
    sl_policy_t *first = sl_policyfile_policy (pf);
    cr_assert_not_null (first);
    cr_expect_eq (sl_policy_rule_count (first), 2, "its rule and its include's");
    cr_expect_not (sl_policyfile_changed (pf));
    //  An include changes: the file has changed.
    s_write (s_base, "rules:\n" S_RULE ("base") S_RULE ("base2"));
    cr_expect (sl_policyfile_changed (pf), "an include is part of the file");
    cr_expect_eq (sl_policyfile_reload (pf, &error), 0, "%s", error ? error : "");
    cr_expect_eq (sl_policy_rule_count (sl_policyfile_policy (pf)), 3);
    cr_expect_not (sl_policyfile_changed (pf));
    //  A file that does not load: reported, and the running policy stays.
    s_write (s_main, "rules: [\n");
    cr_expect (sl_policyfile_changed (pf));
    cr_expect_eq (sl_policyfile_reload (pf, &error), -1);
    cr_assert_not_null (error);
    cr_expect_not_null (strstr (error, "policy.yaml"), "the error names the file: %s", error);
    free (error);
    error = NULL;
    cr_expect_eq (sl_policy_rule_count (sl_policyfile_policy (pf)), 3, "the policy that ran runs");
    cr_expect_not (sl_policyfile_changed (pf), "read, though not loaded: no change until the next");
    sl_policyfile_destroy (&pf);
    sl_policyfile_destroy (&pf);
    cr_expect_null (pf);
}

Test (sl_policyfile, no_file_allows_all_and_a_file_opened_waits_for_a_reload, .init = s_setup, .fini = s_teardown)
{
    char *error = NULL;
    sl_policyfile_t *pf = sl_policyfile_new (NULL, &error);
    cr_assert_not_null (pf);
    cr_expect_not (sl_policyfile_has_file (pf));
    cr_expect_null (sl_policyfile_path (pf));
    cr_expect_not_null (sl_policyfile_policy (pf), "allow all");
    cr_expect_eq (sl_policy_rule_count (sl_policyfile_policy (pf)), 0);
    sl_policyfile_destroy (&pf);
    cr_expect_null (sl_policyfile_new (s_main, &error), "a file that is not there does not load");
    cr_expect_not_null (error);
    free (error);
    pf = sl_policyfile_open (s_main);
    cr_assert_not_null (pf);
    cr_expect_null (sl_policyfile_policy (pf), "not read yet");
    s_write (s_main, "rules:\n" S_RULE ("one"));
    cr_expect_eq (sl_policyfile_reload (pf, &error), 0, "%s", error ? error : "");
    cr_expect_eq (sl_policy_rule_count (sl_policyfile_policy (pf)), 1);
    sl_policyfile_destroy (&pf);
}
