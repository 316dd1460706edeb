/*  sl_receiver.c - records from one emitter, once and in order (see sl_receiver.h). */
#include "services/audit/recorder/sl_receiver.h"

#include "common/stages/sl_spool.h"

sl_receiver_verdict_t
sl_receiver_offer (sl_receiver_t *self, uint64_t incarnation, uint64_t seq)
{
    if (seq == 0)
        return SL_RECEIVER_DUPLICATE;   //  records are numbered from 1
    if (incarnation != self->incarnation) {
        //  A new emitter (or its first record here): start where it starts.
        self->incarnation = incarnation;
        self->received = self->committed = self->acked = seq - 1;
        self->resend = self->asked = false;
    }
    if (seq <= self->received)
        return SL_RECEIVER_DUPLICATE;
    if (seq > self->received + 1) {
        if (!self->asked)
            self->resend = true;        //  once per hole, not per record past it
        return SL_RECEIVER_HOLE;
    }
    self->received = seq;
    self->asked = false;
    return SL_RECEIVER_TAKE;
}

void
sl_receiver_commit (sl_receiver_t *self)
{
    self->committed = self->received;
}

void
sl_receiver_abort (sl_receiver_t *self)
{
    if (self->received != self->committed)
        self->resend = true;
    self->received = self->committed;
    self->asked = false;
}

bool
sl_receiver_news (const sl_receiver_t *self)
{
    return self->resend || self->committed != self->acked;
}

void
sl_receiver_rack (sl_receiver_t *self, sl_msg_t *out)
{
    sl_msg_init (out, SL_MSG_RACK);
    out->incarnation = self->incarnation;
    out->seq = self->committed;
    out->kind = self->resend ? SL_RACK_RESEND : SL_RACK_ACK;
    if (self->resend)
        self->asked = true;
    self->resend = false;
    self->acked = self->committed;
}
