/*  sl_fdlimit.h - the process's open-files limit, and sizing by it.

    A process that holds a socket per client (the gateway) or per upstream
    call (the ingest) runs out of descriptors long before it runs out of
    anything else: the soft limit is often 1024 while the hard limit allows
    far more. Such a process raises its soft limit as far as the hard limit
    allows at start, and sizes its own limits from the result, keeping room
    for its other descriptors (ZeroMQ sockets, epoll sets, logs).
*/
#ifndef SL_FDLIMIT_H
#define SL_FDLIMIT_H

#include <stddef.h>

#define SL_FDLIMIT_CEILING (1L << 20)   //  never ask for more (the kernel's usual nr_open)
#define SL_FDLIMIT_RESERVE 256          //  descriptors kept for other uses, plus 1/8 of the limit

//  Raise the soft limit on open files to the hard limit (at most
//  SL_FDLIMIT_CEILING); returns the soft limit in force afterwards.
long sl_fdlimit_raise (void);
//  The soft limit on open files in force (SL_FDLIMIT_CEILING when
//  unlimited, 1024 when it cannot be read).
long sl_fdlimit_current (void);
//  How many connections of one kind a process with this limit may hold,
//  at most cap: the limit less SL_FDLIMIT_RESERVE and an eighth of it
//  (half the limit when that leaves less), and at least 1.
size_t sl_fdlimit_share (long nofile, size_t cap);

#endif
