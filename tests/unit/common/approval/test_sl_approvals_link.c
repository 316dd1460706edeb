/*  Unit tests: common/approval/sl_approvals_link, against real ROUTER
    sockets on loopback that answer ctl requests as judges do: every
    request reaches every judge, a list is their union, a decision is the
    holder's answer and its memory is granted to the others, a judge that
    does not answer costs the deadline and no more, a request whose asker
    left calls nobody back. */
#include <criterion/criterion.h>
#include <czmq.h>
#include <jansson.h>

#include "common/approval/sl_approvals_link.h"
#include "proto/sl_msg.h"

#define S_DEADLINE_MS 300               //  short, so a silent judge costs the tests little
#define S_STEP_MS 10
#define S_STEPS_MAX 500                 //  5 s at most for any one exchange

typedef struct {
    zsock_t *sock;
    char endpoint [64];
    const char *name;                   //  its instance name ("inst")
    bool silent;                        //  takes requests, answers none
    int list_status;                    //  what it answers a list
    const char *list_body;
    int decide_status;                  //  what it answers a decide
    const char *decide_body;
    //  What it received, the last of each
    int requests;
    char code [16];
    char id [40];
    char body [1024];
    int grants;
    char grant [1024];
    int cancels;
    char cancel [256];
} s_judge_t;

static sl_codec_t *codec;

static void
s_copy (char *out, size_t size, sl_str_t s)
{
    snprintf (out, size, "%.*s", (int) s.len, s.ptr ? s.ptr : "");
}

static int
s_on_judge (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    (void) reader;
    s_judge_t *j = arg;
    zmsg_t *msg = zmsg_recv (j->sock);
    zframe_t *peer = zmsg_pop (msg);
    zframe_t *data = zmsg_pop (msg);
    size_t offset = 0;
    sl_msg_t m;
    while (data && sl_codec_decode (codec, zframe_data (data), zframe_size (data), &offset, &m) == 0) {
        cr_assert_eq (m.type, SL_MSG_CTL);
        char code [16];
        s_copy (code, sizeof code, m.code);
        if (strcmp (code, "grant") == 0) {
            j->grants++;
            s_copy (j->grant, sizeof j->grant, m.body);
            continue;
        }
        if (strcmp (code, "cancel") == 0) {
            j->cancels++;
            s_copy (j->cancel, sizeof j->cancel, m.body);
            continue;
        }
        j->requests++;
        snprintf (j->code, sizeof j->code, "%s", code);
        s_copy (j->id, sizeof j->id, m.id);
        s_copy (j->body, sizeof j->body, m.body);
        if (j->silent)
            continue;
        bool list = strcmp (code, "list") == 0;
        sl_msg_t reply;
        sl_msg_init (&reply, SL_MSG_CTL);
        memcpy (reply.sid, m.sid, SL_SID_SIZE);
        reply.code = m.code;
        reply.status = list ? j->list_status : j->decide_status;
        const char *body = list ? j->list_body : j->decide_body;
        if (body)
            reply.body = sl_str (body);
        if (reply.status != 200)
            reply.message = sl_str ("not held here");
        reply.instance = sl_str (j->name);
        sl_buf_t buf = { 0 };
        sl_msg_encode (&reply, &buf);
        zmsg_t *out = zmsg_new ();
        zmsg_append (out, &(zframe_t *) { zframe_dup (peer) });
        zmsg_addmem (out, buf.data, buf.len);
        zmsg_send (&out, j->sock);
        sl_buf_free (&buf);
    }
    zframe_destroy (&peer);
    zframe_destroy (&data);
    zmsg_destroy (&msg);
    return 0;
}

static void
s_judge_init (s_judge_t *j, const char *name)
{
    memset (j, 0, sizeof *j);
    j->sock = zsock_new (ZMQ_ROUTER);
    int port = zsock_bind (j->sock, "tcp://127.0.0.1:*");
    cr_assert_gt (port, 0);
    snprintf (j->endpoint, sizeof j->endpoint, "tcp://127.0.0.1:%d", port);
    j->name = name;
    j->list_status = 200;
    j->list_body = "{\"approvals\":[]}";
    j->decide_status = 404;
}

//  What came back for one request.
typedef struct {
    int calls;
    int status;
    char message [256];
    char body [4096];
    size_t asked, answered;
} s_outcome_t;

static void
s_done (void *arg, const sl_approvals_outcome_t *o)
{
    s_outcome_t *out = arg;
    out->calls++;
    out->status = o->status;
    snprintf (out->message, sizeof out->message, "%s", o->message ? o->message : "");
    snprintf (out->body, sizeof out->body, "%s", o->body ? o->body : "");
    out->asked = o->asked;
    out->answered = o->answered;
}

//  The loop runs until until() holds, for S_STEPS_MAX steps at most.
typedef struct {
    bool (*until) (void *arg);
    void *arg;
    int steps;
} s_wait_t;

static int
s_on_step (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    s_wait_t *w = arg;
    return ++w->steps >= S_STEPS_MAX || w->until (w->arg) ? -1 : 0;
}

static void
s_run (zloop_t *loop, bool (*until) (void *arg), void *arg)
{
    s_wait_t w = { until, arg, 0 };
    int timer = zloop_timer (loop, S_STEP_MS, 0, s_on_step, &w);
    zloop_start (loop);
    zloop_timer_end (loop, timer);
    cr_assert_lt (w.steps, S_STEPS_MAX, "the exchange ended in time");
}

static bool
s_answered (void *arg)
{
    return ((s_outcome_t *) arg)->calls > 0;
}

typedef struct {
    zloop_t *loop;
    s_judge_t a, b;
    sl_approvals_link_t *link;
} s_fixture_t;

static void
s_fixture (s_fixture_t *f, bool both)
{
    codec = sl_codec_new ();
    f->loop = zloop_new ();
    s_judge_init (&f->a, "judge-a");
    s_judge_init (&f->b, "judge-b");
    zloop_reader (f->loop, f->a.sock, s_on_judge, &f->a);
    zloop_reader (f->loop, f->b.sock, s_on_judge, &f->b);
    char list [160];
    snprintf (list, sizeof list, both ? "%s,%s" : "%s", f->a.endpoint, f->b.endpoint);
    f->link = sl_approvals_link_new (f->loop, NULL, list);
    cr_assert_not_null (f->link);
    cr_assert_eq (sl_approvals_link_judges (f->link), both ? 2u : 1u);
    sl_approvals_link_set_deadline (f->link, S_DEADLINE_MS);
}

static void
s_fixture_end (s_fixture_t *f)
{
    sl_approvals_link_destroy (&f->link);
    zsock_destroy (&f->a.sock);
    zsock_destroy (&f->b.sock);
    zloop_destroy (&f->loop);
    sl_codec_destroy (&codec);
}

static const sl_approvals_by_t s_alice = { .key_id = "alice-laptop", .team = "payments", .user = "alice",
                                           .approver = true };

#define S_APPROVAL_A "{\"id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"state\":\"pending\",\"tool\":\"shell\"}"
#define S_APPROVAL_B "{\"id\":\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\",\"state\":\"pending\",\"tool\":\"pay\"}"

Test (sl_approvals_link, a_list_is_the_union_of_every_judges_approvals)
{
    s_fixture_t f;
    s_fixture (&f, true);
    f.a.list_body = "{\"approvals\":[" S_APPROVAL_A "]}";
    f.b.list_body = "{\"approvals\":[" S_APPROVAL_B "]}";
    s_outcome_t out = { 0 };
    uint64_t handle = sl_approvals_link_list (f.link, &s_alice, s_done, &out);
    cr_expect_neq (handle, 0, "waiting for the judges");
    s_run (f.loop, s_answered, &out);
    cr_expect_eq (out.calls, 1);
    cr_expect_eq (out.status, 200);
    cr_expect_eq (out.asked, 2);
    cr_expect_eq (out.answered, 2);
    json_t *o = json_loads (out.body, 0, NULL);
    cr_assert_not_null (o, "%s", out.body);
    json_t *list = json_object_get (o, "approvals");
    cr_expect_eq (json_array_size (list), 2, "%s", out.body);
    cr_expect (strstr (out.body, "aaaaaaaa") && strstr (out.body, "bbbbbbbb"), "%s", out.body);
    json_decref (o);
    //  Each judge was asked, and told who asks.
    cr_expect_str_eq (f.a.code, "list");
    cr_expect_str_eq (f.b.code, "list");
    json_t *req = json_loads (f.a.body, 0, NULL);
    cr_assert_not_null (req, "%s", f.a.body);
    json_t *by = json_object_get (req, "by");
    cr_expect_str_eq (json_string_value (json_object_get (by, "key_id")), "alice-laptop");
    cr_expect_str_eq (json_string_value (json_object_get (by, "team")), "payments");
    cr_expect_str_eq (json_string_value (json_object_get (by, "user")), "alice");
    cr_expect (json_is_true (json_object_get (by, "approver")));
    cr_expect (json_is_false (json_object_get (by, "console")));
    cr_expect (json_is_false (json_object_get (by, "loopback")));
    json_decref (req);
    s_fixture_end (&f);
}

#define S_DECIDED \
    "{\"id\":\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\",\"state\":\"approved\",\"tool\":\"pay\"," \
    "\"digest\":\"" "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" "\"," \
    "\"identity\":{\"key_id\":\"bob-ci\",\"team\":\"payments\",\"user\":\"bob\"}," \
    "\"approver\":\"alice@payments\",\"decided_at\":1000000,\"remember_minutes\":30,\"remember_until\":2800000}"

typedef struct {
    s_outcome_t *out;
    s_judge_t *judge;
} s_grant_wait_t;

static bool
s_answered_and_granted (void *arg)
{
    s_grant_wait_t *w = arg;
    return w->out->calls > 0 && w->judge->grants > 0;
}

Test (sl_approvals_link, a_decision_is_the_holders_answer_and_its_memory_goes_to_the_others)
{
    s_fixture_t f;
    s_fixture (&f, true);
    f.a.decide_status = 404;
    f.b.decide_status = 200;
    f.b.decide_body = S_DECIDED;
    s_outcome_t out = { 0 };
    sl_approvals_decision_t d = { .approve = true, .comment = "ok for today", .remember_minutes = 30,
                                  .digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" };
    sl_approvals_link_decide (f.link, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", &s_alice, &d, s_done, &out);
    s_grant_wait_t w = { &out, &f.a };
    s_run (f.loop, s_answered_and_granted, &w);
    cr_expect_eq (out.calls, 1);
    cr_expect_eq (out.status, 200, "%s", out.message);
    cr_expect_str_eq (out.body, S_DECIDED);
    //  The request as the judges read it.
    cr_expect_str_eq (f.b.code, "decide");
    cr_expect_str_eq (f.b.id, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    json_t *req = json_loads (f.b.body, 0, NULL);
    cr_assert_not_null (req);
    cr_expect_str_eq (json_string_value (json_object_get (req, "decision")), "approve");
    cr_expect_str_eq (json_string_value (json_object_get (req, "comment")), "ok for today");
    cr_expect_eq (json_integer_value (json_object_get (req, "remember_minutes")), 30);
    cr_expect_not_null (json_object_get (req, "digest"));
    cr_expect_null (json_object_get (req, "policy"), "not given, not sent");
    json_decref (req);
    //  The judge that did not hold it remembers the approval.
    cr_expect_eq (f.a.grants, 1);
    cr_expect_eq (f.b.grants, 0, "the holder remembers it already");
    json_t *g = json_loads (f.a.grant, 0, NULL);
    cr_assert_not_null (g, "%s", f.a.grant);
    cr_expect_str_eq (json_string_value (json_object_get (g, "digest")),
                      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    cr_expect_str_eq (json_string_value (json_object_get (g, "key_id")), "bob-ci");
    cr_expect_str_eq (json_string_value (json_object_get (g, "team")), "payments");
    cr_expect_str_eq (json_string_value (json_object_get (g, "user")), "bob");
    cr_expect_str_eq (json_string_value (json_object_get (g, "approval")), "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    cr_expect_str_eq (json_string_value (json_object_get (g, "approver")), "alice@payments");
    cr_expect_eq (json_integer_value (json_object_get (g, "expires_at")), 2800000, "the judge's remember_until");
    json_decref (g);
    s_fixture_end (&f);
}

//  A console user is named whole: the judge records the person, not
//  "console".
Test (sl_approvals_link, a_console_users_decision_names_the_person)
{
    s_fixture_t f;
    s_fixture (&f, true);
    f.a.decide_status = 200;
    f.a.decide_body = S_DECIDED;
    f.b.decide_status = 404;
    s_outcome_t out = { 0 };
    sl_approvals_decision_t d = { .approve = false };
    sl_approvals_by_t ann = { .console = true, .user = "ann@example.com",
                              .name = "Ann Example <ann@example.com> (u-ann)" };
    sl_approvals_link_decide (f.link, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", &ann, &d, s_done, &out);
    s_run (f.loop, s_answered, &out);
    cr_expect_eq (out.status, 200, "%s", out.message);
    json_t *req = json_loads (f.a.body, 0, NULL);
    cr_assert_not_null (req);
    json_t *by = json_object_get (req, "by");
    cr_expect_str_eq (json_string_value (json_object_get (by, "name")), "Ann Example <ann@example.com> (u-ann)");
    cr_expect_str_eq (json_string_value (json_object_get (by, "user")), "ann@example.com");
    cr_expect (json_is_true (json_object_get (by, "console")));
    json_decref (req);
    s_fixture_end (&f);
}

Test (sl_approvals_link, a_refusal_of_the_holder_is_the_outcome_and_grants_nothing)
{
    s_fixture_t f;
    s_fixture (&f, true);
    f.a.decide_status = 403;
    f.b.decide_status = 404;
    s_outcome_t out = { 0 };
    sl_approvals_decision_t d = { .approve = false };
    sl_approvals_link_decide (f.link, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", &s_alice, &d, s_done, &out);
    s_run (f.loop, s_answered, &out);
    cr_expect_eq (out.status, 403);
    cr_expect_str_eq (out.message, "not held here");
    cr_expect_eq (f.a.grants + f.b.grants, 0);
    s_fixture_end (&f);
}

Test (sl_approvals_link, held_by_no_judge_is_404)
{
    s_fixture_t f;
    s_fixture (&f, true);
    s_outcome_t out = { 0 };
    sl_approvals_decision_t d = { .approve = true };
    sl_approvals_link_decide (f.link, "cccccccccccccccccccccccccccccccc", &s_alice, &d, s_done, &out);
    s_run (f.loop, s_answered, &out);
    cr_expect_eq (out.status, 404);
    cr_expect_eq (out.answered, 2, "both answered: no need to wait for the deadline");
    cr_expect_not_null (strstr (out.message, "cccccccc"), "%s", out.message);
    s_fixture_end (&f);
}

Test (sl_approvals_link, a_silent_judge_costs_the_deadline_and_the_others_are_reported)
{
    s_fixture_t f;
    s_fixture (&f, true);
    f.a.list_body = "{\"approvals\":[" S_APPROVAL_A "]}";
    f.b.silent = true;
    s_outcome_t out = { 0 };
    sl_approvals_link_list (f.link, &s_alice, s_done, &out);
    s_run (f.loop, s_answered, &out);
    cr_expect_eq (out.status, 200);
    cr_expect_eq (out.asked, 2);
    cr_expect_eq (out.answered, 1);
    cr_expect_not_null (strstr (out.body, "aaaaaaaa"), "%s", out.body);
    cr_expect_not_null (strstr (out.body, "\"answered\":1"), "%s", out.body);
    cr_expect_eq (f.b.requests, 1, "the silent judge was asked");
    //  A decision no judge that answered holds: 404, and says who did not answer.
    s_outcome_t dec = { 0 };
    sl_approvals_decision_t d = { .approve = true };
    sl_approvals_link_decide (f.link, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", &s_alice, &d, s_done, &dec);
    s_run (f.loop, s_answered, &dec);
    cr_expect_eq (dec.status, 404);
    cr_expect_not_null (strstr (dec.message, "did not answer"), "%s", dec.message);
    s_fixture_end (&f);
}

Test (sl_approvals_link, no_judge_answering_is_503)
{
    s_fixture_t f;
    s_fixture (&f, true);
    f.a.silent = true;
    f.b.silent = true;
    s_outcome_t out = { 0 };
    sl_approvals_link_list (f.link, &s_alice, s_done, &out);
    s_run (f.loop, s_answered, &out);
    cr_expect_eq (out.status, 503);
    cr_expect_eq (out.answered, 0);
    cr_expect_not_null (strstr (out.message, "no judge"), "%s", out.message);
    s_fixture_end (&f);
}

Test (sl_approvals_link, no_judge_at_all_is_503_at_once)
{
    zloop_t *loop = zloop_new ();
    //  A name that resolves to nothing: the link waits for it, with no judge.
    sl_approvals_link_t *link = sl_approvals_link_new (loop, NULL, "tcp://judge.invalid:5560");
    cr_assert_not_null (link);
    cr_expect_eq (sl_approvals_link_judges (link), 0);
    s_outcome_t out = { 0 };
    cr_expect_eq (sl_approvals_link_list (link, &s_alice, s_done, &out), 0);
    cr_expect_eq (out.calls, 1, "answered before the call returned");
    cr_expect_eq (out.status, 503);
    sl_approvals_link_destroy (&link);
    cr_expect_null (sl_approvals_link_new (loop, NULL, "judge:5560"), "not an endpoint");
    cr_expect_null (sl_approvals_link_new (loop, NULL, ""), "none");
    zloop_destroy (&loop);
}

typedef struct {
    s_judge_t *a, *b;
    s_outcome_t *kept;
} s_forget_wait_t;

static bool
s_both_asked_and_kept_answered (void *arg)
{
    s_forget_wait_t *w = arg;
    return w->a->requests >= 2 && w->b->requests >= 2 && w->kept->calls > 0;
}

Test (sl_approvals_link, a_forgotten_request_calls_nobody_back)
{
    s_fixture_t f;
    s_fixture (&f, true);
    s_outcome_t gone = { 0 }, kept = { 0 };
    uint64_t handle = sl_approvals_link_list (f.link, &s_alice, s_done, &gone);
    cr_assert_neq (handle, 0);
    sl_approvals_link_forget (f.link, handle);
    sl_approvals_link_forget (f.link, handle);      //  twice: nothing
    sl_approvals_link_forget (f.link, 0);
    sl_approvals_link_list (f.link, &s_alice, s_done, &kept);
    s_forget_wait_t w = { &f.a, &f.b, &kept };
    s_run (f.loop, s_both_asked_and_kept_answered, &w);
    cr_expect_eq (kept.calls, 1);
    cr_expect_eq (gone.calls, 0, "the asker left: not called");
    s_fixture_end (&f);
}

static bool
s_both_cancelled (void *arg)
{
    s_fixture_t *f = arg;
    return f->a.cancels > 0 && f->b.cancels > 0;
}

Test (sl_approvals_link, a_cancel_reaches_every_judge)
{
    s_fixture_t f;
    s_fixture (&f, true);
    sl_approvals_link_cancel (f.link, "0123456789abcdef0123456789abcdef");
    s_run (f.loop, s_both_cancelled, &f);
    cr_expect_str_eq (f.a.cancel, "{\"stream\":\"0123456789abcdef0123456789abcdef\"}");
    cr_expect_str_eq (f.b.cancel, f.a.cancel);
    s_fixture_end (&f);
}
