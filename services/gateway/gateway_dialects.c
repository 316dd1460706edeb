/*  gateway_dialects.c - the model dialects' endpoints (see
    gateway_dialects.h). What a request means, which provider serves it
    and what goes upstream are the libraries' (common/dialects: sl_job);
    this file reads it off HTTP and hands it to the core.
*/
#include "services/gateway/gateway_dialects.h"

#include <czmq.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"
#include "common/identity/sl_teamlabel.h"
#include "common/tools/sl_toolcache.h"
#include "services/gateway/parse_worker.h"

struct _gateway_dialects_t {
    gateway_core_t *core;
    sl_providers_t *routes;             //  the routes file (borrowed, outlives the gateway)
    size_t max_body;
    sl_metrics_t *metrics;
    parse_worker_t *parse_worker;       //  large bodies are parsed off the reactor
    sl_toolcache_t *toolcache;          //  tool definition digests, for bodies parsed here
    zlistx_t *parsing;                  //  their tasks, until they come back
    sl_counter_t *untranslated;         //  requests refused: something they need cannot cross
};

//  Requests (their caller known) by dialect and team.
static sl_counter_t *
s_request_counter (gateway_dialects_t *self, int dialect, const char *team)
{
    char labels [SL_TEAMLABEL_TEXT + 64];
    snprintf (labels, sizeof labels, "dialect=\"%s\",team=\"%s\"", sl_dialect_name (dialect), team);
    return sl_metrics_counter (self->metrics, "sluice_requests_total", labels,
                               "Client requests for a completion whose caller is known, by client dialect and team");
}

//  A request parsed: refused in the client's dialect, or on its way.
static void
s_on_parsed (gateway_dialects_t *self, sl_http_req_t *req, int dialect, int rc, sl_job_t *parsed, sl_caller_t *caller)
{
    if (rc) {
        sl_admission_finish (gateway_core_admission (self->core), &caller, NULL, NULL, false);
        gateway_core_count_refused (self->core);
        if (parsed->provider)           //  routed: the translation refused it
            sl_counter_inc (self->untranslated);
        gateway_core_respond_error (req, dialect, parsed->status, parsed->error_type,
                                    sl_buf_cstr (&parsed->error_message));
        return;
    }
    gateway_stream_spec_t spec = { .req = req, .caller = caller };
    uint8_t sid [SL_SID_SIZE];
    gateway_core_stream_start (self->core, &spec, parsed, sid);
}

//  A large body came back parsed from the worker thread; its client may
//  have gone meanwhile.
static void
s_on_parse_done (void *arg, parse_worker_task_t *task)
{
    gateway_dialects_t *self = arg;
    void *handle = zlistx_find (self->parsing, task);
    if (handle)
        zlistx_delete (self->parsing, handle);
    sl_log_info ("request_parsed", "bytes=%zu took_ms=%.1f client=%s", task->body.len, task->took_us / 1000.0,
                 task->owner ? "waiting" : "gone");
    sl_caller_t *caller = task->caller;
    if (task->owner) {
        s_on_parsed (self, task->owner, task->endpoint.dialect, task->rc, &task->parsed, caller);
        gateway_core_after (self->core);
    }
    else
        sl_admission_finish (gateway_core_admission (self->core), &caller, NULL, NULL, false);
    parse_worker_task_destroy (&task);
}

static bool
s_serve (void *arg, sl_http_req_t *req, const char *method, const char *path)
{
    gateway_dialects_t *self = arg;
    sl_endpoint_t route;
    if (sl_job_route (path, &route) != 1)
        return false;                   //  the core's 404, in the dialect the path names
    int dialect = route.dialect ? route.dialect : GATEWAY_DEFAULT_DIALECT;
    if (strcmp (method, "POST") != 0) {
        sl_http_add_header (req, "Allow", "POST");
        gateway_core_respond_error (req, dialect, 405, "invalid_request_error", "use POST");
        return true;
    }
    sl_caller_t *caller = gateway_core_identify (self->core, req, dialect);
    if (!caller)
        return true;
    sl_counter_inc (s_request_counter (self, dialect, sl_caller_team_label (caller)));
    if (sl_http_req_too_large (req)) {
        sl_admission_finish (gateway_core_admission (self->core), &caller, NULL, NULL, false);
        gateway_core_count_refused (self->core);
        char message [96];
        snprintf (message, sizeof message, "the request body is over the limit of %zu bytes", self->max_body);
        gateway_core_respond_error (req, dialect, 413, "request_too_large", message);
        return true;
    }
    sl_str_t body = sl_http_req_body (req);
    const char *alt = sl_http_req_query (req, "alt");
    route.sse = alt && strcmp (alt, "sse") == 0;
    if (body.len > PARSE_WORKER_INLINE_BYTES) {
        //  Long work: off the reactor, which keeps answering heartbeats.
        parse_worker_task_t *task = parse_worker_task_new ();
        task->endpoint = route;
        task->routes = self->routes;
        sl_buf_append_str (&task->body, body);
        task->owner = req;
        task->caller = caller;
        zlistx_add_end (self->parsing, task);
        parse_worker_submit (self->parse_worker, task);
        return true;
    }
    sl_job_t parsed;
    int rc = sl_job_prepare (&route, body, self->routes, self->toolcache, &parsed);
    s_on_parsed (self, req, dialect, rc, &parsed, caller);
    sl_job_clear (&parsed);
    return true;
}

//  A client that left while its body was being parsed.
static bool
s_on_close (void *arg, sl_http_req_t *req)
{
    gateway_dialects_t *self = arg;
    bool found = false;
    for (parse_worker_task_t *task = zlistx_first (self->parsing); task; task = zlistx_next (self->parsing))
        if (task->owner == req) {
            task->owner = NULL;
            found = true;
        }
    return found;
}

static bool
s_held (void *arg)
{
    gateway_dialects_t *self = arg;
    return zlistx_size (self->parsing) > 0;
}

//  The core's own refusals, in the dialect their path names.
static void
s_refuse (void *arg, sl_http_req_t *req, const char *path, int status, const char *type, const char *message)
{
    (void) arg;
    sl_endpoint_t route;
    sl_job_route (path, &route);
    gateway_core_respond_error (req, route.dialect, status, type, message);
}

gateway_dialects_t *
gateway_dialects_new (gateway_core_t *core, const gateway_config_t *config)
{
    gateway_dialects_t *self = sl_xcalloc (1, sizeof *self);
    self->core = core;
    self->routes = config->routes;
    self->max_body = config->max_body;
    sl_service_t *service = gateway_core_service (core);
    self->metrics = sl_service_metrics (service);
    for (int d = SL_DIALECT_OPENAI; d < SL_DIALECT_MAX; d++)
        if (sl_dialect_is_client (sl_dialect_get (d)))     //  clients call only these
            s_request_counter (self, d, SL_TEAMLABEL_DEFAULT);
    self->untranslated = sl_metrics_counter (self->metrics, "sluice_requests_untranslatable_total", NULL,
                                             "Requests refused because something they need cannot cross to the "
                                             "provider's dialect");
    self->parsing = zlistx_new ();
    self->parse_worker = parse_worker_new (sl_service_loop (service), s_on_parse_done, self);
    self->toolcache = sl_toolcache_new ();
    gateway_route_t route = { .prefix = "/", .serve = s_serve, .on_close = s_on_close, .held = s_held,
                              .arg = self };
    gateway_core_route (core, &route);
    gateway_core_on_refuse (core, s_refuse, self);
    return self;
}

void
gateway_dialects_destroy (gateway_dialects_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    gateway_dialects_t *self = *self_p;
    //  Whose bodies were still being parsed: let them go (the worker
    //  never touches a task's caller).
    for (parse_worker_task_t *task = zlistx_first (self->parsing); task; task = zlistx_next (self->parsing)) {
        sl_caller_t *caller = task->caller;
        task->caller = NULL;
        sl_admission_finish (gateway_core_admission (self->core), &caller, NULL, NULL, false);
    }
    parse_worker_destroy (&self->parse_worker);     //  frees the tasks it still held
    sl_toolcache_destroy (&self->toolcache);
    zlistx_destroy (&self->parsing);
    free (self);
    *self_p = NULL;
}
