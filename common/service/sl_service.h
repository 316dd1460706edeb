/*  sl_service.h - the shell every sluice process runs in.

    Parses the options (the caller's and the common ones), sets up JSON
    logging, the zloop reactor, signal handling through a signalfd (SIGINT
    and SIGTERM stop the loop cleanly, SIGHUP calls the reload hook), and a
    small HTTP server for GET /healthz and GET /metrics. The stage's own loop
    code attaches its sockets to sl_service_loop and registers its metrics in
    sl_service_metrics.

    Common options: --name (instance name, default <role>-<host>-<pid>),
    --log-level, --metrics-host, --metrics-port (0 picks a free port,
    "off" disables the server), --health-stall-ms (how long a hop may have
    work waiting with no progress before /healthz fails).

    /healthz answers 200 {"status":"ok",...} while every health check the
    process added passes, and 503 {"status":"stalled","failing":[reasons]}
    otherwise, so an orchestrator restarts what is wedged; it is ok again
    as soon as the checks pass.

    Drain (--drain-ms, SLUICE_DRAIN_MS, default SL_SERVICE_DRAIN_MS): the
    first SIGTERM starts it. GET /readyz answers 503 from that moment
    (200 before: the process takes new work) while /healthz goes on as
    before; the drain hooks run (each stops taking new work); the loop
    stops as soon as every hook's idle check says it holds nothing, or
    when --drain-ms has passed: then the give-up hooks end what remains
    with a clean error, and the loop runs on for at most
    SL_SERVICE_GIVE_UP_MS so those errors leave. A second SIGTERM, or a
    SIGINT, during the drain gives up at once the same way. SIGINT before
    any drain, or --drain-ms 0, stops at once as it always did. Every way
    ends with exit status 0.
*/
#ifndef SL_SERVICE_H
#define SL_SERVICE_H

#include <czmq.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "common/bus/sl_bus.h"
#include "common/bus/sl_router.h"
#include "common/base/sl_metrics.h"
#include "common/base/sl_opts.h"

typedef struct _sl_service_t sl_service_t;

typedef void (sl_service_hook_fn) (void *arg);
//  Append extra members to the /healthz JSON object, as ,"key":value pairs.
typedef void (sl_service_health_fn) (void *arg, sl_buf_t *out);
//  A health check: true while healthy; when not, it writes why to why.
typedef bool (sl_service_check_fn) (void *arg, sl_buf_t *why);
//  A drain's idle check: true once the hook's part holds nothing.
typedef bool (sl_service_idle_fn) (void *arg);

#define SL_SERVICE_DRAIN_MS "120000"    //  default --drain-ms: longer than a long agent turn
#define SL_SERVICE_GIVE_UP_MS 1000      //  the longest wait for the errors of a drain given up to leave

//  opts: the role's own options, SL_OPT_END-terminated (may be NULL).
//  metrics_port: the default port for /healthz and /metrics.
//  Returns NULL when the process should exit; *exit_code says with what.
sl_service_t *sl_service_new (const char *role, sl_opt_t *opts, const char *metrics_port,
                              int argc, char **argv, int *exit_code);
void sl_service_destroy (sl_service_t **self_p);

zloop_t *sl_service_loop (sl_service_t *self);
sl_metrics_t *sl_service_metrics (sl_service_t *self);
const char *sl_service_role (sl_service_t *self);
//  Instance name (stable across restarts if given) and incarnation (new
//  random value at every start).
const char *sl_service_name (sl_service_t *self);
uint64_t sl_service_incarnation (sl_service_t *self);
//  Set up the security of this process's bus (its key, the public keys,
//  the ZAP handler; see sl_bus.h); the service owns it. Call before any
//  bus socket is made. -1 (the reason logged) when it cannot: the process
//  must not start.
int sl_service_start_bus (sl_service_t *self, const sl_bus_opts_t *opts, const char *key_name);
//  The bus, or NULL before sl_service_start_bus.
sl_bus_t *sl_service_bus (sl_service_t *self);
//  Port of the /healthz + /metrics server, -1 when off.
int sl_service_metrics_port (sl_service_t *self);
//  The counter of requests one of the process's HTTP servers refused for
//  their framing (sl_httpd_counters_t.bad_framing):
//  sluice_http_bad_framing_total{server="<server>"}. Every HTTP port
//  sluice serves counts them: "client" (the gateway's), "metrics", "mock",
//  "console".
sl_counter_t *sl_service_framing_counter (sl_service_t *self, const char *server);
//  The counter of verdicts of an action and a check (sl_msg.h) for a team
//  label (sl_teamlabel.h): name{action,check,team}, the judge's
//  sluice_verdicts_total and the gateway's sluice_request_verdicts_total.
sl_counter_t *sl_service_verdict_counter (sl_service_t *self, const char *name, const char *help, int action,
                                          int check, const char *team);

//  Call fn on SIGHUP (the reload signal), after the hooks added before it
//  (at most 8: a policy, a keys file, ...); off_reload removes it.
void sl_service_on_reload (sl_service_t *self, sl_service_hook_fn *fn, void *arg);
void sl_service_off_reload (sl_service_t *self, sl_service_hook_fn *fn, void *arg);
void sl_service_on_health (sl_service_t *self, sl_service_health_fn *fn, void *arg);
//  Add a check to /healthz (at most a few per process).
void sl_service_add_check (sl_service_t *self, sl_service_check_fn *fn, void *arg);
//  /healthz fails when the hop of this router stalls past --health-stall-ms.
void sl_service_watch_hop (sl_service_t *self, sl_router_t *router);
//  --health-stall-ms: ms of a stall that fails /healthz, 0 for never.
int64_t sl_service_stall_limit (sl_service_t *self);
//  Render the /healthz body and the /metrics text (the gateway serves them
//  on its client port too). Returns the HTTP status of the health: 200 or 503.
int sl_service_render_health (sl_service_t *self, sl_buf_t *out);
void sl_service_render_metrics (sl_service_t *self, sl_buf_t *out);

//  Take part in the drain (see above): start runs at SIGTERM (may be
//  NULL), idle is polled until it returns true (NULL: always idle),
//  give_up runs when the drain is cut short (may be NULL). At most a few
//  per process.
void sl_service_on_drain (sl_service_t *self, sl_service_hook_fn *start, sl_service_idle_fn *idle,
                          sl_service_hook_fn *give_up, void *arg);
//  True from the SIGTERM that started a drain.
bool sl_service_draining (sl_service_t *self);
//  --drain-ms.
int64_t sl_service_drain_ms (sl_service_t *self);
//  Start the drain as a SIGTERM would (tests, and processes that drain
//  on another cue).
void sl_service_drain (sl_service_t *self);
//  Render the /readyz body; returns 200 (takes new work) or 503 (draining).
int sl_service_render_ready (sl_service_t *self, sl_buf_t *out);
//  Answer a probe, /healthz or /readyz, on any of the process's HTTP
//  ports (the metrics port, the gateway's client port, the audit's
//  console): true when path was one and req is answered, false otherwise
//  (req untouched). The caller has checked the method.
typedef struct _sl_http_req_t sl_http_req_t;
bool sl_service_answer_probe (sl_service_t *self, sl_http_req_t *req, const char *path);

//  Run the reactor until SIGINT / SIGTERM (or a handler asks to stop).
//  Returns the process exit code.
int sl_service_run (sl_service_t *self);

#endif
