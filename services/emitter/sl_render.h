/*  sl_render.h - per-dialect renderers used by the emitter (private).

    The emitter owns the stream; a renderer turns one judged event into the
    client's bytes, appended to out. It keeps what it needs between events
    in the stream's sl_render_stream_t.
*/
#ifndef SL_RENDER_H
#define SL_RENDER_H

#include <stdbool.h>

#include "../../common/sl_buf.h"
#include "../../proto/sl_msg.h"

typedef struct {
    int client_dialect;
    int upstream_dialect;
    uint32_t flags;                     //  STREAM, USAGE of the request
    sl_buf_t model;                     //  model as reported (or requested)
    sl_buf_t id;                        //  response id
    int64_t created;
    bool started;                       //  response headers are out
    bool failed;                        //  an error was rendered
    int tool_calls;                     //  tool calls started so far; blocks are
                                        //  sequential, so the open call is the last
    sl_buf_t prefix;                    //  OpenAI: chunk JSON up to "choices"
} sl_render_stream_t;

//  Render a BLOCK event (message, block_start / delta / end, finish).
void sl_render_openai_block (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out);
//  Render an error inside a started stream.
void sl_render_openai_error (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out);
//  Render the end of a stream that finished normally.
void sl_render_openai_end (sl_render_stream_t *rs, sl_buf_t *out);
//  The JSON body of an error response sent before anything else.
void sl_render_openai_error_body (const sl_msg_t *msg, sl_buf_t *out);
//  The wire value of a normalized finish reason.
const char *sl_render_openai_finish (int finish);

#endif
