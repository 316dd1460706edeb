/*  sl_render.c - the renderer table and helpers shared by the renderers. */
#include "common/dialects/sl_render.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"
#include "common/dialects/sl_dialect.h"

const sl_renderer_t *
sl_render_for (int dialect)
{
    const sl_dialect_t *d = sl_dialect_get (dialect);
    return d ? d->renderer : NULL;
}

int
sl_render_stream_init (sl_render_stream_t *rs, int client_dialect, int upstream_dialect)
{
    memset (rs, 0, sizeof *rs);
    rs->client_dialect = client_dialect;
    rs->upstream_dialect = upstream_dialect;
    rs->open_index = -1;
    rs->renderer = sl_render_for (client_dialect);
    if (!rs->renderer)
        return -1;
    if (rs->renderer->state_size)
        rs->state = sl_xcalloc (1, rs->renderer->state_size);
    return 0;
}

void
sl_render_stream_clear (sl_render_stream_t *rs)
{
    if (rs->state && rs->renderer && rs->renderer->clear)
        rs->renderer->clear (rs->state);
    free (rs->state);
    rs->state = NULL;
    sl_buf_free (&rs->model);
    sl_buf_free (&rs->id);
    sl_buf_free (&rs->open_id);
    sl_buf_free (&rs->open_call_id);
    sl_buf_free (&rs->open_name);
    sl_buf_free (&rs->open_extra);
    sl_buf_free (&rs->pending);
    sl_buf_free (&rs->alone);
}

void
sl_render_open (sl_render_stream_t *rs, sl_buf_t *out)
{
    if (rs->started)
        return;
    rs->started = true;
    if (rs->renderer->open)
        rs->renderer->open (rs, out);
}

void
sl_render_block (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out)
{
    if (msg->kind == SL_B_MESSAGE)
        return;
    if (!rs->started && msg->kind == SL_B_START)
        rs->first_block = msg->block;
    sl_render_open (rs, out);
    const sl_renderer_t *r = rs->renderer;
    void (*step) (sl_render_stream_t *rs, const sl_msg_t *msg, sl_buf_t *out) = NULL;
    switch (msg->kind) {
        case SL_B_START:  step = r->on_start; break;
        case SL_B_DELTA:  step = r->on_delta; break;
        case SL_B_END:    step = r->on_end; break;
        case SL_B_FINISH: step = r->on_finish; break;
        default:          break;
    }
    if (step)
        step (rs, msg, out);
}

void
sl_render_put_id (const sl_render_stream_t *rs, const char *prefix, sl_buf_t *out)
{
    if (rs->id.len) {
        sl_json_put_sl (out, sl_buf_str (&rs->id));
        return;
    }
    //  Hex digits and a prefix of ours: nothing to escape. (Gemini names
    //  its response in every chunk.)
    sl_buf_putc (out, '"');
    sl_buf_puts (out, prefix);
    sl_buf_puts (out, rs->sid_hex);
    sl_buf_putc (out, '"');
}

const char *
sl_render_raw_finish (const sl_render_stream_t *rs, const sl_msg_t *msg, char *buf, size_t size)
{
    if (!sl_dialect_same_format (rs->upstream_dialect, rs->client_dialect) || !msg->finish_raw.ptr
    ||  msg->finish_raw.len == 0 || msg->finish_raw.len >= size)
        return NULL;
    memcpy (buf, msg->finish_raw.ptr, msg->finish_raw.len);
    buf [msg->finish_raw.len] = 0;
    return buf;
}

void
sl_render_put_sig (const sl_render_stream_t *rs, sl_str_t sig, sl_buf_t *out)
{
    if (sl_dialect_same_format (rs->client_dialect, rs->upstream_dialect) || !sl_dialect_get (rs->upstream_dialect)) {
        sl_json_put_sl (out, sig);
        return;
    }
    sl_buf_t tagged = { 0 };
    sl_sig_tag (sl_dialect_name (rs->upstream_dialect), sig, &tagged);
    sl_json_put_sl (out, sl_buf_str (&tagged));
    sl_buf_free (&tagged);
}

void
sl_render_put_line_json (sl_buf_t *out, sl_str_t json)
{
    const char *p = json.ptr ? json.ptr : "", *end = p + json.len;
    if (!memchr (p, '\n', json.len) && !memchr (p, '\r', json.len)) {
        sl_json_put_raw (out, json);    //  on one line already: as it came
        return;
    }
    const char *run = p;                //  bytes to copy from here
    bool in_string = false, escaped = false;
    sl_buf_t line = { 0 };
    for (; p < end; p++) {
        char c = *p;
        if (in_string) {
            if (escaped)
                escaped = false;
            else
            if (c == '\\')
                escaped = true;
            else
            if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"')
            in_string = true;
        else
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
            sl_buf_append (&line, run, (size_t) (p - run));
            run = p + 1;
        }
    }
    sl_buf_append (&line, run, (size_t) (end - run));
    sl_json_put_raw (out, sl_buf_str (&line));
    sl_buf_free (&line);
}

void
sl_render_put_json (sl_buf_t *out, sl_str_t value, const char *fallback)
{
    if (value.ptr && value.len && sl_json_valid (value))
        sl_json_put_raw (out, sl_json_trim (value));
    else
        sl_buf_puts (out, fallback);
}

void
sl_render_snapshot_finish (const sl_snapshot_t *snap, sl_msg_t *out)
{
    sl_msg_init (out, SL_MSG_BLOCK);
    out->kind = SL_B_FINISH;
    out->finish = (uint8_t) sl_snapshot_finish (snap);
    out->finish_raw = sl_snapshot_finish_raw (snap);
    out->stop_seq = sl_snapshot_stop_seq (snap);
    out->has_usage = sl_snapshot_usage (snap, &out->usage);
}

int
sl_render_put_citations (sl_buf_t *out, sl_str_t body)
{
    sl_str_t list, elem;
    sl_json_iter_t it;
    if (!body.len || sl_json_type (body) != SL_JSON_OBJECT
    ||  sl_json_find (body, "citations", &list) != 1 || sl_json_array (&it, list))
        return 0;
    int count = 0;
    while (sl_json_next_elem (&it, &elem) == 1) {
        elem = sl_json_trim (elem);
        if (!sl_json_valid (elem))
            break;
        if (out->len)
            sl_buf_putc (out, ',');
        sl_json_put_raw (out, elem);
        count++;
    }
    return count;
}

bool
sl_render_end_citations (sl_render_stream_t *rs, const sl_msg_t *msg)
{
    if (msg->block == SL_BK_CITATION) {
        sl_render_put_citations (&rs->pending, msg->body);
        return true;
    }
    if (msg->block == SL_BK_TEXT && rs->open_kind)
        sl_render_put_citations (&rs->pending, msg->body);
    return false;
}

bool
sl_render_next_citation (sl_str_t *rest, sl_str_t *citation)
{
    const char *p = rest->ptr, *end = rest->ptr + rest->len;
    while (p < end && (*p == ',' || *p == ' ' || *p == '\n'))
        p++;
    if (p >= end)
        return false;
    const char *after = sl_json_skip (p, end);
    if (!after)
        return false;                   //  written by us: complete JSON
    *citation = sl_str_n (p, (size_t) (after - p));
    *rest = sl_str_n (after, (size_t) (end - after));
    return true;
}

#define S_CLOSE_DEPTH 64                //  deeper cut-off arguments give {}

void
sl_render_close_json (sl_str_t partial, sl_buf_t *out)
{
    //  The containers open at the best cut so far, and at the scan.
    char open [S_CLOSE_DEPTH], at_cut [S_CLOSE_DEPTH];
    bool want_key [S_CLOSE_DEPTH];      //  object: a key comes next (not a value)
    int depth = 0, cut_depth = 0;
    size_t cut = 0;                     //  bytes of the best cut, 0 none
    bool in_string = false, escaped = false, token = false;
    const char *p = partial.ptr ? partial.ptr : "";
    for (size_t i = 0; i < partial.len; i++) {
        char c = p [i];
        if (in_string) {
            if (escaped)
                escaped = false;
            else
            if (c == '\\')
                escaped = true;
            else
            if (c == '"') {
                in_string = false;
                bool key = depth > 0 && open [depth - 1] == '{' && want_key [depth - 1];
                if (!key && depth > 0) {
                    cut = i + 1;
                    cut_depth = depth;
                    memcpy (at_cut, open, (size_t) depth);
                }
            }
            continue;
        }
        bool ends_token = c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t';
        if (token && ends_token) {
            token = false;
            if (depth > 0) {
                cut = i;
                cut_depth = depth;
                memcpy (at_cut, open, (size_t) depth);
            }
        }
        if (c == '"')
            in_string = true;
        else
        if (c == '{' || c == '[') {
            if (depth == S_CLOSE_DEPTH)
                break;
            open [depth] = c;
            want_key [depth++] = c == '{';
            cut = i + 1;
            cut_depth = depth;
            memcpy (at_cut, open, (size_t) depth);
        }
        else
        if (c == '}' || c == ']') {
            if (depth == 0)
                break;
            depth--;
            cut = i + 1;
            cut_depth = depth;
            memcpy (at_cut, open, (size_t) depth);
            if (depth == 0)
                break;                  //  the whole value is complete
        }
        else
        if (c == ':' && depth > 0)
            want_key [depth - 1] = false;
        else
        if (c == ',' && depth > 0)
            want_key [depth - 1] = open [depth - 1] == '{';
        else
        if (!ends_token)
            token = true;               //  a number or a literal
    }
    size_t start = out->len;
    if (cut == 0 || p [0] != '{') {
        sl_buf_puts (out, "{}");
        return;
    }
    sl_json_put_raw (out, sl_str_n (p, cut));
    //  A cut right after a comma leaves it dangling: drop it.
    while (out->len > start && (out->data [out->len - 1] == ',' || out->data [out->len - 1] == ' '
           || out->data [out->len - 1] == '\n' || out->data [out->len - 1] == '\r' || out->data [out->len - 1] == '\t'))
        out->len--;
    for (int d = cut_depth; d > 0; d--)
        sl_buf_putc (out, at_cut [d - 1] == '{' ? '}' : ']');
    if (!sl_json_valid (sl_str_n (out->data + start, out->len - start))) {
        out->len = start;
        sl_buf_puts (out, "{}");
    }
}
