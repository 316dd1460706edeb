/*  Unit tests: common/base/sl_fdlimit (the open-files limit and sizing by it). */
#include <criterion/criterion.h>
#include <sys/resource.h>

#include "common/base/sl_fdlimit.h"

Test (sl_fdlimit, share_keeps_room_for_other_descriptors)
{
    cr_expect_eq (sl_fdlimit_share (20000, 65536), 20000 - 256 - 2500);
    cr_expect_eq (sl_fdlimit_share (1 << 20, 65536), 65536);
    cr_expect_eq (sl_fdlimit_share (1024, 65536), 1024 - 256 - 128);
    //  A small limit: half of it, never nothing.
    cr_expect_eq (sl_fdlimit_share (512, 65536), 256);
    cr_expect_eq (sl_fdlimit_share (1, 65536), 1);
    cr_expect_eq (sl_fdlimit_share (0, 65536), 1);
}

Test (sl_fdlimit, raise_reaches_the_hard_limit)
{
    struct rlimit rl;
    cr_assert_eq (getrlimit (RLIMIT_NOFILE, &rl), 0);
    long want = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (rlim_t) SL_FDLIMIT_CEILING
              ? SL_FDLIMIT_CEILING : (long) rl.rlim_max;
    long got = sl_fdlimit_raise ();
    cr_expect_eq (got, want);
    cr_assert_eq (getrlimit (RLIMIT_NOFILE, &rl), 0);
    cr_expect_eq ((long) rl.rlim_cur, got);
}
