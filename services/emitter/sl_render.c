/*  sl_render.c - the renderer table and helpers shared by the renderers. */
#include "sl_render.h"

#include <string.h>

#include "../../common/sl_json.h"

const sl_renderer_t *
sl_render_for (int dialect)
{
    switch (dialect) {
        case SL_DIALECT_OPENAI:    return &sl_render_openai;
        case SL_DIALECT_ANTHROPIC: return &sl_render_anthropic;
        case SL_DIALECT_RESPONSES: return &sl_render_responses;
        case SL_DIALECT_GEMINI:    return &sl_render_gemini;
        default:                   return NULL;
    }
}

void
sl_render_stream_clear (sl_render_stream_t *rs)
{
    sl_buf_free (&rs->model);
    sl_buf_free (&rs->id);
    sl_buf_free (&rs->open_id);
    sl_buf_free (&rs->open_call_id);
    sl_buf_free (&rs->open_name);
    sl_buf_free (&rs->open_extra);
    sl_buf_free (&rs->prefix);
    sl_buf_free (&rs->held);
    sl_buf_free (&rs->output);
}

const char *
sl_render_raw_finish (const sl_render_stream_t *rs, const sl_msg_t *msg, char *buf, size_t size)
{
    if (rs->upstream_dialect != rs->client_dialect || !msg->finish_raw.ptr
    ||  msg->finish_raw.len == 0 || msg->finish_raw.len >= size)
        return NULL;
    memcpy (buf, msg->finish_raw.ptr, msg->finish_raw.len);
    buf [msg->finish_raw.len] = 0;
    return buf;
}

void
sl_render_put_json (sl_buf_t *out, sl_str_t value, const char *fallback)
{
    if (value.ptr && value.len && sl_json_valid (value))
        sl_buf_append_str (out, sl_json_trim (value));
    else
        sl_buf_puts (out, fallback);
}
