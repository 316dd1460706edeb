/*  sl_approval.c - an approval's JSON, and the webhook's signature (see
    sl_approval.h). */
#include "services/audit/store/sl_approval.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "common/base/sl_json.h"

void
sl_approval_from_msg (const sl_msg_t *msg, sl_approval_t *out)
{
    memset (out, 0, sizeof *out);
    sl_sid_hex (msg->sid, out->id);
    out->state = msg->code;
    out->stream = msg->stream;
    out->index = msg->index >= 0 ? msg->index : -1;
    out->tool = msg->name;
    out->arguments = msg->text;
    out->rule = msg->rule;
    out->message = msg->message;
    out->digest = msg->digest;
    out->policy = msg->policy;
    out->policy_name = msg->policy_name;
    out->key_id = msg->key_id;
    out->team = msg->team;
    out->user = msg->user;
    out->model = msg->model;
    out->last_user = msg->last_user;
    out->judge = msg->instance;
    out->details = msg->body;
    out->expires_at = msg->expires;
    if (sl_str_eq (msg->code, "pending"))
        out->created_at = msg->ts;
    else {
        out->decided_at = msg->ts;
        out->approver = msg->approver;
        out->comment = msg->reason;
    }
}

static void
s_put (sl_buf_t *out, const char *name, sl_str_t value)
{
    if (!value.ptr)
        return;
    sl_buf_printf (out, ",\"%s\":", name);
    sl_json_put_sl (out, value);
}

static void
s_put_time (sl_buf_t *out, const char *name, int64_t value)
{
    if (value)
        sl_buf_printf (out, ",\"%s\":%lld", name, (long long) value);
}

//  The judge's details (approvers, on_timeout, remember_minutes,
//  self_approved): members of the approval itself, those only.
static void
s_details (sl_buf_t *out, sl_str_t details)
{
    json_t *o = details.ptr ? json_loadb (details.ptr, details.len, 0, NULL) : NULL;
    static const char *names [] = { "approvers", "on_timeout", "remember_minutes", "self_approved" };
    for (size_t i = 0; json_is_object (o) && i < sizeof names / sizeof names [0]; i++) {
        json_t *v = json_object_get (o, names [i]);
        char *text = v ? json_dumps (v, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        if (text)
            sl_buf_printf (out, ",\"%s\":%s", names [i], text);
        free (text);
    }
    json_decref (o);
}

void
sl_approval_json (const sl_approval_t *self, sl_buf_t *out)
{
    sl_buf_printf (out, "{\"id\":\"%s\"", self->id);
    s_put (out, "state", self->state);
    s_put (out, "stream", self->stream);
    if (self->index >= 0)
        sl_buf_printf (out, ",\"index\":%lld", (long long) self->index);
    s_put (out, "tool", self->tool);
    if (self->arguments.ptr) {
        sl_buf_puts (out, ",\"arguments\":");
        if (self->arguments.len && sl_json_valid (self->arguments))
            sl_json_put_raw (out, self->arguments);
        else
            sl_json_put_sl (out, self->arguments);
    }
    s_put (out, "rule", self->rule);
    s_put (out, "message", self->message);
    s_put (out, "digest", self->digest);
    s_put (out, "policy", self->policy);
    s_put (out, "policy_name", self->policy_name);
    sl_buf_puts (out, ",\"identity\":{\"key_id\":");
    sl_json_put_sl (out, self->key_id);
    sl_buf_puts (out, ",\"team\":");
    sl_json_put_sl (out, self->team);
    sl_buf_puts (out, ",\"user\":");
    sl_json_put_sl (out, self->user);
    sl_buf_putc (out, '}');
    s_put (out, "model", self->model);
    s_put (out, "last_user", self->last_user);
    s_put (out, "judge", self->judge);
    s_put_time (out, "created_at", self->created_at);
    s_put_time (out, "expires_at", self->expires_at);
    s_details (out, self->details);
    s_put_time (out, "decided_at", self->decided_at);
    s_put (out, "approver", self->approver);
    s_put (out, "comment", self->comment);
    sl_buf_putc (out, '}');
}
