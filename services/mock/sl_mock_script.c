/*  sl_mock_script.c - scripted OpenAI-format streams (see sl_mock_script.h). */
#include "sl_mock_script.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/sl_alloc.h"
#include "../../common/sl_json.h"

#define MOCK_CREATED 1767225600         //  fixed "created" stamp (2026-01-01)

const char *sl_mock_scenarios [] = { "mock-text", "mock-tools", "mock-error", "mock-bench", NULL };

static const char *s_text_words [] = {
    "Hello", "! This", " is", " the", " mock", " upstream", " of", " sluice", ".",
    " It", " streams", " a", " few", " sentences", ",", " one", " small", " piece",
    " at", " a", " time", ",", " so", " you", " can", " watch", " the", " proxy",
    " work", ".", NULL
};

typedef struct {
    sl_mock_script_t *script;
    char id [64];
    sl_str_t model;
} s_ctx_t;

static uint64_t
s_fnv1a (sl_str_t s)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < s.len; i++) {
        h ^= (unsigned char) s.ptr [i];
        h *= 1099511628211ULL;
    }
    return h;
}

static sl_buf_t *
s_new_event (s_ctx_t *ctx)
{
    sl_mock_script_t *sc = ctx->script;
    sc->events = sl_xrealloc (sc->events, (sc->count + 1) * sizeof (sl_buf_t));
    sl_buf_t *e = &sc->events [sc->count++];
    memset (e, 0, sizeof *e);
    return e;
}

//  A chunk with one choice: delta JSON (without braces) and finish reason.
static void
s_chunk (s_ctx_t *ctx, const char *delta, const char *finish)
{
    sl_buf_t *e = s_new_event (ctx);
    sl_buf_printf (e, "data: {\"id\":\"%s\",\"object\":\"chat.completion.chunk\",\"created\":%d,\"model\":",
                   ctx->id, MOCK_CREATED);
    sl_json_put_sl (e, ctx->model);
    sl_buf_printf (e, ",\"choices\":[{\"index\":0,\"delta\":{%s},\"finish_reason\":", delta);
    if (finish)
        sl_buf_printf (e, "\"%s\"", finish);
    else
        sl_buf_puts (e, "null");
    sl_buf_puts (e, "}]}\n\n");
}

static void
s_text (s_ctx_t *ctx, const char *text)
{
    sl_buf_t delta = { 0 };
    sl_buf_puts (&delta, "\"content\":");
    sl_json_put_str (&delta, text, strlen (text));
    s_chunk (ctx, sl_buf_cstr (&delta), NULL);
    sl_buf_free (&delta);
}

static void
s_tool_start (s_ctx_t *ctx, int index, const char *id, const char *name)
{
    sl_buf_t delta = { 0 };
    sl_buf_printf (&delta, "\"tool_calls\":[{\"index\":%d,\"id\":\"%s\",\"type\":\"function\","
                           "\"function\":{\"name\":\"%s\",\"arguments\":\"\"}}]", index, id, name);
    s_chunk (ctx, sl_buf_cstr (&delta), NULL);
    sl_buf_free (&delta);
}

static void
s_tool_args (s_ctx_t *ctx, int index, const char *fragment)
{
    sl_buf_t delta = { 0 };
    sl_buf_printf (&delta, "\"tool_calls\":[{\"index\":%d,\"function\":{\"arguments\":", index);
    sl_json_put_str (&delta, fragment, strlen (fragment));
    sl_buf_puts (&delta, "}}]");
    s_chunk (ctx, sl_buf_cstr (&delta), NULL);
    sl_buf_free (&delta);
}

static void
s_usage (s_ctx_t *ctx, int prompt, int completion)
{
    sl_buf_t *e = s_new_event (ctx);
    sl_buf_printf (e, "data: {\"id\":\"%s\",\"object\":\"chat.completion.chunk\",\"created\":%d,\"model\":",
                   ctx->id, MOCK_CREATED);
    sl_json_put_sl (e, ctx->model);
    sl_buf_printf (e, ",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,"
                      "\"total_tokens\":%d}}\n\n", prompt, completion, prompt + completion);
}

static void
s_done (s_ctx_t *ctx)
{
    sl_buf_puts (s_new_event (ctx), "data: [DONE]\n\n");
}

int
sl_mock_script_build (sl_str_t model, sl_str_t request_body, long chunks, sl_mock_script_t *out)
{
    memset (out, 0, sizeof *out);
    s_ctx_t ctx = { .script = out, .model = model };
    snprintf (ctx.id, sizeof ctx.id, "chatcmpl-mock%016llx",
              (unsigned long long) s_fnv1a (request_body));
    out->status = 200;
    s_chunk (&ctx, "\"role\":\"assistant\",\"content\":\"\"", NULL);
    if (sl_str_eq (model, "mock-text")) {
        for (int i = 0; s_text_words [i]; i++)
            s_text (&ctx, s_text_words [i]);
        s_chunk (&ctx, "", "stop");
        s_usage (&ctx, 12, 30);
        s_done (&ctx);
    }
    else
    if (sl_str_eq (model, "mock-tools")) {
        s_text (&ctx, "Let me check");
        s_text (&ctx, " the weather and tidy up.");
        s_tool_start (&ctx, 0, "call_weather_1", "get_weather");
        s_tool_args (&ctx, 0, "{\"ci");
        s_tool_args (&ctx, 0, "ty\":\"Pa");
        s_tool_args (&ctx, 0, "ris\"}");
        s_tool_start (&ctx, 1, "call_shell_1", "run_shell");
        s_tool_args (&ctx, 1, "{\"comm");
        s_tool_args (&ctx, 1, "and\":\"rm -rf");
        s_tool_args (&ctx, 1, " /\"}");
        s_chunk (&ctx, "", "tool_calls");
        s_usage (&ctx, 40, 25);
        s_done (&ctx);
    }
    else
    if (sl_str_eq (model, "mock-bench")) {
        if (chunks <= 0)
            chunks = SL_MOCK_BENCH_CHUNKS;
        if (chunks > SL_MOCK_BENCH_MAX)
            chunks = SL_MOCK_BENCH_MAX;
        char word [32];
        for (long i = 0; i < chunks; i++) {
            snprintf (word, sizeof word, "tok%ld ", i);
            s_text (&ctx, word);
        }
        s_tool_start (&ctx, 0, "call_bench_1", "get_weather");
        s_tool_args (&ctx, 0, "{\"ci");
        s_tool_args (&ctx, 0, "ty\":\"Pa");
        s_tool_args (&ctx, 0, "ris\"}");
        s_tool_start (&ctx, 1, "call_bench_2", "read_file");
        s_tool_args (&ctx, 1, "{\"pa");
        s_tool_args (&ctx, 1, "th\":\"/tmp/");
        s_tool_args (&ctx, 1, "notes.txt\"}");
        s_chunk (&ctx, "", "tool_calls");
        s_usage (&ctx, 100, (int) (chunks < 1000000 ? chunks : 1000000));
        s_done (&ctx);
    }
    else
    if (sl_str_eq (model, "mock-error")) {
        s_text (&ctx, "This answer");
        s_text (&ctx, " will not");
        sl_buf_puts (s_new_event (&ctx),
                     "data: {\"error\":{\"message\":\"The mock upstream failed mid-stream.\","
                     "\"type\":\"server_error\",\"param\":null,\"code\":\"mock_failure\"}}\n\n");
    }
    else {
        sl_mock_script_clear (out);
        out->status = 404;
        sl_buf_puts (&out->error_body, "{\"error\":{\"message\":\"The model ");
        sl_json_put_escaped (&out->error_body, model.ptr ? model.ptr : "", model.len);
        sl_buf_puts (&out->error_body, " does not exist on the mock upstream (try mock-text, mock-bench, "
                                       "mock-tools or mock-error).\",\"type\":\"invalid_request_error\","
                                       "\"param\":\"model\",\"code\":\"model_not_found\"}}");
    }
    return 0;
}

void
sl_mock_script_clear (sl_mock_script_t *self)
{
    for (size_t i = 0; i < self->count; i++)
        sl_buf_free (&self->events [i]);
    free (self->events);
    sl_buf_free (&self->error_body);
    memset (self, 0, sizeof *self);
}
