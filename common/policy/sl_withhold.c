/*  sl_withhold.c - removing a tool's definition from a request (see
    sl_withhold.h). Shapes, not dialects: every dialect's places are
    looked at, and only the client's own are there.
*/
#include "common/policy/sl_withhold.h"

#include <string.h>

static bool
s_is (json_t *value, sl_str_t name)
{
    const char *s = json_string_value (value);
    return s && json_string_length (value) == name.len && memcmp (s, name.ptr, name.len) == 0;
}

//  Does an entry (a tool, a tool choice, an allowed tool) name the tool?
static bool
s_names (json_t *entry, sl_str_t name)
{
    return s_is (json_object_get (entry, "name"), name)
        || s_is (json_object_get (json_object_get (entry, "function"), "name"), name);
}

//  Remove from array every entry naming the tool (kept alive in req);
//  true when one was.
static bool
s_remove_from (sl_req_t *req, json_t *array, sl_str_t name, bool strings)
{
    bool removed = false;
    for (size_t i = json_array_size (array); i-- > 0;) {
        json_t *entry = json_array_get (array, i);
        if (strings ? s_is (entry, name) : s_names (entry, name)) {
            sl_req_own (req, json_incref (entry));
            json_array_remove (array, i);
            removed = true;
        }
    }
    return removed;
}

//  Delete a member, keeping its value alive in req.
static void
s_delete (sl_req_t *req, json_t *object, const char *key)
{
    json_t *value = json_object_get (object, key);
    if (!value)
        return;
    sl_req_own (req, json_incref (value));
    json_object_del (object, key);
}

//  Gemini: the declarations of every tools entry; an entry left with no
//  declarations and nothing else goes.
static void
s_remove_declarations (sl_req_t *req, json_t *tools, sl_str_t name)
{
    static const char *keys [] = { "functionDeclarations", "function_declarations" };
    for (size_t i = json_array_size (tools); i-- > 0;) {
        json_t *entry = json_array_get (tools, i);
        for (size_t k = 0; k < sizeof keys / sizeof keys [0]; k++) {
            json_t *decls = json_object_get (entry, keys [k]);
            if (!json_is_array (decls) || !s_remove_from (req, decls, name, false) || json_array_size (decls))
                continue;
            s_delete (req, entry, keys [k]);
            if (json_object_size (entry) == 0) {
                sl_req_own (req, json_incref (entry));
                json_array_remove (tools, i);
            }
        }
    }
}

//  The tool choice of the body, where it names the tool.
static void
s_fix_choice (sl_req_t *req, json_t *root, sl_str_t name)
{
    json_t *choice = json_object_get (root, "tool_choice");
    if (json_is_object (choice)) {
        if (s_names (choice, name))
            s_delete (req, root, "tool_choice");
        else {
            //  allowed_tools: Responses {"tools": [...]}, Chat {"allowed_tools": {"tools": [...]}}
            json_t *inner = json_object_get (choice, "allowed_tools");
            json_t *list = json_object_get (json_is_object (inner) ? inner : choice, "tools");
            if (json_is_array (list) && s_remove_from (req, list, name, false) && !json_array_size (list))
                s_delete (req, root, "tool_choice");
        }
    }
    static const char *configs [] = { "toolConfig", "tool_config" };
    static const char *calling [] = { "functionCallingConfig", "function_calling_config" };
    static const char *allowed [] = { "allowedFunctionNames", "allowed_function_names" };
    for (size_t c = 0; c < 2; c++) {
        json_t *config = json_object_get (root, configs [c]);
        for (size_t f = 0; f < 2 && json_is_object (config); f++) {
            json_t *fc = json_object_get (config, calling [f]);
            for (size_t a = 0; a < 2 && json_is_object (fc); a++) {
                json_t *names = json_object_get (fc, allowed [a]);
                if (json_is_array (names) && s_remove_from (req, names, name, true) && !json_array_size (names))
                    s_delete (req, config, calling [f]);
            }
        }
    }
}

//  No tool left: nothing may speak of tools any more.
static void
s_no_tools (sl_req_t *req, json_t *root)
{
    static const char *keys [] = { "tools", "tool_choice", "parallel_tool_calls", "toolConfig", "tool_config" };
    for (size_t k = 0; k < sizeof keys / sizeof keys [0]; k++)
        s_delete (req, root, keys [k]);
}

//  The text a reference to the withheld tool becomes: a tool result
//  keeps a block, and nothing names a tool the request no longer defines
//  (Anthropic refuses a tool_reference to an undefined tool).
static void
s_reference_text (sl_str_t name, sl_buf_t *out)
{
    sl_buf_printf (out, "[the tool %.*s was withheld by sluice: its definition is not available]", (int) name.len,
                   name.ptr);
}

//  The normalized request: a reference part becomes that text.
static void
s_unreference_parts (sl_req_t *req, sl_str_t name, const char *text)
{
    for (size_t i = 0; i < req->message_count; i++)
        for (size_t j = 0; j < req->messages [i].count; j++) {
            sl_part_t *p = &req->messages [i].parts [j];
            for (size_t k = 0; p->kind == SL_PART_TOOL_RESULT && k < p->content_count; k++) {
                sl_part_t *c = &p->content [k];
                if (c->kind == SL_PART_OPAQUE && sl_str_eq (c->text, SL_REQ_TOOL_REFERENCE)
                &&  sl_str_eq_str (c->name, name)) {
                    c->kind = SL_PART_TEXT;
                    c->text = sl_req_keep (req, text, strlen (text));
                    c->name = SL_STR_NULL;
                }
            }
        }
}

//  The client's body: {"type":"tool_reference","tool_name":name} blocks in
//  the content of any tool_result of messages become text blocks.
static void
s_unreference_body (sl_req_t *req, json_t *root, sl_str_t name, const char *text)
{
    size_t i, j, k;
    json_t *message, *block, *inner;
    json_array_foreach (json_object_get (root, "messages"), i, message)
        json_array_foreach (json_object_get (message, "content"), j, block) {
            json_t *content = json_object_get (block, "content");
            if (!sl_str_eq (sl_req_str (json_object_get (block, "type")), "tool_result") || !json_is_array (content))
                continue;
            json_array_foreach (content, k, inner)
                if (sl_str_eq (sl_req_str (json_object_get (inner, "type")), SL_REQ_TOOL_REFERENCE)
                &&  s_is (json_object_get (inner, "tool_name"), name)) {
                    sl_req_own (req, json_incref (inner));
                    json_array_set_new (content, k, json_pack ("{s:s,s:s}", "type", "text", "text", text));
                }
        }
}

int
sl_withhold_tool (sl_req_t *req, sl_str_t name)
{
    size_t at = req->tool_count;
    for (size_t i = 0; i < req->tool_count && at == req->tool_count; i++)
        if (req->tools [i].name.ptr && req->tools [i].name.len == name.len
        &&  memcmp (req->tools [i].name.ptr, name.ptr, name.len) == 0)
            at = i;
    if (at == req->tool_count)
        return -1;
    //  The model: the tool goes, and a choice of it.
    memmove (req->tools + at, req->tools + at + 1, (req->tool_count - at - 1) * sizeof (sl_tool_t));
    req->tool_count--;
    if (req->tool_choice == SL_CHOICE_TOOL && req->tool_choice_name.len == name.len
    &&  memcmp (req->tool_choice_name.ptr, name.ptr, name.len) == 0) {
        req->tool_choice = SL_CHOICE_UNSET;
        req->tool_choice_name = SL_STR_NULL;
    }
    if (req->tool_count == 0 && req->tool_choice != SL_CHOICE_NONE) {
        req->tool_choice = SL_CHOICE_UNSET;
        req->tool_choice_name = SL_STR_NULL;
    }
    //  References to it (tool search) become a text saying it went.
    sl_buf_t text = { 0 };
    s_reference_text (name, &text);
    s_unreference_parts (req, name, sl_buf_cstr (&text));
    //  The body the client sent, for an upstream of its own dialect.
    json_t *root = req->root;
    s_unreference_body (req, root, name, sl_buf_cstr (&text));
    sl_buf_free (&text);
    json_t *tools = json_object_get (root, "tools");
    if (json_is_array (tools)) {
        s_remove_from (req, tools, name, false);
        s_remove_declarations (req, tools, name);
        s_fix_choice (req, root, name);
        if (json_array_size (tools) == 0)
            s_no_tools (req, root);
    }
    req->edited = true;
    return 0;
}
