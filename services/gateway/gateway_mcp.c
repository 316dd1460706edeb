/*  gateway_mcp.c - the gateway's MCP front (see gateway_mcp.h and
    docs/mcp.md).

    One MCP request, a POST of one JSON-RPC message, goes:

      who        the client's sluice key, as for a model's request (401),
                 and may its team use the server (403): JSON-RPC errors;
      what       sl_mcp_rpc_parse: size, depth, JSON-RPC, the revision,
                 the 2026-07-28 headers against the body (400 / 413);
      session    the session revisions: initialize opens one (answered
                 here, within the owner's, team's and gateway's caps),
                 every other request names it (Mcp-Session-Id, bound to
                 the key id, team and user); 2026-07-28 has none, its
                 calls to a server run in its owner's upstream session;
      admitted   initialize and what reaches a server, under the key's
                 and team's limits (sl_admission);
      method     initialize, ping, notifications (202), server/discover
                 answered here; tools/list and tools/call through the
                 legs; anything else -32601 (nothing is relayed unjudged).

    tools/call, as a table of steps, each the answer of the one before:

      find the tool     in the server's definitions last listed; not there:
                        list the server once more; still not: -32602
      call leg          the call judged by the judge (gateway_legs_start);
                        blocked: isError with the notice, the server never
                        hears of it; failed for any reason: isError "could
                        not be judged", not sent either (fail closed)
      server call       released: tools/call with the released arguments,
                        sluice's credential, the call leg's span as parent
      result leg        the server's result judged by the request judge
                        (redact, block_result, LLM judge, taint); the
                        client gets the result as judged, or isError when
                        it could not be judged; answered once judged here,
                        the leg going on through the pipeline for its
                        record (one pipeline crossing per call, not two)

    tools/list: the server's list, then the list leg (pins, definition
    rules, the inventory), answered once judged as a result leg; the client gets what is left, minus the tools
    its team's call rules block by name alone (sl_policy_blocks_tool).

    A client that leaves mid-request cancels its leg and its server call.
*/
#include "services/gateway/gateway_mcp.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_log.h"
#include "common/base/sl_version.h"
#include "common/dialects/sl_clientkey.h"
#include "common/http/sl_loopback.h"
#include "common/identity/sl_teamlabel.h"
#include "common/mcp/sl_mcp_leg.h"
#include "common/mcp/sl_mcp_rpc.h"
#include "common/mcp/sl_mcp_servers.h"
#include "common/otel/sl_trace.h"
#include "common/policy/sl_taint.h"
#include "services/gateway/gateway_mcp_client.h"
#include "services/gateway/gateway_mcp_session.h"

#define MCP_PATH "/mcp"
#define MCP_PATH_LEN (sizeof MCP_PATH - 1)
#define MCP_SERVER_NAME_MAX 64          //  the routes file's bound on a server's name
#define MCP_EXPIRE_MS 10000             //  how often idle sessions are looked for
#define MCP_CALL_ID_PREFIX "call_"      //  the id of a call leg's tool call
#define MCP_SERVER_INFO "sluice"        //  serverInfo.name prefix of what the gateway answers itself
#define MCP_LIST_MAX 64                 //  servers one multiplexed tools/list walks at most
#define MCP_ERR_LIMITED -32000          //  a limit of the key or team (the implementation's range)

//  The methods, as a metric label (a bounded set).
typedef enum {
    M_INITIALIZE,
    M_PING,
    M_NOTIFICATION,
    M_TOOLS_LIST,
    M_TOOLS_CALL,
    M_DISCOVER,
    M_DELETE,
    M_OTHER,
    M_COUNT
} s_method_t;

static const char *s_method_names [] = {
    "initialize", "ping", "notification", "tools/list", "tools/call", "server/discover", "delete", "other"
};
_Static_assert (sizeof s_method_names / sizeof s_method_names [0] == M_COUNT, "a name per method");

struct _gateway_mcp_t {
    gateway_core_t *core;
    gateway_legs_t *legs;               //  where its legs start (borrowed)
    const sl_mcp_servers_t *table;      //  the routes file's mcp: section (borrowed)
    size_t servers;                     //  how many it names (0: every /mcp path is 404)
    bool tracing;                       //  the gateway begins a trace for a client without one
    gateway_mcp_sessions_t *sessions;
    gateway_mcp_client_t *client;
    zlistx_t *requests;                 //  requests in flight (s_req_t)
    int expire_timer;
    int renew_timer;                    //  requests in flight keep their places among the concurrent
    sl_metrics_t *metrics;
};

//  One MCP request in flight.
typedef struct {
    gateway_mcp_t *mcp;
    sl_http_req_t *req;
    sl_caller_t *caller;
    s_method_t method;
    sl_mcp_rpc_t rpc;
    bool sse;                           //  the client takes only text/event-stream
    bool multiplexed;                   //  on /mcp: tools named <server>__<tool>
    const sl_mcp_server_t *server;      //  the server it is for (a call's, on /mcp)
    size_t index;                       //  that server's place in the routes file
    char owner [SL_MCP_OWNER_MAX];      //  the caller's key id, team and user (sl_mcp_quota_owner)
    gateway_mcp_session_t *session;     //  NULL: stateless
    gateway_mcp_session_t *upstreams;   //  stateless: its owner's upstream sessions, else NULL
    int64_t started_us;
    //  tools/call
    char *tool;                         //  as the server names it
    char *arguments;                    //  as the client sent them (JSON text)
    char *released;                     //  as the call leg released them
    char call_id [SL_SID_HEX_SIZE + 8];
    bool relisted;                      //  the server was listed again for an unknown tool
    json_t *server_result;              //  the server's result, for the result leg
    //  tools/list
    size_t walk [MCP_LIST_MAX];         //  the servers listed, in order
    size_t walk_count, walk_at;
    json_t *server_tools;               //  the server's list under way
    json_t *listed;                     //  what the client gets
    json_t *next_cursor;                //  the server's nextCursor (one server listed), or NULL
    //  What runs for it now (at most one of the two)
    uint64_t leg;
    bool leg_running;
    bool admitting;                     //  inside sl_admission_admit: its answer must not flush
    gateway_mcp_call_t *call;
    //  For the log line
    char leg_sids [3][SL_SID_HEX_SIZE]; //  call, result, list
    //  Its timeline (mcp_timeline, debug): monotonic µs, 0 not reached
    int64_t leg_us [3][2];              //  each kind's last leg: started, answered
    int64_t server_us [2];              //  the last call to the server: started, answered
    const char *outcome;
    const char *action;                 //  tools/call: allow, rewrite, block, error
} s_req_t;

enum { LEG_CALL, LEG_RESULT, LEG_LIST };

//  --------------------------------------------------------------------------
//  Metrics

static void
s_count_error (gateway_mcp_t *self, const char *reason)
{
    if (!self->servers)
        return;                         //  no MCP here: nothing of it is counted
    char labels [64];
    snprintf (labels, sizeof labels, "reason=\"%s\"", reason);
    sl_counter_inc (sl_metrics_counter (self->metrics, "sluice_mcp_errors_total", labels,
                                        "MCP requests and server answers refused or failed, by reason"));
}

static void
s_count_request (gateway_mcp_t *self, const sl_mcp_server_t *server, s_method_t method, const char *outcome)
{
    char labels [160];
    snprintf (labels, sizeof labels, "server=\"%s\",method=\"%s\",outcome=\"%s\"", server ? server->name : "",
              s_method_names [method], outcome);
    sl_counter_inc (sl_metrics_counter (self->metrics, "sluice_mcp_requests_total", labels,
                                        "MCP requests answered, by server, method and outcome"));
}

static void
s_count_call (gateway_mcp_t *self, const sl_mcp_server_t *server, const char *action)
{
    char labels [128];
    snprintf (labels, sizeof labels, "server=\"%s\",action=\"%s\"", server->name, action);
    sl_counter_inc (sl_metrics_counter (self->metrics, "sluice_mcp_calls_total", labels,
                                        "MCP tools/call requests by what became of the call"));
}

static void
s_observe_server (gateway_mcp_t *self, const sl_mcp_server_t *server, double seconds)
{
    char labels [96];
    snprintf (labels, sizeof labels, "server=\"%s\"", server->name);
    sl_histo_observe (sl_metrics_histogram (self->metrics, "sluice_mcp_server_seconds", labels,
                                            "Time an MCP server took to answer sluice's call",
                                            sl_metrics_latency_bounds, sl_metrics_latency_bounds_count),
                      seconds);
}

static double
s_sessions_gauge (void *arg)
{
    return (double) gateway_mcp_sessions_count (((gateway_mcp_t *) arg)->sessions);
}

//  --------------------------------------------------------------------------
//  Answers

//  The client's answer: JSON, or one SSE event when the client takes only
//  text/event-stream.
static void
s_respond (sl_http_req_t *req, bool sse, int status, sl_buf_t *json)
{
    if (!sse) {
        sl_http_respond (req, status, "application/json", json->data, json->len);
        return;
    }
    sl_buf_t event = { 0 };
    sl_buf_puts (&event, "event: message\ndata: ");
    sl_buf_append (&event, json->data, json->len);
    sl_buf_puts (&event, "\n\n");
    sl_http_respond (req, status, "text/event-stream", event.data, event.len);
    sl_buf_free (&event);
}

//  An error before a message was read (or of a request without one):
//  a JSON-RPC error with a null id.
static void
s_respond_error (gateway_mcp_t *self, sl_http_req_t *req, bool sse, int status, int code, const char *reason,
                 const char *message)
{
    sl_mcp_error_t err;
    sl_mcp_error_set (&err, status, code, reason, "%s", message);
    sl_buf_t out = { 0 };
    sl_mcp_error_json (NULL, &err, &out);
    s_respond (req, sse, status, &out);
    sl_buf_free (&out);
    s_count_error (self, reason);
}

//  Does the client take JSON, or only SSE?
static bool
s_wants_sse (sl_http_req_t *req)
{
    const char *accept = sl_http_req_header (req, "Accept");
    return accept && strstr (accept, "text/event-stream") && !strstr (accept, "application/json")
        && !strstr (accept, "*/*");
}

static void s_req_free (s_req_t *r);

//  A step of the timeline, "start..end" in ms from the request's start,
//  or "-".
static void
s_span_text (const s_req_t *r, const int64_t *us, char *out, size_t size)
{
    if (!us [0])
        snprintf (out, size, "-");
    else
        snprintf (out, size, "%.3f..%.3f", (double) (us [0] - r->started_us) / 1000.0,
                  us [1] ? (double) (us [1] - r->started_us) / 1000.0 : -1.0);
}

//  Where the request's time went, step by step (debug): with the legs'
//  own leg_timeline, what the pipeline crossings cost.
static void
s_log_timeline (const s_req_t *r)
{
    if (!sl_log_enabled (SL_LOG_DEBUG))
        return;
    char call [48], server [48], result [48], list [48];
    s_span_text (r, r->leg_us [LEG_CALL], call, sizeof call);
    s_span_text (r, r->server_us, server, sizeof server);
    s_span_text (r, r->leg_us [LEG_RESULT], result, sizeof result);
    s_span_text (r, r->leg_us [LEG_LIST], list, sizeof list);
    sl_log_debug ("mcp_timeline", "method=%s call_leg_ms=%s server_ms=%s result_leg_ms=%s list_leg_ms=%s"
                  " answered_ms=%.3f", r->rpc.method ? r->rpc.method : s_method_names [r->method], call, server,
                  result, list, (double) (zclock_usecs () - r->started_us) / 1000.0);
}

//  The log line of an MCP request, then its metrics.
static void
s_log (s_req_t *r, int status)
{
    const sl_identity_t *who = sl_caller_identity (r->caller);
    char user [SL_TEAMLABEL_TEXT];
    sl_label_safe (who->user, strlen (who->user), user, sizeof user);
    sl_log_info ("mcp_request", "server=%s method=%s tool=%s key=%s team=%s user=%s outcome=%s action=%s status=%d"
                 " call_sid=%.8s result_sid=%.8s list_sid=%.8s took_ms=%.1f",
                 r->server ? r->server->name : "-", r->rpc.method ? r->rpc.method : s_method_names [r->method],
                 r->tool ? r->tool : "-", *who->key_id ? who->key_id : "-", sl_caller_team_label (r->caller),
                 *user ? user : "-", r->outcome ? r->outcome : "ok", r->action ? r->action : "-", status,
                 r->leg_sids [LEG_CALL][0] ? r->leg_sids [LEG_CALL] : "-",
                 r->leg_sids [LEG_RESULT][0] ? r->leg_sids [LEG_RESULT] : "-",
                 r->leg_sids [LEG_LIST][0] ? r->leg_sids [LEG_LIST] : "-",
                 (double) (zclock_usecs () - r->started_us) / 1000.0);
    s_log_timeline (r);
    s_count_request (r->mcp, r->server, r->method, r->outcome ? r->outcome : "ok");
    if (r->action)
        s_count_call (r->mcp, r->server, r->action);
}

//  Answer the request with a JSON-RPC result and forget it.
static void
s_finish_result (s_req_t *r, json_t *result)
{
    if (r->session == NULL && r->rpc.rev == SL_MCP_REV_2026_07_28 && json_is_object (result)
    &&  !json_object_get (result, "resultType"))
        json_object_set_new (result, "resultType", json_string ("complete"));
    sl_buf_t out = { 0 };
    sl_mcp_result_json (&r->rpc, result, &out);
    s_respond (r->req, r->sse, 200, &out);
    sl_buf_free (&out);
    s_log (r, 200);
    s_req_free (r);
}

//  Answer the request with a JSON-RPC error (counted by reason) and
//  forget it.
static void
s_finish_error (s_req_t *r, int status, int code, const char *reason, const char *message)
{
    sl_mcp_error_t err;
    sl_mcp_error_set (&err, status, code, reason, "%s", message);
    sl_buf_t out = { 0 };
    sl_mcp_error_json (&r->rpc, &err, &out);
    s_respond (r->req, r->sse, status, &out);
    sl_buf_free (&out);
    s_count_error (r->mcp, reason);
    if (!r->outcome)
        r->outcome = "error";
    s_log (r, status);
    s_req_free (r);
}

//  A tool result the client's model reads: isError with text.
static void
s_finish_tool_error (s_req_t *r, const char *text)
{
    json_t *result = json_pack ("{s:[{s:s, s:s}], s:b}", "content", "type", "text", "text", text, "isError", 1);
    s_finish_result (r, result);
    json_decref (result);
}

//  --------------------------------------------------------------------------
//  Requests

static void
s_req_free (s_req_t *r)
{
    gateway_mcp_t *self = r->mcp;
    void *handle = zlistx_find (self->requests, r);
    if (handle)
        zlistx_delete (self->requests, handle);
    if (r->leg_running)
        gateway_legs_cancel (self->legs, r->leg);
    gateway_mcp_client_cancel (self->client, &r->call);
    gateway_mcp_sessions_release (self->sessions, &r->session);
    gateway_mcp_sessions_release (self->sessions, &r->upstreams);
    sl_admission_finish (gateway_core_admission (self->core), &r->caller, NULL, NULL, false);
    sl_mcp_rpc_free (&r->rpc);
    json_decref (r->server_result);
    json_decref (r->server_tools);
    json_decref (r->listed);
    json_decref (r->next_cursor);
    free (r->tool);
    free (r->arguments);
    free (r->released);
    free (r);
}

//  What a request's calls to the servers run in: its session, or its
//  owner's stateless upstream sessions (never another owner's).
static gateway_mcp_session_t *
s_holder (s_req_t *r)
{
    gateway_mcp_session_t *holder = r->session ? r->session : r->upstreams;
    assert (holder);                    //  every request that reaches a server has one (s_dispatch)
    return holder;
}

//  The upstream session a request's calls to server i run in.
static gateway_mcp_upstream_t *
s_upstream (s_req_t *r, size_t i)
{
    gateway_mcp_upstream_t **slot = &s_holder (r)->upstream [i];
    if (!*slot)
        *slot = gateway_mcp_upstream_new ();
    return *slot;
}

//  Where the server's definitions last listed are kept for the request.
static json_t **
s_tools_slot (s_req_t *r, size_t i)
{
    return &s_holder (r)->tools [i];
}

static size_t
s_server_index (gateway_mcp_t *self, const sl_mcp_server_t *server)
{
    for (size_t i = 0; i < self->servers; i++)
        if (sl_mcp_servers_at (self->table, i) == server)
            return i;
    return 0;
}

//  Call the request's server; the reply goes to done. false: it could
//  not start (the request was answered and is gone).
static bool
s_call_server (s_req_t *r, const char *method, const char *name, json_t *params, gateway_mcp_reply_fn *done)
{
    gateway_mcp_request_t request = {
        .server = r->server,
        .upstream = s_upstream (r, r->index),
        .method = method,
        .name = name,
        .params = params,
        .timeout_ms = sl_mcp_servers_timeout_ms (r->mcp->table),
        .max_bytes = sl_mcp_servers_max_response (r->mcp->table),
    };
    r->server_us [0] = zclock_usecs ();
    r->server_us [1] = 0;
    r->call = gateway_mcp_client_call (r->mcp->client, &request, done, r);
    if (!r->call)
        s_finish_error (r, 200, SL_MCP_ERR_INTERNAL, "server_error", "the call to the MCP server could not start");
    return r->call != NULL;
}

//  A server call failed (no response): the client hears why.
static void
s_server_failed (s_req_t *r, const gateway_mcp_reply_t *reply)
{
    char message [SL_MCP_MESSAGE_MAX + 64];
    snprintf (message, sizeof message, "MCP server %s: %s", r->server->name, reply->message ? reply->message : "failed");
    sl_log_warn ("mcp_server_failed", "server=%s method=%s tool=%s reason=%s: %s", r->server->name,
                 s_method_names [r->method], r->tool ? r->tool : "-", reply->reason,
                 reply->message ? reply->message : "?");
    if (r->method == M_TOOLS_CALL && !r->action)
        r->action = "error";
    s_finish_error (r, 200, SL_MCP_ERR_INTERNAL, reply->reason, message);
}

//  The server answered with a JSON-RPC error: the client gets it as is
//  (its code and message), counted as the server's.
static void
s_server_error (s_req_t *r, const json_t *error)
{
    json_t *code = json_object_get (error, "code");
    json_t *message = json_object_get (error, "message");
    char text [SL_MCP_MESSAGE_MAX];
    snprintf (text, sizeof text, "%s", json_is_string (message) ? json_string_value (message) : "the server's error");
    s_finish_error (r, 200, json_is_integer (code) ? (int) json_integer_value (code) : SL_MCP_ERR_INTERNAL,
                    "server_error", text);
}

//  A server's reply: its result (borrowed from reply), or NULL when the
//  call failed or the server answered with an error (the request was
//  answered and is gone).
static json_t *
s_server_result (s_req_t *r, const gateway_mcp_reply_t *reply)
{
    r->call = NULL;
    r->server_us [1] = zclock_usecs ();
    s_observe_server (r->mcp, r->server, reply->seconds);
    if (reply->reason) {
        s_server_failed (r, reply);
        return NULL;
    }
    json_t *error = json_object_get (reply->response, "error");
    if (error) {
        s_server_error (r, error);
        return NULL;
    }
    json_t *result = json_object_get (reply->response, "result");
    if (!json_is_object (result)) {
        s_finish_error (r, 200, SL_MCP_ERR_INTERNAL, "server_error", "the MCP server's result is not an object");
        return NULL;
    }
    return result;
}

//  The client's trace context: the pair in params._meta (MCP's place for
//  it) when it has a traceparent, else the HTTP headers.
static const char *
s_traceparent (s_req_t *r, const char **tracestate)
{
    if (r->rpc.traceparent) {
        *tracestate = r->rpc.tracestate;
        return r->rpc.traceparent;
    }
    *tracestate = sl_http_req_header (r->req, "tracestate");
    return sl_http_req_header (r->req, "traceparent");
}

//  Start a leg of the request; -1 (nothing started) when it cannot.
//  when_judged: the leg's answer is what the gateway's request policy
//  makes of it (a result, a list), so done comes once it is judged and
//  its job left, and the leg's record follows through the pipeline
//  (gateway_leg.h); else done comes with the pipeline's answer (a call:
//  the judge's verdict).
static int
s_start_leg (s_req_t *r, int kind, sl_buf_t *body, sl_buf_t *answer, const char *what, bool when_judged,
             gateway_leg_done_fn *done)
{
    r->leg_us [kind][0] = zclock_usecs ();
    r->leg_us [kind][1] = 0;
    const char *tracestate;
    const char *traceparent = s_traceparent (r, &tracestate);
    gateway_leg_t leg = {
        .body = sl_buf_str (body),
        .inline_answer = sl_buf_str (answer),
        .mcp = what,
        .server = r->server->name,
        .caller = r->caller,
        .traceparent = traceparent,
        .tracestate = tracestate,
        .answer_when_judged = when_judged,
    };
    if (gateway_legs_start (r->mcp->legs, &leg, done, r, &r->leg))
        return -1;
    r->leg_running = true;
    return 0;
}

static void
s_note_leg (s_req_t *r, int kind, const gateway_leg_result_t *result)
{
    r->leg_running = false;
    r->leg_us [kind][1] = zclock_usecs ();
    sl_sid_hex (result->sid, r->leg_sids [kind]);
}

//  --------------------------------------------------------------------------
//  tools/list

static void s_list_next (s_req_t *r);

static bool
s_team_blocks (s_req_t *r, const sl_mcp_server_t *server, const char *tool)
{
    const sl_identity_t *who = sl_caller_identity (r->caller);
    sl_policy_t *policy = gateway_core_policy (r->mcp->core, who->policy);
    if (!policy)
        return false;                   //  the list leg was judged under it: it is there
    sl_buf_t name = { 0 };
    sl_mcp_policy_name (server->name, tool, &name);
    bool blocks = sl_policy_blocks_tool (policy, sl_buf_str (&name), sl_str (who->team));
    sl_buf_free (&name);
    return blocks;
}

static void
s_on_list_leg (void *arg, const gateway_leg_result_t *result)
{
    s_req_t *r = arg;
    s_note_leg (r, LEG_LIST, result);
    json_t *left = NULL;
    if (result->status != 200 || result->refused
    ||  sl_mcp_leg_read_list (result->judged, r->server->name, r->server_tools, &left)) {
        //  A list that could not be judged is not given out: a withheld
        //  definition must not slip through.
        char message [160];
        snprintf (message, sizeof message, "the tool list of MCP server %s could not be judged (status %d%s)",
                  r->server->name, result->status, result->refused ? ", refused by policy" : "");
        s_finish_error (r, 200, SL_MCP_ERR_INTERNAL, "list_unjudged", message);
        return;
    }
    size_t i;
    json_t *tool;
    json_array_foreach (left, i, tool) {
        const char *name = json_string_value (json_object_get (tool, "name"));
        if (!name || s_team_blocks (r, r->server, name))
            continue;
        json_t *copy = json_deep_copy (tool);
        if (r->multiplexed) {
            sl_buf_t prefixed = { 0 };
            sl_mcp_multiplexed_name (r->server->name, name, &prefixed);
            json_object_set_new (copy, "name", json_string (sl_buf_cstr (&prefixed)));
            sl_buf_free (&prefixed);
        }
        json_array_append_new (r->listed, copy);
    }
    json_decref (left);
    r->walk_at++;
    s_list_next (r);
}

static void
s_on_list_server (void *arg, const gateway_mcp_reply_t *reply)
{
    s_req_t *r = arg;
    json_t *result = s_server_result (r, reply);
    if (!result)
        return;
    json_t *tools = json_object_get (result, "tools");
    if (!json_is_array (tools)) {
        s_finish_error (r, 200, SL_MCP_ERR_INTERNAL, "server_error", "the MCP server's tools/list result has no tools");
        return;
    }
    json_decref (r->server_tools);
    r->server_tools = json_incref (tools);
    json_t *cursor = json_object_get (result, "nextCursor");
    if (!r->multiplexed && json_is_string (cursor))
        r->next_cursor = json_incref (cursor);
    json_t **slot = s_tools_slot (r, r->index);
    json_decref (*slot);
    *slot = json_incref (tools);
    sl_buf_t body = { 0 }, answer = { 0 };
    sl_mcp_leg_list_request (r->server->name, tools, &body);
    sl_mcp_leg_empty_answer (&answer);
    if (s_start_leg (r, LEG_LIST, &body, &answer, "tools/list", true, s_on_list_leg))
        s_finish_error (r, 503, SL_MCP_ERR_INTERNAL, "list_unjudged",
                        "the tool list cannot be judged now (the gateway is draining or has no ingest)");
    sl_buf_free (&body);
    sl_buf_free (&answer);
}

//  List the next server of the walk, or answer with what was gathered.
static void
s_list_next (s_req_t *r)
{
    if (r->walk_at >= r->walk_count) {
        json_t *result = json_pack ("{s:O}", "tools", r->listed);
        if (r->next_cursor)
            json_object_set (result, "nextCursor", r->next_cursor);
        //  2026-07-28 makes a list a cacheable result (ttlMs and cacheScope
        //  required; the SDK refuses a list without them). What a client
        //  is listed hangs on its key's team and on a policy that may
        //  change at any moment: private to it, and never cached.
        if (r->rpc.rev == SL_MCP_REV_2026_07_28) {
            json_object_set_new (result, "ttlMs", json_integer (0));
            json_object_set_new (result, "cacheScope", json_string ("private"));
        }
        s_finish_result (r, result);
        json_decref (result);
        return;
    }
    r->index = r->walk [r->walk_at];
    r->server = sl_mcp_servers_at (r->mcp->table, r->index);
    //  The client's cursor goes on to a server it names alone.
    json_t *params = NULL;
    json_t *cursor = json_object_get (r->rpc.params, "cursor");
    if (!r->multiplexed && json_is_string (cursor))
        params = json_pack ("{s:O}", "cursor", cursor);
    s_call_server (r, "tools/list", NULL, params, s_on_list_server);
    json_decref (params);
}

static void
s_tools_list (s_req_t *r)
{
    r->listed = json_array ();
    if (!r->multiplexed)
        r->walk [r->walk_count++] = r->index;
    else {
        const char *team = sl_caller_identity (r->caller)->team;
        for (size_t i = 0; i < r->mcp->servers && r->walk_count < MCP_LIST_MAX; i++)
            if (sl_mcp_server_allows (sl_mcp_servers_at (r->mcp->table, i), sl_str (team)))
                r->walk [r->walk_count++] = i;
    }
    s_list_next (r);
}

//  --------------------------------------------------------------------------
//  tools/call

static void s_call_judge (s_req_t *r);

static json_t *
s_definition (s_req_t *r)
{
    json_t *tools = *s_tools_slot (r, r->index);
    size_t i;
    json_t *tool;
    json_array_foreach (tools, i, tool)
        if (json_is_string (json_object_get (tool, "name"))
        &&  strcmp (json_string_value (json_object_get (tool, "name")), r->tool) == 0)
            return tool;
    return NULL;
}

static void
s_unknown_tool (s_req_t *r)
{
    char message [SL_MCP_MESSAGE_MAX];
    snprintf (message, sizeof message, "Unknown tool: %s", json_string_value (json_object_get (r->rpc.params, "name")));
    s_finish_error (r, 200, SL_MCP_ERR_INVALID_PARAMS, "unknown_tool", message);
}

//  The server listed again for a tool its last list did not have.
static void
s_on_relist (void *arg, const gateway_mcp_reply_t *reply)
{
    s_req_t *r = arg;
    json_t *result = s_server_result (r, reply);
    if (!result)
        return;
    json_t *tools = json_object_get (result, "tools");
    if (json_is_array (tools)) {
        json_t **slot = s_tools_slot (r, r->index);
        json_decref (*slot);
        *slot = json_incref (tools);
    }
    if (!s_definition (r)) {
        s_unknown_tool (r);
        return;
    }
    s_call_judge (r);
}

static void
s_on_result_leg (void *arg, const gateway_leg_result_t *result)
{
    s_req_t *r = arg;
    s_note_leg (r, LEG_RESULT, result);
    json_t *judged = NULL;
    bool blocked = false;
    if (result->status == 200 && !result->refused
    &&  sl_mcp_leg_read_result (result->judged, r->server_result, &judged, &blocked) == 0) {
        if (blocked)
            r->outcome = "result_blocked";
        s_finish_result (r, judged);
        json_decref (judged);
        return;
    }
    //  Fail closed: the server's result is never released unjudged.
    char text [SL_MCP_MESSAGE_MAX];
    if (result->refused)
        snprintf (text, sizeof text, "sluice withheld the result of %s: the policy refused it", r->tool);
    else
        snprintf (text, sizeof text, "sluice withheld the result of %s: it could not be judged (status %d)",
                  r->tool, result->status);
    s_count_error (r->mcp, "result_unjudged");
    r->outcome = "result_withheld";
    s_finish_tool_error (r, text);
}

static void
s_on_server_call (void *arg, const gateway_mcp_reply_t *reply)
{
    s_req_t *r = arg;
    json_t *result = s_server_result (r, reply);
    if (!result)
        return;
    sl_buf_t body = { 0 }, answer = { 0 }, what = { 0 };
    if (sl_mcp_leg_result_request (r->server->name, r->tool, sl_str (r->released), r->call_id, result,
                                   r->session ? r->session->history : NULL, &body)) {
        s_finish_error (r, 200, SL_MCP_ERR_INTERNAL, "server_error", "the MCP server's tools/call result is not an object");
        return;
    }
    r->server_result = json_incref (result);
    sl_mcp_leg_empty_answer (&answer);
    sl_buf_printf (&what, "tools/call %s result", r->tool);
    if (s_start_leg (r, LEG_RESULT, &body, &answer, sl_buf_cstr (&what), true, s_on_result_leg)) {
        s_count_error (r->mcp, "result_unjudged");
        r->outcome = "result_withheld";
        s_finish_tool_error (r, "sluice withheld the tool's result: it cannot be judged now");
    }
    sl_buf_free (&body);
    sl_buf_free (&answer);
    sl_buf_free (&what);
}

//  A released call joins its session's history; the call of a tool the
//  policy does not trust taints the session for good (its result is the
//  session's from now on, whatever comes after: sl_mcp_history_taint).
static void
s_remember_call (s_req_t *r)
{
    sl_buf_t name = { 0 };
    sl_mcp_policy_name (r->server->name, r->tool, &name);
    sl_mcp_history_add (r->session->history, sl_buf_cstr (&name), sl_str (r->released));
    const sl_identity_t *who = sl_caller_identity (r->caller);
    sl_policy_t *policy = gateway_core_policy (r->mcp->core, who->policy);
    if (policy && sl_taint_untrusted (policy, sl_buf_str (&name)))
        sl_mcp_history_taint (r->session->history, sl_buf_cstr (&name));
    sl_buf_free (&name);
}

//  The traceparent the server gets: a child of the call leg's stream span,
//  in the trace the leg continued (the client's, or one begun for it).
static void
s_server_trace (s_req_t *r, const uint8_t *leg_sid, json_t *params)
{
    const char *tracestate;
    const char *traceparent = s_traceparent (r, &tracestate);
    sl_trace_in_t in;
    sl_trace_accept (traceparent, NULL, leg_sid, r->mcp->tracing, &in);
    sl_trace_ctx_t ctx;
    if (!in.has_trace || sl_trace_parse (sl_str (in.tc), true, &ctx))
        return;
    char child [SL_TRACEPARENT_SIZE];
    sl_trace_child (&ctx, leg_sid, child);
    json_t *meta = json_object ();
    json_object_set_new (meta, "traceparent", json_string (child));
    if (r->rpc.traceparent && tracestate)   //  a header's tracestate is not passed on
        json_object_set_new (meta, "tracestate", json_string (tracestate));
    json_object_set_new (params, "_meta", meta);
}

static void
s_on_call_leg (void *arg, const gateway_leg_result_t *result)
{
    s_req_t *r = arg;
    s_note_leg (r, LEG_CALL, result);
    sl_mcp_call_verdict_t verdict;
    switch (sl_mcp_leg_read_call (result->status, result->answer, r->server->name, r->tool, sl_str (r->arguments),
                                  &verdict)) {
        case SL_MCP_CALL_BLOCKED:
            r->action = "block";
            r->outcome = "blocked";
            s_finish_tool_error (r, verdict.notice ? verdict.notice : "sluice blocked this call");
            break;
        case SL_MCP_CALL_FAILED: {
            //  Fail closed: a call that could not be judged cleanly never
            //  reaches the server.
            char text [SL_MCP_MESSAGE_MAX + 64];
            snprintf (text, sizeof text, "sluice did not send this call to %s: it could not be judged (%s)",
                      r->server->name, verdict.detail ? verdict.detail : "no verdict");
            r->action = "error";
            r->outcome = "unjudged";
            s_count_error (r->mcp, "call_unjudged");
            s_finish_tool_error (r, text);
            break;
        }
        case SL_MCP_CALL_RELEASED: {
            r->action = verdict.rewritten ? "rewrite" : "allow";
            r->released = sl_xstrdup (verdict.arguments);
            json_t *arguments = json_loads (r->released, 0, NULL);
            json_t *params = json_pack ("{s:s, s:o}", "name", r->tool, "arguments",
                                        arguments ? arguments : json_object ());
            s_server_trace (r, result->sid, params);
            if (r->session)
                s_remember_call (r);
            s_call_server (r, "tools/call", r->tool, params, s_on_server_call);
            json_decref (params);
            break;
        }
    }
    sl_mcp_call_verdict_free (&verdict);
}

//  The call goes to the judge (the call leg).
static void
s_call_judge (s_req_t *r)
{
    uint8_t random [SL_SID_SIZE];
    char hex [SL_SID_HEX_SIZE];
    sl_sid_new (random);
    sl_sid_hex (random, hex);
    snprintf (r->call_id, sizeof r->call_id, MCP_CALL_ID_PREFIX "%.24s", hex);
    sl_buf_t body = { 0 }, answer = { 0 }, what = { 0 };
    sl_mcp_leg_call_request (r->server->name, r->tool, sl_str (r->arguments), s_definition (r),
                             r->session ? r->session->history : NULL, &body);
    sl_mcp_leg_call_answer (r->server->name, r->tool, sl_str (r->arguments), r->call_id, &answer);
    sl_buf_printf (&what, "tools/call %s", r->tool);
    if (s_start_leg (r, LEG_CALL, &body, &answer, sl_buf_cstr (&what), false, s_on_call_leg)) {
        r->action = "error";
        r->outcome = "unjudged";
        s_count_error (r->mcp, "call_unjudged");
        s_finish_tool_error (r, "sluice did not send this call: it cannot be judged now (the gateway is draining "
                                "or has no ingest)");
    }
    sl_buf_free (&body);
    sl_buf_free (&answer);
    sl_buf_free (&what);
}

static void
s_tools_call (s_req_t *r)
{
    const char *name = r->rpc.name;
    json_t *arguments = json_object_get (r->rpc.params, "arguments");
    if (!name || (arguments && !json_is_object (arguments))) {
        s_finish_error (r, 200, SL_MCP_ERR_INVALID_PARAMS, "bad_request",
                        "tools/call needs params.name and, if any, params.arguments as an object");
        return;
    }
    if (r->multiplexed) {
        sl_str_t server, tool;
        const sl_mcp_server_t *found = NULL;
        if (sl_mcp_multiplexed_split (sl_str (name), &server, &tool) == 0)
            found = sl_mcp_servers_find (r->mcp->table, server);
        if (!found || !sl_mcp_server_allows (found, sl_str (sl_caller_identity (r->caller)->team))) {
            s_unknown_tool (r);
            return;
        }
        r->server = found;
        r->index = s_server_index (r->mcp, found);
        r->tool = sl_xstrndup (tool.ptr, tool.len);
    }
    else
        r->tool = sl_xstrdup (name);
    char *text = arguments ? json_dumps (arguments, JSON_COMPACT) : NULL;
    r->arguments = sl_xstrdup (text ? text : "{}");
    free (text);
    if (s_definition (r)) {
        s_call_judge (r);
        return;
    }
    //  Not in the last list (or none yet): list once more, then judge.
    r->relisted = true;
    s_call_server (r, "tools/list", NULL, NULL, s_on_relist);
}

//  --------------------------------------------------------------------------
//  initialize, server/discover

//  The revision of the session an initialize asks for: the client's when
//  it is a session revision sluice speaks, else the newest of them.
static sl_mcp_rev_t
s_session_rev (const sl_mcp_rpc_t *rpc)
{
    json_t *asked = json_object_get (rpc->params, "protocolVersion");
    sl_mcp_rev_t rev = json_is_string (asked) ? sl_mcp_rev_parse (sl_str (json_string_value (asked)))
                                              : SL_MCP_REV_UNKNOWN;
    return rev == SL_MCP_REV_UNKNOWN || sl_mcp_rev_stateless (rev) ? SL_MCP_REV_2025_11_25 : rev;
}

//  A new session refused: whose cap is full. One owner's or one team's
//  is theirs to free (429: end a session, or let one expire); the
//  gateway's is everyone's (503: another gateway may have room).
static void
s_sessions_refused (s_req_t *r, sl_mcp_quota_full_t full)
{
    size_t cap = gateway_mcp_sessions_cap (r->mcp->sessions, full);
    char message [SL_MCP_MESSAGE_MAX];
    switch (full) {
        case SL_MCP_QUOTA_OWNER:
            snprintf (message, sizeof message, "this key (or token user) holds %zu MCP sessions, the most one may "
                      "(--mcp-sessions-per-key): end one (DELETE) or let one expire", cap);
            r->outcome = "limited";
            s_finish_error (r, 429, MCP_ERR_LIMITED, "sessions_key_full", message);
            return;
        case SL_MCP_QUOTA_TEAM:
            snprintf (message, sizeof message, "this key's team holds %zu MCP sessions, the most one team may "
                      "(--mcp-sessions-per-team): end one (DELETE) or let one expire", cap);
            r->outcome = "limited";
            s_finish_error (r, 429, MCP_ERR_LIMITED, "sessions_team_full", message);
            return;
        default:
            snprintf (message, sizeof message, "this sluice gateway holds %zu MCP sessions, as many as it may "
                      "(--mcp-sessions-max): try again later", cap);
            s_finish_error (r, 503, SL_MCP_ERR_INTERNAL, "sessions_full", message);
            return;
    }
}

static void
s_initialize (s_req_t *r)
{
    gateway_mcp_t *self = r->mcp;
    sl_mcp_rev_t rev = s_session_rev (&r->rpc);
    sl_mcp_quota_full_t full;
    r->session = gateway_mcp_sessions_open (self->sessions, r->owner, sl_caller_identity (r->caller)->team, rev,
                                            zclock_usecs (), &full);
    if (!r->session) {
        s_sessions_refused (r, full);
        return;
    }
    sl_http_add_header (r->req, "Mcp-Session-Id", r->session->id);
    char name [MCP_SERVER_NAME_MAX + 16];
    snprintf (name, sizeof name, MCP_SERVER_INFO "/%s", r->server ? r->server->name : "mcp");
    json_t *result = json_pack ("{s:s, s:{s:{s:b}}, s:{s:s, s:s}}", "protocolVersion", sl_mcp_rev_name (rev),
                                "capabilities", "tools", "listChanged", 0, "serverInfo", "name", name,
                                "version", SL_VERSION);
    s_finish_result (r, result);
    json_decref (result);
}

//  The revisions the gateway speaks to its clients.
static json_t *
s_versions (void)
{
    json_t *versions = json_array ();
    for (int v = SL_MCP_REV_2025_06_18; v < SL_MCP_REV_COUNT; v++)
        json_array_append_new (versions, json_string (sl_mcp_rev_name ((sl_mcp_rev_t) v)));
    return versions;
}

static void
s_on_discover (void *arg, const gateway_mcp_reply_t *reply)
{
    s_req_t *r = arg;
    json_t *result = s_server_result (r, reply);
    if (!result)
        return;
    //  What the server says of itself (its discover result, or the
    //  initialize result of sluice's session with it); what it offers
    //  through sluice is sluice's to say: tools, in the revisions the
    //  gateway speaks.
    json_t *own = result;
    json_t *info = gateway_mcp_upstream_info (s_upstream (r, r->index));
    json_t *server_info = json_object_get (json_object_get (own, "_meta"), "io.modelcontextprotocol/serverInfo");
    if (!server_info)
        server_info = json_object_get (info, "serverInfo");
    json_t *instructions = json_object_get (own, "instructions");
    if (!json_is_string (instructions))
        instructions = json_object_get (info, "instructions");
    json_t *versions = s_versions ();
    json_t *discovered = json_pack ("{s:s, s:o, s:{s:{}}}", "resultType", "complete", "supportedVersions", versions,
                                    "capabilities", "tools");
    if (json_is_object (server_info))
        json_object_set_new (discovered, "_meta", json_pack ("{s:O}", "io.modelcontextprotocol/serverInfo",
                                                             server_info));
    if (json_is_string (instructions))
        json_object_set (discovered, "instructions", instructions);
    s_finish_result (r, discovered);
    json_decref (discovered);
}

//  server/discover: the server's own identity (a discover for a stateless
//  server, a ping that begins sluice's session with a session one).
static void
s_discover (s_req_t *r)
{
    if (r->multiplexed) {
        r->server = NULL;
        json_t *versions = s_versions ();
        json_t *result = json_pack ("{s:s, s:o, s:{s:{}}, s:{s:{s:s, s:s}}}", "resultType", "complete",
                                    "supportedVersions", versions, "capabilities", "tools", "_meta",
                                    "io.modelcontextprotocol/serverInfo", "name", MCP_SERVER_INFO "/mcp",
                                    "version", SL_VERSION);
        s_finish_result (r, result);
        json_decref (result);
        return;
    }
    bool stateless = sl_mcp_rev_stateless (sl_mcp_rev_parse (sl_str (r->server->revision)));
    s_call_server (r, stateless ? "server/discover" : "ping", NULL, NULL, s_on_discover);
}

//  --------------------------------------------------------------------------
//  The endpoint

static s_method_t
s_method_of (const sl_mcp_rpc_t *rpc)
{
    if (rpc->kind == SL_MCP_NOTIFICATION)
        return M_NOTIFICATION;
    static const s_method_t named [] = { M_INITIALIZE, M_PING, M_TOOLS_LIST, M_TOOLS_CALL, M_DISCOVER };
    for (size_t i = 0; i < sizeof named / sizeof named [0]; i++)
        if (strcmp (rpc->method, s_method_names [named [i]]) == 0)
            return named [i];
    return M_OTHER;
}

static void
s_end_upstream (void *arg, size_t server, gateway_mcp_upstream_t *upstream)
{
    gateway_mcp_t *self = arg;
    gateway_mcp_upstream_end (self->client, sl_mcp_servers_at (self->table, server), upstream);
}

//  DELETE: the client ends its session (and sluice its own with the
//  servers).
static void
s_delete (gateway_mcp_t *self, sl_http_req_t *req, const sl_mcp_server_t *server, const sl_identity_t *who)
{
    const char *id = sl_http_req_header (req, "Mcp-Session-Id");
    char owner [SL_MCP_OWNER_MAX];
    sl_mcp_quota_owner (who->key_id, who->team, who->user, owner);
    gateway_mcp_session_t *session = id ? gateway_mcp_sessions_find (self->sessions, id, owner, zclock_usecs ())
                                        : NULL;
    if (!session) {
        s_respond_error (self, req, false, id ? 404 : 400, SL_MCP_ERR_INVALID_REQUEST, "session_unknown",
                         id ? "no such MCP session" : "DELETE needs the Mcp-Session-Id of the session to end");
        s_count_request (self, server, M_DELETE, "error");
        return;
    }
    gateway_mcp_sessions_close (self->sessions, session, s_end_upstream, self);
    gateway_mcp_sessions_release (self->sessions, &session);
    sl_http_respond (req, 204, "application/json", "", 0);
    s_count_request (self, server, M_DELETE, "ok");
}

//  The session a request runs in, for the session revisions: false when
//  it was refused (answered).
static bool
s_find_session (s_req_t *r)
{
    if (sl_mcp_rev_stateless (r->rpc.rev) || r->method == M_INITIALIZE)
        return true;
    const char *id = sl_http_req_header (r->req, "Mcp-Session-Id");
    if (!id) {
        //  ping needs no session; anything else of a session revision does.
        if (r->method == M_PING || r->method == M_NOTIFICATION)
            return true;
        s_finish_error (r, 400, SL_MCP_ERR_INVALID_REQUEST, "session_unknown",
                        "this request needs an Mcp-Session-Id (initialize first), or the 2026-07-28 headers");
        return false;
    }
    r->session = gateway_mcp_sessions_find (r->mcp->sessions, id, r->owner, zclock_usecs ());
    if (!r->session) {
        //  Expired, ended, or another owner's: the client begins a new one.
        s_finish_error (r, 404, SL_MCP_ERR_INVALID_REQUEST, "session_unknown", "no such MCP session: initialize again");
        return false;
    }
    return true;
}

//  Does the method call a server?
static bool
s_reaches_server (s_method_t method)
{
    return method == M_TOOLS_LIST || method == M_TOOLS_CALL || method == M_DISCOVER;
}

static void
s_dispatch (s_req_t *r)
{
    if (sl_mcp_rev_stateless (r->rpc.rev) && !r->session && s_reaches_server (r->method)) {
        //  A stateless request's calls run in its owner's upstream
        //  sessions: what one key's requests leave with a server (a
        //  session, its state) is never another's.
        r->upstreams = gateway_mcp_sessions_stateless (r->mcp->sessions, r->owner,
                                                       sl_caller_identity (r->caller)->team, zclock_usecs ());
        if (!r->upstreams) {
            s_finish_error (r, 503, SL_MCP_ERR_INTERNAL, "sessions_full",
                            "this sluice gateway holds as many MCP upstream sessions as it may "
                            "(--mcp-sessions-max): try again later");
            return;
        }
    }
    switch (r->method) {
        case M_NOTIFICATION:
            //  Nothing is relayed: the server hears only what sluice asks.
            sl_http_respond (r->req, 202, "application/json", "", 0);
            s_log (r, 202);
            s_req_free (r);
            return;
        case M_INITIALIZE:
            s_initialize (r);
            return;
        case M_PING: {
            json_t *empty = json_object ();
            s_finish_result (r, empty);
            json_decref (empty);
            return;
        }
        case M_TOOLS_LIST:
            s_tools_list (r);
            return;
        case M_TOOLS_CALL:
            s_tools_call (r);
            return;
        case M_DISCOVER:
            s_discover (r);
            return;
        default: {
            char message [SL_MCP_MESSAGE_MAX];
            snprintf (message, sizeof message, "Method not found: %s (sluice relays tools only)", r->rpc.method);
            //  2026-07-28 says 404 for a method the server does not
            //  implement; the session revisions answer it in a 200.
            s_finish_error (r, sl_mcp_rev_stateless (r->rpc.rev) ? 404 : 200, SL_MCP_ERR_METHOD_NOT_FOUND,
                            "method_not_found", message);
            return;
        }
    }
}

static void s_after (void *arg);

//  The admission's answer: on its way, or refused by a limit (429, 503)
//  with its Retry-After.
static void
s_on_admitted (void *arg, sl_caller_t *caller, const sl_admission_answer_t *answer)
{
    (void) caller;
    s_req_t *r = arg;
    gateway_mcp_t *self = r->mcp;
    bool now = r->admitting;
    if (answer->outcome == SL_ADMITTED)
        s_dispatch (r);
    else {
        if (answer->retry_after > 0) {
            char seconds [24];
            snprintf (seconds, sizeof seconds, "%lld", (long long) answer->retry_after);
            sl_http_add_header (r->req, "Retry-After", seconds);
        }
        r->outcome = "limited";
        s_finish_error (r, answer->status, MCP_ERR_LIMITED, "limited", answer->message);
    }
    if (!now)
        s_after (self);                 //  the store answered later, from the reactor
}

//  /mcp and the paths under it (the route's), answered now or later.
static bool
s_serve (void *arg, sl_http_req_t *req, const char *method, const char *path)
{
    gateway_mcp_t *self = arg;
    sl_admission_t *admission = gateway_core_admission (self->core);
    bool sse = s_wants_sse (req);
    if (sl_service_draining (gateway_core_service (self->core))) {
        //  As for a model's request: the client goes to another gateway.
        sl_http_add_header (req, "Retry-After", GATEWAY_RETRY_AFTER_S);
        sl_http_add_header (req, "Connection", "close");
        s_respond_error (self, req, sse, 503, SL_MCP_ERR_INTERNAL, "draining",
                         "this sluice gateway is shutting down: send the request again");
        return true;
    }
    const char *name = path [MCP_PATH_LEN] == '/' ? path + MCP_PATH_LEN + 1 : "";
    const sl_mcp_server_t *server = NULL;
    bool multiplexed = false;
    if (!*name)
        multiplexed = self->servers && sl_mcp_servers_multiplexed (self->table);
    else
    if (self->servers && strlen (name) <= MCP_SERVER_NAME_MAX)
        server = sl_mcp_servers_find (self->table, sl_str (name));
    if (!server && !multiplexed) {
        char message [MCP_SERVER_NAME_MAX + 96];
        if (*name)
            snprintf (message, sizeof message, "no MCP server named %.64s here", name);
        else
            snprintf (message, sizeof message, "name the MCP server: /mcp/<server>");
        s_respond_error (self, req, sse, 404, SL_MCP_ERR_INVALID_REQUEST, "unknown_server", message);
        return true;
    }
    //  A browser's request carries its page's Origin: the spec asks a
    //  server to refuse those it does not expect, against DNS rebinding,
    //  keys or not. Programs send none; pages of this machine's loopback
    //  names are let in (sl_loopback.h).
    const char *origin = sl_http_req_header (req, "Origin");
    if (origin && !sl_loopback_origin (origin)) {
        s_respond_error (self, req, sse, 403, SL_MCP_ERR_INVALID_REQUEST, "origin_refused",
                         "requests from web pages of other origins are refused");
        return true;
    }
    if (strcmp (method, "POST") != 0 && strcmp (method, "DELETE") != 0) {
        //  No server-initiated stream (GET): nothing reaches a client
        //  past policy that it did not ask for.
        sl_http_add_header (req, "Allow", "POST, DELETE");
        s_respond_error (self, req, false, 405, SL_MCP_ERR_INVALID_REQUEST, "method_not_allowed",
                         "this MCP endpoint takes POST (and DELETE to end a session)");
        return true;
    }
    const char *reason;
    sl_caller_t *caller = sl_admission_identify (admission,
                                                 sl_clientkey_of (gateway_core_header, gateway_core_query, req),
                                                 &reason);
    if (!caller) {
        s_respond_error (self, req, sse, 401, SL_MCP_ERR_INVALID_REQUEST, "unauthorized", "invalid or missing API key");
        s_count_request (self, server, M_OTHER, "unauthorized");
        return true;
    }
    const sl_identity_t *who = sl_caller_identity (caller);
    if (server && !sl_mcp_server_allows (server, sl_str (who->team))) {
        sl_admission_finish (admission, &caller, NULL, NULL, false);
        char message [MCP_SERVER_NAME_MAX + 64];
        snprintf (message, sizeof message, "this key's team may not use MCP server %s", server->name);
        s_respond_error (self, req, sse, 403, SL_MCP_ERR_INVALID_REQUEST, "forbidden", message);
        s_count_request (self, server, M_OTHER, "forbidden");
        return true;
    }
    if (strcmp (method, "DELETE") == 0) {
        s_delete (self, req, server, who);
        sl_admission_finish (admission, &caller, NULL, NULL, false);
        return true;
    }
    if (sl_http_req_too_large (req)) {
        sl_admission_finish (admission, &caller, NULL, NULL, false);
        s_respond_error (self, req, sse, 413, SL_MCP_ERR_INVALID_REQUEST, "too_large",
                         "the MCP message is over the gateway's body limit");
        return true;
    }
    s_req_t *r = sl_xcalloc (1, sizeof *r);
    r->mcp = self;
    r->req = req;
    r->caller = caller;
    r->sse = sse;
    r->server = server;
    r->multiplexed = multiplexed;
    r->method = M_OTHER;                //  until the message is read
    sl_mcp_quota_owner (who->key_id, who->team, who->user, r->owner);
    r->index = server ? s_server_index (self, server) : 0;
    r->started_us = zclock_usecs ();
    zlistx_add_end (self->requests, r);
    sl_mcp_headers_t headers = { gateway_core_header, req };
    sl_mcp_error_t err;
    if (sl_mcp_rpc_parse (sl_http_req_body (req), &headers, &r->rpc, &err)) {
        sl_buf_t out = { 0 };
        sl_mcp_error_json (&r->rpc, &err, &out);
        s_respond (req, sse, err.status, &out);
        sl_buf_free (&out);
        s_count_error (self, err.reason);
        r->outcome = "error";
        s_log (r, err.status);
        s_req_free (r);
        return true;
    }
    r->method = s_method_of (&r->rpc);
    sl_http_req_drop_body (req);
    if (!s_find_session (r))
        return true;
    if (r->method != M_INITIALIZE && !s_reaches_server (r->method)) {
        s_dispatch (r);                 //  answered here, holding nothing: nothing to admit
        return true;
    }
    //  What reaches a server (and the pipeline) is admitted once, under the
    //  key's and the team's limits; its legs are not admitted again. So is
    //  initialize: a session is memory held for the key, and a key may not
    //  open them faster than its limits let it ask.
    uint8_t sid [SL_SID_SIZE];
    sl_sid_new (sid);
    r->admitting = true;
    sl_admission_admit (admission, r->caller, NULL, sid, s_on_admitted, r);
    if (zlistx_find (self->requests, r))
        r->admitting = false;
    return true;
}

//  A request's client left or its answer went out: when it was an MCP
//  request, its legs and server call, if any, are cancelled.
static bool
s_on_close (void *arg, sl_http_req_t *req)
{
    gateway_mcp_t *self = arg;
    if (!self->servers)
        return false;
    for (s_req_t *r = zlistx_first (self->requests); r; r = zlistx_next (self->requests))
        if (r->req == req) {
            //  The client left mid-request: its leg and its server call
            //  stop with it.
            sl_log_info ("mcp_client_gone", "server=%s method=%s tool=%s", r->server ? r->server->name : "-",
                         s_method_names [r->method], r->tool ? r->tool : "-");
            r->outcome = "client_gone";
            s_count_request (self, r->server, r->method, "client_gone");
            s_req_free (r);
            return true;
        }
    return false;
}

//  --------------------------------------------------------------------------
//  Life

static int
s_on_expire (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    gateway_mcp_t *self = arg;
    size_t expired = gateway_mcp_sessions_expire (self->sessions, zclock_usecs (), s_end_upstream, self);
    if (expired)
        sl_log_info ("mcp_sessions_expired", "count=%zu", expired);
    return 0;
}

//  A request in flight (one waiting for a person's approval may take
//  minutes) keeps its place among its key's and team's concurrent ones.
static int
s_on_renew (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    gateway_mcp_t *self = arg;
    for (s_req_t *r = zlistx_first (self->requests); r; r = zlistx_next (self->requests))
        sl_admission_renew (gateway_core_admission (self->core), r->caller);
    return 0;
}

static void
s_after (void *arg)
{
    gateway_mcp_t *self = arg;
    gateway_core_after (self->core);
}

gateway_mcp_t *
gateway_mcp_new (gateway_core_t *core, gateway_legs_t *legs, const gateway_config_t *config)
{
    gateway_mcp_t *self = sl_xcalloc (1, sizeof *self);
    self->core = core;
    self->legs = legs;
    self->tracing = config->tracing;
    //  Every /mcp path is this route's, while draining too: MCP answers in
    //  JSON-RPC (a 404 when the routes file names no server).
    gateway_route_t route = { .prefix = MCP_PATH, .serve = s_serve, .on_close = s_on_close, .arg = self,
                              .draining = true };
    gateway_core_route (core, &route);
    const sl_mcp_servers_t *table = config->mcp_servers;
    if (!table || sl_mcp_servers_count (table) == 0)
        return self;
    self->table = table;
    self->servers = sl_mcp_servers_count (table);
    sl_service_t *service = gateway_core_service (core);
    self->metrics = sl_service_metrics (service);
    gateway_mcp_sessions_config_t sessions = {
        .max = config->mcp_sessions_max ? config->mcp_sessions_max : GATEWAY_MCP_SESSIONS_MAX,
        .per_key = config->mcp_sessions_per_key ? config->mcp_sessions_per_key : GATEWAY_MCP_SESSIONS_PER_KEY,
        .per_team = config->mcp_sessions_per_team ? config->mcp_sessions_per_team : GATEWAY_MCP_SESSIONS_PER_TEAM,
        .idle_ms = GATEWAY_MCP_SESSION_IDLE_MS,
        .servers = self->servers,
    };
    self->sessions = gateway_mcp_sessions_new (&sessions);
    zloop_t *loop = sl_service_loop (service);
    self->client = gateway_mcp_client_new (loop, s_after, self);
    self->requests = zlistx_new ();
    self->expire_timer = zloop_timer (loop, MCP_EXPIRE_MS, 0, s_on_expire, self);
    self->renew_timer = zloop_timer (loop, SL_LIMITS_RENEW_S * 1000, 0, s_on_renew, self);
    sl_metrics_gauge_fn (self->metrics, "sluice_mcp_sessions", NULL, "MCP client sessions held", s_sessions_gauge, self);
    //  The series a dashboard looks for are there from the start.
    for (size_t i = 0; i < self->servers; i++) {
        const sl_mcp_server_t *server = sl_mcp_servers_at (table, i);
        static const char *actions [] = { "allow", "rewrite", "block", "error" };
        for (size_t a = 0; a < sizeof actions / sizeof actions [0]; a++) {
            char labels [128];
            snprintf (labels, sizeof labels, "server=\"%s\",action=\"%s\"", server->name, actions [a]);
            sl_metrics_counter (self->metrics, "sluice_mcp_calls_total", labels,
                                "MCP tools/call requests by what became of the call");
        }
    }
    sl_log_info ("mcp_servers", "count=%zu multiplexed=%s sessions_max=%zu per_key=%zu per_team=%zu", self->servers,
                 sl_mcp_servers_multiplexed (table) ? "yes" : "no", sessions.max, sessions.per_key,
                 sessions.per_team);
    return self;
}

void
gateway_mcp_destroy (gateway_mcp_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    gateway_mcp_t *self = *self_p;
    if (self->servers) {
        while (zlistx_size (self->requests))
            s_req_free (zlistx_first (self->requests));
        zlistx_destroy (&self->requests);
        gateway_mcp_sessions_destroy (&self->sessions);
        gateway_mcp_client_destroy (&self->client);
        zloop_t *loop = sl_service_loop (gateway_core_service (self->core));
        zloop_timer_end (loop, self->expire_timer);
        zloop_timer_end (loop, self->renew_timer);
    }
    free (self);
    *self_p = NULL;
}
