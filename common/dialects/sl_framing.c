/*  sl_framing.c - a provider's stream body cut into events (see
    sl_framing.h). */
#include "common/dialects/sl_framing.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/cloud/sl_evstream.h"
#include "common/http/sl_sse.h"

struct _sl_framing_t {
    int kind;                           //  sl_framing_kind_t
    sl_sse_t *sse;
    sl_evstream_t *ev;
    sl_framing_event_fn *fn;            //  valid during feed and finish
    void *arg;
    sl_buf_t error_data;                //  an error message's {"message": ..}
    const char *error;
    const char *code;
};

sl_framing_t *
sl_framing_new (int kind, size_t max_event)
{
    if (kind != SL_FRAMING_SSE && kind != SL_FRAMING_EVSTREAM)
        return NULL;
    sl_framing_t *self = sl_xcalloc (1, sizeof *self);
    self->kind = kind;
    if (kind == SL_FRAMING_SSE)
        self->sse = sl_sse_new (max_event);
    else
        self->ev = sl_evstream_new (max_event);
    self->error = "";
    return self;
}

void
sl_framing_destroy (sl_framing_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_framing_t *self = *self_p;
    sl_sse_destroy (&self->sse);
    sl_evstream_destroy (&self->ev);
    sl_buf_free (&self->error_data);
    free (self);
    *self_p = NULL;
}

//  One whole event-stream message as an event: its type is what the
//  message says it is (an event's, an exception's, an error's code).
static int
s_message (void *arg, const sl_evstream_msg_t *msg)
{
    sl_framing_t *self = arg;
    if (sl_str_eq (msg->message_type, "exception"))
        return self->fn (self->arg, msg->exception_type, msg->payload, SL_STR_NULL);
    if (sl_str_eq (msg->message_type, "error")) {
        sl_buf_reset (&self->error_data);
        sl_buf_puts (&self->error_data, "{\"message\":");
        sl_json_put_sl (&self->error_data, msg->error_message);
        sl_buf_putc (&self->error_data, '}');
        sl_str_t code = msg->error_code.ptr && msg->error_code.len ? msg->error_code : SL_STR_LIT ("error");
        return self->fn (self->arg, code, sl_buf_str (&self->error_data), SL_STR_NULL);
    }
    return self->fn (self->arg, msg->event_type, msg->payload, SL_STR_NULL);
}

static void
s_failed (sl_framing_t *self)
{
    if (self->kind == SL_FRAMING_SSE) {
        self->error = sl_sse_error (self->sse);
        self->code = "upstream_event_too_large";
    }
    else {
        self->error = sl_evstream_error (self->ev);
        self->code = strstr (self->error, "size limit") ? "upstream_event_too_large" : "upstream_malformed";
    }
}

int
sl_framing_feed (sl_framing_t *self, const char *data, size_t size, sl_framing_event_fn *fn, void *arg)
{
    int rc;
    if (self->kind == SL_FRAMING_SSE)
        rc = sl_sse_feed (self->sse, data, size, fn, arg);
    else {
        self->fn = fn;
        self->arg = arg;
        rc = sl_evstream_feed (self->ev, data, size, s_message, self);
    }
    if (rc == -1 && *(self->kind == SL_FRAMING_SSE ? sl_sse_error (self->sse) : sl_evstream_error (self->ev)))
        s_failed (self);
    return rc;
}

int
sl_framing_finish (sl_framing_t *self, sl_framing_event_fn *fn, void *arg)
{
    int rc = self->kind == SL_FRAMING_SSE ? sl_sse_finish (self->sse, fn, arg) : sl_evstream_finish (self->ev);
    if (rc == -1 && *(self->kind == SL_FRAMING_SSE ? sl_sse_error (self->sse) : sl_evstream_error (self->ev))) {
        s_failed (self);
        if (self->kind == SL_FRAMING_EVSTREAM)
            self->code = "upstream_malformed";
    }
    return rc;
}

const char *
sl_framing_error (sl_framing_t *self)
{
    return self->error;
}

const char *
sl_framing_code (sl_framing_t *self)
{
    return self->code ? self->code : "upstream_malformed";
}

void
sl_framing_reset (sl_framing_t *self)
{
    if (self->sse)
        sl_sse_reset (self->sse);
    if (self->ev)
        sl_evstream_reset (self->ev);
    self->error = "";
    self->code = NULL;
}

int
sl_framing_kind (sl_framing_t *self)
{
    return self->kind;
}
