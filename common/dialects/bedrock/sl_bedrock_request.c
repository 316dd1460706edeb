/*  sl_bedrock_request.c - the Converse request (Amazon Bedrock), rendered
    from any client's normalized request.

    The body of POST /model/{modelId}/converse-stream: the model is in the
    path, never in the body. Instructions are `system` text blocks (later
    ones too: Converse has no system message among the turns); turns are
    `messages` of `user` and `assistant` with content blocks `text`,
    `image` (bytes: Converse takes no image URL but an S3 location),
    `toolUse` (its input an object), `toolResult` (text, image and json
    content, status error), `reasoningContent` (reasoningText with its
    signature, or redactedContent) where Bedrock made it (sl_sig_for).
    Tools are toolConfig.tools[].toolSpec with inputSchema.json, the
    choice toolConfig.toolChoice (auto, any, tool; "none" has no Converse
    form: the tools are left out when no turn uses them, else dropped);
    sampling is inferenceConfig (maxTokens, temperature, topP,
    stopSequences); what Converse has no field for goes in
    additionalModelRequestFields when the model is Anthropic's (top_k,
    thinking), and is dropped for another's.

    Bedrock pairs tool calls and results strictly: every toolUse of an
    assistant turn has exactly one toolResult in the user turn right after
    it, and a toolResult answers a toolUse of the turn right before it;
    anything else fails upstream with a ValidationException. The request
    is checked before it goes:
      - a result repeated with the same content is sent once (repair,
        noted dropped: "a repeated tool result");
      - results out of their calls' order are put in it (repair, silent:
        nothing is lost);
      - a call without its result, a result without its call in the turn
        before, a result given twice with different content: refused,
        400, naming the id.
    Tool ids Converse does not take (sl_bedrock_tool_id) are rewritten the
    same way in a call and its result.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/dialects/sl_effort.h"
#include "common/dialects/sl_reqrender.h"
#include "common/dialects/bedrock/sl_bedrock.h"

#define S_BUDGET_MIN 1024               //  the smallest thinking budget Claude takes
#define S_ANTHROPIC_MODEL "anthropic."  //  Claude's model ids, and its inference profiles' ("us.anthropic.")
#define S_DIGEST_HEX 16                 //  hex digits of the digest ending a shortened id
#define S_FNV_OFFSET 14695981039346656037ull
#define S_FNV_PRIME 1099511628211ull

void
sl_bedrock_tool_id (sl_str_t id, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < id.len && n < SL_BEDROCK_ID_MAX; i++) {
        char c = id.ptr [i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
        out [n++] = ok ? c : '_';
    }
    if (id.len > SL_BEDROCK_ID_MAX) {
        //  Two long ids that share their start must stay two ids.
        uint64_t h = S_FNV_OFFSET;
        for (size_t i = 0; i < id.len; i++)
            h = (h ^ (uint8_t) id.ptr [i]) * S_FNV_PRIME;
        n = SL_BEDROCK_ID_MAX - S_DIGEST_HEX - 1;
        snprintf (out + n, SL_BEDROCK_ID_MAX + 1 - n, "_%016llx", (unsigned long long) h);
        return;
    }
    if (!n) {
        strcpy (out, "tooluse_none");
        return;
    }
    out [n] = 0;
}

static json_t *
s_id (sl_str_t id)
{
    char text [SL_BEDROCK_ID_MAX + 1];
    sl_bedrock_tool_id (id, text);
    return json_string (text);
}

//  Is the model Anthropic's (a model id or an inference profile's)?
static bool
s_claude (const sl_req_t *req)
{
    sl_str_t m = req->model;
    size_t n = strlen (S_ANTHROPIC_MODEL);
    for (size_t i = 0; m.ptr && i + n <= m.len; i++)
        if (memcmp (m.ptr + i, S_ANTHROPIC_MODEL, n) == 0 && (i == 0 || m.ptr [i - 1] == '.' || m.ptr [i - 1] == '/'))
            return true;
    return false;
}

//  An image as Converse takes it: its format and its bytes (base64 in
//  JSON). -1 refused: a URL, or a format Converse does not know.
static int
s_image (const sl_part_t *p, sl_xlate_t *x, json_t **out)
{
    static const char *const formats [] = { "png", "jpeg", "gif", "webp", NULL };
    if (p->url.ptr) {
        sl_str_t media, data;
        if (!sl_req_data_url (p->url, &media, &data))
            return sl_xlate_refuse (x, "an image by URL", "Converse takes an image's bytes, not its URL");
        sl_part_t inline_image = *p;
        inline_image.url = SL_STR_NULL;
        inline_image.media_type = media;
        inline_image.data = data;
        return s_image (&inline_image, x, out);
    }
    sl_str_t media = p->media_type;
    const char *format = NULL;
    for (int i = 0; formats [i] && !format; i++) {
        char name [32];
        snprintf (name, sizeof name, "image/%s", formats [i]);
        if (sl_str_eq (media, name))
            format = formats [i];
    }
    if (sl_str_eq (media, "image/jpg"))
        format = "jpeg";
    if (!format)
        return sl_xlate_refuse (x, "an image of this type", "Converse takes png, jpeg, gif and webp");
    *out = json_pack ("{s:{s:s,s:{s:o}}}", "image", "format", format, "source", "bytes", sl_reqrender_str (p->data));
    return 0;
}

static int
s_part_block (const sl_req_t *req, const sl_part_t *p, sl_xlate_t *x, json_t **out)
{
    (void) req;
    switch (p->kind) {
        case SL_PART_TEXT:
        case SL_PART_REFUSAL:
            if (p->text.len)            //  Converse refuses a blank text block
                *out = json_pack ("{s:o}", "text", sl_reqrender_str (p->text));
            return 0;
        case SL_PART_IMAGE:
            return s_image (p, x, out);
        case SL_PART_TOOL_CALL:
            *out = json_pack ("{s:{s:o,s:o,s:o}}", "toolUse", "toolUseId", s_id (p->id), "name",
                              sl_reqrender_str (p->name), "input", sl_reqrender_args (p, x));
            return 0;
        case SL_PART_TOOL_RESULT: {
            json_t *content = json_array ();
            for (size_t i = 0; i < p->content_count; i++) {
                const sl_part_t *c = &p->content [i];
                json_t *block = NULL;
                if (c->kind == SL_PART_TEXT) {
                    if (c->text.len)
                        block = json_pack ("{s:o}", "text", sl_reqrender_str (c->text));
                }
                else
                if (c->kind == SL_PART_IMAGE) {
                    if (s_image (c, x, &block)) {
                        json_decref (content);
                        return -1;
                    }
                }
                else {
                    json_decref (content);
                    return sl_xlate_refuse (x, "a tool result's content", "Converse takes text, images and JSON");
                }
                if (block)
                    json_array_append_new (content, block);
            }
            //  A result must say something: an empty one is an empty text.
            if (!json_array_size (content))
                json_array_append_new (content, json_pack ("{s:s}", "text", ""));
            *out = json_pack ("{s:{s:o,s:o}}", "toolResult", "toolUseId", s_id (p->id), "content", content);
            if (p->is_error)
                json_object_set_new (json_object_get (*out, "toolResult"), "status", json_string ("error"));
            return 0;
        }
        case SL_PART_THINKING: {
            sl_str_t sig = sl_sig_for ("bedrock", p->signature);
            if (!sig.ptr) {
                sl_xlate_drop (x, "thinking another provider signed");
                return 0;
            }
            *out = json_pack ("{s:{s:{s:o,s:o}}}", "reasoningContent", "reasoningText", "text",
                              sl_reqrender_str (p->text), "signature", sl_reqrender_str (sig));
            return 0;
        }
        case SL_PART_REDACTED: {
            sl_str_t data = sl_sig_for ("bedrock", p->text);
            if (!data.ptr) {
                sl_xlate_drop (x, "thinking another provider signed");
                return 0;
            }
            *out = json_pack ("{s:{s:o}}", "reasoningContent", "redactedContent", sl_reqrender_str (data));
            return 0;
        }
        default:
            return sl_reqrender_refuse_part (x, p, "Converse");
    }
}

static bool
s_is_result (json_t *block)
{
    return json_object_get (block, "toolResult") != NULL;
}

//  --------------------------------------------------------------------------
//  Bedrock's pairing of toolUse and toolResult

//  Refuse a request whose calls and results do not pair: 400, naming id.
static int
s_unpaired (sl_xlate_t *x, const char *id, const char *what)
{
    x->status = 400;
    x->type = "invalid_request_error";
    sl_buf_reset (&x->message);
    sl_buf_printf (&x->message, "tool call id '%s' %s; Amazon Bedrock (the upstream this model is routed to) "
                   "takes exactly one tool result for each tool call, in the message right after it", id, what);
    return -1;
}

static const char *
s_block_id (json_t *block, const char *kind)
{
    return json_string_value (json_object_get (json_object_get (block, kind), "toolUseId"));
}

//  The ids of the toolUse blocks of a turn (NULL: none), borrowed.
static size_t
s_calls (json_t *turn, const char **ids, size_t max)
{
    size_t n = 0, i;
    json_t *block;
    json_array_foreach (json_object_get (turn, "content"), i, block) {
        const char *id = s_block_id (block, "toolUse");
        if (id && n < max)
            ids [n++] = id;
    }
    return n;
}

//  Check and repair the results of the user turn `turn` against the calls
//  of the turn before it (ids, count). 0, or -1 refused.
static int
s_pair_turn (json_t *turn, const char **calls, size_t count, sl_xlate_t *x)
{
    json_t *content = json_object_get (turn, "content");
    json_t *results = json_object (), *others = json_array ();    //  results by id
    size_t i;
    json_t *block;
    int rc = 0;
    json_array_foreach (content, i, block) {
        const char *id = s_block_id (block, "toolResult");
        if (!id) {
            json_array_append (others, block);
            continue;
        }
        bool asked = false;
        for (size_t k = 0; k < count && !asked; k++)
            asked = strcmp (calls [k], id) == 0;
        if (!asked) {
            rc = s_unpaired (x, id, "has a tool result but no tool call in the message before it");
            break;
        }
        json_t *seen = json_object_get (results, id);
        if (seen && json_equal (seen, block)) {
            sl_xlate_drop (x, "a repeated tool result");
            continue;
        }
        if (seen) {
            rc = s_unpaired (x, id, "has two different tool results");
            break;
        }
        json_object_set (results, id, block);
    }
    for (size_t k = 0; rc == 0 && k < count; k++)
        if (!json_object_get (results, calls [k]))
            rc = s_unpaired (x, calls [k], "has no tool result in the message after it");
    if (rc == 0) {
        //  The results in their calls' order, then the rest of the turn.
        json_t *ordered = json_array ();
        for (size_t k = 0; k < count; k++)
            json_array_append (ordered, json_object_get (results, calls [k]));
        json_array_extend (ordered, others);
        json_object_set_new (turn, "content", ordered);
    }
    json_decref (results);
    json_decref (others);
    return rc;
}

#define S_CALLS_MAX 1024                //  tool calls of one turn checked by id

static int
s_pair (json_t *turns, sl_xlate_t *x)
{
    const char *calls [S_CALLS_MAX];
    size_t count = 0;
    for (size_t i = 0; i < json_array_size (turns); i++) {
        json_t *turn = json_array_get (turns, i);
        const char *role = json_string_value (json_object_get (turn, "role"));
        if (strcmp (role, "assistant") == 0) {
            if (count)                  //  two assistant turns are joined: never here
                return s_unpaired (x, calls [0], "has no tool result in the message after it");
            size_t n = s_calls (turn, calls, S_CALLS_MAX);
            if (n == S_CALLS_MAX)
                return sl_xlate_refuse (x, "more tool calls in one turn than sluice checks", NULL);
            count = n;
            continue;
        }
        if (s_pair_turn (turn, calls, count, x))
            return -1;
        count = 0;
    }
    if (count)
        return s_unpaired (x, calls [0], "has no tool result in the message after it");
    return 0;
}

//  --------------------------------------------------------------------------
//  The request

//  Instructions and turns; 0 or -1 refused.
static int
s_messages (const sl_req_t *req, sl_xlate_t *x, json_t *root)
{
    json_t *messages = json_array (), *system = json_array ();
    json_object_set_new (root, "messages", messages);
    for (size_t i = 0; i < req->message_count; i++) {
        const sl_message_t *m = &req->messages [i];
        if (m->role == SL_ROLE_SYSTEM) {
            for (size_t j = 0; j < m->count; j++) {
                const sl_part_t *p = &m->parts [j];
                if (p->kind != SL_PART_TEXT) {
                    json_decref (system);
                    return sl_xlate_refuse (x, "instructions that are not text", NULL);
                }
                if (p->text.len)
                    json_array_append_new (system, json_pack ("{s:o}", "text", sl_reqrender_str (p->text)));
            }
            continue;
        }
        json_t *blocks;
        if (sl_reqrender_blocks (req, m, s_part_block, x, &blocks)) {
            json_decref (system);
            return -1;
        }
        if (json_array_size (blocks))
            sl_reqrender_turn (messages, m->role == SL_ROLE_ASSISTANT ? "assistant" : "user", "content", blocks,
                               s_is_result);
        else
            json_decref (blocks);
    }
    if (json_array_size (system))
        json_object_set_new (root, "system", system);
    else
        json_decref (system);
    return s_pair (messages, x);
}

//  Does any turn hold a toolUse or toolResult block (then Converse wants
//  toolConfig declared)?
static bool
s_uses_tools (json_t *turns)
{
    size_t i, j;
    json_t *turn, *block;
    json_array_foreach (turns, i, turn)
        json_array_foreach (json_object_get (turn, "content"), j, block)
            if (json_object_get (block, "toolUse") || s_is_result (block))
                return true;
    return false;
}

//  Converse declares tools as {"toolSpec": {name, description, inputSchema: {json}}}.
static const sl_reqrender_tools_t s_render_tools = {
    .wrapper = "toolSpec",
    .schema = "inputSchema.json",
    .no_schema = "{\"type\":\"object\"}",
    .own = "Converse declares only the client's own tools",
};

//  Turns that use tools need them declared; a client that sent calls
//  and results but no tools (it stopped offering them) gets the names
//  its history uses declared with an open schema.
static void
s_history_tools (json_t *turns, json_t *tools, sl_xlate_t *x)
{
    json_t *named = json_object ();
    size_t i, j;
    json_t *turn, *block;
    json_array_foreach (turns, i, turn)
        json_array_foreach (json_object_get (turn, "content"), j, block) {
            const char *name = json_string_value (json_object_get (json_object_get (block, "toolUse"), "name"));
            if (name && !json_object_get (named, name)) {
                json_object_set_new (named, name, json_true ());
                json_array_append_new (tools, json_pack ("{s:{s:s,s:{s:{s:s}}}}", "toolSpec", "name", name,
                                                         "inputSchema", "json", "type", "object"));
            }
        }
    json_decref (named);
    sl_xlate_drop (x, "tool declarations made for the history");
}

static int
s_tool_config (const sl_req_t *req, sl_xlate_t *x, json_t *root)
{
    json_t *turns = json_object_get (root, "messages");
    bool history = s_uses_tools (turns);
    if (req->tool_choice == SL_CHOICE_NONE && !history)
        return 0;                       //  no tools offered: none can be called
    if (!req->tool_count && !history)
        return 0;
    json_t *tools = json_array ();
    json_t *config = json_pack ("{s:o}", "tools", tools);
    json_object_set_new (root, "toolConfig", config);
    if (req->tool_count) {
        if (sl_reqrender_tools (req, &s_render_tools, x, tools))
            return -1;
    }
    else
        s_history_tools (turns, tools, x);
    switch (req->tool_choice) {
        case SL_CHOICE_AUTO:
            json_object_set_new (config, "toolChoice", json_pack ("{s:{}}", "auto"));
            break;
        case SL_CHOICE_REQUIRED:
            json_object_set_new (config, "toolChoice", json_pack ("{s:{}}", "any"));
            break;
        case SL_CHOICE_TOOL:
            json_object_set_new (config, "toolChoice", json_pack ("{s:{s:o}}", "tool", "name",
                                                                  sl_reqrender_str (req->tool_choice_name)));
            break;
        case SL_CHOICE_NONE:
            sl_xlate_drop (x, "tool_choice none (the history uses tools)");
            break;
        default:
            break;
    }
    if (req->parallel_tools == 0)
        sl_xlate_drop (x, "parallel tool calls off");
    return 0;
}

//  The thinking budget to ask Claude for (the client's, or its effort's),
//  -1 for none.
static int64_t
s_budget (const sl_req_t *req, sl_xlate_t *x)
{
    if (req->thinking_off)
        return -1;
    if (req->budget >= 0)
        return req->budget < S_BUDGET_MIN ? S_BUDGET_MIN : req->budget;
    int effort = sl_effort_of (req, x);
    return effort == SL_EFFORT_NONE || effort == SL_EFFORT_UNSET ? -1 : sl_effort_budget (effort);
}

//  inferenceConfig, and for Claude what Converse has no field for.
static void
s_inference (const sl_req_t *req, sl_xlate_t *x, json_t *root)
{
    json_t *config = json_object ();
    json_t *extra = json_object ();
    bool claude = s_claude (req);
    int64_t max = req->max_tokens;
    int64_t budget = claude ? s_budget (req, x) : -1;
    if (!claude && (req->budget >= 0 || req->effort.ptr || req->thinking_adaptive))
        sl_xlate_drop (x, "reasoning settings (a model other than Claude)");
    if (budget >= 0) {
        if (max <= budget)
            max = budget + SL_XLATE_MAX_TOKENS;
        json_object_set_new (extra, "thinking", json_pack ("{s:s,s:I}", "type", "enabled", "budget_tokens",
                                                           (json_int_t) budget));
    }
    sl_reqrender_int (config, "maxTokens", max);
    bool thinks = budget >= 0;
    if (!isnan (req->temperature) && thinks)
        sl_xlate_drop (x, "temperature (with thinking)");
    else
        sl_reqrender_real (config, "temperature", req->temperature);
    if (!isnan (req->top_p) && thinks)
        sl_xlate_drop (x, "top_p (with thinking)");
    else
        sl_reqrender_real (config, "topP", req->top_p);
    if (req->stop_count)
        json_object_set_new (config, "stopSequences", sl_reqrender_strs (req->stop, req->stop_count));
    if (req->top_k >= 0) {
        if (claude && !thinks)
            json_object_set_new (extra, "top_k", json_integer (req->top_k));
        else
            sl_xlate_drop (x, "top_k");
    }
    if (req->seed >= 0)
        sl_xlate_drop (x, "seed");
    if (!isnan (req->presence_penalty) || !isnan (req->frequency_penalty))
        sl_xlate_drop (x, "penalties");
    if (req->user.ptr || req->metadata)
        sl_xlate_drop (x, "metadata");
    if (json_object_size (config))
        json_object_set_new (root, "inferenceConfig", config);
    else
        json_decref (config);
    if (json_object_size (extra))
        json_object_set_new (root, "additionalModelRequestFields", extra);
    else
        json_decref (extra);
}

int
sl_bedrock_render_request (const sl_req_t *req, sl_xlate_t *x, sl_buf_t *out)
{
    json_t *root = json_object ();
    int rc = s_messages (req, x, root);
    if (rc == 0 && req->format != SL_FORMAT_UNSET && req->format != SL_FORMAT_TEXT)
        rc = sl_xlate_refuse (x, "a JSON response format", "Converse has no response format");
    if (rc == 0)
        rc = s_tool_config (req, x, root);
    if (rc == 0)
        s_inference (req, x, root);
    return sl_reqrender_end (root, rc, out);
}
