/*  Unit tests: common/base/sl_filestamp (has a file changed since it
    was read: replaced, rewritten, grown; a file gone for a moment is not
    a change yet). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base/sl_filestamp.h"

static char s_dir [] = "/tmp/sl_filestamp_XXXXXX";
static char s_path [64];

static void
s_write (const char *path, const char *text)
{
    FILE *f = fopen (path, "w");
    cr_assert_not_null (f);
    fputs (text, f);
    fclose (f);
}

static void
s_setup (void)
{
    cr_assert_not_null (mkdtemp (s_dir));
    snprintf (s_path, sizeof s_path, "%s/policy.yaml", s_dir);
}

static void
s_teardown (void)
{
    char other [80];
    snprintf (other, sizeof other, "%s.new", s_path);
    unlink (other);
    unlink (s_path);
    rmdir (s_dir);
}

Test (sl_filestamp, a_file_replaced_or_rewritten_has_changed, .init = s_setup, .fini = s_teardown)
{
    s_write (s_path, "rules: []\n");
    sl_filestamp_t stamp;
    sl_filestamp_take (s_path, &stamp);
    cr_expect_neq (stamp.ino, 0);
    cr_expect_eq (stamp.size, 10);
    cr_expect_not (sl_filestamp_changed (s_path, &stamp), "as it was read");
    //  Replaced, as editors and deploy tools do: a new inode.
    char other [80];
    snprintf (other, sizeof other, "%s.new", s_path);
    s_write (other, "rules: []\n");
    cr_assert_eq (rename (other, s_path), 0);
    cr_expect (sl_filestamp_changed (s_path, &stamp), "a new inode, the same bytes");
    sl_filestamp_take (s_path, &stamp);
    cr_expect_not (sl_filestamp_changed (s_path, &stamp));
    //  Written in place, longer.
    s_write (s_path, "rules: [a]\n");
    cr_expect (sl_filestamp_changed (s_path, &stamp), "another size");
}

Test (sl_filestamp, a_file_that_is_not_there_has_not_changed_yet, .init = s_setup, .fini = s_teardown)
{
    s_write (s_path, "x");
    sl_filestamp_t stamp;
    sl_filestamp_take (s_path, &stamp);
    unlink (s_path);
    cr_expect_not (sl_filestamp_changed (s_path, &stamp), "being replaced: wait for it");
    sl_filestamp_take (s_path, &stamp);
    cr_expect_eq (stamp.ino, 0, "the stamp of a missing file is all zero");
    cr_expect_eq (stamp.size, 0);
    s_write (s_path, "y");
    cr_expect (sl_filestamp_changed (s_path, &stamp), "there again");
    sl_filestamp_take (NULL, &stamp);
    cr_expect_eq (stamp.mtime_ns, 0);
    cr_expect_not (sl_filestamp_changed (NULL, &stamp));
}
