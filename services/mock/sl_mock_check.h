/*  sl_mock_check.h - the mock reads a request as its provider would.

    A pure library beside sl_mock_script: a provider refuses a request
    whose conversation does not hold together, and sluice's translations
    must send requests that do. For each provider dialect the mock checks
    what the real API checks about a conversation with tools (written
    from the providers' documentation, independently of sluice's own
    dialect code), and refuses with a 400 in the provider's format, naming
    what is wrong:

      openai      roles are system, developer, user, assistant, tool; a
                  tool call has an id, type function, a name and string
                  arguments; every tool message answers a call of the
                  assistant message before its run of tool messages, and
                  such a message's calls are all answered before any
                  other message
      anthropic   roles are user and assistant, and system (a
                  mid-conversation system message: not first, right after
                  a user turn, followed by an assistant turn or last,
                  text only); block types are known; a
                  tool_use has an id of [A-Za-z0-9_-], a name and an
                  object input; the tool_results answering an assistant
                  turn's tool_use blocks come first in the next user turn,
                  one for each and no other; text blocks are not empty
      responses   items are messages (user, assistant, system,
                  developer), function_call (call_id, name, string
                  arguments) and function_call_output answering an
                  earlier function_call's call_id, reasoning
      gemini      roles are user and model; every part holds one known
                  field; a functionCall has a name and object args; the
                  user content after a model content with calls answers
                  each of them with a functionResponse of its name, as
                  many as there were calls

    It also reads what the last turn says, for the coding-agent scenarios
    (sl_mock_agent.h): whether it is a tool result, and which tool (by its
    call in the request's own history) said what.
*/
#ifndef SL_MOCK_CHECK_H
#define SL_MOCK_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "common/base/sl_str.h"

#define SL_MOCK_CHECK_TEXT_MAX 256      //  a result's text kept, bytes

//  0 when the request holds together for the dialect's API; -1 with why.
int sl_mock_check (int dialect, sl_str_t body, char *why, size_t size);

//  The last tool result of the request: its tool's name (from the result,
//  or from its call in the request's history) and text. false when the
//  request's last turn carries none.
typedef struct {
    char name [64];
    char text [SL_MOCK_CHECK_TEXT_MAX];
} sl_mock_result_t;

bool sl_mock_check_result (int dialect, sl_str_t body, sl_mock_result_t *out);

#endif
