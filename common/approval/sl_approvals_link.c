/*  sl_approvals_link.c - the client side of the approvals control link
    (see sl_approvals_link.h). */
#include "common/approval/sl_approvals_link.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_log.h"
#include "common/bus/sl_resolve.h"
#include "proto/sl_msg.h"

#define S_SNDHWM 1000                   //  requests queued for one judge before sends fail
#define S_ZMQ_HB_IVL_MS 1000            //  ZeroMQ's own heartbeats notice a dead TCP peer
#define S_ZMQ_HB_TIMEOUT_MS 3000
#define S_DRAIN 64                      //  ZeroMQ messages taken per wake-up
#define S_MS_PER_MINUTE 60000
#define S_REQUESTS_HELP "Requests to the judges' approvals control link, by operation and outcome"

typedef enum { S_LIST, S_DECIDE } s_op_t;

static const char *s_op_names [] = { "list", "decide" };

//  One judge instance: an address an endpoint resolved to.
typedef struct {
    sl_approvals_link_t *link;
    uint64_t serial;                    //  names it in requests (addresses come and go)
    char endpoint [SL_RESOLVE_ENDPOINT_MAX];
    zsock_t *dealer;
} s_judge_t;

//  A request waiting for its judges.
typedef struct {
    sl_approvals_link_t *link;
    uint64_t handle;
    uint8_t sid [SL_SID_SIZE];
    char key [SL_SID_HEX_SIZE];         //  sid in hex: the key of the pending table
    s_op_t op;
    uint64_t waiting [SL_APPROVALS_LINK_MAX_JUDGES];   //  serials of judges asked that did not answer
    size_t waiting_count;
    size_t asked, answered;
    json_t *approvals;                  //  list: the union so far
    char id [SL_SID_HEX_SIZE];          //  decide: the approval
    int timer;                          //  its deadline
    sl_approvals_done_fn *done;
    void *arg;
} s_request_t;

struct _sl_approvals_link_t {
    zloop_t *loop;
    sl_bus_t *bus;
    char *endpoints;
    s_judge_t *judges [SL_APPROVALS_LINK_MAX_JUDGES];
    size_t judge_count;
    uint64_t next_serial;
    uint64_t next_handle;
    zhashx_t *pending;                  //  sid hex -> s_request_t
    int64_t deadline_ms;
    int resolve_timer;
    sl_codec_t *codec;
    sl_buf_t out;                       //  scratch: an encoded message
    sl_metrics_t *metrics;
    sl_counter_t *unanswered;
    sl_counter_t *malformed;
};

static void s_finish (sl_approvals_link_t *self, s_request_t *r, int status, const char *message, const char *body);

//  --------------------------------------------------------------------------
//  Sending

//  Encode a ctl request and hand it to one judge; false when it could not
//  be queued (the judge's queue is full: it is not listening).
static bool
s_send (sl_approvals_link_t *self, s_judge_t *judge, const uint8_t *sid, const char *code, const char *id,
        const char *body)
{
    sl_msg_t msg;
    sl_msg_init (&msg, SL_MSG_CTL);
    memcpy (msg.sid, sid, SL_SID_SIZE);
    msg.code = sl_str (code);
    if (id)
        msg.id = sl_str (id);
    msg.body = sl_str (body);
    sl_buf_reset (&self->out);
    sl_msg_encode (&msg, &self->out);
    return zmq_send (zsock_resolve (judge->dealer), self->out.data, self->out.len, ZMQ_DONTWAIT) >= 0;
}

static json_t *
s_by_json (const sl_approvals_by_t *by)
{
    json_t *o = json_object ();
    if (by->key_id && *by->key_id)
        json_object_set_new (o, "key_id", json_string (by->key_id));
    if (by->team && *by->team)
        json_object_set_new (o, "team", json_string (by->team));
    if (by->user && *by->user)
        json_object_set_new (o, "user", json_string (by->user));
    json_object_set_new (o, "approver", json_boolean (by->approver));
    json_object_set_new (o, "console", json_boolean (by->console));
    json_object_set_new (o, "loopback", json_boolean (by->loopback));
    if (by->name && *by->name)
        json_object_set_new (o, "name", json_string (by->name));
    return o;
}

static void
s_count (sl_approvals_link_t *self, s_op_t op, int status)
{
    if (!self->metrics)
        return;
    char labels [64];
    snprintf (labels, sizeof labels, "op=\"%s\",status=\"%d\"", s_op_names [op], status);
    sl_counter_inc (sl_metrics_counter (self->metrics, "sluice_approvals_link_requests_total", labels,
                                        S_REQUESTS_HELP));
}

//  The deadline passed: what the judges said so far is the outcome.
static int
s_on_deadline (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_request_t *r = arg;
    r->timer = -1;                      //  a timer of one shot is gone once it fired
    if (r->link->unanswered)
        sl_counter_add (r->link->unanswered, r->waiting_count);
    s_finish (r->link, r, 0, NULL, NULL);
    return 0;
}

//  A request to every judge: the request waits for their answers, or done
//  is called now (503) when none could be asked.
static uint64_t
s_ask (sl_approvals_link_t *self, s_op_t op, const char *id, json_t *body, sl_approvals_done_fn *done, void *arg)
{
    char *text = json_dumps (body, JSON_COMPACT);
    json_decref (body);
    s_request_t *r = sl_xcalloc (1, sizeof *r);
    r->link = self;
    r->handle = ++self->next_handle;
    r->op = op;
    r->done = done;
    r->arg = arg;
    r->timer = -1;
    if (id)
        snprintf (r->id, sizeof r->id, "%s", id);
    sl_sid_new (r->sid);
    sl_sid_hex (r->sid, r->key);
    if (op == S_LIST)
        r->approvals = json_array ();
    bool full = zhashx_size (self->pending) >= SL_APPROVALS_LINK_MAX_PENDING;
    for (size_t i = 0; !full && i < self->judge_count; i++) {
        r->asked++;
        if (s_send (self, self->judges [i], r->sid, s_op_names [op], id, text))
            r->waiting [r->waiting_count++] = self->judges [i]->serial;
    }
    free (text);
    zhashx_insert (self->pending, r->key, r);
    if (r->waiting_count == 0) {
        s_finish (self, r, 503, full ? "too many approval requests are waiting for the judges"
                                     : "no judge could be asked", NULL);
        return 0;
    }
    r->timer = zloop_timer (self->loop, (size_t) self->deadline_ms, 1, s_on_deadline, r);
    return r->handle;
}

//  --------------------------------------------------------------------------
//  Outcomes

//  What a decision gave: a memory (remember_minutes) is sent to every judge
//  but the one that holds it, so an identical call passes there too.
static void
s_grant (sl_approvals_link_t *self, const char *approval_text, uint64_t holder)
{
    json_t *a = json_loads (approval_text, 0, NULL);
    if (!a)
        return;
    json_int_t minutes = json_integer_value (json_object_get (a, "remember_minutes"));
    const char *state = json_string_value (json_object_get (a, "state"));
    if (minutes <= 0 || !state || strcmp (state, "approved") != 0) {
        json_decref (a);
        return;
    }
    //  Until when the judge remembers it: its remember_until, else the
    //  memory counted from the decision.
    json_t *until = json_object_get (a, "remember_until");
    json_t *decided = json_object_get (a, "decided_at");
    int64_t since = json_is_integer (decided) ? (int64_t) json_integer_value (decided) : zclock_time ();
    int64_t expires = json_is_integer (until) ? (int64_t) json_integer_value (until)
                                              : since + (int64_t) minutes * S_MS_PER_MINUTE;
    json_t *identity = json_object_get (a, "identity");
    json_t *grant = json_object ();
    const char *copied [][2] = {
        { "digest", "digest" }, { "approval", "id" }, { "approver", "approver" },
    };
    for (size_t i = 0; i < sizeof copied / sizeof copied [0]; i++) {
        json_t *v = json_object_get (a, copied [i][1]);
        if (json_is_string (v))
            json_object_set (grant, copied [i][0], v);
    }
    const char *who [] = { "key_id", "team", "user" };
    for (size_t i = 0; i < sizeof who / sizeof who [0]; i++) {
        json_t *v = json_object_get (identity, who [i]);
        if (json_is_string (v))
            json_object_set (grant, who [i], v);
    }
    json_object_set_new (grant, "expires_at", json_integer (expires));
    char *text = json_dumps (grant, JSON_COMPACT);
    uint8_t sid [SL_SID_SIZE];
    sl_sid_new (sid);
    size_t sent = 0;
    for (size_t i = 0; i < self->judge_count; i++)
        if (self->judges [i]->serial != holder)
            sent += s_send (self, self->judges [i], sid, "grant", NULL, text);
    sl_log_info ("approval_granted", "approval=%s minutes=%lld judges=%zu",
                 json_string_value (json_object_get (a, "id")), (long long) minutes, sent);
    free (text);
    json_decref (grant);
    json_decref (a);
}

//  The request is over: status 0 means "as the answers so far say" (every
//  judge answered, or the deadline passed).
static void
s_finish (sl_approvals_link_t *self, s_request_t *r, int status, const char *message, const char *body)
{
    char why [160];
    char *owned = NULL;
    if (status == 0) {
        if (r->answered == 0) {
            status = 503;
            message = "no judge answered";
        }
        else
        if (r->op == S_LIST) {
            json_t *o = json_pack ("{s:O, s:{s:I, s:I}}", "approvals", r->approvals, "judges",
                                   "asked", (json_int_t) r->asked, "answered", (json_int_t) r->answered);
            body = owned = json_dumps (o, JSON_COMPACT);
            json_decref (o);
            status = 200;
        }
        else {
            status = 404;
            if (r->answered < r->asked)
                snprintf (why, sizeof why, "no judge that answered holds approval %s (%zu of %zu did not answer)",
                          r->id, r->asked - r->answered, r->asked);
            else
                snprintf (why, sizeof why, "no judge holds approval %s", r->id);
            message = why;
        }
    }
    if (r->timer >= 0)
        zloop_timer_end (self->loop, r->timer);
    zhashx_delete (self->pending, r->key);
    s_count (self, r->op, status);
    sl_approvals_outcome_t outcome = {
        .status = status, .message = status == 200 ? NULL : message, .body = body,
        .asked = r->asked, .answered = r->answered,
    };
    sl_approvals_done_fn *done = r->done;
    void *arg = r->arg;
    json_decref (r->approvals);
    free (r);
    if (done)
        done (arg, &outcome);
    free (owned);
}

//  One reply from a judge.
static void
s_on_reply (sl_approvals_link_t *self, s_judge_t *judge, const sl_msg_t *msg)
{
    char key [SL_SID_HEX_SIZE];
    sl_sid_hex (msg->sid, key);
    s_request_t *r = zhashx_lookup (self->pending, key);
    if (!r)
        return;                         //  late (past its deadline), or a grant's answer
    size_t at = r->waiting_count;
    for (size_t i = 0; i < r->waiting_count; i++)
        if (r->waiting [i] == judge->serial)
            at = i;
    if (at == r->waiting_count)
        return;                         //  this judge answered already
    r->waiting [at] = r->waiting [--r->waiting_count];
    r->answered++;
    char *body = msg->body.ptr ? strndup (msg->body.ptr, msg->body.len) : NULL;
    char *message = msg->message.ptr ? strndup (msg->message.ptr, msg->message.len) : NULL;
    if (r->op == S_LIST) {
        json_t *o = msg->status == 200 && body ? json_loads (body, 0, NULL) : NULL;
        json_t *list = json_object_get (o, "approvals");
        if (json_is_array (list))
            json_array_extend (r->approvals, list);
        else
            sl_log_warn ("approvals_list_failed", "judge=%s status=%d %s", judge->endpoint, msg->status,
                         message ? message : "no list of approvals in the answer");
        json_decref (o);
    }
    else
    if (msg->status != 404) {
        //  The judge that holds it: its answer is the outcome.
        int status = msg->status >= 200 && msg->status <= 599 ? msg->status : 502;
        if (status == 200 && body)
            s_grant (self, body, judge->serial);
        s_finish (self, r, status, message ? message : "the judge gave no reason", body);
        r = NULL;
    }
    if (r && r->waiting_count == 0)
        s_finish (self, r, 0, NULL, NULL);
    free (body);
    free (message);
}

static int
s_on_readable (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    (void) reader;
    s_judge_t *judge = arg;
    sl_approvals_link_t *self = judge->link;
    void *sock = zsock_resolve (judge->dealer);
    for (int i = 0; i < S_DRAIN; i++) {
        zmq_msg_t frame;
        zmq_msg_init (&frame);
        if (zmq_msg_recv (&frame, sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close (&frame);
            break;
        }
        size_t offset = 0;
        sl_msg_t msg;
        int rc;
        while ((rc = sl_codec_decode (self->codec, zmq_msg_data (&frame), zmq_msg_size (&frame), &offset, &msg)) == 0)
            if (msg.type == SL_MSG_CTL)
                s_on_reply (self, judge, &msg);
        if (rc == -2) {
            if (self->malformed)
                sl_counter_inc (self->malformed);
            sl_log_warn ("malformed_message", "from the judge at %s: %s", judge->endpoint,
                         sl_codec_error (self->codec));
        }
        zmq_msg_close (&frame);
    }
    return 0;
}

//  --------------------------------------------------------------------------
//  Judges: connections by resolution

static void
s_connect (sl_approvals_link_t *self, const char *endpoint)
{
    if (self->judge_count == SL_APPROVALS_LINK_MAX_JUDGES)
        return;
    zsock_t *dealer = zsock_new (ZMQ_DEALER);
    if (!dealer)
        return;
    zsock_set_sndhwm (dealer, S_SNDHWM);
    zsock_set_maxmsgsize (dealer, SL_MSG_MAX_SIZE);
    zsock_set_heartbeat_ivl (dealer, S_ZMQ_HB_IVL_MS);
    zsock_set_heartbeat_timeout (dealer, S_ZMQ_HB_TIMEOUT_MS);
    zsock_set_linger (dealer, 0);
    if ((self->bus && sl_bus_client (self->bus, dealer, "judge")) || zsock_connect (dealer, "%s", endpoint)) {
        sl_log_error ("connect_failed", "cannot connect to the judge's approvals socket at %s", endpoint);
        zsock_destroy (&dealer);
        return;
    }
    s_judge_t *judge = sl_xcalloc (1, sizeof *judge);
    judge->link = self;
    judge->serial = ++self->next_serial;
    snprintf (judge->endpoint, sizeof judge->endpoint, "%s", endpoint);
    judge->dealer = dealer;
    zloop_reader (self->loop, dealer, s_on_readable, judge);
    self->judges [self->judge_count++] = judge;
    sl_log_info ("approvals_judge_added", "endpoint=%s", endpoint);
}

//  A judge gone from the list: requests stop waiting for it.
static void
s_disconnect (sl_approvals_link_t *self, size_t index)
{
    s_judge_t *judge = self->judges [index];
    self->judges [index] = self->judges [--self->judge_count];
    zloop_reader_end (self->loop, judge->dealer);
    zsock_destroy (&judge->dealer);
    sl_log_info ("approvals_judge_removed", "endpoint=%s", judge->endpoint);
    zlistx_t *over = zlistx_new ();
    for (s_request_t *r = zhashx_first (self->pending); r; r = zhashx_next (self->pending))
        for (size_t i = 0; i < r->waiting_count; i++)
            if (r->waiting [i] == judge->serial) {
                r->waiting [i] = r->waiting [--r->waiting_count];
                if (r->waiting_count == 0)
                    zlistx_add_end (over, r);
                break;
            }
    for (s_request_t *r = zlistx_first (over); r; r = zlistx_next (over))
        s_finish (self, r, 0, NULL, NULL);
    zlistx_destroy (&over);
    free (judge);
}

static size_t
s_judge_count (void *arg)
{
    return ((sl_approvals_link_t *) arg)->judge_count;
}

static const char *
s_judge_endpoint (void *arg, size_t index)
{
    return ((sl_approvals_link_t *) arg)->judges [index]->endpoint;
}

static void
s_judge_add (void *arg, const char *endpoint)
{
    s_connect (arg, endpoint);
}

static void
s_judge_remove (void *arg, size_t index)
{
    s_disconnect (arg, index);
}

static const sl_resolve_set_t s_judge_set = { s_judge_count, s_judge_endpoint, s_judge_add, s_judge_remove };

static void
s_resolve (sl_approvals_link_t *self)
{
    sl_resolve_sync (self->endpoints, SL_APPROVALS_LINK_MAX_JUDGES, &s_judge_set, self);
}

static int
s_on_resolve (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_resolve (arg);
    return 0;
}

//  --------------------------------------------------------------------------
//  The API

sl_approvals_link_t *
sl_approvals_link_new (zloop_t *loop, sl_bus_t *bus, const char *endpoints)
{
    assert (loop);
    char (*probe) [SL_RESOLVE_ENDPOINT_MAX] = sl_xcalloc (1, SL_RESOLVE_ENDPOINT_MAX);
    const char *why = NULL;
    int n = endpoints && *endpoints ? sl_resolve_list (endpoints, probe, 1, &why) : -1;
    free (probe);
    if (n < 0) {
        sl_log_error ("bad_option", "the judges' approvals endpoints '%s': %s", endpoints ? endpoints : "",
                      why ? why : "none given");
        return NULL;
    }
    sl_approvals_link_t *self = sl_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->bus = bus;
    self->endpoints = sl_xstrdup (endpoints);
    self->pending = zhashx_new ();
    self->deadline_ms = SL_APPROVALS_LINK_DEADLINE_MS;
    self->codec = sl_codec_new ();
    s_resolve (self);
    self->resolve_timer = zloop_timer (loop, SL_RESOLVE_MS, 0, s_on_resolve, self);
    sl_log_info ("approvals_link", "judges=%s connected=%zu", endpoints, self->judge_count);
    return self;
}

void
sl_approvals_link_destroy (sl_approvals_link_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_approvals_link_t *self = *self_p;
    for (s_request_t *r = zhashx_first (self->pending); r; r = zhashx_next (self->pending)) {
        if (r->timer >= 0)
            zloop_timer_end (self->loop, r->timer);
        json_decref (r->approvals);
        free (r);
    }
    zhashx_destroy (&self->pending);
    while (self->judge_count) {
        s_judge_t *judge = self->judges [--self->judge_count];
        zloop_reader_end (self->loop, judge->dealer);
        zsock_destroy (&judge->dealer);
        free (judge);
    }
    zloop_timer_end (self->loop, self->resolve_timer);
    sl_codec_destroy (&self->codec);
    sl_buf_free (&self->out);
    free (self->endpoints);
    free (self);
    *self_p = NULL;
}

void
sl_approvals_link_set_metrics (sl_approvals_link_t *self, sl_metrics_t *m)
{
    self->metrics = m;
    self->unanswered = sl_metrics_counter (m, "sluice_approvals_link_unanswered_total", NULL,
                                           "Requests a judge did not answer before the deadline");
    self->malformed = sl_metrics_counter (m, "sluice_malformed_messages_total", NULL,
                                          "Malformed messages received and dropped");
    //  The series of answered requests are there from the start.
    for (int op = S_LIST; op <= S_DECIDE; op++) {
        char labels [64];
        snprintf (labels, sizeof labels, "op=\"%s\",status=\"200\"", s_op_names [op]);
        sl_metrics_counter (m, "sluice_approvals_link_requests_total", labels, S_REQUESTS_HELP);
    }
}

void
sl_approvals_link_set_deadline (sl_approvals_link_t *self, int64_t ms)
{
    self->deadline_ms = ms > 0 ? ms : SL_APPROVALS_LINK_DEADLINE_MS;
}

size_t
sl_approvals_link_judges (sl_approvals_link_t *self)
{
    return self->judge_count;
}

uint64_t
sl_approvals_link_list (sl_approvals_link_t *self, const sl_approvals_by_t *by,
                        sl_approvals_done_fn *done, void *arg)
{
    json_t *body = json_object ();
    json_object_set_new (body, "by", s_by_json (by));
    return s_ask (self, S_LIST, NULL, body, done, arg);
}

uint64_t
sl_approvals_link_decide (sl_approvals_link_t *self, const char *id, const sl_approvals_by_t *by,
                          const sl_approvals_decision_t *decision, sl_approvals_done_fn *done, void *arg)
{
    json_t *body = json_object ();
    json_object_set_new (body, "by", s_by_json (by));
    json_object_set_new (body, "decision", json_string (decision->approve ? "approve" : "deny"));
    if (decision->comment)
        json_object_set_new (body, "comment", json_string (decision->comment));
    if (decision->remember_minutes > 0)
        json_object_set_new (body, "remember_minutes", json_integer (decision->remember_minutes));
    if (decision->digest)
        json_object_set_new (body, "digest", json_string (decision->digest));
    if (decision->policy)
        json_object_set_new (body, "policy", json_string (decision->policy));
    return s_ask (self, S_DECIDE, id, body, done, arg);
}

void
sl_approvals_link_cancel (sl_approvals_link_t *self, const char *stream)
{
    json_t *body = json_pack ("{s:s}", "stream", stream);
    char *text = json_dumps (body, JSON_COMPACT);
    uint8_t sid [SL_SID_SIZE];
    sl_sid_new (sid);
    for (size_t i = 0; i < self->judge_count; i++)
        s_send (self, self->judges [i], sid, "cancel", NULL, text);
    free (text);
    json_decref (body);
}

void
sl_approvals_link_forget (sl_approvals_link_t *self, uint64_t handle)
{
    if (!handle)
        return;
    for (s_request_t *r = zhashx_first (self->pending); r; r = zhashx_next (self->pending))
        if (r->handle == handle) {
            r->done = NULL;             //  its judges' answers are still taken, and dropped
            return;
        }
}
