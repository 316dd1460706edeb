/*  sl_request.h - turning a client's request into a request job.

    A pure library: given the body a client posted to one of the endpoints,
    check it, and prepare what the ingest needs: the upstream request body
    (streaming forced on, usage asked for), the model, the request's tool
    definitions in normalized form ([{"name":..,"schema":{..}}]) for the
    judge, and the text of the last user message. A request sluice cannot
    serve is refused with the status, error type and message to send back.
*/
#ifndef SL_REQUEST_H
#define SL_REQUEST_H

#include <stdbool.h>

#include "../../common/sl_buf.h"
#include "../../proto/sl_msg.h"

typedef struct {
    int client_dialect;                 //  sl_dialect_t
    int upstream_dialect;
    sl_buf_t model;
    bool stream;                        //  client wants a streaming response
    bool include_usage;                 //  client asked for usage in the stream
    sl_buf_t upstream_body;             //  JSON to send upstream
    sl_buf_t tools;                     //  normalized tool definitions (JSON)
    sl_buf_t last_user;                 //  text of the last user message
    //  When the request is refused
    int status;
    const char *error_type;
    sl_buf_t error_message;
} sl_request_t;

//  Parse an OpenAI Chat Completions request. 0 ok; -1 refused (status,
//  error_type and error_message say why).
int sl_request_parse_openai (sl_str_t body, sl_request_t *out);
//  Free what a parse filled in; the struct can be reused.
void sl_request_clear (sl_request_t *self);

#endif
