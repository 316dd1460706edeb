/*  gateway_mcp_client.h - the gateway's calls to the MCP servers it fronts
    (Streamable HTTP), inside the gateway's reactor.

    One POST per JSON-RPC request, over libcurl multi (sl_curlm), so a slow
    server costs a socket and never a blocked loop. Each call:

      - carries sluice's credential for the server (its key_env, read
        when the call starts, never logged; the client's own token never
        goes upstream), the server revision's headers (MCP-Protocol-Version,
        Mcp-Method and Mcp-Name for 2026-07-28, whose params also carry
        the revision in _meta) and Accept for JSON and SSE;
      - is bounded by the routes file's timeout_ms (from the call's start,
        whatever steps it takes) and max_response_bytes (sl_mcp_answer
        reads the answer as it comes and says when the response of the
        request's id is complete: the transfer stops there, so a server
        that streams notifications forever is cut at its bound);
      - runs in an upstream session (gateway_mcp_upstream_t) for the
        session revisions: initialize and notifications/initialized on
        first need, and once more when the server answers 404 (its
        session expired); the stateless revision has none.

    done is called exactly once per call not cancelled, never from inside
    gateway_mcp_client_call.
*/
#ifndef GATEWAY_MCP_CLIENT_H
#define GATEWAY_MCP_CLIENT_H

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>

#include "common/mcp/sl_mcp_servers.h"

typedef struct _gateway_mcp_client_t gateway_mcp_client_t;
typedef struct _gateway_mcp_call_t gateway_mcp_call_t;
typedef struct _gateway_mcp_upstream_t gateway_mcp_upstream_t;

//  What came of a call. reason is NULL when the server answered with a
//  JSON-RPC response (response: its result or error object), else the
//  failure's metric label (server_timeout, server_too_large,
//  server_error) and message what the client is told.
typedef struct {
    const char *reason;
    const char *message;
    json_t *response;                   //  the JSON-RPC response (borrowed for the call)
    int status;                         //  the HTTP status of the last answer, 0: none
    double seconds;                     //  from the call's start to its end
} gateway_mcp_reply_t;
typedef void (gateway_mcp_reply_fn) (void *arg, const gateway_mcp_reply_t *reply);

gateway_mcp_client_t *gateway_mcp_client_new (zloop_t *loop, void (*after) (void *arg), void *arg);
//  Stops every call; reports nothing.
void gateway_mcp_client_destroy (gateway_mcp_client_t **self_p);

//  An upstream session with one server, shared by the calls made in it
//  (a client's session, or the stateless clients of one server).
//  Reference counted: a call holds its upstream until it ends.
gateway_mcp_upstream_t *gateway_mcp_upstream_new (void);
gateway_mcp_upstream_t *gateway_mcp_upstream_ref (gateway_mcp_upstream_t *self);
void gateway_mcp_upstream_unref (gateway_mcp_upstream_t **self_p);
//  The server's initialize result once the session was initialized
//  (serverInfo, instructions), else NULL. Borrowed.
json_t *gateway_mcp_upstream_info (gateway_mcp_upstream_t *self);
//  End the upstream session (DELETE to the server, not waited for).
void gateway_mcp_upstream_end (gateway_mcp_client_t *self, const sl_mcp_server_t *server,
                               gateway_mcp_upstream_t *upstream);

typedef struct {
    const sl_mcp_server_t *server;      //  borrowed: outlives the call (the routes file)
    gateway_mcp_upstream_t *upstream;   //  its session with the server (referenced by the call)
    const char *method;                 //  "tools/list", "tools/call", "server/discover"
    const char *name;                   //  Mcp-Name: the tool of a tools/call, else NULL
    json_t *params;                     //  the request's params (a reference is taken), or NULL
    long timeout_ms;                    //  the whole call's deadline
    size_t max_bytes;                   //  the most an answer may be
} gateway_mcp_request_t;

//  Start a call; NULL when it cannot start (done is then not called).
gateway_mcp_call_t *gateway_mcp_client_call (gateway_mcp_client_t *self, const gateway_mcp_request_t *request,
                                             gateway_mcp_reply_fn *done, void *arg);
//  The client left: stop the call; done is not called. *call_p is NULL after.
void gateway_mcp_client_cancel (gateway_mcp_client_t *self, gateway_mcp_call_t **call_p);

#endif
