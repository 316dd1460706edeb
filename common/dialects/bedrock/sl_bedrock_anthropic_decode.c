/*  sl_bedrock_anthropic_decode.c - InvokeModelWithResponseStream's
    stream of Claude on Amazon Bedrock: Anthropic's events inside AWS's.

    The stream is AWS's event stream; each `chunk` event's payload is
    {"bytes": base64 of one Anthropic stream event's JSON} (and Bedrock's
    "p" padding). The base64 is decoded and the event handed to the
    Anthropic decoder, whose state this decoder holds: what the Anthropic
    stream says, and how, is the Anthropic module's (its message_stop also
    carries Bedrock's "amazon-bedrock-invocationMetrics", read past).
    Exception frames end the stream as in Converse
    (sl_bedrock_exception_status).
*/
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_base64.h"
#include "common/dialects/sl_decoder_impl.h"
#include "common/dialects/anthropic/sl_anthropic.h"
#include "common/dialects/bedrock/sl_bedrock.h"

typedef struct {
    void *inner;                        //  the Anthropic decoder's state
    sl_buf_t event;                     //  the chunk's event, decoded
} s_state_t;

static void
s_init (void *state)
{
    s_state_t *st = state;
    st->inner = calloc (1, sl_anthropic_decoder.state_size);
    if (sl_anthropic_decoder.init)
        sl_anthropic_decoder.init (st->inner);
}

static void
s_clear (void *state)
{
    s_state_t *st = state;
    if (sl_anthropic_decoder.clear)
        sl_anthropic_decoder.clear (st->inner);
    free (st->inner);
    sl_buf_free (&st->event);
}

//  Base64 of in into the event buffer; 0, or -1 when in is not base64.
static int
s_base64 (s_state_t *st, sl_str_t in)
{
    sl_buf_reset (&st->event);
    size_t len = 0;
    uint8_t *into = (uint8_t *) sl_buf_reserve (&st->event, SL_BASE64_DECODED_MAX (in.len));
    if (sl_base64_decode (in.ptr, in.len, into, &len))
        return -1;
    st->event.len = len;
    return 0;
}

//  How Bedrock writes a chunk: the base64 first, then its padding.
#define CHUNK_PREFIX "{\"bytes\":\""

//  The chunk's base64 as Bedrock writes it, decoded in one pass: the
//  string up to its closing quote is the value when it decodes (a
//  backslash, the only way to hide a quote, is not base64). 0, or -1
//  when the chunk is written some other way.
static int
s_chunk_as_written (s_state_t *st, sl_str_t data)
{
    size_t n = strlen (CHUNK_PREFIX);
    if (data.len <= n || memcmp (data.ptr, CHUNK_PREFIX, n) != 0)
        return -1;
    const char *end = memchr (data.ptr + n, '"', data.len - n);
    return end ? s_base64 (st, sl_str_n (data.ptr + n, (size_t) (end - data.ptr) - n)) : -1;
}

static int
s_chunk (s_state_t *st, sl_decoder_t *dec, sl_str_t data)
{
    if (!st->inner)
        return sl_decoder_fail (dec, "out of memory");
    if (s_chunk_as_written (st, data) == 0)
        return sl_anthropic_decoder.event (st->inner, dec, SL_STR_NULL, sl_buf_str (&st->event));
    //  Any other JSON: the string's value (its escapes undone), decoded.
    sl_str_t value, bytes;
    if (sl_json_find (data, "bytes", &value) != 1 || sl_decoder_str (dec, value, &bytes) || !bytes.ptr)
        return sl_decoder_fail (dec, "chunk without its bytes");
    if (s_base64 (st, bytes))
        return sl_decoder_fail (dec, "chunk bytes are not base64");
    return sl_anthropic_decoder.event (st->inner, dec, SL_STR_NULL, sl_buf_str (&st->event));
}

static int
s_event (void *state, sl_decoder_t *dec, sl_str_t type, sl_str_t data)
{
    s_state_t *st = state;
    if (sl_str_eq (type, "chunk"))
        return s_chunk (st, dec, data);
    size_t n = strlen ("Exception");
    if (type.len > n && memcmp (type.ptr + type.len - n, "Exception", n) == 0) {
        sl_str_t message = SL_STR_NULL, value;
        if (sl_json_find (data, "message", &value) == 1 && sl_decoder_str (dec, value, &message))
            message = SL_STR_NULL;
        sl_decoder_emit_error (dec, type, message, sl_bedrock_exception_status (type));
        return 0;
    }
    sl_decoder_count_unknown (dec);
    return 0;
}

static int
s_finish (void *state, sl_decoder_t *dec)
{
    s_state_t *st = state;
    return sl_anthropic_decoder.finish ? sl_anthropic_decoder.finish (st->inner, dec) : sl_decoder_end (dec);
}

const sl_decoder_vt_t sl_bedrock_anthropic_decoder = {
    .state_size = sizeof (s_state_t),
    .init = s_init,
    .clear = s_clear,
    .event = s_event,
    .finish = s_finish,
};
