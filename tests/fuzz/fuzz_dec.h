/*  fuzz_dec.h - the body of every decoder fuzz target (fuzz_dec_<name>.c
    defines FUZZ_DIALECT and includes this).

    The input is the dialect's byte stream, cut into events by its framing
    (server-sent events, or AWS's event stream for Bedrock); every event
    goes to the decoder, then the end of stream. Whatever the decoder
    emits must be a well-formed message: it is encoded and decoded again
    with the protocol codec. */
#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "proto/sl_msg.h"
#include "common/dialects/sl_decoder.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_framing.h"

typedef struct {
    sl_decoder_t *dec;
    sl_buf_t wire;
    sl_codec_t *codec;
} s_fuzz_t;

static void
s_check (void *arg, const sl_msg_t *msg)
{
    s_fuzz_t *f = arg;
    if (msg->type != SL_MSG_DELTA && msg->type != SL_MSG_ERROR)
        __builtin_trap ();
    if (msg->type == SL_MSG_DELTA && (msg->kind < SL_D_MESSAGE || msg->kind >= SL_D_MAX))
        __builtin_trap ();
    sl_msg_t m = *msg;
    m.sid [0] = 1;
    sl_buf_reset (&f->wire);
    sl_msg_encode (&m, &f->wire);
    size_t offset = 0;
    sl_msg_t back;
    if (sl_codec_decode (f->codec, f->wire.data, f->wire.len, &offset, &back) != 0
    ||  back.kind != m.kind || back.text.len != m.text.len)
        __builtin_trap ();
}

static int
s_event (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    (void) id;
    s_fuzz_t *f = arg;
    return sl_decoder_event (f->dec, type, data, s_check, f) ? -1 : 0;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    if (sl_dialect_init (NULL))
        __builtin_trap ();
    s_fuzz_t f = { .dec = sl_decoder_new (FUZZ_DIALECT), .codec = sl_codec_new () };
    sl_framing_t *frames = sl_framing_new (sl_dialect_get (FUZZ_DIALECT)->framing, 0);
    if (sl_framing_feed (frames, (const char *) data, size, s_event, &f) == 0
    &&  sl_framing_finish (frames, s_event, &f) == 0)
        sl_decoder_finish (f.dec, s_check, &f);
    sl_framing_destroy (&frames);
    sl_decoder_destroy (&f.dec);
    sl_codec_destroy (&f.codec);
    sl_buf_free (&f.wire);
    return 0;
}
