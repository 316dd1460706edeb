/*  sl_service.c - process shell: options, logging, signals, health, metrics. */
#include "common/service/sl_service.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "common/dialects/sl_dialect.h"
#include "common/base/sl_alloc.h"
#include "common/http/sl_httpd.h"
#include "common/base/sl_json.h"
#include "common/base/sl_log.h"
#include "common/base/sl_version.h"
#include "common/identity/sl_teamlabel.h"

#define SL_SERVICE_NAME_MAX 128
#define SL_SERVICE_MAX_BODY 4096        //  /healthz and /metrics take no body
#define SL_SERVICE_MAX_CHECKS 8         //  health checks a process may add
#define SL_SERVICE_MAX_RELOADS 8        //  reload hooks (a policy, a keys file, ...)
#define SL_SERVICE_MAX_DRAINERS 4       //  parts of a process that drain (a stage, an audit link, ...)
#define SL_SERVICE_DRAIN_POLL_MS 20     //  how often a drain asks whether everything is idle

typedef struct {
    sl_service_hook_fn *fn;
    void *arg;
} s_hook_t;
#define SL_SERVICE_STALL_MS "10000"     //  default --health-stall-ms

typedef struct {
    sl_service_check_fn *fn;
    void *arg;
} s_check_t;

typedef struct {
    sl_service_hook_fn *start;
    sl_service_idle_fn *idle;
    sl_service_hook_fn *give_up;
    void *arg;
} s_drainer_t;

struct _sl_service_t {
    char role [32];
    char name [SL_SERVICE_NAME_MAX];
    uint64_t incarnation;
    zloop_t *loop;
    sl_metrics_t *metrics;
    sl_httpd_t *httpd;
    sl_bus_t *bus;                      //  keys and ZAP, NULL for processes off the bus
    int signal_fd;
    zmq_pollitem_t signal_item;
    bool stop;
    time_t started;
    s_hook_t reloads [SL_SERVICE_MAX_RELOADS];
    size_t reload_count;
    sl_service_health_fn *health_fn;
    void *health_arg;
    s_check_t checks [SL_SERVICE_MAX_CHECKS];
    size_t check_count;
    int64_t stall_limit;                //  ms, --health-stall-ms
    s_drainer_t drainers [SL_SERVICE_MAX_DRAINERS];
    size_t drainer_count;
    int64_t drain_ms;                   //  --drain-ms, 0: SIGTERM stops at once
    bool draining;                      //  from the first SIGTERM
    bool giving_up;                     //  the drain was cut short: what remains was ended
    int64_t drain_deadline;             //  zclock_mono of the end of --drain-ms
    int64_t give_up_deadline;           //  zclock_mono past which the loop stops regardless
    int drain_timer;                    //  polls the idle checks while draining, -1 otherwise
};

static bool
s_all_idle (sl_service_t *self)
{
    for (size_t i = 0; i < self->drainer_count; i++)
        if (self->drainers [i].idle && !self->drainers [i].idle (self->drainers [i].arg))
            return false;
    return true;
}

//  End what the drain still holds, with a clean error; the loop runs on
//  for at most SL_SERVICE_GIVE_UP_MS so those errors reach their clients.
static void
s_give_up (sl_service_t *self)
{
    if (self->giving_up)
        return;
    self->giving_up = true;
    self->give_up_deadline = zclock_mono () + SL_SERVICE_GIVE_UP_MS;
    for (size_t i = 0; i < self->drainer_count; i++)
        if (self->drainers [i].give_up)
            self->drainers [i].give_up (self->drainers [i].arg);
}

static int
s_on_drain_timer (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    sl_service_t *self = arg;
    if (s_all_idle (self)) {
        sl_log_info ("drained", "name=%s%s", self->name, self->giving_up ? " (cut short)" : "");
        return -1;
    }
    int64_t now = zclock_mono ();
    if (self->giving_up)
        return now >= self->give_up_deadline ? -1 : 0;
    if (now >= self->drain_deadline) {
        sl_log_warn ("drain_timeout", "--drain-ms %lld passed: ending what remains", (long long) self->drain_ms);
        s_give_up (self);
    }
    return 0;
}

void
sl_service_drain (sl_service_t *self)
{
    if (self->draining)
        return;
    self->draining = true;
    self->drain_deadline = zclock_mono () + self->drain_ms;
    sl_log_info ("draining", "name=%s drain_ms=%lld", self->name, (long long) self->drain_ms);
    for (size_t i = 0; i < self->drainer_count; i++)
        if (self->drainers [i].start)
            self->drainers [i].start (self->drainers [i].arg);
    self->drain_timer = zloop_timer (self->loop, SL_SERVICE_DRAIN_POLL_MS, 0, s_on_drain_timer, self);
}

static int
s_on_signal (zloop_t *loop, zmq_pollitem_t *item, void *arg)
{
    (void) loop;
    (void) item;
    sl_service_t *self = arg;
    struct signalfd_siginfo info;
    while (read (self->signal_fd, &info, sizeof info) == (ssize_t) sizeof info) {
        if (info.ssi_signo == SIGHUP) {
            sl_log_info ("reload", "SIGHUP received");
            for (size_t i = 0; i < self->reload_count; i++)
                self->reloads [i].fn (self->reloads [i].arg);
        }
        else
        if (self->draining) {
            //  Asked again: what remains ends now, cleanly.
            sl_log_info ("drain_cut", "signal %u during the drain", info.ssi_signo);
            s_give_up (self);
        }
        else
        if (info.ssi_signo == SIGTERM && self->drain_ms > 0)
            sl_service_drain (self);
        else {
            sl_log_info ("stopping", "signal %u", info.ssi_signo);
            self->stop = true;
        }
    }
    return self->stop ? -1 : 0;
}

int
sl_service_render_health (sl_service_t *self, sl_buf_t *out)
{
    //  Every check runs; the reasons of those that fail are listed.
    sl_buf_t why = { 0 }, reason = { 0 };
    int failing = 0;
    for (size_t i = 0; i < self->check_count; i++) {
        sl_buf_reset (&reason);
        if (self->checks [i].fn (self->checks [i].arg, &reason))
            continue;
        if (failing++)
            sl_buf_putc (&why, ',');
        sl_json_put_str (&why, reason.data ? reason.data : "", reason.len);
    }
    sl_buf_free (&reason);
    sl_buf_printf (out, "{\"status\":\"%s\",\"role\":\"%s\",\"name\":\"%s\","
                        "\"version\":\"%s\",\"uptime_s\":%ld",
                   failing ? "stalled" : "ok", self->role, self->name, SL_VERSION,
                   (long) (time (NULL) - self->started));
    if (failing) {
        sl_buf_puts (out, ",\"failing\":[");
        sl_buf_append (out, why.data, why.len);
        sl_buf_putc (out, ']');
    }
    sl_buf_free (&why);
    if (self->health_fn)
        self->health_fn (self->health_arg, out);
    sl_buf_puts (out, "}\n");
    return failing ? 503 : 200;
}

int
sl_service_render_ready (sl_service_t *self, sl_buf_t *out)
{
    sl_buf_printf (out, "{\"status\":\"%s\",\"role\":\"%s\",\"name\":\"%s\"}\n",
                   self->draining ? "draining" : "ready", self->role, self->name);
    return self->draining ? 503 : 200;
}

void
sl_service_add_check (sl_service_t *self, sl_service_check_fn *fn, void *arg)
{
    assert (self->check_count < SL_SERVICE_MAX_CHECKS);
    self->checks [self->check_count++] = (s_check_t) { fn, arg };
}

void
sl_service_watch_hop (sl_service_t *self, sl_router_t *router)
{
    sl_router_set_stall_limit (router, sl_service_stall_limit (self));
    sl_service_add_check (self, sl_router_healthy, router);
}

int64_t
sl_service_stall_limit (sl_service_t *self)
{
    return self->stall_limit;
}

void
sl_service_render_metrics (sl_service_t *self, sl_buf_t *out)
{
    sl_metrics_render (self->metrics, out);
}

bool
sl_service_answer_probe (sl_service_t *self, sl_http_req_t *req, const char *path)
{
    bool health = strcmp (path, "/healthz") == 0;
    if (!health && strcmp (path, "/readyz") != 0)
        return false;
    sl_buf_t body = { 0 };
    int status = health ? sl_service_render_health (self, &body) : sl_service_render_ready (self, &body);
    sl_http_respond (req, status, "application/json", body.data, body.len);
    sl_buf_free (&body);
    return true;
}

static void
s_on_http (void *arg, sl_http_req_t *req)
{
    sl_service_t *self = arg;
    const char *path = sl_http_req_path (req);
    sl_buf_t body = { 0 };
    if (strcmp (sl_http_req_method (req), "GET") != 0) {
        sl_http_add_header (req, "Allow", "GET");
        sl_http_respond (req, 405, "text/plain", "method not allowed\n", 19);
    }
    else
    if (sl_service_answer_probe (self, req, path))
        ;
    else
    if (strcmp (path, "/metrics") == 0) {
        sl_service_render_metrics (self, &body);
        sl_http_respond (req, 200, "text/plain; version=0.0.4", body.data, body.len);
    }
    else
        sl_http_respond (req, 404, "text/plain", "not found\n", 10);
    sl_buf_free (&body);
}

sl_service_t *
sl_service_new (const char *role, sl_opt_t *opts, const char *metrics_port,
                int argc, char **argv, int *exit_code)
{
    const char *name = "";
    const char *log_level = "info";
    const char *metrics_host = "127.0.0.1";
    const char *stall = SL_SERVICE_STALL_MS;
    const char *drain = SL_SERVICE_DRAIN_MS;
    //  Own options first, then the common ones, in one table.
    size_t own = 0;
    while (opts && opts [own].name)
        own++;
    sl_opt_t *all = sl_xcalloc (own + 7, sizeof (sl_opt_t));
    for (size_t i = 0; i < own; i++)
        all [i] = opts [i];
    all [own + 0] = (sl_opt_t) { "name", NULL, &name, "instance name (default <role>-<host>-<pid>)" };
    all [own + 1] = (sl_opt_t) { "log-level", "SLUICE_LOG_LEVEL", &log_level, "debug, info, warn or error" };
    all [own + 2] = (sl_opt_t) { "metrics-host", NULL, &metrics_host, "address for /healthz and /metrics" };
    all [own + 3] = (sl_opt_t) { "metrics-port", NULL, &metrics_port, "port for /healthz and /metrics (off: none)" };
    all [own + 4] = (sl_opt_t) { "health-stall-ms", NULL, &stall,
                                 "/healthz fails (503) when work waits this long for a live next stage "
                                 "that takes none of it (0: never)" };
    all [own + 5] = (sl_opt_t) { "drain-ms", "SLUICE_DRAIN_MS", &drain,
                                 "on SIGTERM, stop taking new work (/readyz 503) and finish what is held for at most "
                                 "this long, then end what remains with a clean error (0: stop at once)" };
    int rc = sl_opts_parse (role, all, argc, argv);
    free (all);
    if (rc != 0) {
        *exit_code = rc > 0 ? 0 : 2;
        return NULL;
    }

    //  Every dialect module registers now, and a module that lacks an
    //  operation stops the process here rather than fail a request later.
    const char *why = NULL;
    if (sl_dialect_init (&why)) {
        sl_log_init (role, sl_log_level_parse (log_level));
        sl_log_error ("bad_dialect", "%s", why ? why : "a dialect module did not register");
        *exit_code = 2;
        return NULL;
    }

    sl_service_t *self = sl_xcalloc (1, sizeof *self);
    snprintf (self->role, sizeof self->role, "%s", role);
    if (*name)
        snprintf (self->name, sizeof self->name, "%s", name);
    else {
        char host [64] = "host";
        gethostname (host, sizeof host);
        host [sizeof host - 1] = 0;
        snprintf (self->name, sizeof self->name, "%s-%s-%d", role, host, (int) getpid ());
    }
    while (getrandom (&self->incarnation, sizeof self->incarnation, 0) != sizeof self->incarnation)
        ;
    self->started = time (NULL);
    sl_log_init (role, sl_log_level_parse (log_level));
    self->stall_limit = sl_opts_long (stall);
    self->drain_ms = sl_opts_long (drain);
    self->drain_timer = -1;
    if (self->stall_limit < 0 || self->drain_ms < 0) {
        sl_log_error ("bad_option", "--health-stall-ms and --drain-ms must be non-negative integers: %s, %s",
                      stall, drain);
        *exit_code = 2;
        free (self);
        return NULL;
    }

    //  Signals: blocked before ZeroMQ starts its threads, read via signalfd.
    //  A process started in the background inherits SIGINT ignored, and an
    //  ignored signal never reaches a signalfd: restore the defaults first.
    zsys_handler_set (NULL);
    signal (SIGINT, SIG_DFL);
    signal (SIGTERM, SIG_DFL);
    signal (SIGHUP, SIG_DFL);
    sigset_t mask;
    sigemptyset (&mask);
    sigaddset (&mask, SIGINT);
    sigaddset (&mask, SIGTERM);
    sigaddset (&mask, SIGHUP);
    sigprocmask (SIG_BLOCK, &mask, NULL);
    signal (SIGPIPE, SIG_IGN);
    self->signal_fd = signalfd (-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);

    self->loop = zloop_new ();
    self->metrics = sl_metrics_new ();
    self->signal_item = (zmq_pollitem_t) { .socket = NULL, .fd = self->signal_fd, .events = ZMQ_POLLIN };
    zloop_poller (self->loop, &self->signal_item, s_on_signal, self);

    if (strcmp (metrics_port, "off") != 0) {
        long port = sl_opts_long (metrics_port);
        if (port < 0 || port > 65535) {
            sl_log_error ("bad_option", "--metrics-port must be a port number or off: %s", metrics_port);
            *exit_code = 2;
            sl_service_destroy (&self);
            return NULL;
        }
        self->httpd = sl_httpd_new (self->loop, metrics_host, (int) port, SL_SERVICE_MAX_BODY,
                                    s_on_http, NULL, self);
        if (!self->httpd) {
            *exit_code = 1;
            sl_service_destroy (&self);
            return NULL;
        }
        sl_httpd_set_counters (self->httpd, &(sl_httpd_counters_t) {
            .bad_framing = sl_service_framing_counter (self, "metrics") });
    }
    *exit_code = 0;
    return self;
}

void
sl_service_destroy (sl_service_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_service_t *self = *self_p;
    sl_httpd_destroy (&self->httpd);
    sl_bus_destroy (&self->bus);
    zloop_destroy (&self->loop);
    sl_metrics_destroy (&self->metrics);
    if (self->signal_fd >= 0)
        close (self->signal_fd);
    free (self);
    *self_p = NULL;
}

zloop_t *sl_service_loop (sl_service_t *self) { return self->loop; }
sl_metrics_t *sl_service_metrics (sl_service_t *self) { return self->metrics; }

sl_counter_t *
sl_service_verdict_counter (sl_service_t *self, const char *name, const char *help, int action, int check,
                            const char *team)
{
    char labels [SL_TEAMLABEL_TEXT + 64];
    snprintf (labels, sizeof labels, "action=\"%s\",check=\"%s\",team=\"%s\"", sl_action_name (action),
              sl_check_name (check), team);
    return sl_metrics_counter (self->metrics, name, labels, help);
}

sl_counter_t *
sl_service_framing_counter (sl_service_t *self, const char *server)
{
    char labels [64];
    snprintf (labels, sizeof labels, "server=\"%s\"", server);
    return sl_metrics_counter (self->metrics, "sluice_http_bad_framing_total", labels,
                               "Requests refused for their framing: ambiguous Content-Length / Transfer-Encoding, "
                               "whitespace before a header's colon");
}
const char *sl_service_role (sl_service_t *self) { return self->role; }
const char *sl_service_name (sl_service_t *self) { return self->name; }
uint64_t sl_service_incarnation (sl_service_t *self) { return self->incarnation; }

int
sl_service_start_bus (sl_service_t *self, const sl_bus_opts_t *opts, const char *key_name)
{
    assert (!self->bus);
    self->bus = sl_bus_new (self->loop, self->metrics, opts, key_name);
    return self->bus ? 0 : -1;
}

sl_bus_t *
sl_service_bus (sl_service_t *self)
{
    return self->bus;
}

int
sl_service_metrics_port (sl_service_t *self)
{
    return self->httpd ? sl_httpd_port (self->httpd) : -1;
}

void
sl_service_on_reload (sl_service_t *self, sl_service_hook_fn *fn, void *arg)
{
    assert (self->reload_count < SL_SERVICE_MAX_RELOADS);
    self->reloads [self->reload_count++] = (s_hook_t) { fn, arg };
}

void
sl_service_off_reload (sl_service_t *self, sl_service_hook_fn *fn, void *arg)
{
    for (size_t i = 0; i < self->reload_count; i++)
        if (self->reloads [i].fn == fn && self->reloads [i].arg == arg) {
            memmove (&self->reloads [i], &self->reloads [i + 1],
                     (self->reload_count - i - 1) * sizeof self->reloads [0]);
            self->reload_count--;
            return;
        }
}

void
sl_service_on_drain (sl_service_t *self, sl_service_hook_fn *start, sl_service_idle_fn *idle,
                     sl_service_hook_fn *give_up, void *arg)
{
    assert (self->drainer_count < SL_SERVICE_MAX_DRAINERS);
    self->drainers [self->drainer_count++] = (s_drainer_t) { start, idle, give_up, arg };
}

bool sl_service_draining (sl_service_t *self) { return self->draining; }
int64_t sl_service_drain_ms (sl_service_t *self) { return self->drain_ms; }

void
sl_service_on_health (sl_service_t *self, sl_service_health_fn *fn, void *arg)
{
    self->health_fn = fn;
    self->health_arg = arg;
}

int
sl_service_run (sl_service_t *self)
{
    sl_log_info ("started", "name=%s version=%s metrics_port=%d",
                 self->name, SL_VERSION, sl_service_metrics_port (self));
    zloop_start (self->loop);
    sl_log_info ("stopped", "name=%s", self->name);
    return 0;
}

