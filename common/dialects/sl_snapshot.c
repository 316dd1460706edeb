/*  sl_snapshot.c - the whole message of one stream (see sl_snapshot.h). */
#include "common/dialects/sl_snapshot.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/sl_alloc.h"
#include "common/base/sl_json.h"

//  A string field that remembers whether it was given at all.
typedef struct {
    sl_buf_t buf;
    bool present;
} s_field_t;

typedef struct {
    int kind;
    int32_t index;
    uint32_t flags;
    bool complete;                      //  block_end seen
    s_field_t id, call_id, name, text, sig, body;
} s_block_t;

struct _sl_snapshot_t {
    s_field_t id;                       //  message id
    s_field_t model;
    int64_t created;
    s_block_t *blocks;
    size_t count;
    size_t cap;
    int finish;                         //  sl_finish_t, NONE until seen
    s_field_t finish_raw;
    s_field_t stop_seq;
    bool has_usage;
    sl_usage_t usage;
    bool failed;                        //  an ERROR was fed
    s_field_t error_code;
    s_field_t error_message;
    int error_status;
    bool ended;                         //  END was fed
};

//  --------------------------------------------------------------------------
//  Fields

//  Replace a field with s when s is present (an absent slice leaves it).
static void
s_field_set (s_field_t *f, sl_str_t s)
{
    if (!s.ptr)
        return;
    sl_buf_reset (&f->buf);
    sl_buf_append_str (&f->buf, s);
    f->present = true;
}

static void
s_field_clear (s_field_t *f)
{
    sl_buf_reset (&f->buf);
    f->present = false;
}

static void
s_field_free (s_field_t *f)
{
    sl_buf_free (&f->buf);
    f->present = false;
}

static sl_str_t
s_field_str (const s_field_t *f)
{
    return f->present ? sl_buf_str (&f->buf) : SL_STR_NULL;
}

static void
s_block_free (s_block_t *b)
{
    s_field_free (&b->id);
    s_field_free (&b->call_id);
    s_field_free (&b->name);
    s_field_free (&b->text);
    s_field_free (&b->sig);
    s_field_free (&b->body);
}

//  --------------------------------------------------------------------------
//  Life cycle

sl_snapshot_t *
sl_snapshot_new (void)
{
    sl_snapshot_t *self = sl_xcalloc (1, sizeof *self);
    sl_snapshot_reset (self);
    return self;
}

void
sl_snapshot_destroy (sl_snapshot_t **self_p)
{
    if (!self_p || !*self_p)
        return;
    sl_snapshot_t *self = *self_p;
    for (size_t i = 0; i < self->cap; i++)
        s_block_free (&self->blocks [i]);
    free (self->blocks);
    s_field_free (&self->id);
    s_field_free (&self->model);
    s_field_free (&self->finish_raw);
    s_field_free (&self->stop_seq);
    s_field_free (&self->error_code);
    s_field_free (&self->error_message);
    free (self);
    *self_p = NULL;
}

void
sl_snapshot_reset (sl_snapshot_t *self)
{
    //  Block slots keep their buffers for reuse; only the count goes back.
    self->count = 0;
    s_field_clear (&self->id);
    s_field_clear (&self->model);
    self->created = 0;
    self->finish = SL_FIN_NONE;
    s_field_clear (&self->finish_raw);
    s_field_clear (&self->stop_seq);
    self->has_usage = false;
    self->usage = (sl_usage_t) { -1, -1, -1, -1, -1, -1 };
    self->failed = false;
    s_field_clear (&self->error_code);
    s_field_clear (&self->error_message);
    self->error_status = 0;
    self->ended = false;
}

//  --------------------------------------------------------------------------
//  Feeding

//  The block with this index: blocks are sequential, so it is almost
//  always the last one.
static s_block_t *
s_find (sl_snapshot_t *self, int32_t index)
{
    for (size_t i = self->count; i > 0; i--)
        if (self->blocks [i - 1].index == index)
            return &self->blocks [i - 1];
    return NULL;
}

static s_block_t *
s_add (sl_snapshot_t *self, int kind, int32_t index)
{
    if (self->count == self->cap) {
        size_t cap = self->cap ? self->cap * 2 : 8;
        self->blocks = sl_xrealloc (self->blocks, cap * sizeof (s_block_t));
        memset (self->blocks + self->cap, 0, (cap - self->cap) * sizeof (s_block_t));
        self->cap = cap;
    }
    s_block_t *b = &self->blocks [self->count++];
    b->kind = kind;
    b->index = index;
    b->flags = 0;
    b->complete = false;
    s_field_clear (&b->id);
    s_field_clear (&b->call_id);
    s_field_clear (&b->name);
    s_field_clear (&b->text);
    s_field_clear (&b->sig);
    s_field_clear (&b->body);
    b->text.present = true;             //  content is never absent, only empty
    return b;
}

static void
s_set_identity (s_block_t *b, const sl_msg_t *msg)
{
    if (msg->id.len)
        s_field_set (&b->id, msg->id);
    if (msg->call_id.len)
        s_field_set (&b->call_id, msg->call_id);
    if (msg->name.len)
        s_field_set (&b->name, msg->name);
}

//  Usage from a finish or an error (tokens spent before a failure count).
static void
s_merge_usage (sl_snapshot_t *self, const sl_msg_t *msg)
{
    if (!msg->has_usage)
        return;
    const int64_t *from = &msg->usage.input;
    int64_t *to = &self->usage.input;
    for (size_t i = 0; i < sizeof (sl_usage_t) / sizeof (int64_t); i++)
        if (from [i] >= 0)
            to [i] = from [i];
    self->has_usage = true;
}

static void
s_on_block (sl_snapshot_t *self, const sl_msg_t *msg)
{
    s_block_t *b;
    switch (msg->kind) {
        case SL_B_MESSAGE:
            if (msg->id.len)
                s_field_set (&self->id, msg->id);
            if (msg->model.len)
                s_field_set (&self->model, msg->model);
            if (msg->ts)
                self->created = msg->ts;
            break;
        case SL_B_START:
            b = s_find (self, msg->index);
            if (!b || b->complete)
                b = s_add (self, msg->block, msg->index);
            b->flags |= msg->flags;
            s_set_identity (b, msg);
            break;
        case SL_B_DELTA:
            b = s_find (self, msg->index);
            if (!b || b->complete)
                b = s_add (self, msg->block, msg->index);
            sl_buf_append_str (&b->text.buf, msg->text);
            break;
        case SL_B_END:
            b = s_find (self, msg->index);
            if (!b || b->complete)
                b = s_add (self, msg->block, msg->index);
            b->kind = msg->block;       //  a judge may replace a call's kind
            b->flags |= msg->flags;
            b->complete = true;
            s_set_identity (b, msg);
            if (msg->text.ptr)
                s_field_set (&b->text, msg->text);
            if (msg->sig.len)
                s_field_set (&b->sig, msg->sig);
            if (msg->body.len)
                s_field_set (&b->body, msg->body);
            break;
        case SL_B_FINISH:
            self->finish = msg->finish;
            s_field_clear (&self->finish_raw);
            s_field_set (&self->finish_raw, msg->finish_raw);
            s_field_clear (&self->stop_seq);
            s_field_set (&self->stop_seq, msg->stop_seq);
            s_merge_usage (self, msg);
            break;
        default:
            break;                      //  keepalive
    }
}

void
sl_snapshot_feed (sl_snapshot_t *self, const sl_msg_t *msg)
{
    switch (msg->type) {
        case SL_MSG_START:
            sl_snapshot_reset (self);
            if (msg->model.len)
                s_field_set (&self->model, msg->model);
            break;
        case SL_MSG_BLOCK:
            s_on_block (self, msg);
            break;
        case SL_MSG_ERROR:
            if (self->failed)
                break;                  //  the first error is the one that ended it
            self->failed = true;
            s_field_set (&self->error_code, msg->code);
            s_field_set (&self->error_message, msg->message);
            self->error_status = msg->status;
            s_merge_usage (self, msg);
            break;
        case SL_MSG_END:
            self->ended = true;
            break;
        default:
            break;                      //  verdicts and the rest: not the message
    }
}

//  --------------------------------------------------------------------------
//  Accessors

sl_str_t sl_snapshot_id (const sl_snapshot_t *self)      { return s_field_str (&self->id); }
sl_str_t sl_snapshot_model (const sl_snapshot_t *self)   { return s_field_str (&self->model); }
int64_t sl_snapshot_created (const sl_snapshot_t *self)  { return self->created; }
size_t sl_snapshot_count (const sl_snapshot_t *self)     { return self->count; }
sl_str_t sl_snapshot_finish_raw (const sl_snapshot_t *self) { return s_field_str (&self->finish_raw); }
sl_str_t sl_snapshot_stop_seq (const sl_snapshot_t *self)   { return s_field_str (&self->stop_seq); }
bool sl_snapshot_failed (const sl_snapshot_t *self)      { return self->failed; }
sl_str_t sl_snapshot_error_code (const sl_snapshot_t *self) { return s_field_str (&self->error_code); }
sl_str_t sl_snapshot_error_message (const sl_snapshot_t *self) { return s_field_str (&self->error_message); }
int sl_snapshot_error_status (const sl_snapshot_t *self) { return self->error_status; }
bool sl_snapshot_ended (const sl_snapshot_t *self)       { return self->ended; }

bool
sl_snapshot_block (const sl_snapshot_t *self, size_t i, sl_snapshot_block_t *out)
{
    if (i >= self->count)
        return false;
    const s_block_t *b = &self->blocks [i];
    out->kind = b->kind;
    out->index = b->index;
    out->flags = b->flags;
    out->complete = b->complete;
    out->id = s_field_str (&b->id);
    out->call_id = s_field_str (&b->call_id);
    out->name = s_field_str (&b->name);
    out->text = s_field_str (&b->text);
    out->sig = s_field_str (&b->sig);
    out->body = s_field_str (&b->body);
    return true;
}

sl_finish_t
sl_snapshot_finish (const sl_snapshot_t *self)
{
    if (self->finish == SL_FIN_NONE && self->failed)
        return SL_FIN_ERROR;
    return (sl_finish_t) self->finish;
}

bool
sl_snapshot_usage (const sl_snapshot_t *self, sl_usage_t *out)
{
    *out = self->usage;
    return self->has_usage;
}

//  --------------------------------------------------------------------------
//  JSON

static void
s_put_key (sl_buf_t *out, bool *first, const char *key)
{
    if (!*first)
        sl_buf_putc (out, ',');
    *first = false;
    sl_buf_putc (out, '"');
    sl_buf_puts (out, key);
    sl_buf_puts (out, "\":");
}

static void
s_put_str (sl_buf_t *out, bool *first, const char *key, sl_str_t value)
{
    if (!value.ptr)
        return;
    s_put_key (out, first, key);
    sl_json_put_sl (out, value);
}

static void
s_put_true (sl_buf_t *out, bool *first, const char *key, bool value)
{
    if (!value)
        return;
    s_put_key (out, first, key);
    sl_buf_puts (out, "true");
}

static bool
s_is_call (int kind)
{
    return kind == SL_BK_TOOL_CALL || kind == SL_BK_SERVER_TOOL_USE;
}

void
sl_snapshot_block_to_json (const sl_snapshot_t *self, size_t i, sl_buf_t *out)
{
    sl_snapshot_block_t b;
    if (!sl_snapshot_block (self, i, &b))
        return;
    bool first = true;
    sl_buf_putc (out, '{');
    s_put_str (out, &first, "kind", sl_str (sl_block_kind_name (b.kind)));
    s_put_key (out, &first, "index");
    sl_buf_put_i64 (out, b.index);
    s_put_str (out, &first, "id", b.id);
    s_put_str (out, &first, "call_id", b.call_id);
    s_put_str (out, &first, "name", b.name);
    if (s_is_call (b.kind)) {
        s_put_str (out, &first, "arguments", b.text);
        s_put_key (out, &first, "args_valid");
        sl_buf_puts (out, b.flags & SL_F_ARGS_VALID ? "true" : "false");
        s_put_key (out, &first, "repaired");
        sl_buf_puts (out, b.flags & SL_F_REPAIRED ? "true" : "false");
    }
    else
    if (b.text.len || (b.kind != SL_BK_SERVER_TOOL_RESULT && b.kind != SL_BK_CITATION))
        s_put_str (out, &first, "text", b.text);
    s_put_str (out, &first, "signature", b.sig);
    s_put_true (out, &first, "summary", b.flags & SL_F_SUMMARY);
    s_put_true (out, &first, "incomplete", b.flags & SL_F_INCOMPLETE);
    s_put_true (out, &first, "replaced", b.flags & SL_F_REPLACED);
    if (b.body.ptr) {
        s_put_key (out, &first, "body");
        //  Embedded as JSON when it is JSON, so the audit reads naturally;
        //  anything else as a string, so the output always parses.
        if (sl_json_valid (b.body))
            sl_json_put_raw (out, sl_json_trim (b.body));
        else
            sl_json_put_sl (out, b.body);
    }
    sl_buf_putc (out, '}');
}

void
sl_snapshot_usage_to_json (const sl_usage_t *usage, sl_buf_t *out)
{
    static const char *keys [] = {
        "input", "output", "total", "cache_read", "cache_write", "reasoning"
    };
    const int64_t *v = &usage->input;
    bool first = true;
    sl_buf_putc (out, '{');
    for (size_t i = 0; i < sizeof keys / sizeof keys [0]; i++) {
        if (v [i] < 0)
            continue;
        s_put_key (out, &first, keys [i]);
        sl_buf_put_i64 (out, v [i]);
    }
    sl_buf_putc (out, '}');
}

void
sl_snapshot_to_json (const sl_snapshot_t *self, sl_buf_t *out)
{
    bool first = true;
    sl_buf_putc (out, '{');
    s_put_str (out, &first, "id", sl_snapshot_id (self));
    s_put_str (out, &first, "model", sl_snapshot_model (self));
    if (self->created) {
        s_put_key (out, &first, "created");
        sl_buf_put_i64 (out, self->created);
    }
    s_put_key (out, &first, "blocks");
    sl_buf_putc (out, '[');
    for (size_t i = 0; i < self->count; i++) {
        if (i)
            sl_buf_putc (out, ',');
        sl_snapshot_block_to_json (self, i, out);
    }
    sl_buf_putc (out, ']');
    sl_finish_t finish = sl_snapshot_finish (self);
    s_put_key (out, &first, "finish");
    if (finish == SL_FIN_NONE)
        sl_buf_puts (out, "null");
    else
        sl_json_put_sl (out, sl_str (sl_finish_name (finish)));
    s_put_str (out, &first, "finish_raw", sl_snapshot_finish_raw (self));
    s_put_str (out, &first, "stop_sequence", sl_snapshot_stop_seq (self));
    if (self->has_usage) {
        s_put_key (out, &first, "usage");
        sl_snapshot_usage_to_json (&self->usage, out);
    }
    if (self->failed) {
        bool efirst = true;
        s_put_key (out, &first, "error");
        sl_buf_putc (out, '{');
        s_put_str (out, &efirst, "code", sl_snapshot_error_code (self));
        s_put_str (out, &efirst, "message", sl_snapshot_error_message (self));
        if (self->error_status) {
            s_put_key (out, &efirst, "status");
            sl_buf_put_i64 (out, self->error_status);
        }
        sl_buf_putc (out, '}');
    }
    sl_buf_putc (out, '}');
}
