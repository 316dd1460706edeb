/*  sl_withhold.h - removing a tool's definition from a request, so the
    model cannot call it (a request rule's action withhold).

    The request must stay valid in every dialect. The normalized request
    (sl_req.h) loses the tool, and a tool choice naming it goes back to
    the provider's default (one that required some tool too, when no tool
    is left); the client's body (root), which a request to an upstream of
    its own dialect is made from, loses it where each dialect puts it:

        tools[i] whose name (or function.name) is the tool: OpenAI Chat,
            Responses, Anthropic
        tools[k].functionDeclarations[j] of that name (an entry left empty
            goes): Gemini
        tool_choice naming it ({"type":"tool","name"}, {"type":"function",
            "function":{"name"}}, {"type":"function","name"}): removed;
            an allowed_tools list loses it, and goes when empty
        toolConfig.functionCallingConfig.allowedFunctionNames: loses it;
            the config goes when none is left
        no tool left: tools, tool_choice, parallel_tool_calls, toolConfig
            go (providers refuse a tool choice without tools)
        a tool_reference to it in a tool_result's content (Anthropic's
            tool search, Claude Code's deferred tools): a text block saying
            it was withheld (the API refuses a reference to a tool the
            request does not define); in the normalized request, the
            SL_REQ_TOOL_REFERENCE part likewise becomes that text

    The removed values stay alive in the request (sl_req_own): names read
    from them (verdicts) keep pointing at them.
*/
#ifndef SL_WITHHOLD_H
#define SL_WITHHOLD_H

#include "common/base/sl_str.h"
#include "common/dialects/sl_req.h"

//  Remove the first definition of the tool name from req: 0, or -1 when
//  the request has none of that name.
int sl_withhold_tool (sl_req_t *req, sl_str_t name);

#endif
