/*  sl_render_gemini.c - judged blocks as Gemini streamGenerateContent SSE.

    Every event is one GenerateContentResponse ("data: {...}"): one
    candidate whose content holds the parts of this moment. Text and
    refusals are text parts, thinking is a text part with "thought": true
    (its signature a thoughtSignature), a tool call is one functionCall
    part with its whole arguments (Gemini sends calls whole, so a call is
    rendered at its end), server tool use and results are executableCode
    and codeExecutionResult parts, citations go in
    citationMetadata.citationSources (the Gemini API's name; the SDKs turn
    them into "citations"), one chunk per citation delta, and search
    grounding in groundingMetadata. The last event carries finishReason and
    usageMetadata. Gemini has no end marker: the stream simply ends.
*/
#include <string.h>

#include "../../common/sl_json.h"
#include "sl_render.h"

static void
s_chunk_open (sl_buf_t *out)
{
    sl_buf_puts (out, "data: {\"candidates\":[{");
}

static void
s_chunk_close (sl_render_stream_t *rs, sl_buf_t *out)
{
    sl_buf_puts (out, "\"index\":0}],\"modelVersion\":");
    sl_json_put_sl (out, sl_buf_str (&rs->model));
    sl_buf_puts (out, ",\"responseId\":");
    if (rs->id.len)
        sl_json_put_sl (out, sl_buf_str (&rs->id));
    else
        sl_json_put_str (out, rs->sid_hex, strlen (rs->sid_hex));
    sl_buf_puts (out, "}\n\n");
}

//  A chunk with one part; part_json is the part object.
static void
s_part_chunk (sl_render_stream_t *rs, sl_buf_t *part, sl_buf_t *out)
{
    s_chunk_open (out);
    sl_buf_puts (out, "\"content\":{\"parts\":[");
    sl_buf_append (out, part->data, part->len);
    sl_buf_puts (out, "],\"role\":\"model\"},");
    s_chunk_close (rs, out);
}

static void
s_text_part (sl_render_stream_t *rs, sl_str_t text, bool thought, sl_buf_t *out)
{
    sl_buf_t part = { 0 };
    sl_buf_puts (&part, "{\"text\":");
    sl_json_put_sl (&part, text);
    if (thought)
        sl_buf_puts (&part, ",\"thought\":true");
    sl_buf_putc (&part, '}');
    s_part_chunk (rs, &part, out);
    sl_buf_free (&part);
}

//  Search grounding (the candidate's groundingMetadata, which the decoder
//  passes on as a citation) is not a citation source.
static bool
s_is_grounding (sl_str_t body)
{
    static const char *keys [] = {
        "groundingChunks", "groundingSupports", "webSearchQueries", "searchEntryPoint",
        "retrievalMetadata", NULL
    };
    sl_str_t value;
    for (int i = 0; keys [i]; i++)
        if (sl_json_find (body, keys [i], &value) == 1)
            return true;
    return false;
}

static void
s_citation (sl_render_stream_t *rs, sl_str_t body, sl_buf_t *out)
{
    if (!body.len || !sl_json_valid (body))
        return;
    s_chunk_open (out);
    if (sl_json_type (body) == SL_JSON_OBJECT && s_is_grounding (body)) {
        sl_buf_puts (out, "\"groundingMetadata\":");
        sl_buf_append_str (out, sl_json_trim (body));
        sl_buf_putc (out, ',');
    }
    else {
        sl_buf_puts (out, "\"citationMetadata\":{\"citationSources\":[");
        sl_buf_append_str (out, sl_json_trim (body));
        sl_buf_puts (out, "]},");
    }
    s_chunk_close (rs, out);
}

static bool
s_is_object (sl_str_t value)
{
    return value.len && sl_json_type (value) == SL_JSON_OBJECT && sl_json_valid (value);
}

static void
s_on_end (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    sl_buf_t part = { 0 };
    switch (msg->block) {
        case SL_BK_CITATION:
            break;                      //  each went out as a delta; the end lists them all
        case SL_BK_THINKING:
            if (msg->sig.len) {
                sl_buf_puts (&part, "{\"text\":\"\",\"thought\":true,\"thoughtSignature\":");
                sl_json_put_sl (&part, msg->sig);
                sl_buf_putc (&part, '}');
                s_part_chunk (rs, &part, out);
            }
            break;
        case SL_BK_TOOL_CALL:
            rs->tool_calls++;
            sl_buf_puts (&part, "{\"functionCall\":{");
            if (msg->id.len) {
                sl_buf_puts (&part, "\"id\":");
                sl_json_put_sl (&part, msg->id);
                sl_buf_putc (&part, ',');
            }
            sl_buf_puts (&part, "\"name\":");
            sl_json_put_sl (&part, msg->name);
            sl_buf_puts (&part, ",\"args\":");
            if (s_is_object (msg->text))
                sl_buf_append_str (&part, sl_json_trim (msg->text));
            else
                sl_buf_puts (&part, "{}");
            sl_buf_putc (&part, '}');
            if (msg->sig.len) {
                sl_buf_puts (&part, ",\"thoughtSignature\":");
                sl_json_put_sl (&part, msg->sig);
            }
            sl_buf_putc (&part, '}');
            s_part_chunk (rs, &part, out);
            break;
        case SL_BK_SERVER_TOOL_USE:
            sl_buf_puts (&part, "{\"executableCode\":");
            if (s_is_object (msg->text))
                sl_buf_append_str (&part, sl_json_trim (msg->text));
            else {
                sl_buf_puts (&part, "{\"language\":\"PYTHON\",\"code\":");
                sl_json_put_sl (&part, msg->text);
                sl_buf_putc (&part, '}');
            }
            sl_buf_putc (&part, '}');
            s_part_chunk (rs, &part, out);
            break;
        case SL_BK_SERVER_TOOL_RESULT:
            sl_buf_puts (&part, "{\"codeExecutionResult\":");
            if (s_is_object (msg->body))
                sl_buf_append_str (&part, sl_json_trim (msg->body));
            else {
                sl_buf_puts (&part, "{\"outcome\":\"OUTCOME_OK\",\"output\":");
                sl_json_put_sl (&part, msg->text);
                sl_buf_putc (&part, '}');
            }
            sl_buf_putc (&part, '}');
            s_part_chunk (rs, &part, out);
            break;
        default:
            break;
    }
    sl_buf_free (&part);
}

static const char *
s_finish_name (int finish)
{
    switch (finish) {
        case SL_FIN_LENGTH:         return "MAX_TOKENS";
        case SL_FIN_CONTENT_FILTER: return "SAFETY";
        default:                    return "STOP";
    }
}

static void
s_on_finish (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    char raw [32];
    const char *finish = sl_render_raw_finish (rs, msg, raw, sizeof raw);
    if (!finish)
        finish = s_finish_name (msg->finish);
    s_chunk_open (out);
    sl_buf_puts (out, "\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"},\"finishReason\":");
    sl_json_put_str (out, finish, strlen (finish));
    sl_buf_putc (out, ',');
    sl_buf_puts (out, "\"index\":0}]");
    if (msg->has_usage) {
        const sl_usage_t *u = &msg->usage;
        int64_t in = u->input > 0 ? u->input : 0, outp = u->output > 0 ? u->output : 0;
        sl_buf_printf (out, ",\"usageMetadata\":{\"promptTokenCount\":%lld,\"candidatesTokenCount\":%lld,"
                            "\"totalTokenCount\":%lld",
                       (long long) in, (long long) outp,
                       (long long) (u->total >= 0 ? u->total : in + outp));
        if (u->cache_read >= 0)
            sl_buf_printf (out, ",\"cachedContentTokenCount\":%lld", (long long) u->cache_read);
        if (u->reasoning >= 0)
            sl_buf_printf (out, ",\"thoughtsTokenCount\":%lld", (long long) u->reasoning);
        sl_buf_putc (out, '}');
    }
    sl_buf_puts (out, ",\"modelVersion\":");
    sl_json_put_sl (out, sl_buf_str (&rs->model));
    sl_buf_puts (out, ",\"responseId\":");
    if (rs->id.len)
        sl_json_put_sl (out, sl_buf_str (&rs->id));
    else
        sl_json_put_str (out, rs->sid_hex, strlen (rs->sid_hex));
    sl_buf_puts (out, "}\n\n");
    rs->finished = true;
}

static void
s_block (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (msg->kind == SL_B_KEEPALIVE) {
        if (rs->started)
            sl_buf_puts (out, ": keep-alive\n\n");
        return;
    }
    if (msg->kind == SL_B_MESSAGE)
        return;
    rs->started = true;                 //  Gemini has no opening event
    switch (msg->kind) {
        case SL_B_DELTA:
            if (msg->block == SL_BK_CITATION)
                s_citation (rs, msg->body, out);
            else
            if (msg->text.len && (msg->block == SL_BK_TEXT || msg->block == SL_BK_REFUSAL))
                s_text_part (rs, msg->text, false, out);
            else
            if (msg->text.len && msg->block == SL_BK_THINKING)
                s_text_part (rs, msg->text, true, out);
            break;
        case SL_B_END:
            s_on_end (rs, msg, out);
            break;
        case SL_B_FINISH:
            s_on_finish (rs, msg, out);
            break;
        default:
            break;
    }
}

static const char *
s_status_name (int status)
{
    switch (status) {
        case 400: return "INVALID_ARGUMENT";
        case 401: return "UNAUTHENTICATED";
        case 403: return "PERMISSION_DENIED";
        case 404: return "NOT_FOUND";
        case 405: return "UNIMPLEMENTED";
        case 413: return "INVALID_ARGUMENT";
        case 429: return "RESOURCE_EXHAUSTED";
        case 499: return "CANCELLED";
        case 502:
        case 503: return "UNAVAILABLE";
        case 504: return "DEADLINE_EXCEEDED";
        default:  return "INTERNAL";
    }
}

static void
s_error_body (int status, sl_str_t code, sl_str_t message, sl_buf_t *out)
{
    (void) code;
    if (status < 400)
        status = 500;
    sl_buf_printf (out, "{\"error\":{\"code\":%d,\"message\":", status);
    sl_json_put_sl (out, message.ptr ? message : SL_STR_LIT ("upstream error"));
    sl_buf_printf (out, ",\"status\":\"%s\"}}", s_status_name (status));
}

static void
s_error (sl_render_stream_t *rs, sl_str_t code, sl_str_t message, sl_buf_t *out)
{
    (void) rs;
    sl_buf_puts (out, "data: ");
    s_error_body (500, code, message, out);
    sl_buf_puts (out, "\n\n");
}

static void
s_end (sl_render_stream_t *rs, sl_buf_t *out)
{
    (void) rs;
    (void) out;
}

const sl_renderer_t sl_render_gemini = {
    .dialect = SL_DIALECT_GEMINI,
    .block = s_block,
    .error = s_error,
    .end = s_end,
    .error_body = s_error_body,
};
