/*  netns.c - a program in a network namespace of its own (see netns.h). */
#include "tests/integration/netns.h"

#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define NETNS_EXIT_FAILED 126           //  the namespace could not be made
#define NETNS_ARGS_MAX 64

//  Write text to a /proc file whole; 0 ok.
static int
s_put (const char *path, const char *text)
{
    int fd = open (path, O_WRONLY);
    if (fd < 0)
        return -1;
    ssize_t n = write (fd, text, strlen (text));
    close (fd);
    return n == (ssize_t) strlen (text) ? 0 : -1;
}

//  Into a user and a network namespace, the caller's user root inside and
//  the loopback interface up. 0 ok, -1 with why.
static int
s_enter (char *why, size_t size)
{
    uid_t uid = geteuid ();
    gid_t gid = getegid ();
    if (unshare (CLONE_NEWUSER | CLONE_NEWNET)) {
        snprintf (why, size, "unshare: %s", strerror (errno));
        return -1;
    }
    char map [64];
    snprintf (map, sizeof map, "0 %u 1", (unsigned) uid);
    int rc = s_put ("/proc/self/uid_map", map);
    snprintf (map, sizeof map, "0 %u 1", (unsigned) gid);
    if (rc == 0 && (s_put ("/proc/self/setgroups", "deny") || s_put ("/proc/self/gid_map", map)))
        rc = -1;
    if (rc) {
        snprintf (why, size, "the user namespace's maps: %s", strerror (errno));
        return -1;
    }
    //  A new namespace's loopback interface is down, without 127.0.0.1.
    int fd = socket (AF_INET, SOCK_DGRAM, 0);
    struct ifreq ifr = { 0 };
    snprintf (ifr.ifr_name, sizeof ifr.ifr_name, "lo");
    rc = fd >= 0 && ioctl (fd, SIOCGIFFLAGS, &ifr) == 0 ? 0 : -1;
    ifr.ifr_flags |= IFF_UP;
    if (rc == 0)
        rc = ioctl (fd, SIOCSIFFLAGS, &ifr);
    if (rc)
        snprintf (why, size, "the loopback interface: %s", strerror (errno));
    if (fd >= 0)
        close (fd);
    return rc ? -1 : 0;
}

bool
netns_available (char *why, size_t size)
{
    int pipefd [2];
    if (pipe (pipefd))
        return false;
    pid_t pid = fork ();
    if (pid == 0) {
        close (pipefd [0]);
        char reason [256] = "";
        int rc = s_enter (reason, sizeof reason);
        if (rc && write (pipefd [1], reason, strlen (reason)) < 0)
            rc = -1;
        _exit (rc ? 1 : 0);
    }
    close (pipefd [1]);
    int status = -1;
    ssize_t n = pid > 0 ? read (pipefd [0], why, size - 1) : -1;
    why [n > 0 ? n : 0] = 0;
    close (pipefd [0]);
    if (pid > 0)
        waitpid (pid, &status, 0);
    return pid > 0 && WIFEXITED (status) && WEXITSTATUS (status) == 0;
}

proc_t *
netns_proc_start (const char *dir, const char *name, const char *label, const char *const *args)
{
    const char *bin_dir = getenv ("SLUICE_BIN_DIR");
    proc_t *p = calloc (1, sizeof *p);
    snprintf (p->name, sizeof p->name, "%s", label);
    snprintf (p->log_path, sizeof p->log_path, "%s/%s.log", dir, label);
    char path [512];
    snprintf (path, sizeof path, "%s/sluice-%s", bin_dir ? bin_dir : "build/bin", name);
    const char *argv [NETNS_ARGS_MAX];
    int n = 0;
    argv [n++] = path;
    for (int i = 0; args && args [i] && n < NETNS_ARGS_MAX - 1; i++)
        argv [n++] = args [i];
    argv [n] = NULL;
    pid_t pid = fork ();
    if (pid == 0) {
        //  As proc_start's: it goes with a test that died, logs to its
        //  file, stops at once on SIGTERM unless told to drain.
        prctl (PR_SET_PDEATHSIG, SIGTERM);
        int fd = open (p->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2 (fd, 1);
        dup2 (fd, 2);
        close (fd);
        setpgid (0, 0);
        setenv ("SLUICE_DRAIN_MS", "0", 0);
        char why [256];
        if (s_enter (why, sizeof why)) {
            fprintf (stderr, "netns: %s\n", why);
            _exit (NETNS_EXIT_FAILED);
        }
        execv (path, (char *const *) argv);
        fprintf (stderr, "cannot exec %s: %s\n", path, strerror (errno));
        _exit (127);
    }
    if (pid < 0) {
        free (p);
        return NULL;
    }
    p->pid = pid;
    return p;
}
