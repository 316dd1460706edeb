/*  sdk_runner.h - node's test runner over the SDK tests (tests/sdk), for
    integration tests: started in the background, so that a test can drive
    its own clients while the SDKs wait on the same stack, then waited for
    with a bound. The packages are those make sdk-deps installs.
*/
#ifndef SDK_RUNNER_H
#define SDK_RUNNER_H

#include <stdbool.h>

#define SDK_RUNNER_DIR "tests/sdk"

typedef struct _sdk_run_t sdk_run_t;

//  Why the SDK tests cannot run here (static text), or NULL when they can:
//  the packages are installed in SDK_RUNNER_DIR/node_modules and node runs.
const char *sdk_runner_missing (void);
//  Start node's test runner on the .test.mjs files of dir, with env
//  (NAME=value strings, NULL-terminated) added and output to log; each
//  test may take test_timeout_ms. Asserts (Criterion) when it cannot.
sdk_run_t *sdk_run_start (const char *dir, const char *const *env, const char *log, int test_timeout_ms);
//  Wait at most timeout_ms for the run (killed past it), say what ran,
//  print the log when something failed, free the run. true when every
//  test passed in time.
bool sdk_run_wait (sdk_run_t *run, int timeout_ms);

#endif
