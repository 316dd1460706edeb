/*  sl_schema.h - the request's own tool definitions, and checking a tool
    call's arguments against them.

    The gateway copies the tools a client declared into the stream's START
    message as [{"name": ..., "schema": {...}, ...}] (sl_req_tools_json). A
    policy rule with schema_violation: true matches a call whose arguments
    do not conform to its tool's JSON schema, whose tool the request never
    declared, or whose tool's schema was over the size bound and did not
    travel (marked truncated: it cannot be checked).

    The checker covers the keywords tool schemas use to constrain values:
    type (a name or a list of names; "integer" accepts integral numbers),
    required, enum, const, properties, additionalProperties (false or a
    schema), items (a schema). Other keywords are ignored. Schemas come from
    clients, so nothing here trusts them: any shape is accepted, nesting is
    bounded, and a malformed tool list declares no tool.

    Built once per stream (lazily, when a policy needs it) and read for each
    of its calls.
*/
#ifndef SL_SCHEMA_H
#define SL_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

#define SL_SCHEMA_MAX_DEPTH 64          //  deeper schemas or values are a violation

typedef struct _sl_schema_t sl_schema_t;

//  Parse the START message's tools (JSON text; absent or malformed: no tool
//  is declared). Never NULL.
sl_schema_t *sl_schema_new (sl_str_t tools);
void sl_schema_destroy (sl_schema_t **self_p);
//  Number of tools declared.
size_t sl_schema_count (sl_schema_t *self);
//  True when the request declares a tool of that name.
bool sl_schema_has (sl_schema_t *self, sl_str_t name);
//  Check a call: 0 when the tool is declared and args (parsed arguments,
//  NULL when they are not valid JSON) conform to its schema; -1 with the
//  first violation appended to why ("/city: expected string, got integer").
int sl_schema_check (sl_schema_t *self, sl_str_t name, json_t *args, sl_buf_t *why);
//  Check a value against one schema; same contract as sl_schema_check.
int sl_schema_validate (json_t *schema, json_t *value, sl_buf_t *why);

#endif
