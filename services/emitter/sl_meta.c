/*  sl_meta.c - the metadata-only view of an event (see sl_meta.h). */
#include "services/emitter/sl_meta.h"

#include "common/base/sl_json.h"

//  [{"name":...},...] from a start's tools array: names only.
static void
s_tool_names (sl_str_t tools, sl_buf_t *out)
{
    sl_json_iter_t it;
    sl_str_t tool, name;
    sl_buf_putc (out, '[');
    bool first = true;
    if (sl_json_array (&it, tools) == 0)
        while (sl_json_next_elem (&it, &tool) == 1)
            if (sl_json_find (tool, "name", &name) == 1 && sl_json_type (name) == SL_JSON_STRING) {
                sl_buf_puts (out, first ? "{\"name\":" : ",{\"name\":");
                sl_buf_append_str (out, name);
                sl_buf_putc (out, '}');
                first = false;
            }
    sl_buf_putc (out, ']');
}

void
sl_meta_strip (const sl_msg_t *in, sl_msg_t *out, sl_buf_t *scratch)
{
    sl_buf_reset (scratch);
    sl_msg_init (out, in->type);
    out->version = in->version;
    memcpy (out->sid, in->sid, SL_SID_SIZE);
    out->epoch = in->epoch;
    out->seq = in->seq;
    switch (in->type) {
        case SL_MSG_START:
            out->client_dialect = in->client_dialect;
            out->upstream_dialect = in->upstream_dialect;
            out->model = in->model;
            out->provider = in->provider;
            out->flags = in->flags;
            out->key_id = in->key_id;
            out->team = in->team;       //  who is calling is metadata (never the key)
            out->user = in->user;
            out->policy = in->policy;
            out->policy_name = in->policy_name;
            out->request_bytes = in->request_bytes;
            out->mcp = in->mcp;         //  an MCP request's method and tool name, as a tool's name is
            if (in->tools.ptr) {
                s_tool_names (in->tools, scratch);
                out->tools = sl_buf_str (scratch);
            }
            break;
        case SL_MSG_BLOCK:
            out->kind = in->kind;
            out->block = in->block;
            out->index = in->index;
            out->flags = in->flags;
            out->id = in->id;
            out->call_id = in->call_id;
            out->name = in->name;
            out->model = in->model;
            out->ts = in->ts;
            out->finish = in->finish;
            out->finish_raw = in->finish_raw;
            out->has_usage = in->has_usage;
            out->usage = in->usage;
            break;
        case SL_MSG_VERDICT:
            out->index = in->index;
            out->part = in->part;       //  which part of the request (a place, not content)
            out->id = in->id;
            out->name = in->name;
            out->action = in->action;
            out->check = in->check;
            out->mode = in->mode;
            out->rule = in->rule;
            out->judge_model = in->judge_model;
            out->probability = in->probability;
            out->latency_us = in->latency_us;
            out->team = in->team;
            out->user = in->user;
            out->approver = in->approver;   //  who decided an ask (their comment is content)
            break;
        case SL_MSG_ERROR:
            out->code = in->code;
            out->status = in->status;
            out->flags = in->flags;
            break;
        case SL_MSG_POLICY:
            out->instance = in->instance;
            out->policy = in->policy;
            out->name = in->name;
            out->ts = in->ts;
            out->count = in->count;
            break;
        case SL_MSG_APPROVAL:
            //  That a call waits, for whom and what became of it; not its
            //  arguments, the message quoting them, the last user message
            //  or an approver's comment.
            out->code = in->code;
            out->stream = in->stream;
            out->index = in->index;
            out->name = in->name;
            out->rule = in->rule;
            out->digest = in->digest;
            out->policy = in->policy;
            out->policy_name = in->policy_name;
            out->key_id = in->key_id;
            out->team = in->team;
            out->user = in->user;
            out->model = in->model;
            out->ts = in->ts;
            out->expires = in->expires;
            out->approver = in->approver;
            out->instance = in->instance;
            out->incarnation = in->incarnation;
            break;
        default:
            break;                      //  end and anything else: the envelope only
    }
}
