/*  sl_mcp_answer.c - an MCP server's answer to one POST, read as it comes.

    Two readers behind one interface: a JSON body is gathered (bounded)
    until it holds one complete value; an event stream goes through the
    SSE parser sluice already has for upstreams (sl_sse), one JSON-RPC
    message per event. Each message, however it came, goes through
    s_take_message: the response to our id ends the answer, a notification
    is counted and skipped, a server's request to the client is counted
    and refused (never relayed). See sl_mcp_answer.h.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_json.h"
#include "common/mcp/sl_mcp_answer.h"
#include "common/http/sl_sse.h"

#define SL_MCP_DETAIL_MAX 160           //  longest failure detail kept

struct _sl_mcp_answer_t {
    json_t *id;                         //  the request's id (a copy)
    bool sse;                           //  an event stream, else one JSON body
    sl_sse_t *parser;                   //  SSE only
    sl_buf_t body;                      //  JSON only: the bytes so far
    size_t max_bytes;
    size_t max_event;
    size_t bytes;                       //  fed so far
    sl_mcp_answer_state_t state;
    json_t *response;                   //  once DONE
    const char *reason;                 //  once FAILED
    char detail [SL_MCP_DETAIL_MAX];
    size_t notifications;
    size_t requests;
};

//  The media type of a Content-Type value is type (before parameters).
static bool
s_media_is (const char *content_type, const char *type)
{
    size_t n = strlen (type);
    while (*content_type == ' ')
        content_type++;
    if (strncasecmp (content_type, type, n) != 0)
        return false;
    char c = content_type [n];
    return c == 0 || c == ';' || c == ' ';
}

sl_mcp_answer_t *
sl_mcp_answer_new (const json_t *id, const char *content_type, size_t max_bytes, size_t max_event)
{
    bool sse = false;
    if (content_type && s_media_is (content_type, "text/event-stream"))
        sse = true;
    else if (content_type && !s_media_is (content_type, "application/json"))
        return NULL;
    sl_mcp_answer_t *self = sl_xcalloc (1, sizeof *self);
    self->id = id ? json_deep_copy (id) : json_null ();
    self->sse = sse;
    self->max_bytes = max_bytes;
    self->max_event = max_event ? max_event : SL_MCP_ANSWER_MAX_EVENT;
    if (sse)
        self->parser = sl_sse_new (self->max_event);
    return self;
}

void
sl_mcp_answer_destroy (sl_mcp_answer_t **self_p)
{
    sl_mcp_answer_t *self = *self_p;
    if (!self)
        return;
    json_decref (self->id);
    json_decref (self->response);
    sl_sse_destroy (&self->parser);
    sl_buf_free (&self->body);
    free (self);
    *self_p = NULL;
}

static sl_mcp_answer_state_t
s_fail (sl_mcp_answer_t *self, const char *reason, const char *detail)
{
    self->state = SL_MCP_ANSWER_FAILED;
    self->reason = reason;
    snprintf (self->detail, sizeof self->detail, "%s", detail);
    return self->state;
}

//  One JSON-RPC message of the server's.
static sl_mcp_answer_state_t
s_take_message (sl_mcp_answer_t *self, sl_str_t text)
{
    sl_json_stats_t stats;
    if (sl_json_stats (text, &stats) != 0)
        return s_fail (self, "server_error", stats.too_deep ? "answer nested too deeply"
                                                            : "answer is not JSON");
    if (sl_json_type (text) != SL_JSON_OBJECT)
        return s_fail (self, "server_error", "answer is not a JSON-RPC message");
    json_t *message = json_loadb (text.ptr, text.len, JSON_REJECT_DUPLICATES, NULL);
    if (!message)
        return s_fail (self, "server_error", "answer is not JSON");
    const json_t *method = json_object_get (message, "method");
    const json_t *id = json_object_get (message, "id");
    if (method) {
        //  A request to the client (elicitation, sampling, roots) is not
        //  relayed: the client never reaches a server past policy, nor a
        //  server the client. A notification is of no use to the answer.
        if (id)
            self->requests++;
        else
            self->notifications++;
        json_decref (message);
        return self->state;
    }
    if (!id || !json_equal ((json_t *) id, self->id)) {
        json_decref (message);          //  not the answer to our request
        return self->state;
    }
    const json_t *result = json_object_get (message, "result");
    const json_t *error = json_object_get (message, "error");
    if ((result != NULL) == (error != NULL)
        || (result && !json_is_object (result)) || (error && !json_is_object (error))) {
        json_decref (message);
        return s_fail (self, "server_error", "response holds neither a result nor an error object");
    }
    //  2026-07-28: an interim result asking the client for input (elicitation,
    //  sampling) is a server's request to the client in another form.
    const json_t *type = json_object_get (result, "resultType");
    if (type && !(json_is_string (type) && strcmp (json_string_value (type), "complete") == 0)) {
        json_decref (message);
        self->requests++;
        return s_fail (self, "server_error", "the server asks the client for input (not relayed)");
    }
    self->response = message;
    self->state = SL_MCP_ANSWER_DONE;
    return self->state;
}

static int
s_on_event (void *arg, sl_str_t type, sl_str_t data, sl_str_t id)
{
    (void) id;
    sl_mcp_answer_t *self = arg;
    if (!sl_str_eq (type, "message"))
        return 0;                       //  only message events carry JSON-RPC
    if (sl_json_trim (data).len == 0)
        return 0;                       //  a priming event (2025-11-25): an id, no message
    return s_take_message (self, data) == SL_MCP_ANSWER_MORE ? 0 : 1;
}

//  A JSON body ends when it holds one complete value: cheap to ask only
//  when its last byte closes an object.
static bool
s_json_complete (const sl_buf_t *body)
{
    sl_str_t text = sl_json_trim (sl_buf_str (body));
    return text.len > 0 && text.ptr [text.len - 1] == '}'
        && sl_json_skip (text.ptr, text.ptr + text.len) == text.ptr + text.len;
}

//  A JSON body is one message: when it is not the response, nothing else
//  will come that is.
static sl_mcp_answer_state_t
s_take_body (sl_mcp_answer_t *self)
{
    if (s_take_message (self, sl_json_trim (sl_buf_str (&self->body))) == SL_MCP_ANSWER_MORE)
        return s_fail (self, "server_error", "answer is not the response to the request");
    return self->state;
}

sl_mcp_answer_state_t
sl_mcp_answer_feed (sl_mcp_answer_t *self, const char *data, size_t size)
{
    if (self->state != SL_MCP_ANSWER_MORE)
        return self->state;
    self->bytes += size;
    if (self->bytes > self->max_bytes)
        return s_fail (self, "server_too_large", "answer over the byte bound");
    if (self->sse) {
        if (sl_sse_feed (self->parser, data, size, s_on_event, self) == -1)
            return s_fail (self, "server_too_large", "event over the event bound");
        return self->state;
    }
    sl_buf_append (&self->body, data, size);
    if (s_json_complete (&self->body))
        return s_take_body (self);
    return self->state;
}

sl_mcp_answer_state_t
sl_mcp_answer_finish (sl_mcp_answer_t *self)
{
    if (self->state != SL_MCP_ANSWER_MORE)
        return self->state;
    if (self->sse) {
        if (sl_sse_finish (self->parser, s_on_event, self) == -1)
            return s_fail (self, "server_too_large", "event over the event bound");
    }
    else if (self->body.len > 0)
        s_take_body (self);
    if (self->state == SL_MCP_ANSWER_MORE)
        return s_fail (self, "server_error", "answer ended without the response");
    return self->state;
}

sl_mcp_answer_state_t
sl_mcp_answer_state (const sl_mcp_answer_t *self)
{
    return self->state;
}

const json_t *
sl_mcp_answer_response (const sl_mcp_answer_t *self)
{
    return self->response;
}

const json_t *
sl_mcp_answer_result (const sl_mcp_answer_t *self)
{
    return self->response ? json_object_get (self->response, "result") : NULL;
}

const json_t *
sl_mcp_answer_error (const sl_mcp_answer_t *self)
{
    return self->response ? json_object_get (self->response, "error") : NULL;
}

const char *
sl_mcp_answer_reason (const sl_mcp_answer_t *self)
{
    return self->state == SL_MCP_ANSWER_FAILED ? self->reason : NULL;
}

const char *
sl_mcp_answer_detail (const sl_mcp_answer_t *self)
{
    return self->state == SL_MCP_ANSWER_FAILED ? self->detail : NULL;
}

size_t
sl_mcp_answer_notifications (const sl_mcp_answer_t *self)
{
    return self->notifications;
}

size_t
sl_mcp_answer_requests (const sl_mcp_answer_t *self)
{
    return self->requests;
}

size_t
sl_mcp_answer_bytes (const sl_mcp_answer_t *self)
{
    return self->bytes;
}
