/*  sl_mock_script.c - scripted streams in every dialect (see
    sl_mock_script.h).

    A scenario is written once, as steps (text, a tool call's start and
    argument fragments, the finish, a failure); the renderer of the
    provider the request called (sl_mock_provider.h) turns the steps into
    that provider's events, keeping what the format needs (open blocks or
    items, accumulated text for "done" events, Gemini's whole calls).
*/
#include "services/mock/sl_mock_script.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "services/mock/sl_mock_provider.h"

#define MOCK_DROP_EVENTS 2              //  events mock-drop sends whole
#define MOCK_429_PREFIX "mock-429-"     //  mock-429-<s>: a 429 asking to wait s seconds
#define MOCK_RETRY_AFTER_MAX 86400      //  the longest wait it asks for
#define MOCK_STALL_EVENTS 3             //  events mock-stall sends
#define MOCK_HUGE_PIECE 65536           //  bytes of padding per event of mock-danger-huge
#define MOCK_HUGE_WORD "PADDING-"       //  what the padding is made of

const char *sl_mock_scenarios [] = {
    "mock-text", "mock-tools", "mock-error", "mock-bench", "mock-burst", "mock-paced", "mock-stall", "mock-hang",
    "mock-drop", "mock-garbage", "mock-429", "mock-529", "mock-500", "mock-flaky", "mock-danger-length",
    "mock-danger-error", "mock-danger-eof", "mock-danger-huge", "mock-bad-utf8", "mock-filtered", NULL
};

static const char *s_text_words [] = {
    "Hello", "! This", " is", " the", " mock", " upstream", " of", " sluice", ".",
    " It", " streams", " a", " few", " sentences", ",", " one", " small", " piece",
    " at", " a", " time", ",", " so", " you", " can", " watch", " the", " proxy",
    " work", ".", NULL
};

//  A script being built: the provider's renderer, what it writes into
//  (the script's events), the script.
typedef struct {
    const sl_mock_render_t *render;
    sl_mock_out_t out;
    sl_mock_script_t *script;
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

//  Start a script of a dialect: NULL when the mock plays no provider of it.
static const sl_mock_render_t *
s_start (s_ctx_t *ctx, int dialect, sl_str_t model, sl_str_t request_body, sl_mock_script_t *out)
{
    memset (out, 0, sizeof *out);
    const sl_mock_provider_t *provider = sl_mock_provider_get (dialect);
    if (!provider)
        return NULL;
    *ctx = (s_ctx_t) {
        .render = provider->render, .script = out,
        .out = { .events = &out->events, .count = &out->count, .hash = s_fnv1a (request_body), .model = model }
    };
    out->status = 200;
    out->content_type = provider->content_type;
    return provider->render;
}

//  The steps, each as the provider renders it.
static void
s_begin (s_ctx_t *ctx)
{
    ctx->render->begin (&ctx->out);
}

static void
s_text (s_ctx_t *ctx, const char *text)
{
    ctx->render->text (&ctx->out, text);
}

static void
s_finish (s_ctx_t *ctx, const char *reason, int input, int output)
{
    ctx->render->finish (&ctx->out, reason, input, output);
}

static void
s_fail (s_ctx_t *ctx)
{
    ctx->render->fail (&ctx->out);
}

static void
s_tool_string (s_ctx_t *ctx, int index, const char *json, const char *key, const char *value, bool more)
{
    if (ctx->render->tool_string)
        ctx->render->tool_string (&ctx->out, index, json, key, value, more);
    else
        ctx->render->tool_args (&ctx->out, index, json);    //  arguments stream as JSON text
}

//  The body ends: a provider that holds nothing back just stops.
static void
s_eof (s_ctx_t *ctx)
{
    if (ctx->render->eof)
        ctx->render->eof (&ctx->out);
}

//  A failure mid-stream as the provider's API itself ends a failed stream
//  (its fail_as_api), or else its error event.
static void
s_fail_as_api (s_ctx_t *ctx)
{
    if (ctx->render->fail_as_api)
        ctx->render->fail_as_api (&ctx->out);
    else
        s_fail (ctx);
}

//  --------------------------------------------------------------------------
//  Scenarios

static void
s_tool (s_ctx_t *ctx, int index, const char *id, const char *name, const char *const *fragments)
{
    ctx->render->tool_start (&ctx->out, index, id, name);
    for (int i = 0; fragments [i]; i++)
        ctx->render->tool_args (&ctx->out, index, fragments [i]);
}

static const char *const s_weather [] = { "{\"ci", "ty\":\"Pa", "ris\"}", NULL };
static const char *const s_shell [] = { "{\"comm", "and\":\"rm -rf", " /\"}", NULL };
static const char *const s_notes [] = { "{\"pa", "th\":\"/tmp/", "notes.txt\"}", NULL };
//  mock-bad-utf8: bytes that are not UTF-8 (a stray byte, a cut sequence,
//  an encoded surrogate) and lone surrogate escapes, in text, a tool
//  call's id, name and arguments.
static const char *const s_bad_args [] = { "{\"city\":\"Pa\xff", "ris \\ud800 \xed\xa0\x80\"}", NULL };
#define MOCK_BAD_TEXT "Bad bytes \xff\xfe, a cut \xe2\x82 sequence, an encoded surrogate \xed\xa0\x80, " \
                      "a lone escape \\ud800 and a low one \\udc00 alone."

//  The dangerous call, whole: run_shell {"command":"rm -rf /"}, then the
//  cut that ends the response (length, error, eof), in a mock-danger-*.
static void
s_scenario_danger (s_ctx_t *ctx, const char *how)
{
    s_begin (ctx);
    s_text (ctx, "Cleaning up.");
    s_tool (ctx, 0, "danger_1", "run_shell", s_shell);
    if (strcmp (how, "length") == 0)
        s_finish (ctx, "length", 30, 20);
    else
    if (strcmp (how, "error") == 0)
        s_fail (ctx);
    else
        s_eof (ctx);
}

//  mock-danger-huge: run_shell {"command":"rm -rf /","note":"PADDING-…"}
//  whose note is kib KiB long, in pieces of MOCK_HUGE_PIECE bytes; a
//  whole call, then a normal finish.
static void
s_scenario_huge (s_ctx_t *ctx, long kib)
{
    s_begin (ctx);
    s_text (ctx, "Cleaning up.");
    ctx->render->tool_start (&ctx->out, 0, "danger_1", "run_shell");
    s_tool_string (ctx, 0, "{\"command\":\"rm -rf /\"", "command", "rm -rf /", false);
    sl_buf_t piece = { 0 };
    while (piece.len < MOCK_HUGE_PIECE)
        sl_buf_puts (&piece, MOCK_HUGE_WORD);
    sl_buf_t json = { 0 };
    sl_buf_puts (&json, ",\"note\":\"");
    for (long sent = 0; sent < kib * 1024; sent += MOCK_HUGE_PIECE) {
        sl_buf_append (&json, piece.data, piece.len);
        s_tool_string (ctx, 0, sl_buf_cstr (&json), "note", sl_buf_cstr (&piece), true);
        sl_buf_reset (&json);
    }
    s_tool_string (ctx, 0, "\"}", "note", "", false);
    s_finish (ctx, "tool_calls", 30, (int) (kib < 1000000 ? kib : 1000000));
    sl_buf_free (&json);
    sl_buf_free (&piece);
}

static void
s_scenario_text (s_ctx_t *ctx)
{
    s_begin (ctx);
    for (int i = 0; s_text_words [i]; i++)
        s_text (ctx, s_text_words [i]);
    s_finish (ctx, "stop", 12, 30);
}

static void
s_http_error (s_ctx_t *ctx, int status, const char *retry_after)
{
    sl_mock_script_t *sc = ctx->script;
    sl_mock_script_clear (sc);
    sc->status = status;
    if (retry_after)
        snprintf (sc->retry_after, sizeof sc->retry_after, "%s", retry_after);
    const sl_mock_render_t *r = ctx->render;
    if (status == 429)
        r->error_body (status, r->rate_limited, "The mock upstream is rate limiting this request.", &sc->error_body);
    else
        r->error_body (status, status == 503 || status == 529 ? r->unavailable : r->failed,
                       status == 503 ? "The mock upstream is briefly unavailable."
                     : status == 529 ? "The mock upstream is overloaded." : "The mock upstream failed.",
                       &sc->error_body);
}

//  Keep the first count events and, for mock-drop, half of the next.
static void
s_truncate (sl_mock_script_t *sc, size_t count, bool half_more)
{
    size_t keep = count + (half_more ? 1 : 0);
    if (keep > sc->count)
        keep = sc->count;
    for (size_t i = keep; i < sc->count; i++)
        sl_buf_free (&sc->events [i]);
    sc->count = keep;
    if (half_more && keep > count)
        sc->events [count].len /= 2;
}

void
sl_mock_script_not_found (int dialect, const char *message, sl_mock_script_t *out)
{
    const sl_mock_provider_t *p = sl_mock_provider_get (dialect);
    memset (out, 0, sizeof *out);
    out->status = 404;
    if (p)
        p->render->error_body (404, p->render->not_found, message, &out->error_body);
}

void
sl_mock_script_unauthorized (int dialect, const char *message, sl_mock_script_t *out)
{
    const sl_mock_provider_t *p = sl_mock_provider_get (dialect);
    memset (out, 0, sizeof *out);
    out->status = 401;
    if (p)
        p->render->error_body (401, "UNAUTHENTICATED", message, &out->error_body);
}

void
sl_mock_script_bad_request (int dialect, const char *message, sl_mock_script_t *out)
{
    const sl_mock_provider_t *p = sl_mock_provider_get (dialect);
    memset (out, 0, sizeof *out);
    out->status = 400;
    if (p)
        p->render->error_body (400, p->render->bad_request, message, &out->error_body);
}

void
sl_mock_script_stamp (sl_buf_t *event, int64_t now_us)
{
    static const char placeholder [] = SL_MOCK_STAMP;
    size_t n = sizeof placeholder - 1;
    char digits [24];
    //  The monotonic clock in µs stays below 10^16 for centuries of uptime.
    snprintf (digits, sizeof digits, "%016lld", (long long) (now_us < 0 ? 0 : now_us % 10000000000000000LL));
    for (char *p = event->data, *end = event->data + event->len; p && p + n <= end;) {
        p = memmem (p, (size_t) (end - p), placeholder, n);
        if (!p)
            break;
        memcpy (p + 1, digits, 16);
        p += n;
    }
}

//  The pace of a mock-paced model in ms: "mock-paced" is SL_MOCK_PACED_MS,
//  "mock-paced-<ms>" its own (1 to SL_MOCK_PACED_MAX_MS); 0 for any other
//  model.
static long
s_paced_ms (sl_str_t model)
{
    static const char prefix [] = "mock-paced";
    size_t n = sizeof prefix - 1;
    if (model.len < n || memcmp (model.ptr, prefix, n) != 0)
        return 0;
    if (model.len == n)
        return SL_MOCK_PACED_MS;
    if (model.ptr [n] != '-' || model.len == n + 1 || model.len > n + 6)
        return 0;
    long ms = 0;
    for (size_t i = n + 1; i < model.len; i++) {
        if (model.ptr [i] < '0' || model.ptr [i] > '9')
            return 0;
        ms = ms * 10 + (model.ptr [i] - '0');
    }
    return ms >= 1 && ms <= SL_MOCK_PACED_MAX_MS ? ms : 0;
}

//  The digits of "mock-429-<s>"'s s (0 to MOCK_RETRY_AFTER_MAX) into out;
//  false when they are not that.
static bool
s_seconds (sl_str_t digits, char *out, size_t size)
{
    long s = 0;
    if (digits.len == 0 || digits.len >= size)
        return false;
    for (size_t i = 0; i < digits.len; i++) {
        if (digits.ptr [i] < '0' || digits.ptr [i] > '9')
            return false;
        s = s * 10 + (digits.ptr [i] - '0');
        if (s > MOCK_RETRY_AFTER_MAX)
            return false;
    }
    snprintf (out, size, "%lu", (unsigned long) s);
    return true;
}

int
sl_mock_script_build (int dialect, sl_str_t model, sl_str_t request_body, long chunks,
                      unsigned attempt, sl_mock_script_t *out)
{
    char retry_after [24];
    s_ctx_t ctx;
    if (!s_start (&ctx, dialect, model, request_body, out))
        return -1;
    //  mock-filtered: text, which a provider with a content filter
    //  (Azure's) ends as filtered.
    if (sl_str_eq (model, "mock-text") || sl_str_eq (model, "mock-filtered"))
        s_scenario_text (&ctx);
    else
    if (sl_str_eq (model, "mock-tools")) {
        s_begin (&ctx);
        s_text (&ctx, "Let me check");
        s_text (&ctx, " the weather and tidy up.");
        s_tool (&ctx, 0, "weather_1", "get_weather", s_weather);
        s_tool (&ctx, 1, "shell_1", "run_shell", s_shell);
        s_finish (&ctx, "tool_calls", 40, 25);
    }
    else
    if (sl_str_eq (model, "mock-bench") || sl_str_eq (model, "mock-burst") || s_paced_ms (model) > 0) {
        long pace = s_paced_ms (model);
        bool paced = pace > 0;
        out->stamped = paced;
        out->burst = sl_str_eq (model, "mock-burst");
        out->pace_ms = paced ? pace : 0;
        if (chunks <= 0)
            chunks = SL_MOCK_BENCH_CHUNKS;
        if (chunks > SL_MOCK_BENCH_MAX)
            chunks = SL_MOCK_BENCH_MAX;
        s_begin (&ctx);
        char word [32];
        for (long i = 0; i < chunks; i++) {
            if (paced)
                snprintf (word, sizeof word, "%s", SL_MOCK_STAMP);
            else
                snprintf (word, sizeof word, "tok%ld ", i);
            s_text (&ctx, word);
        }
        s_tool (&ctx, 0, "bench_1", "get_weather", s_weather);
        s_tool (&ctx, 1, "bench_2", "read_file", s_notes);
        s_finish (&ctx, "tool_calls", 100, (int) (chunks < 1000000 ? chunks : 1000000));
    }
    else
    if (sl_str_eq (model, "mock-error")) {
        s_begin (&ctx);
        s_text (&ctx, "This answer");
        s_text (&ctx, " will not");
        s_fail (&ctx);
    }
    else
    if (sl_str_eq (model, "mock-fail-first"))
        s_fail (&ctx);                  //  before anything: Bedrock's exception frame, an SSE error event
    else
    if (sl_str_eq (model, "mock-stall") || sl_str_eq (model, "mock-drop")) {
        s_scenario_text (&ctx);
        bool drop = sl_str_eq (model, "mock-drop");
        s_truncate (out, drop ? MOCK_DROP_EVENTS : MOCK_STALL_EVENTS, drop);
        out->end = drop ? SL_MOCK_END_DROP : SL_MOCK_END_STALL;
    }
    else
    if (sl_str_eq (model, "mock-hang")) {
        out->status = 0;
        out->end = SL_MOCK_END_STALL;
    }
    else
    if (sl_str_eq (model, "mock-garbage")) {
        s_scenario_text (&ctx);
        s_truncate (out, 1, false);
        sl_buf_puts (sl_mock_events_add (&out->events, &out->count),
                     "data: {\"choices\": [{\"delta\": \x01\xfe garbage <html>\n\n");
    }
    else
    if (sl_str_eq (model, "mock-danger-length"))
        s_scenario_danger (&ctx, "length");
    else
    if (sl_str_eq (model, "mock-danger-error"))
        s_scenario_danger (&ctx, "error");
    else
    if (sl_str_eq (model, "mock-danger-eof"))
        s_scenario_danger (&ctx, "eof");
    else
    if (sl_str_eq (model, "mock-danger-huge"))
        s_scenario_huge (&ctx, chunks <= 0 ? SL_MOCK_HUGE_KIB : chunks < SL_MOCK_HUGE_MAX_KIB ? chunks
                                                                                          : SL_MOCK_HUGE_MAX_KIB);
    else
    if (sl_str_eq (model, "mock-bad-utf8")) {
        ctx.out.verbatim = true;
        s_begin (&ctx);
        s_text (&ctx, MOCK_BAD_TEXT);
        s_tool (&ctx, 0, "bad\xff\\udc00", "get\xc3weather", s_bad_args);
        s_finish (&ctx, "tool_calls", 20, 10);
    }
    else
    if (sl_str_eq (model, "mock-429"))
        s_http_error (&ctx, 429, "1");
    else
    if (model.len > sizeof MOCK_429_PREFIX - 1 && memcmp (model.ptr, MOCK_429_PREFIX, sizeof MOCK_429_PREFIX - 1) == 0
    &&  s_seconds (sl_str_n (model.ptr + sizeof MOCK_429_PREFIX - 1, model.len - (sizeof MOCK_429_PREFIX - 1)),
                   retry_after, sizeof retry_after))
        s_http_error (&ctx, 429, retry_after);
    else
    if (sl_str_eq (model, "mock-529"))
        s_http_error (&ctx, 529, NULL);
    else
    if (sl_str_eq (model, "mock-500"))
        s_http_error (&ctx, 500, NULL);
    else
    if (sl_str_eq (model, "mock-flaky")) {
        if (attempt % 2 == 0)
            s_http_error (&ctx, 503, "0");
        else
            s_scenario_text (&ctx);
    }
    else {
        sl_buf_t message = { 0 };
        sl_buf_puts (&message, "The model ");
        sl_buf_append_str (&message, model);
        sl_buf_puts (&message, " does not exist on the mock upstream (try mock-text, mock-tools, "
                               "mock-error, mock-bench or mock-paced).");
        sl_mock_script_not_found (dialect, sl_buf_cstr (&message), out);
        sl_buf_free (&message);
    }
    sl_buf_free (&ctx.out.acc);
    return 0;
}

//  --------------------------------------------------------------------------
//  Playing recordings back

static bool
s_ends_with (sl_str_t s, const char *suffix)
{
    size_t n = strlen (suffix);
    return s.len >= n && memcmp (s.ptr + s.len - n, suffix, n) == 0;
}

//  SSE bytes cut after each blank line, verbatim.
static void
s_playback_sse (sl_str_t file, sl_mock_script_t *out)
{
    const char *p = file.ptr, *end = file.ptr + file.len, *start = p;
    bool line_empty = true;             //  no byte since the last line end
    while (p < end) {
        char c = *p++;
        if (c != '\n' && c != '\r') {
            line_empty = false;
            continue;
        }
        if (c == '\r' && p < end && *p == '\n')
            p++;
        if (line_empty && p > start) {
            sl_buf_append (sl_mock_events_add (&out->events, &out->count), start, (size_t) (p - start));
            start = p;
        }
        line_empty = true;
    }
    if (end > start)
        sl_buf_append (sl_mock_events_add (&out->events, &out->count), start, (size_t) (end - start));
}

int
sl_mock_script_playback (sl_str_t name, sl_str_t file, sl_mock_script_t *out)
{
    memset (out, 0, sizeof *out);
    out->status = 200;
    if (s_ends_with (name, ".jsonl")) {
        const char *p = file.ptr, *end = file.ptr + file.len;
        while (p < end) {
            const char *nl = memchr (p, '\n', (size_t) (end - p));
            const char *e = nl ? nl : end;
            if (e > p) {
                sl_buf_t *ev = sl_mock_events_add (&out->events, &out->count);
                sl_buf_puts (ev, "data: ");
                sl_buf_append (ev, p, (size_t) (e - p));
                sl_buf_puts (ev, "\n\n");
            }
            p = e + 1;
        }
    }
    else
    if (s_ends_with (name, ".json")) {
        sl_json_iter_t it;
        sl_str_t elem;
        if (sl_json_array (&it, file))
            return -1;
        int rc;
        while ((rc = sl_json_next_elem (&it, &elem)) == 1) {
            //  One data line per chunk: newlines inside are JSON whitespace.
            sl_buf_t *ev = sl_mock_events_add (&out->events, &out->count);
            sl_buf_puts (ev, "data: ");
            for (size_t i = 0; i < elem.len; i++)
                if (elem.ptr [i] != '\n' && elem.ptr [i] != '\r')
                    sl_buf_putc (ev, elem.ptr [i]);
            sl_buf_puts (ev, "\n\n");
        }
        if (rc < 0) {
            sl_mock_script_clear (out);
            return -1;
        }
    }
    else
        s_playback_sse (file, out);
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

//  --------------------------------------------------------------------------
//  Scenarios given as steps (sl_mock_agent.c)

int
sl_mock_script_steps (int dialect, sl_str_t model, sl_str_t request_body, const sl_mock_step_t *steps,
                      size_t count, sl_mock_script_t *out)
{
    s_ctx_t ctx;
    if (!s_start (&ctx, dialect, model, request_body, out))
        return -1;
    s_begin (&ctx);
    int calls = 0;
    for (size_t i = 0; i < count; i++) {
        const sl_mock_step_t *step = &steps [i];
        switch (step->kind) {
            case SL_MOCK_STEP_TEXT:
                s_text (&ctx, step->text);
                break;
            case SL_MOCK_STEP_CALL: {
                //  The arguments in three pieces, as models stream them.
                size_t n = strlen (step->text), cut1 = n / 3, cut2 = 2 * n / 3;
                char piece [3][SL_MOCK_STEP_ARGS_MAX];
                snprintf (piece [0], sizeof piece [0], "%.*s", (int) cut1, step->text);
                snprintf (piece [1], sizeof piece [1], "%.*s", (int) (cut2 - cut1), step->text + cut1);
                snprintf (piece [2], sizeof piece [2], "%s", step->text + cut2);
                const char *const fragments [] = { piece [0], piece [1], piece [2], NULL };
                s_tool (&ctx, calls++, step->id, step->name, fragments);
                break;
            }
            case SL_MOCK_STEP_FINISH:
                s_finish (&ctx, step->text, 40, 25);
                break;
            case SL_MOCK_STEP_FAIL:
                s_fail_as_api (&ctx);
                break;
            default:
                break;
        }
    }
    sl_buf_free (&ctx.out.acc);
    return 0;
}

