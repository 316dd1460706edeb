/*  browser.c - a console browser script, run and waited for (see browser.h). */
#include "tests/integration/browser.h"

#include <czmq.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define S_POLL_US 50000

const char *
browser_missing (void)
{
    if (system ("node --version > /dev/null 2>&1") != 0)
        return "node is not installed (make sdk-deps installs Debian's nodejs and npm)";
    if (access (BROWSER_CHROMIUM, X_OK) != 0)
        return BROWSER_CHROMIUM " is not installed (make deps installs Debian's chromium)";
    if (access (BROWSER_DIR "/node_modules/playwright-core/package.json", R_OK) != 0)
        return "playwright-core is not installed in " BROWSER_DIR "/node_modules (make browser-deps)";
    return NULL;
}

bool
browser_run (const char *script, const char *const *env, const char *log_dir)
{
    char cwd [512], shots [600], path [600], log [700];
    if (!getcwd (cwd, sizeof cwd))
        return false;
    snprintf (shots, sizeof shots, "%s/build", cwd);
    snprintf (path, sizeof path, BROWSER_DIR "/%s", script);
    snprintf (log, sizeof log, "%s/%s.log", log_dir, script);
    pid_t pid = fork ();
    if (pid == 0) {
        int fd = open (log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2 (fd, 1);
        dup2 (fd, 2);
        close (fd);
        setpgid (0, 0);
        setenv ("SLUICE_SCREENSHOTS", shots, 1);
        setenv ("SLUICE_CHROMIUM", BROWSER_CHROMIUM, 1);
        for (int i = 0; env && env [i]; i++)
            putenv ((char *) env [i]);
        execlp ("node", "node", path, (char *) NULL);
        _exit (127);
    }
    if (pid < 0)
        return false;
    int status = -1;
    int64_t deadline = zclock_mono () + BROWSER_TIMEOUT_MS;
    while (zclock_mono () < deadline && waitpid (pid, &status, WNOHANG) != pid)
        usleep (S_POLL_US);
    if (zclock_mono () >= deadline) {
        kill (-pid, SIGKILL);
        waitpid (pid, &status, 0);
    }
    bool ok = WIFEXITED (status) && WEXITSTATUS (status) == 0;
    FILE *f = fopen (log, "r");
    char line [4096];
    while (f && fgets (line, sizeof line, f))
        if (!ok || strncmp (line, "measured:", 9) == 0)
            fprintf (stderr, "%s: %s", script, line);
    if (f)
        fclose (f);
    unlink (log);
    return ok;
}

bool
browser_run_console (const char *script, int console_port, int gateway_port, const char *extra, const char *log_dir)
{
    char console_url [80], gateway_url [80];
    snprintf (console_url, sizeof console_url, "SLUICE_CONSOLE_URL=http://127.0.0.1:%d/", console_port);
    snprintf (gateway_url, sizeof gateway_url, "SLUICE_GATEWAY_URL=http://127.0.0.1:%d", gateway_port);
    const char *env [] = { console_url, gateway_url, extra, NULL };
    return browser_run (script, env, log_dir);
}
