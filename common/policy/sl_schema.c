/*  sl_schema.c - tool schemas of a request and the argument checker. */
#include "common/policy/sl_schema.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"

struct _sl_schema_t {
    json_t *tools;                      //  the array from START, or NULL
};

sl_schema_t *
sl_schema_new (sl_str_t tools)
{
    sl_schema_t *self = sl_xcalloc (1, sizeof *self);
    if (tools.ptr && tools.len) {
        self->tools = json_loadb (tools.ptr, tools.len, JSON_ALLOW_NUL, NULL);
        if (!json_is_array (self->tools)) {
            json_decref (self->tools);
            self->tools = NULL;
        }
    }
    return self;
}

void
sl_schema_destroy (sl_schema_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    json_decref ((*self_p)->tools);
    free (*self_p);
    *self_p = NULL;
}

size_t
sl_schema_count (sl_schema_t *self)
{
    return json_array_size (self->tools);
}

//  The declared tool of that name, or NULL.
static json_t *
s_tool (sl_schema_t *self, sl_str_t name)
{
    size_t i;
    json_t *tool;
    json_array_foreach (self->tools, i, tool) {
        json_t *n = json_object_get (tool, "name");
        if (json_is_string (n) && name.ptr && json_string_length (n) == name.len
        &&  memcmp (json_string_value (n), name.ptr, name.len) == 0)
            return tool;
    }
    return NULL;
}

bool
sl_schema_has (sl_schema_t *self, sl_str_t name)
{
    return s_tool (self, name) != NULL;
}

//  --------------------------------------------------------------------------
//  The checker

typedef struct {
    sl_buf_t path;                      //  JSON pointer of the value being checked
    sl_buf_t *why;
} s_walk_t;

static const char *
s_type_name (json_t *v)
{
    switch (json_typeof (v)) {
        case JSON_OBJECT: return "object";
        case JSON_ARRAY: return "array";
        case JSON_STRING: return "string";
        case JSON_INTEGER: return "integer";
        case JSON_REAL: return "number";
        case JSON_TRUE:
        case JSON_FALSE: return "boolean";
        default: return "null";
    }
}

static bool
s_is_type (json_t *v, const char *type)
{
    if (strcmp (type, "object") == 0) return json_is_object (v);
    if (strcmp (type, "array") == 0) return json_is_array (v);
    if (strcmp (type, "string") == 0) return json_is_string (v);
    if (strcmp (type, "number") == 0) return json_is_number (v);
    if (strcmp (type, "boolean") == 0) return json_is_boolean (v);
    if (strcmp (type, "null") == 0) return json_is_null (v);
    if (strcmp (type, "integer") == 0) {
        if (json_is_integer (v))
            return true;
        double d = json_is_real (v) ? json_real_value (v) : NAN;
        return isfinite (d) && d == floor (d);
    }
    return true;                        //  an unknown type name constrains nothing
}

//  JSON equality with numbers compared by value (1 equals 1.0).
static bool
s_equal (json_t *a, json_t *b)
{
    if (json_is_number (a) && json_is_number (b))
        return json_number_value (a) == json_number_value (b);
    return json_equal (a, b);
}

static int
s_violation (s_walk_t *w, const char *format, const char *detail)
{
    sl_buf_puts (w->why, w->path.len ? sl_buf_cstr (&w->path) : "(arguments)");
    sl_buf_puts (w->why, ": ");
    sl_buf_printf (w->why, format, detail);
    return -1;
}

//  Append an escaped pointer token for key to the path; returns the old length.
static size_t
s_push (s_walk_t *w, const char *key)
{
    size_t mark = w->path.len;
    sl_buf_putc (&w->path, '/');
    for (const char *p = key; *p; p++)
        if (*p == '~')
            sl_buf_puts (&w->path, "~0");
        else
        if (*p == '/')
            sl_buf_puts (&w->path, "~1");
        else
            sl_buf_putc (&w->path, *p);
    return mark;
}

static void
s_pop (s_walk_t *w, size_t mark)
{
    w->path.len = mark;
}

static int s_check (s_walk_t *w, json_t *schema, json_t *value, int depth);

static int
s_check_type (s_walk_t *w, json_t *type, json_t *value)
{
    if (json_is_string (type)) {
        if (s_is_type (value, json_string_value (type)))
            return 0;
        sl_buf_t expect = { 0 };
        sl_buf_printf (&expect, "expected %s, got %s", json_string_value (type), s_type_name (value));
        int rc = s_violation (w, "%s", sl_buf_cstr (&expect));
        sl_buf_free (&expect);
        return rc;
    }
    if (json_is_array (type) && json_array_size (type) > 0) {
        size_t i;
        json_t *t;
        json_array_foreach (type, i, t)
            if (!json_is_string (t) || s_is_type (value, json_string_value (t)))
                return 0;
        return s_violation (w, "a %s is not among the allowed types", s_type_name (value));
    }
    return 0;
}

static int
s_check_object (s_walk_t *w, json_t *schema, json_t *value, int depth)
{
    size_t i;
    json_t *name;
    json_array_foreach (json_object_get (schema, "required"), i, name)
        if (json_is_string (name) && !json_object_get (value, json_string_value (name)))
            return s_violation (w, "missing required property '%s'", json_string_value (name));
    json_t *props = json_object_get (schema, "properties");
    json_t *extra = json_object_get (schema, "additionalProperties");
    const char *key;
    json_t *member;
    json_object_foreach (value, key, member) {
        json_t *sub = json_object_get (props, key);
        if (!sub && json_is_false (extra)) {
            size_t mark = s_push (w, key);
            int rc = s_violation (w, "%s", "property not allowed (additionalProperties is false)");
            s_pop (w, mark);
            return rc;
        }
        if (!sub && json_is_object (extra))
            sub = extra;
        if (sub) {
            size_t mark = s_push (w, key);
            int rc = s_check (w, sub, member, depth + 1);
            s_pop (w, mark);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static int
s_check (s_walk_t *w, json_t *schema, json_t *value, int depth)
{
    if (depth > SL_SCHEMA_MAX_DEPTH)
        return s_violation (w, "%s", "nested too deeply to check");
    if (json_is_false (schema))
        return s_violation (w, "%s", "no value is allowed here");
    if (!json_is_object (schema))
        return 0;                       //  true, or a shape we do not read
    if (s_check_type (w, json_object_get (schema, "type"), value))
        return -1;
    json_t *allowed = json_object_get (schema, "enum");
    if (json_is_array (allowed)) {
        bool found = false;
        size_t i;
        json_t *a;
        json_array_foreach (allowed, i, a)
            if (s_equal (a, value)) {
                found = true;
                break;
            }
        if (!found)
            return s_violation (w, "%s", "the value is not one of the allowed values (enum)");
    }
    json_t *constant = json_object_get (schema, "const");
    if (constant && !s_equal (constant, value))
        return s_violation (w, "%s", "the value differs from the required constant");
    if (json_is_object (value))
        return s_check_object (w, schema, value, depth);
    json_t *items = json_object_get (schema, "items");
    if (json_is_array (value) && (json_is_object (items) || json_is_false (items))) {
        size_t i;
        json_t *elem;
        json_array_foreach (value, i, elem) {
            char index [24];
            snprintf (index, sizeof index, "%zu", i);
            size_t mark = s_push (w, index);
            int rc = s_check (w, items, elem, depth + 1);
            s_pop (w, mark);
            if (rc)
                return rc;
        }
    }
    return 0;
}

int
sl_schema_validate (json_t *schema, json_t *value, sl_buf_t *why)
{
    s_walk_t w = { .why = why };
    int rc = s_check (&w, schema, value, 0);
    sl_buf_free (&w.path);
    return rc;
}

int
sl_schema_check (sl_schema_t *self, sl_str_t name, json_t *args, sl_buf_t *why)
{
    json_t *tool = s_tool (self, name);
    if (!tool) {
        sl_buf_puts (why, "the request declares no tool named '");
        sl_buf_append_str (why, name.ptr ? name : SL_STR_LIT (""));
        sl_buf_puts (why, "'");
        return -1;
    }
    if (!args) {
        sl_buf_puts (why, "the arguments are not valid JSON");
        return -1;
    }
    json_t *schema = json_object_get (tool, "schema");
    if (!schema && json_is_true (json_object_get (tool, "truncated"))) {
        //  The schema was over the bound and did not travel: not checked
        //  is not conforming.
        sl_buf_puts (why, "the definition of '");
        sl_buf_append_str (why, name);
        sl_buf_puts (why, "' is over the size bound: its schema cannot be checked");
        return -1;
    }
    return sl_schema_validate (schema, args, why);
}
