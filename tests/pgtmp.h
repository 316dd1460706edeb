/*  pgtmp.h - a throwaway PostgreSQL cluster for tests and benchmarks.

    pgtmp_start makes a cluster in a new temporary directory (initdb),
    starts its server listening on a unix socket in that directory only
    (no TCP), and gives a DSN for it; pgtmp_start_tcp also listens on
    127.0.0.1 at a port of the caller's (the compose test stands it in for
    the compose file's postgres service); pgtmp_stop stops it and removes
    the directory. Its superuser is "sluice", trusted without a password. The server's programs come from Debian's postgresql package
    (/usr/lib/postgresql/<version>/bin) or the PATH. PostgreSQL refuses to
    run as root: when the tests run as root, the cluster belongs to the
    package's "postgres" user, and its programs run as that user.

    A server still running when the process exits (a failed assertion
    ended the test before pgtmp_stop) is stopped then, at exit: it is a
    daemon and would outlive the test otherwise.

    initdb is most of a cluster's cost (about 0.8 s of CPU). With
    SLUICE_PG_TEMPLATE set (make's test targets set it to
    build/pg-template), the first cluster's initdb makes a template data
    directory there, and every cluster after it, in any process, starts
    from a copy of it (cp -a: 0.05 s): each still has its own directory,
    server and data. The template is made in a directory of its own then
    renamed into place, so tests starting at once never see half of one;
    one made by other server programs (SLUICE_PG_BIN, an upgrade) is not
    used.

    When something is missing, pgtmp_start returns -1 and says why in
    reason (the caller skips, with that reason). Header-only, so a unit
    test, an integration test and a benchmark can each include it.
*/
#ifndef PGTMP_H
#define PGTMP_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    char dir [128];                     //  the cluster's directory (and its socket's)
    char bin [256];                     //  the server's programs
    char dsn [256];                     //  for libpq
    int port;                           //  names the socket file (.s.PGSQL.<port>)
    uid_t uid;                          //  who runs the server (0: ourselves)
    gid_t gid;
    bool running;
    bool durable;                       //  set before starting: fsync and synchronous commit on
                                        //  (a benchmark); off by default (tests need no durability)
    char options [400];                 //  the server's, to start it again
} pgtmp_t;

static inline bool
pgtmp_exists (const char *path)
{
    return access (path, X_OK) == 0;
}

//  Where initdb, pg_ctl and postgres are; false when nowhere.
static inline bool
pgtmp_find_bin (char *out, size_t size)
{
    const char *env = getenv ("SLUICE_PG_BIN");
    char path [512];
    if (env && *env) {
        snprintf (path, sizeof path, "%.400s/initdb", env);
        if (pgtmp_exists (path)) {
            snprintf (out, size, "%s", env);
            return true;
        }
    }
    //  Debian: /usr/lib/postgresql/<version>/bin, the newest version.
    DIR *d = opendir ("/usr/lib/postgresql");
    int best = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir (d))) {
            int v = atoi (e->d_name);
            snprintf (path, sizeof path, "/usr/lib/postgresql/%.200s/bin/initdb", e->d_name);
            if (v > best && pgtmp_exists (path)) {
                best = v;
                snprintf (out, size, "/usr/lib/postgresql/%.200s/bin", e->d_name);
            }
        }
        closedir (d);
    }
    if (best)
        return true;
    const char *dirs [] = { "/usr/local/bin", "/usr/bin" };
    for (size_t i = 0; i < sizeof dirs / sizeof dirs [0]; i++) {
        snprintf (path, sizeof path, "%.400s/initdb", dirs [i]);
        if (pgtmp_exists (path)) {
            snprintf (out, size, "%s", dirs [i]);
            return true;
        }
    }
    return false;
}

//  Run argv as the cluster's owner, output to log; its exit status.
static inline int
pgtmp_run (const pgtmp_t *pg, const char *const *argv, const char *log)
{
    pid_t pid = fork ();
    if (pid == 0) {
        int fd = open (log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2 (fd, 1);
            dup2 (fd, 2);
            close (fd);
        }
        if (pg->uid && (setgroups (0, NULL) != 0 || setgid (pg->gid) != 0 || setuid (pg->uid) != 0))
            _exit (126);
        //  The server must not see the test's environment for libpq.
        unsetenv ("PGDATABASE");
        unsetenv ("PGHOST");
        execv (argv [0], (char *const *) argv);
        _exit (127);
    }
    int status = 0;
    if (pid < 0 || waitpid (pid, &status, 0) != pid)
        return -1;
    return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

static inline void
pgtmp_remove (pgtmp_t *pg)
{
    char cmd [300];
    snprintf (cmd, sizeof cmd, "rm -rf '%s'", pg->dir);
    if (system (cmd) != 0)
        fprintf (stderr, "pgtmp: cannot remove %s\n", pg->dir);
}

static inline void
pgtmp_print_log (const char *path)
{
    FILE *f = fopen (path, "r");
    char line [512];
    while (f && fgets (line, sizeof line, f))
        fprintf (stderr, "pgtmp: %s", line);
    if (f)
        fclose (f);
}

static inline void pgtmp_stop (pgtmp_t *pg);

//  What a template was made by (the server programs and initdb's
//  options, as the first line), in a file of its directory.
#define PGTMP_TEMPLATE_BIN "made-by.txt"
#define PGTMP_INITDB_ARGV "-U", "sluice", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"
#define PGTMP_INITDB_OPTIONS "-U sluice --auth=trust -E UTF8 --no-locale --no-sync"

static inline void
pgtmp_made_by (const pgtmp_t *pg, char *out, size_t size)
{
    snprintf (out, size, "%s/initdb %s", pg->bin, PGTMP_INITDB_OPTIONS);
}

//  True when template (a directory) holds a data directory made as ours
//  would be now.
static inline bool
pgtmp_template_fits (const pgtmp_t *pg, const char *template)
{
    char path [400], made_by [400] = "", ours [400];
    pgtmp_made_by (pg, ours, sizeof ours);
    snprintf (path, sizeof path, "%.300s/data/PG_VERSION", template);
    if (access (path, R_OK) != 0)
        return false;
    snprintf (path, sizeof path, "%.300s/" PGTMP_TEMPLATE_BIN, template);
    FILE *f = fopen (path, "r");
    if (!f)
        return false;
    bool read = fgets (made_by, sizeof made_by, f) != NULL;
    fclose (f);
    return read && strcmp (made_by, ours) == 0;
}

//  A copy of the template (made first when there is none, or it does
//  not fit) as data. 0 ok.
static inline int
pgtmp_copy_template (pgtmp_t *pg, const char *template, const char *data, const char *log)
{
    char initdb [300];
    snprintf (initdb, sizeof initdb, "%s/initdb", pg->bin);
    if (!pgtmp_template_fits (pg, template)) {
        //  Made aside, then renamed into place: whoever renames first
        //  wins, the others' go. One that does not fit is replaced.
        char aside [256], aside_data [300], bin_file [300];
        snprintf (aside, sizeof aside, "%s-XXXXXX", template);
        if (!mkdtemp (aside))
            return -1;
        snprintf (aside_data, sizeof aside_data, "%s/data", aside);
        snprintf (bin_file, sizeof bin_file, "%s/" PGTMP_TEMPLATE_BIN, aside);
        char ours [400];
        pgtmp_made_by (pg, ours, sizeof ours);
        FILE *f = fopen (bin_file, "w");
        bool written = f && fputs (ours, f) >= 0;
        if (f && fclose (f) != 0)
            written = false;
        const char *init_argv [] = { initdb, "-D", aside_data, PGTMP_INITDB_ARGV, NULL };
        bool made = written && (!pg->uid || chown (aside, pg->uid, pg->gid) == 0)
                    && pgtmp_run (pg, init_argv, log) == 0;
        char cmd [700];
        if (made && !pgtmp_template_fits (pg, template)) {
            snprintf (cmd, sizeof cmd, "rm -rf '%s'", template);
            if (system (cmd) != 0)
                fprintf (stderr, "pgtmp: cannot remove %s\n", template);
        }
        if (!made || rename (aside, template) != 0) {
            snprintf (cmd, sizeof cmd, "rm -rf '%s'", aside);
            if (system (cmd) != 0)
                fprintf (stderr, "pgtmp: cannot remove %s\n", aside);
        }
        if (!made)
            return -1;
    }
    char from [300];
    snprintf (from, sizeof from, "%s/data", template);
    const char *cp_argv [] = { "/bin/cp", "-a", from, data, NULL };
    return pgtmp_run (pg, cp_argv, log);
}

//  Make data (a path in pg->dir) a new cluster's data directory: a copy
//  of the template, else (none asked for, or the server's user cannot
//  reach it) initdb. 0 ok.
static inline int
pgtmp_init_data (pgtmp_t *pg, const char *data, const char *log)
{
    const char *template = getenv ("SLUICE_PG_TEMPLATE");
    if (template && *template && strlen (template) < 200) {
        if (pgtmp_copy_template (pg, template, data, log) == 0)
            return 0;
        char cmd [300];
        snprintf (cmd, sizeof cmd, "rm -rf '%s'", data);
        if (system (cmd) != 0)
            return -1;
    }
    char initdb [300];
    snprintf (initdb, sizeof initdb, "%s/initdb", pg->bin);
    const char *init_argv [] = { initdb, "-D", data, PGTMP_INITDB_ARGV, NULL };
    return pgtmp_run (pg, init_argv, log);
}

//  A copy of the cluster this process started, stopped at exit if still
//  running (the caller's pgtmp_t may be gone with a failed test's frame).
static pgtmp_t pgtmp_last;
static bool pgtmp_exit_set;

static inline void
pgtmp_at_exit (void)
{
    if (pgtmp_last.running)
        pgtmp_stop (&pgtmp_last);
}

//  0 running, -1 not (reason says why: the caller skips). tcp_port > 0:
//  it also listens on 127.0.0.1 at that port.
static inline int
pgtmp_start_tcp (pgtmp_t *pg, int tcp_port, char *reason, size_t size)
{
    bool durable = pg->durable;
    memset (pg, 0, sizeof *pg);
    pg->durable = durable;
    if (!pgtmp_find_bin (pg->bin, sizeof pg->bin)) {
        snprintf (reason, size, "no PostgreSQL server programs (initdb, pg_ctl): install Debian's postgresql");
        return -1;
    }
    if (geteuid () == 0) {
        struct passwd *pw = getpwnam ("postgres");
        if (!pw) {
            snprintf (reason, size, "running as root and there is no 'postgres' user to run the server as");
            return -1;
        }
        pg->uid = pw->pw_uid;
        pg->gid = pw->pw_gid;
    }
    snprintf (pg->dir, sizeof pg->dir, "/tmp/sluice-pg-XXXXXX");
    if (!mkdtemp (pg->dir)) {
        snprintf (reason, size, "cannot make a temporary directory: %s", strerror (errno));
        return -1;
    }
    if (pg->uid && chown (pg->dir, pg->uid, pg->gid) != 0) {
        snprintf (reason, size, "cannot give %s to the postgres user: %s", pg->dir, strerror (errno));
        pgtmp_remove (pg);
        return -1;
    }
    char data [200], log [200], pg_ctl [300];
    char *options = pg->options;
    snprintf (data, sizeof data, "%s/data", pg->dir);
    snprintf (log, sizeof log, "%s/setup.log", pg->dir);
    snprintf (pg_ctl, sizeof pg_ctl, "%s/pg_ctl", pg->bin);
    if (pgtmp_init_data (pg, data, log) != 0) {
        pgtmp_print_log (log);
        snprintf (reason, size, "initdb failed (log above)");
        pgtmp_remove (pg);
        return -1;
    }
    //  No TCP unless asked: the socket in our directory is the way in.
    pg->port = tcp_port > 0 ? tcp_port : 5432 + (int) (getpid () % 1000);
    snprintf (options, sizeof pg->options, "-c listen_addresses='%s' -k %s -p %d%s",
              tcp_port > 0 ? "127.0.0.1" : "", pg->dir, pg->port,
              durable ? "" : " -c fsync=off -c full_page_writes=off -c synchronous_commit=off");
    char server_log [200];
    snprintf (server_log, sizeof server_log, "%s/server.log", pg->dir);
    const char *start_argv [] = { pg_ctl, "-D", data, "-l", server_log, "-o", options, "-w", "-t", "60",
                                  "start", NULL };
    if (pgtmp_run (pg, start_argv, log) != 0) {
        pgtmp_print_log (log);
        pgtmp_print_log (server_log);
        snprintf (reason, size, "the PostgreSQL server did not start (log above)");
        pgtmp_remove (pg);
        return -1;
    }
    pg->running = true;
    if (!pgtmp_exit_set)
        atexit (pgtmp_at_exit);
    pgtmp_exit_set = true;
    pgtmp_last = *pg;
    snprintf (pg->dsn, sizeof pg->dsn, "host=%s port=%d user=sluice dbname=postgres", pg->dir, pg->port);
    return 0;
}

//  Stop the server (as if it went away: a fast shutdown) or start it
//  again on the same directory and socket. 0 ok.
static inline int
pgtmp_pause (pgtmp_t *pg, bool stop)
{
    char data [200], log [200], pg_ctl [300], server_log [200];
    snprintf (data, sizeof data, "%s/data", pg->dir);
    snprintf (log, sizeof log, "%s/setup.log", pg->dir);
    snprintf (pg_ctl, sizeof pg_ctl, "%s/pg_ctl", pg->bin);
    snprintf (server_log, sizeof server_log, "%s/server.log", pg->dir);
    const char *stop_argv [] = { pg_ctl, "-D", data, "-m", "fast", "-w", "stop", NULL };
    const char *start_argv [] = { pg_ctl, "-D", data, "-l", server_log, "-o", pg->options, "-w", "-t", "60",
                                  "start", NULL };
    int rc = pgtmp_run (pg, stop ? stop_argv : start_argv, log);
    pg->running = !stop;
    return rc;
}

static inline int
pgtmp_start (pgtmp_t *pg, char *reason, size_t size)
{
    return pgtmp_start_tcp (pg, 0, reason, size);
}

static inline void
pgtmp_stop (pgtmp_t *pg)
{
    if (pg->running) {
        char data [200], log [200], pg_ctl [300];
        snprintf (data, sizeof data, "%s/data", pg->dir);
        snprintf (log, sizeof log, "%s/setup.log", pg->dir);
        snprintf (pg_ctl, sizeof pg_ctl, "%s/pg_ctl", pg->bin);
        const char *argv [] = { pg_ctl, "-D", data, "-m", "immediate", "-w", "stop", NULL };
        pgtmp_run (pg, argv, log);
        pg->running = false;
    }
    if (pg->dir [0])
        pgtmp_remove (pg);
    if (strcmp (pgtmp_last.dir, pg->dir) == 0)
        pgtmp_last.running = false;     //  stopped: nothing to do at exit
    pg->dir [0] = 0;
}

#endif
