/*  fake_judge.c - a judge's approvals control socket played by a test
    (see fake_judge.h). */
#include "tests/integration/fake_judge.h"

#include <czmq.h>
#include <jansson.h>
#include <pthread.h>

#include "proto/sl_msg.h"
#include "tests/integration/harness.h"

#define S_POLL_MS 50
#define S_WAIT_STEP_MS 20

struct _fake_judge_t {
    zsock_t *sock;
    pthread_t thread;
    pthread_mutex_t lock;
    volatile bool stop;
    fake_judge_seen_t seen;
    sl_codec_t *codec;
};

static const char *s_approval =
    "{\"id\":\"" FAKE_JUDGE_ID "\",\"state\":\"%s\",\"stream\":\"0123456789abcdef0123456789abcdef\","
    "\"index\":1,\"tool\":\"shell\",\"arguments\":{\"command\":\"git push --force\"},\"rule\":\"ask-push\","
    "\"message\":\"shell wants to force-push\",\"digest\":\"%064d\",\"policy\":\"a1b2c3d4e5f6\","
    "\"identity\":{\"key_id\":\"bob-ci\",\"team\":\"eng\",\"user\":\"bob\"},\"model\":\"mock-tools\","
    "\"approvers\":[],\"on_timeout\":\"block\",\"created_at\":1,\"expires_at\":%lld,\"judge\":\"fake\"}";

static void
s_copy (char *out, sl_str_t s)
{
    snprintf (out, FAKE_JUDGE_TEXT_MAX, "%.*s", (int) s.len, s.ptr ? s.ptr : "");
}

//  May the asker decide? The rule names no approvers: approver keys, the
//  console and loopback callers may.
static bool
s_may_decide (const char *body)
{
    json_t *o = json_loads (body, 0, NULL);
    json_t *by = json_object_get (o, "by");
    bool may = json_is_true (json_object_get (by, "approver")) || json_is_true (json_object_get (by, "console"))
            || json_is_true (json_object_get (by, "loopback"));
    json_decref (o);
    return may;
}

static void
s_by (char *out, const char *body)
{
    json_t *o = json_loads (body, 0, NULL);
    char *text = json_dumps (json_object_get (o, "by"), JSON_COMPACT | JSON_SORT_KEYS);
    snprintf (out, FAKE_JUDGE_TEXT_MAX, "%s", text ? text : "");
    free (text);
    json_decref (o);
}

static void
s_answer (fake_judge_t *self, zframe_t *peer, const sl_msg_t *m)
{
    char code [16], body [FAKE_JUDGE_TEXT_MAX], id [64], approval [FAKE_JUDGE_TEXT_MAX];
    s_copy (code, m->code);
    s_copy (body, m->body);
    s_copy (id, m->id);
    sl_msg_t reply;
    sl_msg_init (&reply, SL_MSG_CTL);
    memcpy (reply.sid, m->sid, SL_SID_SIZE);
    reply.code = m->code;
    reply.instance = sl_str ("fake");
    char list [FAKE_JUDGE_TEXT_MAX + 32];
    long long expires = (long long) zclock_time () + 60000;
    pthread_mutex_lock (&self->lock);
    if (strcmp (code, "cancel") == 0 || strcmp (code, "grant") == 0) {
        if (code [0] == 'c') {
            self->seen.cancels++;
            snprintf (self->seen.last_cancel, FAKE_JUDGE_TEXT_MAX, "%s", body);
        }
        else
            self->seen.grants++;
        pthread_mutex_unlock (&self->lock);
        return;
    }
    s_by (self->seen.last_by, body);
    if (strcmp (code, "list") == 0) {
        self->seen.lists++;
        snprintf (approval, sizeof approval, s_approval, "pending", 0, expires);
        snprintf (list, sizeof list, "{\"approvals\":[%s]}", approval);
        reply.status = 200;
        reply.body = sl_str (list);
    }
    else {
        self->seen.decides++;
        snprintf (self->seen.last_decide, FAKE_JUDGE_TEXT_MAX, "%s", body);
        if (strcmp (id, FAKE_JUDGE_ID) != 0) {
            reply.status = 404;
            reply.message = sl_str ("not held here");
        }
        else
        if (!s_may_decide (body)) {
            reply.status = 403;
            reply.message = sl_str ("not an approver of this call");
        }
        else {
            snprintf (approval, sizeof approval, s_approval, strstr (body, "\"deny\"") ? "denied" : "approved", 0,
                      expires);
            reply.status = 200;
            reply.body = sl_str (approval);
        }
    }
    pthread_mutex_unlock (&self->lock);
    sl_buf_t out = { 0 };
    sl_msg_encode (&reply, &out);
    zmsg_t *msg = zmsg_new ();
    zmsg_addmem (msg, zframe_data (peer), zframe_size (peer));
    zmsg_addmem (msg, out.data, out.len);
    zmsg_send (&msg, self->sock);
    sl_buf_free (&out);
}

static void *
s_run (void *arg)
{
    fake_judge_t *self = arg;
    zpoller_t *poller = zpoller_new (self->sock, NULL);
    while (!self->stop) {
        if (!zpoller_wait (poller, S_POLL_MS))
            continue;
        zmsg_t *msg = zmsg_recv (self->sock);
        zframe_t *peer = zmsg_pop (msg);
        zframe_t *data = zmsg_pop (msg);
        size_t offset = 0;
        sl_msg_t m;
        while (peer && data && sl_codec_decode (self->codec, zframe_data (data), zframe_size (data), &offset, &m) == 0)
            if (m.type == SL_MSG_CTL)
                s_answer (self, peer, &m);
        zframe_destroy (&peer);
        zframe_destroy (&data);
        zmsg_destroy (&msg);
    }
    zpoller_destroy (&poller);
    return NULL;
}

fake_judge_t *
fake_judge_start (const char *keys, int port)
{
    fake_judge_t *self = calloc (1, sizeof *self);
    self->sock = zsock_new (ZMQ_ROUTER);
    zsock_set_linger (self->sock, 0);
    if (harness_curve (self->sock, keys, "judge", NULL)
    ||  zsock_bind (self->sock, "tcp://127.0.0.1:%d", port) < 0) {
        zsock_destroy (&self->sock);
        free (self);
        return NULL;
    }
    self->codec = sl_codec_new ();
    pthread_mutex_init (&self->lock, NULL);
    pthread_create (&self->thread, NULL, s_run, self);
    return self;
}

void
fake_judge_stop (fake_judge_t **self_p)
{
    fake_judge_t *self = *self_p;
    if (!self)
        return;
    self->stop = true;
    pthread_join (self->thread, NULL);
    zsock_destroy (&self->sock);
    sl_codec_destroy (&self->codec);
    pthread_mutex_destroy (&self->lock);
    free (self);
    *self_p = NULL;
}

void
fake_judge_seen (fake_judge_t *self, fake_judge_seen_t *out)
{
    pthread_mutex_lock (&self->lock);
    *out = self->seen;
    pthread_mutex_unlock (&self->lock);
}

bool
fake_judge_wait_cancels (fake_judge_t *self, int cancels, int timeout_ms)
{
    int64_t until = zclock_mono () + timeout_ms;
    fake_judge_seen_t seen;
    do {
        fake_judge_seen (self, &seen);
        if (seen.cancels >= cancels)
            return true;
        zclock_sleep (S_WAIT_STEP_MS);
    } while (zclock_mono () < until);
    return false;
}
