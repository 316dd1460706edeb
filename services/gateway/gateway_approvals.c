/*  gateway_approvals.c - the gateway's approvals API: GET /v1/approvals
    and POST /v1/approvals/{id}, answered by the judges over the control
    link (common/approval/sl_approvals_link.h), and the cancel a judge
    gets when the client of a stream it holds a call of goes away.

    Who may ask: with keys (a keys file, SLUICE_CLIENT_KEYS) a caller with
    a key, the gateway's usual credential (401 otherwise); the judge that
    holds an approval says whether that caller may decide it (403), from
    the rule's approvers and the key's approver mark. Without keys only a
    caller on this machine, like the console's rule. Every refusal is
    counted, by status: sluice_approvals_refused_total{status}.
*/
#include <stdlib.h>
#include <string.h>

#include "common/approval/sl_approvals_api.h"
#include "services/gateway/gateway_impl.h"

#define S_PREFIX "/v1/approvals"

//  An HTTP request waiting for the judges.
typedef struct {
    gateway_t *gateway;
    sl_http_req_t *req;                 //  NULL once the client left
    uint64_t handle;                    //  the link's, for forget
} s_call_t;

static void
s_refused (gateway_t *self, int status)
{
    char labels [32];
    snprintf (labels, sizeof labels, "status=\"%d\"", status);
    sl_counter_inc (sl_metrics_counter (self->metrics, "sluice_approvals_refused_total", labels,
                                        "Requests to /v1/approvals refused, by HTTP status"));
}

static void
s_error (gateway_t *self, sl_http_req_t *req, int status, const char *message)
{
    s_refused (self, status);
    gateway_respond_error (req, GATEWAY_DEFAULT_DIALECT, status, sl_approvals_error_type (status), message);
}

//  The judges answered (or the deadline passed).
static void
s_done (void *arg, const sl_approvals_outcome_t *outcome)
{
    s_call_t *call = arg;
    gateway_t *self = call->gateway;
    void *handle = zlistx_find (self->approval_calls, call);
    if (handle)
        zlistx_delete (self->approval_calls, handle);
    if (call->req) {
        if (outcome->status == 200 && outcome->body)
            sl_http_respond (call->req, 200, "application/json", outcome->body, strlen (outcome->body));
        else
            s_error (self, call->req, outcome->status, outcome->message ? outcome->message : "no answer");
        if (!self->approvals_in_call)
            sl_httpd_run (self->httpd);
    }
    free (call);
}

//  Who the caller is, as the judges read it; false when refused (answered).
static bool
s_who (gateway_t *self, sl_http_req_t *req, sl_approvals_by_t *by, sl_caller_t **caller_p)
{
    memset (by, 0, sizeof *by);
    if (!sl_admission_checks (self->admission)) {
        if (!sl_http_req_loopback (req)) {
            s_error (self, req, 401, "approvals are decided from this machine only when no keys are configured");
            return false;
        }
        by->loopback = true;
        return true;
    }
    sl_caller_t *caller = gateway_identify (self, req, GATEWAY_DEFAULT_DIALECT);
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

bool
gateway_approvals_serve (gateway_t *self, sl_http_req_t *req, const char *method, const char *path)
{
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
    if (!self->approvals) {
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
            snprintf (why, sizeof why, "the body is over the limit of %zu bytes", self->config.max_body);
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
        call->gateway = self;
        call->req = req;
        zlistx_add_end (self->approval_calls, call);
        //  The answer may come before the call returns: no MHD run then,
        //  we are inside its request handler.
        self->approvals_in_call = true;
        uint64_t handle = kind == SL_APPROVALS_PATH_LIST
                        ? sl_approvals_link_list (self->approvals, &by, s_done, call)
                        : sl_approvals_link_decide (self->approvals, id, &by, &parsed.decision, s_done, call);
        self->approvals_in_call = false;
        if (handle)
            call->handle = handle;      //  still waiting: the call lives
    }
    sl_approvals_parsed_clear (&parsed);
    //  The caller was only needed to know who asks.
    if (caller)
        sl_admission_finish (self->admission, &caller, NULL, NULL, false);
    return true;
}

bool
gateway_approvals_closed (gateway_t *self, sl_http_req_t *req)
{
    if (!self->approval_calls)
        return false;
    for (s_call_t *call = zlistx_first (self->approval_calls); call; call = zlistx_next (self->approval_calls))
        if (call->req == req) {
            call->req = NULL;
            sl_approvals_link_forget (self->approvals, call->handle);
            zlistx_delete (self->approval_calls, zlistx_cursor (self->approval_calls));
            free (call);
            return true;
        }
    return false;
}

void
gateway_approvals_cancel (gateway_t *self, const uint8_t *sid)
{
    if (!self->approvals)
        return;
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (sid, hex);
    sl_approvals_link_cancel (self->approvals, hex);
}

int
gateway_approvals_start (gateway_t *self)
{
    self->approval_calls = zlistx_new ();
    if (!self->config.judge_approvals || !*self->config.judge_approvals)
        return 0;
    self->approvals = sl_approvals_link_new (sl_service_loop (self->service), sl_service_bus (self->service),
                                             self->config.judge_approvals);
    if (!self->approvals)
        return -1;
    sl_approvals_link_set_metrics (self->approvals, self->metrics);
    return 0;
}

void
gateway_approvals_stop (gateway_t *self)
{
    //  The HTTP server is gone: every call's client with it.
    if (self->approval_calls)
        for (s_call_t *call = zlistx_first (self->approval_calls); call; call = zlistx_next (self->approval_calls))
            free (call);
    zlistx_destroy (&self->approval_calls);
    sl_approvals_link_destroy (&self->approvals);
}
