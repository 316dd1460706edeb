/*  Benchmark: what tracing costs the emitter per event (one core).
    sl_genai fed the events of an agent-like stream (start, message, 60
    text deltas, two tool calls and their verdicts, finish, end): per
    event of a stream that is not traced (one map lookup), of one that
    is (the spans made), and with the spans encoded as the exporter
    sends them (OTLP protobuf, batches of 512). Prints nanoseconds per
    event and per stream.
*/
#include <stdio.h>
#include <string.h>

#include "common/stages/sl_genai.h"
#include "common/otel/sl_otlp_impl.h"
#include "tests/bench/bench_clock.h"

#define STREAMS 20000
#define TEXT_DELTAS 60                  //  s1000's chunks per stream
#define CALLS 2
#define EVENTS_PER_STREAM (TEXT_DELTAS + 3 * CALLS + 4)   //  start, message, finish, end
#define BATCH 512                       //  the exporter's default batch

typedef struct {
    sl_span_t *spans [BATCH];
    size_t count;
    bool encode;
    sl_buf_t out;
    const sl_otlp_codec_t *codec;
    sl_otlp_resource_t resource;
    size_t bytes;
} s_sink_t;

static void
s_flush (s_sink_t *sink)
{
    if (sink->encode && sink->count) {
        sl_buf_reset (&sink->out);
        sink->codec->encode (&sink->resource, sink->spans, sink->count, &sink->out);
        sink->bytes += sink->out.len;
    }
    for (size_t i = 0; i < sink->count; i++)
        sl_span_destroy (&sink->spans [i]);
    sink->count = 0;
}

static void
s_keep (void *arg, sl_span_t **span_p)
{
    s_sink_t *sink = arg;
    sink->spans [sink->count++] = *span_p;
    *span_p = NULL;
    if (sink->count == BATCH)
        s_flush (sink);
}

static void
s_feed (sl_genai_t *g, uint32_t n, const char *tc, int64_t now)
{
    sl_msg_t m;
    uint64_t seq = 0;
    sl_msg_init (&m, SL_MSG_START);
    memcpy (m.sid, &n, sizeof n);
    m.sid [15] = 1;
    m.trace = tc ? sl_str (tc) : SL_STR_NULL;
    m.received_us = now;
    m.model = SL_STR_LIT ("mock-paced-100");
    m.client_dialect = m.upstream_dialect = SL_DIALECT_OPENAI;
    m.flags = SL_F_STREAM;
    m.team = SL_STR_LIT ("payments");
    m.policy = SL_STR_LIT ("0123456789ab");
    sl_genai_feed (g, &m, now);
    uint8_t sid [SL_SID_SIZE];
    memcpy (sid, m.sid, sizeof sid);
#define S_NEXT(type) do { sl_msg_init (&m, (type)); memcpy (m.sid, sid, sizeof sid); m.seq = ++seq; } while (0)
    S_NEXT (SL_MSG_BLOCK);
    m.kind = SL_B_MESSAGE;
    m.id = SL_STR_LIT ("chatcmpl-1");
    m.model = SL_STR_LIT ("mock-paced-100");
    sl_genai_feed (g, &m, now + 1);
    for (int i = 0; i < TEXT_DELTAS; i++) {
        S_NEXT (SL_MSG_BLOCK);
        m.kind = SL_B_DELTA;
        m.text = SL_STR_LIT ("word ");
        sl_genai_feed (g, &m, now + 2 + i);
    }
    for (int c = 0; c < CALLS; c++) {
        S_NEXT (SL_MSG_BLOCK);
        m.kind = SL_B_END;
        m.name = SL_STR_LIT ("run_shell");
        m.text = SL_STR_LIT ("{\"command\":\"ls -la\"}");
        sl_genai_feed (g, &m, now + 100);
        S_NEXT (SL_MSG_VERDICT);
        m.action = c ? SL_ACT_BLOCK : SL_ACT_ALLOW;
        m.rule = c ? SL_STR_LIT ("no-rm-rf") : SL_STR_NULL;
        m.name = SL_STR_LIT ("run_shell");
        m.id = SL_STR_LIT ("call_1");
        m.latency_us = 12;
        sl_genai_feed (g, &m, now + 101);
        S_NEXT (SL_MSG_BLOCK);
        m.kind = SL_B_KEEPALIVE;
        sl_genai_feed (g, &m, now + 102);
    }
    S_NEXT (SL_MSG_BLOCK);
    m.kind = SL_B_FINISH;
    m.finish = SL_FIN_TOOL_CALLS;
    m.has_usage = true;
    m.usage = (sl_usage_t) { 1200, 80, 1280, 1000, -1, -1 };
    sl_genai_feed (g, &m, now + 200);
    S_NEXT (SL_MSG_END);
    sl_genai_feed (g, &m, now + 201);
#undef S_NEXT
}

static double
s_run (const char *label, const char *tc, bool encode)
{
    s_sink_t sink = { .encode = encode, .codec = sl_otlp_codec (SL_OTLP_PROTOBUF),
                      .resource = { "sluice-emitter", "emitter-1", "bench" } };
    sl_genai_config_t cfg = { 0 };
    sl_genai_t *g = sl_genai_new (&cfg, s_keep, &sink);
    int64_t now = 1764000000000000;
    double t0 = bench_now ();
    for (uint32_t n = 0; n < STREAMS; n++)
        s_feed (g, n, tc, now + n);
    s_flush (&sink);
    double t = bench_now () - t0;
    double per_event = t * 1e9 / ((double) STREAMS * EVENTS_PER_STREAM);
    printf ("%-34s %7.1f ns per event, %6.2f us per stream", label, per_event, t * 1e6 / STREAMS);
    if (encode)
        printf (" (%zu bytes of protobuf per stream)", sink.bytes / STREAMS);
    printf ("\n");
    sl_genai_destroy (&g);
    sl_buf_free (&sink.out);
    return per_event;
}

int
main (void)
{
    const char *tc = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    s_run ("not traced", NULL, false);
    s_run ("traced, spans made", tc, false);
    s_run ("traced, spans made and encoded", tc, true);
    return 0;
}
