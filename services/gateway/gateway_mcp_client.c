/*  gateway_mcp_client.c - the gateway's calls to MCP servers over libcurl
    multi (see gateway_mcp_client.h).

    A call is a small state machine over at most five POSTs, one at a time:

        [INITIALIZE -> INITIALIZED]  only for a session revision whose
                                     upstream session is not ready
        REQUEST                      the call itself
        on 404 with a session id:    the server forgot the session: the
                                     upstream is reset and the call goes
                                     through initialize once more (once)

    Each POST's answer is read by sl_mcp_answer as it arrives; the transfer
    stops as soon as the response is complete (the write callback refuses
    further bytes), or the answer is over its bound. The deadline counts
    from the call's start: every POST gets what is left of it.
*/
#include "services/gateway/gateway_mcp_client.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_buf.h"
#include "common/base/sl_log.h"
#include "common/base/sl_version.h"
#include "common/http/sl_curlm.h"
#include "common/mcp/sl_mcp_answer.h"
#include "common/mcp/sl_mcp_rpc.h"

#define MCP_SESSION_ID_MAX 256          //  the longest upstream Mcp-Session-Id kept
#define MCP_CONTENT_TYPE_MAX 128        //  the longest Content-Type kept
#define MCP_CLIENT_NAME "sluice"        //  clientInfo.name sluice gives a server
#define MCP_HTTP_NOT_FOUND 404
#define MCP_START_DELAY_MS 0           //  a call's first POST starts from the reactor's next turn, not the caller
#define MCP_DELETE_TIMEOUT_MS 5000      //  an upstream session's DELETE, sent and forgotten

struct _gateway_mcp_upstream_t {
    int refs;
    char *session_id;                   //  the server's Mcp-Session-Id, NULL: none
    bool ready;                         //  initialized (or stateless: always)
    json_t *info;                       //  the server's initialize result
};

typedef enum {
    S_INITIALIZE,                       //  POST initialize
    S_INITIALIZED,                      //  POST notifications/initialized
    S_REQUEST,                          //  POST the call's request
    S_DELETE                            //  DELETE the upstream session (nobody waits)
} s_step_t;

struct _gateway_mcp_call_t {
    gateway_mcp_client_t *client;
    const sl_mcp_server_t *server;
    gateway_mcp_upstream_t *upstream;
    sl_mcp_rev_t rev;                   //  what is spoken to the server
    char *method;
    char *name;
    json_t *params;
    int64_t started_us;
    int64_t deadline_us;
    size_t max_bytes;
    bool reinitialized;                 //  the session was begun again once already
    s_step_t step;
    int start_timer;                    //  until the first POST starts, -1 after
    json_int_t next_id;                 //  JSON-RPC ids of this call's POSTs
    //  The POST under way
    CURL *easy;
    struct curl_slist *headers;
    sl_buf_t body;
    json_t *id;                         //  its JSON-RPC id (NULL: a notification)
    sl_mcp_answer_t *answer;
    char content_type [MCP_CONTENT_TYPE_MAX];
    char session_id [MCP_SESSION_ID_MAX];   //  the answer's Mcp-Session-Id, "" when none
    const char *failure;                //  a failure found while reading (metric label)
    char detail [SL_MCP_MESSAGE_MAX];
    gateway_mcp_reply_fn *done;
    void *arg;
    gateway_mcp_call_t *prev, *next;
};

struct _gateway_mcp_client_t {
    zloop_t *loop;
    sl_curlm_t *curlm;
    gateway_mcp_call_t *calls;
};

//  --------------------------------------------------------------------------
//  Upstream sessions

gateway_mcp_upstream_t *
gateway_mcp_upstream_new (void)
{
    gateway_mcp_upstream_t *self = sl_xcalloc (1, sizeof *self);
    self->refs = 1;
    return self;
}

gateway_mcp_upstream_t *
gateway_mcp_upstream_ref (gateway_mcp_upstream_t *self)
{
    self->refs++;
    return self;
}

static void
s_upstream_reset (gateway_mcp_upstream_t *self)
{
    free (self->session_id);
    self->session_id = NULL;
    self->ready = false;
}

void
gateway_mcp_upstream_unref (gateway_mcp_upstream_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    gateway_mcp_upstream_t *self = *self_p;
    *self_p = NULL;
    if (--self->refs > 0)
        return;
    s_upstream_reset (self);
    json_decref (self->info);
    free (self);
}

json_t *
gateway_mcp_upstream_info (gateway_mcp_upstream_t *self)
{
    return self->info;
}

//  --------------------------------------------------------------------------
//  One POST

static void s_on_done (void *arg, CURL *easy, CURLcode code);

static void
s_post_clear (gateway_mcp_call_t *call)
{
    if (call->easy) {
        sl_curlm_remove (call->client->curlm, call->easy);
        curl_easy_cleanup (call->easy);
        call->easy = NULL;
    }
    curl_slist_free_all (call->headers);
    call->headers = NULL;
    sl_buf_free (&call->body);
    json_decref (call->id);
    call->id = NULL;
    sl_mcp_answer_destroy (&call->answer);
    call->content_type [0] = 0;
    call->session_id [0] = 0;
    call->failure = NULL;
    call->detail [0] = 0;
}

static size_t
s_on_header (char *ptr, size_t size, size_t nmemb, void *arg)
{
    gateway_mcp_call_t *call = arg;
    size_t n = size * nmemb;
    if (n >= 5 && strncmp (ptr, "HTTP/", 5) == 0)
        call->session_id [0] = 0;       //  a new answer's headers (after a 100 Continue)
    else {
        char value [MCP_SESSION_ID_MAX];
        int len = sl_curlm_header (ptr, n, "mcp-session-id", value, sizeof value);
        //  Visible ASCII only (the spec's rule), and whole: anything else
        //  is not kept, and the session cannot be used.
        bool visible = len > 0 && (size_t) len < sizeof value;
        for (int i = 0; visible && i < len; i++)
            visible = value [i] > 0x20 && value [i] < 0x7f;
        if (visible)
            memcpy (call->session_id, value, (size_t) len + 1);
    }
    return n;
}

//  The server answered 404 to a request in its session: it forgot the
//  session (it may have restarted), and sluice begins a new one, once.
static bool
s_session_lost (gateway_mcp_call_t *call)
{
    long status = 0;
    curl_easy_getinfo (call->easy, CURLINFO_RESPONSE_CODE, &status);
    return status == MCP_HTTP_NOT_FOUND && call->upstream->session_id && call->step != S_INITIALIZE
        && !call->reinitialized;
}

//  Feed the answer as it comes; stop the transfer once the response is
//  complete or the answer failed (the transfer then ends through done).
static size_t
s_on_data (char *ptr, size_t size, size_t nmemb, void *arg)
{
    gateway_mcp_call_t *call = arg;
    size_t n = size * nmemb;
    if (!call->id || s_session_lost (call))
        return n;                       //  nothing to read: a notification's answer, a forgotten session's
    if (!call->answer) {
        const char *type = NULL;
        curl_easy_getinfo (call->easy, CURLINFO_CONTENT_TYPE, &type);
        call->answer = sl_mcp_answer_new (call->id, type, call->max_bytes, 0);
        if (!call->answer) {
            call->failure = "server_error";
            snprintf (call->detail, sizeof call->detail, "the server answered with content type %.64s",
                      type ? type : "(none)");
            return 0;
        }
    }
    sl_mcp_answer_state_t state = sl_mcp_answer_feed (call->answer, ptr, n);
    return state == SL_MCP_ANSWER_MORE ? n : 0;
}

//  The headers every POST carries: JSON in, JSON or SSE out, the revision
//  once it is agreed (2025-06-18 and later), the upstream session, sluice's
//  credential for the server. -1 when the credential cannot be read.
//  Standard base64 of text (the spec's Mcp-Name sentinel form).
static void
s_base64 (const char *text, sl_buf_t *out)
{
    static const char digits [] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = (const unsigned char *) text;
    size_t len = strlen (text);
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned) s [i] << 16 | (i + 1 < len ? (unsigned) s [i + 1] << 8 : 0u)
                   | (i + 2 < len ? (unsigned) s [i + 2] : 0u);
        sl_buf_putc (out, digits [v >> 18 & 63]);
        sl_buf_putc (out, digits [v >> 12 & 63]);
        sl_buf_putc (out, i + 1 < len ? digits [v >> 6 & 63] : '=');
        sl_buf_putc (out, i + 2 < len ? digits [v & 63] : '=');
    }
}

static int
s_headers (gateway_mcp_call_t *call, const char *method, const char *name)
{
    const sl_mcp_server_t *server = call->server;
    call->headers = curl_slist_append (call->headers, "Content-Type: application/json");
    call->headers = curl_slist_append (call->headers, "Accept: application/json, text/event-stream");
    sl_buf_t line = { 0 };
    if (call->step != S_INITIALIZE) {
        sl_buf_printf (&line, "MCP-Protocol-Version: %s", sl_mcp_rev_name (call->rev));
        call->headers = curl_slist_append (call->headers, sl_buf_cstr (&line));
    }
    if (call->upstream->session_id && call->step != S_INITIALIZE) {
        sl_buf_reset (&line);
        sl_buf_printf (&line, "Mcp-Session-Id: %s", call->upstream->session_id);
        call->headers = curl_slist_append (call->headers, sl_buf_cstr (&line));
    }
    if (sl_mcp_rev_stateless (call->rev)) {
        sl_buf_reset (&line);
        sl_buf_printf (&line, "Mcp-Method: %s", method);
        call->headers = curl_slist_append (call->headers, sl_buf_cstr (&line));
        if (name) {
            //  Tool names are only SHOULD-constrained to header-safe
            //  characters: one that is not goes in the spec's base64 form.
            bool plain = *name && name [0] != ' ' && name [strlen (name) - 1] != ' '
                      && strncmp (name, "=?base64?", 9) != 0;
            for (const char *c = name; plain && *c; c++)
                plain = *c >= 0x20 && *c < 0x7f;
            sl_buf_reset (&line);
            if (plain)
                sl_buf_printf (&line, "Mcp-Name: %s", name);
            else {
                sl_buf_puts (&line, "Mcp-Name: =?base64?");
                s_base64 (name, &line);
                sl_buf_puts (&line, "?=");
            }
            call->headers = curl_slist_append (call->headers, sl_buf_cstr (&line));
        }
    }
    sl_buf_free (&line);
    if (server->key_env && *server->key_env) {
        const char *key = getenv (server->key_env);
        if (!key || !*key) {
            //  The variable's name is no secret; its value never appears.
            call->failure = "server_error";
            snprintf (call->detail, sizeof call->detail, "sluice's credential for the server (%.64s) is not set",
                      server->key_env);
            return -1;
        }
        sl_buf_t auth = { 0 };
        sl_buf_printf (&auth, "%s: %s%s", server->header && *server->header ? server->header : "Authorization",
                       server->scheme ? server->scheme : "Bearer ", key);
        call->headers = curl_slist_append (call->headers, sl_buf_cstr (&auth));
        memset (auth.data, 0, auth.len);    //  do not leave the key in freed memory
        sl_buf_free (&auth);
    }
    return 0;
}

//  The params of the step's request: initialize's own, or the call's
//  with the revision's _meta (2026-07-28: version, client, capabilities).
static json_t *
s_params (gateway_mcp_call_t *call)
{
    if (call->step == S_INITIALIZE)
        return json_pack ("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", sl_mcp_rev_name (call->rev),
                          "capabilities", "clientInfo", "name", MCP_CLIENT_NAME, "version", SL_VERSION);
    if (call->step == S_INITIALIZED)
        return NULL;
    json_t *params = call->params ? json_deep_copy (call->params) : json_object ();
    if (sl_mcp_rev_stateless (call->rev)) {
        json_t *meta = json_object_get (params, "_meta");
        if (!json_is_object (meta)) {
            meta = json_object ();
            json_object_set_new (params, "_meta", meta);
        }
        json_object_set_new (meta, SL_MCP_META_VERSION, json_string (sl_mcp_rev_name (call->rev)));
        json_object_set_new (meta, "io.modelcontextprotocol/clientInfo",
                             json_pack ("{s:s, s:s}", "name", MCP_CLIENT_NAME, "version", SL_VERSION));
        json_object_set_new (meta, "io.modelcontextprotocol/clientCapabilities", json_object ());
    }
    return params;
}

static void s_finish (gateway_mcp_call_t *call, const char *reason, const char *message, json_t *response);

//  The step's request body (none for a DELETE).
static void
s_body (gateway_mcp_call_t *call, const char *method)
{
    json_t *msg = json_pack ("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
    if (call->step != S_INITIALIZED) {
        call->id = json_integer (call->next_id++);
        json_object_set (msg, "id", call->id);
    }
    json_t *params = s_params (call);
    if (params)
        json_object_set_new (msg, "params", params);
    char *text = json_dumps (msg, JSON_COMPACT);
    json_decref (msg);
    sl_buf_puts (&call->body, text ? text : "{}");
    free (text);
}

//  Start the step's request (a POST, or the DELETE that ends the upstream
//  session, whose answer changes nothing). On failure the call ends
//  (done is called).
static void
s_post (gateway_mcp_call_t *call)
{
    s_post_clear (call);
    bool delete = call->step == S_DELETE;
    const char *method = delete ? "DELETE" : call->step == S_INITIALIZE ? "initialize"
                       : call->step == S_INITIALIZED ? "notifications/initialized" : call->method;
    int64_t left_ms = (call->deadline_us - zclock_usecs ()) / 1000;
    if (left_ms <= 0) {
        s_finish (call, "server_timeout", "the MCP server did not answer in time", NULL);
        return;
    }
    if (s_headers (call, method, call->step == S_REQUEST ? call->name : NULL)) {
        s_finish (call, call->failure, call->detail, NULL);
        return;
    }
    CURL *easy = curl_easy_init ();
    curl_easy_setopt (easy, CURLOPT_URL, call->server->url);
    curl_easy_setopt (easy, CURLOPT_PROTOCOLS_STR, "http,https");
    if (delete)
        curl_easy_setopt (easy, CURLOPT_CUSTOMREQUEST, "DELETE");
    else {
        s_body (call, method);
        curl_easy_setopt (easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t) call->body.len);
        curl_easy_setopt (easy, CURLOPT_POSTFIELDS, call->body.data);
    }
    curl_easy_setopt (easy, CURLOPT_HTTPHEADER, call->headers);
    curl_easy_setopt (easy, CURLOPT_WRITEFUNCTION, s_on_data);
    curl_easy_setopt (easy, CURLOPT_WRITEDATA, call);
    curl_easy_setopt (easy, CURLOPT_HEADERFUNCTION, s_on_header);
    curl_easy_setopt (easy, CURLOPT_HEADERDATA, call);
    curl_easy_setopt (easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt (easy, CURLOPT_TIMEOUT_MS, (long) left_ms);
    call->easy = easy;
    if (sl_curlm_add (call->client->curlm, easy, s_on_done, call)) {
        call->easy = NULL;
        curl_easy_cleanup (easy);
        s_finish (call, "server_error", "the HTTP transfer to the MCP server could not be started", NULL);
    }
}

//  --------------------------------------------------------------------------
//  Steps

static void
s_unlink (gateway_mcp_call_t *call)
{
    gateway_mcp_client_t *self = call->client;
    if (call->prev)
        call->prev->next = call->next;
    else
        self->calls = call->next;
    if (call->next)
        call->next->prev = call->prev;
}

static void
s_free (gateway_mcp_call_t *call)
{
    if (call->start_timer >= 0)
        zloop_timer_end (call->client->loop, call->start_timer);
    s_post_clear (call);
    gateway_mcp_upstream_unref (&call->upstream);
    json_decref (call->params);
    free (call->method);
    free (call->name);
    free (call);
}

//  Report the outcome and forget the call.
static void
s_finish (gateway_mcp_call_t *call, const char *reason, const char *message, json_t *response)
{
    gateway_mcp_reply_t reply = {
        .reason = reason,
        .message = message,
        .response = response,
        .seconds = (double) (zclock_usecs () - call->started_us) / 1e6,
    };
    gateway_mcp_reply_fn *done = call->done;
    void *arg = call->arg;
    json_incref (response);             //  it may belong to the answer freed below
    s_unlink (call);
    s_free (call);
    if (done)
        done (arg, &reply);
    json_decref (response);
}

//  The server answered the step's POST with status (its answer read).
static void
s_step_done (gateway_mcp_call_t *call, long status, bool lost)
{
    gateway_mcp_upstream_t *up = call->upstream;
    if (lost) {
        sl_log_info ("mcp_session_renewed", "server=%s: the server no longer knows sluice's session",
                     call->server->name);
        s_upstream_reset (up);
        call->reinitialized = true;
        call->step = S_INITIALIZE;
        s_post (call);
        return;
    }
    if (call->step == S_INITIALIZED) {
        if (status < 200 || status >= 300) {
            char message [96];
            snprintf (message, sizeof message, "the MCP server refused notifications/initialized (HTTP %ld)", status);
            s_finish (call, "server_error", message, NULL);
            return;
        }
        up->ready = true;
        call->step = S_REQUEST;
        s_post (call);
        return;
    }
    json_t *response = call->answer ? (json_t *) sl_mcp_answer_response (call->answer) : NULL;
    if (!response) {
        char message [SL_MCP_MESSAGE_MAX];
        snprintf (message, sizeof message, "the MCP server answered HTTP %ld without a JSON-RPC response", status);
        s_finish (call, "server_error", message, NULL);
        return;
    }
    if (call->step == S_INITIALIZE) {
        const json_t *result = sl_mcp_answer_result (call->answer);
        if (!json_is_object (result)) {
            s_finish (call, "server_error", "the MCP server refused initialize", response);
            return;
        }
        json_decref (up->info);
        up->info = json_deep_copy (result);
        free (up->session_id);
        up->session_id = call->session_id [0] ? sl_xstrdup (call->session_id) : NULL;
        call->step = S_INITIALIZED;
        s_post (call);
        return;
    }
    s_finish (call, NULL, NULL, response);
}

static void
s_on_done (void *arg, CURL *easy, CURLcode code)
{
    gateway_mcp_call_t *call = arg;
    long status = 0;
    curl_easy_getinfo (easy, CURLINFO_RESPONSE_CODE, &status);
    bool lost = s_session_lost (call);
    //  sl_curlm has let go of the handle: it is ours to clean up.
    curl_easy_cleanup (call->easy);
    call->easy = NULL;
    if (call->step == S_DELETE) {
        s_finish (call, NULL, NULL, NULL);
        return;
    }
    if (call->failure) {
        s_finish (call, call->failure, call->detail, NULL);
        return;
    }
    if (code == CURLE_OK && lost) {
        s_step_done (call, status, true);   //  whatever the body says
        return;
    }
    sl_mcp_answer_state_t state = call->answer ? sl_mcp_answer_state (call->answer) : SL_MCP_ANSWER_MORE;
    if (state == SL_MCP_ANSWER_MORE && call->answer && code == CURLE_OK)
        state = sl_mcp_answer_finish (call->answer);
    if (state == SL_MCP_ANSWER_FAILED) {
        const char *reason = sl_mcp_answer_reason (call->answer);
        char message [SL_MCP_MESSAGE_MAX];
        snprintf (message, sizeof message, "the MCP server's answer was refused: %s",
                  sl_mcp_answer_detail (call->answer) ? sl_mcp_answer_detail (call->answer) : "?");
        s_finish (call, reason ? reason : "server_error", message, NULL);
        return;
    }
    if (state != SL_MCP_ANSWER_DONE && code != CURLE_OK) {
        //  Not a response cut short by us: the transfer failed.
        if (code == CURLE_OPERATION_TIMEDOUT)
            s_finish (call, "server_timeout", "the MCP server did not answer in time", NULL);
        else {
            char message [SL_MCP_MESSAGE_MAX];
            snprintf (message, sizeof message, "the MCP server could not be reached: %s", curl_easy_strerror (code));
            s_finish (call, "server_error", message, NULL);
        }
        return;
    }
    s_step_done (call, status, false);
}

//  --------------------------------------------------------------------------
//  API

gateway_mcp_client_t *
gateway_mcp_client_new (zloop_t *loop, void (*after) (void *arg), void *arg)
{
    gateway_mcp_client_t *self = sl_xcalloc (1, sizeof *self);
    self->loop = loop;
    self->curlm = sl_curlm_new (loop);
    sl_curlm_set_after (self->curlm, after, arg);
    return self;
}

void
gateway_mcp_client_destroy (gateway_mcp_client_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    gateway_mcp_client_t *self = *self_p;
    while (self->calls) {
        gateway_mcp_call_t *call = self->calls;
        s_unlink (call);
        s_free (call);
    }
    sl_curlm_destroy (&self->curlm);
    free (self);
    *self_p = NULL;
}

//  A zero-delay start, so done is never called from inside the call.
static int
s_on_start (zloop_t *loop, int timer_id, void *arg)
{
    (void) loop;
    (void) timer_id;
    gateway_mcp_call_t *call = arg;
    call->start_timer = -1;
    s_post (call);
    return 0;
}

static gateway_mcp_call_t *
s_call_new (gateway_mcp_client_t *self, const sl_mcp_server_t *server, gateway_mcp_upstream_t *upstream,
            long timeout_ms)
{
    gateway_mcp_call_t *call = sl_xcalloc (1, sizeof *call);
    call->client = self;
    call->server = server;
    call->upstream = gateway_mcp_upstream_ref (upstream);
    call->rev = sl_mcp_rev_parse (sl_str (server->revision));
    if (call->rev == SL_MCP_REV_UNKNOWN)
        call->rev = SL_MCP_REV_2025_11_25;
    call->started_us = zclock_usecs ();
    call->deadline_us = call->started_us + (int64_t) timeout_ms * 1000;
    call->next_id = 1;
    call->start_timer = zloop_timer (self->loop, MCP_START_DELAY_MS, 1, s_on_start, call);
    call->next = self->calls;
    if (self->calls)
        self->calls->prev = call;
    self->calls = call;
    return call;
}

void
gateway_mcp_upstream_end (gateway_mcp_client_t *self, const sl_mcp_server_t *server, gateway_mcp_upstream_t *upstream)
{
    if (!upstream->session_id)
        return;
    gateway_mcp_call_t *call = s_call_new (self, server, upstream, MCP_DELETE_TIMEOUT_MS);
    call->step = S_DELETE;
}

gateway_mcp_call_t *
gateway_mcp_client_call (gateway_mcp_client_t *self, const gateway_mcp_request_t *request,
                         gateway_mcp_reply_fn *done, void *arg)
{
    gateway_mcp_call_t *call = s_call_new (self, request->server, request->upstream, request->timeout_ms);
    if (sl_mcp_rev_stateless (call->rev))
        call->upstream->ready = true;
    call->method = sl_xstrdup (request->method);
    call->name = request->name ? sl_xstrdup (request->name) : NULL;
    call->params = request->params ? json_incref (request->params) : NULL;
    call->max_bytes = request->max_bytes;
    call->step = call->upstream->ready ? S_REQUEST : S_INITIALIZE;
    call->done = done;
    call->arg = arg;
    return call;
}

void
gateway_mcp_client_cancel (gateway_mcp_client_t *self, gateway_mcp_call_t **call_p)
{
    (void) self;
    if (!call_p || !*call_p)
        return;
    s_unlink (*call_p);
    s_free (*call_p);
    *call_p = NULL;
}
