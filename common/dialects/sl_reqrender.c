/*  sl_reqrender.c - what the dialects' request renderers share (see
    sl_reqrender.h). */
#include "common/dialects/sl_reqrender.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S_MEMBER_MAX 64                 //  longest member name of a schema's outer object
#define S_WHY_MAX 128                   //  the refusal's reason

json_t *
sl_reqrender_str (sl_str_t s)
{
    return json_stringn (s.ptr ? s.ptr : "", s.len);
}

json_t *
sl_reqrender_strs (const sl_str_t *list, size_t count)
{
    json_t *array = json_array ();
    for (size_t i = 0; i < count; i++)
        json_array_append_new (array, sl_reqrender_str (list [i]));
    return array;
}

void
sl_reqrender_real (json_t *object, const char *key, double value)
{
    if (!isnan (value))
        json_object_set_new (object, key, json_real (value));
}

void
sl_reqrender_int (json_t *object, const char *key, int64_t value)
{
    if (value >= 0)
        json_object_set_new (object, key, json_integer (value));
}

//  Set the schema member (a dotted one in an object of its own).
static void
s_set_schema (json_t *def, const char *member, json_t *schema)
{
    const char *dot = strchr (member, '.');
    if (!dot) {
        json_object_set_new (def, member, schema);
        return;
    }
    char outer [S_MEMBER_MAX];
    snprintf (outer, sizeof outer, "%.*s", (int) (dot - member), member);
    json_object_set_new (def, outer, json_pack ("{s:o}", dot + 1, schema));
}

int
sl_reqrender_tools (const sl_req_t *req, const sl_reqrender_tools_t *spec, sl_xlate_t *x, json_t *list)
{
    for (size_t i = 0; i < req->tool_count; i++) {
        const sl_tool_t *t = &req->tools [i];
        if (t->server.ptr)
            return sl_xlate_refuse (x, "a provider's own tool", spec->own);
        json_t *tool = json_object ();
        if (spec->type)
            json_object_set_new (tool, "type", json_string (spec->type));
        json_t *def = spec->wrapper ? json_object () : tool;
        json_object_set_new (def, "name", sl_reqrender_str (t->name));
        if (t->description.ptr)
            json_object_set_new (def, "description", sl_reqrender_str (t->description));
        json_t *schema = t->schema ? json_incref (t->schema) : spec->no_schema ? json_loads (spec->no_schema, 0, NULL)
                                                                               : NULL;
        if (schema)
            s_set_schema (def, spec->schema, schema);
        if (spec->strict == SL_REQRENDER_STRICT_ALWAYS || (spec->strict == SL_REQRENDER_STRICT_WHEN && t->strict))
            json_object_set_new (def, "strict", json_boolean (t->strict));
        if (spec->wrapper)
            json_object_set_new (tool, spec->wrapper, def);
        json_array_append_new (list, tool);
    }
    return 0;
}

json_t *
sl_reqrender_args (const sl_part_t *call, sl_xlate_t *x)
{
    json_t *args = call->arguments.ptr ? json_loadb (call->arguments.ptr, call->arguments.len, 0, NULL) : NULL;
    if (!json_is_object (args)) {
        json_decref (args);
        args = json_object ();
        sl_xlate_drop (x, "tool call arguments that are not a JSON object");
    }
    return args;
}

json_t *
sl_reqrender_args_text (const sl_part_t *call)
{
    return sl_reqrender_str (call->arguments.ptr ? call->arguments : SL_STR_LIT ("{}"));
}

json_t *
sl_reqrender_schema_format (const sl_req_t *req, const char *type)
{
    json_t *format = json_object ();
    if (type)
        json_object_set_new (format, "type", json_string (type));
    json_object_set_new (format, "name", sl_reqrender_str (req->format_name.ptr ? req->format_name
                                                                                : SL_STR_LIT ("response")));
    json_object_set_new (format, "schema", req->format_schema ? json_incref (req->format_schema) : json_object ());
    return format;
}

int
sl_reqrender_refuse_part (sl_xlate_t *x, const sl_part_t *part, const char *dialect)
{
    char why [S_WHY_MAX];
    snprintf (why, sizeof why, "the client's dialect has it, %s does not", dialect);
    return sl_xlate_refuse (x, part->text.ptr ? part->text.ptr : "a content part", why);
}

int
sl_reqrender_blocks (const sl_req_t *req, const sl_message_t *m, sl_reqrender_part_fn *fn, sl_xlate_t *x,
                     json_t **out)
{
    json_t *results = json_array (), *others = json_array ();
    *out = NULL;
    for (size_t j = 0; j < m->count; j++) {
        json_t *block = NULL;
        if (fn (req, &m->parts [j], x, &block)) {
            json_decref (block);
            json_decref (results);
            json_decref (others);
            return -1;
        }
        if (block)
            json_array_append_new (m->parts [j].kind == SL_PART_TOOL_RESULT ? results : others, block);
    }
    json_array_extend (results, others);
    json_decref (others);
    *out = results;
    return 0;
}

void
sl_reqrender_turn (json_t *turns, const char *role, const char *key, json_t *blocks,
                   sl_reqrender_result_fn *is_result)
{
    json_t *last = json_array_get (turns, json_array_size (turns) - 1);
    const char *last_role = json_string_value (json_object_get (last, "role"));
    if (!last_role || strcmp (last_role, role) != 0) {
        json_array_append_new (turns, json_pack ("{s:s,s:o}", "role", role, key, blocks));
        return;
    }
    json_t *into = json_object_get (last, key);
    size_t at = 0;
    while (at < json_array_size (into) && is_result (json_array_get (into, at)))
        at++;
    size_t i;
    json_t *block;
    json_array_foreach (blocks, i, block) {
        if (is_result (block))
            json_array_insert (into, at++, block);
        else
            json_array_append (into, block);
    }
    json_decref (blocks);
}

int
sl_reqrender_end (json_t *root, int rc, sl_buf_t *out)
{
    if (rc == 0) {
        char *text = json_dumps (root, SL_REQ_JSON_FLAGS);
        sl_buf_puts (out, text);
        free (text);
    }
    json_decref (root);
    return rc;
}
