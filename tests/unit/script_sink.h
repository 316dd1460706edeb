/*  script_sink.h - decodes a mock script as the ingest would (the
    project's own SSE parser and decoders), for assertions on what a
    client of sluice would get from the mock in a dialect. */
#ifndef TEST_SCRIPT_SINK_H
#define TEST_SCRIPT_SINK_H

#include <criterion/criterion.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_decoder.h"
#include "common/dialects/sl_dialect.h"
#include "common/dialects/sl_framing.h"
#include "services/mock/sl_mock_script.h"

typedef struct {
    sl_decoder_t *dec;
    sl_buf_t text;
    sl_buf_t calls;                     //  "name(args);" per call
    sl_buf_t finish;
    sl_buf_t error;
    int errors;
    int failures;                       //  events the decoder refused
    bool done;
} script_sink_t;

static inline void
script_sink_delta (void *arg, const sl_msg_t *m)
{
    script_sink_t *s = arg;
    if (m->type == SL_MSG_ERROR) {
        s->errors++;
        sl_buf_append_str (&s->error, m->code);
        return;
    }
    if (m->kind == SL_D_TEXT)
        sl_buf_append_str (&s->text, m->text);
    if (m->kind == SL_D_TOOL_CALL) {
        if (m->name.ptr) {
            if (s->calls.len)
                sl_buf_puts (&s->calls, ");");
            sl_buf_append_str (&s->calls, m->name);
            sl_buf_putc (&s->calls, '(');
        }
        sl_buf_append_str (&s->calls, m->text);
    }
    if (m->kind == SL_D_FINISH)
        sl_buf_append_str (&s->finish, m->finish_raw);
    if (m->kind == SL_D_DONE)
        s->done = true;
}

static inline int
script_sink_event (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    (void) id;
    script_sink_t *s = arg;
    if (sl_decoder_event (s->dec, type, data, script_sink_delta, s))
        s->failures++;
    return 0;
}

//  Decode a script's events as the ingest would (body end included).
static inline script_sink_t
script_decode (int dialect, const sl_mock_script_t *sc)
{
    script_sink_t sink = { .dec = sl_decoder_new (dialect) };
    sl_framing_t *sse = sl_framing_new (sl_dialect_get (dialect)->framing, 0);
    for (size_t i = 0; i < sc->count; i++)
        cr_assert_eq (sl_framing_feed (sse, sc->events [i].data, sc->events [i].len, script_sink_event, &sink), 0);
    sl_framing_finish (sse, script_sink_event, &sink);
    sl_decoder_finish (sink.dec, script_sink_delta, &sink);
    sl_framing_destroy (&sse);
    return sink;
}

static inline void
script_sink_free (script_sink_t *s)
{
    sl_decoder_destroy (&s->dec);
    sl_buf_free (&s->text);
    sl_buf_free (&s->calls);
    sl_buf_free (&s->finish);
    sl_buf_free (&s->error);
}

#endif
