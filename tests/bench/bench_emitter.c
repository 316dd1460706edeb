/*  Benchmark: the emitter's cost per text delta in each client dialect
    (one core): render the event, check it with the dialect's validator,
    frame it. Also the validator alone, fed the rendered events again.
    Prints nanoseconds per event. Then non-streaming responses: each
    delta goes into the snapshot (and makes a progress frame); at the end
    the whole body is rendered and checked. Prints the cost per delta and
    the cost of the end (render and check one body).
*/
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "common/stages/sl_emitter.h"
#include "common/dialects/sl_validate.h"

#define DELTAS 200000
#define BODIES 200                      //  non-streaming responses per dialect
#define BODY_DELTAS 1000                //  text deltas in each

static double
s_now (void)
{
    struct timespec ts;
    clock_gettime (CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

typedef struct {
    size_t frames;
    size_t bytes;
    sl_buf_t all;                       //  every frame body, for the validator pass
    int keep;
} s_sink_t;

static void
s_emit (void *arg, const sl_msg_t *msg)
{
    s_sink_t *sink = arg;
    if (msg->type != SL_MSG_FRAME)
        return;
    sink->frames++;
    sink->bytes += msg->body.len;
    if (sink->keep)
        sl_buf_append_str (&sink->all, msg->body);
}

static sl_msg_t
s_block (int event, int kind)
{
    sl_msg_t m;
    sl_msg_init (&m, SL_MSG_BLOCK);
    memset (m.sid, 3, SL_SID_SIZE);
    m.kind = (uint8_t) event;
    m.block = (uint8_t) kind;
    m.index = 0;
    return m;
}

int
main (void)
{
    const char *names [] = { "", "openai", "anthropic", "responses", "gemini" };
    for (int dialect = SL_DIALECT_OPENAI; dialect < SL_DIALECT_MAX; dialect++) {
        sl_emitter_t *em = sl_emitter_new ();
        s_sink_t sink = { .keep = 1 };
        sl_msg_t start;
        sl_msg_init (&start, SL_MSG_START);
        memset (start.sid, 3, SL_SID_SIZE);
        start.client_dialect = start.upstream_dialect = (uint8_t) dialect;
        start.model = sl_str ("bench-model");
        start.reply_to = sl_str ("tcp://gw:1");
        start.flags = SL_F_STREAM;
        sl_emitter_feed (em, &start, s_emit, &sink);
        sl_msg_t b = s_block (SL_B_START, SL_BK_TEXT);
        sl_emitter_feed (em, &b, s_emit, &sink);
        sl_msg_t d = s_block (SL_B_DELTA, SL_BK_TEXT);
        d.text = sl_str (" a few words of text");
        double t0 = s_now ();
        for (int i = 0; i < DELTAS; i++)
            sl_emitter_feed (em, &d, s_emit, &sink);
        double t1 = s_now ();
        //  The validator alone, over the same events.
        sl_validate_t *v = sl_validate_new (dialect);
        sl_str_t rest = sl_buf_str (&sink.all);
        size_t events = 0;
        double t2 = s_now ();
        while (rest.len) {
            size_t n = sl_validate_next_event (rest);
            if (!n)
                break;
            sl_validate_event (v, sl_str_n (rest.ptr, n));
            rest = sl_str_n (rest.ptr + n, rest.len - n);
            events++;
        }
        double t3 = s_now ();
        printf ("%-10s %7.0f ns per text delta (render, validate, frame); validator alone %6.0f ns per event; "
                "%zu bytes per event\n", names [dialect], (t1 - t0) / DELTAS * 1e9,
                (t3 - t2) / (double) (events ? events : 1) * 1e9, sink.bytes / (sink.frames ? sink.frames : 1));
        sl_validate_destroy (&v);
        sl_buf_free (&sink.all);
        sl_emitter_destroy (&em);
    }
    //  Non-streaming: the same deltas, one body at the end.
    for (int dialect = SL_DIALECT_OPENAI; dialect < SL_DIALECT_MAX; dialect++) {
        sl_emitter_t *em = sl_emitter_new ();
        s_sink_t sink = { .keep = 0 };
        double feed = 0, end = 0;
        for (int r = 0; r < BODIES; r++) {
            sl_msg_t start;
            sl_msg_init (&start, SL_MSG_START);
            memset (start.sid, 3, SL_SID_SIZE);
            start.client_dialect = start.upstream_dialect = (uint8_t) dialect;
            start.model = sl_str ("bench-model");
            start.reply_to = sl_str ("tcp://gw:1");
            sl_emitter_feed (em, &start, s_emit, &sink);
            double t0 = s_now ();
            sl_msg_t b = s_block (SL_B_START, SL_BK_TEXT);
            sl_emitter_feed (em, &b, s_emit, &sink);
            sl_msg_t d = s_block (SL_B_DELTA, SL_BK_TEXT);
            d.text = sl_str (" a few words of text");
            for (int i = 0; i < BODY_DELTAS; i++)
                sl_emitter_feed (em, &d, s_emit, &sink);
            sl_msg_t e = s_block (SL_B_END, SL_BK_TEXT);
            sl_emitter_feed (em, &e, s_emit, &sink);
            sl_msg_t f = s_block (SL_B_FINISH, 0);
            f.finish = SL_FIN_STOP;
            sl_emitter_feed (em, &f, s_emit, &sink);
            double t1 = s_now ();
            sl_msg_t stop;
            sl_msg_init (&stop, SL_MSG_END);
            memset (stop.sid, 3, SL_SID_SIZE);
            sl_emitter_feed (em, &stop, s_emit, &sink);
            double t2 = s_now ();
            feed += t1 - t0;
            end += t2 - t1;
        }
        printf ("%-10s %7.0f ns per text delta into a non-streaming response; %6.1f us to render and check "
                "its body (%d deltas, %zu bytes)\n", names [dialect], feed / (BODIES * BODY_DELTAS) * 1e9,
                end / BODIES * 1e6, BODY_DELTAS, sink.bytes / BODIES);
        sl_emitter_destroy (&em);
    }
    return 0;
}
