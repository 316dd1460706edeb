/*  emit_driver.h - drive the emitter library with hand-made judged events
    and read back what a client would get, for the renderer tests. */
#ifndef TEST_EMIT_DRIVER_H
#define TEST_EMIT_DRIVER_H

#include <criterion/criterion.h>
#include <jansson.h>
#include <string.h>

#include "common/base/sl_buf.h"
#include "common/stages/sl_emitter.h"
#include "tests/unit/recorder.h"

typedef struct {
    sl_emitter_t *em;
    recorder_t rec;
    sl_buf_t bytes;                     //  frame bodies, concatenated
} driver_t;

typedef struct {
    char name [64];                     //  SSE event name ("" when none)
    json_t *data;                       //  parsed data, NULL for [DONE] or non-JSON
    char raw [64];                      //  data when it is not JSON
} sse_event_t;

static inline void
driver_start (driver_t *d, int dialect, uint32_t flags)
{
    memset (d, 0, sizeof *d);
    d->em = sl_emitter_new ();
    sl_msg_t start = recorder_msg (SL_MSG_START, 0);
    start.client_dialect = (uint8_t) dialect;
    start.upstream_dialect = (uint8_t) dialect;
    start.model = sl_str ("asked-model");
    start.reply_to = sl_str ("tcp://gw:1");
    start.flags = flags;
    sl_emitter_feed (d->em, &start, recorder_emit, &d->rec);
}

static inline void
driver_feed (driver_t *d, sl_msg_t m)
{
    sl_emitter_feed (d->em, &m, recorder_emit, &d->rec);
}

static inline sl_msg_t
driver_block (int event, int kind, int index)
{
    sl_msg_t m = recorder_msg (SL_MSG_BLOCK, event);
    m.block = (uint8_t) kind;
    m.index = index;
    return m;
}

static inline void
driver_end (driver_t *d)
{
    driver_feed (d, recorder_msg (SL_MSG_END, 0));
}

//  All frame bytes so far.
static inline const char *
driver_bytes (driver_t *d)
{
    sl_buf_reset (&d->bytes);
    for (size_t i = 0; i < d->rec.count; i++)
        if (d->rec.msgs [i]->type == SL_MSG_FRAME)
            sl_buf_append_str (&d->bytes, d->rec.msgs [i]->body);
    return sl_buf_cstr (&d->bytes);
}

//  Split the bytes into events; returns the count (at most max).
static inline int
driver_events (driver_t *d, sse_event_t *events, int max)
{
    const char *p = driver_bytes (d);
    int n = 0;
    while (*p && n < max) {
        const char *end = strstr (p, "\n\n");
        size_t len = end ? (size_t) (end - p) : strlen (p);
        sse_event_t *e = &events [n];
        memset (e, 0, sizeof *e);
        bool any = false;
        for (const char *line = p; line < p + len;) {
            const char *nl = memchr (line, '\n', (size_t) (p + len - line));
            size_t ll = nl ? (size_t) (nl - line) : (size_t) (p + len - line);
            if (ll > 7 && strncmp (line, "event: ", 7) == 0)
                snprintf (e->name, sizeof e->name, "%.*s", (int) ll - 7, line + 7);
            else
            if (ll > 6 && strncmp (line, "data: ", 6) == 0) {
                e->data = json_loadb (line + 6, ll - 6, 0, NULL);
                if (!e->data)
                    snprintf (e->raw, sizeof e->raw, "%.*s", (int) (ll - 6), line + 6);
                any = true;
            }
            line = nl ? nl + 1 : p + len;
        }
        if (any)
            n++;
        p = end ? end + 2 : p + len;
    }
    return n;
}

static inline void
driver_events_free (sse_event_t *events, int n)
{
    for (int i = 0; i < n; i++)
        json_decref (events [i].data);
}

static inline void
driver_stop (driver_t *d)
{
    sl_emitter_destroy (&d->em);
    recorder_clear (&d->rec);
    sl_buf_free (&d->bytes);
}

//  A response with everything a block stream can carry: identity,
//  thinking with a signature, text with a citation, a tool call in two
//  fragments, a judge's notice after it, and a finish with full usage.
static inline void
driver_full_response (driver_t *d, const char *finish_raw)
{
    sl_msg_t m = driver_block (SL_B_MESSAGE, 0, -1);
    m.id = sl_str ("resp-id-1");
    m.model = sl_str ("real-model");
    m.ts = 1700000000;
    driver_feed (d, m);
    driver_feed (d, driver_block (SL_B_START, SL_BK_THINKING, 0));
    m = driver_block (SL_B_DELTA, SL_BK_THINKING, 0);
    m.text = sl_str ("Let me think.");
    driver_feed (d, m);
    m = driver_block (SL_B_END, SL_BK_THINKING, 0);
    m.text = sl_str ("Let me think.");
    m.sig = sl_str ("sig-abc");
    driver_feed (d, m);
    driver_feed (d, driver_block (SL_B_START, SL_BK_TEXT, 1));
    m = driver_block (SL_B_DELTA, SL_BK_TEXT, 1);
    m.text = sl_str ("Paris is ");
    driver_feed (d, m);
    m = driver_block (SL_B_DELTA, SL_BK_TEXT, 1);
    m.text = sl_str ("sunny \"today\".");
    driver_feed (d, m);
    m = driver_block (SL_B_END, SL_BK_TEXT, 1);
    m.text = sl_str ("Paris is sunny \"today\".");
    //  As the aggregator ends a text block: its citations in the body.
    m.body = sl_str ("{\"citations\":[{\"type\":\"url_citation\",\"url\":\"https://example.org\"}]}");
    driver_feed (d, m);
    m = driver_block (SL_B_START, SL_BK_TOOL_CALL, 2);
    m.id = sl_str ("call_w1");
    m.name = sl_str ("get_weather");
    driver_feed (d, m);
    m = driver_block (SL_B_DELTA, SL_BK_TOOL_CALL, 2);
    m.text = sl_str ("{\"city\":");
    driver_feed (d, m);
    m = driver_block (SL_B_DELTA, SL_BK_TOOL_CALL, 2);
    m.text = sl_str ("\"Paris\"}");
    driver_feed (d, m);
    m = driver_block (SL_B_END, SL_BK_TOOL_CALL, 2);
    m.id = sl_str ("call_w1");
    m.name = sl_str ("get_weather");
    m.text = sl_str ("{\"city\":\"Paris\"}");
    m.flags = SL_F_ARGS_VALID;
    driver_feed (d, m);
    m = driver_block (SL_B_START, SL_BK_TEXT, 3);
    m.flags = SL_F_REPLACED;
    driver_feed (d, m);
    m = driver_block (SL_B_DELTA, SL_BK_TEXT, 3);
    m.text = sl_str ("blocked run_shell");
    driver_feed (d, m);
    m = driver_block (SL_B_END, SL_BK_TEXT, 3);
    m.text = sl_str ("blocked run_shell");
    m.flags = SL_F_REPLACED;
    driver_feed (d, m);
    m = driver_block (SL_B_FINISH, 0, -1);
    m.finish = SL_FIN_TOOL_CALLS;
    m.finish_raw = finish_raw ? sl_str (finish_raw) : SL_STR_NULL;
    m.has_usage = true;
    m.usage = (sl_usage_t) { .input = 40, .output = 25, .total = 65, .cache_read = 8, .cache_write = 3,
                             .reasoning = 5 };
    driver_feed (d, m);
    driver_end (d);
}

//  Redacted thinking, a server tool's use and result, text, and a finish
//  on a stop sequence.
static inline void
driver_server_tools_response (driver_t *d)
{
    driver_feed (d, driver_block (SL_B_START, SL_BK_REDACTED_THINKING, 0));
    sl_msg_t m = driver_block (SL_B_END, SL_BK_REDACTED_THINKING, 0);
    m.text = sl_str ("opaque==");
    driver_feed (d, m);
    m = driver_block (SL_B_START, SL_BK_SERVER_TOOL_USE, 1);
    m.id = sl_str ("srvtoolu_1");
    m.name = sl_str ("web_search");
    driver_feed (d, m);
    m = driver_block (SL_B_DELTA, SL_BK_SERVER_TOOL_USE, 1);
    m.text = sl_str ("{\"query\":\"x\"}");
    driver_feed (d, m);
    m = driver_block (SL_B_END, SL_BK_SERVER_TOOL_USE, 1);
    m.text = sl_str ("{\"query\":\"x\"}");
    driver_feed (d, m);
    m = driver_block (SL_B_START, SL_BK_SERVER_TOOL_RESULT, 2);
    m.id = sl_str ("srvtoolu_1");
    m.name = sl_str ("web_search_tool_result");
    driver_feed (d, m);
    m = driver_block (SL_B_END, SL_BK_SERVER_TOOL_RESULT, 2);
    m.body = sl_str ("[{\"type\":\"web_search_result\",\"url\":\"https://example.org\",\"title\":\"t\","
                     "\"encrypted_content\":\"e\",\"page_age\":null}]");
    driver_feed (d, m);
    driver_feed (d, driver_block (SL_B_START, SL_BK_TEXT, 3));
    m = driver_block (SL_B_DELTA, SL_BK_TEXT, 3);
    m.text = sl_str ("done");
    driver_feed (d, m);
    m = driver_block (SL_B_END, SL_BK_TEXT, 3);
    m.text = sl_str ("done");
    driver_feed (d, m);
    m = driver_block (SL_B_FINISH, 0, -1);
    m.finish = SL_FIN_STOP;
    m.stop_seq = sl_str ("STOP!");
    driver_feed (d, m);
    driver_end (d);
}

#endif
