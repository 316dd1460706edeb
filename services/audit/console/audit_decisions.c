/*  audit_decisions.c - the console's decisions to the judges (see audit_decisions.h). */
#include "services/audit/console/audit_decisions.h"

#include <stdlib.h>
#include <string.h>

#include "common/approval/sl_approvals_link.h"
#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"

//  A console request waiting for the judges.
typedef struct {
    audit_decisions_t *owner;
    sl_http_req_t *req;
    uint64_t handle;
} s_call_t;

struct _audit_decisions_t {
    sl_approvals_link_t *link;          //  NULL without judges
    sl_httpd_t *httpd;
    zlistx_t *calls;                    //  s_call_t
    bool in_call;                       //  inside a link call: no MHD run
};

static void
s_respond (audit_decisions_t *self, sl_http_req_t *req, int status, const char *body, const char *message)
{
    sl_buf_t out = { 0 };
    if (status == 200 && body)
        sl_buf_puts (&out, body);
    else {
        sl_buf_puts (&out, "{\"error\":");
        sl_json_put_str (&out, message ? message : "no answer", strlen (message ? message : "no answer"));
        sl_buf_putc (&out, '}');
    }
    sl_http_add_header (req, "Cache-Control", "no-store");
    sl_http_respond (req, status, "application/json", out.data, out.len);
    sl_buf_free (&out);
    if (!self->in_call && self->httpd)
        sl_httpd_run (self->httpd);
}

static void
s_decided (void *arg, const sl_approvals_outcome_t *outcome)
{
    s_call_t *call = arg;
    audit_decisions_t *self = call->owner;
    void *handle = zlistx_find (self->calls, call);
    if (handle)
        zlistx_delete (self->calls, handle);
    if (call->req)
        s_respond (self, call->req, outcome->status, outcome->body, outcome->message);
    free (call);
}

void
audit_decisions_decide (audit_decisions_t *self, sl_http_req_t *req, const char *id,
                        const sl_approvals_decision_t *decision, const sl_console_caller_t *caller)
{
    if (!self->link) {
        s_respond (self, req, 503, NULL, "approvals are not configured (--judge-approvals)");
        return;
    }
    s_call_t *call = sl_xcalloc (1, sizeof *call);
    call->owner = self;
    call->req = req;
    zlistx_add_end (self->calls, call);
    char name [3 * SL_CONSOLE_TEXT_MAX + 8];
    sl_console_role_label (caller, name, sizeof name);
    //  The person is the user (a rule may name them; no one approves
    //  their own call), and the records name them whole. This machine
    //  without keys is no one in particular: "console", as always.
    sl_approvals_by_t by = { .console = true };
    if (*caller->sub) {
        by.name = name;
        by.user = *caller->email ? caller->email : caller->sub;
    }
    self->in_call = true;
    uint64_t handle = sl_approvals_link_decide (self->link, id, &by, decision, s_decided, call);
    self->in_call = false;
    if (handle)
        call->handle = handle;
}

bool
audit_decisions_closed (audit_decisions_t *self, sl_http_req_t *req)
{
    if (!self)
        return false;
    for (s_call_t *call = zlistx_first (self->calls); call; call = zlistx_next (self->calls))
        if (call->req == req) {
            sl_approvals_link_forget (self->link, call->handle);
            zlistx_delete (self->calls, zlistx_cursor (self->calls));
            free (call);
            return true;
        }
    return false;
}

audit_decisions_t *
audit_decisions_new (sl_service_t *svc, const char *judges)
{
    audit_decisions_t *self = sl_xcalloc (1, sizeof *self);
    self->calls = zlistx_new ();
    if (judges && *judges) {
        self->link = sl_approvals_link_new (sl_service_loop (svc), sl_service_bus (svc), judges);
        if (!self->link) {
            audit_decisions_destroy (&self);
            return NULL;
        }
        sl_approvals_link_set_metrics (self->link, sl_service_metrics (svc));
    }
    return self;
}

void
audit_decisions_set_httpd (audit_decisions_t *self, sl_httpd_t *httpd)
{
    self->httpd = httpd;
}

void
audit_decisions_destroy (audit_decisions_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    audit_decisions_t *self = *self_p;
    for (s_call_t *call = zlistx_first (self->calls); call; call = zlistx_next (self->calls))
        free (call);
    zlistx_destroy (&self->calls);
    sl_approvals_link_destroy (&self->link);
    free (self);
    *self_p = NULL;
}
