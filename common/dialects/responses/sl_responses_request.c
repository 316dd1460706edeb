/*  sl_responses_request.c - Responses requests: parse, forward, render.

    parse: a responses request into the normalized request. instructions
    and system or developer items are instructions; a message, function
    call and reasoning item of the assistant that follow each other are
    one assistant turn; a function_call_output is a tool result whose id
    is its call_id (a call's item id is not what a result names). What
    lives on OpenAI's servers (previous_response_id, conversation, a
    stored prompt) cannot cross to another dialect.

    render: the normalized request as a responses request, stored nowhere
    (store: false). Leading instructions go to instructions, later ones
    as developer messages. Function tools are sent with strict: false
    unless the client asked for strict (the API's default is strict, which
    most schemas do not meet). A thinking part with a signature this
    dialect made goes back as a reasoning item with its encrypted content.
    The API has no stop sequences: a request with some is refused.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/dialects/sl_effort.h"
#include "common/dialects/sl_job.h"
#include "common/dialects/sl_reqparse.h"
#include "common/dialects/sl_reqrender.h"
#include "common/dialects/responses/sl_responses.h"

static const char *const s_matters [] = { "previous_response_id", "conversation", "prompt", NULL };
static const char *const s_informative [] = {
    "store", "include", "truncation", "service_tier", "prompt_cache_key", "safety_identifier", "max_tool_calls",
    "top_logprobs", "stream_options", NULL
};
static const char *const s_mapped [] = {
    "model", "input", "instructions", "stream", "background", "tools", "tool_choice", "parallel_tool_calls",
    "max_output_tokens", "temperature", "top_p", "text", "reasoning", "user", "metadata", NULL
};

static bool
s_is (json_t *value, const char *text)
{
    return json_is_string (value) && strcmp (json_string_value (value), text) == 0;
}

//  One content part of a message item, or of a function call's output.
static void
s_part (sl_req_t *req, sl_message_t *m, sl_part_t *result, json_t *part)
{
    const char *type = json_string_value (json_object_get (part, "type"));
    int kind = !type ? 0
             : strcmp (type, "input_text") == 0 || strcmp (type, "output_text") == 0 || strcmp (type, "text") == 0
             ? SL_PART_TEXT
             : strcmp (type, "input_image") == 0 && json_is_string (json_object_get (part, "image_url")) ? SL_PART_IMAGE
             : strcmp (type, "refusal") == 0 && !result ? SL_PART_REFUSAL : 0;
    sl_part_t *p = result ? sl_req_add_content (result, kind ? kind : SL_PART_OPAQUE)
                          : sl_req_add_part (m, kind ? kind : SL_PART_OPAQUE);
    if (kind == SL_PART_TEXT)
        sl_req_set_text (p, json_object_get (part, "text"));
    else
    if (kind == SL_PART_REFUSAL)
        p->text = sl_req_str (json_object_get (part, "refusal"));
    else
    if (kind == SL_PART_IMAGE) {
        sl_str_t url = sl_req_str (json_object_get (part, "image_url"));
        if (!sl_req_data_url (url, &p->media_type, &p->data))
            p->url = url;
    }
    else
        p->text = type ? sl_req_keep (req, type, strlen (type)) : SL_STR_LIT ("a content part");
}

static void
s_content (sl_req_t *req, sl_message_t *m, sl_part_t *result, json_t *content)
{
    if (json_is_string (content)) {
        sl_part_t *p = result ? sl_req_add_content (result, SL_PART_TEXT) : sl_req_add_part (m, SL_PART_TEXT);
        sl_req_set_text (p, content);
        return;
    }
    size_t i;
    json_t *part;
    json_array_foreach (content, i, part)
        s_part (req, m, result, part);
}

static sl_message_t *
s_results_turn (sl_req_t *req)
{
    if (req->message_count) {
        sl_message_t *last = &req->messages [req->message_count - 1];
        if (last->role == SL_ROLE_USER && last->count && last->parts [last->count - 1].kind == SL_PART_TOOL_RESULT)
            return last;
    }
    return sl_req_add_message (req, SL_ROLE_USER);
}

//  The text of a reasoning item: its reasoning text, else its summary.
static void
s_reasoning (sl_req_t *req, json_t *item)
{
    sl_part_t *p = sl_req_add_part (sl_req_last_message (req, SL_ROLE_ASSISTANT), SL_PART_THINKING);
    sl_buf_t text = { 0 };
    size_t i;
    json_t *part;
    json_array_foreach (json_object_get (item, "content"), i, part)
        if (json_is_string (json_object_get (part, "text")))
            sl_buf_puts (&text, json_string_value (json_object_get (part, "text")));
    if (!text.len)
        json_array_foreach (json_object_get (item, "summary"), i, part)
            if (json_is_string (json_object_get (part, "text"))) {
                if (text.len)
                    sl_buf_puts (&text, "\n\n");
                sl_buf_puts (&text, json_string_value (json_object_get (part, "text")));
            }
    p->text = sl_req_keep (req, text.data ? text.data : "", text.len);
    sl_buf_free (&text);
    p->signature = sl_req_str (json_object_get (item, "encrypted_content"));
}

static void
s_item (sl_req_t *req, json_t *item)
{
    json_t *role = json_object_get (item, "role");
    const char *type = json_string_value (json_object_get (item, "type"));
    if (json_is_string (role) && (!type || strcmp (type, "message") == 0)) {
        const char *r = json_string_value (role);
        sl_message_t *m = strcmp (r, "assistant") == 0 ? sl_req_last_message (req, SL_ROLE_ASSISTANT)
                        : strcmp (r, "system") == 0 || strcmp (r, "developer") == 0
                        ? sl_req_add_message (req, SL_ROLE_SYSTEM) : sl_req_add_message (req, SL_ROLE_USER);
        s_content (req, m, NULL, json_object_get (item, "content"));
        return;
    }
    if (type && strcmp (type, "function_call") == 0) {
        sl_part_t *p = sl_req_add_part (sl_req_last_message (req, SL_ROLE_ASSISTANT), SL_PART_TOOL_CALL);
        p->id = sl_req_str (json_object_get (item, "call_id"));
        p->name = sl_req_str (json_object_get (item, "name"));
        p->arguments = sl_req_str (json_object_get (item, "arguments"));
        return;
    }
    if (type && strcmp (type, "function_call_output") == 0) {
        sl_part_t *r = sl_req_add_part (s_results_turn (req), SL_PART_TOOL_RESULT);
        r->id = sl_req_str (json_object_get (item, "call_id"));
        r->name = sl_req_call_name (req, r->id);
        sl_req_set_source (r, item, "output");
        s_content (req, NULL, r, json_object_get (item, "output"));
        return;
    }
    if (type && strcmp (type, "reasoning") == 0) {
        s_reasoning (req, item);
        return;
    }
    //  item_reference, server tool calls, custom tools, computer use, ...
    size_t n = type ? strlen (type) : 0;
    bool output = n > 7 && strcmp (type + n - 7, "_output") == 0;
    sl_message_t *m = output ? s_results_turn (req) : sl_req_last_message (req, SL_ROLE_ASSISTANT);
    sl_req_add_part (m, SL_PART_OPAQUE)->text = type ? sl_req_keep (req, type, n) : SL_STR_LIT ("an input item");
}

//  A function tool's parameters and strict.
static int
s_tool (json_t *def, sl_tool_t *t, sl_req_t *req, sl_refusal_t *err)
{
    (void) req;
    (void) err;
    json_t *schema = json_object_get (def, "parameters");
    t->schema = json_is_object (schema) ? schema : NULL;
    t->strict = json_is_true (json_object_get (def, "strict"));
    return 0;
}

//  Tools: named ones are the judge's (and can cross); a provider's own
//  (web search, file search, ...) have a type and no name.
static const sl_reqparse_tools_t s_tools = {
    .list = "tools",
    .function_type = "function",
    .unnamed = SL_REQPARSE_UNNAMED_KEEP,
    .read = s_tool,
};

int
sl_responses_parse (json_t *root, const sl_endpoint_t *endpoint, sl_req_t *req, sl_refusal_t *err)
{
    (void) endpoint;
    json_t *input = json_object_get (root, "input");
    if (sl_reqparse_model (root, req, err))
        return -1;
    if (!(json_is_string (input) || (json_is_array (input) && json_array_size (input) > 0)))
        return sl_refuse (err, 400, "invalid_request_error", "'input' is required: a string or a non-empty array");
    if (sl_reqparse_stream (root, req, err))
        return -1;
    if (json_is_true (json_object_get (root, "background")))
        return sl_refuse (err, 400, "invalid_request_error",
                          "'background' responses are not supported: sluice judges the response as it streams");
    if (sl_reqparse_tools (json_object_get (root, "tools"), &s_tools, req, err))
        return -1;
    req->include_usage = true;          //  response.completed always carries usage
    json_t *instructions = json_object_get (root, "instructions");
    if (json_is_string (instructions))
        sl_req_set_text (sl_req_add_part (sl_req_add_message (req, SL_ROLE_SYSTEM), SL_PART_TEXT), instructions);
    if (json_is_string (input))
        sl_req_set_text (sl_req_add_part (sl_req_add_message (req, SL_ROLE_USER), SL_PART_TEXT), input);
    size_t i;
    json_t *item;
    json_array_foreach (input, i, item)
        s_item (req, item);
    //  Tool choice
    json_t *choice = json_object_get (root, "tool_choice");
    if (json_is_string (choice))
        req->tool_choice = s_is (choice, "none") ? SL_CHOICE_NONE : s_is (choice, "required") ? SL_CHOICE_REQUIRED
                         : SL_CHOICE_AUTO;
    else
    if (json_is_object (choice)) {
        if (s_is (json_object_get (choice, "type"), "function") && json_is_string (json_object_get (choice, "name"))) {
            req->tool_choice = SL_CHOICE_TOOL;
            req->tool_choice_name = sl_req_str (json_object_get (choice, "name"));
        }
        else
            sl_req_feature (req, "tool_choice", true);
    }
    json_t *parallel = json_object_get (root, "parallel_tool_calls");
    if (json_is_boolean (parallel))
        req->parallel_tools = json_is_true (parallel);
    req->max_tokens = sl_req_int (json_object_get (root, "max_output_tokens"));
    req->temperature = sl_req_real (json_object_get (root, "temperature"));
    req->top_p = sl_req_real (json_object_get (root, "top_p"));
    json_t *format = json_object_get (json_object_get (root, "text"), "format");
    json_t *ftype = json_object_get (format, "type");
    if (s_is (ftype, "json_object"))
        req->format = SL_FORMAT_JSON;
    else
    if (s_is (ftype, "json_schema")) {
        req->format = SL_FORMAT_SCHEMA;
        req->format_schema = json_object_get (format, "schema");
        req->format_name = sl_req_str (json_object_get (format, "name"));
        req->format_strict = json_is_true (json_object_get (format, "strict"));
    }
    else
    if (s_is (ftype, "text"))
        req->format = SL_FORMAT_TEXT;
    req->effort = sl_req_str (json_object_get (json_object_get (root, "reasoning"), "effort"));
    req->user = sl_req_str (json_object_get (root, "user"));
    req->metadata = json_object_get (root, "metadata");
    sl_reqparse_fields (req, root, s_mapped, s_matters, s_informative);
    return 0;
}

int
sl_responses_forward (sl_str_t body, const sl_req_t *req, sl_buf_t *out)
{
    (void) req;
    static const sl_patch_t stream = { "stream", "true" };
    return sl_job_patch (body, &stream, 1, out);
}

//  --------------------------------------------------------------------------
//  Rendering another dialect's request

static json_t *
s_image (const sl_part_t *p)
{
    sl_buf_t url = { 0 };
    sl_req_put_image_url (p, &url);
    json_t *part = json_pack ("{s:s,s:s%}", "type", "input_image", "image_url", url.data ? url.data : "", url.len);
    sl_buf_free (&url);
    return part;
}

static int
s_result (const sl_part_t *p, sl_xlate_t *x, json_t *input)
{
    json_t *output;
    if (sl_req_has (p->content, p->content_count, SL_PART_IMAGE)) {
        output = json_array ();
        if (p->is_error)
            json_array_append_new (output, json_pack ("{s:s,s:s}", "type", "input_text", "text", "Error:"));
        for (size_t i = 0; i < p->content_count; i++) {
            const sl_part_t *c = &p->content [i];
            if (c->kind == SL_PART_TEXT)
                json_array_append_new (output, json_pack ("{s:s,s:o}", "type", "input_text", "text",
                                                          sl_reqrender_str (c->text)));
            else
            if (c->kind == SL_PART_IMAGE)
                json_array_append_new (output, s_image (c));
        }
    }
    else {
        sl_buf_t text = { 0 };
        sl_req_result_text (p, true, &text);
        output = json_stringn (text.data ? text.data : "", text.len);
        sl_buf_free (&text);
    }
    if (sl_req_has (p->content, p->content_count, SL_PART_OPAQUE)) {
        json_decref (output);
        return sl_xlate_refuse (x, "a tool result's content", NULL);
    }
    json_array_append_new (input, json_pack ("{s:s,s:o,s:o}", "type", "function_call_output", "call_id",
                                             sl_reqrender_str (p->id), "output", output));
    return 0;
}

static int
s_input (const sl_req_t *req, sl_xlate_t *x, json_t *root)
{
    json_t *input = json_array ();
    json_object_set_new (root, "input", input);
    sl_buf_t instructions = { 0 };
    bool leading = true;
    int rc = 0;
    for (size_t i = 0; i < req->message_count && rc == 0; i++) {
        const sl_message_t *m = &req->messages [i];
        for (size_t j = 0; j < m->count; j++)
            if (m->parts [j].kind == SL_PART_OPAQUE)
                rc = sl_reqrender_refuse_part (x, &m->parts [j], "Responses");
        if (rc)
            break;
        if (m->role == SL_ROLE_SYSTEM) {
            sl_buf_t text = { 0 };
            sl_req_join (m->parts, m->count, SL_PART_TEXT, "\n", &text);
            if (leading) {
                if (instructions.len)
                    sl_buf_puts (&instructions, "\n\n");
                sl_buf_append (&instructions, text.data, text.len);
            }
            else
                json_array_append_new (input, json_pack ("{s:s,s:s%}", "role", "developer", "content",
                                                         text.data ? text.data : "", text.len));
            sl_buf_free (&text);
            continue;
        }
        leading = false;
        if (m->role == SL_ROLE_USER) {
            json_t *content = json_array ();
            for (size_t j = 0; j < m->count && rc == 0; j++) {
                const sl_part_t *p = &m->parts [j];
                if (p->kind == SL_PART_TOOL_RESULT)
                    rc = s_result (p, x, input);
                else
                if (p->kind == SL_PART_TEXT)
                    json_array_append_new (content, json_pack ("{s:s,s:o}", "type", "input_text", "text",
                                                               sl_reqrender_str (p->text)));
                else
                if (p->kind == SL_PART_IMAGE)
                    json_array_append_new (content, s_image (p));
            }
            if (json_array_size (content))
                json_array_append_new (input, json_pack ("{s:s,s:o}", "role", "user", "content", content));
            else
                json_decref (content);
            continue;
        }
        //  The assistant: its message (text, refusals), then its calls.
        json_t *content = json_array ();
        for (size_t j = 0; j < m->count; j++) {
            const sl_part_t *p = &m->parts [j];
            if (p->kind == SL_PART_THINKING || p->kind == SL_PART_REDACTED) {
                sl_str_t sig = sl_sig_for ("responses", p->kind == SL_PART_THINKING ? p->signature : p->text);
                if (!sig.ptr) {
                    sl_xlate_drop (x, "thinking another provider signed");
                    continue;
                }
                json_t *summary = json_array ();
                if (p->kind == SL_PART_THINKING && p->text.len)
                    json_array_append_new (summary, json_pack ("{s:s,s:o}", "type", "summary_text", "text",
                                                               sl_reqrender_str (p->text)));
                json_array_append_new (input, json_pack ("{s:s,s:o,s:o}", "type", "reasoning", "summary", summary,
                                                         "encrypted_content", sl_reqrender_str (sig)));
            }
            else
            if (p->kind == SL_PART_TEXT && p->text.len)
                json_array_append_new (content, json_pack ("{s:s,s:o}", "type", "output_text", "text",
                                                           sl_reqrender_str (p->text)));
            else
            if (p->kind == SL_PART_REFUSAL)
                json_array_append_new (content, json_pack ("{s:s,s:o}", "type", "refusal", "refusal",
                                                           sl_reqrender_str (p->text)));
        }
        if (json_array_size (content))
            json_array_append_new (input, json_pack ("{s:s,s:s,s:o}", "type", "message", "role", "assistant",
                                                     "content", content));
        else
            json_decref (content);
        for (size_t j = 0; j < m->count; j++) {
            const sl_part_t *p = &m->parts [j];
            if (p->kind == SL_PART_TOOL_CALL)
                json_array_append_new (input, json_pack ("{s:s,s:o,s:o,s:o}", "type", "function_call", "call_id",
                                                         sl_reqrender_str (p->id), "name", sl_reqrender_str (p->name),
                                                         "arguments", sl_reqrender_args_text (p)));
        }
    }
    if (instructions.len)
        json_object_set_new (root, "instructions", json_stringn (instructions.data, instructions.len));
    sl_buf_free (&instructions);
    return rc;
}

//  Function tools: {"type":"function", name, description, parameters (an
//  empty object schema when none), strict: false unless the client asked
//  for strict (the API's default is strict, which most schemas do not
//  meet)}.
static const sl_reqrender_tools_t s_render_tools = {
    .type = "function",
    .schema = "parameters",
    .no_schema = "{\"type\":\"object\",\"properties\":{}}",
    .strict = SL_REQRENDER_STRICT_ALWAYS,
    .own = "its type is the client's provider's",
};

int
sl_responses_render_request (const sl_req_t *req, sl_xlate_t *x, sl_buf_t *out)
{
    json_t *root = json_object ();
    json_object_set_new (root, "model", sl_reqrender_str (req->model));
    int rc = s_input (req, x, root);
    if (rc == 0 && req->stop_count)
        rc = sl_xlate_refuse (x, "stop sequences", "Responses has none");
    if (rc == 0 && req->tool_count) {
        json_t *tools = json_array ();
        json_object_set_new (root, "tools", tools);
        rc = sl_reqrender_tools (req, &s_render_tools, x, tools);
    }
    switch (req->tool_choice) {
        case SL_CHOICE_AUTO:     json_object_set_new (root, "tool_choice", json_string ("auto")); break;
        case SL_CHOICE_NONE:     json_object_set_new (root, "tool_choice", json_string ("none")); break;
        case SL_CHOICE_REQUIRED: json_object_set_new (root, "tool_choice", json_string ("required")); break;
        case SL_CHOICE_TOOL:
            json_object_set_new (root, "tool_choice", json_pack ("{s:s,s:o}", "type", "function", "name",
                                                                 sl_reqrender_str (req->tool_choice_name)));
            break;
        default: break;
    }
    if (req->parallel_tools >= 0 && req->tool_count)
        json_object_set_new (root, "parallel_tool_calls", json_boolean (req->parallel_tools));
    sl_reqrender_int (root, "max_output_tokens", req->max_tokens);
    sl_reqrender_real (root, "temperature", req->temperature);
    sl_reqrender_real (root, "top_p", req->top_p);
    if (req->top_k >= 0)
        sl_xlate_drop (x, "top_k");
    if (req->seed >= 0)
        sl_xlate_drop (x, "seed");
    if (!isnan (req->presence_penalty) || !isnan (req->frequency_penalty))
        sl_xlate_drop (x, "penalties");
    if (req->format == SL_FORMAT_JSON)
        json_object_set_new (root, "text", json_pack ("{s:{s:s}}", "format", "type", "json_object"));
    else
    if (req->format == SL_FORMAT_SCHEMA) {
        json_t *f = sl_reqrender_schema_format (req, "json_schema");
        json_object_set_new (f, "strict", json_boolean (req->format_strict));
        json_object_set_new (root, "text", json_pack ("{s:o}", "format", f));
    }
    const char *effort = sl_effort_word (req, SL_EFFORT_NONE, SL_EFFORT_XHIGH, x);
    if (effort)
        json_object_set_new (root, "reasoning", json_pack ("{s:s}", "effort", effort));
    if (req->user.ptr)
        json_object_set_new (root, "user", sl_reqrender_str (req->user));
    if (json_is_object (req->metadata))
        json_object_set_new (root, "metadata", json_incref (req->metadata));
    json_object_set_new (root, "store", json_false ());
    json_object_set_new (root, "stream", json_true ());
    return sl_reqrender_end (root, rc, out);
}
