/*  browser.h - run a script of tests/browser (Node, playwright-core and
    Debian's headless Chromium) against a running stack, for the console's
    browser tests. */
#ifndef TEST_BROWSER_H
#define TEST_BROWSER_H

#include <stdbool.h>
#include <stddef.h>

#define BROWSER_DIR "tests/browser"
#define BROWSER_CHROMIUM "/usr/bin/chromium"
#define BROWSER_TIMEOUT_MS 120000

//  Why a browser test cannot run here (node, Chromium or playwright-core
//  missing), or NULL when it can.
const char *browser_missing (void);
//  Run node BROWSER_DIR/<script> with SLUICE_CHROMIUM, SLUICE_SCREENSHOTS
//  (build/) and the "NAME=value" strings of env (NULL-terminated), its
//  output in <log_dir>/<script>.log, for at most BROWSER_TIMEOUT_MS.
//  True when it exited 0; its output goes to stderr when it did not (and
//  its "measured:" lines always).
bool browser_run (const char *script, const char *const *env, const char *log_dir);
//  The same for a console script: SLUICE_CONSOLE_URL and SLUICE_GATEWAY_URL
//  from the ports, and one more "NAME=value" (or NULL).
bool browser_run_console (const char *script, int console_port, int gateway_port, const char *extra,
                          const char *log_dir);

#endif
