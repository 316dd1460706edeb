/*  sl_render_openai.c - render judged blocks as OpenAI chat.completion.chunk SSE.

    Every chunk shares the same head ({"id":..,"object":..,"created":..,
    "model":..,"choices":[), built once per stream; a chunk is that head,
    the choice with its delta, and the tail. Tool calls are numbered from 0
    in the order they appear, as OpenAI numbers them.
*/
#include <string.h>

#include "../../common/sl_json.h"
#include "sl_render.h"

const char *
sl_render_openai_finish (int finish)
{
    switch (finish) {
        case SL_FIN_LENGTH: return "length";
        case SL_FIN_TOOL_CALLS: return "tool_calls";
        case SL_FIN_CONTENT_FILTER: return "content_filter";
        default: return "stop";
    }
}

static void
s_prefix (sl_render_stream_t *rs)
{
    if (rs->prefix.len)
        return;
    sl_buf_puts (&rs->prefix, "data: {\"id\":");
    sl_json_put_sl (&rs->prefix, sl_buf_str (&rs->id));
    sl_buf_puts (&rs->prefix, ",\"object\":\"chat.completion.chunk\",\"created\":");
    sl_buf_put_i64 (&rs->prefix, rs->created);
    sl_buf_puts (&rs->prefix, ",\"model\":");
    sl_json_put_sl (&rs->prefix, sl_buf_str (&rs->model));
    sl_buf_puts (&rs->prefix, ",\"choices\":[");
}

//  Open a chunk: head, then the choice up to its delta's opening brace.
static void
s_chunk_open (sl_render_stream_t *rs, sl_buf_t *out)
{
    s_prefix (rs);
    sl_buf_append (out, rs->prefix.data, rs->prefix.len);
    sl_buf_puts (out, "{\"index\":0,\"delta\":{");
}

static void
s_chunk_close (sl_buf_t *out, const char *finish)
{
    sl_buf_puts (out, "},\"finish_reason\":");
    if (finish)
        sl_json_put_str (out, finish, strlen (finish));
    else
        sl_buf_puts (out, "null");
    sl_buf_puts (out, "}]}\n\n");
}

static void
s_role_chunk (sl_render_stream_t *rs, sl_buf_t *out)
{
    s_chunk_open (rs, out);
    sl_buf_puts (out, "\"role\":\"assistant\",\"content\":\"\"");
    s_chunk_close (out, NULL);
}

static void
s_usage_chunk (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    s_prefix (rs);
    sl_buf_append (out, rs->prefix.data, rs->prefix.len);
    const sl_usage_t *u = &msg->usage;
    int64_t in = u->input > 0 ? u->input : 0, outp = u->output > 0 ? u->output : 0;
    sl_buf_puts (out, "],\"usage\":{\"prompt_tokens\":");
    sl_buf_put_i64 (out, in);
    sl_buf_puts (out, ",\"completion_tokens\":");
    sl_buf_put_i64 (out, outp);
    sl_buf_puts (out, ",\"total_tokens\":");
    sl_buf_put_i64 (out, u->total >= 0 ? u->total : in + outp);
    if (u->cache_read >= 0) {
        sl_buf_puts (out, ",\"prompt_tokens_details\":{\"cached_tokens\":");
        sl_buf_put_i64 (out, u->cache_read);
        sl_buf_putc (out, '}');
    }
    if (u->reasoning >= 0) {
        sl_buf_puts (out, ",\"completion_tokens_details\":{\"reasoning_tokens\":");
        sl_buf_put_i64 (out, u->reasoning);
        sl_buf_putc (out, '}');
    }
    sl_buf_puts (out, "}}\n\n");
}

void
sl_render_openai_block (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (msg->kind == SL_B_MESSAGE || msg->kind == SL_B_KEEPALIVE) {
        if (msg->kind == SL_B_KEEPALIVE && rs->started)
            sl_buf_puts (out, ": keep-alive\n\n");
        return;
    }
    if (!rs->started) {
        rs->started = true;
        s_role_chunk (rs, out);
    }
    switch (msg->kind) {
        case SL_B_START:
            if (msg->block == SL_BK_TOOL_CALL) {
                int k = rs->tool_calls++;
                s_chunk_open (rs, out);
                sl_buf_puts (out, "\"tool_calls\":[{\"index\":");
                sl_buf_put_i64 (out, k);
                sl_buf_puts (out, ",\"id\":");
                sl_json_put_sl (out, msg->id);
                sl_buf_puts (out, ",\"type\":\"function\",\"function\":{\"name\":");
                sl_json_put_sl (out, msg->name);
                sl_buf_puts (out, ",\"arguments\":\"\"}}]");
                s_chunk_close (out, NULL);
            }
            break;
        case SL_B_DELTA:
            if (!msg->text.len)
                break;
            if (msg->block == SL_BK_TEXT || msg->block == SL_BK_REFUSAL) {
                s_chunk_open (rs, out);
                sl_buf_puts (out, msg->block == SL_BK_TEXT ? "\"content\":" : "\"refusal\":");
                sl_json_put_sl (out, msg->text);
                s_chunk_close (out, NULL);
            }
            else
            if (msg->block == SL_BK_TOOL_CALL) {
                s_chunk_open (rs, out);
                sl_buf_puts (out, "\"tool_calls\":[{\"index\":");
                sl_buf_put_i64 (out, rs->tool_calls - 1);
                sl_buf_puts (out, ",\"function\":{\"arguments\":");
                sl_json_put_sl (out, msg->text);
                sl_buf_puts (out, "}}]");
                s_chunk_close (out, NULL);
            }
            break;
        case SL_B_FINISH: {
            const char *finish = sl_render_openai_finish (msg->finish);
            char raw [32];
            if (rs->upstream_dialect == SL_DIALECT_OPENAI && msg->finish_raw.ptr
            &&  msg->finish_raw.len < sizeof raw) {
                //  Same dialect: the provider's own value passes through.
                memcpy (raw, msg->finish_raw.ptr, msg->finish_raw.len);
                raw [msg->finish_raw.len] = 0;
                finish = raw;
            }
            s_chunk_open (rs, out);
            s_chunk_close (out, finish);
            if ((rs->flags & SL_F_USAGE) && msg->has_usage)
                s_usage_chunk (rs, msg, out);
            break;
        }
        default:
            break;
    }
}

void
sl_render_openai_error_body (const sl_msg_t *msg, sl_buf_t *out)
{
    sl_buf_puts (out, "{\"error\":{\"message\":");
    sl_json_put_sl (out, msg->message.ptr ? msg->message : SL_STR_LIT ("upstream error"));
    sl_buf_puts (out, ",\"type\":");
    sl_json_put_sl (out, msg->code.ptr ? msg->code : SL_STR_LIT ("upstream_error"));
    sl_buf_puts (out, ",\"param\":null,\"code\":null}}");
}

void
sl_render_openai_error (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    (void) rs;
    sl_buf_puts (out, "data: ");
    sl_render_openai_error_body (msg, out);
    sl_buf_puts (out, "\n\n");
}

void
sl_render_openai_end (sl_render_stream_t *rs, sl_buf_t *out)
{
    (void) rs;
    sl_buf_puts (out, "data: [DONE]\n\n");
}
