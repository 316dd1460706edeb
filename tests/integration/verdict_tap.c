/*  verdict_tap.c - a verdict subscriber for integration tests (see
    verdict_tap.h). */
#include "tests/integration/verdict_tap.h"

#include <criterion/criterion.h>
#include <czmq.h>
#include <stdlib.h>

#define VERDICT_TAP_WARMUPS 40          //  requests sent before the feed must have spoken
#define VERDICT_TAP_WARMUP_MS 100       //  wait for events after each
#define VERDICT_TAP_POLL_MS 50
#define VERDICT_TAP_REQUEST_MS 20000

static const char s_warmup [] =
    "{\"model\":\"mock-text\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";

bool
verdict_tap_read (verdict_tap_t *t, int wait_ms)
{
    bool any = false;
    zsock_set_rcvtimeo (t->sub, wait_ms);
    zmsg_t *msg;
    while ((msg = zmsg_recv (t->sub))) {
        any = true;
        zsock_set_rcvtimeo (t->sub, 0);
        zframe_t *topic = zmsg_first (msg);
        zframe_t *data = zmsg_next (msg);
        sl_msg_t m;
        size_t offset = 0;
        if (topic && data && sl_codec_decode (t->codec, zframe_data (data), zframe_size (data), &offset, &m) == 0) {
            if (m.type == SL_MSG_VERDICT && t->count < VERDICT_TAP_MAX)
                t->verdicts [t->count++] = sl_msg_dup (&m);
            else
            if (m.type == SL_MSG_APPROVAL && t->approval_count < VERDICT_TAP_MAX)
                t->approvals [t->approval_count++] = sl_msg_dup (&m);
        }
        zmsg_destroy (&msg);
    }
    return any;
}

static void
s_forget (verdict_tap_t *t)
{
    for (int i = 0; i < t->count; i++)
        free (t->verdicts [i]);
    t->count = 0;
    for (int i = 0; i < t->approval_count; i++)
        free (t->approvals [i]);
    t->approval_count = 0;
}

verdict_tap_t *
verdict_tap_open (sluice_stack_t *s)
{
    return verdict_tap_open_as (s, NULL);
}

verdict_tap_t *
verdict_tap_open_as (sluice_stack_t *s, const char *const *headers)
{
    verdict_tap_t *t = calloc (1, sizeof *t);
    cr_assert_not_null (t);
    t->sub = zsock_new (ZMQ_SUB);
    t->codec = sl_codec_new ();
    cr_assert_not_null (t->sub);
    cr_assert_eq (harness_curve (t->sub, s->keys, "tap", "emitter"), 0, "the tap's key");
    zsock_set_subscribe (t->sub, "");
    cr_assert_eq (zsock_connect (t->sub, "%s", s->pub), 0);
    bool live = false;
    for (int i = 0; i < VERDICT_TAP_WARMUPS && !live; i++) {
        sl_buf_t body = { 0 };
        http_request (s->http_port, "POST", "/v1/chat/completions", s_warmup, headers, &body,
                      VERDICT_TAP_REQUEST_MS);
        sl_buf_free (&body);
        live = verdict_tap_read (t, VERDICT_TAP_WARMUP_MS);
    }
    cr_assert (live, "the tap sees the stack's events");
    s_forget (t);
    return t;
}

int
verdict_tap_wait (verdict_tap_t *t, int want, int timeout_ms)
{
    int64_t deadline = zclock_mono () + timeout_ms;
    while (t->count < want && zclock_mono () < deadline)
        verdict_tap_read (t, VERDICT_TAP_POLL_MS);
    return t->count;
}

const sl_msg_t *
verdict_tap_next (verdict_tap_t *t, int *seen, int timeout_ms)
{
    verdict_tap_wait (t, *seen + 1, timeout_ms);
    return t->count > *seen ? t->verdicts [(*seen)++] : NULL;
}

const sl_msg_t *
verdict_tap_approval (verdict_tap_t *t, const char *state, int timeout_ms)
{
    int64_t deadline = zclock_mono () + timeout_ms;
    for (;;) {
        for (int i = 0; i < t->approval_count; i++)
            if (sl_str_eq (t->approvals [i]->code, state))
                return t->approvals [i];
        if (zclock_mono () >= deadline)
            return NULL;
        verdict_tap_read (t, VERDICT_TAP_POLL_MS);
    }
}

void
verdict_tap_close (verdict_tap_t *t)
{
    if (!t)
        return;
    s_forget (t);
    zsock_t *sub = t->sub;
    zsock_destroy (&sub);
    sl_codec_destroy (&t->codec);
    free (t);
}
