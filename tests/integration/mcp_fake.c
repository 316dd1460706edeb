/*  mcp_fake.c - a small MCP server played by a test (see mcp_fake.h). */
#include "tests/integration/mcp_fake.h"

#include <czmq.h>
#include <jansson.h>
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_buf.h"

#define S_HANG_STEP_MS 20
#define S_SESSION_MAX 64

struct _mcp_fake_t {
    struct MHD_Daemon *daemon;
    bool stateless;
    int port;
    pthread_mutex_t lock;
    volatile bool stopping;
    int sessions;                       //  sessions minted
    char session [MCP_FAKE_SESSIONS][S_SESSION_MAX];   //  the latest minted, "" when forgotten
    mcp_fake_seen_t seen;
};

static const char *s_tools =
    "[{\"name\":\"echo\",\"description\":\"Returns its text\",\"inputSchema\":{\"type\":\"object\","
    "\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}},"
    "{\"name\":\"write_file\",\"description\":\"Writes a file\",\"inputSchema\":{\"type\":\"object\","
    "\"properties\":{\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"}}}},"
    "{\"name\":\"read_secret\",\"description\":\"Reads the secret\",\"inputSchema\":{\"type\":\"object\"}},"
    "{\"name\":\"hang\",\"description\":\"Takes its time\",\"inputSchema\":{\"type\":\"object\"}},"
    "{\"name\":\"big\",\"description\":\"Answers at length\",\"inputSchema\":{\"type\":\"object\"}},"
    "{\"name\":\"garbage\",\"description\":\"Answers nonsense\",\"inputSchema\":{\"type\":\"object\"}},"
    "{\"name\":\"needs_input\",\"description\":\"Asks first\",\"inputSchema\":{\"type\":\"object\"}}]";

static void
s_copy (char *out, const char *text)
{
    snprintf (out, MCP_FAKE_TEXT_MAX, "%s", text ? text : "");
}

static enum MHD_Result
s_send (struct MHD_Connection *conn, unsigned status, const char *body, const char *session)
{
    struct MHD_Response *r = MHD_create_response_from_buffer (strlen (body), (void *) body, MHD_RESPMEM_MUST_COPY);
    MHD_add_response_header (r, "Content-Type", "application/json");
    if (session)
        MHD_add_response_header (r, "Mcp-Session-Id", session);
    enum MHD_Result rc = MHD_queue_response (conn, status, r);
    MHD_destroy_response (r);
    return rc;
}

static enum MHD_Result
s_result (struct MHD_Connection *conn, json_t *id, json_t *result, const char *session)
{
    json_t *msg = json_pack ("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
    char *text = json_dumps (msg, JSON_COMPACT);
    enum MHD_Result rc = s_send (conn, 200, text, session);
    free (text);
    json_decref (msg);
    return rc;
}

//  A tool's result.
static json_t *
s_call (mcp_fake_t *self, const char *tool, json_t *arguments)
{
    if (strcmp (tool, "echo") == 0) {
        const char *text = json_string_value (json_object_get (arguments, "text"));
        return json_pack ("{s:[{s:s, s:s}]}", "content", "type", "text", "text", text ? text : "");
    }
    if (strcmp (tool, "write_file") == 0)
        return json_pack ("{s:[{s:s, s:s}]}", "content", "type", "text", "text", "written");
    if (strcmp (tool, "read_secret") == 0)
        return json_pack ("{s:[{s:s, s:s}]}", "content", "type", "text", "text",
                          "the key is " MCP_FAKE_SECRET ", keep it safe");
    if (strcmp (tool, "hang") == 0) {
        for (int waited = 0; waited < MCP_FAKE_HANG_MS && !self->stopping; waited += S_HANG_STEP_MS)
            zclock_sleep (S_HANG_STEP_MS);
        return json_pack ("{s:[{s:s, s:s}]}", "content", "type", "text", "text", "late");
    }
    if (strcmp (tool, "needs_input") == 0)
        return json_pack ("{s:s, s:{s:{s:s, s:{s:s}}}}", "resultType", "input_required", "inputRequests", "q1",
                          "method", "elicitation/create", "params", "message", "which file?");
    if (strcmp (tool, "big") == 0) {
        char *text = malloc (MCP_FAKE_BIG_BYTES + 1);
        memset (text, 'x', MCP_FAKE_BIG_BYTES);
        text [MCP_FAKE_BIG_BYTES] = 0;
        json_t *result = json_pack ("{s:[{s:s, s:s}]}", "content", "type", "text", "text", text);
        free (text);
        return result;
    }
    return NULL;
}

static enum MHD_Result
s_serve (mcp_fake_t *self, struct MHD_Connection *conn, const char *body)
{
    json_t *msg = json_loads (body, 0, NULL);
    const char *method = json_string_value (json_object_get (msg, "method"));
    json_t *id = json_object_get (msg, "id");
    json_t *params = json_object_get (msg, "params");
    const char *session = MHD_lookup_connection_value (conn, MHD_HEADER_KIND, "Mcp-Session-Id");
    const char *version = MHD_lookup_connection_value (conn, MHD_HEADER_KIND, "MCP-Protocol-Version");
    enum MHD_Result rc;
    if (!method) {
        rc = s_send (conn, 400, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"?\"}}", NULL);
        json_decref (msg);
        return rc;
    }
    pthread_mutex_lock (&self->lock);
    bool known = false;
    for (int i = 0; session && i < MCP_FAKE_SESSIONS; i++)
        known |= self->session [i][0] && strcmp (session, self->session [i]) == 0;
    pthread_mutex_unlock (&self->lock);
    if (self->stateless) {
        const char *mirrored = MHD_lookup_connection_value (conn, MHD_HEADER_KIND, "Mcp-Method");
        if (!version || strcmp (version, "2026-07-28") != 0 || !mirrored || strcmp (mirrored, method) != 0) {
            json_decref (msg);
            return s_send (conn, 400, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32020,"
                                      "\"message\":\"Header mismatch\"}}", NULL);
        }
    }
    else
    if (strcmp (method, "initialize") == 0) {
        pthread_mutex_lock (&self->lock);
        self->seen.initializes++;
        char minted [S_SESSION_MAX];
        snprintf (minted, sizeof minted, "fake-session-%d", ++self->sessions);
        snprintf (self->session [self->sessions % MCP_FAKE_SESSIONS], S_SESSION_MAX, "%s", minted);
        pthread_mutex_unlock (&self->lock);
        json_t *result = json_pack ("{s:s, s:{s:{}}, s:{s:s, s:s}, s:s}", "protocolVersion", "2025-11-25",
                                    "capabilities", "tools", "serverInfo", "name", "fake-mcp", "version", "1.0",
                                    "instructions", "a fake for the tests");
        rc = s_result (conn, id, result, minted);
        json_decref (msg);
        return rc;
    }
    else
    if (!known) {
        json_decref (msg);
        return s_send (conn, 404, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,"
                                  "\"message\":\"Session not found\"}}", NULL);
    }
    if (!id) {
        json_decref (msg);
        return s_send (conn, 202, "", NULL);
    }
    json_t *result = NULL;
    if (strcmp (method, "tools/list") == 0) {
        pthread_mutex_lock (&self->lock);
        self->seen.lists++;
        pthread_mutex_unlock (&self->lock);
        result = json_pack ("{s:o}", "tools", json_loads (s_tools, 0, NULL));
    }
    else
    if (strcmp (method, "server/discover") == 0)
        result = json_pack ("{s:s, s:[s], s:{s:{}}, s:{s:{s:s, s:s}}}", "resultType", "complete",
                            "supportedVersions", "2026-07-28", "capabilities", "tools", "_meta",
                            "io.modelcontextprotocol/serverInfo", "name", "fake-mcp", "version", "1.0");
    else
    if (strcmp (method, "ping") == 0)
        result = json_object ();
    else
    if (strcmp (method, "tools/call") == 0) {
        const char *tool = json_string_value (json_object_get (params, "name"));
        json_t *arguments = json_object_get (params, "arguments");
        char *args = json_dumps (arguments ? arguments : json_null (), JSON_COMPACT | JSON_ENCODE_ANY);
        pthread_mutex_lock (&self->lock);
        self->seen.calls++;
        if (tool && strcmp (tool, "write_file") == 0)
            self->seen.writes++;
        s_copy (self->seen.last_tool, tool);
        s_copy (self->seen.last_arguments, args);
        s_copy (self->seen.last_auth, MHD_lookup_connection_value (conn, MHD_HEADER_KIND, "Authorization"));
        s_copy (self->seen.last_name_header, MHD_lookup_connection_value (conn, MHD_HEADER_KIND, "Mcp-Name"));
        s_copy (self->seen.last_session, session);
        s_copy (self->seen.last_traceparent,
                json_string_value (json_object_get (json_object_get (params, "_meta"), "traceparent")));
        pthread_mutex_unlock (&self->lock);
        free (args);
        if (tool && strcmp (tool, "garbage") == 0) {
            json_decref (msg);
            return s_send (conn, 200, "this is not JSON-RPC", NULL);
        }
        result = tool ? s_call (self, tool, arguments) : NULL;
        if (!result) {
            json_decref (msg);
            char error [256];
            snprintf (error, sizeof error, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":-32602,"
                      "\"message\":\"Unknown tool: %s\"}}", (long long) json_integer_value (id), tool ? tool : "");
            return s_send (conn, 200, error, NULL);
        }
    }
    if (!result) {
        json_decref (msg);
        return s_send (conn, 200, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32601,"
                                  "\"message\":\"Method not found\"}}", NULL);
    }
    rc = s_result (conn, id, result, NULL);
    json_decref (msg);
    return rc;
}

static enum MHD_Result
s_handler (void *cls, struct MHD_Connection *conn, const char *url, const char *method, const char *version,
           const char *upload, size_t *upload_size, void **con_cls)
{
    (void) url;
    (void) version;
    mcp_fake_t *self = cls;
    sl_buf_t *body = *con_cls;
    if (!body) {
        *con_cls = calloc (1, sizeof (sl_buf_t));
        return MHD_YES;
    }
    if (*upload_size) {
        sl_buf_append (body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp (method, "DELETE") == 0)
        return s_send (conn, 200, "", NULL);
    if (strcmp (method, "POST") != 0)
        return s_send (conn, 405, "", NULL);
    return s_serve (self, conn, sl_buf_cstr (body));
}

static void
s_completed (void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void) cls;
    (void) conn;
    (void) toe;
    sl_buf_t *body = *con_cls;
    if (body) {
        sl_buf_free (body);
        free (body);
    }
    *con_cls = NULL;
}

mcp_fake_t *
mcp_fake_start (bool stateless)
{
    mcp_fake_t *self = calloc (1, sizeof *self);
    self->stateless = stateless;
    pthread_mutex_init (&self->lock, NULL);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = 0 };
    addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
    self->daemon = MHD_start_daemon (MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0, NULL, NULL,
                                     s_handler, self, MHD_OPTION_SOCK_ADDR, &addr,
                                     MHD_OPTION_NOTIFY_COMPLETED, s_completed, self, MHD_OPTION_END);
    if (!self->daemon) {
        pthread_mutex_destroy (&self->lock);
        free (self);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info (self->daemon, MHD_DAEMON_INFO_BIND_PORT);
    self->port = info ? info->port : 0;
    return self;
}

void
mcp_fake_stop (mcp_fake_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    mcp_fake_t *self = *self_p;
    self->stopping = true;
    MHD_stop_daemon (self->daemon);
    pthread_mutex_destroy (&self->lock);
    free (self);
    *self_p = NULL;
}

int
mcp_fake_port (mcp_fake_t *self)
{
    return self->port;
}

void
mcp_fake_forget (mcp_fake_t *self)
{
    pthread_mutex_lock (&self->lock);
    memset (self->session, 0, sizeof self->session);
    pthread_mutex_unlock (&self->lock);
}

void
mcp_fake_seen (mcp_fake_t *self, mcp_fake_seen_t *out)
{
    pthread_mutex_lock (&self->lock);
    *out = self->seen;
    pthread_mutex_unlock (&self->lock);
}
