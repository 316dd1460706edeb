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

void
sl_render_snapshot_finish (const sl_snapshot_t *snap, sl_msg_t *out)
{
    sl_msg_init (out, SL_MSG_BLOCK);
    out->kind = SL_B_FINISH;
    out->finish = (uint8_t) sl_snapshot_finish (snap);
    out->finish_raw = sl_snapshot_finish_raw (snap);
    out->stop_seq = sl_snapshot_stop_seq (snap);
    out->has_usage = sl_snapshot_usage (snap, &out->usage);
}

int
sl_render_put_citations (sl_buf_t *out, sl_str_t body)
{
    sl_str_t list, elem;
    sl_json_iter_t it;
    if (!body.len || sl_json_type (body) != SL_JSON_OBJECT
    ||  sl_json_find (body, "citations", &list) != 1 || sl_json_array (&it, list))
        return 0;
    int count = 0;
    while (sl_json_next_elem (&it, &elem) == 1) {
        elem = sl_json_trim (elem);
        if (!sl_json_valid (elem))
            break;
        if (out->len)
            sl_buf_putc (out, ',');
        sl_buf_append_str (out, elem);
        count++;
    }
    return count;
}
