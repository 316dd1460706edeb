/*  judge_approvals.c - sluice-judge's approvals (see judge_approvals.h).

    The control socket is a bound ROUTER (sl_inbox) whose clients are the
    gateways and sluice-audit (ZAP domain "approvals"). Each request is one
    `ctl` message; each gets one reply, to the same peer, echoing its sid
    and code. Requests are read with jansson: they are few and small.
*/
#include "services/judge/judge_approvals.h"

#include <czmq.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"
#include "common/bus/sl_inbox.h"
#include "services/judge/sl_approvals.h"

#define S_MAX_BODY (64u << 10)          //  bytes of a request body read
#define S_BATCH 64                      //  requests handled per reactor turn

//  An outcome waiting for the next reactor turn.
typedef struct _s_due_t {
    struct _s_due_t *next;
    uint64_t ticket;
    sl_llm_result_t result;
} s_due_t;

struct _judge_approvals_t {
    sl_service_t *svc;
    zloop_t *loop;
    sl_inbox_t *inbox;
    sl_approvals_t *registry;
    sl_codec_t *codec;
    judge_approvals_publish_fn *publish;
    judge_approvals_outcome_fn *outcome;
    void *arg;
    int sweep;                          //  timer id
    int soon;                           //  timer id of the due outcomes, -1 when none
    s_due_t *due, *due_tail;
    sl_buf_t scratch, reply_body, out;
    sl_counter_t *asked;
    sl_counter_t *requests;
    sl_counter_t *refused;
};

static int64_t
s_now_ms (void)
{
    return zclock_time ();
}

//  --------------------------------------------------------------------------
//  Telling monitoring and the judge library

static void
s_publish (judge_approvals_t *self, const sl_approval_t *approval)
{
    sl_msg_t msg;
    sl_approvals_message (approval, &msg, &self->scratch);
    self->publish (self->arg, &msg);
}

//  An approval ended: monitoring hears of it, and the judge library gets
//  its outcome (a client that left gets its call blocked, so the stream
//  ends at every hop).
static void
s_ended (void *arg, const sl_approval_t *approval)
{
    judge_approvals_t *self = arg;
    s_publish (self, approval);
    char hex [SL_SID_HEX_SIZE];
    snprintf (hex, sizeof hex, "%s", sl_approval_id (approval));
    sl_log_info ("approval", "id=%.12s state=%s", hex, sl_approval_state_name (sl_approval_state (approval)));
    sl_llm_result_t result;
    sl_approvals_outcome (approval, &result);
    self->outcome (self->arg, sl_approval_ticket (approval), &result);
    sl_llm_result_clear (&result);
}

//  Cancelled by the judge library: monitoring hears of it, nothing more.
static void
s_cancelled (void *arg, const sl_approval_t *approval)
{
    s_publish (arg, approval);
}

static int
s_on_soon (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    judge_approvals_t *self = arg;
    self->soon = -1;
    s_due_t *due = self->due;
    self->due = self->due_tail = NULL;
    while (due) {
        s_due_t *next = due->next;
        self->outcome (self->arg, due->ticket, &due->result);
        sl_llm_result_clear (&due->result);
        free (due);
        due = next;
    }
    return 0;
}

//  Report an outcome from the reactor, a turn from now (the caller is the
//  judge library itself).
static void
s_report_soon (judge_approvals_t *self, uint64_t ticket, sl_llm_result_t *result)
{
    s_due_t *due = sl_xcalloc (1, sizeof *due);
    due->ticket = ticket;
    due->result = *result;              //  taken
    memset (result, 0, sizeof *result);
    if (self->due_tail)
        self->due_tail->next = due;
    else
        self->due = due;
    self->due_tail = due;
    if (self->soon < 0)
        self->soon = zloop_timer (self->loop, 1, 1, s_on_soon, self);
}

int
judge_approvals_ask (judge_approvals_t *self, const sl_judge_ask_t *ask)
{
    if (!self || ask->kind != SL_JUDGE_ASK_PERSON || !ask->digest)
        return -1;
    const sl_approval_t *approval = NULL;
    sl_llm_result_t earlier;
    sl_counter_inc (self->asked);
    if (sl_approvals_add (self->registry, ask, s_now_ms (), &approval, &earlier) == 1) {
        s_report_soon (self, ask->ticket, &earlier);
        return 0;
    }
    s_publish (self, approval);
    sl_log_info ("approval", "id=%.12s state=pending rule=%s tool=%.*s", sl_approval_id (approval),
                 ask->rule ? ask->rule : "-", (int) ask->tool.len, ask->tool.ptr ? ask->tool.ptr : "");
    return 0;
}

void
judge_approvals_cancel (judge_approvals_t *self, uint64_t ticket)
{
    if (!self)
        return;
    sl_approvals_cancel_ticket (self->registry, ticket, s_now_ms (), s_cancelled, self);
    //  An outcome already due for it is no longer wanted either.
    for (s_due_t **p = &self->due; *p; ) {
        s_due_t *due = *p;
        if (due->ticket == ticket) {
            *p = due->next;
            if (self->due_tail == due) {
                self->due_tail = NULL;
                for (s_due_t *d = self->due; d; d = d->next)
                    self->due_tail = d;
            }
            sl_llm_result_clear (&due->result);
            free (due);
        }
        else
            p = &due->next;
    }
}

void
judge_approvals_stop (judge_approvals_t *self)
{
    if (!self)
        return;
    size_t failed = sl_approvals_fail_all (self->registry, s_now_ms (), "the judge holding it stopped",
                                           s_ended, self);
    if (failed)
        sl_log_warn ("approvals_failed", "%zu pending approvals failed: this judge stops, and their calls are "
                     "blocked", failed);
}

size_t
judge_approvals_pending (judge_approvals_t *self)
{
    return self ? sl_approvals_pending (self->registry) : 0;
}

static int
s_on_sweep (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    judge_approvals_t *self = arg;
    sl_approvals_expire (self->registry, s_now_ms (), s_ended, self);
    return 0;
}

//  --------------------------------------------------------------------------
//  The control socket

static sl_str_t
s_json_sl (json_t *o, const char *key)
{
    json_t *v = json_object_get (o, key);
    return json_is_string (v) ? sl_str_n (json_string_value (v), json_string_length (v)) : SL_STR_NULL;
}

static const char *
s_json_cstr (json_t *o, const char *key)
{
    json_t *v = json_object_get (o, key);
    return json_is_string (v) ? json_string_value (v) : NULL;
}

//  The "by" of a request: who asks. The label names them in the records.
static void
s_read_by (json_t *body, sl_ask_by_t *by, sl_buf_t *label)
{
    memset (by, 0, sizeof *by);
    json_t *o = json_object_get (body, "by");
    by->key_id = s_json_sl (o, "key_id");
    by->team = s_json_sl (o, "team");
    by->user = s_json_sl (o, "user");
    by->approver = json_is_true (json_object_get (o, "approver"));
    by->console = json_is_true (json_object_get (o, "console"));
    by->loopback = json_is_true (json_object_get (o, "loopback"));
    const char *name = s_json_cstr (o, "name");
    sl_buf_reset (label);
    if (name && *name)
        sl_buf_puts (label, name);
    else
    if (by->user.ptr && by->team.ptr)
        sl_buf_printf (label, "%.*s@%.*s", (int) by->user.len, by->user.ptr, (int) by->team.len, by->team.ptr);
    else
    if (by->user.ptr || by->team.ptr)
        sl_buf_append_str (label, by->user.ptr ? by->user : by->team);
    else
    if (by->key_id.ptr)
        sl_buf_printf (label, "key:%.*s", (int) by->key_id.len, by->key_id.ptr);
    else
        sl_buf_puts (label, by->console ? "console" : by->loopback ? "loopback" : "?");
}

//  decide: 200 with the approval as decided, or why not.
static int
s_decide (judge_approvals_t *self, const sl_msg_t *req, json_t *body, const char **why)
{
    const char *decision = s_json_cstr (body, "decision");
    if (!decision || (strcmp (decision, "approve") != 0 && strcmp (decision, "deny") != 0)) {
        *why = "decision must be \"approve\" or \"deny\"";
        return 400;
    }
    json_t *remember = json_object_get (body, "remember_minutes");
    if (remember && !json_is_null (remember) && !json_is_integer (remember)) {
        *why = "remember_minutes must be an integer";
        return 400;
    }
    sl_buf_t label = { 0 };
    sl_buf_t id = { 0 };
    sl_buf_append_str (&id, req->id);
    sl_approval_decision_t d = {
        .approve = strcmp (decision, "approve") == 0,
        .comment = s_json_cstr (body, "comment"),
        .remember_minutes = json_is_integer (remember) ? (int) json_integer_value (remember) : 0,
        .digest = s_json_cstr (body, "digest"),
        .policy = s_json_cstr (body, "policy")
    };
    s_read_by (body, &d.by, &label);
    d.approver = sl_buf_cstr (&label);
    const sl_approval_t *approval = NULL;
    int status = sl_approvals_decide (self->registry, sl_buf_cstr (&id), &d, s_now_ms (), &approval, why);
    if (status == 200) {
        sl_approvals_json (approval, &self->reply_body);
        sl_log_info ("approval_decided", "id=%.12s decision=%s by=%s%s", sl_approval_id (approval), decision,
                     d.approver, sl_approval_self_approved (approval) ? " self_approved=true" : "");
        s_ended (self, approval);
    }
    else
    if (status != 404)
        sl_log_info ("approval_refused", "id=%.12s status=%d why=%s", sl_buf_cstr (&id), status, *why);
    sl_buf_free (&label);
    sl_buf_free (&id);
    return status;
}

//  grant: a memory given on another judge.
static int
s_grant (judge_approvals_t *self, json_t *body, const char **why)
{
    json_t *expires = json_object_get (body, "expires_at");
    const char *digest = s_json_cstr (body, "digest");
    if (!digest || !json_is_integer (expires)) {
        *why = "a grant needs digest and expires_at";
        return 400;
    }
    sl_approvals_grant (self->registry, digest, s_json_sl (body, "key_id"), s_json_sl (body, "team"),
                        s_json_sl (body, "user"), s_json_cstr (body, "approval"), s_json_cstr (body, "approver"),
                        json_integer_value (expires));
    return 200;
}

//  One request: its reply's status, body (self->reply_body) and why.
static int
s_handle (judge_approvals_t *self, const sl_msg_t *req, const char **why)
{
    sl_buf_reset (&self->reply_body);
    *why = "";
    json_t *body = req->body.len ? json_loadb (req->body.ptr, req->body.len, 0, NULL) : json_object ();
    if (!json_is_object (body) || req->body.len > S_MAX_BODY) {
        json_decref (body);
        *why = "the body must be a JSON object";
        return 400;
    }
    int status = 400;
    if (sl_str_eq (req->code, "list")) {
        sl_ask_by_t by;
        sl_buf_t label = { 0 };
        s_read_by (body, &by, &label);
        sl_approvals_list (self->registry, &by, &self->reply_body);
        sl_buf_free (&label);
        status = 200;
    }
    else
    if (sl_str_eq (req->code, "decide"))
        status = s_decide (self, req, body, why);
    else
    if (sl_str_eq (req->code, "grant"))
        status = s_grant (self, body, why);
    else
    if (sl_str_eq (req->code, "cancel")) {
        const char *stream = s_json_cstr (body, "stream");
        size_t n = sl_approvals_cancel_stream (self->registry, stream, s_now_ms (), s_ended, self);
        if (n)
            sl_log_info ("approvals_cancelled", "stream=%.8s approvals=%zu: the client went away", stream, n);
        status = 200;
    }
    else
        *why = "code must be list, decide, grant or cancel";
    json_decref (body);
    return status;
}

static void
s_reply (judge_approvals_t *self, sl_str_t peer, const sl_msg_t *req, int status, const char *why)
{
    sl_msg_t reply;
    sl_msg_init (&reply, SL_MSG_CTL);
    memcpy (reply.sid, req->sid, SL_SID_SIZE);
    reply.code = req->code;
    reply.status = status;
    if (status != 200)
        reply.message = sl_str (why);
    if (self->reply_body.len)
        reply.body = sl_buf_str (&self->reply_body);
    reply.instance = sl_str (sl_service_name (self->svc));
    sl_buf_reset (&self->out);
    sl_msg_encode (&reply, &self->out);
    if (sl_inbox_send (self->inbox, peer, self->out.data, self->out.len))
        sl_log_warn ("approvals_reply_lost", "a control client left before its reply");
}

static int
s_on_request (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    (void) reader;
    judge_approvals_t *self = arg;
    for (int n = 0; n < S_BATCH; n++) {
        sl_str_t peer, data;
        int rc = sl_inbox_recv (self->inbox, &peer, &data);
        if (rc == 0)
            break;
        if (rc < 0)
            continue;
        //  The peer is borrowed until the next receive: keep a copy.
        sl_buf_t who = { 0 };
        sl_buf_append_str (&who, peer);
        size_t offset = 0;
        sl_msg_t req;
        while ((rc = sl_codec_decode (self->codec, data.ptr, data.len, &offset, &req)) == 0) {
            sl_counter_inc (self->requests);
            if (req.type != SL_MSG_CTL) {
                sl_counter_inc (self->refused);
                continue;
            }
            const char *why = "";
            int status = s_handle (self, &req, &why);
            if (status != 200)
                sl_counter_inc (self->refused);
            s_reply (self, sl_buf_str (&who), &req, status, why);
        }
        if (rc == -2) {
            //  Counted and dropped, never answered: the sender is not
            //  speaking the protocol.
            sl_counter_inc (self->refused);
            sl_log_warn ("malformed_message", "on the approvals socket: %s", sl_codec_error (self->codec));
        }
        sl_buf_free (&who);
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Life cycle

static double
s_pending (void *arg)
{
    return (double) sl_approvals_pending (((judge_approvals_t *) arg)->registry);
}

judge_approvals_t *
judge_approvals_new (sl_service_t *svc, const char *endpoint, judge_approvals_publish_fn *publish,
                     judge_approvals_outcome_fn *outcome, void *arg)
{
    sl_inbox_t *inbox = sl_inbox_new (endpoint, sl_service_bus (svc), "approvals");
    if (!inbox)
        return NULL;
    judge_approvals_t *self = sl_xcalloc (1, sizeof *self);
    self->svc = svc;
    self->loop = sl_service_loop (svc);
    self->inbox = inbox;
    self->registry = sl_approvals_new (sl_service_name (svc), sl_service_incarnation (svc));
    self->codec = sl_codec_new ();
    self->publish = publish;
    self->outcome = outcome;
    self->arg = arg;
    self->soon = -1;
    sl_metrics_t *m = sl_service_metrics (svc);
    self->asked = sl_metrics_counter (m, "sluice_approvals_asked_total", NULL,
                                      "Tool calls a person was asked about (action ask)");
    self->requests = sl_metrics_counter (m, "sluice_approvals_requests_total", NULL,
                                         "Requests on the approvals control socket");
    self->refused = sl_metrics_counter (m, "sluice_approvals_control_refused_total", NULL,
                                        "Control requests answered with an error (not held here included)");
    sl_metrics_gauge_fn (m, "sluice_approvals_pending", NULL, "Tool calls waiting for a person", s_pending, self);
    zloop_reader (self->loop, sl_inbox_sock (inbox), s_on_request, self);
    self->sweep = zloop_timer (self->loop, JUDGE_APPROVALS_SWEEP_MS, 0, s_on_sweep, self);
    sl_log_info ("approvals_bound", "endpoint=%s", sl_inbox_endpoint (inbox));
    return self;
}

void
judge_approvals_destroy (judge_approvals_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    judge_approvals_t *self = *self_p;
    zloop_reader_end (self->loop, sl_inbox_sock (self->inbox));
    zloop_timer_end (self->loop, self->sweep);
    if (self->soon >= 0)
        zloop_timer_end (self->loop, self->soon);
    while (self->due) {
        s_due_t *next = self->due->next;
        sl_llm_result_clear (&self->due->result);
        free (self->due);
        self->due = next;
    }
    sl_inbox_destroy (&self->inbox);
    sl_approvals_destroy (&self->registry);
    sl_codec_destroy (&self->codec);
    sl_buf_free (&self->scratch);
    sl_buf_free (&self->reply_body);
    sl_buf_free (&self->out);
    free (self);
    *self_p = NULL;
}
