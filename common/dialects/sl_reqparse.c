/*  sl_reqparse.c - what the dialects' request parsers share (see
    sl_reqparse.h). */
#include "common/dialects/sl_reqparse.h"

#include <string.h>

#define S_INVALID "invalid_request_error"

int
sl_reqparse_model (json_t *root, sl_req_t *req, sl_refusal_t *err)
{
    json_t *model = json_object_get (root, "model");
    if (!json_is_string (model) || json_string_length (model) == 0)
        return sl_refuse (err, 400, S_INVALID, "'model' is required and must be a string");
    req->model = sl_req_str (model);
    return 0;
}

int
sl_reqparse_stream (json_t *root, sl_req_t *req, sl_refusal_t *err)
{
    json_t *stream = json_object_get (root, "stream");
    if (stream && !json_is_null (stream) && !json_is_boolean (stream))
        return sl_refuse (err, 400, S_INVALID, "'stream' must be a boolean");
    req->stream = json_is_true (stream);
    return 0;
}

int
sl_reqparse_tools (json_t *list, const sl_reqparse_tools_t *spec, sl_req_t *req, sl_refusal_t *err)
{
    if (!list || json_is_null (list))
        return 0;
    if (!json_is_array (list))
        return sl_refuse (err, 400, S_INVALID, "'%s' must be an array", spec->list);
    //  Where the name is, for refusals: "function.name" or "name".
    const char *wrapper = spec->wrapper ? spec->wrapper : "";
    const char *dot = spec->wrapper ? "." : "";
    size_t i;
    json_t *entry;
    json_array_foreach (list, i, entry) {
        //  An entry that holds its definition is checked by its name.
        if (!spec->wrapper && !json_is_object (entry))
            return sl_refuse (err, 400, S_INVALID, "%s[%zu] must be an object", spec->list, i);
        json_t *def = spec->wrapper ? json_object_get (entry, spec->wrapper) : entry;
        json_t *name = json_object_get (def, "name");
        if (!name && spec->unnamed == SL_REQPARSE_UNNAMED_SKIP)
            continue;
        if (name ? !json_is_string (name) : spec->unnamed == SL_REQPARSE_UNNAMED_REFUSE)
            return sl_refuse (err, 400, S_INVALID, "%s[%zu].%s%sname must be a string", spec->list, i, wrapper, dot);
        sl_tool_t *t = sl_req_add_tool (req);
        t->name = sl_req_str (name);
        t->description = sl_req_str (json_object_get (def, "description"));
        json_t *type = spec->function_type ? json_object_get (entry, "type") : NULL;
        if (json_is_string (type) && strcmp (json_string_value (type), spec->function_type) != 0)
            t->server = sl_req_str (type);
        if (spec->read && spec->read (def, t, req, err))
            return -1;
    }
    return 0;
}

bool
sl_reqparse_listed (const char *key, const char *const *list)
{
    for (; *list; list++)
        if (strcmp (key, *list) == 0)
            return true;
    return false;
}

void
sl_reqparse_fields (sl_req_t *req, json_t *object, const char *const *mapped,
                    const char *const *matters, const char *const *informative)
{
    const char *key;
    json_t *value;
    json_object_foreach (object, key, value)
        if (!sl_reqparse_listed (key, mapped) && !json_is_null (value))
            sl_req_field (req, key, matters, informative);
}

void
sl_reqparse_stops (sl_req_t *req, json_t *array)
{
    size_t i;
    json_t *stop;
    json_array_foreach (array, i, stop)
        if (json_is_string (stop))
            sl_req_add_stop (req, sl_req_str (stop));
}
