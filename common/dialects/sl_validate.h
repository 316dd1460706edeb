/*  sl_validate.h - output legality: is this event allowed here?

    One validator per response, for the client's dialect. The emitter feeds
    it every SSE event it is about to send, as the client would read it
    (event name, data JSON); the validator keeps the stream's state machine
    from the dialect's specification and says whether the event may come
    next. An illegal event is withheld by the emitter, which ends the
    stream with a clean error event instead and counts it.

    The rules, per dialect:
      OpenAI Chat: chunks of one id; the first chunk gives the role; tool
        calls numbered from 0 without gaps, a new one with id, type and
        name; one finish_reason per choice and nothing for that choice
        after it; the usage chunk (empty choices) once, after the finish;
        [DONE] after the finish and last.
      Anthropic: message_start first and once; content_block_start at the
        next index with no block open; deltas of the open block and of a
        type that block takes; one stop per block; after a tool_use only
        more tool_use blocks; message_delta once with no block open and a
        stop_reason that agrees with the tool_use blocks sent (tool_use iff
        there are calls, unless the response was cut at max_tokens);
        message_stop last.
      Responses: event name = data type; sequence_number from 0 without
        gaps; response.created first; output items added at the next
        output_index, one open at a time, their part and delta events
        naming the open item and fitting its type; one done per item and
        part; response.completed / incomplete / failed with no item open,
        listing every item, last.
      Gemini: GenerateContentResponse objects of one responseId, one
        candidate (index 0) whose parts each carry a known field; a
        functionCall has a name and object args; finishReason once, in
        the last chunk.
    Every dialect: an error event may come at any time before the end and
    is the end; SSE comments (keep-alives) may come at any time before the
    end; nothing comes after the end.

    The whole body of a non-streaming response is checked by the same
    class (sl_validate_body), against the rules the stream would obey:
      OpenAI Chat: a chat.completion with an id and one choice (index 0)
        whose message has the assistant role, content and refusal that are
        strings or null, tool calls each with an id, type function, a name
        and string arguments; a finish_reason, tool_calls only when calls
        are left; usage with token counts.
      Anthropic: a message with an id and the assistant role; content
        blocks of known types with their fields (a tool_use with id, name
        and an object input), nothing but tool_use after a tool_use; a
        stop_reason that agrees with the tool_use blocks as in a stream;
        usage with input and output tokens.
      Responses: a response with an id, status completed or incomplete,
        output items each with an id and a type, function_call items with
        call_id, name and string arguments, message items with the
        assistant role; usage.
      Gemini: one candidate (index 0) whose parts each carry a known field
        (a functionCall with a name and object args), and a finishReason.

    Pure: no sockets, no allocation per event.
*/
#ifndef SL_VALIDATE_H
#define SL_VALIDATE_H

#include <stddef.h>

#include "common/base/sl_str.h"

typedef struct _sl_validate_t sl_validate_t;

//  A validator for a client dialect (sl_dialect_t); NULL when unknown.
sl_validate_t *sl_validate_new (int dialect);
void sl_validate_destroy (sl_validate_t **self_p);
//  Check one whole SSE event (its lines and the blank line after them).
//  0: legal, the state advances; -1: illegal, the state is unchanged and
//  sl_validate_reason says why.
int sl_validate_event (sl_validate_t *self, sl_str_t event);
//  May the response end here? 0 yes (it ended with its terminal event or
//  an error), -1 no.
int sl_validate_end (sl_validate_t *self);
//  Why the last check failed (borrowed, valid until the next call).
const char *sl_validate_reason (sl_validate_t *self);
//  Check the whole JSON body of a non-streaming response (a fresh
//  validator, not used for events). 0 legal, -1 illegal (with a reason).
int sl_validate_body (sl_validate_t *self, sl_str_t body);
//  Length of the first complete SSE event in bytes (up to and including
//  the blank line that ends it); 0 when bytes holds none.
size_t sl_validate_next_event (sl_str_t bytes);

#endif
