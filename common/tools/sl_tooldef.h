/*  sl_tooldef.h - what identifies a tool: its name as a client wrote it,
    the MCP server and tool that name stands for, and the digest of its
    definition.

    Agents load tools from MCP servers and write their names each in its
    own way. sl_tooldef_name reads those forms into (server, tool):

        mcp__<server>__<tool>   Claude Code; Codex CLI (its Responses
                                namespace "mcp__<server>" and the tool,
                                flattened)
        mcp_<server>_<tool>     Gemini CLI (since its 2026 releases; the
                                server is read up to the first "_", as
                                Gemini CLI reads it back)
        <server>__<tool>        older Gemini CLI, for a tool whose name
                                another server's tool took first
        <tool>                  anything else: no server known

    (opencode writes <server>_<tool>, which cannot be told apart from a
    tool whose own name holds an underscore without knowing the servers:
    sl_tooldef_name_in reads it, and Gemini's form, against a list of
    server names. Clients write a server's and a tool's characters outside
    [A-Za-z0-9_-] as "_": a list names servers as the client wrote them.)

    The digest of a definition is the SHA-256 of its canonical JSON:
    {"description": ..., "name": ..., "schema": ...} with every object's
    keys sorted and no whitespace, so the same definition sent by two
    clients, in two dialects, with keys in another order, has one digest.
    A definition itself (sl_tool_t) is declared here, below the dialects
    whose parsers fill it and the normalized request (sl_req.h) that holds
    a list of them. Pure functions; the digest is 64 hex digits and a NUL.
*/
#ifndef SL_TOOLDEF_H
#define SL_TOOLDEF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/base/sl_buf.h"
#include "common/base/sl_str.h"

#define SL_TOOLDEF_DIGEST_SIZE 65       //  64 hex digits and a NUL
//  A definition's description and schema travel whole (to the judge, the
//  audit) up to this many bytes; beyond, cut and marked truncated.
#define SL_TOOLDEF_TRAVEL_MAX (64u << 10)

//  A tool definition, as a request holds it (sl_req_t's tools, filled by
//  each dialect's parser).
typedef struct {
    sl_str_t name;                      //  absent for a provider's tool that has none
    sl_str_t description;
    json_t *schema;                     //  parameters (JSON schema); NULL when not given
    json_t *declared;                   //  the schema as declared, when the dialect's is not
                                        //  JSON Schema (Gemini's OpenAPI subset); NULL otherwise
    bool strict;
    sl_str_t server;                    //  a provider's own tool: its type ("web_search_20250305")
} sl_tool_t;

//  A tool name read: both slices of the name as written.
typedef struct {
    sl_str_t server;                    //  absent when the name names none
    sl_str_t tool;                      //  the tool's own name
} sl_toolname_t;

//  Read a tool name as a client wrote it (see above).
void sl_tooldef_name (sl_str_t written, sl_toolname_t *out);
//  The same, also reading <server>_<tool> for the servers named (count
//  names; the longest that fits wins).
void sl_tooldef_name_in (sl_str_t written, const char *const *servers, int count, sl_toolname_t *out);

//  The canonical JSON of a definition into out (appended): description
//  absent and schema NULL are written as null.
void sl_tooldef_canonical (sl_str_t name, sl_str_t description, json_t *schema, sl_buf_t *out);
//  The digest of a definition: 64 hex digits and a NUL into digest.
void sl_tooldef_digest (sl_str_t name, sl_str_t description, json_t *schema, char *digest);
//  The digest of a request's tool definition (its JSON Schema: the same
//  in every dialect, Gemini's declared schema converted).
void sl_tooldef_digest_tool (const sl_tool_t *tool, char *digest);
//  The digests of a request's named tools (count of them) as a JSON
//  object, name -> digest, appended to out ("{}" for none): what the
//  gateway sends the judge (START tdig) for definition conditions on
//  tool calls.
void sl_tooldef_digests (const sl_tool_t *tools, size_t count, sl_buf_t *out);

#endif
