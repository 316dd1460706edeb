/*  sl_openai_request.c - Chat Completions requests: parse, forward, render.

    parse: a chat.completions request into the normalized request. system
    and developer messages are instructions; a tool message is a tool
    result (consecutive ones share a user turn), named from the call in
    the request's own history; an assistant's reasoning_content (which some
    clients send back) is its thinking.

    render: the normalized request as a chat.completions request. Tool
    results become tool messages, right after the assistant's calls (a
    dialect that mixes results and text in one turn gets its text in a
    user message after them); a result's error flag, which a tool message
    cannot carry, becomes "Error: " before its text; images in a tool
    result cannot be carried and refuse the request. Thinking is dropped
    (the API takes none back). max_tokens goes as max_completion_tokens.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_json.h"
#include "common/dialects/sl_effort.h"
#include "common/dialects/sl_job.h"
#include "common/dialects/sl_reqparse.h"
#include "common/dialects/sl_reqrender.h"
#include "common/dialects/openai/sl_openai.h"

//  Top-level fields the model does not hold: what the answer depends on
//  (it cannot cross) and what is only informative. Others are
//  informative too.
static const char *const s_matters [] = {
    "audio", "modalities", "web_search_options", "functions", "function_call", NULL
};
static const char *const s_informative [] = {
    "logprobs", "top_logprobs", "logit_bias", "service_tier", "store", "prediction", "safety_identifier",
    "prompt_cache_key", "verbosity", NULL
};
static const char *const s_mapped [] = {
    "model", "messages", "stream", "stream_options", "n", "tools", "tool_choice", "parallel_tool_calls",
    "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "seed", "presence_penalty",
    "frequency_penalty", "response_format", "reasoning_effort", "user", "metadata", NULL
};

//  One content part of a user, system or assistant message.
static void
s_part (sl_req_t *req, sl_message_t *m, json_t *part)
{
    const char *type = json_string_value (json_object_get (part, "type"));
    if (json_is_string (part)) {
        sl_req_set_text (sl_req_add_part (m, SL_PART_TEXT), part);
        return;
    }
    if (type && strcmp (type, "text") == 0 && json_is_string (json_object_get (part, "text")))
        sl_req_set_text (sl_req_add_part (m, SL_PART_TEXT), json_object_get (part, "text"));
    else
    if (type && strcmp (type, "refusal") == 0 && json_is_string (json_object_get (part, "refusal")))
        sl_req_add_part (m, SL_PART_REFUSAL)->text = sl_req_str (json_object_get (part, "refusal"));
    else
    if (type && strcmp (type, "image_url") == 0) {
        json_t *image = json_object_get (part, "image_url");
        sl_str_t url = sl_req_str (json_is_object (image) ? json_object_get (image, "url") : image);
        sl_part_t *p = sl_req_add_part (m, SL_PART_IMAGE);
        if (!sl_req_data_url (url, &p->media_type, &p->data))
            p->url = url;
    }
    else {
        //  input_audio, file, ...: this dialect's alone
        sl_part_t *p = sl_req_add_part (m, SL_PART_OPAQUE);
        p->text = type ? sl_req_keep (req, type, strlen (type)) : SL_STR_LIT ("a content part");
    }
}

static void
s_content (sl_req_t *req, sl_message_t *m, json_t *content)
{
    if (json_is_string (content)) {
        sl_req_set_text (sl_req_add_part (m, SL_PART_TEXT), content);
        return;
    }
    size_t i;
    json_t *part;
    json_array_foreach (content, i, part)
        s_part (req, m, part);
}

//  A tool result answers the most recent user turn of results, or opens one.
static sl_message_t *
s_results_turn (sl_req_t *req)
{
    if (req->message_count) {
        sl_message_t *last = &req->messages [req->message_count - 1];
        bool results = last->role == SL_ROLE_USER && last->count;
        for (size_t i = 0; results && i < last->count; i++)
            results = last->parts [i].kind == SL_PART_TOOL_RESULT;
        if (results)
            return last;
    }
    return sl_req_add_message (req, SL_ROLE_USER);
}

static void
s_call (sl_req_t *req, sl_message_t *m, json_t *id, json_t *fn)
{
    sl_part_t *p = sl_req_add_part (m, SL_PART_TOOL_CALL);
    p->id = sl_req_str (id);
    p->name = sl_req_str (json_object_get (fn, "name"));
    json_t *args = json_object_get (fn, "arguments");
    p->arguments = json_is_string (args) ? sl_req_str (args) : sl_req_keep_json (req, args);
}

static void
s_message (sl_req_t *req, json_t *msg, size_t index)
{
    const char *role = json_string_value (json_object_get (msg, "role"));
    json_t *content = json_object_get (msg, "content");
    if (role && (strcmp (role, "system") == 0 || strcmp (role, "developer") == 0))
        s_content (req, sl_req_add_message (req, SL_ROLE_SYSTEM), content);
    else
    if (role && strcmp (role, "user") == 0)
        s_content (req, sl_req_add_message (req, SL_ROLE_USER), content);
    else
    if (role && strcmp (role, "assistant") == 0) {
        sl_message_t *m = sl_req_add_message (req, SL_ROLE_ASSISTANT);
        json_t *reasoning = json_object_get (msg, "reasoning_content");
        if (json_is_string (reasoning) && json_string_length (reasoning))
            sl_req_add_part (m, SL_PART_THINKING)->text = sl_req_str (reasoning);
        s_content (req, m, content);
        json_t *refusal = json_object_get (msg, "refusal");
        if (json_is_string (refusal) && json_string_length (refusal))
            sl_req_add_part (m, SL_PART_REFUSAL)->text = sl_req_str (refusal);
        size_t i;
        json_t *call;
        json_array_foreach (json_object_get (msg, "tool_calls"), i, call)
            s_call (req, m, json_object_get (call, "id"), json_object_get (call, "function"));
        json_t *legacy = json_object_get (msg, "function_call");
        if (json_is_object (legacy)) {
            //  The deprecated single call has no id: one from its place.
            char id [48];
            snprintf (id, sizeof id, "call_%zu", index);
            s_call (req, m, NULL, legacy);
            m->parts [m->count - 1].id = sl_req_keep (req, id, strlen (id));
        }
    }
    else
    if (role && (strcmp (role, "tool") == 0 || strcmp (role, "function") == 0)) {
        sl_part_t *r = sl_req_add_part (s_results_turn (req), SL_PART_TOOL_RESULT);
        if (strcmp (role, "tool") == 0) {
            r->id = sl_req_str (json_object_get (msg, "tool_call_id"));
            r->name = sl_req_call_name (req, r->id);
        }
        else {
            r->name = sl_req_str (json_object_get (msg, "name"));
            r->id = sl_req_open_call (req, req->message_count - 1, r->name);
        }
        sl_req_set_source (r, msg, "content");
        sl_message_t holder = { 0 };
        s_content (req, &holder, content);
        r->content = holder.parts;
        r->content_count = holder.count;
    }
    else {
        sl_message_t *m = sl_req_add_message (req, SL_ROLE_USER);
        sl_req_add_part (m, SL_PART_OPAQUE)->text = SL_STR_LIT ("a message of another role");
    }
}

//  A function's parameters and strict.
static int
s_function (json_t *fn, sl_tool_t *t, sl_req_t *req, sl_refusal_t *err)
{
    (void) req;
    (void) err;
    t->schema = json_object_get (fn, "parameters");
    t->strict = json_is_true (json_object_get (fn, "strict"));
    return 0;
}

//  Tools: {"type":"function","function":{name, description, parameters,
//  strict}}; another type is a provider's own tool. A function must have
//  a name.
static const sl_reqparse_tools_t s_tools = {
    .list = "tools",
    .wrapper = "function",
    .function_type = "function",
    .unnamed = SL_REQPARSE_UNNAMED_REFUSE,
    .read = s_function,
};

int
sl_openai_parse (json_t *root, const sl_endpoint_t *endpoint, sl_req_t *req, sl_refusal_t *err)
{
    (void) endpoint;
    json_t *messages = json_object_get (root, "messages");
    json_t *n = json_object_get (root, "n");
    if (sl_reqparse_model (root, req, err))
        return -1;
    if (!json_is_array (messages) || json_array_size (messages) == 0)
        return sl_refuse (err, 400, "invalid_request_error", "'messages' is required and must be a non-empty array");
    if (sl_reqparse_stream (root, req, err))
        return -1;
    if (n && !json_is_null (n) && !(json_is_integer (n) && json_integer_value (n) == 1))
        return sl_refuse (err, 400, "invalid_request_error",
                          "'n' other than 1 is not supported: sluice judges one choice per response");
    if (sl_reqparse_tools (json_object_get (root, "tools"), &s_tools, req, err))
        return -1;
    req->include_usage = json_is_true (json_object_get (json_object_get (root, "stream_options"), "include_usage"));
    size_t i;
    json_t *msg;
    json_array_foreach (messages, i, msg)
        s_message (req, msg, i);
    //  Tool choice
    json_t *choice = json_object_get (root, "tool_choice");
    if (json_is_string (choice)) {
        const char *c = json_string_value (choice);
        req->tool_choice = strcmp (c, "none") == 0 ? SL_CHOICE_NONE : strcmp (c, "required") == 0
                         ? SL_CHOICE_REQUIRED : SL_CHOICE_AUTO;
    }
    else
    if (json_is_object (choice)) {
        json_t *name = json_object_get (json_object_get (choice, "function"), "name");
        if (json_is_string (name)) {
            req->tool_choice = SL_CHOICE_TOOL;
            req->tool_choice_name = sl_req_str (name);
        }
        else
            sl_req_feature (req, "tool_choice", true);
    }
    json_t *parallel = json_object_get (root, "parallel_tool_calls");
    if (json_is_boolean (parallel))
        req->parallel_tools = json_is_true (parallel);
    //  Sampling
    req->max_tokens = sl_req_int (json_object_get (root, "max_completion_tokens"));
    if (req->max_tokens < 0)
        req->max_tokens = sl_req_int (json_object_get (root, "max_tokens"));
    req->temperature = sl_req_real (json_object_get (root, "temperature"));
    req->top_p = sl_req_real (json_object_get (root, "top_p"));
    req->seed = sl_req_int (json_object_get (root, "seed"));
    req->presence_penalty = sl_req_real (json_object_get (root, "presence_penalty"));
    req->frequency_penalty = sl_req_real (json_object_get (root, "frequency_penalty"));
    json_t *stop = json_object_get (root, "stop");
    if (json_is_string (stop))
        sl_req_add_stop (req, sl_req_str (stop));
    sl_reqparse_stops (req, stop);
    //  Structured output
    json_t *format = json_object_get (root, "response_format");
    const char *ftype = json_string_value (json_object_get (format, "type"));
    if (ftype && strcmp (ftype, "json_object") == 0)
        req->format = SL_FORMAT_JSON;
    else
    if (ftype && strcmp (ftype, "json_schema") == 0) {
        json_t *js = json_object_get (format, "json_schema");
        req->format = SL_FORMAT_SCHEMA;
        req->format_schema = json_object_get (js, "schema");
        req->format_name = sl_req_str (json_object_get (js, "name"));
        req->format_strict = json_is_true (json_object_get (js, "strict"));
    }
    else
    if (ftype && strcmp (ftype, "text") == 0)
        req->format = SL_FORMAT_TEXT;
    req->effort = sl_req_str (json_object_get (root, "reasoning_effort"));
    req->user = sl_req_str (json_object_get (root, "user"));
    req->metadata = json_object_get (root, "metadata");
    //  What the model does not hold
    const char *key;
    json_t *value;
    json_object_foreach (root, key, value) {
        if (sl_reqparse_listed (key, s_mapped) || json_is_null (value))
            continue;
        if (strcmp (key, "modalities") == 0 && json_array_size (value) == 1
        &&  json_is_string (json_array_get (value, 0)) && strcmp (json_string_value (json_array_get (value, 0)), "text") == 0)
            continue;
        sl_req_field (req, key, s_matters, s_informative);
    }
    return 0;
}

//  Streaming, and usage in the stream, always: the emitter shows the
//  client only what it asked for.
int
sl_openai_forward (sl_str_t body, const sl_req_t *req, sl_buf_t *out)
{
    (void) req;
    static const sl_patch_t patches [] = {
        { "stream", "true" },
        { "stream_options", "{\"include_usage\":true}" },
    };
    return sl_job_patch (body, patches, 2, out);
}

//  --------------------------------------------------------------------------
//  Rendering another dialect's request

static json_t *
s_buf_string (sl_buf_t *b)
{
    return json_stringn (b->data ? b->data : "", b->len);
}

//  The content of a user message: a string when it is one text. (Opaque
//  parts were refused before.)
static void
s_user_content (const sl_part_t *parts, size_t count, sl_xlate_t *x, json_t **out)
{
    json_t *list = json_array ();
    size_t texts = 0, others = 0;
    for (size_t i = 0; i < count; i++) {
        const sl_part_t *p = &parts [i];
        if (p->kind == SL_PART_TEXT) {
            json_array_append_new (list, json_pack ("{s:s,s:o}", "type", "text", "text", sl_reqrender_str (p->text)));
            texts++;
        }
        else
        if (p->kind == SL_PART_IMAGE) {
            sl_buf_t url = { 0 };
            sl_req_put_image_url (p, &url);
            json_array_append_new (list, json_pack ("{s:s,s:{s:o}}", "type", "image_url", "image_url",
                                                    "url", s_buf_string (&url)));
            sl_buf_free (&url);
            others++;
        }
        else
        if (p->kind != SL_PART_TOOL_RESULT)
            sl_xlate_drop (x, "thinking in user messages");
    }
    if (texts == 1 && others == 0) {
        *out = json_incref (json_object_get (json_array_get (list, 0), "text"));
        json_decref (list);
    }
    else
        *out = list;
}

static json_t *
s_tool_message (const sl_part_t *result)
{
    sl_buf_t text = { 0 };
    sl_req_result_text (result, true, &text);
    json_t *m = json_pack ("{s:s,s:o,s:o}", "role", "tool", "tool_call_id", sl_reqrender_str (result->id),
                           "content", s_buf_string (&text));
    sl_buf_free (&text);
    return m;
}

static int
s_messages (const sl_req_t *req, sl_xlate_t *x, json_t *list)
{
    for (size_t i = 0; i < req->message_count; i++) {
        const sl_message_t *m = &req->messages [i];
        for (size_t j = 0; j < m->count; j++)
            if (m->parts [j].kind == SL_PART_OPAQUE)
                return sl_reqrender_refuse_part (x, &m->parts [j], "Chat Completions");
        if (m->role == SL_ROLE_SYSTEM) {
            sl_buf_t text = { 0 };
            sl_req_join (m->parts, m->count, SL_PART_TEXT, "\n", &text);
            json_array_append_new (list, json_pack ("{s:s,s:o}", "role", "system", "content", s_buf_string (&text)));
            sl_buf_free (&text);
        }
        else
        if (m->role == SL_ROLE_USER) {
            //  Results first (right after the calls), then what else the turn says.
            bool other = false;
            for (size_t j = 0; j < m->count; j++) {
                const sl_part_t *p = &m->parts [j];
                if (p->kind != SL_PART_TOOL_RESULT) {
                    other |= p->kind == SL_PART_TEXT || p->kind == SL_PART_IMAGE;
                    continue;
                }
                if (sl_req_has (p->content, p->content_count, SL_PART_IMAGE))
                    return sl_xlate_refuse (x, "an image in a tool result", "tool messages carry text only");
                if (sl_req_has (p->content, p->content_count, SL_PART_OPAQUE))
                    return sl_xlate_refuse (x, "a tool result's content", NULL);
                json_array_append_new (list, s_tool_message (p));
            }
            if (other) {
                json_t *content = NULL;
                s_user_content (m->parts, m->count, x, &content);
                json_array_append_new (list, json_pack ("{s:s,s:o}", "role", "user", "content", content));
            }
        }
        else {
            json_t *msg = json_pack ("{s:s}", "role", "assistant");
            sl_buf_t text = { 0 };
            sl_req_join (m->parts, m->count, SL_PART_TEXT, "", &text);
            bool calls = sl_req_has (m->parts, m->count, SL_PART_TOOL_CALL);
            json_object_set_new (msg, "content", text.len || !calls ? s_buf_string (&text) : json_null ());
            sl_buf_reset (&text);
            if (sl_req_has (m->parts, m->count, SL_PART_REFUSAL)) {
                sl_req_join (m->parts, m->count, SL_PART_REFUSAL, "", &text);
                json_object_set_new (msg, "refusal", s_buf_string (&text));
            }
            sl_buf_free (&text);
            if (sl_req_has (m->parts, m->count, SL_PART_THINKING) || sl_req_has (m->parts, m->count, SL_PART_REDACTED))
                sl_xlate_drop (x, "thinking");
            json_t *tc = json_array ();
            for (size_t j = 0; j < m->count; j++) {
                const sl_part_t *p = &m->parts [j];
                if (p->kind != SL_PART_TOOL_CALL)
                    continue;
                json_array_append_new (tc, json_pack ("{s:o,s:s,s:{s:o,s:o}}", "id", sl_reqrender_str (p->id), "type",
                                                      "function", "function", "name", sl_reqrender_str (p->name),
                                                      "arguments", sl_reqrender_args_text (p)));
            }
            if (json_array_size (tc))
                json_object_set_new (msg, "tool_calls", tc);
            else
                json_decref (tc);
            json_array_append_new (list, msg);
        }
    }
    return 0;
}

//  Tools: {"type":"function","function":{name, description, parameters
//  (an empty object schema when none), strict when strict}}.
static const sl_reqrender_tools_t s_render_tools = {
    .type = "function",
    .wrapper = "function",
    .schema = "parameters",
    .no_schema = "{\"type\":\"object\",\"properties\":{}}",
    .strict = SL_REQRENDER_STRICT_WHEN,
    .own = "Chat Completions has function tools only",
};

int
sl_openai_render_request (const sl_req_t *req, sl_xlate_t *x, sl_buf_t *out)
{
    json_t *root = json_object ();
    json_t *messages = json_array ();
    json_object_set_new (root, "model", sl_reqrender_str (req->model));
    json_object_set_new (root, "messages", messages);
    int rc = s_messages (req, x, messages);
    if (rc == 0 && req->tool_count) {
        json_t *tools = json_array ();
        rc = sl_reqrender_tools (req, &s_render_tools, x, tools);
        json_object_set_new (root, "tools", tools);
    }
    switch (req->tool_choice) {
        case SL_CHOICE_AUTO:     json_object_set_new (root, "tool_choice", json_string ("auto")); break;
        case SL_CHOICE_NONE:     json_object_set_new (root, "tool_choice", json_string ("none")); break;
        case SL_CHOICE_REQUIRED: json_object_set_new (root, "tool_choice", json_string ("required")); break;
        case SL_CHOICE_TOOL:
            json_object_set_new (root, "tool_choice", json_pack ("{s:s,s:{s:o}}", "type", "function", "function",
                                                                 "name", sl_reqrender_str (req->tool_choice_name)));
            break;
        default: break;
    }
    if (req->parallel_tools >= 0 && req->tool_count)
        json_object_set_new (root, "parallel_tool_calls", json_boolean (req->parallel_tools));
    sl_reqrender_int (root, "max_completion_tokens", req->max_tokens);
    sl_reqrender_real (root, "temperature", req->temperature);
    sl_reqrender_real (root, "top_p", req->top_p);
    if (req->top_k >= 0)
        sl_xlate_drop (x, "top_k");
    if (req->stop_count)
        json_object_set_new (root, "stop", sl_reqrender_strs (req->stop, req->stop_count));
    sl_reqrender_int (root, "seed", req->seed);
    sl_reqrender_real (root, "presence_penalty", req->presence_penalty);
    sl_reqrender_real (root, "frequency_penalty", req->frequency_penalty);
    if (req->format == SL_FORMAT_JSON)
        json_object_set_new (root, "response_format", json_pack ("{s:s}", "type", "json_object"));
    else
    if (req->format == SL_FORMAT_SCHEMA) {
        json_t *js = sl_reqrender_schema_format (req, NULL);
        if (req->format_strict)
            json_object_set_new (js, "strict", json_true ());
        json_object_set_new (root, "response_format", json_pack ("{s:s,s:o}", "type", "json_schema", "json_schema", js));
    }
    const char *effort = sl_effort_word (req, SL_EFFORT_NONE, SL_EFFORT_XHIGH, x);
    if (effort)
        json_object_set_new (root, "reasoning_effort", json_string (effort));
    if (req->user.ptr)
        json_object_set_new (root, "user", sl_reqrender_str (req->user));
    if (req->metadata)
        sl_xlate_drop (x, "metadata");
    json_object_set_new (root, "stream", json_true ());
    json_object_set_new (root, "stream_options", json_pack ("{s:b}", "include_usage", 1));
    return sl_reqrender_end (root, rc, out);
}
