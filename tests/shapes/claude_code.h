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

#endif
