/*  sl_fdlimit.c - open-files limit (see sl_fdlimit.h). */
#include "common/base/sl_fdlimit.h"

#include <sys/resource.h>

#include "common/base/sl_log.h"

long
sl_fdlimit_raise (void)
{
    struct rlimit rl;
    if (getrlimit (RLIMIT_NOFILE, &rl) != 0)
        return 1024;
    rlim_t want = rl.rlim_max;
    if (want == RLIM_INFINITY || want > (rlim_t) SL_FDLIMIT_CEILING)
        want = (rlim_t) SL_FDLIMIT_CEILING;
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
        return rl.rlim_cur == RLIM_INFINITY ? SL_FDLIMIT_CEILING : (long) rl.rlim_cur;
    rlim_t before = rl.rlim_cur;
    rl.rlim_cur = want;
    if (setrlimit (RLIMIT_NOFILE, &rl) != 0) {
        sl_log_warn ("fd_limit", "could not raise the open-files limit from %lu to %lu",
                     (unsigned long) before, (unsigned long) want);
        return (long) before;
    }
    return (long) want;
}

long
sl_fdlimit_current (void)
{
    struct rlimit rl;
    if (getrlimit (RLIMIT_NOFILE, &rl) != 0)
        return 1024;
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t) SL_FDLIMIT_CEILING)
        return SL_FDLIMIT_CEILING;
    return (long) rl.rlim_cur;
}

size_t
sl_fdlimit_share (long nofile, size_t cap)
{
    if (nofile <= 0)
        return 1;
    size_t n = (size_t) nofile;
    size_t reserve = SL_FDLIMIT_RESERVE + n / 8;
    size_t share = n > 2 * reserve ? n - reserve : n / 2;
    if (share > cap)
        share = cap;
    return share ? share : 1;
}
