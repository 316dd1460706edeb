/*  sl_decoder.c - dispatch to the dialect decoders (see sl_decoder.h). */
#include "sl_decoder.h"

#include <stdlib.h>

#include "../../common/sl_alloc.h"
#include "sl_decoder_impl.h"

struct _sl_decoder_t {
    const sl_decoder_vt_t *vt;
    void *state;
    sl_emit_fn *emit;                   //  valid during event / finish
    void *emit_arg;
    sl_buf_t scratch;
    const char *error;
    uint64_t unknown;
    bool done;
};

sl_decoder_t *
sl_decoder_new (int dialect)
{
    const sl_decoder_vt_t *vt = NULL;
    switch (dialect) {
        case SL_DIALECT_OPENAI: vt = &sl_dec_openai_vt; break;
        default: return NULL;
    }
    sl_decoder_t *self = sl_xcalloc (1, sizeof *self);
    self->vt = vt;
    self->state = vt->create ();
    self->error = "";
    return self;
}

void
sl_decoder_destroy (sl_decoder_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_decoder_t *self = *self_p;
    self->vt->destroy (self->state);
    sl_buf_free (&self->scratch);
    free (self);
    *self_p = NULL;
}

int
sl_decoder_event (sl_decoder_t *self, sl_str_t type, sl_str_t data, sl_emit_fn *emit, void *arg)
{
    self->emit = emit;
    self->emit_arg = arg;
    sl_buf_reset (&self->scratch);
    sl_buf_reserve (&self->scratch, data.len + type.len);
    return self->vt->event (self->state, self, type, data);
}

int
sl_decoder_finish (sl_decoder_t *self, sl_emit_fn *emit, void *arg)
{
    self->emit = emit;
    self->emit_arg = arg;
    return self->vt->finish (self->state, self);
}

bool
sl_decoder_done (sl_decoder_t *self)
{
    return self->done;
}

const char *
sl_decoder_error (sl_decoder_t *self)
{
    return self->error;
}

uint64_t
sl_decoder_unknown (sl_decoder_t *self)
{
    return self->unknown;
}

void
sl_decoder_emit (sl_decoder_t *dec, const sl_msg_t *msg)
{
    dec->emit (dec->emit_arg, msg);
}

void
sl_decoder_emit_delta (sl_decoder_t *dec, int kind, sl_msg_t *tmpl)
{
    tmpl->type = SL_MSG_DELTA;
    tmpl->kind = (uint8_t) kind;
    dec->emit (dec->emit_arg, tmpl);
}

void
sl_decoder_emit_error (sl_decoder_t *dec, sl_str_t code, sl_str_t message, int status)
{
    sl_msg_t msg;
    sl_msg_init (&msg, SL_MSG_ERROR);
    msg.code = code.ptr ? code : SL_STR_LIT ("upstream_error");
    msg.message = message.ptr ? message : SL_STR_LIT ("the upstream reported an error");
    msg.status = status;
    msg.flags = SL_F_UPSTREAM;
    dec->emit (dec->emit_arg, &msg);
}

sl_buf_t *
sl_decoder_scratch (sl_decoder_t *dec)
{
    return &dec->scratch;
}

int
sl_decoder_fail (sl_decoder_t *dec, const char *why)
{
    dec->error = why;
    return -2;
}

void
sl_decoder_count_unknown (sl_decoder_t *dec)
{
    dec->unknown++;
}

void
sl_decoder_set_done (sl_decoder_t *dec)
{
    dec->done = true;
}
