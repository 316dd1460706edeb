/*  sl_gemini_request.c - generateContent requests: parse, forward, render.

    parse: a Gemini request into the normalized request. systemInstruction
    is the instructions; a content of role "model" is the assistant's
    turn, any other a user's; parts become parts (text, thought text with
    its signature, inline and file images, function calls and responses);
    code execution parts are this dialect's alone. Gemini calls need not
    have ids: a call without one gets a deterministic id from its place
    ("call_<content>_<part>"), and a response without one answers the most
    recent call of its name that no response answered yet, so the same
    history always gives the same ids. A function declaration's
    `parameters` are Gemini's OpenAPI schema (upper-case type names): the
    model holds them as JSON Schema, and the judge reads them as declared.

    render: the normalized request as a Gemini request. Turns of one role
    are joined, results first; a tool result needs its tool's name, taken
    from the result or from its call in the request's own history (a
    result whose call is not there is refused). Images go as inline data:
    an image by URL cannot be given and refuses the request. Tools are
    declared with parametersJsonSchema. The model is in the URL, not the
    body.
*/
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/dialects/sl_effort.h"
#include "common/dialects/sl_job.h"
#include "common/dialects/sl_reqparse.h"
#include "common/dialects/sl_reqrender.h"
#include "common/dialects/gemini/sl_gemini.h"

#define S_STOP_MAX 5                    //  stop sequences the API takes
#define S_DYNAMIC_BUDGET (-1)           //  thinkingBudget -1: the model decides how much to think
#define S_NO_BUDGET (-2)                //  s_budget: no thinkingConfig at all

static const char *const s_matters [] = { "cachedContent", NULL };
static const char *const s_informative [] = { "safetySettings", "labels", NULL };
static const char *const s_config_informative [] = { "responseLogprobs", "logprobs", "mediaResolution", NULL };
static const char *const s_mapped [] = {
    "contents", "systemInstruction", "tools", "toolConfig", "generationConfig", "model", NULL
};
static const char *const s_config_mapped [] = {
    "temperature", "topP", "topK", "maxOutputTokens", "stopSequences", "seed", "presencePenalty",
    "frequencyPenalty", "responseMimeType", "responseSchema", "responseJsonSchema", "thinkingConfig",
    "candidateCount", NULL
};
static const char *const s_config_matters [] = { "responseModalities", "speechConfig", NULL };

//  Gemini's OpenAPI schema as JSON Schema: type names in lower case.
static json_t *
s_json_schema (json_t *schema)
{
    if (json_is_array (schema)) {
        json_t *out = json_array ();
        size_t i;
        json_t *v;
        json_array_foreach (schema, i, v)
            json_array_append_new (out, s_json_schema (v));
        return out;
    }
    if (!json_is_object (schema))
        return json_deep_copy (schema);
    json_t *out = json_object ();
    const char *key;
    json_t *v;
    json_object_foreach (schema, key, v) {
        if (strcmp (key, "type") == 0 && json_is_string (v)) {
            char lower [32];
            snprintf (lower, sizeof lower, "%s", json_string_value (v));
            for (char *c = lower; *c; c++)
                *c = (char) tolower ((unsigned char) *c);
            json_object_set_new (out, key, json_string (lower));
        }
        else
        if (strcmp (key, "properties") == 0 && json_is_object (v)) {
            json_t *props = json_object ();
            const char *name;
            json_t *p;
            json_object_foreach (v, name, p)
                json_object_set_new (props, name, s_json_schema (p));
            json_object_set_new (out, key, props);
        }
        else
        if (json_is_object (v) || json_is_array (v))
            json_object_set_new (out, key, s_json_schema (v));
        else
            json_object_set (out, key, v);
    }
    return out;
}

static void
s_inline (sl_message_t *m, sl_part_t *result, json_t *blob, bool file)
{
    sl_str_t mime = sl_req_str (json_object_get (blob, "mimeType"));
    bool image = sl_str_starts (mime, "image/");
    sl_part_t *p = result ? sl_req_add_content (result, image ? SL_PART_IMAGE : SL_PART_OPAQUE)
                          : sl_req_add_part (m, image ? SL_PART_IMAGE : SL_PART_OPAQUE);
    if (!image)
        p->text = file ? SL_STR_LIT ("fileData") : SL_STR_LIT ("inlineData");
    else
    if (file)
        p->url = sl_req_str (json_object_get (blob, "fileUri"));
    else {
        p->media_type = mime;
        p->data = sl_req_str (json_object_get (blob, "data"));
    }
}

//  A functionResponse's response as content: its "output" or "error"
//  when that is all it holds, else the whole object as JSON text.
static void
s_response (sl_req_t *req, sl_part_t *r, json_t *response)
{
    json_t *output = json_object_get (response, "output"), *error = json_object_get (response, "error");
    sl_part_t *text = sl_req_add_content (r, SL_PART_TEXT);
    if (json_object_size (response) == 1 && json_is_string (output))
        sl_req_set_text (text, output);
    else
    if (json_object_size (response) == 1 && error) {
        r->is_error = true;
        if (json_is_string (error))
            sl_req_set_text (text, error);
        else {
            text->text = sl_req_keep_json (req, error);
            text->source = error;       //  its JSON: a policy changes the strings inside
        }
    }
    else {
        text->text = sl_req_keep_json (req, response);
        text->source = json_is_object (response) ? response : NULL;
    }
}

static void
s_content (sl_req_t *req, json_t *content, size_t index)
{
    json_t *role = json_object_get (content, "role");
    bool model = json_is_string (role) && strcmp (json_string_value (role), "model") == 0;
    sl_message_t *m = sl_req_add_message (req, model ? SL_ROLE_ASSISTANT : SL_ROLE_USER);
    size_t i;
    json_t *part;
    json_array_foreach (json_object_get (content, "parts"), i, part) {
        json_t *text = json_object_get (part, "text");
        json_t *call = json_object_get (part, "functionCall");
        json_t *response = json_object_get (part, "functionResponse");
        sl_str_t sig = sl_req_str (json_object_get (part, "thoughtSignature"));
        if (json_is_string (text)) {
            bool thought = json_is_true (json_object_get (part, "thought"));
            sl_part_t *p = sl_req_add_part (m, thought ? SL_PART_THINKING : SL_PART_TEXT);
            sl_req_set_text (p, text);
            if (thought)
                p->signature = sig;
        }
        else
        if (json_is_object (call)) {
            sl_str_t id = sl_req_str (json_object_get (call, "id"));
            if (!id.ptr) {
                char made [48];
                snprintf (made, sizeof made, "call_%zu_%zu", index, i);
                id = sl_req_keep (req, made, strlen (made));
            }
            sl_part_t *p = sl_req_add_part (m, SL_PART_TOOL_CALL);
            p->id = id;
            p->name = sl_req_str (json_object_get (call, "name"));
            json_t *args = json_object_get (call, "args");
            p->arguments = sl_req_keep_json (req, args);
            p->signature = sig;
        }
        else
        if (json_is_object (response)) {
            sl_str_t name = sl_req_str (json_object_get (response, "name"));
            sl_str_t id = sl_req_str (json_object_get (response, "id"));
            if (!id.ptr)
                id = sl_req_open_call (req, req->message_count, name);
            sl_part_t *r = sl_req_add_part (m, SL_PART_TOOL_RESULT);
            r->id = id;
            r->name = name;
            sl_req_set_source (r, response, "response");
            s_response (req, r, json_object_get (response, "response"));
        }
        else
        if (json_is_object (json_object_get (part, "inlineData")))
            s_inline (m, NULL, json_object_get (part, "inlineData"), false);
        else
        if (json_is_object (json_object_get (part, "fileData")))
            s_inline (m, NULL, json_object_get (part, "fileData"), true);
        else {
            //  executableCode, codeExecutionResult, videoMetadata, ...
            const char *key = json_object_size (part) ? json_object_iter_key (json_object_iter (part)) : NULL;
            sl_req_add_part (m, SL_PART_OPAQUE)->text = key ? sl_req_keep (req, key, strlen (key))
                                                            : SL_STR_LIT ("a part");
        }
    }
}

//  A declaration's schema: parameters (Gemini's OpenAPI schema, held as
//  JSON Schema and kept as declared) or parametersJsonSchema.
static int
s_declaration (json_t *decl, sl_tool_t *t, sl_req_t *req, sl_refusal_t *err)
{
    (void) err;
    json_t *schema = json_object_get (decl, "parameters");
    json_t *js = json_object_get (decl, "parametersJsonSchema");
    if (json_is_object (schema)) {
        t->declared = schema;
        t->schema = sl_req_own (req, s_json_schema (schema));
    }
    else
    if (json_is_object (js))
        t->schema = js;
    return 0;
}

//  Function declarations: named ones are the judge's.
static const sl_reqparse_tools_t s_declarations = {
    .list = "functionDeclarations",
    .unnamed = SL_REQPARSE_UNNAMED_SKIP,
    .read = s_declaration,
};

int
sl_gemini_parse (json_t *root, const sl_endpoint_t *endpoint, sl_req_t *req, sl_refusal_t *err)
{
    json_t *contents = json_object_get (root, "contents");
    json_t *config = json_object_get (root, "generationConfig");
    json_t *candidates = json_object_get (config, "candidateCount");
    json_t *tools = json_object_get (root, "tools");
    if (!endpoint->model [0])
        return sl_refuse (err, 400, "invalid_request_error", "the path names no model");
    if (!json_is_array (contents) || json_array_size (contents) == 0)
        return sl_refuse (err, 400, "invalid_request_error", "'contents' is required and must be a non-empty array");
    if (endpoint->stream && !endpoint->sse)
        return sl_refuse (err, 400, "invalid_request_error",
                          "only server-sent events are supported for streaming: add alt=sse to the query");
    if (candidates && !json_is_null (candidates)
    &&  !(json_is_integer (candidates) && json_integer_value (candidates) == 1))
        return sl_refuse (err, 400, "invalid_request_error",
                          "candidateCount other than 1 is not supported: sluice judges one candidate per response");
    if (tools && !json_is_null (tools) && !json_is_array (tools))
        return sl_refuse (err, 400, "invalid_request_error", "'tools' must be an array");
    size_t i;
    json_t *tool;
    json_array_foreach (tools, i, tool) {
        if (sl_reqparse_tools (json_object_get (tool, "functionDeclarations"), &s_declarations, req, err))
            return -1;
        const char *key;
        json_t *v;
        json_object_foreach (tool, key, v)
            if (strcmp (key, "functionDeclarations") != 0)
                sl_req_add_tool (req)->server = sl_req_keep (req, key, strlen (key));
    }
    req->model = sl_req_keep (req, endpoint->model, strlen (endpoint->model));
    req->stream = endpoint->stream;
    req->include_usage = true;          //  Gemini always reports usageMetadata
    json_t *system = json_object_get (root, "systemInstruction");
    if (json_is_object (system)) {
        sl_message_t *m = sl_req_add_message (req, SL_ROLE_SYSTEM);
        json_t *part;
        json_array_foreach (json_object_get (system, "parts"), i, part)
            if (json_is_string (json_object_get (part, "text")))
                sl_req_set_text (sl_req_add_part (m, SL_PART_TEXT), json_object_get (part, "text"));
    }
    else
    if (json_is_string (system))
        sl_req_set_text (sl_req_add_part (sl_req_add_message (req, SL_ROLE_SYSTEM), SL_PART_TEXT), system);
    json_t *content;
    json_array_foreach (contents, i, content)
        s_content (req, content, i);
    //  Tool choice
    json_t *calling = json_object_get (json_object_get (root, "toolConfig"), "functionCallingConfig");
    const char *mode = json_string_value (json_object_get (calling, "mode"));
    json_t *allowed = json_object_get (calling, "allowedFunctionNames");
    if (mode && strcmp (mode, "NONE") == 0)
        req->tool_choice = SL_CHOICE_NONE;
    else
    if (mode && (strcmp (mode, "ANY") == 0 || strcmp (mode, "VALIDATED") == 0)) {
        req->tool_choice = SL_CHOICE_REQUIRED;
        if (json_array_size (allowed) == 1 && json_is_string (json_array_get (allowed, 0))) {
            req->tool_choice = SL_CHOICE_TOOL;
            req->tool_choice_name = sl_req_str (json_array_get (allowed, 0));
        }
    }
    else
    if (mode && strcmp (mode, "AUTO") == 0)
        req->tool_choice = SL_CHOICE_AUTO;
    //  Generation
    req->temperature = sl_req_real (json_object_get (config, "temperature"));
    req->top_p = sl_req_real (json_object_get (config, "topP"));
    req->top_k = sl_req_int (json_object_get (config, "topK"));
    req->max_tokens = sl_req_int (json_object_get (config, "maxOutputTokens"));
    req->seed = sl_req_int (json_object_get (config, "seed"));
    req->presence_penalty = sl_req_real (json_object_get (config, "presencePenalty"));
    req->frequency_penalty = sl_req_real (json_object_get (config, "frequencyPenalty"));
    sl_reqparse_stops (req, json_object_get (config, "stopSequences"));
    json_t *mime = json_object_get (config, "responseMimeType");
    if (json_is_string (mime) && strcmp (json_string_value (mime), "application/json") == 0) {
        json_t *js = json_object_get (config, "responseJsonSchema"), *schema = json_object_get (config, "responseSchema");
        req->format = js || schema ? SL_FORMAT_SCHEMA : SL_FORMAT_JSON;
        req->format_schema = js ? js : schema ? sl_req_own (req, s_json_schema (schema)) : NULL;
    }
    json_t *thinking = json_object_get (config, "thinkingConfig");
    json_t *budget = json_object_get (thinking, "thinkingBudget");
    if (json_is_integer (budget) && json_integer_value (budget) == 0)
        req->thinking_off = true;
    else
    if (json_is_integer (budget) && json_integer_value (budget) == S_DYNAMIC_BUDGET)
        req->thinking_adaptive = true;
    else
        req->budget = sl_req_int (budget);
    req->effort = sl_req_str (json_object_get (thinking, "thinkingLevel"));
    sl_reqparse_fields (req, root, s_mapped, s_matters, s_informative);
    sl_reqparse_fields (req, config, s_config_mapped, s_config_matters, s_config_informative);
    return 0;
}

//  The stream is the URL's business: the body goes as it came.
int
sl_gemini_forward (sl_str_t body, const sl_req_t *req, sl_buf_t *out)
{
    (void) req;
    sl_buf_append_str (out, body);
    return 0;
}

//  --------------------------------------------------------------------------
//  Rendering another dialect's request

static int
s_inline_part (const sl_part_t *p, sl_xlate_t *x, json_t **out)
{
    if (p->url.ptr)
        return sl_xlate_refuse (x, "an image by URL", "Gemini takes images as inline data");
    *out = json_pack ("{s:{s:o,s:o}}", "inlineData", "mimeType", sl_reqrender_str (p->media_type), "data",
                      sl_reqrender_str (p->data));
    return 0;
}

//  The part of one normalized part, or NULL when it goes nowhere.
static int
s_part (const sl_req_t *req, const sl_part_t *p, sl_xlate_t *x, json_t **out)
{
    switch (p->kind) {
        case SL_PART_TEXT:
        case SL_PART_REFUSAL:
            if (p->text.len)
                *out = json_pack ("{s:o}", "text", sl_reqrender_str (p->text));
            return 0;
        case SL_PART_IMAGE:
            return s_inline_part (p, x, out);
        case SL_PART_TOOL_CALL: {
            *out = json_pack ("{s:{s:o,s:o}}", "functionCall", "name", sl_reqrender_str (p->name), "args",
                              sl_reqrender_args (p, x));
            sl_str_t sig = sl_sig_for ("gemini", p->signature);
            if (sig.ptr)
                json_object_set_new (*out, "thoughtSignature", sl_reqrender_str (sig));
            return 0;
        }
        case SL_PART_TOOL_RESULT: {
            sl_str_t name = p->name.ptr ? p->name : sl_req_call_name (req, p->id);
            if (!name.ptr)
                return sl_xlate_refuse (x, "a tool result whose call is not in the request",
                                        "Gemini answers a call by its tool's name");
            if (sl_req_has (p->content, p->content_count, SL_PART_IMAGE)
            ||  sl_req_has (p->content, p->content_count, SL_PART_OPAQUE))
                return sl_xlate_refuse (x, "an image in a tool result", "function responses carry JSON");
            sl_buf_t text = { 0 };
            sl_req_result_text (p, false, &text);
            *out = json_pack ("{s:{s:o,s:{s:s%}}}", "functionResponse", "name", sl_reqrender_str (name), "response",
                              p->is_error ? "error" : "output", text.data ? text.data : "", text.len);
            sl_buf_free (&text);
            return 0;
        }
        case SL_PART_THINKING: {
            sl_str_t sig = sl_sig_for ("gemini", p->signature);
            if (sig.ptr)
                *out = json_pack ("{s:o,s:b,s:o}", "text", sl_reqrender_str (p->text), "thought", 1,
                                  "thoughtSignature", sl_reqrender_str (sig));
            else
                sl_xlate_drop (x, "thinking another provider signed");
            return 0;
        }
        case SL_PART_REDACTED:
            sl_xlate_drop (x, "thinking another provider signed");
            return 0;
        default:
            return sl_reqrender_refuse_part (x, p, "Gemini");
    }
}

//  A functionResponse part comes first in a user turn.
static bool
s_is_result (json_t *part)
{
    return json_object_get (part, "functionResponse") != NULL;
}

static int
s_contents (const sl_req_t *req, sl_xlate_t *x, json_t *root)
{
    json_t *contents = json_array ();
    json_object_set_new (root, "contents", contents);
    json_t *system = json_array ();
    int rc = 0;
    for (size_t i = 0; i < req->message_count && rc == 0; i++) {
        const sl_message_t *m = &req->messages [i];
        if (m->role == SL_ROLE_SYSTEM) {
            for (size_t j = 0; j < m->count; j++)
                if (m->parts [j].kind == SL_PART_TEXT)
                    json_array_append_new (system, json_pack ("{s:o}", "text", sl_reqrender_str (m->parts [j].text)));
                else
                    rc = sl_xlate_refuse (x, "instructions that are not text", NULL);
            continue;
        }
        json_t *parts;
        rc = sl_reqrender_blocks (req, m, s_part, x, &parts);
        if (rc == 0 && json_array_size (parts))
            sl_reqrender_turn (contents, m->role == SL_ROLE_ASSISTANT ? "model" : "user", "parts", parts,
                               s_is_result);
        else
            json_decref (parts);
    }
    if (json_array_size (system))
        json_object_set_new (root, "systemInstruction", json_pack ("{s:o}", "parts", system));
    else
        json_decref (system);
    return rc;
}

//  The thinking budget to ask for: none when thinking is off, the
//  client's budget, an effort's (sl_effort.h; above high, more than every
//  Gemini model takes, is high's), or -1 (the model decides) for adaptive
//  thinking; S_NO_BUDGET when nothing was asked.
static int64_t
s_budget (const sl_req_t *req, sl_xlate_t *x)
{
    if (req->thinking_off)
        return 0;
    if (req->budget >= 0)
        return req->budget;
    int effort = sl_effort_clamp (sl_effort_of (req, x), SL_EFFORT_NONE, SL_EFFORT_HIGH, x);
    if (effort != SL_EFFORT_UNSET)
        return sl_effort_budget (effort);
    return req->thinking_adaptive ? S_DYNAMIC_BUDGET : S_NO_BUDGET;
}

//  Function declarations: name, description, parametersJsonSchema (none
//  without a schema).
static const sl_reqrender_tools_t s_render_tools = {
    .schema = "parametersJsonSchema",
    .own = "its type is the client's provider's",
};

int
sl_gemini_render_request (const sl_req_t *req, sl_xlate_t *x, sl_buf_t *out)
{
    json_t *root = json_object ();
    int rc = s_contents (req, x, root);
    if (rc == 0 && req->tool_count) {
        json_t *decls = json_array ();
        json_object_set_new (root, "tools", json_pack ("[{s:o}]", "functionDeclarations", decls));
        rc = sl_reqrender_tools (req, &s_render_tools, x, decls);
    }
    const char *mode = req->tool_choice == SL_CHOICE_AUTO ? "AUTO" : req->tool_choice == SL_CHOICE_NONE ? "NONE"
                     : req->tool_choice == SL_CHOICE_REQUIRED || req->tool_choice == SL_CHOICE_TOOL ? "ANY" : NULL;
    if (mode && req->tool_count) {
        json_t *calling = json_pack ("{s:s}", "mode", mode);
        if (req->tool_choice == SL_CHOICE_TOOL)
            json_object_set_new (calling, "allowedFunctionNames",
                                 json_pack ("[o]", sl_reqrender_str (req->tool_choice_name)));
        json_object_set_new (root, "toolConfig", json_pack ("{s:o}", "functionCallingConfig", calling));
    }
    if (req->parallel_tools == 0)
        sl_xlate_drop (x, "parallel_tool_calls");
    json_t *config = json_object ();
    sl_reqrender_real (config, "temperature", req->temperature);
    sl_reqrender_real (config, "topP", req->top_p);
    sl_reqrender_int (config, "topK", req->top_k);
    sl_reqrender_int (config, "maxOutputTokens", req->max_tokens);
    if (req->stop_count > S_STOP_MAX && rc == 0)
        rc = sl_xlate_refuse (x, "more than 5 stop sequences", "Gemini takes 5");
    if (req->stop_count)
        json_object_set_new (config, "stopSequences", sl_reqrender_strs (req->stop, req->stop_count));
    sl_reqrender_int (config, "seed", req->seed);
    sl_reqrender_real (config, "presencePenalty", req->presence_penalty);
    sl_reqrender_real (config, "frequencyPenalty", req->frequency_penalty);
    if (req->format == SL_FORMAT_JSON || req->format == SL_FORMAT_SCHEMA) {
        json_object_set_new (config, "responseMimeType", json_string ("application/json"));
        if (req->format == SL_FORMAT_SCHEMA && req->format_schema)
            json_object_set_new (config, "responseJsonSchema", json_incref (req->format_schema));
    }
    int64_t budget = s_budget (req, x);
    if (budget != S_NO_BUDGET)
        json_object_set_new (config, "thinkingConfig", json_pack ("{s:I,s:b}", "thinkingBudget", (json_int_t) budget,
                                                                  "includeThoughts", budget != 0));
    if (json_object_size (config))
        json_object_set_new (root, "generationConfig", config);
    else
        json_decref (config);
    if (req->user.ptr)
        sl_xlate_drop (x, "user");
    if (req->metadata)
        sl_xlate_drop (x, "metadata");
    return sl_reqrender_end (root, rc, out);
}
