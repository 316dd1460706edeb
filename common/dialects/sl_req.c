/*  sl_req.c - the normalized request (see sl_req.h). */
#include "common/dialects/sl_req.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/tools/sl_tooldef.h"

sl_req_t *
sl_req_new (int dialect, json_t *root)
{
    sl_req_t *self = sl_xcalloc (1, sizeof *self);
    self->dialect = dialect;
    self->root = root;
    self->parallel_tools = -1;
    self->temperature = NAN;
    self->top_p = NAN;
    self->top_k = -1;
    self->max_tokens = -1;
    self->seed = -1;
    self->presence_penalty = NAN;
    self->frequency_penalty = NAN;
    self->budget = -1;
    return self;
}

static void
s_parts_free (sl_part_t *parts, size_t count)
{
    for (size_t i = 0; i < count; i++)
        s_parts_free (parts [i].content, parts [i].content_count);
    free (parts);
}

void
sl_req_destroy (sl_req_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_req_t *self = *self_p;
    for (size_t i = 0; i < self->message_count; i++)
        s_parts_free (self->messages [i].parts, self->messages [i].count);
    free (self->messages);
    free (self->tools);
    free (self->stop);
    for (size_t i = 0; i < self->kept_count; i++)
        sl_buf_free (&self->kept [i]);
    free (self->kept);
    json_decref (self->owned);
    json_decref (self->root);
    free (self);
    *self_p = NULL;
}

//  Room for one more element of an array that holds count: arrays grow by
//  doubling (their capacity is the power of two at or above count), so a
//  request of many messages or parts costs linear time. Growing by one
//  each time copied the whole array at every add: 87,000 messages of a
//  legal 10 MiB request took 50 s to parse under the sanitizers, whose
//  allocator never grows a block in place.
static void *
s_room (void *array, size_t count, size_t size)
{
    if (count == 0)
        return sl_xrealloc (array, size);
    if ((count & (count - 1)) == 0)
        return sl_xrealloc (array, 2 * count * size);
    return array;
}

sl_message_t *
sl_req_add_message (sl_req_t *self, int role)
{
    self->messages = s_room (self->messages, self->message_count, sizeof (sl_message_t));
    sl_message_t *m = &self->messages [self->message_count++];
    memset (m, 0, sizeof *m);
    m->role = role;
    return m;
}

sl_message_t *
sl_req_last_message (sl_req_t *self, int role)
{
    if (self->message_count && self->messages [self->message_count - 1].role == role)
        return &self->messages [self->message_count - 1];
    return sl_req_add_message (self, role);
}

static sl_part_t *
s_add (sl_part_t **parts, size_t *count, int kind)
{
    *parts = s_room (*parts, *count, sizeof (sl_part_t));
    sl_part_t *p = &(*parts) [(*count)++];
    memset (p, 0, sizeof *p);
    p->kind = kind;
    return p;
}

sl_part_t *
sl_req_add_part (sl_message_t *message, int kind)
{
    return s_add (&message->parts, &message->count, kind);
}

sl_part_t *
sl_req_add_content (sl_part_t *result, int kind)
{
    return s_add (&result->content, &result->content_count, kind);
}

sl_tool_t *
sl_req_add_tool (sl_req_t *self)
{
    self->tools = s_room (self->tools, self->tool_count, sizeof (sl_tool_t));
    sl_tool_t *t = &self->tools [self->tool_count++];
    memset (t, 0, sizeof *t);
    return t;
}

void
sl_req_add_stop (sl_req_t *self, sl_str_t stop)
{
    self->stop = s_room (self->stop, self->stop_count, sizeof (sl_str_t));
    self->stop [self->stop_count++] = stop;
}

sl_str_t
sl_req_keep (sl_req_t *self, const char *data, size_t len)
{
    self->kept = s_room (self->kept, self->kept_count, sizeof (sl_buf_t));
    sl_buf_t *b = &self->kept [self->kept_count++];
    memset (b, 0, sizeof *b);
    sl_buf_append (b, data, len);
    sl_buf_cstr (b);
    return sl_buf_str (b);
}

void
sl_req_set_text (sl_part_t *part, json_t *value)
{
    part->text = sl_req_str (value);
    part->source = json_is_string (value) ? value : NULL;
}

void
sl_req_set_source (sl_part_t *result, json_t *holder, const char *key)
{
    result->source = json_is_object (holder) ? holder : NULL;
    result->source_key = key;
}

sl_str_t
sl_req_keep_json (sl_req_t *self, json_t *value)
{
    char *text = value ? json_dumps (value, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    sl_str_t kept = sl_req_keep (self, text ? text : "{}", text ? strlen (text) : 2);
    free (text);
    return kept;
}

json_t *
sl_req_own (sl_req_t *self, json_t *value)
{
    if (!value)
        return NULL;
    if (!self->owned)
        self->owned = json_array ();
    json_array_append_new (self->owned, value);
    return value;
}

void
sl_req_feature (sl_req_t *self, const char *name, bool matters)
{
    for (size_t i = 0; i < self->feature_count; i++)
        if (strcmp (self->features [i].name, name) == 0) {
            self->features [i].matters |= matters;
            return;
        }
    if (self->feature_count < SL_REQ_FEATURES_MAX)
        self->features [self->feature_count++] = (sl_feature_t) { name, matters };
    else
    if (matters)
        self->features [SL_REQ_FEATURES_MAX - 1] = (sl_feature_t) { name, true };
}

void
sl_req_field (sl_req_t *self, const char *key, const char *const *matters, const char *const *informative)
{
    for (const char *const *m = matters; m && *m; m++)
        if (strcmp (key, *m) == 0) {
            sl_req_feature (self, *m, true);
            return;
        }
    for (const char *const *i = informative; i && *i; i++)
        if (strcmp (key, *i) == 0) {
            sl_req_feature (self, *i, false);
            return;
        }
    sl_req_feature (self, SL_REQ_OTHER_FIELDS, false);
}

const sl_feature_t *
sl_req_mattering (const sl_req_t *self)
{
    for (size_t i = 0; i < self->feature_count; i++)
        if (self->features [i].matters)
            return &self->features [i];
    return NULL;
}

sl_str_t
sl_req_str (json_t *value)
{
    if (!json_is_string (value))
        return SL_STR_NULL;
    return sl_str_n (json_string_value (value), json_string_length (value));
}

double
sl_req_real (json_t *value)
{
    return json_is_number (value) ? json_number_value (value) : NAN;
}

int64_t
sl_req_int (json_t *value)
{
    if (json_is_integer (value) && json_integer_value (value) >= 0)
        return (int64_t) json_integer_value (value);
    if (json_is_real (value) && json_real_value (value) >= 0 && json_real_value (value) < 9e18
    &&  json_real_value (value) == floor (json_real_value (value)))
        return (int64_t) json_real_value (value);
    return -1;
}

bool
sl_req_data_url (sl_str_t url, sl_str_t *media_type, sl_str_t *data)
{
    if (!sl_str_starts (url, "data:"))
        return false;
    const char *comma = memchr (url.ptr, ',', url.len);
    const char *semi = comma ? memchr (url.ptr, ';', (size_t) (comma - url.ptr)) : NULL;
    if (!comma || !semi || (size_t) (comma - semi) != 7 || memcmp (semi, ";base64", 7) != 0)
        return false;
    *media_type = sl_str_n (url.ptr + 5, (size_t) (semi - url.ptr - 5));
    *data = sl_str_n (comma + 1, url.len - (size_t) (comma + 1 - url.ptr));
    return true;
}

void
sl_req_put_image_url (const sl_part_t *image, sl_buf_t *out)
{
    if (image->url.ptr) {
        sl_buf_append_str (out, image->url);
        return;
    }
    sl_buf_puts (out, "data:");
    sl_buf_append_str (out, image->media_type);
    sl_buf_puts (out, ";base64,");
    sl_buf_append_str (out, image->data);
}

void
sl_req_join (const sl_part_t *parts, size_t count, int kind, const char *sep, sl_buf_t *out)
{
    bool first = true;
    for (size_t i = 0; i < count; i++)
        if (parts [i].kind == kind) {
            if (!first)
                sl_buf_puts (out, sep);
            first = false;
            sl_buf_append_str (out, parts [i].text);
        }
}

bool
sl_req_has (const sl_part_t *parts, size_t count, int kind)
{
    for (size_t i = 0; i < count; i++)
        if (parts [i].kind == kind || sl_req_has (parts [i].content, parts [i].content_count, kind))
            return true;
    return false;
}

void
sl_req_result_text (const sl_part_t *result, bool mark_error, sl_buf_t *out)
{
    if (mark_error && result->is_error)
        sl_buf_puts (out, "Error: ");
    sl_req_join (result->content, result->content_count, SL_PART_TEXT, "\n", out);
}

//  Has a result for this call come in messages [from, to)?
static bool
s_answered (const sl_req_t *self, size_t from, size_t to, sl_str_t id)
{
    for (size_t k = from; k < to && k < self->message_count; k++)
        for (size_t l = 0; l < self->messages [k].count; l++)
            if (self->messages [k].parts [l].kind == SL_PART_TOOL_RESULT
            &&  sl_str_eq_str (self->messages [k].parts [l].id, id))
                return true;
    return false;
}

sl_str_t
sl_req_open_call (const sl_req_t *self, size_t before, sl_str_t name)
{
    //  The latest turn with calls of that name; in it, the first call no
    //  result answered yet (results come in the order of their calls).
    size_t end = before < self->message_count ? before : self->message_count;
    for (size_t i = end; i-- > 0;) {
        const sl_message_t *m = &self->messages [i];
        for (size_t j = 0; j < m->count; j++) {
            const sl_part_t *call = &m->parts [j];
            if (call->kind == SL_PART_TOOL_CALL && sl_str_eq_str (call->name, name)
            &&  !s_answered (self, i, end + 1, call->id))
                return call->id;
        }
    }
    return SL_STR_NULL;
}

//  --------------------------------------------------------------------------
//  What the judge reads

//  A description cut to at most max bytes, on a character boundary.
static sl_str_t
s_cut (sl_str_t s, size_t max)
{
    if (s.len <= max)
        return s;
    size_t n = max;
    while (n > 0 && ((unsigned char) s.ptr [n] & 0xC0) == 0x80)
        n--;
    return sl_str_n (s.ptr, n);
}

//  One definition: what the judge checks calls against (name, schema)
//  and what the inventory records (description, server, tool, digest).
static void
s_tool_json (const sl_tool_t *t, sl_toolcache_t *cache, sl_buf_t *out)
{
    json_t *declared = t->declared ? t->declared : t->schema;
    char *text = declared ? json_dumps (declared, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
    sl_str_t schema_text = sl_str (text ? text : "");
    char digest [SL_TOOLDEF_DIGEST_SIZE];
    sl_toolcache_digest (cache, t->name, t->description, t->schema, schema_text, digest);
    //  Over the bound the definition travels cut: the description first,
    //  the schema too when it alone is over (the judge then cannot check
    //  calls against it, and says so).
    bool schema_fits = schema_text.len <= SL_TOOLDEF_TRAVEL_MAX;
    size_t room = SL_TOOLDEF_TRAVEL_MAX - (schema_fits ? schema_text.len : 0);
    sl_str_t description = s_cut (t->description, room);
    bool truncated = !schema_fits || description.len < t->description.len;
    sl_buf_puts (out, "{\"name\":");
    sl_json_put_sl (out, t->name);
    if (schema_fits) {
        sl_buf_puts (out, ",\"schema\":");
        sl_buf_puts (out, json_is_object (declared) ? text : "{}");
    }
    free (text);
    if (t->description.ptr) {
        sl_buf_puts (out, ",\"description\":");
        sl_json_put_sl (out, description);
    }
    sl_toolname_t parts;
    sl_tooldef_name (t->name, &parts);
    if (parts.server.ptr) {
        sl_buf_puts (out, ",\"server\":");
        sl_json_put_sl (out, parts.server);
    }
    sl_buf_puts (out, ",\"tool\":");
    sl_json_put_sl (out, parts.tool);
    sl_buf_printf (out, ",\"digest\":\"%s\"", digest);
    if (truncated)
        sl_buf_puts (out, ",\"truncated\":true");
    sl_buf_putc (out, '}');
}

void
sl_req_tools_json (const sl_req_t *self, sl_toolcache_t *cache, sl_buf_t *out)
{
    sl_buf_putc (out, '[');
    bool first = true;
    for (size_t i = 0; i < self->tool_count; i++) {
        const sl_tool_t *t = &self->tools [i];
        if (!t->name.ptr)
            continue;
        if (!first)
            sl_buf_putc (out, ',');
        first = false;
        s_tool_json (t, cache, out);
    }
    sl_buf_putc (out, ']');
}

void
sl_req_last_user (const sl_req_t *self, sl_buf_t *out)
{
    for (size_t i = self->message_count; i-- > 0;) {
        const sl_message_t *m = &self->messages [i];
        if (m->role != SL_ROLE_USER)
            continue;
        bool results_only = m->count > 0;
        for (size_t j = 0; j < m->count; j++)
            if (m->parts [j].kind != SL_PART_TOOL_RESULT)
                results_only = false;
        if (results_only)
            continue;
        for (size_t j = 0; j < m->count; j++)
            if (m->parts [j].kind == SL_PART_TEXT) {
                if (out->len)
                    sl_buf_putc (out, '\n');
                sl_buf_append_str (out, m->parts [j].text);
            }
        return;
    }
}

sl_str_t
sl_req_call_name (const sl_req_t *self, sl_str_t call_id)
{
    for (size_t i = self->message_count; call_id.ptr && i-- > 0;) {
        const sl_message_t *m = &self->messages [i];
        for (size_t j = 0; j < m->count; j++)
            if (m->parts [j].kind == SL_PART_TOOL_CALL && sl_str_eq_str (m->parts [j].id, call_id))
                return m->parts [j].name;
    }
    return SL_STR_NULL;
}

//  --------------------------------------------------------------------------
//  Changes a request policy makes

//  Rewrite every string inside a JSON value (not its keys). True when
//  anything changed.
static bool
s_edit_strings (json_t *value, sl_req_edit_fn *fn, void *arg, int depth)
{
    bool changed = false;
    if (depth > 64)
        return false;                   //  jansson's own nesting limit is lower
    if (json_is_string (value)) {
        sl_buf_t out = { 0 };
        if (fn (arg, sl_req_str (value), &out)) {
            json_string_setn_nocheck (value, out.data ? out.data : "", out.len);
            changed = true;
        }
        sl_buf_free (&out);
    }
    else
    if (json_is_object (value)) {
        const char *key;
        json_t *member;
        json_object_foreach (value, key, member)
            changed |= s_edit_strings (member, fn, arg, depth + 1);
    }
    else
    if (json_is_array (value)) {
        size_t i;
        json_t *elem;
        json_array_foreach (value, i, elem)
            changed |= s_edit_strings (elem, fn, arg, depth + 1);
    }
    return changed;
}

bool
sl_req_edit_text (sl_req_t *self, sl_part_t *part, sl_req_edit_fn *fn, void *arg)
{
    bool changed;
    if (json_is_string (part->source)) {
        changed = s_edit_strings (part->source, fn, arg, 0);
        if (changed)
            part->text = sl_req_str (part->source);
    }
    else
    if (part->source) {
        changed = s_edit_strings (part->source, fn, arg, 0);
        if (changed)
            part->text = sl_req_keep_json (self, part->source);
    }
    else {
        //  Made up by the parser: the model changes, the body cannot.
        sl_buf_t out = { 0 };
        changed = fn (arg, part->text, &out);
        if (changed) {
            part->text = sl_req_keep (self, out.data ? out.data : "", out.len);
            self->edited_unsourced = true;
        }
        sl_buf_free (&out);
    }
    self->edited |= changed;
    return changed;
}

void
sl_req_replace_result (sl_req_t *self, sl_part_t *result, const char *text)
{
    sl_str_t kept = sl_req_keep (self, text, strlen (text));
    s_parts_free (result->content, result->content_count);
    result->content = NULL;
    result->content_count = 0;
    sl_part_t *p = sl_req_add_content (result, SL_PART_TEXT);
    p->text = kept;
    if (result->source && result->source_key) {
        json_t *old = json_object_get (result->source, result->source_key);
        json_t *notice = json_string (text);
        if (json_is_object (old)) {
            json_t *wrapped = json_object ();
            json_object_set_new (wrapped, "output", notice);
            notice = wrapped;
        }
        json_object_set_new (result->source, result->source_key, notice);
        //  The tree owns the new value; the part reads the kept copy.
    }
    else
        self->edited_unsourced = true;
    self->edited = true;
}

//  --------------------------------------------------------------------------
//  The whole model as JSON

static const char *s_roles [] = { "?", "system", "user", "assistant" };
_Static_assert (sizeof s_roles / sizeof s_roles [0] == SL_ROLE_ASSISTANT + 1, "a name for every role");
static const char *s_kinds [] = {
    "?", "text", "image", "tool_call", "tool_result", "thinking", "redacted_thinking", "refusal", "opaque"
};
_Static_assert (sizeof s_kinds / sizeof s_kinds [0] == SL_PART_MAX, "a name for every part kind");

static void
s_field (sl_buf_t *out, const char *key, sl_str_t value)
{
    if (!value.ptr)
        return;
    sl_buf_printf (out, ",\"%s\":", key);
    sl_json_put_sl (out, value);
}

static void
s_value (sl_buf_t *out, const char *key, json_t *value)
{
    if (!value)
        return;
    char *text = json_dumps (value, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
    sl_buf_printf (out, ",\"%s\":%s", key, text ? text : "null");
    free (text);
}

static void
s_real (sl_buf_t *out, const char *key, double value)
{
    if (!isnan (value))
        sl_buf_printf (out, ",\"%s\":%.17g", key, value);
}

static void
s_int (sl_buf_t *out, const char *key, int64_t value)
{
    if (value >= 0)
        sl_buf_printf (out, ",\"%s\":%lld", key, (long long) value);
}

static void
s_dump_parts (const sl_part_t *parts, size_t count, sl_buf_t *out)
{
    sl_buf_putc (out, '[');
    for (size_t i = 0; i < count; i++) {
        const sl_part_t *p = &parts [i];
        sl_buf_printf (out, "%s{\"kind\":\"%s\"", i ? "," : "",
                       p->kind > 0 && p->kind < SL_PART_MAX ? s_kinds [p->kind] : "?");
        s_field (out, "text", p->text);
        s_field (out, "id", p->id);
        s_field (out, "name", p->name);
        if (p->arguments.ptr) {
            //  Arguments compared as JSON, whatever their spacing.
            json_t *args = json_loadb (p->arguments.ptr, p->arguments.len, JSON_DECODE_ANY, NULL);
            if (args) {
                s_value (out, "arguments", args);
                json_decref (args);
            }
            else
                s_field (out, "arguments", p->arguments);
        }
        s_field (out, "signature", p->signature);
        s_field (out, "url", p->url);
        s_field (out, "media_type", p->media_type);
        s_field (out, "data", p->data);
        if (p->is_error)
            sl_buf_puts (out, ",\"is_error\":true");
        if (p->kind == SL_PART_TOOL_RESULT) {
            sl_buf_puts (out, ",\"content\":");
            s_dump_parts (p->content, p->content_count, out);
        }
        sl_buf_putc (out, '}');
    }
    sl_buf_putc (out, ']');
}

void
sl_req_dump (const sl_req_t *self, sl_buf_t *out)
{
    static const char *choices [] = { "unset", "auto", "none", "required", "tool" };
    static const char *formats [] = { "unset", "text", "json", "schema" };
    sl_buf_puts (out, "{\"model\":");
    sl_json_put_sl (out, self->model);
    sl_buf_printf (out, ",\"stream\":%s,\"include_usage\":%s,\"messages\":[",
                   self->stream ? "true" : "false", self->include_usage ? "true" : "false");
    for (size_t i = 0; i < self->message_count; i++) {
        const sl_message_t *m = &self->messages [i];
        sl_buf_printf (out, "%s{\"role\":\"%s\",\"parts\":", i ? "," : "",
                       m->role > 0 && m->role <= SL_ROLE_ASSISTANT ? s_roles [m->role] : "?");
        s_dump_parts (m->parts, m->count, out);
        sl_buf_putc (out, '}');
    }
    sl_buf_puts (out, "],\"tools\":[");
    for (size_t i = 0; i < self->tool_count; i++) {
        const sl_tool_t *t = &self->tools [i];
        sl_buf_puts (out, i ? ",{\"strict\":" : "{\"strict\":");
        sl_buf_puts (out, t->strict ? "true" : "false");
        s_field (out, "name", t->name);
        s_field (out, "description", t->description);
        s_value (out, "schema", t->schema);
        s_field (out, "server", t->server);
        sl_buf_putc (out, '}');
    }
    sl_buf_printf (out, "],\"tool_choice\":\"%s\"",
                   self->tool_choice >= 0 && self->tool_choice <= SL_CHOICE_TOOL ? choices [self->tool_choice] : "?");
    s_field (out, "tool_choice_name", self->tool_choice_name);
    if (self->parallel_tools >= 0)
        sl_buf_printf (out, ",\"parallel_tools\":%s", self->parallel_tools ? "true" : "false");
    s_real (out, "temperature", self->temperature);
    s_real (out, "top_p", self->top_p);
    s_int (out, "top_k", self->top_k);
    s_int (out, "max_tokens", self->max_tokens);
    if (self->stop_count) {
        sl_buf_puts (out, ",\"stop\":[");
        for (size_t i = 0; i < self->stop_count; i++) {
            if (i)
                sl_buf_putc (out, ',');
            sl_json_put_sl (out, self->stop [i]);
        }
        sl_buf_putc (out, ']');
    }
    s_int (out, "seed", self->seed);
    s_real (out, "presence_penalty", self->presence_penalty);
    s_real (out, "frequency_penalty", self->frequency_penalty);
    sl_buf_printf (out, ",\"format\":\"%s\"",
                   self->format >= 0 && self->format <= SL_FORMAT_SCHEMA ? formats [self->format] : "?");
    s_value (out, "format_schema", self->format_schema);
    s_field (out, "format_name", self->format_name);
    if (self->format_strict)
        sl_buf_puts (out, ",\"format_strict\":true");
    s_field (out, "effort", self->effort);
    s_int (out, "budget", self->budget);
    if (self->thinking_off)
        sl_buf_puts (out, ",\"thinking_off\":true");
    if (self->thinking_adaptive)
        sl_buf_puts (out, ",\"thinking_adaptive\":true");
    s_field (out, "user", self->user);
    s_value (out, "metadata", self->metadata);
    sl_buf_puts (out, ",\"features\":[");
    for (size_t i = 0; i < self->feature_count; i++) {
        sl_buf_printf (out, "%s{\"name\":", i ? "," : "");
        sl_json_put_str (out, self->features [i].name, strlen (self->features [i].name));
        sl_buf_printf (out, ",\"matters\":%s}", self->features [i].matters ? "true" : "false");
    }
    sl_buf_puts (out, "]}");
}

//  --------------------------------------------------------------------------
//  Translation

int
sl_xlate_refuse (sl_xlate_t *x, const char *feature, const char *why)
{
    x->status = 400;
    x->type = "invalid_request_error";
    sl_buf_reset (&x->message);
    sl_buf_printf (&x->message, "%s cannot cross from a %s client to the %s upstream this model is routed to",
                   feature, x->from ? x->from : "?", x->to ? x->to : "?");
    if (why && *why)
        sl_buf_printf (&x->message, ": %s", why);
    return -1;
}

void
sl_xlate_drop (sl_xlate_t *x, const char *feature)
{
    for (size_t i = 0; i < x->drop_count; i++)
        if (strcmp (x->dropped [i], feature) == 0)
            return;
    if (x->drop_count < SL_XLATE_DROPS_MAX)
        x->dropped [x->drop_count++] = feature;
}

void
sl_xlate_clear (sl_xlate_t *x)
{
    sl_buf_free (&x->message);
    memset (x, 0, sizeof *x);
}

void
sl_sig_tag (const char *upstream, sl_str_t sig, sl_buf_t *out)
{
    sl_buf_puts (out, SL_SIG_TAG);
    sl_buf_puts (out, upstream);
    sl_buf_putc (out, ':');
    sl_buf_append_str (out, sig);
}

sl_str_t
sl_sig_for (const char *upstream, sl_str_t sig)
{
    size_t tag = strlen (SL_SIG_TAG), n = strlen (upstream);
    if (!sig.ptr || sig.len <= tag + n + 1 || memcmp (sig.ptr, SL_SIG_TAG, tag) != 0
    ||  memcmp (sig.ptr + tag, upstream, n) != 0 || sig.ptr [tag + n] != ':')
        return SL_STR_NULL;
    return sl_str_n (sig.ptr + tag + n + 1, sig.len - tag - n - 1);
}
