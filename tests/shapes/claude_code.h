/*  claude_code.h - the request shapes today's Claude Code sends, for the
    unit tests of the dialect modules and the integration tests of the
    whole stack (the same bytes in both). */
#ifndef TESTS_SHAPES_CLAUDE_CODE_H
#define TESTS_SHAPES_CLAUDE_CODE_H

//  A /v1/messages request with a system message among the turns (a
//  mid-conversation system message), adaptive thinking, an effort in
//  output_config and context management; printf format, %s the model.
#define CLAUDE_CODE_REQUEST_FMT \
    "{\"model\":\"%s\",\"max_tokens\":32000,\"stream\":true," \
    "\"system\":[{\"type\":\"text\",\"text\":\"You are a coding agent.\"}]," \
    "\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}," \
    "{\"role\":\"system\",\"content\":\"Available agent types: general-purpose.\"}," \
    "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"hello\"}]}," \
    "{\"role\":\"user\",\"content\":\"list files\"}]," \
    "\"thinking\":{\"type\":\"adaptive\"},\"output_config\":{\"effort\":\"high\"}," \
    "\"context_management\":{\"edits\":[{\"type\":\"clear_thinking_20251015\",\"keep\":\"all\"}]}}"
#define CLAUDE_CODE_SYSTEM_MESSAGE "Available agent types: general-purpose."
//  The anthropic-beta header it sends with such a request (2.1.332).
#define CLAUDE_CODE_BETAS \
    "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27," \
    "mid-conversation-tool-changes-2026-07-01,thinking-token-count-2026-05-13,advanced-tool-use-2025-11-20," \
    "effort-2025-11-24"

#endif
