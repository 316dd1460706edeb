/*  Unit tests: every recorded provider stream (tests/recordings.h: the
    project's own, and ../shared/corpus when present) decoded by the
    decoder of its dialect (the directory names the dialect), with

    - no decode failure, and an end that is DONE, or an upstream ERROR for
      the recordings of streams that failed (their names say "error");
    - the same delta sequence for many random re-splittings of the bytes
      (fixed seeds) as for one whole read;
    - for every recording of the project's own, and a representative file
      per feature of the corpus, the exact deltas checked in under
      tests/expected/decode/<file>.deltas (verified by hand against the
      recording).

    .sse files are raw SSE bytes; .chunks.jsonl files hold one data payload
    per line and .json files a JSON array of chunks (their SSE framing was
    removed by the project that recorded them), so those are framed as one
    "data:" event per chunk first. The corpus lives outside the repository;
    when ../shared/corpus (or $SLUICE_CORPUS) is absent these tests run on
    the project's own recordings and say what they left out.

    SLUICE_WRITE_EXPECTED=1 writes the .deltas files instead of comparing
    (to inspect a new decoding; a written file is checked by hand before it
    is committed).
*/
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"
#include "common/dialects/sl_decoder.h"
#include "common/http/sl_sse.h"
#include "tests/recordings.h"

#define EXPECTED_DIR "tests/expected/decode"
#define SPLIT_SEEDS 40                  //  random splittings per file
#define MAX_FILES 256

//  The corpus's representative recordings whose deltas are checked in
//  (the project's own all have theirs).
static const char *s_expected [] = {
    "openai-chat-parallel-tool-calls.sse",
    "openai-chat-refusal.sse",
    "openai-chat-multiple-choices-n3.sse",
    "openai-compat-openrouter-comments-length-error-chunk.sse",
    "openai-compat-anthropic-text-then-tool-call-index1.sse",
    "openai-compat-groq-reasoning-then-error-event.sse",
    "anthropic-text-then-tool-use.sse",
    "anthropic-parallel-tool-use-no-args.sse",
    "anthropic-redacted-thinking.sse",
    "anthropic-thinking-then-tool-use.sse",
    "anthropic-code-execution-server-tool.sse",
    "anthropic-web-search-server-tool-thinking.sse",
    "anthropic-stop-sequence.sse",
    "anthropic-max-tokens-truncated-tool-input.sse",
    "responses-function-call.sse",
    "responses-text.sse",
    "responses-reasoning-encrypted-function-call-usage.sse",
    "responses-reasoning-summary-multi-function-calls.chunks.jsonl",
    "responses-web-search.sse",
    "responses-web-search-annotations.chunks.jsonl",
    "responses-error-then-failed.chunks.jsonl",
    "responses-openrouter-reasoning-text-comment.sse",
    "gemini-3-parallel-streamed-function-calls.chunks.jsonl",
    "gemini-3-streamed-function-call-args.chunks.jsonl",
    "gemini-thinking-function-call-thought-summary-signature.sse",
    "gemini-function-call-full-args.sse",
    "gemini-code-execution.sse",
    "gemini-error-mid-stream.sse",
    "gemini-prompt-blocked-safety.sse",
    "gemini-recitation-citations.sse",
    "gemini-google-search-grounding.sse",
    NULL
};

//  The recordings that end without the blank line after their last event
//  (or with a bare JSON object): without sl_sse_finish's end-of-stream
//  leniency they would lose their last event.
static const char *s_need_leniency [] = {
    "anthropic-max-tokens-truncated-tool-input.sse",
    "anthropic-text-then-tool-use.sse",
    "openai-compat-anthropic-text-then-tool-call-index1.sse",
    "gemini-prompt-blocked-safety.sse",
    "gemini-error-mid-stream.sse",
    NULL
};

//  --------------------------------------------------------------------------
//  Deltas as text, one line each, every present field.

static void
s_put_field (sl_buf_t *out, const char *name, sl_str_t value)
{
    if (!value.ptr)
        return;
    sl_buf_printf (out, " %s=", name);
    sl_json_put_sl (out, value);
}

static void
s_describe (void *arg, const sl_msg_t *m)
{
    sl_buf_t *out = arg;
    if (m->type == SL_MSG_ERROR) {
        sl_buf_puts (out, "ERROR");
        s_put_field (out, "code", m->code);
        s_put_field (out, "msg", m->message);
        sl_buf_printf (out, " st=%d f=%u\n", m->status, m->flags);
        return;
    }
    sl_buf_puts (out, sl_delta_kind_name (m->kind));
    if (m->index >= 0)
        sl_buf_printf (out, " i=%d", m->index);
    if (m->flags)
        sl_buf_printf (out, " f=%u", m->flags);
    s_put_field (out, "id", m->id);
    s_put_field (out, "cid", m->call_id);
    s_put_field (out, "name", m->name);
    s_put_field (out, "model", m->model);
    if (m->ts)
        sl_buf_printf (out, " ts=%lld", (long long) m->ts);
    s_put_field (out, "text", m->text);
    s_put_field (out, "sig", m->sig);
    s_put_field (out, "body", m->body);
    s_put_field (out, "finr", m->finish_raw);
    s_put_field (out, "stops", m->stop_seq);
    if (m->has_usage)
        sl_buf_printf (out, " u=in:%lld,out:%lld,tot:%lld,cr:%lld,cw:%lld,rsn:%lld",
                       (long long) m->usage.input, (long long) m->usage.output,
                       (long long) m->usage.total, (long long) m->usage.cache_read,
                       (long long) m->usage.cache_write, (long long) m->usage.reasoning);
    sl_buf_putc (out, '\n');
}

typedef struct {
    sl_decoder_t *dec;
    sl_buf_t *out;
    int failures;
    const char *why;
} s_run_t;

static int
s_on_event (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    (void) id;
    s_run_t *r = arg;
    if (sl_decoder_event (r->dec, type, data, s_describe, r->out) == 0)
        return 0;
    r->failures++;
    r->why = sl_decoder_error (r->dec);
    return -1;
}

//  Decode bytes fed in pieces cut at the given offsets (sorted, may be
//  empty); lenient selects whether the end-of-stream leniency applies.
static int
s_decode (int dialect, sl_str_t bytes, const size_t *cuts, size_t ncuts, bool lenient,
          sl_buf_t *out, const char **why)
{
    s_run_t r = { .dec = sl_decoder_new (dialect), .out = out };
    sl_sse_t *sse = sl_sse_new (0);
    size_t at = 0;
    int rc = 0;
    for (size_t i = 0; i <= ncuts && rc == 0; i++) {
        size_t to = i < ncuts ? cuts [i] : bytes.len;
        rc = sl_sse_feed (sse, bytes.ptr + at, to - at, s_on_event, &r);
        at = to;
    }
    if (rc == 0 && lenient)
        rc = sl_sse_finish (sse, s_on_event, &r);
    if (rc == 0 && lenient)
        rc = sl_decoder_finish (r.dec, s_describe, out);
    if (rc && why)
        *why = r.why ? r.why : sl_sse_error (sse);
    sl_sse_destroy (&sse);
    sl_decoder_destroy (&r.dec);
    return rc;
}

//  A small deterministic generator (xorshift), so splits repeat exactly.
static uint64_t
s_rand (uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

static int
s_cmp_size (const void *a, const void *b)
{
    size_t x = *(const size_t *) a, y = *(const size_t *) b;
    return x < y ? -1 : x > y;
}

static bool
s_in (const char *name, const char **list)
{
    for (; *list; list++)
        if (strcmp (name, *list) == 0)
            return true;
    return false;
}

Test (sl_dec_corpus, every_file_decodes_to_a_clean_end)
{
    static rec_file_t files [MAX_FILES];
    size_t count = rec_list (files, MAX_FILES, "sl_dec_corpus");
    for (size_t f = 0; f < count; f++) {
        sl_buf_t raw = { 0 }, sse = { 0 }, out = { 0 };
        cr_assert (rec_read (files [f].path, &raw));
        rec_as_sse (&files [f], sl_buf_str (&raw), &sse);
        const char *why = NULL;
        int rc = s_decode (files [f].dialect, sl_buf_str (&sse), NULL, 0, true, &out, &why);
        cr_expect_eq (rc, 0, "%s decodes (%s)", files [f].name, why ? why : "");
        //  The last line says how the stream ended.
        const char *text = sl_buf_cstr (&out);
        const char *last = text + out.len;
        if (last > text)
            last--;
        while (last > text && last [-1] != '\n')
            last--;
        if (strstr (files [f].name, "eof"))
            cr_expect (strncmp (last, "ERROR", 5) == 0 && strstr (last, "upstream_incomplete"),
                       "%s, cut off mid-event, ends incomplete: %s", files [f].name, last);
        else {
            if (strstr (files [f].name, "error"))
                cr_expect (strncmp (last, "ERROR", 5) == 0 && strstr (last, "f=128"),
                           "%s ends with the provider's error: %s", files [f].name, last);
            else
                cr_expect (strcmp (last, "done\n") == 0, "%s ends with done: %s", files [f].name, last);
            cr_expect_null (strstr (text, "upstream_incomplete"), "%s", files [f].name);
        }
        sl_buf_free (&raw);
        sl_buf_free (&sse);
        sl_buf_free (&out);
    }
}

Test (sl_dec_corpus, random_splits_give_the_same_deltas)
{
    static rec_file_t files [MAX_FILES];
    size_t count = rec_list (files, MAX_FILES, "sl_dec_corpus");
    for (size_t f = 0; f < count; f++) {
        sl_buf_t raw = { 0 }, sse = { 0 }, whole = { 0 }, split = { 0 };
        cr_assert (rec_read (files [f].path, &raw));
        rec_as_sse (&files [f], sl_buf_str (&raw), &sse);
        s_decode (files [f].dialect, sl_buf_str (&sse), NULL, 0, true, &whole, NULL);
        size_t cuts [64];
        for (uint64_t seed = 1; seed <= SPLIT_SEEDS; seed++) {
            uint64_t state = seed * 0x9E3779B97F4A7C15ULL + f;
            //  From one cut to many: short pieces stress the line joins.
            size_t ncuts = 1 + (size_t) (s_rand (&state) % (sizeof cuts / sizeof cuts [0]));
            for (size_t i = 0; i < ncuts; i++)
                cuts [i] = sse.len ? (size_t) (s_rand (&state) % sse.len) : 0;
            qsort (cuts, ncuts, sizeof cuts [0], s_cmp_size);
            sl_buf_reset (&split);
            s_decode (files [f].dialect, sl_buf_str (&sse), cuts, ncuts, true, &split, NULL);
            cr_expect (split.len == whole.len && memcmp (split.data, whole.data, whole.len) == 0,
                       "%s, seed %llu: split decoding differs", files [f].name,
                       (unsigned long long) seed);
        }
        //  And one byte at a time.
        size_t *every = malloc ((sse.len + 1) * sizeof (size_t));
        for (size_t i = 0; i < sse.len; i++)
            every [i] = i;
        sl_buf_reset (&split);
        s_decode (files [f].dialect, sl_buf_str (&sse), every, sse.len, true, &split, NULL);
        cr_expect (split.len == whole.len && memcmp (split.data, whole.data, whole.len) == 0,
                   "%s: byte-by-byte decoding differs", files [f].name);
        free (every);
        sl_buf_free (&raw);
        sl_buf_free (&sse);
        sl_buf_free (&whole);
        sl_buf_free (&split);
    }
}

static int
s_count_event (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    (void) type;
    (void) data;
    (void) id;
    (*(int *) arg)++;
    return 0;
}

Test (sl_dec_corpus, leniency_is_needed_by_exactly_the_known_files)
{
    static rec_file_t files [MAX_FILES];
    size_t count = rec_list (files, MAX_FILES, "sl_dec_corpus");
    for (size_t f = 0; f < count; f++) {
        sl_buf_t raw = { 0 }, sse = { 0 }, strict = { 0 }, lenient = { 0 };
        cr_assert (rec_read (files [f].path, &raw));
        rec_as_sse (&files [f], sl_buf_str (&raw), &sse);
        //  Events a strict parser dispatches, and those the end adds.
        int events = 0, at_end = 0;
        sl_sse_t *parser = sl_sse_new (0);
        cr_assert_eq (sl_sse_feed (parser, sse.data, sse.len, s_count_event, &events), 0);
        cr_assert_eq (sl_sse_finish (parser, s_count_event, &at_end), 0);
        sl_sse_destroy (&parser);
        bool needs = at_end > 0;
        cr_expect_eq (needs, s_in (files [f].name, s_need_leniency),
                      "%s %s the end-of-stream leniency", files [f].name,
                      needs ? "needs" : "does not need");
        //  What a strict decoding gives is a prefix of the lenient one.
        s_decode (files [f].dialect, sl_buf_str (&sse), NULL, 0, false, &strict, NULL);
        s_decode (files [f].dialect, sl_buf_str (&sse), NULL, 0, true, &lenient, NULL);
        cr_expect (strict.len <= lenient.len
                   && (strict.len == 0 || memcmp (strict.data, lenient.data, strict.len) == 0));
        sl_buf_free (&raw);
        sl_buf_free (&sse);
        sl_buf_free (&strict);
        sl_buf_free (&lenient);
    }
}

Test (sl_dec_corpus, representative_files_match_their_expectations)
{
    static rec_file_t files [MAX_FILES];
    size_t count = rec_list (files, MAX_FILES, "sl_dec_corpus");
    bool write = getenv ("SLUICE_WRITE_EXPECTED") != NULL;
    size_t checked = 0;
    for (size_t f = 0; f < count; f++) {
        //  Every recording of the project's own; of the corpus's, the
        //  representative ones.
        const rec_file_t *file = &files [f];
        if (!file->own && !s_in (file->name, s_expected))
            continue;
        checked++;
        sl_buf_t raw = { 0 }, sse = { 0 }, out = { 0 }, want = { 0 };
        cr_assert (rec_read (file->path, &raw));
        rec_as_sse (file, sl_buf_str (&raw), &sse);
        s_decode (file->dialect, sl_buf_str (&sse), NULL, 0, true, &out, NULL);
        char path [512];
        snprintf (path, sizeof path, "%s/%.300s.deltas", EXPECTED_DIR, file->name);
        if (write) {
            FILE *fp = fopen (path, "wb");
            cr_assert_not_null (fp, "%s", path);
            fwrite (out.data, 1, out.len, fp);
            fclose (fp);
        }
        else {
            cr_expect (rec_read (path, &want), "%s exists", path);
            cr_expect_str_eq (sl_buf_cstr (&out), sl_buf_cstr (&want), "%s", file->name);
        }
        sl_buf_free (&raw);
        sl_buf_free (&sse);
        sl_buf_free (&out);
        sl_buf_free (&want);
    }
    //  The corpus's representative files are all there when it is.
    size_t representative = 0;
    while (s_expected [representative])
        representative++;
    size_t own = 0;
    for (size_t f = 0; f < count; f++)
        own += files [f].own;
    cr_expect_eq (checked, own + (rec_corpus_present () ? representative : 0), "every expected file was found");
}
