/*  sse_client.h - read an OpenAI chat stream as a client would, for tests. */
#ifndef SSE_CLIENT_H
#define SSE_CLIENT_H

#include <stdbool.h>

#include "common/base/sl_buf.h"

#define SSE_CLIENT_MAX_CALLS 8

typedef struct {
    sl_buf_t content;                   //  all content deltas joined
    struct {
        sl_buf_t id, name, arguments;
    } calls [SSE_CLIENT_MAX_CALLS];     //  by OpenAI tool index
    int call_count;
    int finish_count;                   //  chunks with a non-null finish_reason
    sl_buf_t finish;                    //  the last finish_reason
    int errors;                         //  error events
    sl_buf_t error_type;
    bool done_last;                     //  [DONE] was the last event
    bool saw_done;
    int events;
    int malformed;                      //  events that were not valid JSON
    bool usage;                         //  a usage chunk arrived
} chat_stream_t;

//  Parse a whole SSE response body.
void chat_stream_parse (const char *body, chat_stream_t *out);
void chat_stream_free (chat_stream_t *s);

#endif
