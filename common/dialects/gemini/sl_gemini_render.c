/*  sl_gemini_render.c - judged blocks as Gemini streamGenerateContent SSE.

    Every event is one GenerateContentResponse ("data: {...}"): one
    candidate whose content holds the parts of this moment. Text and
    refusals are text parts, thinking is a text part with "thought": true
    (its signature a thoughtSignature), a tool call is one functionCall
    part with its whole arguments (Gemini sends calls whole, so a call is
    rendered at its end), server tool use and results are executableCode
    and codeExecutionResult parts, citations go in
    citationMetadata.citationSources (the Gemini API's name; the SDKs turn
    them into "citations"), grounding metadata in groundingMetadata. The
    last event carries finishReason and
    usageMetadata. Gemini has no end marker: the stream simply ends.

    Keep-alives are a bare line end, the one form no Gemini client turns
    into anything. @google/genai reads nothing but "data:" events and
    skips the whitespace between them (1.30, inside Gemini CLI: its
    pattern /^\s*data: /; 1.32 on, 2.x and 3.x: events split at blank
    lines, empty ones dropped). An SSE comment wedges 1.30: the pattern
    never matches past it, and the stream fails at its end with
    "Incomplete JSON segment at the end". A data: event reaches the
    caller as a chunk the Gemini API never sends: without a candidate or
    parts its .text is undefined (a plain loop prints "undefined"); with
    an empty text part it reaches every consumer of parts (Gemini CLI's
    AfterModel hooks, a caller that keeps the parts as history). A line
    end is bytes on the wire only, which is what resets Node's fetch
    body timeout (300 s between bytes); neither the SDK nor Gemini CLI
    has a timeout of its own by default. A
    stream that fails ends with the error object
    ({"error":{"code":..,"message":..,"status":..}}, the provider's code
    and status kept) twice: as a data: event, which the current SDKs raise
    as their ApiError at once, then bare, as the Gemini API itself ends a
    failed stream, which is the form the SDK inside Gemini CLI raises (it
    takes a data: event holding an error for a chunk without a finish).

    A non-streaming response (generateContent) is one such object with
    every part of the response in order (a part's thoughtSignature on the
    part itself), the citations, the finish reason and the usage.
*/
#include <string.h>

#include "common/base/sl_json.h"
#include "common/dialects/sl_render.h"

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
    sl_render_put_id (rs, "", out);
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

//  Append the citation sources a citation object gives, comma-joined (a
//  comma first when out is not empty): the sources of a Gemini
//  citationMetadata object (what a Gemini upstream sends), otherwise the
//  object itself as one source. Returns how many.
static int
s_put_sources (sl_str_t citation, sl_buf_t *out)
{
    sl_str_t list, elem;
    sl_json_iter_t it;
    if (!citation.len || !sl_json_valid (citation))
        return 0;
    if (sl_json_type (citation) == SL_JSON_OBJECT
    &&  (sl_json_find (citation, "citationSources", &list) == 1 || sl_json_find (citation, "citations", &list) == 1)
    &&  sl_json_array (&it, list) == 0) {
        int count = 0;
        while (sl_json_next_elem (&it, &elem) == 1) {
            if (out->len)
                sl_buf_putc (out, ',');
            sl_render_put_line_json (out, sl_json_trim (elem));
            count++;
        }
        return count;
    }
    if (out->len)
        sl_buf_putc (out, ',');
    sl_render_put_line_json (out, sl_json_trim (citation));
    return 1;
}

//  Is a citation object Gemini grounding metadata (search results and
//  what they support) rather than citation sources?
static bool
s_is_grounding (sl_str_t citation)
{
    static const char *keys [] = { "groundingChunks", "groundingSupports", "webSearchQueries",
                                   "searchEntryPoint", "retrievalMetadata", NULL };
    sl_str_t v;
    for (int i = 0; keys [i]; i++)
        if (sl_json_find (citation, keys [i], &v) == 1)
            return true;
    return false;
}

//  Sort the citation objects a block's end carries (its body
//  {"citations":[...]}): the sources of citation metadata, comma-joined
//  onto sources; grounding metadata into grounding (the last one wins, as
//  each Gemini chunk repeats the whole of it). Empty objects say nothing.
static void
s_block_sources (sl_str_t body, sl_buf_t *sources, sl_buf_t *grounding)
{
    sl_buf_t citations = { 0 };
    sl_render_put_citations (&citations, body);
    sl_str_t rest = sl_buf_str (&citations), citation, key, value;
    while (sl_render_next_citation (&rest, &citation)) {
        sl_json_iter_t it;
        if (sl_json_object (&it, citation) == 0 && sl_json_next_member (&it, &key, &value) == 0)
            continue;                   //  {}
        if (s_is_grounding (citation)) {
            sl_buf_reset (grounding);
            sl_render_put_line_json (grounding, citation);
        }
        else
            s_put_sources (citation, sources);
    }
    sl_buf_free (&citations);
}

//  The citations of a block's end: a chunk with its citation sources, and
//  one with its grounding metadata.
static void
s_citation (sl_render_stream_t *rs, sl_str_t body, sl_buf_t *out)
{
    sl_buf_t sources = { 0 }, grounding = { 0 };
    s_block_sources (body, &sources, &grounding);
    if (sources.len) {
        s_chunk_open (out);
        sl_buf_puts (out, "\"citationMetadata\":{\"citationSources\":[");
        sl_buf_append (out, sources.data, sources.len);
        sl_buf_puts (out, "]},");
        s_chunk_close (rs, out);
    }
    if (grounding.len) {
        s_chunk_open (out);
        sl_buf_puts (out, "\"groundingMetadata\":");
        sl_buf_append (out, grounding.data, grounding.len);
        sl_buf_putc (out, ',');
        s_chunk_close (rs, out);
    }
    sl_buf_free (&sources);
    sl_buf_free (&grounding);
}

static bool
s_is_object (sl_str_t value)
{
    return value.len && sl_json_type (value) == SL_JSON_OBJECT && sl_json_valid (value);
}

//  ,"thoughtSignature":.. when there is one
static void
s_put_signature (const sl_render_stream_t *rs, sl_str_t sig, sl_buf_t *part)
{
    if (sig.len) {
        sl_buf_puts (part, ",\"thoughtSignature\":");
        sl_render_put_sig (rs, sig, part);
    }
}

//  A whole functionCall part.
static void
s_call_part (const sl_render_stream_t *rs, sl_str_t id, sl_str_t name, sl_str_t args, sl_str_t sig, sl_buf_t *part)
{
    sl_buf_puts (part, "{\"functionCall\":{");
    if (id.len) {
        sl_buf_puts (part, "\"id\":");
        sl_json_put_sl (part, id);
        sl_buf_putc (part, ',');
    }
    sl_buf_puts (part, "\"name\":");
    sl_json_put_sl (part, name);
    sl_buf_puts (part, ",\"args\":");
    if (s_is_object (args))
        sl_render_put_line_json (part, sl_json_trim (args));
    else {
        //  Cut off by a length finish: closed into a value, on one line.
        sl_buf_t closed = { 0 };
        sl_render_close_json (sl_json_trim (args), &closed);
        sl_render_put_line_json (part, sl_buf_str (&closed));
        sl_buf_free (&closed);
    }
    sl_buf_putc (part, '}');
    s_put_signature (rs, sig, part);
    sl_buf_putc (part, '}');
}

//  A server tool's use: an executableCode part (its JSON, or code text).
static void
s_code_part (sl_str_t text, sl_buf_t *part)
{
    sl_buf_puts (part, "{\"executableCode\":");
    if (s_is_object (text))
        sl_render_put_line_json (part, sl_json_trim (text));
    else {
        sl_buf_puts (part, "{\"language\":\"PYTHON\",\"code\":");
        sl_json_put_sl (part, text);
        sl_buf_putc (part, '}');
    }
    sl_buf_putc (part, '}');
}

//  A server tool's result: a codeExecutionResult part.
static void
s_result_part (sl_str_t text, sl_str_t body, sl_buf_t *part)
{
    sl_buf_puts (part, "{\"codeExecutionResult\":");
    if (s_is_object (body))
        sl_render_put_line_json (part, sl_json_trim (body));
    else {
        sl_buf_puts (part, "{\"outcome\":\"OUTCOME_OK\",\"output\":");
        sl_json_put_sl (part, text);
        sl_buf_putc (part, '}');
    }
    sl_buf_putc (part, '}');
}

static void
s_block_end (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    sl_buf_t part = { 0 };
    switch (msg->block) {
        case SL_BK_CITATION:
            s_citation (rs, msg->body, out);
            break;
        case SL_BK_TEXT:
        case SL_BK_THINKING:
            //  The signature comes whole at the end: an empty part of the
            //  same kind carries it (Gemini signs text parts too).
            if (msg->sig.len) {
                sl_buf_puts (&part, msg->block == SL_BK_THINKING ? "{\"text\":\"\",\"thought\":true"
                                                                 : "{\"text\":\"\"");
                s_put_signature (rs, msg->sig, &part);
                sl_buf_putc (&part, '}');
                s_part_chunk (rs, &part, out);
            }
            if (msg->block == SL_BK_TEXT)
                s_citation (rs, msg->body, out);
            break;
        case SL_BK_TOOL_CALL:
            rs->tool_calls++;
            s_call_part (rs, sl_render_call_id (msg->id, msg->call_id), msg->name, msg->text, msg->sig, &part);
            s_part_chunk (rs, &part, out);
            break;
        case SL_BK_SERVER_TOOL_USE:
            s_code_part (msg->text, &part);
            s_part_chunk (rs, &part, out);
            break;
        case SL_BK_SERVER_TOOL_RESULT:
            s_result_part (msg->text, msg->body, &part);
            s_part_chunk (rs, &part, out);
            break;
        case SL_BK_REDACTED_THINKING:
            rs->dropped++;              //  no Gemini part carries it
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

//  ,"usageMetadata":{..} when the finish has usage; then the model and
//  the response id, closing the object.
static void
s_response_tail (const sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (msg->has_usage) {
        const sl_usage_t *u = &msg->usage;
        int64_t in = u->input > 0 ? u->input : 0, outp = u->output > 0 ? u->output : 0;
        //  Output tokens include the thoughts (as in every dialect);
        //  Gemini counts the candidates' tokens without them.
        int64_t candidates = u->reasoning > 0 && u->reasoning <= outp ? outp - u->reasoning : outp;
        sl_buf_printf (out, ",\"usageMetadata\":{\"promptTokenCount\":%lld,\"candidatesTokenCount\":%lld,"
                            "\"totalTokenCount\":%lld",
                       (long long) in, (long long) candidates,
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
    sl_render_put_id (rs, "", out);
    sl_buf_putc (out, '}');
}

static const char *
s_finish_reason (const sl_render_stream_t *rs, const sl_msg_t *msg, char *raw, size_t size)
{
    const char *finish = sl_render_raw_finish (rs, msg, raw, size);
    return finish ? finish : s_finish_name (msg->finish);
}

static void
s_finish_chunk (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    char raw [32];
    const char *finish = s_finish_reason (rs, msg, raw, sizeof raw);
    s_chunk_open (out);
    sl_buf_puts (out, "\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"},\"finishReason\":");
    sl_json_put_str (out, finish, strlen (finish));
    sl_buf_putc (out, ',');
    sl_buf_puts (out, "\"index\":0}]");
    s_response_tail (rs, msg, out);
    sl_buf_puts (out, "\n\n");
    rs->finished = true;
}

//  Text and thought parts stream as they come; Gemini has no opening
//  event, and the rest goes whole at a block's end.
static void
s_part_delta (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (msg->text.len && (msg->block == SL_BK_TEXT || msg->block == SL_BK_REFUSAL))
        s_text_part (rs, msg->text, false, out);
    else
    if (msg->text.len && msg->block == SL_BK_THINKING)
        s_text_part (rs, msg->text, true, out);
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

//  Is code a status name of the Google APIs (CANCELLED, RESOURCE_EXHAUSTED)?
static bool
s_is_status_name (sl_str_t code)
{
    if (!code.ptr || code.len == 0 || code.len > 32)
        return false;
    for (size_t i = 0; i < code.len; i++)
        if (!(code.ptr [i] >= 'A' && code.ptr [i] <= 'Z') && code.ptr [i] != '_')
            return false;
    return true;
}

//  The error object: the HTTP status as its code, the provider's status
//  name when the error came with one (a Gemini upstream's), otherwise
//  the name of the status.
static void
s_error_body (int status, sl_str_t code, sl_str_t message, sl_buf_t *out)
{
    if (status < 400 || status > 599)
        status = 500;
    sl_buf_printf (out, "{\"error\":{\"code\":%d,\"message\":", status);
    sl_json_put_sl (out, message.ptr ? message : SL_STR_LIT ("upstream error"));
    sl_buf_puts (out, ",\"status\":");
    if (s_is_status_name (code))
        sl_json_put_sl (out, code);
    else
        sl_buf_printf (out, "\"%s\"", s_status_name (status));
    sl_buf_puts (out, "}}");
}

static void
s_error (sl_render_stream_t *rs, int status, sl_str_t code, sl_str_t message, sl_buf_t *out)
{
    sl_buf_puts (out, "data: ");
    s_error_body (status, code, message, out);
    sl_buf_puts (out, "\n\n");
    //  The bare object must reach the client in a read of its own: the
    //  SDK inside Gemini CLI parses whole network chunks for it.
    sl_buf_reset (&rs->alone);
    s_error_body (status, code, message, &rs->alone);
    sl_buf_putc (&rs->alone, '\n');
}

static void
s_end (sl_render_stream_t *rs, sl_buf_t *out)
{
    (void) rs;
    (void) out;
}

//  --------------------------------------------------------------------------
//  Non-streaming: one GenerateContentResponse

static void
s_body (const sl_render_stream_t *rs, const sl_snapshot_t *snap, sl_buf_t *out)
{
    sl_buf_t parts = { 0 }, citations = { 0 }, grounding = { 0 };
    sl_snapshot_block_t b;
    for (size_t i = 0; sl_snapshot_block (snap, i, &b); i++) {
        size_t before = parts.len;
        if (parts.len)
            sl_buf_putc (&parts, ',');
        size_t at = parts.len;
        switch (b.kind) {
            case SL_BK_TEXT:
            case SL_BK_REFUSAL:
            case SL_BK_THINKING:
                sl_buf_puts (&parts, "{\"text\":");
                sl_json_put_sl (&parts, b.text);
                if (b.kind == SL_BK_THINKING)
                    sl_buf_puts (&parts, ",\"thought\":true");
                s_put_signature (rs, b.sig, &parts);
                sl_buf_putc (&parts, '}');
                break;
            case SL_BK_TOOL_CALL:
                s_call_part (rs, sl_render_call_id (b.id, b.call_id), b.name, b.text, b.sig, &parts);
                break;
            case SL_BK_SERVER_TOOL_USE:
                s_code_part (b.text, &parts);
                break;
            case SL_BK_SERVER_TOOL_RESULT:
                s_result_part (b.text, b.body, &parts);
                break;
            default:
                break;                  //  redacted thinking has no Gemini part
        }
        if (parts.len == at)
            parts.len = before;         //  no part: take the comma back
        //  Citations as a stream gives them: the sources of each citation
        //  object a text or citation block collected.
        if (b.kind == SL_BK_TEXT || b.kind == SL_BK_CITATION)
            s_block_sources (b.body, &citations, &grounding);
    }
    sl_msg_t fin;
    sl_render_snapshot_finish (snap, &fin);
    char raw [32];
    const char *finish = s_finish_reason (rs, &fin, raw, sizeof raw);
    sl_buf_puts (out, "{\"candidates\":[{\"content\":{\"parts\":[");
    if (parts.len)
        sl_buf_append (out, parts.data, parts.len);
    else
        sl_buf_puts (out, "{\"text\":\"\"}");
    sl_buf_puts (out, "],\"role\":\"model\"},\"finishReason\":");
    sl_json_put_str (out, finish, strlen (finish));
    if (citations.len) {
        sl_buf_puts (out, ",\"citationMetadata\":{\"citationSources\":[");
        sl_buf_append (out, citations.data, citations.len);
        sl_buf_puts (out, "]}");
    }
    if (grounding.len) {
        sl_buf_puts (out, ",\"groundingMetadata\":");
        sl_buf_append (out, grounding.data, grounding.len);
    }
    sl_buf_puts (out, ",\"index\":0}]");
    s_response_tail (rs, &fin, out);
    sl_buf_free (&parts);
    sl_buf_free (&citations);
    sl_buf_free (&grounding);
}

const sl_renderer_t sl_gemini_renderer = {
    //  A line end between events: the only form every Gemini client
    //  skips (see the top).
    .keepalive = "\n",
    .block = sl_render_block,
    .on_delta = s_part_delta,
    .on_end = s_block_end,
    .on_finish = s_finish_chunk,
    .error = s_error,
    .end = s_end,
    .error_body = s_error_body,
    .body = s_body,
};
