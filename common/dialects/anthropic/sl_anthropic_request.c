/*  sl_anthropic_request.c - Messages requests: parse, forward, render.

    parse: a messages request into the normalized request. The system
    prompt (a string or text blocks) is the instructions, and so is a
    system message among the turns (a mid-conversation system message),
    at its place; content blocks are parts (text, image, tool_use,
    tool_result, thinking, redacted thinking); documents, search results
    and server tool blocks are this dialect's alone. thinking (a budget,
    adaptive, off) and output_config's effort and JSON schema are the
    reasoning and the response format; cache_control marks and
    context_management are informative.

    render: the normalized request as a messages request. Instructions go
    to system, later ones too (a system message among the turns is one
    model's alone: every model takes the top-level field); turns of one
    role are joined (the API wants user and assistant to alternate); a
    user turn's tool results come first in it, as the API wants them
    right after the calls. Tool ids are kept, with characters the API
    does not take ([^A-Za-z0-9_-]) replaced by '_' the same way in a call
    and its result. Thinking goes back only with a signature this dialect
    made (sl_sig_for). max_tokens is required: the request's, or
    SL_XLATE_MAX_TOKENS. A reasoning effort is a thinking budget
    (sl_effort.h), thinking left to the model is adaptive thinking, a JSON
    schema is output_config.format; JSON output without a schema cannot
    be asked for and is refused.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/dialects/sl_effort.h"
#include "common/dialects/sl_job.h"
#include "common/dialects/sl_reqparse.h"
#include "common/dialects/sl_reqrender.h"
#include "common/dialects/anthropic/sl_anthropic.h"

#define S_TEMPERATURE_MAX 1.0           //  the API's range is [0, 1]
#define S_BUDGET_MIN 1024               //  the smallest thinking budget the API takes

static const char *const s_matters [] = { "mcp_servers", "container", NULL };
static const char *const s_informative [] = { "service_tier", "context_management", NULL };
static const char *const s_mapped [] = {
    "model", "messages", "max_tokens", "stream", "tools", "system", "tool_choice", "temperature", "top_p",
    "top_k", "stop_sequences", "metadata", "thinking", "output_config", NULL
};
static const char *const s_output_mapped [] = { "effort", "format", NULL };

static void
s_image (sl_part_t *p, json_t *source)
{
    const char *type = json_string_value (json_object_get (source, "type"));
    if (type && strcmp (type, "url") == 0)
        p->url = sl_req_str (json_object_get (source, "url"));
    else {
        p->media_type = sl_req_str (json_object_get (source, "media_type"));
        p->data = sl_req_str (json_object_get (source, "data"));
    }
}

static void s_blocks (sl_req_t *req, sl_message_t *m, sl_part_t *result, json_t *content);

//  One content block into m (or, inside a tool result, into its content).
static void
s_block (sl_req_t *req, sl_message_t *m, sl_part_t *result, json_t *block)
{
    const char *type = json_string_value (json_object_get (block, "type"));
    if (json_object_get (block, "cache_control"))
        sl_req_feature (req, "cache_control", false);
    int kind = !type ? 0
             : strcmp (type, "text") == 0 ? SL_PART_TEXT
             : strcmp (type, "image") == 0 ? SL_PART_IMAGE
             : result ? 0
             : strcmp (type, "tool_use") == 0 ? SL_PART_TOOL_CALL
             : strcmp (type, "tool_result") == 0 ? SL_PART_TOOL_RESULT
             : strcmp (type, "thinking") == 0 ? SL_PART_THINKING
             : strcmp (type, "redacted_thinking") == 0 ? SL_PART_REDACTED : 0;
    sl_part_t *p = result ? sl_req_add_content (result, kind ? kind : SL_PART_OPAQUE)
                          : sl_req_add_part (m, kind ? kind : SL_PART_OPAQUE);
    switch (kind) {
        case SL_PART_TEXT:
            sl_req_set_text (p, json_object_get (block, "text"));
            break;
        case SL_PART_IMAGE:
            s_image (p, json_object_get (block, "source"));
            break;
        case SL_PART_TOOL_CALL: {
            p->id = sl_req_str (json_object_get (block, "id"));
            p->name = sl_req_str (json_object_get (block, "name"));
            json_t *input = json_object_get (block, "input");
            p->arguments = sl_req_keep_json (req, input);
            break;
        }
        case SL_PART_TOOL_RESULT: {
            p->id = sl_req_str (json_object_get (block, "tool_use_id"));
            p->name = sl_req_call_name (req, p->id);
            p->is_error = json_is_true (json_object_get (block, "is_error"));
            json_t *content = json_object_get (block, "content");
            sl_req_set_source (p, block, "content");
            if (json_is_string (content))
                sl_req_set_text (sl_req_add_content (p, SL_PART_TEXT), content);
            else
                s_blocks (req, NULL, p, content);
            break;
        }
        case SL_PART_THINKING:
            p->text = sl_req_str (json_object_get (block, "thinking"));
            p->signature = sl_req_str (json_object_get (block, "signature"));
            break;
        case SL_PART_REDACTED:
            p->text = sl_req_str (json_object_get (block, "data"));
            break;
        default:
            //  document, search_result, server_tool_use, *_tool_result, ...
            p->text = type ? sl_req_keep (req, type, strlen (type)) : SL_STR_LIT ("a content block");
            //  Tool search: a result that loads a deferred tool names it
            //  (its definition is among the request's tools).
            if (result && type && strcmp (type, SL_REQ_TOOL_REFERENCE) == 0)
                p->name = sl_req_str (json_object_get (block, "tool_name"));
            break;
    }
}

static void
s_blocks (sl_req_t *req, sl_message_t *m, sl_part_t *result, json_t *content)
{
    size_t i;
    json_t *block;
    json_array_foreach (content, i, block)
        s_block (req, m, result, block);
}

//  A tool's input_schema; cache_control marks are informative.
static int
s_tool (json_t *def, sl_tool_t *t, sl_req_t *req, sl_refusal_t *err)
{
    (void) err;
    json_t *schema = json_object_get (def, "input_schema");
    t->schema = json_is_object (schema) ? schema : NULL;
    if (json_object_get (def, "cache_control"))
        sl_req_feature (req, "cache_control", false);
    return 0;
}

//  Tools: an array of objects, each with its name and input_schema; a
//  provider's own tool has a type other than "custom". Entries without a
//  name are not the judge's (nor any other dialect's).
static const sl_reqparse_tools_t s_tools = {
    .list = "tools",
    .function_type = "custom",
    .unnamed = SL_REQPARSE_UNNAMED_SKIP,
    .read = s_tool,
};

int
sl_anthropic_parse (json_t *root, const sl_endpoint_t *endpoint, sl_req_t *req, sl_refusal_t *err)
{
    (void) endpoint;
    json_t *messages = json_object_get (root, "messages");
    json_t *max_tokens = json_object_get (root, "max_tokens");
    if (sl_reqparse_model (root, req, err))
        return -1;
    if (!json_is_array (messages) || json_array_size (messages) == 0)
        return sl_refuse (err, 400, "invalid_request_error", "messages: a non-empty array is required");
    if (!json_is_integer (max_tokens) || json_integer_value (max_tokens) < 1)
        return sl_refuse (err, 400, "invalid_request_error", "max_tokens: a positive integer is required");
    if (sl_reqparse_stream (root, req, err) || sl_reqparse_tools (json_object_get (root, "tools"), &s_tools, req, err))
        return -1;
    req->include_usage = true;          //  Anthropic always reports usage
    req->max_tokens = json_integer_value (max_tokens);
    //  Instructions
    json_t *system = json_object_get (root, "system");
    if (json_is_string (system))
        sl_req_set_text (sl_req_add_part (sl_req_add_message (req, SL_ROLE_SYSTEM), SL_PART_TEXT), system);
    else
    if (json_is_array (system))
        s_blocks (req, sl_req_add_message (req, SL_ROLE_SYSTEM), NULL, system);
    size_t i;
    json_t *msg;
    json_array_foreach (messages, i, msg) {
        //  A system message among the turns (mid-conversation system
        //  messages) is instructions, where the client put them.
        const char *role = json_string_value (json_object_get (msg, "role"));
        int kind = !role ? SL_ROLE_USER
                 : strcmp (role, "assistant") == 0 ? SL_ROLE_ASSISTANT
                 : strcmp (role, "system") == 0 ? SL_ROLE_SYSTEM : SL_ROLE_USER;
        sl_message_t *m = sl_req_add_message (req, kind);
        json_t *content = json_object_get (msg, "content");
        if (json_is_string (content))
            sl_req_set_text (sl_req_add_part (m, SL_PART_TEXT), content);
        else
            s_blocks (req, m, NULL, content);
    }
    //  Tool choice
    json_t *choice = json_object_get (root, "tool_choice");
    const char *ctype = json_string_value (json_object_get (choice, "type"));
    if (ctype) {
        req->tool_choice = strcmp (ctype, "any") == 0 ? SL_CHOICE_REQUIRED : strcmp (ctype, "none") == 0
                         ? SL_CHOICE_NONE : strcmp (ctype, "tool") == 0 ? SL_CHOICE_TOOL : SL_CHOICE_AUTO;
        req->tool_choice_name = sl_req_str (json_object_get (choice, "name"));
        if (json_is_true (json_object_get (choice, "disable_parallel_tool_use")))
            req->parallel_tools = 0;
    }
    //  Sampling
    req->temperature = sl_req_real (json_object_get (root, "temperature"));
    req->top_p = sl_req_real (json_object_get (root, "top_p"));
    req->top_k = sl_req_int (json_object_get (root, "top_k"));
    sl_reqparse_stops (req, json_object_get (root, "stop_sequences"));
    //  Thinking
    json_t *thinking = json_object_get (root, "thinking");
    const char *ttype = json_string_value (json_object_get (thinking, "type"));
    if (ttype && strcmp (ttype, "enabled") == 0)
        req->budget = sl_req_int (json_object_get (thinking, "budget_tokens"));
    else
    if (ttype && strcmp (ttype, "adaptive") == 0)
        req->thinking_adaptive = true;
    else
    if (ttype && strcmp (ttype, "disabled") == 0)
        req->thinking_off = true;
    //  Output: how hard to think, and structured output (a JSON schema)
    json_t *output = json_object_get (root, "output_config");
    req->effort = sl_req_str (json_object_get (output, "effort"));
    json_t *format = json_object_get (output, "format");
    const char *ftype = json_string_value (json_object_get (format, "type"));
    if (ftype && strcmp (ftype, "json_schema") == 0) {
        req->format = SL_FORMAT_SCHEMA;
        req->format_schema = json_is_object (json_object_get (format, "schema")) ? json_object_get (format, "schema")
                                                                               : NULL;
        req->format_strict = true;      //  what Messages' structured output is
    }
    else
    if (format && !json_is_null (format))
        sl_req_feature (req, "output_config.format", true);
    //  Who asks
    json_t *metadata = json_object_get (root, "metadata");
    req->user = sl_req_str (json_object_get (metadata, "user_id"));
    sl_reqparse_fields (req, root, s_mapped, s_matters, s_informative);
    sl_reqparse_fields (req, output, s_output_mapped, NULL, NULL);
    return 0;
}

int
sl_anthropic_forward (sl_str_t body, const sl_req_t *req, sl_buf_t *out)
{
    (void) req;
    static const sl_patch_t stream = { "stream", "true" };
    return sl_job_patch (body, &stream, 1, out);
}

//  --------------------------------------------------------------------------
//  Rendering another dialect's request

//  A tool id the API takes: [A-Za-z0-9_-] kept, anything else '_'.
static json_t *
s_id (sl_str_t id)
{
    sl_buf_t b = { 0 };
    for (size_t i = 0; i < id.len; i++) {
        char c = id.ptr [i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        sl_buf_putc (&b, ok ? c : '_');
    }
    if (!b.len)
        sl_buf_puts (&b, "toolu_none");
    json_t *s = json_stringn (b.data, b.len);
    sl_buf_free (&b);
    return s;
}

static json_t *
s_image_block (const sl_part_t *p)
{
    if (p->url.ptr)
        return json_pack ("{s:s,s:{s:s,s:o}}", "type", "image", "source", "type", "url", "url",
                          sl_reqrender_str (p->url));
    return json_pack ("{s:s,s:{s:s,s:o,s:o}}", "type", "image", "source", "type", "base64",
                      "media_type", sl_reqrender_str (p->media_type), "data", sl_reqrender_str (p->data));
}

//  The block of one part, or NULL when it goes nowhere. -1 refused.
static int
s_part_block (const sl_req_t *req, const sl_part_t *p, sl_xlate_t *x, json_t **out)
{
    (void) req;
    switch (p->kind) {
        case SL_PART_TEXT:
        case SL_PART_REFUSAL:
            if (p->text.len)            //  the API takes no empty text block
                *out = json_pack ("{s:s,s:o}", "type", "text", "text", sl_reqrender_str (p->text));
            return 0;
        case SL_PART_IMAGE:
            *out = s_image_block (p);
            return 0;
        case SL_PART_TOOL_CALL:
            *out = json_pack ("{s:s,s:o,s:o,s:o}", "type", "tool_use", "id", s_id (p->id), "name",
                              sl_reqrender_str (p->name), "input", sl_reqrender_args (p, x));
            return 0;
        case SL_PART_TOOL_RESULT: {
            json_t *content = json_array ();
            for (size_t i = 0; i < p->content_count; i++) {
                const sl_part_t *c = &p->content [i];
                if (c->kind == SL_PART_TEXT)
                    json_array_append_new (content, json_pack ("{s:s,s:o}", "type", "text", "text",
                                                               sl_reqrender_str (c->text)));
                else
                if (c->kind == SL_PART_IMAGE)
                    json_array_append_new (content, s_image_block (c));
                else
                if (c->kind == SL_PART_OPAQUE && c->name.ptr && sl_str_eq (c->text, SL_REQ_TOOL_REFERENCE))
                    json_array_append_new (content, json_pack ("{s:s,s:o}", "type", SL_REQ_TOOL_REFERENCE,
                                                               "tool_name", sl_reqrender_str (c->name)));
                else {
                    json_decref (content);
                    return sl_xlate_refuse (x, "a tool result's content", NULL);
                }
            }
            *out = json_pack ("{s:s,s:o,s:o}", "type", "tool_result", "tool_use_id", s_id (p->id), "content", content);
            if (p->is_error)
                json_object_set_new (*out, "is_error", json_true ());
            return 0;
        }
        case SL_PART_THINKING: {
            sl_str_t sig = sl_sig_for ("anthropic", p->signature);
            if (sig.ptr)
                *out = json_pack ("{s:s,s:o,s:o}", "type", "thinking", "thinking", sl_reqrender_str (p->text),
                                  "signature", sl_reqrender_str (sig));
            else
                sl_xlate_drop (x, "thinking another provider signed");
            return 0;
        }
        case SL_PART_REDACTED: {
            sl_str_t data = sl_sig_for ("anthropic", p->text);
            if (data.ptr)
                *out = json_pack ("{s:s,s:o}", "type", "redacted_thinking", "data", sl_reqrender_str (data));
            else
                sl_xlate_drop (x, "thinking another provider signed");
            return 0;
        }
        default:
            return sl_reqrender_refuse_part (x, p, "Messages");
    }
}

//  A tool_result block comes first in a user turn.
static bool
s_is_result (json_t *block)
{
    const char *type = json_string_value (json_object_get (block, "type"));
    return type && strcmp (type, "tool_result") == 0;
}

static int
s_messages (const sl_req_t *req, sl_xlate_t *x, json_t *root)
{
    json_t *messages = json_array ();
    json_object_set_new (root, "messages", messages);
    sl_buf_t system = { 0 };
    for (size_t i = 0; i < req->message_count; i++) {
        const sl_message_t *m = &req->messages [i];
        if (m->role == SL_ROLE_SYSTEM) {
            for (size_t j = 0; j < m->count; j++)
                if (m->parts [j].kind != SL_PART_TEXT) {
                    sl_buf_free (&system);
                    return sl_xlate_refuse (x, "instructions that are not text", NULL);
                }
            if (system.len)
                sl_buf_puts (&system, "\n\n");
            sl_req_join (m->parts, m->count, SL_PART_TEXT, "\n", &system);
            continue;
        }
        json_t *blocks;
        if (sl_reqrender_blocks (req, m, s_part_block, x, &blocks)) {
            sl_buf_free (&system);
            return -1;
        }
        if (json_array_size (blocks))
            sl_reqrender_turn (messages, m->role == SL_ROLE_ASSISTANT ? "assistant" : "user", "content", blocks,
                               s_is_result);
        else
            json_decref (blocks);
    }
    if (system.len)
        json_object_set_new (root, "system", json_stringn (system.data, system.len));
    sl_buf_free (&system);
    return 0;
}

//  The thinking budget to ask for: the client's, or its effort's
//  (sl_effort.h); -1 for none.
static int64_t
s_budget (const sl_req_t *req, sl_xlate_t *x)
{
    if (req->thinking_off)
        return -1;
    if (req->budget >= 0)
        return req->budget;
    int effort = sl_effort_of (req, x);
    return effort == SL_EFFORT_NONE ? -1 : sl_effort_budget (effort);
}

//  Tools: name, description, input_schema (an object schema when none).
static const sl_reqrender_tools_t s_render_tools = {
    .schema = "input_schema",
    .no_schema = "{\"type\":\"object\"}",
    .own = "its type is the client's provider's",
};

int
sl_anthropic_render_request (const sl_req_t *req, sl_xlate_t *x, sl_buf_t *out)
{
    json_t *root = json_object ();
    json_object_set_new (root, "model", sl_reqrender_str (req->model));
    int rc = s_messages (req, x, root);
    if (rc == 0 && req->format == SL_FORMAT_JSON)
        rc = sl_xlate_refuse (x, "JSON output without a schema", "Messages asks for a JSON schema");
    if (rc == 0 && req->format == SL_FORMAT_SCHEMA)
        json_object_set_new (root, "output_config", json_pack ("{s:{s:s,s:O}}", "format", "type", "json_schema",
                                                               "schema", req->format_schema ? req->format_schema
                                                                                            : json_object ()));
    if (rc == 0 && req->tool_count) {
        json_t *tools = json_array ();
        json_object_set_new (root, "tools", tools);
        rc = sl_reqrender_tools (req, &s_render_tools, x, tools);
    }
    json_t *choice = NULL;
    switch (req->tool_choice) {
        case SL_CHOICE_AUTO:     choice = json_pack ("{s:s}", "type", "auto"); break;
        case SL_CHOICE_NONE:     choice = json_pack ("{s:s}", "type", "none"); break;
        case SL_CHOICE_REQUIRED: choice = json_pack ("{s:s}", "type", "any"); break;
        case SL_CHOICE_TOOL:
            choice = json_pack ("{s:s,s:o}", "type", "tool", "name", sl_reqrender_str (req->tool_choice_name));
            break;
        default: break;
    }
    if (req->parallel_tools == 0 && req->tool_count) {
        if (!choice)
            choice = json_pack ("{s:s}", "type", "auto");
        json_object_set_new (choice, "disable_parallel_tool_use", json_true ());
    }
    if (choice && req->tool_count)
        json_object_set_new (root, "tool_choice", choice);
    else
        json_decref (choice);
    //  Thinking, and what it rules out
    int64_t max = req->max_tokens > 0 ? req->max_tokens : SL_XLATE_MAX_TOKENS;
    int64_t budget = s_budget (req, x);
    if (budget >= 0 && budget < S_BUDGET_MIN)
        budget = S_BUDGET_MIN;
    if (budget >= 0 && budget >= max) {
        if (req->max_tokens > 0 && max > S_BUDGET_MIN)
            budget = max / 2 > S_BUDGET_MIN ? max / 2 : S_BUDGET_MIN;
        else
            max = budget + SL_XLATE_MAX_TOKENS;
    }
    if (budget >= max) {
        sl_xlate_drop (x, "thinking (max tokens too small for it)");
        budget = -1;
    }
    json_object_set_new (root, "max_tokens", json_integer (max));
    bool thinks = budget >= 0 || (req->thinking_adaptive && !req->thinking_off);
    if (budget >= 0)
        json_object_set_new (root, "thinking", json_pack ("{s:s,s:I}", "type", "enabled", "budget_tokens",
                                                          (json_int_t) budget));
    else
    if (thinks)
        json_object_set_new (root, "thinking", json_pack ("{s:s}", "type", "adaptive"));
    if (!isnan (req->temperature)) {
        if (thinks)
            sl_xlate_drop (x, "temperature (with thinking)");
        else {
            double t = req->temperature > S_TEMPERATURE_MAX ? S_TEMPERATURE_MAX : req->temperature;
            if (t != req->temperature)
                sl_xlate_drop (x, "temperature above 1");
            json_object_set_new (root, "temperature", json_real (t));
        }
    }
    if (!isnan (req->top_p)) {
        if (thinks)
            sl_xlate_drop (x, "top_p (with thinking)");
        else
            json_object_set_new (root, "top_p", json_real (req->top_p));
    }
    if (req->top_k >= 0) {
        if (thinks)
            sl_xlate_drop (x, "top_k (with thinking)");
        else
            json_object_set_new (root, "top_k", json_integer (req->top_k));
    }
    if (req->stop_count)
        json_object_set_new (root, "stop_sequences", sl_reqrender_strs (req->stop, req->stop_count));
    if (req->seed >= 0)
        sl_xlate_drop (x, "seed");
    if (!isnan (req->presence_penalty) || !isnan (req->frequency_penalty))
        sl_xlate_drop (x, "penalties");
    if (req->user.ptr)
        json_object_set_new (root, "metadata", json_pack ("{s:o}", "user_id", sl_reqrender_str (req->user)));
    if (req->metadata)
        sl_xlate_drop (x, "metadata");
    json_object_set_new (root, "stream", json_true ());
    return sl_reqrender_end (root, rc, out);
}
