/*  mcp_node.h - the official MCP TypeScript SDK's server and client of
    tests/mcp (server.mjs, client.mjs) as processes, for integration tests
    and make agents: a server started on an ephemeral port of 127.0.0.1
    and stopped, a client's scenario run (or started and waited for) with a
    bound, its one JSON line parsed. The packages are those make mcp-deps
    installs.
*/
#ifndef MCP_NODE_H
#define MCP_NODE_H

#include <jansson.h>
#include <stdbool.h>
#include <sys/types.h>

#define MCP_NODE_DIR "tests/mcp"
#define MCP_NODE_URL_MAX 128

//  Why the MCP SDK cannot run here (static text), or NULL when it can: the
//  packages are installed in MCP_NODE_DIR/node_modules and node runs.
const char *mcp_node_missing (void);

typedef struct {
    pid_t pid;                          //  node, leading its own process group
    char url [MCP_NODE_URL_MAX];        //  http://127.0.0.1:PORT/mcp
    char log [512];                     //  the calls it received, a JSON line each
    char out [512];                     //  its stdout and stderr
} mcp_server_t;

//  Start server.mjs of family ("v1" or "v2") with its calls' log at log
//  (emptied), its output into dir, echo's definition changed or not;
//  waits (bounded) until it listens. 0 ok (self filled), -1 it did not
//  come up (its output on stderr).
int mcp_server_start (mcp_server_t *self, const char *dir, const char *family, bool changed, const char *log);
//  Stop it (SIGTERM, then SIGKILL past a bound). Safe on a stopped one.
void mcp_server_stop (mcp_server_t *self);
//  How many calls of tool its log holds (every tool: NULL); into last
//  (when not NULL) the arguments of the last one, as JSON ("" none).
int mcp_server_calls (const mcp_server_t *self, const char *tool, char *last, size_t size);

typedef struct {
    pid_t pid;
    char out [512];                     //  its stdout (the JSON line) and stderr
} mcp_client_t;

//  Start client.mjs of family against url with key (NULL: none), calling
//  tool (NULL: only list) with args (a JSON object, NULL: {}); its output
//  into dir/<label>.out. Asserts (Criterion) when it cannot fork.
void mcp_client_start (mcp_client_t *self, const char *dir, const char *label, const char *family,
                       const char *url, const char *key, const char *tool, const char *args);
//  Wait at most timeout_ms (killed past it); the JSON line it printed
//  (the caller's), or NULL when it printed none; *status its exit status
//  (-1 killed or died from a signal).
json_t *mcp_client_wait (mcp_client_t *self, int timeout_ms, int *status);
//  mcp_client_start and mcp_client_wait in one.
json_t *mcp_client_run (const char *dir, const char *label, const char *family, const char *url, const char *key,
                        const char *tool, const char *args, int timeout_ms, int *status);
//  The texts of a client's line's call (its texts joined by "\n") into out.
void mcp_client_texts (json_t *line, char *out, size_t size);
//  Does the client's line list tool? NULL: no line.
bool mcp_client_lists (json_t *line, const char *tool);

#endif
