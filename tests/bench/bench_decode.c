/*  Benchmark: framing + decoding rate per upstream dialect, one core.

    Input: the mock's mock-bench stream of each dialect (BENCH_CHUNKS text
    events and two tool calls, the bytes the provider format really has:
    server-sent events, or AWS's binary event stream for Bedrock's Converse
    and Claude on Bedrock), fed in reads of READ_SIZE bytes as libcurl
    hands them over to the dialect's framing; and, when ../shared/corpus
    exists, every recorded SSE stream of the dialect. Output per dialect
    (Azure OpenAI among them: its filter annotations are a decoder of
    their own; Vertex AI's streams are Gemini's and Anthropic's, decoded
    by theirs): MB/s of input, events/s, deltas/s and the CPU time per
    event (ns: a chunk of the provider's stream), best of ROUNDS; the
    deltas are only counted, so this is the ingest's decode cost without
    encoding and sending. Optional arguments: the text events of the mock
    streams, the rounds and one dialect's name (for profiling runs, e.g.
    `valgrind --tool=callgrind --toggle-collect=s_measure
    build/bench/bench_decode 20000 1 bedrock-anthropic`).
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_decoder.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_framing.h"
#include "services/mock/sl_mock_script.h"

#define BENCH_CHUNKS 200000            //  default text events per mock stream
#define READ_SIZE 16384                 //  libcurl's default receive buffer
#define ROUNDS 5                        //  default rounds; the best counts
#define CORPUS_REPEAT 200               //  the corpus is small: decode it many times

typedef struct {
    sl_decoder_t *dec;
    uint64_t deltas;
    uint64_t events;
    int failures;
} s_count_t;

static double
s_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

static void
s_delta (void *arg, const sl_msg_t *msg)
{
    (void) msg;
    ((s_count_t *) arg)->deltas++;
}

static int
s_event (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    (void) id;
    s_count_t *c = arg;
    c->events++;
    if (sl_decoder_event (c->dec, type, data, s_delta, c))
        c->failures++;
    return 0;
}

//  Decode one stream; adds to the counters.
static void
s_decode (int dialect, const sl_buf_t *bytes, s_count_t *c)
{
    c->dec = sl_decoder_new (dialect);
    sl_framing_t *frames = sl_framing_new (sl_dialect_get (dialect)->framing, 0);
    for (size_t at = 0; at < bytes->len; at += READ_SIZE) {
        size_t n = bytes->len - at < READ_SIZE ? bytes->len - at : READ_SIZE;
        if (sl_framing_feed (frames, bytes->data + at, n, s_event, c))
            c->failures++;
    }
    if (sl_framing_finish (frames, s_event, c))
        c->failures++;
    sl_decoder_finish (c->dec, s_delta, c);
    sl_framing_destroy (&frames);
    sl_decoder_destroy (&c->dec);
}

static void
s_report (const char *what, const char *dialect, size_t bytes, double secs, const s_count_t *c)
{
    printf ("%-7s %-17s %8.1f MB/s  %9.0f events/s  %9.0f deltas/s  %6.0f ns/event  (%zu bytes, %llu events, "
            "%llu deltas%s)\n",
            what, dialect, (double) bytes / secs / 1e6, (double) c->events / secs,
            (double) c->deltas / secs, c->events ? secs * 1e9 / (double) c->events : 0.0, bytes,
            (unsigned long long) c->events, (unsigned long long) c->deltas, c->failures ? ", DECODE FAILURES" : "");
}

//  The best of ROUNDS over a set of streams, each decoded repeat times.
static int s_rounds = ROUNDS;

static void
s_measure (const char *what, int dialect, sl_buf_t *streams, size_t count, int repeat)
{
    double best = 1e30;
    s_count_t last = { 0 };
    size_t bytes = 0;
    for (size_t i = 0; i < count; i++)
        bytes += streams [i].len * (size_t) repeat;
    for (int r = 0; r < s_rounds; r++) {
        s_count_t c = { 0 };
        double t0 = s_now ();
        for (int k = 0; k < repeat; k++)
            for (size_t i = 0; i < count; i++)
                s_decode (dialect, &streams [i], &c);
        double t = s_now () - t0;
        if (t < best) {
            best = t;
            last = c;
        }
    }
    s_report (what, sl_dialect_name (dialect), bytes, best, &last);
}

static const struct {
    int dialect;
    const char *dir;
} s_dialects [] = {
    { SL_DIALECT_OPENAI, "openai-chat" },
    { SL_DIALECT_ANTHROPIC, "anthropic" },
    { SL_DIALECT_RESPONSES, "openai-responses" },
    { SL_DIALECT_GEMINI, "gemini" },
    { SL_DIALECT_AZURE, "azure" },      //  OpenAI's chunks with Azure's filter around them
    { SL_DIALECT_BEDROCK, NULL },       //  AWS's event stream; no SSE recordings
    { SL_DIALECT_BEDROCK_ANTHROPIC, NULL },
};

//  The .sse recordings of a corpus directory (the framed formats are
//  covered by the tests; here only raw wire bytes count).
static size_t
s_corpus (const char *dir, sl_buf_t *out, size_t max)
{
    if (!dir)
        return 0;
    char path [1024];
    snprintf (path, sizeof path, "../shared/corpus/%s", dir);
    DIR *dp = opendir (path);
    if (!dp)
        return 0;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir (dp)) && n < max) {
        size_t len = strlen (de->d_name);
        if (len < 4 || strcmp (de->d_name + len - 4, ".sse") != 0)
            continue;
        char file [1400];
        snprintf (file, sizeof file, "%s/%s", path, de->d_name);
        FILE *f = fopen (file, "rb");
        if (!f)
            continue;
        memset (&out [n], 0, sizeof out [n]);
        char chunk [65536];
        size_t got;
        while ((got = fread (chunk, 1, sizeof chunk, f)) > 0)
            sl_buf_append (&out [n], chunk, got);
        fclose (f);
        n++;
    }
    closedir (dp);
    return n;
}

int
main (int argc, char **argv)
{
    long chunks = argc > 1 ? atol (argv [1]) : BENCH_CHUNKS;
    if (argc > 2 && atoi (argv [2]) > 0)
        s_rounds = atoi (argv [2]);
    if (chunks <= 0)
        chunks = BENCH_CHUNKS;
    const char *only = argc > 3 ? argv [3] : NULL;
    printf ("framing (SSE or AWS's event stream) + decode, one core, reads of %d bytes, best of %d rounds\n",
            READ_SIZE, s_rounds);
    for (size_t d = 0; d < sizeof s_dialects / sizeof s_dialects [0]; d++) {
        if (only && strcmp (only, sl_dialect_name (s_dialects [d].dialect)) != 0)
            continue;
        sl_mock_script_t sc;
        sl_mock_script_build (s_dialects [d].dialect, sl_str ("mock-bench"), sl_str ("{}"),
                              chunks, 0, &sc);
        sl_buf_t stream = { 0 };
        for (size_t i = 0; i < sc.count; i++)
            sl_buf_append_str (&stream, sl_buf_str (&sc.events [i]));
        sl_mock_script_clear (&sc);
        s_measure ("mock", s_dialects [d].dialect, &stream, 1, 1);
        sl_buf_free (&stream);
    }
    for (size_t d = 0; d < sizeof s_dialects / sizeof s_dialects [0]; d++) {
        if (only && strcmp (only, sl_dialect_name (s_dialects [d].dialect)) != 0)
            continue;
        sl_buf_t files [64];
        size_t n = s_corpus (s_dialects [d].dir, files, 64);
        if (!n)
            continue;
        s_measure ("corpus", s_dialects [d].dialect, files, n, CORPUS_REPEAT);
        for (size_t i = 0; i < n; i++)
            sl_buf_free (&files [i]);
    }
    return 0;
}
