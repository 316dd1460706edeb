/*  sl_mcp_answer.h - an MCP server's answer to one POST, read as it comes.

    The gateway POSTs one JSON-RPC request to an MCP server and feeds what
    comes back, chunk by chunk, to this class. Streamable HTTP allows two
    shapes: a JSON body (application/json) holding the response, or a
    server-sent event stream (text/event-stream) whose events carry
    JSON-RPC messages: notifications (progress, log messages) and requests
    to the client (elicitation, sampling, roots) may come before the
    response. Here:

      - the response is the message with the request's id and a result or
        an error; once it is complete the gateway stops reading;
      - notifications are skipped and counted;
      - a server request to the client is refused: counted, not relayed
        (sluice never lets a server reach the client past policy); so is
        2026-07-28's form of it, a result whose resultType is not
        "complete" (input_required: the server asks the client for input),
        which fails the answer;
      - everything is bounded: the answer's bytes (max_bytes), one event's
        size (max_event); over either, or a malformed message, or the
        stream ending without the response, is a failure with a reason.

    A deadline is the caller's: the class has no clock. Pure: no socket.
*/
#ifndef SL_MCP_ANSWER_H
#define SL_MCP_ANSWER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct _sl_mcp_answer_t sl_mcp_answer_t;

#define SL_MCP_ANSWER_MAX_EVENT (4u * 1024u * 1024u)   //  default bound of one SSE event

//  Where an answer is.
typedef enum {
    SL_MCP_ANSWER_FAILED = -1,          //  see sl_mcp_answer_reason
    SL_MCP_ANSWER_MORE = 0,             //  feed more
    SL_MCP_ANSWER_DONE = 1              //  the response is complete
} sl_mcp_answer_state_t;

//  A reader for the answer to the request whose id is id (copied);
//  content_type is the answer's Content-Type header (NULL: JSON).
//  max_bytes bounds the whole answer, max_event one SSE event (0: the
//  default). NULL when the content type is neither JSON nor SSE.
sl_mcp_answer_t *sl_mcp_answer_new (const json_t *id, const char *content_type,
                                    size_t max_bytes, size_t max_event);
void sl_mcp_answer_destroy (sl_mcp_answer_t **self_p);

//  Feed the next bytes. Returns the state; once DONE or FAILED, more bytes
//  change nothing.
sl_mcp_answer_state_t sl_mcp_answer_feed (sl_mcp_answer_t *self, const char *data, size_t size);
//  The server closed the answer: DONE when the response came, else FAILED.
sl_mcp_answer_state_t sl_mcp_answer_finish (sl_mcp_answer_t *self);
sl_mcp_answer_state_t sl_mcp_answer_state (const sl_mcp_answer_t *self);

//  The response object (borrowed; NULL until DONE).
const json_t *sl_mcp_answer_response (const sl_mcp_answer_t *self);
//  Its result, or its error object (borrowed; NULL when it has none).
const json_t *sl_mcp_answer_result (const sl_mcp_answer_t *self);
const json_t *sl_mcp_answer_error (const sl_mcp_answer_t *self);
//  Why it failed (static metrics label: server_too_large, server_error),
//  and a readable detail; NULL while not failed.
const char *sl_mcp_answer_reason (const sl_mcp_answer_t *self);
const char *sl_mcp_answer_detail (const sl_mcp_answer_t *self);
//  Notifications skipped and server requests refused so far.
size_t sl_mcp_answer_notifications (const sl_mcp_answer_t *self);
size_t sl_mcp_answer_requests (const sl_mcp_answer_t *self);
//  Bytes fed so far.
size_t sl_mcp_answer_bytes (const sl_mcp_answer_t *self);

#endif
