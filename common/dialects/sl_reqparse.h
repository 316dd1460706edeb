/*  sl_reqparse.h - what the dialects' request parsers share.

    A dialect's parse operation (sl_dialect.h) reads a client's body into
    the normalized request (sl_req.h). What every format has in the same
    shape is read here, once: the model and stream members, the list of
    tool definitions (a name, a description, a provider's own tool told
    apart by its type), the members the model does not hold. A parser
    names its format's members and writes only what its format has of its
    own (its content blocks, its schema member, its quirks).

    Refusals are sl_refuse's (400 invalid_request_error), worded as the
    parsers always worded them, so a client sees the same answer whatever
    code reads its body.
*/
#ifndef SL_REQPARSE_H
#define SL_REQPARSE_H

#include <jansson.h>
#include <stdbool.h>

#include "common/dialects/sl_dialect.h"

//  "model": a non-empty string, into req->model. 0, or -1 refused.
int sl_reqparse_model (json_t *root, sl_req_t *req, sl_refusal_t *err);
//  "stream": absent, null or a boolean, into req->stream. 0, or -1 refused.
int sl_reqparse_stream (json_t *root, sl_req_t *req, sl_refusal_t *err);

//  What a definition without a name is.
typedef enum {
    SL_REQPARSE_UNNAMED_SKIP = 0,       //  not a tool the judge (or another dialect) knows: left out
    SL_REQPARSE_UNNAMED_KEEP,           //  a provider's own tool (it has a type, no name): kept
    SL_REQPARSE_UNNAMED_REFUSE          //  the format requires a name: refused
} sl_reqparse_unnamed_t;

//  How a dialect lists its tool definitions: an array of entries, each a
//  definition (or holding one in a member), with "name" and
//  "description".
typedef struct {
    const char *list;                   //  the list's name, for refusals ("tools")
    const char *wrapper;                //  the definition is this member of the entry
                                        //  ("function"); NULL: the entry itself
    const char *function_type;          //  an entry whose "type" is another string is a
                                        //  provider's own tool (sl_tool_t.server); NULL: no types
    int unnamed;                        //  sl_reqparse_unnamed_t
    //  Optional: read the rest of one definition (its schema, strict,
    //  marks the model does not hold), once its name, description and
    //  type are read. 0, or -1 refused (err filled).
    int (*read) (json_t *def, sl_tool_t *tool, sl_req_t *req, sl_refusal_t *err);
} sl_reqparse_tools_t;

//  The tool definitions of a list (absent or null: none) into req->tools.
//  0, or -1 refused: the list is not an array, an entry not an object, a
//  name not a string (or, when a name is required, absent).
int sl_reqparse_tools (json_t *list, const sl_reqparse_tools_t *spec, sl_req_t *req, sl_refusal_t *err);

//  Is key one of a NULL-terminated list?
bool sl_reqparse_listed (const char *key, const char *const *list);
//  Note every member of object the model does not hold: each that is not
//  null and not in mapped, by sl_req_field (matters and informative are
//  its lists).
void sl_reqparse_fields (sl_req_t *req, json_t *object, const char *const *mapped,
                         const char *const *matters, const char *const *informative);
//  The strings of an array (other elements skipped) as stop sequences.
void sl_reqparse_stops (sl_req_t *req, json_t *array);

#endif
