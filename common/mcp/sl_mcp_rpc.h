/*  sl_mcp_rpc.h - one JSON-RPC message an MCP client POSTs, checked.

    The gateway's MCP front (Streamable HTTP) hands every POST body to
    sl_mcp_rpc_parse with a reader of the request's headers. The body is
    checked before anything trusts it:

      size      at most SL_MCP_MAX_BODY bytes (413);
      shape     counted with the zero-allocation scanner (sl_json_stats)
                before jansson builds a tree: one JSON value, nested at
                most SL_MCP_MAX_DEPTH deep (400, -32700 / -32600);
      JSON-RPC  an object (a batch, an array, is refused: no revision
                sluice speaks has batches), "jsonrpc": "2.0", a method
                (string), params absent or an object, an id that is a
                string or an integer on a request, none on a notification;
                a response (a client answering a server's request) is
                refused too: sluice never relays a server's requests;
      revision  the MCP-Protocol-Version header, and for 2026-07-28 the
                body's params._meta "io.modelcontextprotocol/protocolVersion",
                which must equal it; an unknown revision is 400 with
                -32022 UnsupportedProtocolVersion;
      headers   for 2026-07-28 (the revision that mirrors body fields in
                headers): Mcp-Method must equal method, and Mcp-Name
                (plain, or the =?base64?...?= sentinel form) must equal
                params.name (tools/call, prompts/get) or params.uri
                (resources/read); missing, malformed or different is HTTP
                400 with -32020 HeaderMismatch.

    The trace context an MCP client sends in params._meta (traceparent,
    tracestate: the MCP convention for W3C trace context) is read out.

    The class is pure: no socket, no clock. A parsed message owns its tree
    (sl_mcp_rpc_free); the strings it points to live as long as it.
*/
#ifndef SL_MCP_RPC_H
#define SL_MCP_RPC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"
#include "common/dialects/sl_dialect.h"

#define SL_MCP_MAX_BODY (4u * 1024u * 1024u)   //  largest client message
#define SL_MCP_MAX_DEPTH 64                     //  deepest nesting of a client message
#define SL_MCP_MESSAGE_MAX 256                  //  longest error message kept
#define SL_MCP_REV_NAME_MAX 32                  //  longest revision name kept for an error

//  JSON-RPC and MCP error codes.
#define SL_MCP_ERR_PARSE -32700                 //  not JSON
#define SL_MCP_ERR_INVALID_REQUEST -32600       //  JSON, not a valid request
#define SL_MCP_ERR_METHOD_NOT_FOUND -32601
#define SL_MCP_ERR_INVALID_PARAMS -32602        //  also an unknown tool
#define SL_MCP_ERR_INTERNAL -32603
#define SL_MCP_ERR_HEADER_MISMATCH -32020       //  2026-07-28 HeaderMismatch
#define SL_MCP_ERR_UNSUPPORTED_VERSION -32022   //  2026-07-28 UnsupportedProtocolVersion

//  The _meta key of 2026-07-28 carrying a request's revision.
#define SL_MCP_META_VERSION "io.modelcontextprotocol/protocolVersion"

//  The revisions sluice speaks, oldest first.
typedef enum {
    SL_MCP_REV_UNKNOWN = 0,             //  none said (no header, no _meta)
    SL_MCP_REV_2025_06_18,
    SL_MCP_REV_2025_11_25,
    SL_MCP_REV_2026_07_28,              //  stateless: no sessions, headers mirror the body
    SL_MCP_REV_COUNT
} sl_mcp_rev_t;

//  A revision by its name ("2025-11-25"); SL_MCP_REV_UNKNOWN when sluice
//  does not speak it.
sl_mcp_rev_t sl_mcp_rev_parse (sl_str_t name);
//  Its name (static text); "" for SL_MCP_REV_UNKNOWN.
const char *sl_mcp_rev_name (sl_mcp_rev_t rev);
//  True for a revision without sessions (2026-07-28).
bool sl_mcp_rev_stateless (sl_mcp_rev_t rev);

//  The request's headers: fn (sl_dialect.h) reads one by name,
//  case-insensitively, NULL when absent.
typedef struct {
    sl_header_fn *fn;
    void *arg;
} sl_mcp_headers_t;

//  What a message is.
typedef enum {
    SL_MCP_REQUEST = 1,                 //  has an id: answered
    SL_MCP_NOTIFICATION                 //  no id: 202, no answer
} sl_mcp_kind_t;

//  One parsed client message. Pointers borrow from root.
typedef struct {
    json_t *root;                       //  the whole message (owned)
    sl_mcp_kind_t kind;
    const json_t *id;                   //  string or integer; NULL on a notification
    const char *method;
    const json_t *params;               //  an object, or NULL when absent
    const char *name;                   //  params.name (tools/call, prompts/get) or
                                        //  params.uri (resources/read), else NULL
    sl_mcp_rev_t rev;                   //  header, else _meta; SL_MCP_REV_UNKNOWN when neither
    const char *traceparent;            //  params._meta.traceparent, or NULL
    const char *tracestate;             //  params._meta.tracestate, or NULL
} sl_mcp_rpc_t;

//  Why a message was refused.
typedef struct {
    int status;                         //  HTTP status (400, 413...)
    int code;                           //  JSON-RPC code (SL_MCP_ERR_*)
    const char *reason;                 //  metrics label (static): too_large, too_deep,
                                        //  bad_json, bad_request, header_mismatch, bad_version
    char message [SL_MCP_MESSAGE_MAX];  //  what the client is told
    char requested [SL_MCP_REV_NAME_MAX];   //  -32022: the revision asked for (its data)
} sl_mcp_error_t;

//  Fill err; returns -1.
int sl_mcp_error_set (sl_mcp_error_t *err, int status, int code, const char *reason,
                      const char *format, ...) __attribute__ ((format (printf, 5, 6)));

//  Parse and check one client message (see above). 0 with *out filled
//  (sl_mcp_rpc_free it); -1 with *err filled and *out empty (out->id may
//  still be set when the body's id could be read, so the error answers it:
//  pass out to sl_mcp_error_json, then sl_mcp_rpc_free it).
int sl_mcp_rpc_parse (sl_str_t body, const sl_mcp_headers_t *headers, sl_mcp_rpc_t *out,
                      sl_mcp_error_t *err);
//  Free what a parse left; safe on a zeroed or freed message.
void sl_mcp_rpc_free (sl_mcp_rpc_t *self);

//  Append the JSON-RPC error response for err, answering rpc's id (null
//  when rpc is NULL or has none). -32022 carries the revisions sluice
//  speaks and the one asked for in its data, as 2026-07-28 says.
void sl_mcp_error_json (const sl_mcp_rpc_t *rpc, const sl_mcp_error_t *err, sl_buf_t *out);
//  Append the JSON-RPC result response {"jsonrpc":"2.0","id":..,"result":..}
//  answering rpc's id with result (an object; {} when NULL). To a
//  2026-07-28 request a result without resultType says "complete" (every
//  result of that revision carries it).
void sl_mcp_result_json (const sl_mcp_rpc_t *rpc, const json_t *result, sl_buf_t *out);

#endif
