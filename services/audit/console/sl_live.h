/*  sl_live.h - what the console's live page shows: streams in flight.

    Fed every record the store has just committed (never one it has not:
    the page shows what is recorded), it keeps the streams in flight with
    their tool calls and verdicts, and the last streams that finished, and
    turns each record into one server-sent event for the pages watching:

        event: start    {"sid","at","model","provider","client","client_key","team","user","tools",
                         "last_user"}
        event: call     {"sid","at","index","tool","action","check","rule","reason","judge_model",
                         "team","user","probability","latency_us","arguments"}
        event: block    {"sid","at","index","kind","name","replaced","incomplete","text"}
        event: finish   {"sid","at","finish","usage_in","usage_out"}
        event: error    {"sid","at","code","message","status"}
        event: end      {"sid","at","duration_ms"}
        event: gap      {"at","emitter","lost","streams"}
        event: policy   {"at","judge","policy","name","failures","last_error"}
        event: approval an approval, whole, as sl_approval.h writes it: every
                        state it goes through (pending, then its decision)

    Texts in events are previews (SL_LIVE_PREVIEW bytes); the stream's
    page reads the store for the whole. A new page gets the snapshot
    first (sl_live_snapshot), then the events. A viewer's page gets both
    through sl_live_redact: streams, tool names and verdicts, no contents.

    Bounded: at most SL_LIVE_MAX_STREAMS in flight (the oldest leave the
    view), SL_LIVE_MAX_CALLS calls each, SL_LIVE_RECENT finished ones; a
    stream nothing was heard of for SL_LIVE_IDLE_MS leaves the view
    (sl_live_tick).
*/
#ifndef SL_LIVE_H
#define SL_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "common/base/sl_buf.h"
#include "proto/sl_msg.h"
#include "services/audit/store/sl_record.h"

#define SL_LIVE_MAX_STREAMS 2000
#define SL_LIVE_MAX_CALLS 64
#define SL_LIVE_RECENT 50
#define SL_LIVE_PREVIEW 400
#define SL_LIVE_IDLE_MS 600000

typedef struct _sl_live_t sl_live_t;

sl_live_t *sl_live_new (void);
void sl_live_destroy (sl_live_t **self_p);
//  A committed record: update the view, append its event (the SSE text,
//  "event: ...\ndata: {...}\n\n") to out. Nothing appended for records the
//  page does not show (the stream's response identity).
void sl_live_feed (sl_live_t *self, const sl_record_meta_t *meta, const sl_msg_t *msg, sl_buf_t *out);
//  {"streams":[...in flight, oldest first...],"recent":[...finished, newest first...]}
void sl_live_snapshot (sl_live_t *self, sl_buf_t *out);
//  The SSE text sse (events, the snapshot's too) as a viewer gets it,
//  appended to out: every data line's JSON without what people and
//  models wrote (sl_console_role_redact: last_user, arguments, a block's
//  text, an error's or an approval's message) and with "redacted":true;
//  the rest (comments, retry, event names) as it is. A data line that is
//  no JSON object is left out (fail closed).
void sl_live_redact (sl_str_t sse, sl_buf_t *out);
//  Forget streams idle since before now_ms - SL_LIVE_IDLE_MS.
void sl_live_tick (sl_live_t *self, int64_t now_ms);
size_t sl_live_streams (sl_live_t *self);
//  What the view knows of a stream's request (for webhooks): NULL strings
//  when it does not know the stream. Borrowed until the next feed.
typedef struct {
    const char *model;
    const char *provider;
    const char *client_key;
    const char *client;
} sl_live_context_t;
void sl_live_context (sl_live_t *self, const uint8_t *sid, sl_live_context_t *out);

#endif
