/*  Unit tests: non-streaming responses, every dialect, through the emitter
    (services/emitter: the renderers' body, sl_validate_body, the emitter's
    snapshot of a judged stream). */
#include "tests/unit/emit_driver.h"
#include "common/dialects/sl_render.h"

//  The value at a path of an object: "a.b.0.c" (numbers index arrays).
static json_t *
s_get (json_t *j, const char *path)
{
    char key [64];
    const char *p = path;
    while (j && *p) {
        size_t n = strcspn (p, ".");
        snprintf (key, sizeof key, "%.*s", (int) n, p);
        j = key [0] >= '0' && key [0] <= '9' ? json_array_get (j, (size_t) atoi (key)) : json_object_get (j, key);
        p += n + (p [n] == '.');
    }
    return j;
}

static const char *
s_str (json_t *j, const char *path)
{
    json_t *v = s_get (j, path);
    return json_is_string (v) ? json_string_value (v) : "(none)";
}

static long long
s_int (json_t *j, const char *path)
{
    json_t *v = s_get (j, path);
    return json_is_integer (v) ? json_integer_value (v) : -1;
}

//  The response of a non-streaming stream: checks the frames (progress
//  frames, then one whole response) and returns the parsed body of the
//  last one (the caller frees it), its status in *status.
static json_t *
s_response (driver_t *d, int *status)
{
    cr_assert_gt (d->rec.count, 0, "something was emitted");
    size_t frames = 0;
    sl_msg_t *last = NULL;
    for (size_t i = 0; i < d->rec.count; i++) {
        sl_msg_t *m = d->rec.msgs [i];
        if (m->type != SL_MSG_FRAME)
            continue;
        if (m->flags & SL_F_KEEPALIVE) {
            //  Time-driven: unnumbered, and empty before the response starts.
            cr_expect_eq (m->body.len, 0, "a keep-alive of a non-streaming response is empty");
            continue;
        }
        cr_expect_eq (m->seq, frames, "frames numbered from 0 without gaps");
        frames++;
        if (!(m->flags & SL_F_LAST)) {
            cr_expect_eq (m->body.len, 0, "frame %zu before the last is an empty progress frame", i);
            cr_expect_not (m->flags & SL_F_FIRST, "a progress frame is not the start of the response");
        }
        last = m;
    }
    cr_assert_not_null (last);
    cr_assert (last->flags & SL_F_LAST, "the response is complete");
    cr_expect (last->flags & SL_F_FIRST, "and is the first frame with content");
    cr_expect (sl_str_eq (last->content_type, "application/json"), "a JSON body");
    *status = last->status;
    json_error_t jerr;
    json_t *body = json_loadb (last->body.ptr, last->body.len, 0, &jerr);
    cr_assert_not_null (body, "the body is JSON: %.*s", (int) last->body.len, last->body.ptr);
    return body;
}

static void
s_full (int dialect, const char *finish_raw, driver_t *d)
{
    driver_start (d, dialect, 0);
    driver_full_response (d, finish_raw);
    cr_expect_eq (sl_emitter_stats (d->em)->illegal, 0, "the body passed its check: %s", driver_bytes (d));
    cr_expect_eq (sl_emitter_stats (d->em)->events_out, 1, "one body");
    cr_expect_eq (sl_emitter_streams (d->em), 0, "the stream is forgotten at its end");
}

Test (sl_render_body, openai_chat_completion)
{
    driver_t d;
    s_full (SL_DIALECT_OPENAI, "tool_calls", &d);
    int status;
    json_t *b = s_response (&d, &status);
    cr_expect_eq (status, 200);
    cr_expect_str_eq (s_str (b, "object"), "chat.completion");
    cr_expect_str_eq (s_str (b, "id"), "resp-id-1");
    cr_expect_str_eq (s_str (b, "model"), "real-model");
    cr_expect_eq (s_int (b, "created"), 1700000000);
    cr_expect_eq (json_array_size (s_get (b, "choices")), 1);
    cr_expect_str_eq (s_str (b, "choices.0.message.role"), "assistant");
    cr_expect_str_eq (s_str (b, "choices.0.message.content"), "Paris is sunny \"today\".blocked run_shell",
                      "the text blocks joined, the judge's notice in its place");
    cr_expect_str_eq (s_str (b, "choices.0.message.reasoning_content"), "Let me think.");
    cr_expect (json_is_null (s_get (b, "choices.0.message.refusal")));
    cr_expect_str_eq (s_str (b, "choices.0.message.annotations.0.url"), "https://example.org");
    cr_expect_eq (json_array_size (s_get (b, "choices.0.message.tool_calls")), 1);
    cr_expect_str_eq (s_str (b, "choices.0.message.tool_calls.0.id"), "call_w1");
    cr_expect_str_eq (s_str (b, "choices.0.message.tool_calls.0.type"), "function");
    cr_expect_str_eq (s_str (b, "choices.0.message.tool_calls.0.function.name"), "get_weather");
    cr_expect_str_eq (s_str (b, "choices.0.message.tool_calls.0.function.arguments"), "{\"city\":\"Paris\"}");
    cr_expect_str_eq (s_str (b, "choices.0.finish_reason"), "tool_calls");
    cr_expect_eq (s_int (b, "usage.prompt_tokens"), 40);
    cr_expect_eq (s_int (b, "usage.completion_tokens"), 25);
    cr_expect_eq (s_int (b, "usage.total_tokens"), 65);
    cr_expect_eq (s_int (b, "usage.prompt_tokens_details.cached_tokens"), 8);
    cr_expect_eq (s_int (b, "usage.completion_tokens_details.reasoning_tokens"), 5);
    json_decref (b);
    driver_stop (&d);
}

Test (sl_render_body, anthropic_message)
{
    driver_t d;
    s_full (SL_DIALECT_ANTHROPIC, "tool_use", &d);
    int status;
    json_t *b = s_response (&d, &status);
    cr_expect_eq (status, 200);
    cr_expect_str_eq (s_str (b, "type"), "message");
    cr_expect_str_eq (s_str (b, "id"), "resp-id-1");
    cr_expect_str_eq (s_str (b, "role"), "assistant");
    cr_expect_str_eq (s_str (b, "model"), "real-model");
    cr_assert_eq (json_array_size (s_get (b, "content")), 4);
    cr_expect_str_eq (s_str (b, "content.0.type"), "thinking");
    cr_expect_str_eq (s_str (b, "content.0.thinking"), "Let me think.");
    cr_expect_str_eq (s_str (b, "content.0.signature"), "sig-abc");
    cr_expect_str_eq (s_str (b, "content.1.type"), "text");
    cr_expect_str_eq (s_str (b, "content.1.text"), "Paris is sunny \"today\".");
    cr_expect_str_eq (s_str (b, "content.1.citations.0.url"), "https://example.org");
    cr_expect_str_eq (s_str (b, "content.2.text"), "blocked run_shell", "the notice comes before the call");
    cr_expect_str_eq (s_str (b, "content.3.type"), "tool_use");
    cr_expect_str_eq (s_str (b, "content.3.id"), "call_w1");
    cr_expect_str_eq (s_str (b, "content.3.name"), "get_weather");
    cr_expect_str_eq (s_str (b, "content.3.input.city"), "Paris", "input is the arguments as an object");
    cr_expect_str_eq (s_str (b, "stop_reason"), "tool_use");
    cr_expect (json_is_null (s_get (b, "stop_sequence")));
    cr_expect_eq (s_int (b, "usage.input_tokens"), 40);
    cr_expect_eq (s_int (b, "usage.output_tokens"), 25);
    cr_expect_eq (s_int (b, "usage.cache_read_input_tokens"), 8);
    cr_expect_eq (s_int (b, "usage.cache_creation_input_tokens"), 3);
    json_decref (b);
    driver_stop (&d);
}

Test (sl_render_body, anthropic_server_tools_redacted_thinking_stop_sequence)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_ANTHROPIC, 0);
    driver_server_tools_response (&d);
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0);
    int status;
    json_t *b = s_response (&d, &status);
    cr_assert_eq (json_array_size (s_get (b, "content")), 4);
    cr_expect_str_eq (s_str (b, "content.0.type"), "redacted_thinking");
    cr_expect_str_eq (s_str (b, "content.0.data"), "opaque==");
    cr_expect_str_eq (s_str (b, "content.1.type"), "server_tool_use");
    cr_expect_str_eq (s_str (b, "content.1.id"), "srvtoolu_1");
    cr_expect_str_eq (s_str (b, "content.1.input.query"), "x");
    cr_expect_str_eq (s_str (b, "content.2.type"), "web_search_tool_result");
    cr_expect_str_eq (s_str (b, "content.2.tool_use_id"), "srvtoolu_1");
    cr_expect_str_eq (s_str (b, "content.2.content.0.url"), "https://example.org");
    cr_expect_str_eq (s_str (b, "content.3.text"), "done");
    cr_expect_str_eq (s_str (b, "stop_reason"), "stop_sequence");
    cr_expect_str_eq (s_str (b, "stop_sequence"), "STOP!");
    cr_expect_eq (s_int (b, "usage.input_tokens"), 0, "a whole message always has its token counts");
    cr_expect_eq (s_int (b, "usage.output_tokens"), 0);
    json_decref (b);
    driver_stop (&d);
}

Test (sl_render_body, responses_response)
{
    driver_t d;
    s_full (SL_DIALECT_RESPONSES, NULL, &d);
    int status;
    json_t *b = s_response (&d, &status);
    cr_expect_eq (status, 200);
    cr_expect_str_eq (s_str (b, "object"), "response");
    cr_expect_str_eq (s_str (b, "id"), "resp-id-1");
    cr_expect_str_eq (s_str (b, "status"), "completed");
    cr_expect_eq (s_int (b, "created_at"), 1700000000);
    cr_assert_eq (json_array_size (s_get (b, "output")), 4);
    cr_expect_str_eq (s_str (b, "output.0.type"), "reasoning");
    cr_expect_str_eq (s_str (b, "output.0.content.0.text"), "Let me think.");
    cr_expect_str_eq (s_str (b, "output.0.encrypted_content"), "sig-abc");
    cr_expect_str_eq (s_str (b, "output.1.type"), "message");
    cr_expect_str_eq (s_str (b, "output.1.status"), "completed");
    cr_expect_str_eq (s_str (b, "output.1.content.0.type"), "output_text");
    cr_expect_str_eq (s_str (b, "output.1.content.0.text"), "Paris is sunny \"today\".");
    cr_expect_str_eq (s_str (b, "output.1.content.0.annotations.0.url"), "https://example.org");
    cr_expect_str_eq (s_str (b, "output.2.type"), "function_call");
    cr_expect_str_eq (s_str (b, "output.2.call_id"), "call_w1");
    cr_expect_str_eq (s_str (b, "output.2.name"), "get_weather");
    cr_expect_str_eq (s_str (b, "output.2.arguments"), "{\"city\":\"Paris\"}");
    cr_expect_str_eq (s_str (b, "output.3.content.0.text"), "blocked run_shell");
    cr_expect_eq (s_int (b, "usage.input_tokens"), 40);
    cr_expect_eq (s_int (b, "usage.output_tokens"), 25);
    cr_expect_eq (s_int (b, "usage.input_tokens_details.cached_tokens"), 8);
    cr_expect_eq (s_int (b, "usage.output_tokens_details.reasoning_tokens"), 5);
    json_decref (b);
    driver_stop (&d);
}

Test (sl_render_body, gemini_generate_content_response)
{
    driver_t d;
    s_full (SL_DIALECT_GEMINI, NULL, &d);
    int status;
    json_t *b = s_response (&d, &status);
    cr_expect_eq (status, 200);
    cr_expect_eq (json_array_size (s_get (b, "candidates")), 1);
    cr_assert_eq (json_array_size (s_get (b, "candidates.0.content.parts")), 4);
    cr_expect_str_eq (s_str (b, "candidates.0.content.role"), "model");
    cr_expect_str_eq (s_str (b, "candidates.0.content.parts.0.text"), "Let me think.");
    cr_expect (json_is_true (s_get (b, "candidates.0.content.parts.0.thought")));
    cr_expect_str_eq (s_str (b, "candidates.0.content.parts.0.thoughtSignature"), "sig-abc");
    cr_expect_str_eq (s_str (b, "candidates.0.content.parts.1.text"), "Paris is sunny \"today\".");
    cr_expect_str_eq (s_str (b, "candidates.0.content.parts.2.functionCall.name"), "get_weather");
    cr_expect_str_eq (s_str (b, "candidates.0.content.parts.2.functionCall.args.city"), "Paris");
    cr_expect_str_eq (s_str (b, "candidates.0.content.parts.3.text"), "blocked run_shell");
    cr_expect_str_eq (s_str (b, "candidates.0.finishReason"), "STOP");
    cr_expect_str_eq (s_str (b, "candidates.0.citationMetadata.citationSources.0.url"), "https://example.org");
    cr_expect_eq (s_int (b, "usageMetadata.promptTokenCount"), 40);
    cr_expect_eq (s_int (b, "usageMetadata.candidatesTokenCount"), 20, "without the 5 thought tokens");
    cr_expect_eq (s_int (b, "usageMetadata.thoughtsTokenCount"), 5);
    cr_expect_str_eq (s_str (b, "responseId"), "resp-id-1");
    cr_expect_str_eq (s_str (b, "modelVersion"), "real-model");
    json_decref (b);
    driver_stop (&d);
}

//  A Gemini upstream's citationMetadata becomes the sources themselves,
//  not a source holding sources.
Test (sl_render_body, gemini_citation_metadata_is_flattened)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_GEMINI, 0);
    driver_feed (&d, driver_block (SL_B_START, SL_BK_TEXT, 0));
    sl_msg_t m = driver_block (SL_B_END, SL_BK_TEXT, 0);
    m.text = sl_str ("cited");
    m.body = sl_str ("{\"citations\":[{\"citationSources\":[{\"uri\":\"https://a.example\"},{\"uri\":\"https://b.example\"}]}]}");
    driver_feed (&d, m);
    m = driver_block (SL_B_FINISH, 0, -1);
    m.finish = SL_FIN_CONTENT_FILTER;
    m.finish_raw = sl_str ("RECITATION");
    driver_feed (&d, m);
    driver_end (&d);
    int status;
    json_t *b = s_response (&d, &status);
    cr_expect_eq (json_array_size (s_get (b, "candidates.0.citationMetadata.citationSources")), 2);
    cr_expect_str_eq (s_str (b, "candidates.0.citationMetadata.citationSources.1.uri"), "https://b.example");
    cr_expect_str_eq (s_str (b, "candidates.0.finishReason"), "RECITATION", "the upstream's own reason passes");
    json_decref (b);
    driver_stop (&d);
}

//  Every call blocked: the judge fixed the finish (stop, no raw value);
//  each body says the turn is over, with the notice as its text.
Test (sl_render_body, a_blocked_call_leaves_a_finished_turn)
{
    const int dialects [] = { SL_DIALECT_OPENAI, SL_DIALECT_ANTHROPIC, SL_DIALECT_RESPONSES, SL_DIALECT_GEMINI };
    const char *finish_path [] = { "choices.0.finish_reason", "stop_reason", "status", "candidates.0.finishReason" };
    const char *finish [] = { "stop", "end_turn", "completed", "STOP" };
    for (int i = 0; i < 4; i++) {
        driver_t d;
        driver_start (&d, dialects [i], 0);
        sl_msg_t m = driver_block (SL_B_START, SL_BK_TEXT, 0);
        m.flags = SL_F_REPLACED;
        driver_feed (&d, m);
        m = driver_block (SL_B_DELTA, SL_BK_TEXT, 0);
        m.text = sl_str ("sluice blocked run_shell");
        driver_feed (&d, m);
        driver_feed (&d, driver_block (SL_B_KEEPALIVE, 0, -1));
        m = driver_block (SL_B_END, SL_BK_TEXT, 0);
        m.text = sl_str ("sluice blocked run_shell");
        m.flags = SL_F_REPLACED;
        driver_feed (&d, m);
        m = driver_block (SL_B_FINISH, 0, -1);
        m.finish = SL_FIN_STOP;
        driver_feed (&d, m);
        driver_end (&d);
        cr_expect_eq (sl_emitter_stats (d.em)->illegal, 0, "dialect %d", dialects [i]);
        cr_expect_eq (d.rec.count, 6, "dialect %d: one progress frame per block event, and the keep-alive's "
                      "unnumbered empty frame", dialects [i]);
        int status;
        json_t *b = s_response (&d, &status);
        cr_expect_str_eq (s_str (b, finish_path [i]), finish [i], "dialect %d", dialects [i]);
        char *text = json_dumps (b, 0);
        cr_expect_not_null (strstr (text, "sluice blocked run_shell"), "dialect %d", dialects [i]);
        free (text);
        json_decref (b);
        driver_stop (&d);
    }
}

//  An error before the end, even after content: an HTTP error in the
//  dialect with the error's status; nothing else is sent.
Test (sl_render_body, an_error_is_an_http_error)
{
    const int dialects [] = { SL_DIALECT_OPENAI, SL_DIALECT_ANTHROPIC, SL_DIALECT_RESPONSES, SL_DIALECT_GEMINI };
    for (int i = 0; i < 4; i++) {
        driver_t d;
        driver_start (&d, dialects [i], 0);
        driver_feed (&d, driver_block (SL_B_START, SL_BK_TEXT, 0));
        sl_msg_t m = driver_block (SL_B_DELTA, SL_BK_TEXT, 0);
        m.text = sl_str ("partial");
        driver_feed (&d, m);
        sl_msg_t err = recorder_msg (SL_MSG_ERROR, 0);
        err.code = sl_str ("overloaded_error");
        err.message = sl_str ("the upstream went away");
        err.status = 529;
        driver_feed (&d, err);
        driver_end (&d);
        int status;
        json_t *b = s_response (&d, &status);
        cr_expect_eq (status, 529, "dialect %d: the error's status", dialects [i]);
        cr_expect_str_eq (s_str (b, "error.message"), "the upstream went away", "dialect %d", dialects [i]);
        cr_expect_null (strstr (driver_bytes (&d), "partial"), "nothing of the unfinished response");
        cr_expect_eq (sl_emitter_stats (d.em)->http_errors, 1);
        json_decref (b);
        driver_stop (&d);
    }
}

//  The stream ended without a finish: never a 200.
Test (sl_render_body, a_response_without_its_finish_is_a_502)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_ANTHROPIC, 0);
    driver_feed (&d, driver_block (SL_B_START, SL_BK_TEXT, 0));
    sl_msg_t m = driver_block (SL_B_END, SL_BK_TEXT, 0);
    m.text = sl_str ("cut");
    driver_feed (&d, m);
    driver_end (&d);
    int status;
    json_t *b = s_response (&d, &status);
    cr_expect_eq (status, 502);
    cr_expect_str_eq (s_str (b, "type"), "error");
    cr_expect_not_null (strstr (s_str (b, "error.message"), "before its finish"), "%s", s_str (b, "error.message"));
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 1, "counted as withheld");
    json_decref (b);
    driver_stop (&d);
}

//  A body that would break the client is withheld: an HTTP 502 in the
//  dialect, counted, and an error for monitoring.
Test (sl_render_body, an_illegal_body_is_withheld)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_OPENAI, 0);
    sl_msg_t m = driver_block (SL_B_START, SL_BK_TOOL_CALL, 0);
    m.id = sl_str ("call_1");
    driver_feed (&d, m);
    m = driver_block (SL_B_END, SL_BK_TOOL_CALL, 0);
    m.id = sl_str ("call_1");
    m.text = sl_str ("{}");
    driver_feed (&d, m);                //  a call without a name
    m = driver_block (SL_B_FINISH, 0, -1);
    m.finish = SL_FIN_TOOL_CALLS;
    driver_feed (&d, m);
    driver_end (&d);
    int status;
    json_t *b = s_response (&d, &status);
    cr_expect_eq (status, 502);
    cr_expect_str_eq (s_str (b, "error.type"), "illegal_output");
    cr_expect_not_null (strstr (s_str (b, "error.message"), "without id, type function, name"), "%s",
                        s_str (b, "error.message"));
    cr_expect_eq (sl_emitter_stats (d.em)->illegal, 1);
    bool reported = false;
    for (size_t i = 0; i < d.rec.count; i++)
        reported |= d.rec.msgs [i]->type == SL_MSG_ERROR && sl_str_eq (d.rec.msgs [i]->code, "illegal_output");
    cr_expect (reported, "monitoring hears why");
    json_decref (b);
    driver_stop (&d);
}

//  A replay (a new epoch) starts the response over: the same frames, from 0.
Test (sl_render_body, a_replay_renders_the_same_frames)
{
    driver_t d;
    driver_start (&d, SL_DIALECT_RESPONSES, 0);
    driver_feed (&d, driver_block (SL_B_START, SL_BK_TEXT, 0));
    sl_msg_t m = driver_block (SL_B_DELTA, SL_BK_TEXT, 0);
    m.text = sl_str ("first try");
    driver_feed (&d, m);
    size_t before = d.rec.count;
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    start.epoch = 1;
    start.client_dialect = SL_DIALECT_RESPONSES;
    start.upstream_dialect = SL_DIALECT_RESPONSES;
    start.model = sl_str ("asked-model");
    start.reply_to = sl_str ("tcp://gw:1");
    driver_feed (&d, start);
    const int kinds [] = { SL_B_START, SL_B_DELTA, SL_B_END, SL_B_FINISH };
    for (int k = 0; k < 4; k++) {
        m = driver_block (kinds [k], kinds [k] == SL_B_FINISH ? 0 : SL_BK_TEXT, kinds [k] == SL_B_FINISH ? -1 : 0);
        m.epoch = 1;
        m.text = sl_str ("first try");
        m.finish = SL_FIN_STOP;
        driver_feed (&d, m);
    }
    sl_msg_t end = recorder_msg (SL_MSG_END, 0);
    end.epoch = 1;
    driver_feed (&d, end);
    cr_assert_eq (d.rec.count, before + 5, "four progress frames and the body, not %zu", d.rec.count - before);
    for (size_t i = before; i < d.rec.count; i++) {
        cr_expect_eq (d.rec.msgs [i]->epoch, 1);
        cr_expect_eq (d.rec.msgs [i]->seq, i - before, "numbered from 0 again");
    }
    sl_msg_t *last = d.rec.msgs [d.rec.count - 1];
    cr_expect (last->flags & SL_F_FIRST && last->flags & SL_F_LAST);
    json_t *b = json_loadb (last->body.ptr, last->body.len, 0, NULL);
    cr_expect_str_eq (s_str (b, "output.0.content.0.text"), "first try");
    json_decref (b);
    driver_stop (&d);
}

//  Arguments cut off by a length finish, closed the way the SDKs read a
//  streamed call's partial input.
Test (sl_render_body, cut_off_arguments_are_closed)
{
    const char *cases [][2] = {
        { "{\"f\": \"taxes.txt\", \"lines\": [\n\"# A\",\n\"\",\n\"Filing taxes", "{\"f\": \"taxes.txt\", \"lines\": [\n\"# A\",\n\"\"]}" },
        { "{\"a\":\"x\",\"b", "{\"a\":\"x\"}" },
        { "{\"a\":", "{}" },
        { "{\"a\":12", "{}" },
        { "{\"a\":12,", "{\"a\":12}" },
        { "{\"a\":{\"b\":[true,nul", "{\"a\":{\"b\":[true]}}" },
        { "{\"a\":[{}", "{\"a\":[{}]}" },
        { "{\"a\":\"q\\\"", "{}" },
        { "[1,2", "{}" },
        { "", "{}" },
        { "{\"done\":1} trailing", "{\"done\":1}" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases [0]; i++) {
        sl_buf_t out = { 0 };
        sl_render_close_json (sl_str (cases [i][0]), &out);
        cr_expect_str_eq (sl_buf_cstr (&out), cases [i][1], "case %zu", i);
        sl_buf_free (&out);
    }
}
