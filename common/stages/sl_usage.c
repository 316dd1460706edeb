/*  sl_usage.c - a stream's reported or estimated usage (see sl_usage.h). */
#include "common/stages/sl_usage.h"

#include <string.h>

static const sl_usage_t s_none = { -1, -1, -1, -1, -1, -1 };

void
sl_usage_tally_init (sl_usage_tally_t *self, const sl_msg_t *start)
{
    memset (self, 0, sizeof *self);
    self->reported = s_none;
    self->request_bytes = start->request_bytes;
}

static void
s_merge (int64_t *into, int64_t from)
{
    if (from >= 0)
        *into = from;
}

void
sl_usage_tally_feed (sl_usage_tally_t *self, const sl_msg_t *msg)
{
    if (msg->type == SL_MSG_ERROR) {
        self->failed = true;
        return;
    }
    if (msg->type != SL_MSG_BLOCK)
        return;
    if (msg->has_usage) {
        sl_usage_t *r = &self->reported;
        s_merge (&r->input, msg->usage.input);
        s_merge (&r->output, msg->usage.output);
        s_merge (&r->total, msg->usage.total);
        s_merge (&r->cache_read, msg->usage.cache_read);
        s_merge (&r->cache_write, msg->usage.cache_write);
        s_merge (&r->reasoning, msg->usage.reasoning);
    }
    if (msg->kind == SL_B_END
    &&  (msg->block == SL_BK_TEXT || msg->block == SL_BK_THINKING || msg->block == SL_BK_TOOL_CALL))
        self->content_bytes += msg->text.len;
}

int64_t
sl_usage_tokens_of (uint64_t bytes)
{
    return (int64_t) ((bytes + SL_USAGE_BYTES_PER_TOKEN - 1) / SL_USAGE_BYTES_PER_TOKEN);
}

bool
sl_usage_tally_result (const sl_usage_tally_t *self, sl_usage_t *out)
{
    const sl_usage_t *r = &self->reported;
    if (r->input >= 0 || r->output >= 0) {
        *out = *r;
        return false;
    }
    *out = s_none;
    bool refused = self->failed && self->content_bytes == 0;
    out->input = refused ? 0 : sl_usage_tokens_of (self->request_bytes);
    out->output = sl_usage_tokens_of (self->content_bytes);
    out->total = out->input + out->output;
    return true;
}
