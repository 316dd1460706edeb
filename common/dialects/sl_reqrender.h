/*  sl_reqrender.h - what the dialects' request renderers share.

    A dialect's render operation (sl_dialect.h) writes another dialect's
    normalized request (sl_req.h) as its own request body, noting in the
    translation (sl_xlate_t) what it drops and refusing what the answer
    needs and it cannot carry. Renderers build the body as a jansson tree;
    what every format builds alike is here, once: strings, numbers that
    were given, the list of tool definitions (as each format names its
    members), a tool call's arguments as an object, a message's parts as
    a turn's blocks with the tool results first, turns of one role joined,
    a part of the client's dialect alone refused, the body written. A
    renderer says what its format calls things and writes what is its own.
*/
#ifndef SL_REQRENDER_H
#define SL_REQRENDER_H

#include <jansson.h>
#include <stdbool.h>

#include "common/base/sl_buf.h"
#include "common/dialects/sl_req.h"

//  A JSON string of a slice ("" when absent). New reference.
json_t *sl_reqrender_str (sl_str_t s);
//  An array of strings (stop sequences). New reference.
json_t *sl_reqrender_strs (const sl_str_t *list, size_t count);
//  Set key to a number the request gave: a real unless NAN, an integer
//  unless negative (sl_req_t's "not given").
void sl_reqrender_real (json_t *object, const char *key, double value);
void sl_reqrender_int (json_t *object, const char *key, int64_t value);

//  How a strict flag goes with each definition.
typedef enum {
    SL_REQRENDER_STRICT_NONE = 0,       //  the format has none
    SL_REQRENDER_STRICT_WHEN,           //  "strict": true when the tool is strict, else nothing
    SL_REQRENDER_STRICT_ALWAYS          //  "strict": true or false (the API's default is strict)
} sl_reqrender_strict_t;

//  How a dialect declares tools: one object per tool, with "name",
//  "description" (when the tool has one) and its schema.
typedef struct {
    const char *type;                   //  each object starts with "type": this; NULL: no type
    const char *wrapper;                //  name, description and schema go in this member
                                        //  ({"type":"function","function":{..}}); NULL: in the object
    const char *schema;                 //  the schema's member; "outer.inner" puts it in an
                                        //  object of its own ({"inputSchema":{"json":..}})
    const char *no_schema;              //  JSON for a tool without a schema; NULL: no member
    int strict;                         //  sl_reqrender_strict_t
    const char *own;                    //  why a provider's own tool cannot cross (a refusal)
} sl_reqrender_tools_t;

//  The request's tools as a dialect declares them, appended to the array
//  list. 0, or -1 refused (a provider's own tool).
int sl_reqrender_tools (const sl_req_t *req, const sl_reqrender_tools_t *spec, sl_xlate_t *x, json_t *list);
//  A tool call's arguments as an object (new reference): arguments that
//  are not a JSON object become {} (noted dropped).
json_t *sl_reqrender_args (const sl_part_t *call, sl_xlate_t *x);
//  A tool call's arguments as a JSON string (new reference): its JSON
//  text, "{}" when it has none.
json_t *sl_reqrender_args_text (const sl_part_t *call);
//  The response format's JSON schema as {"type": type (NULL: none),
//  "name": its name or "response", "schema": its schema or {}} (new
//  reference); strict is the dialect's to add.
json_t *sl_reqrender_schema_format (const sl_req_t *req, const char *type);
//  Refuse a part of the client's dialect alone (OPAQUE, or a kind the
//  format has no place for), naming it; dialect names the format for
//  the message ("Messages"). Returns -1.
int sl_reqrender_refuse_part (sl_xlate_t *x, const sl_part_t *part, const char *dialect);

//  One part as a block of the dialect: *out (NULL on entry) the block
//  (new reference), left NULL when the part goes nowhere. 0, or -1
//  refused.
typedef int (sl_reqrender_part_fn) (const sl_req_t *req, const sl_part_t *part, sl_xlate_t *x, json_t **out);
//  The blocks of a message's parts (a new array): its tool results first,
//  as the APIs want results right after the calls. 0, or -1 refused
//  (*out NULL).
int sl_reqrender_blocks (const sl_req_t *req, const sl_message_t *m, sl_reqrender_part_fn *fn, sl_xlate_t *x,
                         json_t **out);
//  Is a block a tool result (which comes first in a turn)?
typedef bool (sl_reqrender_result_fn) (json_t *block);
//  Append a turn {"role": role, key: blocks} to the array turns (takes
//  blocks), or, when the last turn has this role, join the blocks to it
//  (APIs that want user and assistant turns to alternate): the results
//  after the results it starts with, the others at its end.
void sl_reqrender_turn (json_t *turns, const char *role, const char *key, json_t *blocks,
                        sl_reqrender_result_fn *is_result);

//  The end of a render: the body written to out (compact,
//  SL_REQ_JSON_FLAGS) when rc is 0; root released. Returns rc.
int sl_reqrender_end (json_t *root, int rc, sl_buf_t *out);

#endif
