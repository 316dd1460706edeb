/*  Unit tests: services/mock/sl_mock_agent (the coding-agent scenarios). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "services/mock/sl_mock_agent.h"

//  Each agent's shell tool as its requests declare it.
static const struct {
    const char *agent;
    int dialect;
    const char *body;
    const char *tool;
    const char *arguments;
} s_agents [] = {
    { "Claude Code", SL_DIALECT_ANTHROPIC,
      "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"}],\"tools\":["
      "{\"name\":\"Agent\",\"input_schema\":{\"type\":\"object\"}},"
      "{\"name\":\"Bash\",\"input_schema\":{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"string\"},"
      "\"timeout\":{\"type\":\"number\"},\"description\":{\"type\":\"string\"}},\"required\":[\"command\"]}}]}",
      "Bash", "{\"command\":\"touch sluice-ok.marker\",\"description\":\"Runs a command for the sluice agent test.\"}" },
    { "Codex CLI", SL_DIALECT_RESPONSES,
      "{\"model\":\"m\",\"input\":[{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"go\"}]}],"
      "\"tools\":[{\"type\":\"function\",\"name\":\"exec_command\",\"parameters\":{\"type\":\"object\","
      "\"properties\":{\"cmd\":{\"type\":\"string\"},\"login\":{\"type\":\"boolean\"}}}},{\"type\":\"web_search\"}]}",
      "exec_command", "{\"cmd\":\"touch sluice-ok.marker\"}" },
    { "older Codex CLI", SL_DIALECT_RESPONSES,
      "{\"model\":\"m\",\"input\":\"go\",\"tools\":[{\"type\":\"function\",\"name\":\"shell\",\"parameters\":"
      "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}}]}",
      "shell", "{\"command\":[\"bash\",\"-lc\",\"touch sluice-ok.marker\"]}" },
    { "Gemini CLI", SL_DIALECT_GEMINI,
      "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"go\"}]}],\"tools\":[{\"functionDeclarations\":["
      "{\"name\":\"read_file\",\"parametersJsonSchema\":{\"type\":\"object\"}},"
      "{\"name\":\"run_shell_command\",\"parametersJsonSchema\":{\"type\":\"object\",\"properties\":"
      "{\"command\":{\"type\":\"string\"},\"description\":{\"type\":\"string\"}}}}]}]}",
      "run_shell_command", "{\"command\":\"touch sluice-ok.marker\",\"description\":\"Runs a command for the sluice agent test.\"}" },
    { "opencode", SL_DIALECT_OPENAI,
      "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"}],\"tools\":["
      "{\"type\":\"function\",\"function\":{\"name\":\"bash\",\"parameters\":{\"type\":\"object\",\"properties\":"
      "{\"command\":{\"type\":\"string\"},\"workdir\":{\"type\":\"string\"}}}}}]}",
      "bash", "{\"command\":\"touch sluice-ok.marker\"}" },
    { "an agent on Bedrock's Converse", SL_DIALECT_BEDROCK,
      "{\"messages\":[{\"role\":\"user\",\"content\":[{\"text\":\"go\"}]}],\"toolConfig\":{\"tools\":["
      "{\"toolSpec\":{\"name\":\"read_file\",\"inputSchema\":{\"json\":{\"type\":\"object\"}}}},"
      "{\"toolSpec\":{\"name\":\"exec_command\",\"inputSchema\":{\"json\":{\"type\":\"object\",\"properties\":"
      "{\"cmd\":{\"type\":\"string\"}}}}}}]}}",
      "exec_command", "{\"cmd\":\"touch sluice-ok.marker\"}" },
};

static const char *
s_bytes (const sl_mock_script_t *sc, char *out, size_t size)
{
    size_t n = 0;
    out [0] = 0;
    //  Binary frames (Bedrock's event stream) too: a NUL read as a space.
    for (size_t i = 0; i < sc->count; i++)
        for (size_t j = 0; j < sc->events [i].len && n < size - 1; j++, n++)
            out [n] = sc->events [i].data [j] ? sc->events [i].data [j] : ' ';
    out [n] = 0;
    return out;
}

Test (sl_mock_agent, each_agents_shell_tool_is_called_with_its_own_arguments)
{
    for (size_t i = 0; i < sizeof s_agents / sizeof s_agents [0]; i++) {
        sl_mock_agent_view_t view;
        sl_mock_agent_read (s_agents [i].dialect, sl_str (s_agents [i].body), "touch sluice-ok.marker", &view);
        cr_expect_str_eq (view.tool, s_agents [i].tool, "%s", s_agents [i].agent);
        cr_expect_str_eq (view.arguments, s_agents [i].arguments, "%s", s_agents [i].agent);
        cr_expect_not (view.tool_result, "%s", s_agents [i].agent);
        sl_mock_script_t sc;
        cr_assert_eq (sl_mock_agent_build (s_agents [i].dialect, sl_str ("mock-agent-shell"), sl_str (s_agents [i].body),
                                           &sc), 0);
        cr_expect_eq (sc.status, 200);
        char bytes [8192];
        s_bytes (&sc, bytes, sizeof bytes);
        cr_expect_not_null (strstr (bytes, s_agents [i].tool), "%s: the call: %s", s_agents [i].agent, bytes);
        cr_expect_not_null (strstr (bytes, "I'll run a shell command."), "%s", s_agents [i].agent);
        sl_mock_script_clear (&sc);
    }
}

Test (sl_mock_agent, a_tool_result_ends_the_turn_with_a_text)
{
    static const struct {
        int dialect;
        const char *body;
    } turns [] = {
        { SL_DIALECT_OPENAI, "{\"messages\":[{\"role\":\"user\",\"content\":\"go\"},{\"role\":\"assistant\",\"tool_calls\":[]},"
                             "{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":\"ok\"}],\"tools\":[{\"type\":\"function\","
                             "\"function\":{\"name\":\"bash\"}}]}" },
        { SL_DIALECT_ANTHROPIC, "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\","
                                "\"content\":\"ok\"},{\"type\":\"text\",\"text\":\"reminder\"}]},{\"role\":\"system\",\"content\":\"x\"}],"
                                "\"tools\":[{\"name\":\"Bash\"}]}" },
        { SL_DIALECT_RESPONSES, "{\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\"},{\"type\":\"function_call_output\","
                                "\"call_id\":\"c\",\"output\":\"ok\"}],\"tools\":[{\"type\":\"function\",\"name\":\"exec_command\"}]}" },
        { SL_DIALECT_GEMINI, "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"run_shell_command\"}}]}],"
                             "\"tools\":[{\"functionDeclarations\":[{\"name\":\"run_shell_command\"}]}]}" },
    };
    for (size_t i = 0; i < sizeof turns / sizeof turns [0]; i++) {
        sl_mock_agent_view_t view;
        sl_mock_agent_read (turns [i].dialect, sl_str (turns [i].body), "true", &view);
        cr_expect (view.tool_result, "dialect %d", turns [i].dialect);
        sl_mock_script_t sc;
        cr_assert_eq (sl_mock_agent_build (turns [i].dialect, sl_str ("mock-agent-slow"), sl_str (turns [i].body), &sc), 0);
        char bytes [8192];
        s_bytes (&sc, bytes, sizeof bytes);
        cr_expect_not_null (strstr (bytes, SL_MOCK_AGENT_DONE), "dialect %d: %s", turns [i].dialect, bytes);
        cr_expect_null (strstr (bytes, "sluice-slow.marker"), "dialect %d: no second call", turns [i].dialect);
        sl_mock_script_clear (&sc);
    }
}

Test (sl_mock_agent, scenarios_and_side_requests)
{
    const char *body = s_agents [0].body;
    sl_mock_script_t sc;
    char bytes [8192];
    //  The held call first: no text before it.
    cr_assert_eq (sl_mock_agent_build (SL_DIALECT_ANTHROPIC, sl_str ("mock-agent-slow"), sl_str (body), &sc), 0);
    s_bytes (&sc, bytes, sizeof bytes);
    cr_expect_null (strstr (bytes, "text_delta"), "%s", bytes);
    cr_expect_not_null (strstr (bytes, "\"name\":\"Bash\""), "%s", bytes);
    sl_mock_script_clear (&sc);
    //  A recursive delete.
    cr_assert_eq (sl_mock_agent_build (SL_DIALECT_ANTHROPIC, sl_str ("mock-agent-danger"), sl_str (body), &sc), 0);
    s_bytes (&sc, bytes, sizeof bytes);
    cr_expect_not_null (strstr (bytes, "\"name\":\"Bash\""), "%s", bytes);
    sl_mock_script_clear (&sc);
    //  The call a person approves: its output is not in its command, and
    //  after its result the final text quotes what it printed.
    cr_assert_eq (sl_mock_agent_build (SL_DIALECT_ANTHROPIC, sl_str ("mock-agent-ask"), sl_str (body), &sc), 0);
    s_bytes (&sc, bytes, sizeof bytes);
    cr_expect_not_null (strstr (bytes, "touch sluice-ask.marker"), "%s", bytes);
    cr_expect_null (strstr (bytes, SL_MOCK_AGENT_ASK_OUTPUT), "%s", bytes);
    sl_mock_script_clear (&sc);
    const char *ran = "{\"messages\":[{\"role\":\"user\",\"content\":\"go\"},{\"role\":\"assistant\",\"content\":"
                      "[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Bash\",\"input\":{}}]},{\"role\":\"user\","
                      "\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"sluice-ask-approved\\n\"}]}],"
                      "\"tools\":[{\"name\":\"Bash\"}]}";
    cr_assert_eq (sl_mock_agent_build (SL_DIALECT_ANTHROPIC, sl_str ("mock-agent-ask"), sl_str (ran), &sc), 0);
    s_bytes (&sc, bytes, sizeof bytes);
    cr_expect_not_null (strstr (bytes, SL_MOCK_AGENT_DONE " Bash said: " SL_MOCK_AGENT_ASK_OUTPUT), "%s", bytes);
    sl_mock_script_clear (&sc);
    //  A request without a shell tool (an agent's title request): a text.
    const char *side = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"title?\"}]}";
    cr_assert_eq (sl_mock_agent_build (SL_DIALECT_OPENAI, sl_str ("mock-agent-danger"), sl_str (side), &sc), 0);
    s_bytes (&sc, bytes, sizeof bytes);
    cr_expect_null (strstr (bytes, "tool_calls\":["), "%s", bytes);
    cr_expect_not_null (strstr (bytes, "hello from the mock"));
    sl_mock_script_clear (&sc);
    //  Errors as each API sends them: Gemini's bare error object, Responses' response.failed.
    cr_assert_eq (sl_mock_agent_build (SL_DIALECT_GEMINI, sl_str ("mock-agent-error"), sl_str (s_agents [3].body), &sc), 0);
    s_bytes (&sc, bytes, sizeof bytes);
    cr_expect_not_null (strstr (bytes, "\n{\n  \"error\": {\n    \"code\": 499"), "%s", bytes);
    sl_mock_script_clear (&sc);
    cr_assert_eq (sl_mock_agent_build (SL_DIALECT_RESPONSES, sl_str ("mock-agent-error"), sl_str (s_agents [1].body), &sc), 0);
    s_bytes (&sc, bytes, sizeof bytes);
    cr_expect_not_null (strstr (bytes, "event: error\n"), "%s", bytes);
    cr_expect_not_null (strstr (bytes, "event: response.failed\n"), "%s", bytes);
    sl_mock_script_clear (&sc);
    cr_expect_eq (sl_mock_agent_build (SL_DIALECT_OPENAI, sl_str ("mock-text"), sl_str (side), &sc), -1);
}

//  mock-agent-mcp: the request's MCP tool, with each string it declares;
//  when the request no longer defines it, the MCP tool the conversation
//  called before, with the arguments it had; done only after a result in
//  the last turn.
Test (sl_mock_agent, mcp_calls_the_requests_mcp_tool_or_the_one_it_remembers)
{
    const char *defined = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"}],\"tools\":["
                          "{\"name\":\"Bash\",\"input_schema\":{\"type\":\"object\"}},"
                          "{\"name\":\"mcp__stub__note\",\"input_schema\":{\"type\":\"object\",\"properties\":"
                          "{\"note\":{\"type\":\"string\"},\"count\":{\"type\":\"number\"}}}}]}";
    sl_mock_agent_view_t view;
    sl_mock_agent_read (SL_DIALECT_ANTHROPIC, sl_str (defined), "true", &view);
    cr_expect_str_eq (view.mcp_tool, "mcp__stub__note");
    cr_expect_str_eq (view.mcp_arguments, "{\"note\":\"" SL_MOCK_AGENT_MCP_NOTE "\"}");
    sl_mock_script_t sc;
    char bytes [8192];
    cr_assert_eq (sl_mock_agent_build (SL_DIALECT_ANTHROPIC, sl_str ("mock-agent-mcp"), sl_str (defined), &sc), 0);
    s_bytes (&sc, bytes, sizeof bytes);
    cr_expect_not_null (strstr (bytes, "\"name\":\"mcp__stub__note\""), "%s", bytes);
    sl_mock_script_clear (&sc);
    //  A second turn of the session: the tool withheld, a result in the
    //  history but not in the last turn: the call it made before, again.
    const char *remembered = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
                             "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\","
                             "\"name\":\"mcp__stub__note\",\"input\":{\"note\":\"earlier\"}}]},"
                             "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"kept\"}]},"
                             "{\"role\":\"assistant\",\"content\":\"done\"},{\"role\":\"user\",\"content\":\"again\"},"
                             "{\"role\":\"system\",\"content\":\"reminder\"}],"
                             "\"tools\":[{\"name\":\"Bash\",\"input_schema\":{\"type\":\"object\"}}]}";
    sl_mock_agent_read (SL_DIALECT_ANTHROPIC, sl_str (remembered), "true", &view);
    cr_expect_str_eq (view.mcp_tool, "mcp__stub__note");
    cr_expect_str_eq (view.mcp_arguments, "{\"note\":\"earlier\"}");
    cr_expect (view.tool_result);
    cr_expect_not (view.last_result);
    cr_assert_eq (sl_mock_agent_build (SL_DIALECT_ANTHROPIC, sl_str ("mock-agent-mcp"), sl_str (remembered), &sc), 0);
    s_bytes (&sc, bytes, sizeof bytes);
    cr_expect_not_null (strstr (bytes, "\"name\":\"mcp__stub__note\""), "%s", bytes);
    sl_mock_script_clear (&sc);
    //  Its result in the last turn (a system turn after it): done.
    const char *ran = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"go\"},"
                      "{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\","
                      "\"name\":\"mcp__stub__note\",\"input\":{\"note\":\"x\"}}]},"
                      "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"t\",\"content\":\"kept\"}]},"
                      "{\"role\":\"system\",\"content\":\"reminder\"}],\"tools\":[]}";
    cr_assert_eq (sl_mock_agent_build (SL_DIALECT_ANTHROPIC, sl_str ("mock-agent-mcp"), sl_str (ran), &sc), 0);
    s_bytes (&sc, bytes, sizeof bytes);
    cr_expect_not_null (strstr (bytes, SL_MOCK_AGENT_DONE " mcp__stub__note said: kept"), "%s", bytes);
    sl_mock_script_clear (&sc);
    //  Gemini: a remembered call in a functionCall part (args beside name).
    const char *gemini = "{\"contents\":[{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"mcp__stub__note\","
                         "\"args\":{\"note\":\"g\"}}}]},{\"role\":\"user\",\"parts\":[{\"text\":\"again\"}]}]}";
    sl_mock_agent_read (SL_DIALECT_GEMINI, sl_str (gemini), "true", &view);
    cr_expect_str_eq (view.mcp_tool, "mcp__stub__note");
    cr_expect_str_eq (view.mcp_arguments, "{\"note\":\"g\"}");
    //  No MCP tool anywhere: a text.
    cr_assert_eq (sl_mock_agent_build (SL_DIALECT_ANTHROPIC, sl_str ("mock-agent-mcp"), sl_str (s_agents [0].body), &sc), 0);
    s_bytes (&sc, bytes, sizeof bytes);
    cr_expect_not_null (strstr (bytes, "hello from the mock"), "%s", bytes);
    sl_mock_script_clear (&sc);
}
