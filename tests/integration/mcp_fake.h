/*  mcp_fake.h - a small MCP server (Streamable HTTP) played by a test:
    libmicrohttpd in threads of its own on 127.0.0.1 (an ephemeral port),
    speaking one revision family, keeping what it was sent so a test can
    prove what reached it and what never did.

      session   (2025-11-25): initialize mints an Mcp-Session-Id; every
                other request must carry one it minted (else 404, as a
                server that forgot the session answers); it keeps the
                latest MCP_FAKE_SESSIONS, each call's session is seen
      stateless (2026-07-28): no initialize; every request must carry
                MCP-Protocol-Version 2026-07-28 and an Mcp-Method equal
                to its method (else 400); server/discover answered

    Tools: echo {text} (returns the text), write_file {path, content}
    (returns "written", writes nothing), read_secret (a text holding an
    AWS-looking key), hang (answers after MCP_FAKE_HANG_MS, or at stop),
    big (a text of MCP_FAKE_BIG_BYTES), garbage (a body that is not
    JSON), needs_input (2026-07-28's input_required result).
*/
#ifndef MCP_FAKE_H
#define MCP_FAKE_H

#include <stdbool.h>
#include <stddef.h>

#define MCP_FAKE_TEXT_MAX 1024
#define MCP_FAKE_SECRET "AKIAABCDEFGHIJKLMNOP"      //  what read_secret returns (redacted by a rule)
#define MCP_FAKE_HANG_MS 10000                      //  how long hang takes to answer
#define MCP_FAKE_BIG_BYTES (256 * 1024)             //  what big returns
#define MCP_FAKE_SESSIONS 16                        //  sessions kept at once (the oldest forgotten)

typedef struct _mcp_fake_t mcp_fake_t;

//  NULL when it cannot listen.
mcp_fake_t *mcp_fake_start (bool stateless);
void mcp_fake_stop (mcp_fake_t **self_p);
int mcp_fake_port (mcp_fake_t *self);
//  The server forgets its sessions (as a restart would): the next request
//  naming one gets 404.
void mcp_fake_forget (mcp_fake_t *self);

//  What it saw so far (copied under its lock).
typedef struct {
    int initializes;                    //  initialize requests
    int lists;                          //  tools/list requests
    int calls;                          //  tools/call requests, of any tool
    int writes;                         //  tools/call of write_file
    char last_tool [MCP_FAKE_TEXT_MAX];         //  the last tools/call's tool
    char last_arguments [MCP_FAKE_TEXT_MAX];    //  its arguments, JSON
    char last_auth [MCP_FAKE_TEXT_MAX];         //  its Authorization header
    char last_traceparent [MCP_FAKE_TEXT_MAX];  //  its params._meta.traceparent
    char last_name_header [MCP_FAKE_TEXT_MAX];  //  its Mcp-Name header
    char last_session [MCP_FAKE_TEXT_MAX];      //  its Mcp-Session-Id header, "" without
} mcp_fake_seen_t;

void mcp_fake_seen (mcp_fake_t *self, mcp_fake_seen_t *out);

#endif
