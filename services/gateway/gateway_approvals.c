/*  gateway_approvals.c - the gateway's approvals API (see
    gateway_approvals.h).

    Who may ask: with keys (a keys file, SLUICE_CLIENT_KEYS) a caller with
    a key, the gateway's usual credential (401 otherwise); the judge that
    holds an approval says whether that caller may decide it (403), from
    the rule's approvers and the key's approver mark. Without keys only a
    caller on this machine, like the console's rule. Every refusal is
    counted, by status: sluice_approvals_refused_total{status}.
*/
#include "services/gateway/gateway_approvals.h"

#include <czmq.h>
#include <stdlib.h>
#include <string.h>

#include "common/approval/sl_approvals_api.h"
#include "common/approval/sl_approvals_link.h"
#include "common/base/sl_alloc.h"

#define S_PREFIX "/v1/approvals"

struct _gateway_approvals_t {
    gateway_core_t *core;
    size_t max_body;
    sl_metrics_t *metrics;
    sl_approvals_link_t *link;          //  the judges' control link, NULL without --judge-approvals
    zlistx_t *calls;                    //  requests waiting for the judges (s_call_t)
    bool in_call;                       //  inside a link call: an answer now must not run MHD
};

//  An HTTP request waiting for the judges.
typedef struct {
    gateway_approvals_t *owner;
    sl_http_req_t *req;                 //  NULL once the client left
    uint64_t handle;                    //  the link's, for forget
} s_call_t;

static void
s_refused (gateway_approvals_t *self, int status)
{
    char labels [32];
    snprintf (labels, sizeof labels, "status=\"%d\"", status);
    sl_counter_inc (sl_metrics_counter (self->metrics, "sluice_approvals_refused_total", labels,
                                        "Requests to /v1/approvals refused, by HTTP status"));
}

static void
s_error (gateway_approvals_t *self, sl_http_req_t *req, int status, const char *message)
{
    s_refused (self, status);
    gateway_core_respond_error (req, GATEWAY_DEFAULT_DIALECT, status, sl_approvals_error_type (status), message);
}

//  The judges answered (or the deadline passed).
static void
s_done (void *arg, const sl_approvals_outcome_t *outcome)
{
    s_call_t *call = arg;
    gateway_approvals_t *self = call->owner;
    void *handle = zlistx_find (self->calls, call);
    if (handle)
        zlistx_delete (self->calls, handle);
    if (call->req) {
        if (outcome->status == 200 && outcome->body)
            sl_http_respond (call->req, 200, "application/json", outcome->body, strlen (outcome->body));
        else
            s_error (self, call->req, outcome->status, outcome->message ? outcome->message : "no answer");
        if (!self->in_call)
            gateway_core_after (self->core);
    }
    free (call);
}

//  Who the caller is, as the judges read it; false when refused (answered).
static bool
s_who (gateway_approvals_t *self, sl_http_req_t *req, sl_approvals_by_t *by, sl_caller_t **caller_p)
{
    memset (by, 0, sizeof *by);
    if (!sl_admission_checks (gateway_core_admission (self->core))) {
        if (!sl_http_req_loopback (req)) {
            s_error (self, req, 401, "approvals are decided from this machine only when no keys are configured");
            return false;
        }
        by->loopback = true;
        return true;
    }
    sl_caller_t *caller = gateway_core_identify (self->core, req, GATEWAY_DEFAULT_DIALECT);
    if (!caller) {
        s_refused (self, 401);
        return false;
    }
    const sl_identity_t *who = sl_caller_identity (caller);
    by->key_id = who->key_id;
    by->team = who->team;
    by->user = who->user;
    by->approver = who->key && who->key->approver;
    *caller_p = caller;
    return true;
}

//  /v1/approvals and /v1/approvals/{id}; declines any other path.
static bool
s_serve (void *arg, sl_http_req_t *req, const char *method, const char *path)
{
    gateway_approvals_t *self = arg;
    char id [SL_APPROVALS_ID_HEX + 1];
    sl_approvals_path_t kind = sl_approvals_path (path, S_PREFIX, id);
    if (kind == SL_APPROVALS_PATH_NONE)
        return false;
    const char *allowed = kind == SL_APPROVALS_PATH_LIST ? "GET" : "POST";
    if (strcmp (method, allowed) != 0) {
        sl_http_add_header (req, "Allow", allowed);
        s_error (self, req, 405, kind == SL_APPROVALS_PATH_LIST ? "use GET" : "use POST");
        return true;
    }
    if (!self->link) {
        s_error (self, req, 503, "approvals are not configured (--judge-approvals)");
        return true;
    }
    sl_approvals_by_t by;
    sl_caller_t *caller = NULL;
    if (!s_who (self, req, &by, &caller))
        return true;
    sl_approvals_parsed_t parsed = { 0 };
    char why [SL_APPROVALS_WHY_MAX];
    int refusal = 0;
    if (kind == SL_APPROVALS_PATH_ONE) {
        if (sl_http_req_too_large (req)) {
            refusal = 413;
            snprintf (why, sizeof why, "the body is over the limit of %zu bytes", self->max_body);
        }
        else
        if (sl_approvals_parse (sl_http_req_body (req), &parsed, why))
            refusal = 400;
        else
        if (!*id) {
            refusal = 404;
            snprintf (why, sizeof why, "no approval has this id (32 hex digits)");
        }
    }
    if (refusal)
        s_error (self, req, refusal, why);
    else {
        s_call_t *call = sl_xcalloc (1, sizeof *call);
        call->owner = self;
        call->req = req;
        zlistx_add_end (self->calls, call);
        //  The answer may come before the call returns: no MHD run then,
        //  we are inside its request handler.
        self->in_call = true;
        uint64_t handle = kind == SL_APPROVALS_PATH_LIST
                        ? sl_approvals_link_list (self->link, &by, s_done, call)
                        : sl_approvals_link_decide (self->link, id, &by, &parsed.decision, s_done, call);
        self->in_call = false;
        if (handle)
            call->handle = handle;      //  still waiting: the call lives
    }
    sl_approvals_parsed_clear (&parsed);
    //  The caller was only needed to know who asks.
    if (caller)
        sl_admission_finish (gateway_core_admission (self->core), &caller, NULL, NULL, false);
    return true;
}

static bool
s_on_close (void *arg, sl_http_req_t *req)
{
    gateway_approvals_t *self = arg;
    for (s_call_t *call = zlistx_first (self->calls); call; call = zlistx_next (self->calls))
        if (call->req == req) {
            call->req = NULL;
            sl_approvals_link_forget (self->link, call->handle);
            zlistx_delete (self->calls, zlistx_cursor (self->calls));
            free (call);
            return true;
        }
    return false;
}

//  The client of stream sid left: the judges cancel its pending approvals.
static void
s_on_cancel (void *arg, const uint8_t *sid)
{
    gateway_approvals_t *self = arg;
    if (!self->link)
        return;
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (sid, hex);
    sl_approvals_link_cancel (self->link, hex);
}

gateway_approvals_t *
gateway_approvals_new (gateway_core_t *core, const gateway_config_t *config)
{
    gateway_approvals_t *self = sl_xcalloc (1, sizeof *self);
    self->core = core;
    self->max_body = config->max_body;
    sl_service_t *service = gateway_core_service (core);
    self->metrics = sl_service_metrics (service);
    self->calls = zlistx_new ();
    if (config->judge_approvals && *config->judge_approvals) {
        self->link = sl_approvals_link_new (sl_service_loop (service), sl_service_bus (service),
                                            config->judge_approvals);
        if (!self->link) {
            gateway_approvals_destroy (&self);
            return NULL;
        }
        sl_approvals_link_set_metrics (self->link, self->metrics);
    }
    gateway_route_t route = { .prefix = S_PREFIX, .serve = s_serve, .on_close = s_on_close, .arg = self };
    gateway_core_route (core, &route);
    gateway_core_on_cancel (core, s_on_cancel, self);
    return self;
}

void
gateway_approvals_destroy (gateway_approvals_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    gateway_approvals_t *self = *self_p;
    //  The HTTP server is gone: every call's client with it.
    for (s_call_t *call = zlistx_first (self->calls); call; call = zlistx_next (self->calls))
        free (call);
    zlistx_destroy (&self->calls);
    sl_approvals_link_destroy (&self->link);
    free (self);
    *self_p = NULL;
}
