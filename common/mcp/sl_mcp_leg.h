/*  sl_mcp_leg.h - the synthetic requests of MCP's three legs, and readers
    of what the pipeline made of them.

    sluice judges MCP traffic with the code that judges a model's: each
    MCP request policy must see becomes an OpenAI Chat request the gateway
    submits through its own request path, with an inline answer (the SSE
    an OpenAI upstream would have sent) the ingest decodes in place of an
    upstream call. This class builds both and reads the outcome back:

      call leg    tools/call's call. Request: the session's earlier calls
                  (sl_mcp_history_t) as assistant tool calls with
                  placeholder results, then the new call's turn; its only
                  tool is the called tool's definition. Answer: one tool
                  call named mcp__<server>__<tool> with the client's
                  arguments. Read back from the emitter's whole OpenAI
                  Chat response: released (arguments as released, perhaps
                  rewritten), blocked (the block notice the text carries),
                  or failed (an error answer, or anything unexpected:
                  fail closed).
      result leg  tools/call's result. Request: the history, the call,
                  and the server's result as that call's tool message
                  (one text part per text content item, and the
                  structuredContent as one more text part); answer: one
                  empty assistant text. Read back from the judged request:
                  texts redacted in place, a blocked result replaced by
                  {content:[{type:text,text:notice}], isError:true},
                  structuredContent dropped when any text was changed.
      list leg    tools/list. Request: the server's definitions as the
                  request's tools; answer: one empty assistant text. Read
                  back from the judged request: the definitions left.

    Tool names: a call to tool T of server S is the call mcp__S__T
    (sl_mcp_policy_name); on a multiplexed endpoint a client sees S__T
    (sl_mcp_multiplexed_name, split back by sl_mcp_multiplexed_split).

    Pure: builds and reads bytes; nothing here talks to the network.
*/
#ifndef SL_MCP_LEG_H
#define SL_MCP_LEG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

#define SL_MCP_HISTORY_MAX 32           //  earlier calls a session keeps (oldest dropped)
#define SL_MCP_HISTORY_BYTES (64u << 10)    //  the most their names and arguments take (oldest dropped)
#define SL_MCP_HISTORY_CALL_MAX (SL_MCP_HISTORY_BYTES / 4)  //  one call's name and arguments kept whole
#define SL_MCP_TAINT_MAX 64             //  untrusted tools a session names (as SL_TAINT_MAX_TOOLS)
#define SL_MCP_POLICY_PREFIX "mcp__"    //  the prefix of an MCP tool's name in policy
#define SL_MCP_SEPARATOR "__"           //  between server and tool in a name
#define SL_MCP_PROVIDER_PREFIX "mcp:"  //  a leg's model and provider: "mcp:<server>"
#define SL_MCP_PLACEHOLDER "(result not kept)"  //  an earlier call's result in history
#define SL_MCP_ARGS_NOT_KEPT "(arguments not kept)" //  not JSON: passes no args test

//  A session's earlier calls: what the request judge sees as the
//  conversation so far (taint is computed by it from the tool names).
//
//  The window of calls is bounded by count (SL_MCP_HISTORY_MAX) and by
//  bytes (SL_MCP_HISTORY_BYTES of names and arguments): the oldest calls
//  are dropped first, and a call whose name and arguments are over
//  SL_MCP_HISTORY_CALL_MAX is kept by its name, its arguments replaced by
//  SL_MCP_ARGS_NOT_KEPT. So a client sending large arguments costs a
//  session at most SL_MCP_HISTORY_BYTES, and each leg as much.
//
//  Taint outlives the window: the untrusted tools whose results the
//  session read (sl_mcp_history_taint) are named in every later leg, each
//  as one earlier call with its placeholder result, when its own call has
//  left the window. So no number of harmless calls clears a taint.
typedef struct _sl_mcp_history_t sl_mcp_history_t;

sl_mcp_history_t *sl_mcp_history_new (void);
void sl_mcp_history_destroy (sl_mcp_history_t **self_p);
//  Record a call (name: the policy name mcp__S__T; arguments: JSON text;
//  both copied), dropping the oldest beyond the bounds above.
void sl_mcp_history_add (sl_mcp_history_t *self, const char *name, sl_str_t arguments);
size_t sl_mcp_history_count (const sl_mcp_history_t *self);
//  Bytes of the names and arguments the window holds.
size_t sl_mcp_history_bytes (const sl_mcp_history_t *self);
//  The i-th call, oldest first (borrowed); NULL past the end.
const char *sl_mcp_history_name (const sl_mcp_history_t *self, size_t i);
const char *sl_mcp_history_arguments (const sl_mcp_history_t *self, size_t i);
//  The session read a result of name (a policy name), a tool the policy
//  does not trust: the session is tainted by it for the rest of its life.
//  Each name once; past SL_MCP_TAINT_MAX names the session stays tainted
//  by those it holds.
void sl_mcp_history_taint (sl_mcp_history_t *self, const char *name);
//  The untrusted tools named so far, oldest first (borrowed); NULL past
//  the end.
const char *sl_mcp_history_tainted (const sl_mcp_history_t *self, size_t i);

//  mcp__<server>__<tool>, appended to out.
void sl_mcp_policy_name (const char *server, const char *tool, sl_buf_t *out);
//  <server>__<tool>, appended to out.
void sl_mcp_multiplexed_name (const char *server, const char *tool, sl_buf_t *out);
//  Split a multiplexed name at its first "__": 0 with both halves non-empty
//  (slices of name), -1 otherwise.
int sl_mcp_multiplexed_split (sl_str_t name, sl_str_t *server, sl_str_t *tool);

//  The model a leg's request names: "mcp:<server>", appended to out.
void sl_mcp_leg_model (const char *server, sl_buf_t *out);

//  The call leg's request (OpenAI Chat JSON, not streamed). definition is
//  the tool's MCP definition (name, description, inputSchema) or NULL
//  (then a definition with an open schema stands in); history may be
//  NULL. arguments must be a JSON object. 0 ok, -1 when arguments is not
//  an object.
int sl_mcp_leg_call_request (const char *server, const char *tool, sl_str_t arguments,
                             const json_t *definition, const sl_mcp_history_t *history,
                             sl_buf_t *out);
//  The call leg's inline answer: OpenAI Chat SSE of one tool call
//  (id call_id) named mcp__<server>__<tool> with arguments, finishing
//  with tool_calls, then [DONE].
void sl_mcp_leg_call_answer (const char *server, const char *tool, sl_str_t arguments,
                             const char *call_id, sl_buf_t *out);
//  The result leg's request: the history, the released call (call_id,
//  arguments) and result (the server's tools/call result object) as its
//  tool message. 0 ok, -1 when result is not an object.
int sl_mcp_leg_result_request (const char *server, const char *tool, sl_str_t arguments,
                               const char *call_id, const json_t *result,
                               const sl_mcp_history_t *history, sl_buf_t *out);
//  The list leg's request: tools (the server's tools/list definitions, an
//  array) as the request's tools. 0 ok, -1 when tools is not an array.
int sl_mcp_leg_list_request (const char *server, const json_t *tools, sl_buf_t *out);
//  The result and list legs' inline answer: one empty assistant text.
void sl_mcp_leg_empty_answer (sl_buf_t *out);

//  What the pipeline made of a call.
typedef enum {
    SL_MCP_CALL_FAILED = 0,             //  an error, or an answer not understood
    SL_MCP_CALL_RELEASED,               //  call the server with arguments
    SL_MCP_CALL_BLOCKED                 //  answer the client with notice
} sl_mcp_call_outcome_t;

typedef struct {
    sl_mcp_call_outcome_t outcome;
    char *arguments;                    //  released: the arguments (JSON object text)
    bool rewritten;                     //  released: they differ from what was sent
    char *notice;                       //  blocked: the text the client is shown
    char *detail;                       //  failed: why (the error's message, or ours)
} sl_mcp_call_verdict_t;

//  Read the call leg's rendered answer (status: its HTTP status; answer:
//  a whole OpenAI Chat response or an error object) for the call of
//  server's tool with sent arguments. Fills *out (sl_mcp_call_verdict_free
//  it) and returns its outcome. Fails closed: a tool call of another name,
//  several calls, arguments that are not an object, a non-200 status, are
//  SL_MCP_CALL_FAILED.
sl_mcp_call_outcome_t sl_mcp_leg_read_call (int status, sl_str_t answer, const char *server,
                                            const char *tool, sl_str_t sent,
                                            sl_mcp_call_verdict_t *out);
void sl_mcp_call_verdict_free (sl_mcp_call_verdict_t *self);

//  Read the result leg's judged request back into the MCP result the
//  client gets, from result (the server's, as sent in the leg). *out is a
//  new object (caller decrefs): texts as judged, a blocked result as
//  {content:[{type:text,text:notice}], isError:true}, structuredContent
//  dropped when any text changed. *blocked says a rule blocked it.
//  0 ok; -1 when judged cannot be read (the caller must not release the
//  server's result then).
int sl_mcp_leg_read_result (sl_str_t judged, const json_t *result, json_t **out, bool *blocked);
//  Read the list leg's judged request: *out is a new array (caller
//  decrefs) of the definitions in tools (the server's) whose tools the
//  judged request still holds, in the server's order. 0 ok, -1 when judged
//  cannot be read.
int sl_mcp_leg_read_list (sl_str_t judged, const char *server, const json_t *tools, json_t **out);

#endif
