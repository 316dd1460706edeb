/*  harness.h - real sluice processes on loopback, for integration tests.

    Programs come from $SLUICE_BIN_DIR (the Makefile points it at the
    sanitizer builds). Every endpoint is an ephemeral port on 127.0.0.1:
    each process is started after the one it connects to, and the harness
    learns the bound endpoints from the processes' own log lines (the
    gateway's inbox, which the emitter started before it connects to, is a
    port picked in advance). All waits are bounded and poll for an event (a
    log line, a counter), never sleep a fixed time.

    The bus runs as deployed: CURVE on every link, with keys that
    sluice-keygen makes in the stack's directory. Processes start with
    SLUICE_DRAIN_MS=0 (unless the test's environment sets it): SIGTERM
    stops them at once; a test of the drain passes --drain-ms.
*/
#ifndef HARNESS_H
#define HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <czmq.h>                      //  zclock_mono: the clock every wait is bounded on

#include "common/base/sl_buf.h"
#include "common/dialects/sl_dialect.h"

typedef struct {
    pid_t pid;
    char name [32];
    char log_path [512];
} proc_t;

//  Start sluice-<name> with args (NULL-terminated). Output goes to a log
//  file in dir. NULL if the program cannot be started.
proc_t *proc_start (const char *dir, const char *name, const char *const *args);
//  The same, logging to <dir>/<label>.log (several instances of one program).
proc_t *proc_start_as (const char *dir, const char *name, const char *label, const char *const *args);
//  The same, with the program from bin_dir (NULL: $SLUICE_BIN_DIR).
proc_t *proc_start_from (const char *bin_dir, const char *dir, const char *name, const char *label,
                         const char *const *args);
//  A TCP port on 127.0.0.1 that was free a moment ago, from below the
//  kernel's ephemeral range (no outgoing connection can take it meanwhile).
int harness_free_port (void);
//  A TCP port on 127.0.0.1 that refuses every connection for as long as
//  *holder stays open: a bound socket that never listens, so no other
//  process can take the port meanwhile. Close *holder when done.
int harness_refusing_port (int *holder);
//  Wait until the log has a line containing needle (and, if after is not
//  NULL, found after it in that line); copy the value that follows after
//  into value (unless value is NULL). true when found within timeout_ms.
bool proc_wait_log (proc_t *p, const char *needle, const char *after,
                    char *value, size_t size, int timeout_ms);
//  Write text to dir/name whole (a policy, a keys file a test makes: under
//  another name, then renamed, so a process reloading it never reads half
//  of it). 0 ok.
int harness_write (const char *dir, const char *name, const char *text);
//  What a file holds (a mock's --record file, an expectation), into out
//  ("" when it cannot be read), followed by a NUL. False when it cannot.
bool harness_read (const char *path, sl_buf_t *out);
//  Wait (bounded) for p to exit by itself; its exit status, -1 when it
//  did not exit in time (then it is killed) or died from a signal.
int proc_wait_exit (proc_t *p, int timeout_ms);
//  Make a key directory dir/keys with sluice-keygen (the real program);
//  its path goes to keys. 0 ok.
int harness_keygen (const char *dir, char *keys, size_t size);
//  Make a czmq socket (zsock_t *) a CURVE client with the key named key
//  of the directory keys, of the server whose key is named server; or a
//  CURVE server with the key named key (server NULL). 0 ok.
int harness_curve (void *zsock, const char *keys, const char *key, const char *server);
//  SIGTERM and wait; returns the exit status, or -1 when it had to be
//  killed or died from a signal (a sanitizer report exits non-zero).
int proc_stop (proc_t *p, int timeout_ms);
void proc_kill (proc_t *p);
//  Print the process's log to stderr (for failed tests).
void proc_dump (proc_t *p);

typedef struct {
    const char *policy;                 //  policy file, NULL for none
    int mock_delay_ms;                  //  time between mock events
    const char *policy_text;            //  or a policy written to the stack's dir once the
                                        //  mock is up, "@MOCK@" replaced by its base URL
    const char *const *judge_args;      //  extra judge flags, NULL-terminated (or NULL)
    const char *const *aggregator_args; //  extra aggregator flags, NULL-terminated (or NULL)
    const char *const *emitter_args;    //  extra emitter flags, NULL-terminated (or NULL)
    const char *const *ingest_args;     //  extra ingest flags (later flags win), NULL-terminated (or NULL)
    const char *const *gateway_args;    //  extra gateway flags, NULL-terminated (or NULL)
    const char *const *mock_args;       //  extra mock flags, NULL-terminated (or NULL)
    const char *routes_text;            //  a routes file for the ingest and the gateway, written
                                        //  once the mock is up, "@MOCK@" replaced by its base URL
    const char *gateway_bin_dir;        //  the gateway from here (NULL: $SLUICE_BIN_DIR), e.g. the
                                        //  release build, to measure its memory without the sanitizers
    const char *audit_spool;            //  non-NULL: the emitter spools records for sluice-audit
                                        //  (--audit, this --audit-spool; "" for the default)
    bool ipc;                           //  the stages' inboxes on ipc:// in the stack's dir, not tcp://
    bool gateway_approvals;             //  the gateway asks the judge's approvals socket (--judge-approvals)
} stack_opts_t;

typedef struct {
    char dir [256];
    proc_t *mock, *emitter, *judge, *aggregator, *ingest, *gateway;
    int http_port;
    int mock_port;
    char pub [128];                     //  the emitter's PUB for full taps
    char pub_meta [128];                //  its PUB for metadata-only taps
    char keys [300];                    //  the key directory every process uses
    char gateway_inbox [300];           //  the gateway's inbox endpoint
    char metrics [6][16];               //  metrics ports by process
    char inbox [6][300];                //  inbox endpoints, same order (1 ingest .. 5 gateway)
    char policy_path [512];             //  the policy written from policy_text, or ""
    char routes_path [512];             //  the routes file written from routes_text, or ""
    char audit [128];                   //  the emitter's audit endpoint, or "" (audit_spool)
    char approvals [128];               //  the judge's approvals control endpoint
} sluice_stack_t;

//  The ingest's built-in providers at the mock: one --<vendor>-base-url
//  per vendor of the registered dialects, the mock at the path of the
//  vendor's own base URL (OpenAI's https://api.openai.com/v1 becomes
//  http://127.0.0.1:PORT/v1).
#define HARNESS_URL_MAX 128
typedef struct {
    char option [SL_DIALECT_MAX][SL_DIALECT_OPTION_MAX + 2];
    char url [SL_DIALECT_MAX][HARNESS_URL_MAX];
} mock_urls_t;
//  Append the options and their values to args (room entries, kept
//  NULL-terminated); the strings live in self.
void harness_mock_urls (mock_urls_t *self, int mock_port, const char **args, size_t room);

//  A routes file's providers: the stack's mock in every dialect
//  (mock-openai, mock-responses, mock-anthropic, mock-gemini), "@MOCK@"
//  for its base URL (stack_opts_t.routes_text).
#define HARNESS_MOCK_PROVIDERS \
    "providers:\n" \
    "  - { name: mock-openai, dialect: openai, base_url: \"@MOCK@/v1\" }\n" \
    "  - { name: mock-responses, dialect: responses, base_url: \"@MOCK@/v1\" }\n" \
    "  - { name: mock-anthropic, dialect: anthropic, base_url: \"@MOCK@\" }\n" \
    "  - { name: mock-gemini, dialect: gemini, base_url: \"@MOCK@/v1beta\" }\n"
//  Routes: a model "<scenario>@<dialect>" to the mock of that dialect,
//  whatever the client's (the mock reads the scenario before the @).
#define HARNESS_MOCK_DIALECT_ROUTES \
    "  - { model: \"*@openai\", provider: mock-openai }\n" \
    "  - { model: \"*@responses\", provider: mock-responses }\n" \
    "  - { model: \"*@anthropic\", provider: mock-anthropic }\n" \
    "  - { model: \"*@gemini\", provider: mock-gemini }\n"

//  Start mock, emitter, judge, aggregator, ingest and gateway. NULL (and
//  everything started is stopped) when one does not come up.
sluice_stack_t *stack_start (const stack_opts_t *opts);
//  Stop all; returns how many did not exit cleanly with status 0.
int stack_stop (sluice_stack_t *s);

//  A blocking HTTP request to 127.0.0.1:port (bounded by timeout_ms).
//  Returns the HTTP status (0 on a transport error); the body goes to out.
int http_request (int port, const char *method, const char *path,
                  const char *body, const char *const *headers,
                  sl_buf_t *out, int timeout_ms);
//  The same, the answer's header lines (status line included, CR LF as
//  sent) appended to out_headers when it is not NULL.
int http_request_full (int port, const char *method, const char *path, const char *body,
                       const char *const *headers, sl_buf_t *out, sl_buf_t *out_headers, int timeout_ms);
//  Read a counter or gauge from a Prometheus /metrics page (-1 if absent).
double metric_value (int port, const char *name);
//  Poll a metric until it is at least want (_down: at most want), for at
//  most timeout_ms; its last value (-1 if absent). Every wait of the
//  tests is bounded on czmq's zclock_mono.
double harness_wait_metric (int port, const char *name, double want, int timeout_ms);
double harness_wait_metric_down (int port, const char *name, double want, int timeout_ms);


#endif
