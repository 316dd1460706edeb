/*  sl_request.h - turning a client's request into a request job.

    A pure library: given the endpoint a client called and the body it
    posted, check the request and prepare what the ingest needs: the
    upstream request body (streaming forced on, also for a client that
    asked for a whole response; usage asked for where the dialect has a
    switch for it), the model, the request's tool
    definitions in normalized form ([{"name":..,"schema":{..}}]) for the
    judge, and the text of the last user message. A request sluice cannot
    serve is refused with the status, error type and message to send back
    in the client's dialect.

    Endpoints (sl_request_route):
      POST /v1/chat/completions                         OpenAI Chat Completions
      POST /v1/messages                                 Anthropic Messages
      POST /v1/responses                                OpenAI Responses
      POST /v1beta/models/{model}:streamGenerateContent Gemini (also under /v1/,
           /v1beta/models/{model}:generateContent        and without the version)
    The upstream dialect is the client's (same-dialect); routing a model to
    another provider is the ingest's business.
*/
#ifndef SL_REQUEST_H
#define SL_REQUEST_H

#include <stdbool.h>

#include "../../common/sl_buf.h"
#include "../../common/sl_json.h"
#include "../../proto/sl_msg.h"

#define SL_REQUEST_MODEL_MAX 256        //  longest model name taken from a path

//  Memory one request's parse may take. jansson builds a tree of the
//  whole body, and small values cost it far more than their text (an
//  empty object, "{}," in the body, takes ~240 bytes). The body is first
//  counted with the zero-allocation scanner (sl_json_stats); one whose
//  tree would take more than SL_REQUEST_TREE_FACTOR times its size plus
//  SL_REQUEST_TREE_FLOOR is refused (413) before jansson allocates
//  anything. The floor keeps requests heavy with tool schemas (~25 times
//  their text) well within it; tests/bench/bench_request.c measures both.
#define SL_REQUEST_TREE_FACTOR 4
#define SL_REQUEST_TREE_FLOOR ((size_t) 16 << 20)

typedef struct {
    int client_dialect;                 //  sl_dialect_t
    int upstream_dialect;
    sl_buf_t model;
    bool stream;                        //  client wants a streaming response (else one body)
    bool include_usage;                 //  client asked for usage in the stream
    sl_buf_t upstream_body;             //  JSON to send upstream
    sl_buf_t tools;                     //  normalized tool definitions (JSON)
    sl_buf_t last_user;                 //  text of the last user message
    //  When the request is refused
    int status;
    const char *error_type;
    sl_buf_t error_message;
} sl_request_t;

//  Which endpoint a path names.
typedef struct {
    int dialect;                        //  sl_dialect_t, 0 when no endpoint matched
    bool stream;                        //  Gemini: the streaming method was called
    char model [SL_REQUEST_MODEL_MAX];  //  Gemini: the model in the path
} sl_route_t;

//  Match a request path (no query string). 1 when it names an endpoint,
//  0 otherwise; out->dialect is then still set to the dialect the path
//  looks like (for the shape of the 404), or 0.
int sl_request_route (const char *path, sl_route_t *out);

//  Parse a request of each dialect. 0 ok; -1 refused (status, error_type
//  and error_message say why). Gemini takes the model and the method from
//  the path, and sse: whether the client asked for alt=sse.
int sl_request_parse_openai (sl_str_t body, sl_request_t *out);
int sl_request_parse_anthropic (sl_str_t body, sl_request_t *out);
int sl_request_parse_responses (sl_str_t body, sl_request_t *out);
int sl_request_parse_gemini (sl_str_t body, const sl_route_t *route, bool sse, sl_request_t *out);
//  What jansson's tree of a body with these counts takes, bytes (an
//  estimate from jansson 2.14's structures, a little above what it takes).
size_t sl_request_tree_cost (const sl_json_stats_t *stats);
//  The most a body of this size may cost.
size_t sl_request_tree_budget (size_t body_len);
//  Free what a parse filled in; the struct can be reused.
void sl_request_clear (sl_request_t *self);

#endif
