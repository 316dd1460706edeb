/*  sl_stage.c - inbox draining, decoding and heartbeats for a stage. */
#include "sl_stage.h"

#include <stdlib.h>

#include "sl_alloc.h"
#include "sl_log.h"

#define SL_STAGE_MAX_DRAIN 256          //  ZeroMQ messages per wake-up (fairness)
#define SL_STAGE_CREDIT 1000            //  credit advertised in heartbeats

struct _sl_stage_t {
    sl_service_t *service;
    sl_inbox_t *inbox;
    sl_codec_t *codec;
    sl_stage_msg_fn *on_msg;
    sl_stage_flush_fn *on_flush;
    void *arg;
    sl_buf_t reply;
    sl_counter_t *in_messages;
    sl_counter_t *malformed;
};

static void
s_answer_hb (sl_stage_t *self, sl_str_t peer)
{
    sl_msg_t hb;
    sl_msg_init (&hb, SL_MSG_HB);
    hb.instance = sl_str (sl_service_name (self->service));
    hb.incarnation = sl_service_incarnation (self->service);
    hb.credit = SL_STAGE_CREDIT;
    sl_buf_reset (&self->reply);
    sl_msg_encode (&hb, &self->reply);
    sl_inbox_send (self->inbox, peer, self->reply.data, self->reply.len);
}

static int
s_on_readable (zloop_t *loop, zsock_t *reader, void *arg)
{
    (void) loop;
    (void) reader;
    sl_stage_t *self = arg;
    for (int n = 0; n < SL_STAGE_MAX_DRAIN; n++) {
        sl_str_t peer, data;
        int rc = sl_inbox_recv (self->inbox, &peer, &data);
        if (rc == 0)
            break;
        if (rc < 0) {
            sl_counter_inc (self->malformed);
            sl_log_warn ("malformed_message", "wrong number of frames");
            continue;
        }
        size_t offset = 0;
        sl_msg_t msg;
        while ((rc = sl_codec_decode (self->codec, data.ptr, data.len, &offset, &msg)) == 0) {
            sl_counter_inc (self->in_messages);
            if (msg.type == SL_MSG_HB)
                s_answer_hb (self, peer);
            else
                self->on_msg (self->arg, &msg, peer);
        }
        if (rc == -2) {
            sl_counter_inc (self->malformed);
            sl_log_warn ("malformed_message", "%s", sl_codec_error (self->codec));
        }
    }
    if (self->on_flush)
        self->on_flush (self->arg);
    return 0;
}

sl_stage_t *
sl_stage_new (sl_service_t *service, const char *bind,
              sl_stage_msg_fn *on_msg, sl_stage_flush_fn *on_flush, void *arg)
{
    sl_inbox_t *inbox = sl_inbox_new (bind);
    if (!inbox)
        return NULL;
    sl_stage_t *self = sl_xcalloc (1, sizeof *self);
    self->service = service;
    self->inbox = inbox;
    self->codec = sl_codec_new ();
    self->on_msg = on_msg;
    self->on_flush = on_flush;
    self->arg = arg;
    sl_metrics_t *m = sl_service_metrics (service);
    self->in_messages = sl_metrics_counter (m, "sluice_messages_in_total", NULL,
                                            "Protocol messages received on the inbox");
    self->malformed = sl_metrics_counter (m, "sluice_malformed_messages_total", NULL,
                                          "Messages dropped as malformed (bad frames, codec errors)");
    zloop_reader (sl_service_loop (service), sl_inbox_sock (inbox), s_on_readable, self);
    sl_log_info ("inbox_bound", "endpoint=%s", sl_inbox_endpoint (inbox));
    return self;
}

void
sl_stage_destroy (sl_stage_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_stage_t *self = *self_p;
    zloop_reader_end (sl_service_loop (self->service), sl_inbox_sock (self->inbox));
    sl_inbox_destroy (&self->inbox);
    sl_codec_destroy (&self->codec);
    sl_buf_free (&self->reply);
    free (self);
    *self_p = NULL;
}

sl_inbox_t *
sl_stage_inbox (sl_stage_t *self)
{
    return self->inbox;
}

int
sl_stage_reply (sl_stage_t *self, sl_str_t peer, const sl_msg_t *msg)
{
    sl_buf_reset (&self->reply);
    sl_msg_encode (msg, &self->reply);
    return sl_inbox_send (self->inbox, peer, self->reply.data, self->reply.len);
}
