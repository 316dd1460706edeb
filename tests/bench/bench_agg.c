/*  Benchmark: aggregator throughput alone (one core, deltas per second).

    Responses shaped like real ones (a message, thinking, text in word-sized
    fragments, tool calls whose arguments arrive in small pieces, finish,
    usage, done) for STREAMS streams interleaved round-robin, as an
    aggregator instance sees them. The emit callback only counts, so the
    numbers are the state machine, the argument validation and the stream
    lookup, not the wire. Three runs: the mix, text only, and the mix with
    final snapshots kept.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/stages/sl_agg.h"

#define STREAMS 64                      //  interleaved streams
#define ROUNDS 500                      //  times every stream is replayed
#define THINKING_FRAGMENTS 40
#define TEXT_FRAGMENTS 120
#define CALLS 3
#define ARG_FRAGMENTS 24

typedef struct {
    sl_msg_t *msgs;                     //  one response's messages, sid set later
    size_t count;
    size_t cap;
    size_t deltas;
} script_t;

static void
s_add (script_t *s, const sl_msg_t *m)
{
    if (s->count == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->msgs = realloc (s->msgs, s->cap * sizeof (sl_msg_t));
    }
    s->msgs [s->count++] = *m;
    if (m->type == SL_MSG_DELTA)
        s->deltas++;
}

static void
s_delta (script_t *s, int kind, int index, sl_str_t text)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_DELTA);
    m.kind = (uint8_t) kind;
    m.index = index;
    m.text = text;
    s_add (s, &m);
}

static void
s_build (script_t *s, bool text_only)
{
    static const char *words [] = { "The ", "quick ", "brown ", "fox ", "jumps ", "over ", "lazy ", "dogs. " };
    //  Arguments of a realistic size, cut into ARG_FRAGMENTS pieces.
    static const char *args =
        "{\"path\": \"/srv/data/report-2024.csv\", \"mode\": \"read\", \"limit\": 100, "
        "\"tags\": [\"a\", \"b\", \"c\"], \"opts\": {\"x\": true, \"y\": null, \"z\": -1.5e3}}";
    size_t args_len = strlen (args), piece = args_len / ARG_FRAGMENTS;
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_START);
    s_add (s, &m);
    sl_msg_init (&m, SL_MSG_DELTA);
    m.kind = SL_D_MESSAGE;
    m.id = sl_str ("chatcmpl-bench");
    m.model = sl_str ("bench-model");
    m.ts = 1700000000;
    s_add (s, &m);
    if (!text_only)
        for (int i = 0; i < THINKING_FRAGMENTS; i++)
            s_delta (s, SL_D_THINKING, -1, sl_str (words [i % 8]));
    for (int i = 0; i < TEXT_FRAGMENTS; i++)
        s_delta (s, SL_D_TEXT, -1, sl_str (words [i % 8]));
    for (int c = 0; c < (text_only ? 0 : CALLS); c++) {
        sl_msg_init (&m, SL_MSG_DELTA);
        m.kind = SL_D_TOOL_CALL;
        m.index = c;
        m.id = sl_str (c == 0 ? "call_0" : c == 1 ? "call_1" : "call_2");
        m.name = sl_str ("read_file");
        m.text = sl_str ("");
        s_add (s, &m);
        for (size_t i = 0; i < ARG_FRAGMENTS; i++) {
            size_t at = i * piece, n = i == ARG_FRAGMENTS - 1 ? args_len - at : piece;
            s_delta (s, SL_D_TOOL_CALL, c, sl_str_n (args + at, n));
        }
    }
    sl_msg_init (&m, SL_MSG_DELTA);
    m.kind = SL_D_FINISH;
    m.finish_raw = sl_str (text_only ? "stop" : "tool_calls");
    s_add (s, &m);
    sl_msg_init (&m, SL_MSG_DELTA);
    m.kind = SL_D_USAGE;
    m.has_usage = true;
    m.usage.input = 1000;
    m.usage.output = 300;
    s_add (s, &m);
    s_delta (s, SL_D_DONE, -1, SL_STR_NULL);
    sl_msg_init (&m, SL_MSG_END);
    s_add (s, &m);
}

typedef struct {
    uint64_t messages;
    uint64_t valid_calls;
} counter_t;

static void
s_count (void *arg, const sl_msg_t *msg)
{
    counter_t *c = arg;
    c->messages++;
    if (msg->type == SL_MSG_BLOCK && msg->kind == SL_B_END && (msg->flags & SL_F_ARGS_VALID))
        c->valid_calls++;
}

static void
s_snapshot (void *arg, const uint8_t *sid, const sl_snapshot_t *snapshot)
{
    (void) sid;
    *(size_t *) arg += sl_snapshot_count (snapshot);
}

static double
s_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

//  Feed every stream ROUNDS times; returns deltas per second.
static double
s_run (const char *label, bool text_only, bool snapshots, int *failures)
{
    script_t s = { 0 };
    s_build (&s, text_only);
    sl_agg_t *agg = sl_agg_new ();
    size_t blocks_snapshotted = 0;
    if (snapshots)
        sl_agg_on_snapshot (agg, s_snapshot, &blocks_snapshotted);
    //  Stream ids are random bytes on the wire; any fixed spread will do.
    uint8_t sids [STREAMS][SL_SID_SIZE];
    unsigned seed = 42;
    for (int k = 0; k < STREAMS; k++)
        for (int b = 0; b < SL_SID_SIZE; b++)
            sids [k][b] = (uint8_t) rand_r (&seed);
    counter_t counter = { 0 };
    double t0 = s_now ();
    for (int r = 0; r < ROUNDS; r++) {
        //  Interleave the streams message by message.
        for (size_t i = 0; i < s.count; i++)
            for (int k = 0; k < STREAMS; k++) {
                sl_msg_t *m = &s.msgs [i];
                memcpy (m->sid, sids [k], SL_SID_SIZE);
                m->epoch = (uint32_t) r;
                m->seq = i;
                sl_agg_feed (agg, m, s_count, &counter);
            }
    }
    double elapsed = s_now () - t0;
    double deltas = (double) s.deltas * STREAMS * ROUNDS;
    double rate = deltas / elapsed;
    printf ("agg %-22s %6.2f M deltas/s  (%5.1f ns/delta, %.0f deltas in %.3f s)\n",
            label, rate / 1e6, elapsed / deltas * 1e9, deltas, elapsed);
    //  Not a timing check: the work must have been done.
    uint64_t expected_calls = (uint64_t) (text_only ? 0 : CALLS) * STREAMS * ROUNDS;
    if (counter.valid_calls != expected_calls || sl_agg_streams (agg) != 0
    ||  (snapshots && blocks_snapshotted == 0)) {
        fprintf (stderr, "bench_agg: %s: wrong output (%llu valid calls, expected %llu)\n", label,
                 (unsigned long long) counter.valid_calls, (unsigned long long) expected_calls);
        (*failures)++;
    }
    sl_agg_destroy (&agg);
    free (s.msgs);
    return rate;
}

int
main (void)
{
    int failures = 0;
    s_run ("mix", false, false, &failures);
    s_run ("text only", true, false, &failures);
    s_run ("mix + snapshots", false, true, &failures);
    return failures ? 1 : 0;
}
