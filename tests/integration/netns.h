/*  netns.h - a program in a network namespace of its own, for the tests
    of what a process does on an address other than loopback (0.0.0.0)
    without opening a port on the machine's network: the namespace has its
    own loopback interface only (brought up), and goes away with the
    process. A user namespace comes with it (the test's user is root
    inside, as with `unshare -rn`), so no privilege is needed where the
    kernel allows unprivileged user namespaces.
*/
#ifndef NETNS_H
#define NETNS_H

#include <stdbool.h>
#include <stddef.h>

#include "tests/integration/harness.h"

//  Whether this machine lets a test make one; why not into why.
bool netns_available (char *why, size_t size);
//  proc_start_as, the program in a namespace of its own (logging to
//  <dir>/<label>.log; a namespace that cannot be made is said there and
//  the process exits 126). NULL when it cannot be started.
proc_t *netns_proc_start (const char *dir, const char *name, const char *label, const char *const *args);

#endif
