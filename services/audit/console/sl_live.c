/*  sl_live.c - the live view and its events (see sl_live.h).

    Each stream keeps the JSON of its events (start, calls, finish, error,
    end) as they were sent, so a snapshot is those texts put together:
    what a page that watched from the beginning would have seen.
*/
#include "services/audit/console/sl_live.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/base/sl_sidmap.h"
#include "common/dialects/sl_dialect.h"
#include "services/audit/console/sl_console_role.h"
#include "services/audit/store/sl_approval.h"

typedef struct {
    uint8_t sid [SL_SID_SIZE];
    int64_t started_at;
    int64_t last_at;
    char *start;                        //  the start event's JSON, or NULL
    char *calls [SL_LIVE_MAX_CALLS];
    int call_count;
    char *finish;
    char *error;
    char *end;
    char *model, *provider, *client_key, *client;
} s_stream_t;

struct _sl_live_t {
    sl_sidmap_t *streams;               //  in flight
    s_stream_t *recent [SL_LIVE_RECENT];    //  finished, newest at recent_head - 1
    size_t recent_head;
    size_t recent_count;
    sl_buf_t json;                      //  scratch: an event's data
};

static void
s_stream_free (s_stream_t *s)
{
    if (!s)
        return;
    free (s->start);
    for (int i = 0; i < s->call_count; i++)
        free (s->calls [i]);
    free (s->finish);
    free (s->error);
    free (s->end);
    free (s->model);
    free (s->provider);
    free (s->client_key);
    free (s->client);
    free (s);
}

sl_live_t *
sl_live_new (void)
{
    sl_live_t *self = sl_xcalloc (1, sizeof *self);
    self->streams = sl_sidmap_new ();
    return self;
}

void
sl_live_destroy (sl_live_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_live_t *self = *self_p;
    size_t cursor = 0;
    s_stream_t *s;
    while ((s = sl_sidmap_next (self->streams, &cursor, NULL)))
        s_stream_free (s);
    sl_sidmap_destroy (&self->streams);
    for (size_t i = 0; i < SL_LIVE_RECENT; i++)
        s_stream_free (self->recent [i]);
    sl_buf_free (&self->json);
    free (self);
    *self_p = NULL;
}

size_t
sl_live_streams (sl_live_t *self)
{
    return sl_sidmap_size (self->streams);
}

//  --------------------------------------------------------------------------
//  JSON

static void
s_str (sl_buf_t *out, const char *key, sl_str_t value)
{
    sl_buf_printf (out, ",\"%s\":", key);
    if (value.ptr)
        sl_json_put_sl (out, value);
    else
        sl_buf_puts (out, "null");
}

//  A preview: at most SL_LIVE_PREVIEW bytes, cut on a character boundary.
static void
s_preview (sl_buf_t *out, const char *key, sl_str_t value)
{
    if (value.ptr && value.len > SL_LIVE_PREVIEW) {
        size_t n = SL_LIVE_PREVIEW;
        while (n > 0 && ((unsigned char) value.ptr [n] & 0xC0) == 0x80)
            n--;
        value.len = n;
    }
    s_str (out, key, value);
}

static void
s_begin (sl_buf_t *out, const sl_record_meta_t *meta, const sl_msg_t *msg, bool stream)
{
    sl_buf_reset (out);
    sl_buf_printf (out, "{\"at\":%lld", (long long) meta->at);
    if (stream) {
        char hex [SL_SID_HEX_SIZE];
        sl_sid_hex (msg->sid, hex);
        sl_buf_printf (out, ",\"sid\":\"%s\"", hex);
    }
}

static char *
s_copy (sl_str_t s)
{
    return s.ptr ? sl_xstrndup (s.ptr, s.len) : NULL;
}

static void
s_event (sl_buf_t *out, const char *type, sl_buf_t *json)
{
    sl_buf_printf (out, "event: %s\ndata: ", type);
    sl_buf_append_str (out, sl_buf_str (json));
    sl_buf_puts (out, "\n\n");
}

//  --------------------------------------------------------------------------
//  Streams

static s_stream_t *
s_evict_oldest (sl_live_t *self)
{
    size_t cursor = 0;
    s_stream_t *s, *oldest = NULL;
    while ((s = sl_sidmap_next (self->streams, &cursor, NULL)))
        if (!oldest || s->last_at < oldest->last_at)
            oldest = s;
    if (oldest)
        sl_sidmap_remove (self->streams, oldest->sid);
    return oldest;
}

static s_stream_t *
s_stream (sl_live_t *self, const sl_msg_t *msg, int64_t at)
{
    s_stream_t *s = sl_sidmap_get (self->streams, msg->sid);
    if (!s) {
        if (sl_sidmap_size (self->streams) >= SL_LIVE_MAX_STREAMS)
            s_stream_free (s_evict_oldest (self));
        s = sl_xcalloc (1, sizeof *s);
        memcpy (s->sid, msg->sid, SL_SID_SIZE);
        s->started_at = at;
        sl_sidmap_put (self->streams, msg->sid, s);
    }
    s->last_at = at;
    return s;
}

static void
s_finished (sl_live_t *self, s_stream_t *s)
{
    sl_sidmap_remove (self->streams, s->sid);
    s_stream_free (self->recent [self->recent_head]);
    self->recent [self->recent_head] = s;
    self->recent_head = (self->recent_head + 1) % SL_LIVE_RECENT;
    if (self->recent_count < SL_LIVE_RECENT)
        self->recent_count++;
}

void
sl_live_feed (sl_live_t *self, const sl_record_meta_t *meta, const sl_msg_t *msg, sl_buf_t *out)
{
    sl_buf_t *j = &self->json;
    switch (msg->type) {
        case SL_MSG_START: {
            s_stream_t *s = s_stream (self, msg, meta->at);
            s->started_at = meta->at;
            s_begin (j, meta, msg, true);
            const char *client = msg->client_dialect ? sl_dialect_name (msg->client_dialect) : NULL;
            s_str (j, "model", msg->model);
            s_str (j, "provider", msg->provider);
            s_str (j, "client", sl_str (client));
            s_str (j, "client_key", msg->key_id);
            s_str (j, "team", msg->team);
            s_str (j, "user", msg->user);
            sl_buf_puts (j, ",\"tools\":[");
            sl_json_iter_t it;
            sl_str_t tool, name;
            bool first = true;
            if (msg->tools.ptr && sl_json_array (&it, msg->tools) == 0)
                while (sl_json_next_elem (&it, &tool) == 1)
                    if (sl_json_find (tool, "name", &name) == 1 && sl_json_type (name) == SL_JSON_STRING) {
                        if (!first)
                            sl_buf_putc (j, ',');
                        sl_buf_append_str (j, name);
                        first = false;
                    }
            sl_buf_putc (j, ']');
            s_preview (j, "last_user", msg->last_user);
            sl_buf_putc (j, '}');
            free (s->start);
            s->start = sl_xstrdup (sl_buf_cstr (j));
            free (s->model);
            free (s->provider);
            free (s->client_key);
            free (s->client);
            s->model = s_copy (msg->model);
            s->provider = s_copy (msg->provider);
            s->client_key = s_copy (msg->key_id);
            s->client = client ? sl_xstrdup (client) : NULL;
            s_event (out, "start", j);
            break;
        }
        case SL_MSG_VERDICT: {
            s_stream_t *s = s_stream (self, msg, meta->at);
            s_begin (j, meta, msg, true);
            sl_buf_printf (j, ",\"index\":%d", msg->index);
            s_str (j, "tool", msg->name);
            s_str (j, "id", msg->id);
            s_str (j, "action", sl_str (sl_action_name (msg->action)));
            s_str (j, "check", sl_str (sl_check_name (msg->check)));
            s_str (j, "rule", msg->rule);
            s_preview (j, "reason", msg->reason);
            s_str (j, "judge_model", msg->judge_model);
            s_str (j, "team", msg->team);
            s_str (j, "user", msg->user);
            if (!isnan (msg->probability))
                sl_buf_printf (j, ",\"probability\":%.4f", msg->probability);
            sl_buf_printf (j, ",\"latency_us\":%u", msg->latency_us);
            s_preview (j, "arguments", msg->text);
            sl_buf_putc (j, '}');
            if (s->call_count < SL_LIVE_MAX_CALLS)
                s->calls [s->call_count++] = sl_xstrdup (sl_buf_cstr (j));
            s_event (out, "call", j);
            break;
        }
        case SL_MSG_BLOCK: {
            if (msg->kind != SL_B_END && msg->kind != SL_B_FINISH)
                return;
            s_stream_t *s = s_stream (self, msg, meta->at);
            s_begin (j, meta, msg, true);
            if (msg->kind == SL_B_FINISH) {
                s_str (j, "finish", sl_str (msg->finish ? sl_finish_name (msg->finish) : NULL));
                if (msg->has_usage && msg->usage.input >= 0)
                    sl_buf_printf (j, ",\"usage_in\":%lld", (long long) msg->usage.input);
                if (msg->has_usage && msg->usage.output >= 0)
                    sl_buf_printf (j, ",\"usage_out\":%lld", (long long) msg->usage.output);
                sl_buf_putc (j, '}');
                free (s->finish);
                s->finish = sl_xstrdup (sl_buf_cstr (j));
                s_event (out, "finish", j);
                break;
            }
            sl_buf_printf (j, ",\"index\":%d", msg->index);
            s_str (j, "kind", sl_str (sl_block_kind_name (msg->block)));
            s_str (j, "name", msg->name);
            sl_buf_printf (j, ",\"replaced\":%s", (msg->flags & SL_F_REPLACED) ? "true" : "false");
            s_str (j, "incomplete", (msg->flags & SL_F_INCOMPLETE) ? (msg->code.ptr ? msg->code : SL_STR_LIT ("error"))
                                                                     : SL_STR_NULL);
            s_preview (j, "text", msg->text.ptr ? msg->text : msg->body);
            sl_buf_putc (j, '}');
            s_event (out, "block", j);
            break;
        }
        case SL_MSG_ERROR: {
            s_stream_t *s = s_stream (self, msg, meta->at);
            s_begin (j, meta, msg, true);
            s_str (j, "code", msg->code);
            s_preview (j, "message", msg->message);
            if (msg->status)
                sl_buf_printf (j, ",\"status\":%d", msg->status);
            sl_buf_putc (j, '}');
            free (s->error);
            s->error = sl_xstrdup (sl_buf_cstr (j));
            s_event (out, "error", j);
            break;
        }
        case SL_MSG_END: {
            s_stream_t *s = s_stream (self, msg, meta->at);
            s_begin (j, meta, msg, true);
            sl_buf_printf (j, ",\"duration_ms\":%lld}", (long long) (meta->at - s->started_at));
            free (s->end);
            s->end = sl_xstrdup (sl_buf_cstr (j));
            s_event (out, "end", j);
            s_finished (self, s);
            break;
        }
        case SL_MSG_GAP: {
            s_begin (j, meta, msg, false);
            s_str (j, "emitter", meta->emitter);
            sl_buf_printf (j, ",\"lost\":%llu,\"streams\":%zu}", (unsigned long long) msg->count,
                           msg->body.len / SL_SID_SIZE);
            s_event (out, "gap", j);
            break;
        }
        case SL_MSG_POLICY: {
            s_begin (j, meta, msg, false);
            s_str (j, "judge", msg->instance);
            s_str (j, "policy", msg->policy);
            s_str (j, "name", msg->name);
            sl_buf_printf (j, ",\"failures\":%llu", (unsigned long long) msg->count);
            s_preview (j, "last_error", msg->message);
            sl_buf_putc (j, '}');
            s_event (out, "policy", j);
            break;
        }
        case SL_MSG_APPROVAL: {
            //  Whole, not a preview: the Pending page decides on it.
            sl_approval_t a;
            sl_approval_from_msg (msg, &a);
            sl_buf_reset (j);
            sl_approval_json (&a, j);
            s_event (out, "approval", j);
            break;
        }
        default:
            break;
    }
}

static void
s_stream_json (const s_stream_t *s, sl_buf_t *out)
{
    char hex [SL_SID_HEX_SIZE];
    sl_sid_hex (s->sid, hex);
    sl_buf_printf (out, "{\"sid\":\"%s\",\"started_at\":%lld,\"start\":%s,\"calls\":[", hex,
                   (long long) s->started_at, s->start ? s->start : "null");
    for (int i = 0; i < s->call_count; i++)
        sl_buf_printf (out, "%s%s", i ? "," : "", s->calls [i]);
    sl_buf_printf (out, "],\"finish\":%s,\"error\":%s,\"end\":%s}", s->finish ? s->finish : "null",
                   s->error ? s->error : "null", s->end ? s->end : "null");
}

static int
s_by_start (const void *a, const void *b)
{
    const s_stream_t *x = *(s_stream_t *const *) a, *y = *(s_stream_t *const *) b;
    return x->started_at < y->started_at ? -1 : x->started_at > y->started_at;
}

void
sl_live_snapshot (sl_live_t *self, sl_buf_t *out)
{
    size_t count;
    void **all = sl_sidmap_values (self->streams, &count);
    qsort (all, count, sizeof (void *), s_by_start);
    sl_buf_puts (out, "{\"streams\":[");
    for (size_t i = 0; i < count; i++) {
        if (i)
            sl_buf_putc (out, ',');
        s_stream_json (all [i], out);
    }
    free (all);
    sl_buf_puts (out, "],\"recent\":[");
    for (size_t i = 0; i < self->recent_count; i++) {
        size_t at = (self->recent_head + SL_LIVE_RECENT - 1 - i) % SL_LIVE_RECENT;
        if (i)
            sl_buf_putc (out, ',');
        s_stream_json (self->recent [at], out);
    }
    sl_buf_puts (out, "]}");
}

void
sl_live_tick (sl_live_t *self, int64_t now_ms)
{
    size_t cursor = 0;
    s_stream_t *s;
    //  Collect first: removing while walking the map would skip entries.
    s_stream_t *idle [64];
    size_t n = 0;
    while (n < 64 && (s = sl_sidmap_next (self->streams, &cursor, NULL)))
        if (s->last_at < now_ms - SL_LIVE_IDLE_MS)
            idle [n++] = s;
    for (size_t i = 0; i < n; i++) {
        sl_sidmap_remove (self->streams, idle [i]->sid);
        s_stream_free (idle [i]);
    }
}

void
sl_live_context (sl_live_t *self, const uint8_t *sid, sl_live_context_t *out)
{
    memset (out, 0, sizeof *out);
    s_stream_t *s = sl_sidmap_get (self->streams, sid);
    for (size_t i = 0; !s && i < self->recent_count; i++) {
        s_stream_t *r = self->recent [(self->recent_head + SL_LIVE_RECENT - 1 - i) % SL_LIVE_RECENT];
        if (r && memcmp (r->sid, sid, SL_SID_SIZE) == 0)
            s = r;
    }
    if (!s)
        return;
    out->model = s->model;
    out->provider = s->provider;
    out->client_key = s->client_key;
    out->client = s->client;
}

//  One data line's JSON without contents, marked redacted: appended to
//  out with its "data: " and newline. false (nothing appended) when it
//  is no JSON object.
static bool
s_redact_data (sl_str_t json, sl_buf_t *out)
{
    json_t *root = json_loadb (json.ptr, json.len, 0, NULL);
    char *text = NULL;
    if (json_is_object (root)) {
        sl_console_role_redact (root);
        json_object_set_new (root, "redacted", json_true ());
        text = json_dumps (root, JSON_COMPACT);
    }
    json_decref (root);
    if (text) {
        sl_buf_puts (out, "data: ");
        sl_buf_puts (out, text);
        sl_buf_putc (out, '\n');
    }
    free (text);
    return text != NULL;
}

void
sl_live_redact (sl_str_t sse, sl_buf_t *out)
{
    const sl_str_t data = SL_STR_LIT ("data: ");
    const char *p = sse.ptr, *end = sse.ptr + sse.len;
    while (p && p < end) {
        const char *nl = memchr (p, '\n', (size_t) (end - p));
        const char *stop = nl ? nl + 1 : end;
        sl_str_t line = { p, (size_t) (stop - p) };
        if (line.len >= data.len && memcmp (line.ptr, data.ptr, data.len) == 0) {
            //  A data line that cannot be redacted is left out: the event
            //  then carries no data, and a page does not dispatch it.
            sl_str_t json = { line.ptr + data.len, (size_t) ((nl ? nl : end) - line.ptr) - data.len };
            s_redact_data (json, out);
        }
        else
            sl_buf_append (out, line.ptr, line.len);
        p = stop;
    }
}
