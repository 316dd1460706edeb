/*  sl_mock_agent.h - multi-turn scenarios for coding agents (make agents).

    A pure library beside sl_mock_script: a coding agent (Claude Code,
    Codex CLI, Gemini CLI, opencode, or an SDK test) sends its own shell
    tool with every request; the answer depends on the model, which picks
    the scenario, and on the request: when its last message carries a tool
    result, the turn is over and the answer is a final text; otherwise the
    answer calls the request's own shell tool with the scenario's command,
    its arguments written to the tool's declared schema ("command" as a
    string, or as an argv array; "cmd"; a "description" when the tool has
    one). A request that declares no shell tool (titles, summaries, other
    side requests of the agents) gets a short text.

    Scenarios (every dialect):
      mock-agent-text       a short text
      mock-agent-shell      "I'll run a shell command.", then the shell tool
                            with: touch sluice-ok.marker
      mock-agent-exfil      the same with curl sending .env away, also after
                            a tool result (history conditions' test)
      mock-agent-danger     the same with a recursive delete
                            (rm -rf sluice-victim && touch sluice-danger.marker)
      mock-agent-slow       the shell call first, no text before it:
                            touch sluice-slow.marker
      mock-agent-slow-text  a text, then: touch sluice-slow-text.marker
      mock-agent-terminate  a text, then: touch sluice-terminate.marker
      mock-agent-error      a text, then the provider's error mid-stream,
                            as its API sends one
      mock-agent-mcp        the request's first MCP tool (a name starting
                            mcp__), every string its schema declares
                            SL_MOCK_AGENT_MCP_NOTE; when the request
                            defines none, the MCP tool the conversation
                            called before, with the arguments it had (a
                            model that remembers a tool its request no
                            longer holds); when the request names an MCP
                            tool without defining it (Claude Code's
                            deferred tools) and defines ToolSearch, a
                            call of ToolSearch selecting it first, and
                            after that search, the tool by its name even
                            when the request still does not define it
                            (arguments {}); else
                            a short text. Done when
                            the last turn carries a tool result other
                            than ToolSearch's (a
                            result in an earlier turn does not end it:
                            the agents' test runs two turns of one
                            session)
      mock-agent-ask        a text, then: touch sluice-ask.marker &&
                            printf 'sluice-ask-%s\n' approved, which prints
                            SL_MOCK_AGENT_ASK_OUTPUT, words the command
                            itself does not hold (a person approves it in
                            the agents' test)
    After a tool result, every scenario but mock-agent-exfil answers
    "sluice-agent: done."
    Commands name their marker file relative to the agent's working
    directory; policies match the words sluice-slow, sluice-terminate and
    sluice-ask (tests/agents/policy.yaml).
*/
#ifndef SL_MOCK_AGENT_H
#define SL_MOCK_AGENT_H

#include <stdbool.h>

#include "common/base/sl_str.h"
#include "services/mock/sl_mock_script.h"

#define SL_MOCK_AGENT_PREFIX "mock-agent-"
#define SL_MOCK_AGENT_DONE "sluice-agent: done."
#define SL_MOCK_AGENT_ASK_WORD "approved"
//  What mock-agent-ask's command prints: in a tool result, it ran.
#define SL_MOCK_AGENT_ASK_OUTPUT "sluice-ask-" SL_MOCK_AGENT_ASK_WORD

//  What mock-agent-mcp writes in each string its MCP tool declares.
#define SL_MOCK_AGENT_MCP_NOTE "sluice-agent-mcp"
#define SL_MOCK_AGENT_MCP_PREFIX "mcp__"

//  Does model name an agent scenario?
bool sl_mock_agent_is (sl_str_t model);
//  Build the answer to one request of an agent scenario. 0 ok; -1 when
//  the model is no agent scenario or the dialect unknown.
int sl_mock_agent_build (int dialect, sl_str_t model, sl_str_t request_body, sl_mock_script_t *out);

//  What the request says, for the answer and for tests.
typedef struct {
    char tool [64];                     //  the shell tool's name, "" when none
    char arguments [SL_MOCK_STEP_ARGS_MAX];  //  the call's arguments for command
    bool tool_result;                   //  a message carries a tool result
    bool last_result;                   //  the last message does
    char mcp_tool [64];                 //  the first MCP tool defined, else the one called before, or ""
    char mcp_arguments [SL_MOCK_STEP_ARGS_MAX];  //  the arguments to call it with
    char deferred [64];                 //  an MCP tool named only (deferred loading), or ""
    bool search;                        //  the request defines Claude Code's ToolSearch
} sl_mock_agent_view_t;

//  Read a request body of a dialect: its shell tool, the arguments that
//  call it with command, whether a message (the last one) is a tool
//  result, and the MCP tool mock-agent-mcp calls.
void sl_mock_agent_read (int dialect, sl_str_t request_body, const char *command, sl_mock_agent_view_t *out);

extern const char *sl_mock_agent_scenarios [];

#endif
